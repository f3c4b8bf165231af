//! The SQLite store: round trips, listing, migrations, refusals, WAL and readers.

mod common;

use model::Report;
use proptest::prelude::*;
use rusqlite::Connection;
use serde_json::json;
use std::path::{Path, PathBuf};
use store::{NewRun, RunQuery, Store, StoreError, MIGRATIONS, SCHEMA_VERSION};

fn db(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("runs.db")
}

fn insert(store: &mut Store, trigger: &str, report: &Report) -> i64 {
    let snapshot = json!({"at_ns": 7, "trigger": trigger});
    store
        .insert_run(&NewRun {
            started_unix_ms: 1_700_000_000_000,
            clock_ns: 5_000_000_000,
            duration_ns: 1_250_000_000,
            trigger,
            trigger_detail: "detail",
            snapshot: &snapshot,
            counters: None,
            report,
        })
        .unwrap()
}

fn query(limit: u32, before: Option<i64>, trigger: Option<&str>) -> RunQuery {
    RunQuery {
        limit,
        before,
        trigger: trigger.map(str::to_string),
    }
}

fn ids(store: &Store, q: &RunQuery) -> Vec<i64> {
    store.runs(q).unwrap().iter().map(|r| r.id).collect()
}

/// The causes a summary should list: each once, in order of first diagnosis.
fn distinct_causes(report: &Report) -> Vec<String> {
    let mut causes: Vec<String> = Vec::new();
    for d in &report.diagnoses {
        if !causes.iter().any(|c| c == d.cause.as_str()) {
            causes.push(d.cause.as_str().to_string());
        }
    }
    causes
}

/// rnic, endpoint, latency_us, bandwidth_gbps, status, error.
type PathRow = (
    String,
    String,
    Option<f64>,
    Option<f64>,
    String,
    Option<String>,
);

/// The normalised rows of a run, compared field by field with its report.
fn check_rows(path: &Path, id: i64, report: &Report) {
    let conn = Connection::open(path).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT rnic, endpoint, latency_us, bandwidth_gbps, status, error FROM paths \
             WHERE run_id = ?1 ORDER BY idx",
        )
        .unwrap();
    let rows: Vec<PathRow> = stmt
        .query_map([id], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let expected: Vec<_> = report
        .paths
        .iter()
        .map(|p| {
            (
                p.rnic.to_string(),
                p.endpoint.to_string(),
                p.latency_us,
                p.bandwidth_gbps,
                serde_json::to_value(p.status)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_string(),
                p.error.clone(),
            )
        })
        .collect();
    assert_eq!(rows, expected);

    let mut stmt = conn
        .prepare(
            "SELECT id, kind, status, abnormal_cnt, utilisation FROM links WHERE run_id = ?1 \
             ORDER BY idx",
        )
        .unwrap();
    let links: Vec<(String, String, String, u32, Option<f64>)> = stmt
        .query_map([id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let expected: Vec<_> = report
        .links
        .iter()
        .map(|l| {
            (
                l.id.to_string(),
                l.kind.as_str().to_string(),
                serde_json::to_value(l.status)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_string(),
                l.abnormal_cnt,
                l.utilisation,
            )
        })
        .collect();
    assert_eq!(links, expected);

    let mut stmt = conn
        .prepare(
            "SELECT cause, links, rnic, evidence FROM diagnoses WHERE run_id = ?1 ORDER BY idx",
        )
        .unwrap();
    let diagnoses: Vec<(String, String, Option<String>, String)> = stmt
        .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let expected: Vec<_> = report
        .diagnoses
        .iter()
        .map(|d| {
            (
                d.cause.as_str().to_string(),
                serde_json::to_string(&d.links).unwrap(),
                d.rnic.as_ref().map(|r| r.to_string()),
                d.evidence.clone(),
            )
        })
        .collect();
    assert_eq!(diagnoses, expected);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Whatever report goes in comes back equal, from `run` and `recent_reports`, with a
    /// summary that agrees with it and normalised rows that match it field by field.
    #[test]
    fn round_trip_any_report(
        report in common::report(),
        started_unix_ms in any::<i64>(),
        clock_ns in 0..=i64::MAX as u64,
        duration_ns in 0..=i64::MAX as u64,
        trigger in common::text(),
        detail in common::text(),
        level in common::finite(),
        with_counters in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&db(&dir)).unwrap();
        let snapshot = json!({"at_ns": clock_ns, "rnics": [{"id": "rnic0", "tx_pause_ratio": level}]});
        let counters = json!({"rnic0": {"port_xmit_data": 12345, "ratio": level}});
        let run = NewRun {
            started_unix_ms,
            clock_ns,
            duration_ns,
            trigger: &trigger,
            trigger_detail: &detail,
            snapshot: &snapshot,
            counters: with_counters.then_some(&counters),
            report: &report,
        };
        let id = store.insert_run(&run).unwrap();

        let stored = store.run(id).unwrap().expect("the run just stored");
        prop_assert_eq!(&stored.report, &report);
        prop_assert_eq!(&stored.snapshot, &snapshot);
        prop_assert_eq!(stored.counters.as_ref(), run.counters);
        let s = &stored.summary;
        prop_assert_eq!(s.id, id);
        prop_assert_eq!(s.started_unix_ms, started_unix_ms);
        prop_assert_eq!(s.clock_ns, clock_ns);
        prop_assert_eq!(s.duration_ns, duration_ns);
        prop_assert_eq!(&s.trigger, &trigger);
        prop_assert_eq!(&s.trigger_detail, &detail);
        prop_assert_eq!(&s.host, &report.host);
        prop_assert_eq!(json!(s.mode), json!(report.mode));
        prop_assert_eq!(json!(s.provenance), json!(report.provenance));
        prop_assert_eq!(s.healthy, report.healthy);
        prop_assert_eq!(s.paths as usize, report.paths.len());
        prop_assert_eq!(
            s.failed_paths as usize,
            report.paths.iter().filter(|p| p.error.is_some()).count()
        );
        prop_assert_eq!(&s.causes, &distinct_causes(&report));

        let listed = store.runs(&RunQuery::default()).unwrap();
        prop_assert_eq!(listed.len(), 1);
        prop_assert_eq!(&listed[0], s);
        prop_assert_eq!(store.recent_reports(&report.host, 5).unwrap(), vec![report.clone()]);
        check_rows(&db(&dir), id, &report);
    }
}

#[test]
fn stored_run_serialises_flat() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&db(&dir)).unwrap();
    let report = common::unhealthy("dgx-a100");
    let id = insert(&mut store, "pfc", &report);
    let stored = store.run(id).unwrap().unwrap();
    let v = serde_json::to_value(&stored).unwrap();
    assert_eq!(v["id"], id);
    assert_eq!(v["trigger"], "pfc");
    assert_eq!(v["healthy"], false);
    assert_eq!(v["paths"], 3);
    assert_eq!(v["failed_paths"], 1);
    assert_eq!(
        v["causes"],
        json!(["link_failure", "rnic_misconfiguration"])
    );
    assert_eq!(v["report"]["diagnoses"][1]["rnic"], "rnic0");
    assert_eq!(v["counters"], serde_json::Value::Null);
    assert!(store.run(id + 1).unwrap().is_none());
}

