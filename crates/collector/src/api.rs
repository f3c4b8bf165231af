//! The collector's HTTP API (DESIGN 4.5).
//!
//! | path | what |
//! |---|---|
//! | `POST /api/runs` | an agent's run (`Authorization: Bearer TOKEN`): 201 stored, 200 stored before |
//! | `GET /api/hosts` | every host: kind, rack, health and causes of its latest run, runs stored |
//! | `GET /api/hosts/{host}/runs?limit=N` | that host's runs, newest first: the 4.3 report + id, trigger, started_unix_ms |
//! | `GET /api/health` | 200 with the schema version when the database answers, else 503 (for probes) |
//! | `GET /api/hosts/{host}/timeline?rnic=R&endpoint=E` | one path over runs, oldest first (collector/timeline.rs) |
//! | `GET /`, `GET /hosts/{host}` | the web UI's fleet overview and host page (collector/ui.rs) |
//! | `GET /api/hosts/{host}/baseline`, `/api/kinds/{kind}/baseline`, `/api/fleet/...` | fleet baselines, slow hosts, status and causes (`collector::fleet`) |
//!
//! Refusals: 401 no or unknown token, 403 a token of another host, 413 a body over the
//! limit, 400 a body outside the contract, 422 a run the database refuses for what it
//! holds (a NUL character in a string: the agent drops it), 404 an unknown host, 503 the
//! database is unreachable (the agent keeps the run and retries), 500 the collector failed
//! (the agent keeps the run too). A 2xx is sent only after the commit.

use crate::batch::{Arrival, Stored};
use crate::refresh::RefreshError;
use crate::writer::{WriteError, Writer};
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{DefaultBodyLimit, Path as UrlPath, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use deadpool_postgres::Pool;
use fleet_api::tokens::Tokens;
use fleet_api::upload;
use serde_json::{json, Value};
use std::ops::RangeInclusive;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// Runs per page when `limit` is not given, and the most one page holds.
const DEFAULT_LIMIT: i64 = 20;
const MAX_LIMIT: i64 = 1000;

#[derive(Clone)]
pub(super) struct Shared {
    pub(super) pool: Pool,
    writer: Writer,
    tokens: Arc<Tokens>,
}

/// A refused request: its status and a message for the caller.
#[derive(Debug, thiserror::Error)]
pub(super) enum ApiError {
    #[error("no valid bearer token")]
    Unauthorized,
    #[error("the token belongs to host {token_host}, not {host}")]
    WrongHost { token_host: String, host: String },
    #[error("{0}")]
    BadRequest(String),
    #[error("no host {0}")]
    NoHost(String),
    #[error("database: {0}")]
    Database(String),
    #[error("no kind {0}")]
    NoKind(String),
    #[error("stored run {run}: {reason}")]
    Stored { run: i64, reason: String },
    /// A pushed run over `--max-body`.
    #[error("the body is over the limit of {limit} bytes")]
    TooLarge { limit: usize },
    /// A checked run the writer did not store; [`WriteError`] says whose fault it is.
    #[error("{0}")]
    NotStored(WriteError),
    /// A fleet baseline refresh that met stored values it cannot use (a database error
    /// is [`ApiError::Database`], as for any read).
    #[error("fleet baseline: {0}")]
    Baseline(RefreshError),
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = match &self {
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::WrongHost { .. } => StatusCode::FORBIDDEN,
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::NoHost(_) | ApiError::NoKind(_) => StatusCode::NOT_FOUND,
            ApiError::Stored { .. } => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::Database(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            // Refused for what it holds: sent again it would be refused again, so the
            // agent drops it. The database's availability, or the collector's own failure:
            // the run is fine, and the agent keeps it and sends it again.
            ApiError::NotStored(e) => match e {
                WriteError::Refused { .. } => StatusCode::UNPROCESSABLE_ENTITY,
                WriteError::NoConnection(_) | WriteError::Unavailable(_) | WriteError::Stopped => {
                    StatusCode::SERVICE_UNAVAILABLE
                }
                WriteError::Failed { .. } | WriteError::Abandoned => {
                    StatusCode::INTERNAL_SERVER_ERROR
                }
            },
            ApiError::Baseline(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let too_large = matches!(self, ApiError::TooLarge { .. });
        let mut response = (status, Json(json!({"error": self.to_string()}))).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, "Bearer".parse().expect("static"));
        }
        if too_large {
            // What is left of the body is not read (read_run_body): the connection cannot
            // carry another request.
            response
                .headers_mut()
                .insert(header::CONNECTION, "close".parse().expect("static"));
        }
        response
    }
}

impl From<deadpool_postgres::PoolError> for ApiError {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        ApiError::Database(e.to_string())
    }
}

impl From<tokio_postgres::Error> for ApiError {
    fn from(e: tokio_postgres::Error) -> Self {
        ApiError::Database(e.to_string())
    }
}

