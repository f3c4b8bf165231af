//! One path of one host over its runs, oldest first (`GET /api/hosts/{host}/timeline`, served
//! by `fleet_api::read`), as Hostping Fig. 9 plots it: a path's bandwidth and latency run
//! after run, where a flapping link shows as alternation.
//!
//! ```json
//! {"endpoint": "gpu4", "host": "node-1",
//!  "points": [{"bandwidth_gbps": 197.5, "latency_us": 1.9, "run_id": 41,
//!              "started_unix_ms": 1764000000000, "status": "normal"}],
//!  "rnic": "rnic0"}
//! ```
//!
//! One indexed range scan of `run_paths_over_time (host_id, started_unix_ms)`
//! (1,000 hosts x 7 days is the target scale): the newest `limit` points (1,000 by default,
//! 2,016 being a week at the 5-minute cadence) at or after `since_unix_ms`; reports are
//! never unpacked. `run_id` is the agent's run id, as `id` in `/api/hosts/{host}/runs`.

use crate::database::Db;
use fleet_api::read::{ReadError, TimelinePoint, TimelineRequest};

/// The points of `request`'s path of the host with database id `host_id`, oldest first.
pub(crate) async fn points(
    client: &tokio_postgres::Client,
    host_id: i64,
    request: &TimelineRequest,
) -> Result<Vec<TimelinePoint>, ReadError> {
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
            &[
                &host_id,
                &request.rnic,
                &request.endpoint,
                &request.since_unix_ms,
                &i64::from(request.limit),
            ],
        )
        .await
        .db()?;
    Ok(rows
        .iter()
        .rev()
        .map(|r| TimelinePoint {
            bandwidth_gbps: r.get(3),
            latency_us: r.get(2),
            run_id: r.get(0),
            started_unix_ms: r.get(1),
            status: r.get(4),
        })
        .collect())
}
