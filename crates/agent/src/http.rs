//! The agent's HTTP endpoint, on its own thread with a single-threaded runtime: it reads
//! (the metrics registry, the status, and the database through a read-only connection) and,
//! for `POST /api/probe`, sets one slot in the loop's [`Control`], so it can never hold up
//! the probe loop for long.
//!
//! | path | what |
//! |---|---|
//! | `/metrics` | Prometheus exposition (the `store` crate lists the series) |
//! | `/api/status` | the agent: host, clock, runs stored, duty cycle, latest snapshot |
//! | `/api/runs?limit=N&before=ID&trigger=T` | run summaries, newest first |
//! | `/api/runs/{id}` | one run: trigger, snapshot, counters, the whole report |
//! | `/api/fabric/sweeps?limit=N&before=ID` | switch-port sweeps (`[fabric]`), newest first, each with its ports |
//! | `/` | the web UI's host page for this host (to a browser, `Accept: text/html`); else the index of `/api` |
//! | `/api` | this index, as text |
//! | `/api/hosts` | this host in the collector's shape: `[{"host", "kind", "healthy", "last_run_unix_ms", "runs", "causes"}]` |
//! | `/api/hosts/{host}/runs?limit=N` | as the collector's: the 4.3 report + id, trigger, started_unix_ms, newest first |
//! | `/api/hosts/{host}/timeline?rnic=R&endpoint=E[&since_unix_ms=T][&limit=N]` | one path over runs, oldest first, as the collector's |
//! | `POST /api/probe` | one run now (trigger `manual`), for a holder of a probe token (`Authorization: Bearer TOKEN`) |
//! | `POST /api/pair/probe` | a pair probe from this host's RNIC to a peer agent's, answered with the pair's report, for a holder of a probe token ([`pair`]) |
//! | `POST /api/pair/accept` | the responder's side of a peer agent's pair probe, for a holder of a probe token ([`pair`]) |
//!
//! The `/api/hosts` family is the collector's read API (DESIGN 4.5), served by the one
//! implementation both use (`fleet_api::read::routes`) over this agent's database
//! (`http/reads.rs`), so the one page script of `fleet_api::ui` serves both; `{host}` is this
//! host's fleet name (`--name`), its `kind` the model, and any other host is a 404.
//!
//! Everything but `POST /api/probe` only reads. That one only writes a request into the
//! loop's [`Control`] (one at most, never a queue), and only for a token of the probe-tokens
//! file (issue 14 part 5: anything that triggers probing needs a token with that right);
//! without such a file probing on request is off.

pub mod pair;
mod reads;

use crate::{Control, ProbeRequest, Status};
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use fleet_api::read::ErrorBody;
use fleet_api::status::ProbeQueued;
use fleet_api::tokens::Tokens;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use store::{Metrics, RunQuery, Store};

#[derive(Clone)]
struct Shared {
    metrics: Arc<Mutex<Metrics>>,
    status: Arc<Mutex<Status>>,
    database: PathBuf,
    /// This host's name in the fleet.
    name: String,
    /// Probing on request: who may ask, and where to ask.
    probe: ProbeAccess,
    /// Pair probes: the devices, and the one pair at a time.
    pair: pair::PairAccess,
}

/// Who may ask for a probe (`None`: nobody, probing on request is off), and the loop's
/// control to ask through.
#[derive(Clone)]
pub struct ProbeAccess {
    /// The digests of the probe tokens, by holder.
    pub tokens: Option<Arc<Tokens>>,
    /// The agent loop's control.
    pub control: Arc<Control>,
}

