//! The collector's HTTP API (DESIGN 4.5): the router, and the two endpoints of its own.
//!
//! | path | what | where |
//! |---|---|---|
//! | `POST /api/runs` | an agent's run (`Authorization: Bearer TOKEN`): 201 stored, 200 stored before | here |
//! | `POST /api/fabric/sweeps` | a sampler's sweep (`Authorization: Bearer TOKEN`): 201 stored, 200 stored before; the answer's `read_now` lists the ports a job verdict asks it to read now | here, over [`crate::fabric`] |
//! | `GET /api/fabric/ports?since=MS&until=MS&ports=a,b` | per switch port, the deltas summed over the window and their rates | here, over [`crate::fabric`] |
//! | `PUT /api/hosts/{host}/agent`, `GET /api/agents` | where each agent listens, for pair probes | [`crate::agents`] |
//! | `POST /api/mesh` | a real mesh through the agents, for holders of a probe token | [`crate::mesh`], merged by [`crate::run`] |
//! | `GET /api/jobs/verdict?nodes=LIST&since=T&until=T[&job=ID][&probe=1]` | the job verdict (DESIGN 4.7); `probe=1` for holders of a probe token | [`crate::job`], merged by [`crate::run`] |
//! | `POST /api/collectives` | an agent's per-rank summaries of its jobs' NCCL Inspector collectives (`Authorization: Bearer TOKEN`): 201 stored, 200 every summary stored before | [`crate::collectives`] |
//! | `GET /api/jobs?since=T` | the jobs with collectives since `T` (a day by default), the slow ones first | [`crate::collectives`] |
//! | `GET /api/jobs/{job}/symptom?since=T` | a job's symptom from its collectives (DESIGN 4.8), 404 for a job without any | [`crate::collectives`] |
//! | `GET /api/health` | 200 with the schema version when the database answers, else 503 (for probes) | here |
//! | `GET /api/hosts`, `/api/hosts/{host}/runs?limit=N`, `/api/hosts/{host}/timeline?rnic=R&endpoint=E` | hosts, runs, one path over runs: the read API the agents serve too | `fleet_api::read::routes` over [`crate::reads`] |
//! | `GET /api/hosts/{host}/baseline`, `/api/kinds/{kind}/baseline`, `/api/fleet/...` | fleet baselines, slow hosts, status and causes | [`crate::fleet`] |
//! | `GET /`, `GET /hosts/{host}`, `GET /job` | the web UI's fleet overview, host page and job page | `fleet_api::ui` |
//!
//! Each part gets the state it needs (the read routes the database, the run upload the
//! writer and the tokens too), so no module of the collector imports this one.
//!
//! Refusals of a run: 401 no or unknown token, 403 a token of another host, 413 a body over
//! the limit, 400 a body outside the contract, 422 a run the database refuses for what it
//! holds (a NUL character in a string: the agent drops it), 503 the database is unreachable
//! (the agent keeps the run and retries), 500 the collector failed (the agent keeps the run
//! too). A 2xx is sent only after the commit. A sweep is refused as a run is (401, 403 for a
//! token of another host than its `sampler`, 413, 400), 422 when the database refuses it
//! for what it holds, 503 when the database is unreachable. Collectives are refused as a
//! run is, and 400 names the summary and field outside the contract ([`crate::collectives`]).
//! The reads refuse as
//! `fleet_api::read::ReadError` says: 400 a query outside the contract, 404 an unknown host
//! or kind, 503 the database is unreachable, 500 what is stored cannot be served.

use crate::batch::{Arrival, Stored};
use crate::fabric;
use crate::reads::PgReads;
use crate::writer::{WriteError, Writer};
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use deadpool_postgres::Pool;
use fleet_api::read::ErrorBody;
use fleet_api::status::Health;
use fleet_api::tokens::Tokens;
use fleet_api::upload;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// What the run upload and the health check share.
#[derive(Clone)]
struct Shared {
    pool: Pool,
    writer: Writer,
    tokens: Arc<Tokens>,
    /// How long switch-port sweeps are kept.
    keep_sweeps: Duration,
}

