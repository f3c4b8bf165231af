//! Retention of runs: the agent stores a run every 5 minutes when idle and up to one every
//! few seconds in a storm of symptoms, so without a bound its database grows forever. After
//! each run the agent prunes, in one transaction, a bounded batch of the oldest runs beyond
//! the bound: older than a cut-off, or beyond the newest `keep_runs`. SQLite reuses the
//! pages freed, so the file stops growing once the bound is reached.

use crate::db::{Context, Store, StoreError};
use rusqlite::{params, TransactionBehavior};

/// What [`Store::prune_runs`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunRetention {
    /// Runs that started before this wall clock (ms since the Unix epoch) leave.
    pub older_than_unix_ms: i64,
    /// At most this many runs stay: the newest.
    pub keep_runs: u32,
    /// At most this many runs leave per call, so that one call costs little even when the
    /// bound was just lowered over a large database; the next calls catch up.
    pub batch: u32,
}

/// The oldest runs beyond the bound, at most `?3`: started before `?1`, or with an id at or
/// below `?2` (the newest id less `keep_runs`: ids only grow, so the newest `keep_runs` ids
/// hold at most `keep_runs` runs).
const BEYOND_THE_BOUND: &str = "SELECT id FROM runs WHERE started_unix_ms < ?1 OR id <= ?2 \
     ORDER BY id LIMIT ?3";

impl Store {
    /// Deletes the oldest runs beyond `keep`, at most `keep.batch` of them, with their paths,
    /// links and diagnoses. A pruned run still waiting for the collector leaves the outbox
    /// too and is counted in [`Store::outbox_dropped`]. Returns how many runs left.
    pub fn prune_runs(&mut self, keep: &RunRetention) -> Result<u64, StoreError> {
        let path = self.path.clone();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .ctx(&path, "prune runs: begin")?;
        let newest: i64 = tx
            .query_row("SELECT coalesce(max(id), 0) FROM runs", [], |row| {
                row.get(0)
            })
            .ctx(&path, "prune runs: newest id")?;
        let args = params![
            keep.older_than_unix_ms,
            newest - i64::from(keep.keep_runs),
            keep.batch
        ];
        let unsent = tx
            .execute(
                &format!("DELETE FROM outbox WHERE run_id IN ({BEYOND_THE_BOUND})"),
                args,
            )
            .ctx(&path, "prune runs: outbox")?;
        let pruned = tx
            .execute(
                &format!("DELETE FROM runs WHERE id IN ({BEYOND_THE_BOUND})"),
                args,
            )
            .ctx(&path, "prune runs")?;
        tx.commit().ctx(&path, "prune runs: commit")?;
        self.outbox_dropped += unsent as u64;
        Ok(pruned as u64)
    }
}