#[test]
fn runs_are_newest_first_paged_by_id_and_filtered_by_trigger() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&db(&dir)).unwrap();
    let triggers = ["idle", "pfc", "idle", "drops", "pfc", "idle", "manual"];
    let inserted: Vec<i64> = triggers
        .iter()
        .map(|t| insert(&mut store, t, &common::healthy("dgx-a100", 1)))
        .collect();
    assert!(inserted.windows(2).all(|w| w[0] < w[1]), "ids grow");
    let [a, b, c, d, e, f, g] = inserted[..] else {
        unreachable!()
    };

    assert_eq!(ids(&store, &RunQuery::default()), [g, f, e, d, c, b, a]);
    assert_eq!(ids(&store, &query(3, None, None)), [g, f, e]);
    assert_eq!(ids(&store, &query(3, Some(e), None)), [d, c, b]);
    assert_eq!(ids(&store, &query(3, Some(b), None)), [a]);
    assert_eq!(ids(&store, &query(3, Some(a), None)), Vec::<i64>::new());
    assert_eq!(ids(&store, &query(0, None, None)), Vec::<i64>::new());

    assert_eq!(ids(&store, &query(50, None, Some("idle"))), [f, c, a]);
    assert_eq!(ids(&store, &query(1, None, Some("idle"))), [f]);
    assert_eq!(ids(&store, &query(1, Some(f), Some("idle"))), [c]);
    assert_eq!(ids(&store, &query(50, Some(e), Some("pfc"))), [b]);
    assert_eq!(
        ids(&store, &query(50, None, Some("nothing"))),
        Vec::<i64>::new()
    );
    let pfc = store.runs(&query(50, None, Some("pfc"))).unwrap();
    assert!(pfc.iter().all(|r| r.trigger == "pfc"));

    assert_eq!(
        store.trigger_counts().unwrap(),
        [
            ("drops".to_string(), 1),
            ("idle".to_string(), 3),
            ("manual".to_string(), 1),
            ("pfc".to_string(), 2)
        ]
    );
}

