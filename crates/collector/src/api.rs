//! The collector's HTTP API (DESIGN 4.5): the router, and the two endpoints of its own.
//!
//! | path | what | where |
//! |---|---|---|
//! | `POST /api/runs` | an agent's run (`Authorization: Bearer TOKEN`): 201 stored, 200 stored before | here |
//! | `GET /api/health` | 200 with the schema version when the database answers, else 503 (for probes) | here |
//! | `GET /api/hosts`, `/api/hosts/{host}/runs?limit=N`, `/api/hosts/{host}/timeline?rnic=R&endpoint=E` | hosts, runs, one path over runs: the read API the agents serve too | `fleet_api::read::routes` over [`crate::reads`] |
//! | `GET /api/hosts/{host}/baseline`, `/api/kinds/{kind}/baseline`, `/api/fleet/...` | fleet baselines, slow hosts, status and causes | [`crate::fleet`] |
//! | `GET /`, `GET /hosts/{host}` | the web UI's fleet overview and host page | `fleet_api::ui` |
//!
//! Each part gets the state it needs (the read routes the database, the run upload the
//! writer and the tokens too), so no module of the collector imports this one.
//!
//! Refusals of a run: 401 no or unknown token, 403 a token of another host, 413 a body over
//! the limit, 400 a body outside the contract, 503 the database is unreachable (the agent
//! keeps the run and retries). A 2xx is sent only after the commit. The reads refuse as
//! `fleet_api::read::ReadError` says: 400 a query outside the contract, 404 an unknown host
//! or kind, 503 the database is unreachable.

use crate::batch::{Arrival, Stored};
use crate::reads::PgReads;
use crate::writer::Writer;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use deadpool_postgres::Pool;
use fleet_api::tokens::Tokens;
use fleet_api::upload;
use serde_json::{json, Value};
use std::sync::Arc;

/// What the run upload and the health check share.
#[derive(Clone)]
struct Shared {
    pool: Pool,
    writer: Writer,
    tokens: Arc<Tokens>,
}

/// A refused run (or health check): its status and a message for the caller.
#[derive(Debug, thiserror::Error)]
enum ApiError {
    #[error("no valid bearer token")]
    Unauthorized,
    #[error("the token belongs to host {token_host}, not {host}")]
    WrongHost { token_host: String, host: String },
    #[error("{0}")]
    BadRequest(String),
    #[error("database: {0}")]
    Database(String),
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = match &self {
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::WrongHost { .. } => StatusCode::FORBIDDEN,
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Database(_) => StatusCode::SERVICE_UNAVAILABLE,
        };
        let mut response = (status, Json(json!({"error": self.to_string()}))).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, "Bearer".parse().expect("static"));
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

/// The router, with `max_body` bytes the most a run may weigh.
pub fn router(pool: Pool, writer: Writer, tokens: Tokens, max_body: usize) -> Router {
    let shared = Shared {
        pool: pool.clone(),
        writer,
        tokens: Arc::new(tokens),
    };
    Router::new()
        .route("/api/runs", post(post_run))
        .route("/api/health", get(health))
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(shared)
        .merge(fleet_api::read::routes().with_state(PgReads::new(pool.clone())))
        .merge(crate::fleet::routes().with_state(pool))
        // The web UI (fleet_api::ui).
        .merge(fleet_api::ui::collector_routes())
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

async fn post_run(
    State(shared): State<Shared>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
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
        .map_err(ApiError::Database)?;
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
