//! One path's measurements over runs (Hostping Fig. 9: a path's bandwidth and latency run
//! after run, where a flapping link shows as alternation), read from the normalised `paths`
//! rows through the `paths_path (rnic, endpoint, run_id)` index of schema v2, never by
//! decoding reports.

use crate::db::{Context, Store, StoreError};
use rusqlite::params;
use serde::Serialize;

/// One run's measurement of one path. The JSON shape is the collector's
/// `GET /api/hosts/{host}/timeline` point, so one page script reads both.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathPoint {
    /// The run.
    pub run_id: i64,
    /// Wall clock at the start of the run, ms since the Unix epoch.
    pub started_unix_ms: i64,
    /// `None` when the probe did not measure it.
    pub latency_us: Option<f64>,
    /// `None` when the probe did not measure it.
    pub bandwidth_gbps: Option<f64>,
    /// `normal` / `abnormal` / `uncertain`, as the analyzer said.
    pub status: String,
}

impl Store {
    /// The newest `limit` measurements of path `rnic` -> `endpoint` in runs started at or
    /// after `since_unix_ms`, oldest first.
    pub fn path_timeline(
        &self,
        rnic: &str,
        endpoint: &str,
        since_unix_ms: i64,
        limit: u32,
    ) -> Result<Vec<PathPoint>, StoreError> {
        let what = || format!("read the timeline of {rnic}->{endpoint}");
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT p.run_id, r.started_unix_ms, p.latency_us, p.bandwidth_gbps, p.status \
                 FROM paths p JOIN runs r ON r.id = p.run_id \
                 WHERE p.rnic = ?1 AND p.endpoint = ?2 AND r.started_unix_ms >= ?3 \
                 ORDER BY p.run_id DESC LIMIT ?4",
            )
            .ctx(&self.path, what())?;
        let mut points = stmt
            .query_map(params![rnic, endpoint, since_unix_ms, limit], |row| {
                Ok(PathPoint {
                    run_id: row.get(0)?,
                    started_unix_ms: row.get(1)?,
                    latency_us: row.get(2)?,
                    bandwidth_gbps: row.get(3)?,
                    status: row.get(4)?,
                })
            })
            .ctx(&self.path, what())?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx(&self.path, what())?;
        points.reverse();
        Ok(points)
    }
}