#[test]
fn recent_reports_are_the_last_n_of_one_host_oldest_first() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&db(&dir)).unwrap();
    let mut of_a = Vec::new();
    for i in 0..6u32 {
        let mut a = common::healthy("host-a", 2);
        a.run = i;
        insert(&mut store, "idle", &a);
        of_a.push(a);
        let mut b = common::unhealthy("host-b");
        b.run = 100 + i;
        insert(&mut store, "pfc", &b);
    }
    assert_eq!(store.recent_reports("host-a", 3).unwrap(), of_a[3..]);
    assert_eq!(store.recent_reports("host-a", 100).unwrap(), of_a);
    assert!(store.recent_reports("host-a", 0).unwrap().is_empty());
    assert!(store.recent_reports("host-c", 3).unwrap().is_empty());
    let b = store.recent_reports("host-b", 2).unwrap();
    assert_eq!(b.iter().map(|r| r.run).collect::<Vec<_>>(), [104, 105]);
}

#[test]
fn a_new_database_is_at_the_latest_version_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let mut store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(SCHEMA_VERSION as usize, MIGRATIONS.len());
    const { assert!(SCHEMA_VERSION >= 2) };
    store.integrity_check().unwrap();
    insert(&mut store, "idle", &common::healthy("h", 1));

    // The journal mode is persistent: a separate connection reads it from the file.
    let conn = Connection::open(&path).unwrap();
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    assert!(dir.path().join("runs.db-wal").exists());

    // Reopening an up-to-date database changes nothing.
    drop(store);
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(store.runs(&RunQuery::default()).unwrap().len(), 1);
}

#[test]
fn a_reader_sees_committed_runs_while_the_writer_is_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let mut writer = Store::open(&path).unwrap();
    let first = insert(&mut writer, "idle", &common::healthy("h", 2));
    let reader = Store::open_read_only(&path).unwrap();
    assert_eq!(ids(&reader, &RunQuery::default()), [first]);

    let second = insert(&mut writer, "pfc", &common::unhealthy("h"));
    assert_eq!(ids(&reader, &RunQuery::default()), [second, first]);
    assert_eq!(
        reader.run(second).unwrap().unwrap().report,
        common::unhealthy("h")
    );
    assert_eq!(reader.recent_reports("h", 10).unwrap().len(), 2);
    reader.integrity_check().unwrap();

    // Still readable after the writer is gone (its WAL checkpointed and removed).
    drop(writer);
    drop(reader);
    let reader = Store::open_read_only(&path).unwrap();
    assert_eq!(ids(&reader, &RunQuery::default()), [second, first]);
}

#[test]
fn read_only_refuses_a_missing_file_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.db");
    let err = Store::open_read_only(&path).unwrap_err();
    assert!(matches!(err, StoreError::Sqlite { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
    assert!(!path.exists(), "a reader must not create the file");
}

#[test]
fn open_needs_the_parent_folder() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no/such/dir/runs.db");
    let err = Store::open(&path).unwrap_err();
    assert!(
        err.to_string().starts_with(&path.display().to_string()),
        "{err}"
    );
}

/// Builds a database as the schema-1 binary did: migration 1 only, one run inserted with
/// the columns it knew.
fn create_v1(path: &Path, report: &Report) {
    let mut conn = Connection::open(path).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    let tx = conn.transaction().unwrap();
    tx.execute_batch(MIGRATIONS[0]).unwrap();
    tx.pragma_update(None, "user_version", 1).unwrap();
    tx.commit().unwrap();

    let tx = conn.transaction().unwrap();
    tx.execute(
        "INSERT INTO runs (started_unix_ms, clock_ns, duration_ns, trigger, trigger_detail, \
         host, mode, provenance, healthy, snapshot, report) \
         VALUES (1700000000000, 10, 20, 'pfc', 'rnic0 tx pause ratio 0.18 > PFC_high 0.03', \
         ?1, 'idle', 'simulated', ?2, '{\"at_ns\":10}', ?3)",
        rusqlite::params![
            report.host,
            report.healthy,
            serde_json::to_string(report).unwrap()
        ],
    )
    .unwrap();
    let id = tx.last_insert_rowid();
    for (i, p) in report.paths.iter().enumerate() {
        tx.execute(
            "INSERT INTO paths (run_id, idx, rnic, endpoint, latency_us, bandwidth_gbps, \
             status, error) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            rusqlite::params![
                id,
                i as i64,
                p.rnic.as_str(),
                p.endpoint.as_str(),
                p.latency_us,
                p.bandwidth_gbps,
                serde_json::to_value(p.status).unwrap().as_str().unwrap(),
                p.error
            ],
        )
        .unwrap();
    }
    for (i, d) in report.diagnoses.iter().enumerate() {
        tx.execute(
            "INSERT INTO diagnoses (run_id, idx, cause, links, rnic, evidence) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            rusqlite::params![
                id,
                i as i64,
                d.cause.as_str(),
                serde_json::to_string(&d.links).unwrap(),
                d.rnic.as_ref().map(|r| r.as_str()),
                d.evidence
            ],
        )
        .unwrap();
    }
    tx.commit().unwrap();
}