/// A refused run (or health check, sweep, collectives): its status and a message for the
/// caller.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ApiError {
    #[error("no valid bearer token")]
    Unauthorized,
    #[error("the token belongs to host {token_host}, not {host}")]
    WrongHost { token_host: String, host: String },
    #[error("{0}")]
    BadRequest(String),
    /// A query of `GET /api/fabric/ports` that names no window or no port.
    #[error(transparent)]
    BadPorts(#[from] fabric::ports::PortsQueryError),
    #[error("database: {0}")]
    Database(String),
    /// A pushed run over `--max-body`.
    #[error("the body is over the limit of {limit} bytes")]
    TooLarge { limit: usize },
    /// A checked run the writer did not store; [`WriteError`] says whose fault it is.
    #[error("{0}")]
    NotStored(WriteError),
    /// A checked sweep the database refused for what it holds.
    #[error("sweep refused by the database: {0}")]
    SweepRefused(String),
    /// A checked body the database refused for what it holds, in its words.
    #[error("refused by the database: {0}")]
    Refused(String),
    /// What was asked for is not stored.
    #[error("{0}")]
    NotFound(String),
    /// What was asked cannot be done in the state things are in (an action that did
    /// nothing, a node drained by someone else).
    #[error("{0}")]
    Conflict(String),
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = match &self {
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::WrongHost { .. } => StatusCode::FORBIDDEN,
            ApiError::BadRequest(_) | ApiError::BadPorts(_) => StatusCode::BAD_REQUEST,
            ApiError::Database(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::SweepRefused(_) | ApiError::Refused(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
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
        };
        let too_large = matches!(self, ApiError::TooLarge { .. });
        let body = ErrorBody {
            error: self.to_string(),
        };
        let mut response = (status, Json(body)).into_response();
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

/// The router, with `max_body` bytes the most a run or a sweep may weigh and sweeps kept
/// `keep_sweeps`.
pub fn router(
    pool: Pool,
    writer: Writer,
    tokens: Arc<Tokens>,
    max_body: usize,
    keep_sweeps: Duration,
) -> Router {
    let shared = Shared {
        pool: pool.clone(),
        writer,
        tokens: tokens.clone(),
        keep_sweeps,
    };
    Router::new()
        // The run's body is read by the handler itself, within `max_body` (read_run_body).
        .route(
            "/api/runs",
            post(move |state, headers, body| post_run(state, headers, body, max_body)),
        )
        .route(
            "/api/fabric/sweeps",
            post(move |state, headers, body| post_sweep(state, headers, body, max_body)),
        )
        .route("/api/fabric/ports", get(get_ports))
        .route("/api/health", get(health))
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(shared)
        .merge(fleet_api::read::routes().with_state(PgReads::new(pool.clone())))
        .merge(crate::agents::routes(pool.clone(), tokens))
        .merge(crate::fleet::routes().with_state(pool))
        // The web UI (fleet_api::ui).
        .merge(fleet_api::ui::collector_routes())
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
/// `discard_up_to` is how much beyond `max` may be read and dropped: [`DISCARD_BYTES`] for a
/// client with a valid token, none for a stranger (whose body costs the collector nothing
/// beyond `max`; a stranger's run is refused anyway). The 413 closes the connection
/// (`Connection: close`, set by [`ApiError`]).
async fn read_run_body(
    headers: &HeaderMap,
    mut body: Body,
    max: usize,
    discard_up_to: u64,
) -> Result<Bytes, ApiError> {
    let max_bytes = max as u64;
    let too_large = || ApiError::TooLarge { limit: max };
    let bound = max_bytes.saturating_add(discard_up_to);
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

/// A posted body and the host its bearer token belongs to (a run's or a sweep's): 401
/// without a valid token, 413 over `max_body`. The body is read before the token is refused
/// (as it always was), so that a client reading its answer sees the 401; only a host of the
/// fleet is worth reading more than the limit for, to answer its oversized body a 413 it
/// can read.
pub(crate) async fn authorized_body(
    tokens: &Tokens,
    headers: &HeaderMap,
    body: Body,
    max_body: usize,
) -> Result<(Bytes, String), ApiError> {
    let token_host = bearer(headers).and_then(|t| tokens.host_of(t));
    let discard_up_to = if token_host.is_some() {
        DISCARD_BYTES
    } else {
        0
    };
    let body = read_run_body(headers, body, max_body, discard_up_to).await?;
    let token_host = token_host.ok_or(ApiError::Unauthorized)?.to_owned();
    Ok((body, token_host))
}

async fn post_run(
    State(shared): State<Shared>,
    headers: HeaderMap,
    body: Body,
    max_body: usize,
) -> Result<Response, ApiError> {
    let (body, token_host) = authorized_body(&shared.tokens, &headers, body, max_body).await?;
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
        Json(upload::RunStored {
            stored: id,
            host,
            id: agent_run_id,
            duplicate,
        }),
    )
        .into_response())
}

/// `POST /api/fabric/sweeps`: the token rules of runs, then the sweep in one transaction;
/// the answer hands the sampler the ports a job verdict asks it to read now (`read_now`,
/// [`fabric::board`], asked through this collector or any other on the database), once
/// it has posted. Were taking them to fail, the sweep is stored but answered 503: the
/// sampler sends it again, and the answer to the resend hands them over.
async fn post_sweep(
    State(shared): State<Shared>,
    headers: HeaderMap,
    body: Body,
    max_body: usize,
) -> Result<Response, ApiError> {
    let (body, token_host) = authorized_body(&shared.tokens, &headers, body, max_body).await?;
    let upload = fabric::upload::parse(&body).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    if upload.sampler != token_host {
        return Err(ApiError::WrongHost {
            token_host,
            host: upload.sampler,
        });
    }
    let mut client = shared.pool.get().await?;
    let now = model::time::unix_ns(std::time::SystemTime::now());
    let stored = fabric::store::store_sweep(&mut client, &upload, shared.keep_sweeps, now)
        .await
        .map_err(|e| match e {
            fabric::store::StoreError::Database(e) => sweep_database_error(&e),
            refused @ (fabric::store::StoreError::Delta { .. }
            | fabric::store::StoreError::Upload(_)) => ApiError::BadRequest(refused.to_string()),
        })?;
    let status = if stored.duplicate {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let read_now = fabric::board::take(&**client, &upload.sampler).await?;
    Ok((
        status,
        Json(fleet_api::sweep::SweepStored {
            stored: stored.id,
            sampler: upload.sampler,
            sweep: upload.sweep,
            duplicate: stored.duplicate,
            deltas: stored.deltas,
            first: stored.first,
            read_now,
        }),
    )
        .into_response())
}

/// A failed sweep transaction by the server's SQLSTATE, as the run writer tells them
/// (writer.rs): refused for what it holds (22, 23, 54) is 422, anything else 503 (sent
/// again later; the sampler keeps the sweep).
fn sweep_database_error(e: &tokio_postgres::Error) -> ApiError {
    let words = crate::server_words(e);
    match e.code().and_then(|c| c.code().get(..2)) {
        Some("22" | "23" | "54") => ApiError::SweepRefused(words),
        _ => ApiError::Database(words),
    }
}

/// The query string of `GET /api/fabric/ports`, as given.
#[derive(Debug, serde::Deserialize)]
struct PortsParams {
    since: Option<String>,
    until: Option<String>,
    ports: Option<String>,
}

/// `GET /api/fabric/ports?since=MS&until=MS&ports=a,b`.
async fn get_ports(
    State(shared): State<Shared>,
    axum::extract::Query(params): axum::extract::Query<PortsParams>,
) -> Result<Json<fabric::ports::PortsAnswer>, ApiError> {
    let query = fabric::ports::PortsQuery::parse(
        params.since.as_deref(),
        params.until.as_deref(),
        params.ports.as_deref(),
    )?;
    let client = shared.pool.get().await?;
    let found = fabric::store::window(&**client, &query).await?;
    Ok(Json(fabric::ports::answer(&query, found)))
}

/// One cheap query through the pool: what a readiness probe needs to know.
async fn health(State(shared): State<Shared>) -> Result<Json<Health>, ApiError> {
    let client = shared.pool.get().await?;
    let version: Option<i32> = client
        .query_one("SELECT max(version) FROM schema_migrations", &[])
        .await?
        .get(0);
    Ok(Json(Health {
        database: "ok".to_string(),
        schema_version: version,
    }))
}
