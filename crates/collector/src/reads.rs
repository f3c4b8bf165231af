//! The read endpoints the collector shares with the agents (`GET /api/hosts`,
//! `/api/hosts/{host}/runs`, `/api/hosts/{host}/timeline`), served by
//! [`fleet_api::read::routes`] over the collector's PostgreSQL.

use crate::database::Db;
use crate::timeline;
use analyze::fleet::health;
use deadpool_postgres::Pool;
use fleet_api::read::{
    HostRun, HostSummary, ReadError, ReadStore, RunEnvelope, TimelinePoint, TimelineRequest,
};
use serde_json::Value;
use std::time::SystemTime;

/// The collector's database as a [`ReadStore`].
#[derive(Clone)]
pub struct PgReads {
    pool: Pool,
}

impl PgReads {
    /// Reads through `pool`.
    pub fn new(pool: Pool) -> PgReads {
        PgReads { pool }
    }
}

/// The database id of the host named `host`, if there is one.
async fn host_id(client: &tokio_postgres::Client, host: &str) -> Result<Option<i64>, ReadError> {
    let row = client
        .query_opt("SELECT id FROM hosts WHERE name = $1", &[&host])
        .await
        .db()?;
    Ok(row.map(|r| r.get(0)))
}

impl ReadStore for PgReads {
    /// The report as the agent sent it (a `json` column, checked against `model::Report`
    /// when it arrived): a newer agent's fields are served too.
    type Report = Value;

    async fn hosts(&self) -> Result<Vec<HostSummary>, ReadError> {
        let client = self.pool.get().await.db()?;
        // One row per host: the summary columns are kept up to date by each run's
        // transaction.
        let rows = client
            .query(
                "SELECT name, kind, kind_known, latest_healthy, latest_started_unix_ms, runs,
                        latest_causes, rack, latest_inconclusive, a.url
                 FROM hosts LEFT JOIN agents a ON a.host = hosts.name ORDER BY name",
                &[],
            )
            .await
            .db()?;
        let now = model::time::unix_ms(SystemTime::now());
        Ok(rows
            .iter()
            .map(|r| {
                let healthy: Option<bool> = r.get(3);
                let last_run_unix_ms: Option<i64> = r.get(4);
                let inconclusive: bool = r.get(8);
                HostSummary {
                    agent_url: r.get(9),
                    causes: r.get(6),
                    health: health(healthy, inconclusive, last_run_unix_ms, now),
                    healthy,
                    host: r.get(0),
                    inconclusive: healthy.map(|_| inconclusive),
                    kind: r.get(1),
                    kind_known: Some(r.get(2)),
                    last_run_unix_ms,
                    rack: Some(r.get(7)),
                    runs: r.get(5),
                }
            })
            .collect())
    }

    async fn host_runs(
        &self,
        host: &str,
        limit: u32,
    ) -> Result<Option<Vec<HostRun<Value>>>, ReadError> {
        let client = self.pool.get().await.db()?;
        let Some(host_id) = host_id(&client, host).await? else {
            return Ok(None);
        };
        let rows = client
            .query(
                "SELECT report, agent_run_id, trigger, started_unix_ms, kind_known FROM runs
                 WHERE host_id = $1 ORDER BY started_unix_ms DESC, id DESC LIMIT $2",
                &[&host_id, &i64::from(limit)],
            )
            .await
            .db()?;
        Ok(Some(
            rows.iter()
                .map(|r| HostRun {
                    envelope: RunEnvelope {
                        id: r.get(1),
                        kind_known: Some(r.get(4)),
                        started_unix_ms: r.get(3),
                        trigger: r.get(2),
                    },
                    report: r.get(0),
                })
                .collect(),
        ))
    }

    async fn timeline(
        &self,
        host: &str,
        request: &TimelineRequest,
    ) -> Result<Option<Vec<TimelinePoint>>, ReadError> {
        let client = self.pool.get().await.db()?;
        let Some(host_id) = host_id(&client, host).await? else {
            return Ok(None);
        };
        timeline::points(&client, host_id, request).await.map(Some)
    }
}
