//! This agent's database as a [`ReadStore`]: the read endpoints it shares with the
//! collector (`GET /api/hosts`, `/api/hosts/{host}/runs`, `/api/hosts/{host}/timeline`),
//! for its one host.
//!
//! Each read opens a read-only connection of its own (WAL lets it read beside the writer)
//! and answers inline: SQLite is synchronous, and this runs on the agent's own HTTP thread,
//! which serves nothing else and never holds up the probe loop (see `fleet_api::read`).

use super::Shared;
use fleet_api::read::{
    HostRun, HostSummary, ReadError, ReadStore, RunEnvelope, TimelinePoint, TimelineRequest,
};
use model::Report;
use store::{PathPoint, RunQuery, Store, StoredRun};

impl Shared {
    /// A read-only connection; a database that cannot be opened is unavailable (503).
    fn open_store(&self) -> Result<Store, ReadError> {
        Store::open_read_only(&self.database).map_err(ReadError::unavailable)
    }
}

/// A stored run as the read API serves it.
fn host_run(run: StoredRun) -> HostRun<Report> {
    HostRun {
        envelope: RunEnvelope {
            id: run.summary.id,
            // Whether the kind is a known model is the collector's to say.
            kind_known: None,
            started_unix_ms: run.summary.started_unix_ms,
            trigger: run.summary.trigger,
        },
        report: run.report,
    }
}

/// A stored path measurement as the read API serves it.
fn timeline_point(point: PathPoint) -> TimelinePoint {
    let PathPoint {
        run_id,
        started_unix_ms,
        latency_us,
        bandwidth_gbps,
        status,
    } = point;
    TimelinePoint {
        bandwidth_gbps,
        latency_us,
        run_id,
        started_unix_ms,
        status,
    }
}

impl ReadStore for Shared {
    type Report = Report;

    fn single_host(&self) -> Option<&str> {
        Some(&self.name)
    }

    /// This host, in the collector's shape: its latest run's health and causes. Its rack and
    /// whether its kind is known are the collector's to say: left out.
    async fn hosts(&self) -> Result<Vec<HostSummary>, ReadError> {
        let model = self.status.lock().expect("status").host.clone();
        let store = self.open_store()?;
        let latest = store
            .runs(&RunQuery {
                limit: 1,
                ..RunQuery::default()
            })
            .map_err(ReadError::internal)?;
        let counts = store.trigger_counts().map_err(ReadError::internal)?;
        let latest = latest.into_iter().next();
        let mut causes = latest
            .as_ref()
            .map(|r| r.causes.clone())
            .unwrap_or_default();
        causes.sort();
        causes.dedup();
        // Every run has one trigger: the per-trigger counts add up to all.
        let runs: u64 = counts.iter().map(|(_, n)| n).sum();
        // Inconclusive or not is the report's to say (as the collector reads it).
        let inconclusive = match &latest {
            Some(r) => store
                .run(r.id)
                .map_err(ReadError::internal)?
                .map(|run| analyze::fleet::is_inconclusive(&run.report)),
            None => None,
        };
        let now = ::model::time::unix_ms(std::time::SystemTime::now());
        Ok(vec![HostSummary {
            agent_url: None,
            causes,
            health: latest.as_ref().and_then(|r| {
                analyze::fleet::health(
                    Some(r.healthy),
                    inconclusive == Some(true),
                    Some(r.started_unix_ms),
                    now,
                )
            }),
            healthy: latest.as_ref().map(|r| r.healthy),
            host: self.name.clone(),
            inconclusive,
            kind: latest.as_ref().map_or(model, |r| r.host.clone()),
            kind_known: None,
            last_run_unix_ms: latest.as_ref().map(|r| r.started_unix_ms),
            rack: None,
            runs: i64::try_from(runs).unwrap_or(i64::MAX),
        }])
    }

    async fn host_runs(
        &self,
        _host: &str,
        limit: u32,
    ) -> Result<Option<Vec<HostRun<Report>>>, ReadError> {
        let store = self.open_store()?;
        let summaries = store
            .runs(&RunQuery {
                limit,
                ..RunQuery::default()
            })
            .map_err(ReadError::internal)?;
        let runs = summaries
            .iter()
            .filter_map(|summary| store.run(summary.id).transpose())
            .map(|run| run.map(host_run))
            .collect::<Result<Vec<_>, _>>()
            .map_err(ReadError::internal)?;
        Ok(Some(runs))
    }

    async fn timeline(
        &self,
        _host: &str,
        request: &TimelineRequest,
    ) -> Result<Option<Vec<TimelinePoint>>, ReadError> {
        let store = self.open_store()?;
        let points = store
            .path_timeline(
                &request.rnic,
                &request.endpoint,
                request.since_unix_ms,
                request.limit,
            )
            .map_err(ReadError::internal)?;
        Ok(Some(points.into_iter().map(timeline_point).collect()))
    }
}
