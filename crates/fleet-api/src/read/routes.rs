//! The shared read endpoints, once, over any [`ReadStore`]: `GET /api/hosts`,
//! `GET /api/hosts/{host}/runs` and `GET /api/hosts/{host}/timeline`.

use super::error::ReadError;
use super::hosts::{HostRun, HostSummary, Timeline};
use super::query::{HostsQuery, RunsQuery, TimelineQuery};
use super::store::ReadStore;
use axum::extract::{Path, Query, State};
use axum::routing::get;
use axum::{Json, Router};

/// The routes, for a router whose state is the store.
pub fn routes<S: ReadStore>() -> Router<S> {
    Router::new()
        .route("/api/hosts", get(hosts::<S>))
        .route("/api/hosts/{host}/runs", get(host_runs::<S>))
        .route("/api/hosts/{host}/timeline", get(timeline::<S>))
}

/// The 404 of a host the store does not hold.
fn no_host<S: ReadStore>(store: &S, host: String) -> ReadError {
    ReadError::NoHost {
        host,
        only: store.single_host().map(str::to_owned),
    }
}

/// A store of one host refuses the others before anything else is checked (as agents always
/// did).
fn held<S: ReadStore>(store: &S, host: &str) -> Result<(), ReadError> {
    match store.single_host() {
        Some(only) if only != host => Err(no_host(store, host.to_owned())),
        _ => Ok(()),
    }
}

async fn hosts<S: ReadStore>(
    State(store): State<S>,
    Query(query): Query<HostsQuery>,
) -> Result<Json<Vec<HostSummary>>, ReadError> {
    let filter = query.filter()?;
    let mut hosts = store.hosts().await?;
    hosts.retain(|h| filter.keeps(h));
    Ok(Json(hosts))
}

async fn host_runs<S: ReadStore>(
    State(store): State<S>,
    Path(host): Path<String>,
    Query(query): Query<RunsQuery>,
) -> Result<Json<Vec<HostRun<S::Report>>>, ReadError> {
    held(&store, &host)?;
    let limit = query.limit()?;
    match store.host_runs(&host, limit).await? {
        Some(runs) => Ok(Json(runs)),
        None => Err(no_host(&store, host)),
    }
}

async fn timeline<S: ReadStore>(
    State(store): State<S>,
    Path(host): Path<String>,
    Query(query): Query<TimelineQuery>,
) -> Result<Json<Timeline>, ReadError> {
    held(&store, &host)?;
    let request = query.request()?;
    let Some(points) = store.timeline(&host, &request).await? else {
        return Err(no_host(&store, host));
    };
    Ok(Json(Timeline {
        endpoint: request.endpoint,
        host,
        points,
        rnic: request.rnic,
    }))
}
