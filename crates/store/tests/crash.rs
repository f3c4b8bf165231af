//! Crash safety: a writer SIGKILLed at a random moment leaves a sound database in which
//! every run is complete.
//!
//! The parent test re-executes this test binary with `CHILD_DB` set, running only
//! `crash_child`, which inserts runs until it is killed.

mod common;

use model::PathStatus;
use rusqlite::Connection;
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use store::{NewRun, RunQuery, Store};

const CHILD_DB: &str = "STORE_CRASH_TEST_CHILD_DB";
const READY: &str = "crash-child-ready";

/// The child: inserts runs of varying size forever. Without `CHILD_DB` it does nothing.
#[test]
fn crash_child() {
    let Some(db) = std::env::var_os(CHILD_DB) else {
        return;
    };
    let mut store = Store::open(Path::new(&db)).unwrap();
    let snapshot = json!({"at_ns": 1, "rnics": [{"id": "rnic0", "tx_pause_ratio": 0.18}]});
    let counters = json!({"rnic0": {"port_xmit_wait": 123456789}});
    for i in 0u64.. {
        // 1..=96 paths, so that some transactions are long enough to be cut.
        let mut report = common::unhealthy("dgx-a100");
        let extra = (i * 37 % 96) as usize;
        report.paths.extend(
            (0..extra).map(|k| common::path("rnic2", &format!("e{k}"), 99.5, PathStatus::Normal)),
        );
        store
            .insert_run(&NewRun {
                started_unix_ms: i as i64,
                clock_ns: i,
                duration_ns: 1,
                trigger: "pfc",
                trigger_detail: "crash test",
                snapshot: &snapshot,
                counters: (i & 1 == 0).then_some(&counters),
                report: &report,
            })
            .unwrap();
        if i == 0 {
            let mut out = std::io::stdout();
            writeln!(out, "{READY}").unwrap();
            out.flush().unwrap();
        }
    }
}

fn count(conn: &Connection, table: &str, run: i64) -> usize {
    conn.query_row(
        &format!("SELECT count(*) FROM {table} WHERE run_id = ?1"),
        [run],
        |r| r.get(0),
    )
    .unwrap()
}

#[test]
fn a_killed_writer_leaves_only_complete_runs() {
    let exe = std::env::current_exe().unwrap();
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64;
    for round in 0..5u64 {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("runs.db");
        let mut child = Command::new(&exe)
            .args(["crash_child", "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_DB, &db)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let ready = BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .any(|line| line.contains(READY));
        assert!(ready, "the child did not start writing");

        // A random moment within the next 0..80 ms of inserting.
        let delay = (seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(round * 1442695040888963407)
            >> 33)
            % 80;
        std::thread::sleep(Duration::from_millis(delay));
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        assert!(
            !status.success(),
            "round {round}: the child ended by itself"
        );

        let store = Store::open(&db).unwrap();
        store
            .integrity_check()
            .unwrap_or_else(|e| panic!("round {round} ({delay} ms): {e}"));
        let runs = store
            .runs(&RunQuery {
                limit: u32::MAX,
                ..RunQuery::default()
            })
            .unwrap();
        assert!(
            !runs.is_empty(),
            "round {round}: the first run was committed"
        );
        // Ids are contiguous from 1: nothing half-written was kept and then rolled back.
        let ids: Vec<i64> = runs.iter().rev().map(|r| r.id).collect();
        assert_eq!(ids, (1..=runs.len() as i64).collect::<Vec<_>>());

        let conn = Connection::open(&db).unwrap();
        for summary in &runs {
            let run = store.run(summary.id).unwrap().unwrap();
            let id = summary.id;
            assert_eq!(summary.paths as usize, run.report.paths.len(), "run {id}");
            assert_eq!(
                count(&conn, "paths", id),
                run.report.paths.len(),
                "run {id}"
            );
            assert_eq!(
                count(&conn, "links", id),
                run.report.links.len(),
                "run {id}"
            );
            assert_eq!(
                count(&conn, "diagnoses", id),
                run.report.diagnoses.len(),
                "run {id}"
            );
            assert_eq!(run.counters.is_some(), run.summary.clock_ns & 1 == 0);
        }
        eprintln!(
            "round {round}: killed after {delay} ms, {} complete runs",
            runs.len()
        );
    }
}
