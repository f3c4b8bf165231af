//! The outbox (schema v4) and the instance id sent with each run (v5): runs queued in their insert transaction, read oldest first,
//! removed when delivered, counted when they fail, bounded with the oldest dropped.

mod common;

use rusqlite::Connection;
use store::{OutboxStats, Store, MIGRATIONS, SCHEMA_VERSION};

/// A database made by the first `version` migrations, as an older agent left it.
fn database_at_version(path: &std::path::Path, version: usize) -> Connection {
    let mut conn = Connection::open(path).unwrap();
    let tx = conn.transaction().unwrap();
    for batch in &MIGRATIONS[..version] {
        tx.execute_batch(batch).unwrap();
    }
    tx.pragma_update(None, "user_version", version).unwrap();
    tx.commit().unwrap();
    conn
}

#[test]
fn runs_are_queued_only_when_asked_and_leave_when_delivered() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let mut store = Store::open(&db).unwrap();
    let report = common::unhealthy("dgx-a100");
    common::insert_idle_run(&mut store, 1_000, &report);
    assert_eq!(store.outbox_stats().unwrap(), OutboxStats::default());
    store.queue_for_collector(10);
    let a = common::insert_idle_run(&mut store, 2_000, &report);
    let b = common::insert_idle_run(&mut store, 3_000, &common::healthy("dgx-a100", 4));
    let pending = store.outbox_pending(10).unwrap();
    assert_eq!(pending.iter().map(|r| r.id).collect::<Vec<_>>(), [a, b]);
    assert_eq!(pending[0].started_unix_ms, 2_000);
    assert_eq!(pending[0].trigger, "idle");
    assert_eq!(pending[0].report, serde_json::to_value(&report).unwrap());
    assert_eq!(
        store.outbox_stats().unwrap(),
        OutboxStats {
            queued: 2,
            oldest_started_unix_ms: Some(2_000)
        }
    );

    // A failure keeps it, counted; the queue survives reopening (another process).
    store.outbox_failed(a, "connection refused").unwrap();
    drop(store);
    let mut store = Store::open(&db).unwrap();
    let pending = store.outbox_pending(1).unwrap();
    assert_eq!((pending[0].id, pending[0].attempts), (a, 1));
    store.outbox_delivered(a).unwrap();
    assert_eq!(store.outbox_pending(10).unwrap()[0].id, b);
    store.outbox_delivered(b).unwrap();
    assert!(store.outbox_pending(10).unwrap().is_empty());
    // The runs themselves stay.
    assert_eq!(store.runs(&store::RunQuery::default()).unwrap().len(), 3);
}

#[test]
fn a_full_outbox_drops_its_oldest_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    store.queue_for_collector(3);
    let report = common::healthy("dgx-a100", 2);
    let ids: Vec<i64> = (0..5)
        .map(|i| common::insert_idle_run(&mut store, i, &report))
        .collect();
    let pending: Vec<i64> = store
        .outbox_pending(10)
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(pending, ids[2..]);
    assert_eq!(store.outbox_dropped(), 2);
    assert_eq!(store.outbox_stats().unwrap().queued, 3);
}

#[test]
fn a_v3_database_gains_an_empty_outbox_and_keeps_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let report = common::healthy("dgx-a100", 2);
    {
        // The v3 schema is all the old agent needs to store a run.
        let conn = database_at_version(&path, 3);
        conn.execute(
            "INSERT INTO runs (started_unix_ms, clock_ns, duration_ns, trigger, trigger_detail, \
             host, mode, provenance, healthy, snapshot, report) \
             VALUES (1, 2, 3, 'idle', '', 'dgx-a100', 'idle', 'simulated', 1, '{}', ?1)",
            [serde_json::to_string(&report).unwrap()],
        )
        .unwrap();
    }
    let mut store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(store.outbox_stats().unwrap().queued, 0);
    assert_eq!(store.run(1).unwrap().unwrap().report, report);
    // Runs stored before --collector are not sent; those after are.
    store.queue_for_collector(5);
    let id = common::insert_idle_run(&mut store, 9, &report);
    assert_eq!(store.outbox_pending(5).unwrap()[0].id, id);
}

#[test]
fn each_database_has_its_own_instance_id_kept_across_opens() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first.db");
    let id = Store::open(&first).unwrap().instance_id().unwrap();
    assert_eq!(id.len(), 32, "{id}");
    assert!(
        id.chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()),
        "{id}"
    );
    // Kept: the writer and a reader opened later see the same id.
    assert_eq!(Store::open(&first).unwrap().instance_id().unwrap(), id);
    assert_eq!(
        Store::open_read_only(&first)
            .unwrap()
            .instance_id()
            .unwrap(),
        id
    );
    // A wiped database is a new instance, although its run ids start from 1 again.
    std::fs::remove_file(&first).unwrap();
    let again = Store::open(&first).unwrap().instance_id().unwrap();
    assert_ne!(again, id);
    let other = Store::open(&dir.path().join("other.db"))
        .unwrap()
        .instance_id()
        .unwrap();
    assert_ne!(other, id);
    assert_ne!(other, again);
}

#[test]
fn a_v4_database_gains_an_instance_id_and_keeps_its_queue() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let report = common::healthy("dgx-a100", 2);
    {
        let conn = database_at_version(&path, 4);
        conn.execute(
            "INSERT INTO runs (started_unix_ms, clock_ns, duration_ns, trigger, trigger_detail, \
             host, mode, provenance, healthy, snapshot, report) \
             VALUES (1, 2, 3, 'idle', '', 'dgx-a100', 'idle', 'simulated', 1, '{}', ?1)",
            [serde_json::to_string(&report).unwrap()],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO outbox (run_id, queued_unix_ms) VALUES (1, 1)",
            [],
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(store.instance_id().unwrap().len(), 32);
    assert_eq!(store.outbox_pending(10).unwrap()[0].id, 1);
}