#[test]
fn a_v1_database_migrates_to_the_latest_keeping_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let old = common::unhealthy("dgx-a100");
    create_v1(&path, &old);

    // A reader must not touch it before a writer migrates it.
    let err = Store::open_read_only(&path).unwrap_err();
    assert!(
        matches!(err, StoreError::OlderSchema { found: 1, .. }),
        "{err:?}"
    );

    let mut store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    store.integrity_check().unwrap();
    let stored = store.run(1).unwrap().expect("the v1 run survives");
    assert_eq!(stored.report, old);
    assert_eq!(stored.snapshot, json!({"at_ns": 10}));
    assert_eq!(stored.counters, None);
    assert_eq!(stored.summary.trigger, "pfc");
    assert_eq!(stored.summary.paths, 3);
    assert_eq!(stored.summary.failed_paths, 1);
    assert_eq!(
        stored.summary.causes,
        ["link_failure", "rnic_misconfiguration"]
    );
    assert_eq!(store.recent_reports("dgx-a100", 5).unwrap(), vec![old]);

    // The new schema is in place: counters are kept, and the v2 and v3 indexes exist.
    let counters = json!({"rnic0": {"np_cnp_sent": 3}});
    let report = common::healthy("dgx-a100", 1);
    let id = store
        .insert_run(&NewRun {
            started_unix_ms: 1,
            clock_ns: 2,
            duration_ns: 3,
            trigger: "idle",
            trigger_detail: "",
            snapshot: &json!({}),
            counters: Some(&counters),
            report: &report,
        })
        .unwrap();
    assert_eq!(id, 2);
    assert_eq!(store.run(id).unwrap().unwrap().counters, Some(counters));
    let conn = Connection::open(&path).unwrap();
    let indexes: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        indexes,
        [
            "fabric_ports_port",
            "fabric_sweeps_start",
            "paths_path",
            "runs_host",
            "runs_trigger"
        ]
    );
    drop(store);
    assert!(Store::open_read_only(&path).is_ok());
}

#[test]
fn a_database_from_a_newer_schema_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let newer = SCHEMA_VERSION + 1;
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE future (x INTEGER);")
            .unwrap();
        conn.pragma_update(None, "user_version", newer).unwrap();
    }
    for err in [
        Store::open(&path).unwrap_err(),
        Store::open_read_only(&path).unwrap_err(),
    ] {
        assert!(
            matches!(err, StoreError::NewerSchema { found, known, .. } if found == newer && known == SCHEMA_VERSION),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert!(msg.contains(&format!("schema version {newer}")), "{msg}");
        assert!(msg.contains(&format!("({SCHEMA_VERSION})")), "{msg}");
    }
    let conn = Connection::open(&path).unwrap();
    let version: u32 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, newer);
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "delete", "the journal mode was left alone");
}

/// Deterministic noise (xorshift), so the test needs no RNG crate.
fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u8
        })
        .collect()
}

#[test]
fn a_corrupt_file_gives_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    std::fs::write(&path, noise(16384, 0x9e37_79b9_7f4a_7c15)).unwrap();
    for err in [
        Store::open(&path).unwrap_err(),
        Store::open_read_only(&path).unwrap_err(),
    ] {
        let msg = err.to_string();
        assert!(msg.starts_with(&path.display().to_string()), "{msg}");
        assert!(msg.contains("not a database"), "{msg}");
    }
}

#[test]
fn a_damaged_page_fails_the_integrity_check_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    {
        let mut store = Store::open(&path).unwrap();
        for _ in 0..40 {
            insert(&mut store, "idle", &common::unhealthy("dgx-a100"));
        }
    } // closing checkpoints the WAL into the file
    let mut bytes = std::fs::read(&path).unwrap();
    let page = 4096;
    assert!(bytes.len() > 8 * page, "{} bytes", bytes.len());
    // Scribble over the middle of the file, leaving the header page intact.
    let at = bytes.len() / 2;
    bytes[at..at + 2 * page].copy_from_slice(&noise(2 * page, 42));
    std::fs::write(&path, bytes).unwrap();

    let err = match Store::open(&path) {
        Ok(store) => store.integrity_check().unwrap_err(),
        Err(err) => err,
    };
    assert!(
        err.to_string().starts_with(&path.display().to_string()),
        "{err}"
    );
}
