//! The agent's HTTP endpoint, on its own thread with a single-threaded runtime: it only
//! reads (the metrics registry, the status, and the database through a read-only
//! connection), so it can never hold up the probe loop for long.
//!
//! | path | what |
//! |---|---|
//! | `/metrics` | Prometheus exposition (the `store` crate lists the series) |
//! | `/api/status` | the agent: host, clock, runs stored, duty cycle, latest snapshot |
//! | `/api/runs?limit=N&before=ID&trigger=T` | run summaries, newest first |
//! | `/api/runs/{id}` | one run: trigger, snapshot, counters, the whole report |
//! | `/api/fabric/sweeps?limit=N&before=ID` | switch-port sweeps (`[fabric]`), newest first, each with its ports |

use super::Status;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use store::{Metrics, RunQuery, Store};

#[derive(Clone)]
struct Shared {
    metrics: Arc<Mutex<Metrics>>,
    status: Arc<Mutex<Status>>,
    database: PathBuf,
}

/// A running server: its address, and the thread to join after [`Server::shutdown`].
pub struct Server {
    /// Where it listens (the real port when 0 was asked for).
    pub addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Stops serving and waits for the thread.
    pub fn shutdown(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Binds `listen` now (so a port in use is reported at start) and serves on a thread.
pub fn serve(
    listen: SocketAddr,
    database: PathBuf,
    metrics: Arc<Mutex<Metrics>>,
    status: Arc<Mutex<Status>>,
) -> std::io::Result<Server> {
    let listener = std::net::TcpListener::bind(listen)?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let shared = Shared {
        metrics,
        status,
        database,
    };
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    let thread = std::thread::Builder::new()
        .name("hostping-http".into())
        .spawn(move || {
            runtime.block_on(async move {
                let listener = match tokio::net::TcpListener::from_std(listener) {
                    Ok(l) => l,
                    Err(e) => {
                        eprintln!("hostping agent: http: {e}");
                        return;
                    }
                };
                let app = router(shared);
                let served = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = rx.await;
                    })
                    .await;
                if let Err(e) = served {
                    eprintln!("hostping agent: http: {e}");
                }
            })
        })?;
    Ok(Server {
        addr,
        shutdown: Some(tx),
        thread: Some(thread),
    })
}

fn router(shared: Shared) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/metrics", get(metrics))
        .route("/api/status", get(status))
        .route("/api/runs", get(runs))
        .route("/api/runs/{id}", get(run))
        .route("/api/fabric/sweeps", get(sweeps))
        .with_state(shared)
}

async fn index() -> &'static str {
    "hostping agent\n  /metrics             Prometheus exposition\n  /api/status          agent status (JSON)\n  /api/runs            runs, newest first (?limit=N&before=ID&trigger=idle|pfc|drops)\n  /api/runs/{id}       one run with its report\n  /api/fabric/sweeps   switch-port sweeps, newest first (?limit=N&before=ID)\n"
}

async fn metrics(State(s): State<Shared>) -> Response {
    let text = s.metrics.lock().expect("metrics").encode();
    ([(header::CONTENT_TYPE, store::CONTENT_TYPE)], text).into_response()
}

async fn status(State(s): State<Shared>) -> Json<Status> {
    Json(s.status.lock().expect("status").clone())
}

/// Query of `/api/runs`.
#[derive(serde::Deserialize)]
struct RunsQuery {
    limit: Option<u32>,
    before: Option<i64>,
    trigger: Option<String>,
}

fn error(code: StatusCode, message: String) -> Response {
    (code, Json(serde_json::json!({ "error": message }))).into_response()
}

/// Answers from a read-only connection of its own (WAL lets it read beside the writer).
fn with_store(s: &Shared, answer: impl FnOnce(&Store) -> Response) -> Response {
    match Store::open_read_only(&s.database) {
        Ok(store) => answer(&store),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
    }
}

async fn runs(State(s): State<Shared>, Query(q): Query<RunsQuery>) -> Response {
    let query = RunQuery {
        limit: q.limit.unwrap_or(50).min(1000),
        before: q.before,
        trigger: q.trigger,
    };
    with_store(&s, |store| match store.runs(&query) {
        Ok(runs) => Json(runs).into_response(),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    })
}

async fn run(State(s): State<Shared>, UrlPath(id): UrlPath<i64>) -> Response {
    with_store(&s, |store| match store.run(id) {
        Ok(Some(run)) => Json(run).into_response(),
        Ok(None) => error(StatusCode::NOT_FOUND, format!("no run {id}")),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    })
}

/// Query of `/api/fabric/sweeps`.
#[derive(serde::Deserialize)]
struct SweepsQuery {
    limit: Option<u32>,
    before: Option<i64>,
}

/// A sweep holds every port of the sampler (thousands on a large fabric): fewer per page
/// than runs.
async fn sweeps(State(s): State<Shared>, Query(q): Query<SweepsQuery>) -> Response {
    let limit = q.limit.unwrap_or(10).min(100);
    with_store(&s, |store| match store.sweeps(limit, q.before) {
        Ok(sweeps) => Json(sweeps).into_response(),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    })
}
