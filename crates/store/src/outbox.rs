//! The outbox (table `outbox`, schema v4): runs waiting for the fleet collector. A run
//! enters it in the transaction that stores it (so a run is never stored and forgotten:
//! [`Store::insert_run`], once [`Store::queue_for_collector`] asked for it), and leaves it
//! when the collector acknowledged it; the sender reads it oldest first. The outbox is
//! bounded: past its cap the oldest runs leave unsent (they stay in `runs`), so a long
//! collector outage cannot fill the host's disk with retries.

use crate::db::{Context, Store, StoreError};
use rusqlite::params;

/// A queued run, with what the collector needs of it.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxRun {
    /// The run id (also the id the collector deduplicates on, with the host).
    pub id: i64,
    /// Wall clock at the start of the run, ms since the Unix epoch.
    pub started_unix_ms: i64,
    /// What started it.
    pub trigger: String,
    /// The report, as stored.
    pub report: serde_json::Value,
    /// Failed delivery attempts so far.
    pub attempts: u32,
}

/// How full the outbox is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OutboxStats {
    /// Runs waiting.
    pub queued: u64,
    /// When the oldest waiting run started, ms since the Unix epoch.
    pub oldest_started_unix_ms: Option<i64>,
}

impl Store {
    /// The oldest `limit` queued runs.
    pub fn outbox_pending(&self, limit: u32) -> Result<Vec<OutboxRun>, StoreError> {
        let path = &self.path;
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT o.run_id, r.started_unix_ms, r.trigger, r.report, o.attempts \
                 FROM outbox o JOIN runs r ON r.id = o.run_id ORDER BY o.run_id LIMIT ?1",
            )
            .ctx(path, "read the outbox")?;
        let rows = stmt
            .query_map(params![limit], |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, i64>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, String>(3)?,
                    row.get::<_, u32>(4)?,
                ))
            })
            .ctx(path, "read the outbox")?;
        let mut out = Vec::new();
        for row in rows {
            let (id, started_unix_ms, trigger, report, attempts) =
                row.ctx(path, "read the outbox")?;
            out.push(OutboxRun {
                id,
                started_unix_ms,
                trigger,
                report: serde_json::from_str(&report)
                    .ctx(path, format!("read run {id}: report"))?,
                attempts,
            });
        }
        Ok(out)
    }

    /// The collector acknowledged run `id`: it leaves the outbox.
    pub fn outbox_delivered(&mut self, id: i64) -> Result<(), StoreError> {
        self.conn
            .execute("DELETE FROM outbox WHERE run_id = ?1", params![id])
            .ctx(&self.path, format!("outbox: run {id} delivered"))?;
        Ok(())
    }

    /// A delivery of run `id` failed: counted, with the reason, and it stays queued.
    pub fn outbox_failed(&mut self, id: i64, error: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE outbox SET attempts = attempts + 1, last_error = ?2 WHERE run_id = ?1",
                params![id, error],
            )
            .ctx(&self.path, format!("outbox: run {id} failed"))?;
        Ok(())
    }

    /// This database's instance id (schema v5): 32 hex digits made once, when the file was
    /// created or migrated, and kept. The collector tells the runs of a wiped database (whose
    /// ids restart from 1) from resends by it.
    pub fn instance_id(&self) -> Result<String, StoreError> {
        self.conn
            .query_row("SELECT id FROM instance", [], |row| row.get(0))
            .ctx(&self.path, "read the instance id")
    }

    /// How many runs wait, and since when.
    pub fn outbox_stats(&self) -> Result<OutboxStats, StoreError> {
        self.conn
            .query_row(
                "SELECT count(*), min(r.started_unix_ms) FROM outbox o JOIN runs r ON r.id = o.run_id",
                [],
                |row| {
                    Ok(OutboxStats {
                        queued: row.get(0)?,
                        oldest_started_unix_ms: row.get(1)?,
                    })
                },
            )
            .ctx(&self.path, "outbox: count")
    }
}