impl From<RefreshError> for ApiError {
    fn from(e: RefreshError) -> Self {
        match e {
            RefreshError::Database(e) => ApiError::from(e),
            unusable @ RefreshError::UnevenSamples { .. } => ApiError::Baseline(unusable),
        }
    }
}

/// The router, with `max_body` bytes the most a run may weigh.
pub fn router(pool: Pool, writer: Writer, tokens: Tokens, max_body: usize) -> Router {
    let shared = Shared {
        pool,
        writer,
        tokens: Arc::new(tokens),
    };
    Router::new()
        // The run's body is read by the handler itself, within `max_body` (read_run_body).
        .route(
            "/api/runs",
            post(move |state, headers, body| post_run(state, headers, body, max_body)),
        )
        .route("/api/hosts", get(hosts))
        .route("/api/hosts/{host}/runs", get(host_runs))
        .route("/api/health", get(health))
        .merge(crate::fleet::routes())
        .merge(crate::timeline::routes())
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(shared)
        // The web UI (collector/ui.rs).
        .merge(fleet_api::ui::collector_routes())
}

/// A number from the query string: `default` when absent, refused naming the parameter
/// when it is not a number within `range`.
pub(super) fn query_number(
    name: &str,
    text: Option<&str>,
    default: i64,
    range: RangeInclusive<i64>,
) -> Result<i64, ApiError> {
    let Some(text) = text else {
        return Ok(default);
    };
    match text.parse::<i64>() {
        Ok(n) if range.contains(&n) => Ok(n),
        _ => Err(ApiError::BadRequest(format!(
            "{name}: {text:?} is not a number from {} to {}",
            range.start(),
            range.end()
        ))),
    }
}

