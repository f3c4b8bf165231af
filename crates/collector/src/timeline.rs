//! `GET /api/hosts/{host}/timeline?rnic=R&endpoint=E[&since_unix_ms=T][&limit=N]`: one
//! path of one host over its runs, oldest first, as Hostping Fig. 9 plots it (a path's
//! bandwidth and latency run after run, where a flapping link shows as alternation).
//!
//! ```json
//! {"host": "node-1", "rnic": "rnic0", "endpoint": "gpu4",
//!  "points": [{"run_id": 41, "started_unix_ms": 1764000000000, "latency_us": 1.9,
//!              "bandwidth_gbps": 197.5, "status": "normal"}]}
//! ```
//!
//! One indexed range scan of `run_paths_over_time (host_id, started_unix_ms)`
//! (1,000 hosts x 7 days is the target scale): the newest `limit` points (1,000 by default,
//! 2,016 being a week at the 5-minute cadence) at or after `since_unix_ms`; reports are
//! never unpacked. `run_id` is the agent's run id, as `id` in `/api/hosts/{host}/runs`.

use crate::api::{host_id, query_number, ApiError, Shared};
use axum::extract::{Path as UrlPath, Query, State};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

/// Points per answer when `limit` is not given, and the most one answer holds (five weeks
/// at the 5-minute cadence).
const DEFAULT_POINTS: i64 = 1000;
const MAX_POINTS: i64 = 10_000;

/// The route.
pub(super) fn routes() -> Router<Shared> {
    Router::new().route("/api/hosts/{host}/timeline", get(timeline))
}

/// The query string, as text so that a bad number gets a message naming it.
#[derive(serde::Deserialize)]
struct TimelineQuery {
    rnic: Option<String>,
    endpoint: Option<String>,
    since_unix_ms: Option<String>,
    limit: Option<String>,
}

async fn timeline(
    State(shared): State<Shared>,
    UrlPath(host): UrlPath<String>,
    Query(q): Query<TimelineQuery>,
) -> Result<Json<Value>, ApiError> {
    let (Some(rnic), Some(endpoint)) = (q.rnic, q.endpoint) else {
        return Err(ApiError::BadRequest(
            "rnic and endpoint are required: ?rnic=R&endpoint=E".into(),
        ));
    };
    let since = query_number("since_unix_ms", q.since_unix_ms.as_deref(), 0, 0..=i64::MAX)?;
    let limit = query_number("limit", q.limit.as_deref(), DEFAULT_POINTS, 1..=MAX_POINTS)?;
    let client = shared.pool.get().await?;
    let host_id = host_id(&client, &host).await?;
    // Newest first down the index (so `limit` keeps the newest), reversed below; in each run's
    // row the path is found by its position in the rnic/endpoint arrays.
    let rows = client
        .query(
            "SELECT p.agent_run_id, p.started_unix_ms, p.latency_us[i], p.bandwidth_gbps[i],
                    p.status[i]
             FROM run_paths p
             CROSS JOIN LATERAL (
                 SELECT i FROM generate_subscripts(p.rnic, 1) AS i
                 WHERE p.rnic[i] = $2 AND p.endpoint[i] = $3 LIMIT 1
             ) path
             WHERE p.host_id = $1 AND p.started_unix_ms >= $4
             ORDER BY p.started_unix_ms DESC LIMIT $5",
            &[&host_id, &rnic, &endpoint, &since, &limit],
        )
        .await?;
    let points: Vec<Value> = rows
        .iter()
        .rev()
        .map(|r| {
            json!({
                "run_id": r.get::<_, i64>(0),
                "started_unix_ms": r.get::<_, i64>(1),
                "latency_us": r.get::<_, Option<f64>>(2),
                "bandwidth_gbps": r.get::<_, Option<f64>>(3),
                "status": r.get::<_, String>(4),
            })
        })
        .collect();
    Ok(Json(json!({
        "host": host,
        "rnic": rnic,
        "endpoint": endpoint,
        "points": points,
    })))
}