/// What the agent's server serves besides its own state.
pub struct ServeOptions {
    /// Where to listen.
    pub listen: SocketAddr,
    /// The runs database (opened read-only per request).
    pub database: PathBuf,
    /// This host's name in the fleet (`--name`): the page and `/api/hosts` use it.
    pub name: String,
    /// Probing on request.
    pub probe: ProbeAccess,
    /// Pair probes (for the same token holders as probing on request).
    pub pair: pair::PairAccess,
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

/// Binds `options.listen` now (so a port in use is reported at start) and serves on a
/// thread.
pub fn serve(
    options: ServeOptions,
    metrics: Arc<Mutex<Metrics>>,
    status: Arc<Mutex<Status>>,
) -> std::io::Result<Server> {
    let listener = std::net::TcpListener::bind(options.listen)?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let shared = Shared {
        metrics,
        status,
        database: options.database,
        name: options.name,
        probe: options.probe,
        pair: options.pair,
    };
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        // The pair responder's wait for its answer (http/pair.rs).
        .enable_time()
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
    fleet_api::ui::asset_routes()
        .merge(fleet_api::read::routes())
        .route("/", get(front))
        .route("/api", get(index))
        .route("/metrics", get(metrics))
        .route("/api/status", get(status))
        .route("/api/runs", get(runs))
        .route("/api/runs/{id}", get(run))
        .route("/api/fabric/sweeps", get(sweeps))
        .route("/api/probe", post(probe))
        .route("/api/pair/probe", post(pair::probe))
        .route("/api/pair/accept", post(pair::accept))
        .with_state(shared)
}

const INDEX: &str = "hostping agent\n  /                    this host's page (web UI, in a browser)\n  /metrics             Prometheus exposition\n  /api/status          agent status (JSON)\n  /api/runs            runs, newest first (?limit=N&before=ID&trigger=idle|pfc|drops|transport|manual)\n  /api/runs/{id}       one run with its report\n  /api/fabric/sweeps   switch-port sweeps, newest first (?limit=N&before=ID)\n  /api/hosts           this host, as the fleet collector lists hosts\n  /api/hosts/{host}/runs?limit=N                    runs with reports, newest first\n  /api/hosts/{host}/timeline?rnic=R&endpoint=E     one path over runs, oldest first\n  POST /api/probe      one run now (Authorization: Bearer TOKEN of the probe-tokens file)\n  POST /api/pair/probe   {\"rnic\", \"peer\", \"peer_rnic\"}: a pair probe to a peer agent (same token)\n  POST /api/pair/accept  {\"rnic\", \"offer\"}: the responder's side of a pair probe (same token)\n";

async fn index() -> &'static str {
    INDEX
}

/// The host page to a browser; the text index to `curl` and other clients.
async fn front(headers: HeaderMap) -> Response {
    let wants_html = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/html"));
    if wants_html {
        fleet_api::ui::host_page().await
    } else {
        INDEX.into_response()
    }
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

/// A refusal, in the fleet API's error body (`WWW-Authenticate: Bearer` with a 401).
fn error(code: StatusCode, message: String) -> Response {
    let mut response = (code, Json(ErrorBody { error: message })).into_response();
    if code == StatusCode::UNAUTHORIZED {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, "Bearer".parse().expect("static"));
    }
    response
}

/// Answers from a read-only connection of its own (WAL lets it read beside the writer).
fn with_store(s: &Shared, answer: impl FnOnce(&Store) -> Response) -> Response {
    match Store::open_read_only(&s.database) {
        Ok(store) => answer(&store),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
    }
}

async fn runs(State(s): State<Shared>, Query(q): Query<RunsQuery>) -> Response {
    let triggers = &fleet_api::read::TRIGGERS;
    if let Err(e) = fleet_api::read::query::choice("trigger", q.trigger.as_deref(), triggers, |t| t)
    {
        return fleet_api::read::ReadError::from(e).into_response();
    }
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

/// `POST /api/probe`: asks the loop for one run now, for a holder of a probe token. 403 when
/// probing on request is off (no probe-tokens file), 401 without a valid token, 503 when the
/// host cannot be probed; else 202, queued or joining the request already pending.
async fn probe(State(s): State<Shared>, headers: HeaderMap) -> Response {
    let by = match probe_holder(&s, &headers) {
        Ok((by, _)) => by,
        Err((code, why)) => return error(code, why),
    };
    let by = by.as_str();
    if let Some(why) = s.status.lock().expect("status").probing_disabled.clone() {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("probing is disabled on this host: {why}"),
        );
    }
    let body = match s.probe.control.request_probe(by) {
        ProbeRequest::Queued => {
            eprintln!("hostping agent: probe requested by {by}: queued");
            ProbeQueued {
                queued: true,
                pending: None,
                by: by.to_string(),
            }
        }
        ProbeRequest::AlreadyPending => {
            eprintln!("hostping agent: probe requested by {by}: joins the one pending");
            ProbeQueued {
                queued: false,
                pending: Some(true),
                by: by.to_string(),
            }
        }
    };
    (StatusCode::ACCEPTED, Json(body)).into_response()
}

/// The holder of the presented probe token and the token itself, or the refusal: 403 when
/// probing on request is off (no probe-tokens file), 401 without a valid token.
fn probe_holder(s: &Shared, headers: &HeaderMap) -> Result<(String, String), (StatusCode, String)> {
    let Some(tokens) = &s.probe.tokens else {
        return Err((
            StatusCode::FORBIDDEN,
            "probing on request is off: start the agent with --probe-tokens FILE (or [agent] probe_tokens)"
                .into(),
        ));
    };
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    match presented.and_then(|t| Some((tokens.host_of(t)?, t))) {
        Some((by, token)) => Ok((by.to_string(), token.to_string())),
        None => {
            eprintln!("hostping agent: probe request refused: no valid probe token");
            Err((
                StatusCode::UNAUTHORIZED,
                "a probe needs Authorization: Bearer TOKEN with a token of the agent's probe-tokens file"
                    .into(),
            ))
        }
    }
}