/// The database id of the host named `host`, or NoHost (404).
pub(super) async fn host_id(client: &tokio_postgres::Client, host: &str) -> Result<i64, ApiError> {
    client
        .query_opt("SELECT id FROM hosts WHERE name = $1", &[&host])
        .await?
        .map(|r| r.get::<_, i64>(0))
        .ok_or_else(|| ApiError::NoHost(host.to_owned()))
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// How much of a body over the limit is read and discarded before the 413, beyond the
/// limit, and for how long. A client that sends its body whole before it reads the answer
/// (ureq, the agent's client, and most libraries) sees the 413 only if the body was read to
/// its end: a connection closed with data unread is reset by the kernel, and the client's
/// next write fails before it reads the answer waiting for it. 64 MiB is many times the
/// largest run an agent sends and a second or less on a fleet's network; past it, or past
/// [`DISCARD_TIME`] (a client too slow to wait for), the 413 is sent as it is. Only one
/// frame of it is held at a time.
const DISCARD_BYTES: u64 = 64 << 20;
/// See [`DISCARD_BYTES`].
const DISCARD_TIME: Duration = Duration::from_secs(10);

/// The body of a pushed run, at most `max` bytes; over that, [`ApiError::TooLarge`], sent
/// when a client reading its answer can see it:
///
/// - a length announced over `max` is refused before a byte is read. A client that asked
///   `Expect: 100-continue` (curl does, for bodies over 1 MiB) is told at once: hyper sends
///   `100 Continue` only when a body is first read, so it never does, and the client never
///   sends the body. A client already sending is read to the end first, within
///   [`DISCARD_BYTES`] and [`DISCARD_TIME`].
/// - a chunked body (no length) is read up to `max`, then discarded to its end within the
///   same bounds.
///
/// The 413 closes the connection (`Connection: close`, set by [`ApiError`]).
async fn read_run_body(headers: &HeaderMap, mut body: Body, max: usize) -> Result<Bytes, ApiError> {
    let max_bytes = max as u64;
    let too_large = || ApiError::TooLarge { limit: max };
    let bound = max_bytes.saturating_add(DISCARD_BYTES);
    if let Some(declared) = body.size_hint().exact().filter(|&n| n > max_bytes) {
        if !expects_continue(headers) && declared <= bound {
            discard(body, declared).await;
        }
        return Err(too_large());
    }
    let announced = body.size_hint().exact().unwrap_or(0) as usize; // at most `max` here
    let mut kept = Vec::with_capacity(announced);
    while let Some(data) = next_data(&mut body).await {
        // A body cut short or malformed, as axum's own reader answers it.
        let data = data.map_err(|e| ApiError::BadRequest(format!("reading the body: {e}")))?;
        if kept.len() + data.len() > max {
            let read = (kept.len() + data.len()) as u64;
            drop(kept);
            discard(body, bound.saturating_sub(read)).await;
            return Err(too_large());
        }
        kept.extend_from_slice(&data);
    }
    Ok(Bytes::from(kept))
}

/// Whether the client asked for leave to send its body (`Expect: 100-continue`).
fn expects_continue(headers: &HeaderMap) -> bool {
    headers
        .get(header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"))
}

/// The body's next data, skipping trailers; `None` at its end.
async fn next_data(body: &mut Body) -> Option<Result<Bytes, axum::Error>> {
    loop {
        match std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await? {
            Ok(frame) => {
                if let Ok(data) = frame.into_data() {
                    return Some(Ok(data));
                }
            }
            Err(e) => return Some(Err(e)),
        }
    }
}

/// Reads and drops the rest of `body`: at most `bytes` more, within [`DISCARD_TIME`].
async fn discard(mut body: Body, bytes: u64) {
    let rest = async {
        let mut left = bytes;
        while let Some(Ok(data)) = next_data(&mut body).await {
            match left.checked_sub(data.len() as u64) {
                Some(l) => left = l,
                None => return,
            }
        }
    };
    let _ = tokio::time::timeout(DISCARD_TIME, rest).await;
}

async fn post_run(
    State(shared): State<Shared>,
    headers: HeaderMap,
    body: Body,
    max_body: usize,
) -> Result<Response, ApiError> {
    let body = read_run_body(&headers, body, max_body).await?;
    let token_host = bearer(&headers)
        .and_then(|t| shared.tokens.host_of(t))
        .ok_or(ApiError::Unauthorized)?
        .to_owned();
    let (upload, report) = upload::parse(&body).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    if upload.host != token_host {
        return Err(ApiError::WrongHost {
            token_host,
            host: upload.host,
        });
    }
    let host = upload.host.clone();
    let agent_run_id = upload.id;
    let stored = shared
        .writer
        .store(Arrival { upload, report })
        .await
        .map_err(ApiError::NotStored)?;
    let (status, id, duplicate) = match stored {
        Stored::New(id) => (StatusCode::CREATED, id, false),
        Stored::Duplicate(id) => (StatusCode::OK, id, true),
    };
    Ok((
        status,
        Json(json!({"stored": id, "host": host, "id": agent_run_id, "duplicate": duplicate})),
    )
        .into_response())
}

/// One cheap query through the pool: what a readiness probe needs to know.
async fn health(State(shared): State<Shared>) -> Result<Json<Value>, ApiError> {
    let client = shared.pool.get().await?;
    let version: Option<i32> = client
        .query_one("SELECT max(version) FROM schema_migrations", &[])
        .await?
        .get(0);
    Ok(Json(json!({"database": "ok", "schema_version": version})))
}

async fn hosts(State(shared): State<Shared>) -> Result<Json<Vec<Value>>, ApiError> {
    let client = shared.pool.get().await?;
    // One row per host: the summary columns are kept up to date by each run's transaction.
    let rows = client
        .query(
            "SELECT name, kind, kind_known, latest_healthy, latest_started_unix_ms, runs,
                    latest_causes, rack
             FROM hosts ORDER BY name",
            &[],
        )
        .await?;
    Ok(Json(
        rows.iter()
            .map(|r| {
                json!({
                    "host": r.get::<_, String>(0),
                    "kind": r.get::<_, String>(1),
                    "kind_known": r.get::<_, bool>(2),
                    "healthy": r.get::<_, Option<bool>>(3),
                    "last_run_unix_ms": r.get::<_, Option<i64>>(4),
                    "runs": r.get::<_, i64>(5),
                    "causes": r.get::<_, Vec<String>>(6),
                    "rack": r.get::<_, Option<String>>(7),
                })
            })
            .collect(),
    ))
}

#[derive(serde::Deserialize)]
struct RunsQuery {
    limit: Option<String>,
}

async fn host_runs(
    State(shared): State<Shared>,
    UrlPath(host): UrlPath<String>,
    Query(q): Query<RunsQuery>,
) -> Result<Json<Vec<Value>>, ApiError> {
    let limit = query_number("limit", q.limit.as_deref(), DEFAULT_LIMIT, 1..=MAX_LIMIT)?;
    let client = shared.pool.get().await?;
    let host_id = host_id(&client, &host).await?;
    let rows = client
        .query(
            "SELECT report, agent_run_id, trigger, started_unix_ms, kind_known FROM runs
             WHERE host_id = $1 ORDER BY started_unix_ms DESC, id DESC LIMIT $2",
            &[&host_id, &limit],
        )
        .await?;
    Ok(Json(
        rows.iter()
            .map(|r| {
                let mut run = r.get::<_, Value>(0);
                if let Value::Object(map) = &mut run {
                    map.insert("id".into(), r.get::<_, i64>(1).into());
                    map.insert("trigger".into(), r.get::<_, String>(2).into());
                    map.insert("started_unix_ms".into(), r.get::<_, i64>(3).into());
                    map.insert("kind_known".into(), r.get::<_, bool>(4).into());
                }
                run
            })
            .collect(),
    ))
}
