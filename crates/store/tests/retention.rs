//! Retention of runs (`Store::prune_runs`) and the `inconclusive` column (schema v6): the
//! oldest runs leave by age and by count, a bounded batch per call, with their rows and
//! their place in the outbox; the file stops growing once the bound is reached.

mod common;

use proptest::prelude::*;
use rusqlite::Connection;
use std::path::Path;
use store::{RunQuery, RunRetention, Store, MIGRATIONS, SCHEMA_VERSION};

/// Keep everything younger than the epoch, the newest `keep_runs`, `batch` per call.
fn by_count(keep_runs: u32, batch: u32) -> RunRetention {
    RunRetention {
        older_than_unix_ms: 0,
        keep_runs,
        batch,
    }
}

fn ids(store: &Store) -> Vec<i64> {
    let mut ids: Vec<i64> = store
        .runs(&RunQuery {
            limit: u32::MAX,
            ..RunQuery::default()
        })
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    ids.reverse();
    ids
}

fn rows(db: &Path, table: &str) -> i64 {
    Connection::open(db)
        .unwrap()
        .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

/// The database file and its write-ahead log, bytes.
fn bytes_on_disk(db: &Path) -> u64 {
    let wal = db.with_extension("db-wal");
    std::fs::metadata(db).unwrap().len() + std::fs::metadata(wal).map_or(0, |m| m.len())
}

#[test]
fn the_newest_runs_stay_and_the_older_leave_with_their_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let mut store = Store::open(&db).unwrap();
    let report = common::unhealthy("dgx-a100");
    for t in 0..10 {
        common::insert_idle_run(&mut store, 1_000 + t, &report);
    }
    assert_eq!(store.prune_runs(&by_count(4, 100)).unwrap(), 6);
    assert_eq!(ids(&store), [7, 8, 9, 10]);
    // Children go with their run (3 paths, 2 links, 3 diagnoses a run).
    assert_eq!(rows(&db, "paths"), 4 * 3);
    assert_eq!(rows(&db, "links"), 4 * 2);
    assert_eq!(rows(&db, "diagnoses"), 4 * 3);
    // Within the bound, nothing more leaves.
    assert_eq!(store.prune_runs(&by_count(4, 100)).unwrap(), 0);
    store.integrity_check().unwrap();
}

#[test]
fn runs_older_than_the_cut_off_leave_whatever_the_count() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let report = common::healthy("dgx-a100", 2);
    for started in [1_000, 2_000, 3_000, 4_000] {
        common::insert_idle_run(&mut store, started, &report);
    }
    let keep = RunRetention {
        older_than_unix_ms: 3_000,
        keep_runs: 100,
        batch: 100,
    };
    assert_eq!(store.prune_runs(&keep).unwrap(), 2);
    assert_eq!(ids(&store), [3, 4]);
}

#[test]
fn one_call_prunes_at_most_its_batch_and_the_next_ones_catch_up() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let report = common::healthy("dgx-a100", 1);
    for t in 0..25 {
        common::insert_idle_run(&mut store, t, &report);
    }
    let keep = by_count(5, 8);
    assert_eq!(store.prune_runs(&keep).unwrap(), 8);
    assert_eq!(ids(&store).first(), Some(&9), "the oldest leave first");
    assert_eq!(store.prune_runs(&keep).unwrap(), 8);
    assert_eq!(store.prune_runs(&keep).unwrap(), 4);
    assert_eq!(ids(&store), [21, 22, 23, 24, 25]);
}

#[test]
fn a_pruned_run_waiting_for_the_collector_leaves_the_outbox_and_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    store.queue_for_collector(100);
    let report = common::healthy("dgx-a100", 1);
    for t in 0..6 {
        common::insert_idle_run(&mut store, t, &report);
    }
    store.outbox_delivered(1).unwrap();
    store.prune_runs(&by_count(3, 100)).unwrap();
    let pending: Vec<i64> = store
        .outbox_pending(100)
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(pending, [4, 5, 6]);
    // Runs 2 and 3 were never sent (run 1 was).
    assert_eq!(store.outbox_dropped(), 2);
}

#[test]
fn the_file_stops_growing_under_a_storm_of_runs() {
    // A full-mesh run of dgx-a100 (40 paths), a run per loop as in a pause storm; the agent
    // prunes after each run. Once the bound is reached the file reuses the freed pages.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let mut store = Store::open(&db).unwrap();
    let report = common::healthy("dgx-a100", 40);
    let keep = by_count(200, 16);
    let mut at_bound = 0;
    for t in 0..1_200 {
        common::insert_idle_run(&mut store, t, &report);
        store.prune_runs(&keep).unwrap();
        if t == 399 {
            at_bound = bytes_on_disk(&db);
        }
    }
    assert_eq!(ids(&store).len(), 200);
    let end = bytes_on_disk(&db);
    // Three times as many runs again: the file may not grow by more than a WAL's slack.
    assert!(
        end <= at_bound + at_bound / 5,
        "{at_bound} bytes at 400 runs, {end} at 1200"
    );
}

#[test]
fn inconclusive_runs_are_stored_and_older_runs_read_as_judged() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    // A database of schema 5, as the previous agent left it, with one run.
    {
        let mut conn = Connection::open(&db).unwrap();
        let tx = conn.transaction().unwrap();
        for batch in &MIGRATIONS[..5] {
            tx.execute_batch(batch).unwrap();
        }
        tx.execute(
            "INSERT INTO runs (started_unix_ms, clock_ns, duration_ns, trigger, trigger_detail, \
             host, mode, provenance, healthy, snapshot, report) \
             VALUES (1, 0, 0, 'idle', '', 'dgx-a100', 'idle', 'simulated', 1, '{}', ?1)",
            [serde_json::to_string(&common::healthy("dgx-a100", 1)).unwrap()],
        )
        .unwrap();
        tx.pragma_update(None, "user_version", 5).unwrap();
        tx.commit().unwrap();
    }
    let mut store = Store::open(&db).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let mut unjudged = common::healthy("dgx-a100", 1);
    unjudged.healthy = false;
    unjudged.inconclusive = true;
    let id = common::insert_idle_run(&mut store, 2, &unjudged);
    let old = store.run(1).unwrap().unwrap().summary;
    assert!(old.healthy && !old.inconclusive, "{old:?}");
    let new = store.run(id).unwrap().unwrap();
    assert!(!new.summary.healthy && new.summary.inconclusive);
    assert!(new.report.inconclusive);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Whatever the counts, repeated pruning ends with exactly the newest `keep` runs, and
    /// no call removes more than its batch.
    #[test]
    fn pruning_converges_to_the_newest_runs(runs in 0u32..60, keep in 1u32..40, batch in 1u32..20) {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
        let report = common::healthy("dgx-a100", 1);
        for t in 0..runs {
            common::insert_idle_run(&mut store, i64::from(t), &report);
        }
        loop {
            let pruned = store.prune_runs(&by_count(keep, batch)).unwrap();
            prop_assert!(pruned <= u64::from(batch));
            if pruned == 0 {
                break;
            }
        }
        let expected: Vec<i64> = (runs.saturating_sub(keep) + 1..=runs).map(i64::from).collect();
        prop_assert_eq!(ids(&store), expected);
    }
}
