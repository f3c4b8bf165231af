//! Sweeps of switch-port counters in the store: round trips, listing, retention, a v2
//! database migrated to v3 with its runs kept, and values SQLite cannot hold.

mod common;

use proptest::prelude::*;
use rusqlite::Connection;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;
use store::{
    FabricSweep, Store, StoreError, SwitchPortCounters, SwitchPortSample, MIGRATIONS,
    SCHEMA_VERSION,
};

const HOUR: u64 = 3_600_000_000_000;
const DAY: Duration = Duration::from_secs(86_400);

fn db(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("runs.db")
}

fn counters(base: u64) -> SwitchPortCounters {
    SwitchPortCounters {
        xmit_data_bytes: base * 4,
        rcv_data_bytes: base * 8,
        xmit_pkts: base + 1,
        rcv_pkts: base + 2,
        xmit_wait: base + 3,
        symbol_errors: 4,
        link_downed: 5,
        rcv_errors: 6,
        xmit_discards: 7,
    }
}

/// Two ports of leaf-a that answered (one with counters past 2^53, which a float would
/// round) and one of leaf-b that did not.
fn sweep(number: u64, start_unix_ns: u64) -> FabricSweep {
    FabricSweep {
        sweep: number,
        start_unix_ns,
        spread_us: 812.5,
        sampler: "host-1".into(),
        ports: vec![
            SwitchPortSample {
                guid: 0x0000_0000_0020_0000,
                lid: 1,
                port: 7,
                at_unix_ns: start_unix_ns + 300_000,
                counters: Some(counters(1_234)),
                error: None,
            },
            SwitchPortSample {
                guid: 0x0000_0000_0020_0000,
                lid: 1,
                port: 8,
                at_unix_ns: start_unix_ns + 310_000,
                counters: Some(counters((1 << 53) + 1)),
                error: None,
            },
            SwitchPortSample {
                // A GUID with its top bit set (vendor OUIs above 0x80_0000 are common).
                guid: 0xe41d_2d03_0012_3456,
                lid: 3,
                port: 2,
                at_unix_ns: 0,
                counters: None,
                error: Some("PortCounters: no response in 100 ms, 3 tries".into()),
            },
        ],
    }
}

/// `guid, lid, port, xmit_wait, rcv_data_bytes, error` of a `fabric_ports` row.
type PortRow = (String, u16, u8, Option<i64>, Option<i64>, Option<String>);

fn count(path: &Path, table: &str) -> i64 {
    Connection::open(path)
        .unwrap()
        .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

#[test]
fn a_sweep_comes_back_as_it_was_stored_with_rows_for_sql_users() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let mut store = Store::open(&path).unwrap();
    let s = sweep(1, 1_700_000_000_123_456_789);
    let id = store.insert_sweep(&s, DAY).unwrap();
    assert_eq!(id, 1);

    let back = store.sweeps(10, None).unwrap();
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].id, 1);
    assert_eq!(back[0].sweep, s);

    // The rows: one per port, NULL counters for the silent one, GUIDs as DESIGN 4.4 text.
    let conn = Connection::open(&path).unwrap();
    let rows: Vec<PortRow> = conn
        .prepare(
            "SELECT guid, lid, port, xmit_wait, rcv_data_bytes, error FROM fabric_ports \
             WHERE sweep_id = 1 ORDER BY idx",
        )
        .unwrap()
        .query_map([], |r| {
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
    assert_eq!(
        rows,
        [
            (
                "0x0000000000200000".into(),
                1,
                7,
                Some(1_237),
                Some(9_872),
                None
            ),
            (
                "0x0000000000200000".into(),
                1,
                8,
                Some((1 << 53) + 4),
                Some(((1i64 << 53) + 1) * 8),
                None
            ),
            (
                "0xe41d2d0300123456".into(),
                3,
                2,
                None,
                None,
                Some("PortCounters: no response in 100 ms, 3 tries".into())
            ),
        ]
    );
    let head: (i64, i64, f64, String) = conn
        .query_row(
            "SELECT sweep, start_unix_ns, spread_us, sampler FROM fabric_sweeps WHERE id = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    assert_eq!(
        head,
        (1, 1_700_000_000_123_456_789, 812.5, "host-1".to_string())
    );
}

#[test]
fn a_stored_sweep_serialises_as_the_sample_json_with_its_id() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&db(&dir)).unwrap();
    store.insert_sweep(&sweep(4, 10), DAY).unwrap();
    let json = serde_json::to_value(&store.sweeps(1, None).unwrap()[0]).unwrap();
    assert_eq!(json["id"], 1);
    assert_eq!(json["sweep"], 4);
    assert_eq!(json["sampler"], "host-1");
    assert_eq!(json["spread_us"], 812.5);
    assert_eq!(
        json["ports"][0],
        json!({"guid": "0x0000000000200000", "lid": 1, "port": 7, "at_unix_ns": 300_010,
               "counters": {"xmit_data_bytes": 4_936, "rcv_data_bytes": 9_872,
                            "xmit_pkts": 1_235, "rcv_pkts": 1_236, "xmit_wait": 1_237,
                            "symbol_errors": 4, "link_downed": 5, "rcv_errors": 6,
                            "xmit_discards": 7},
               "error": null})
    );
    assert_eq!(json["ports"][2]["guid"], "0xe41d2d0300123456");
    assert!(json["ports"][2]["counters"].is_null());
}

#[test]
fn sweeps_are_newest_first_limited_and_paged_by_id() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&db(&dir)).unwrap();
    for n in 1..=5 {
        store.insert_sweep(&sweep(n, n * 1_000), DAY).unwrap();
    }
    let numbers = |v: Vec<store::StoredSweep>| v.iter().map(|s| s.sweep.sweep).collect::<Vec<_>>();
    assert_eq!(numbers(store.sweeps(3, None).unwrap()), [5, 4, 3]);
    assert_eq!(numbers(store.sweeps(3, Some(3)).unwrap()), [2, 1]);
    assert_eq!(numbers(store.sweeps(0, None).unwrap()), Vec::<u64>::new());
    assert_eq!(store.sweep_count().unwrap(), 5);
}

#[test]
fn sweeps_older_than_the_retention_go_with_their_ports() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let mut store = Store::open(&path).unwrap();
    let t0 = 1_700_000_000_000_000_000;
    for (n, at) in [(1, 0), (2, HOUR), (3, 2 * HOUR)] {
        store.insert_sweep(&sweep(n, t0 + at), DAY).unwrap();
    }
    assert_eq!(store.sweep_count().unwrap(), 3);
    assert_eq!(count(&path, "fabric_ports"), 9);
    // 24 h and 1 ns after the first: the first is past the bound, the second is not.
    store
        .insert_sweep(&sweep(4, t0 + 24 * HOUR + 1), DAY)
        .unwrap();
    let left: Vec<u64> = store
        .sweeps(10, None)
        .unwrap()
        .iter()
        .map(|s| s.sweep.sweep)
        .collect();
    assert_eq!(left, [4, 3, 2]);
    assert_eq!(
        count(&path, "fabric_ports"),
        9,
        "the first sweep's ports went too"
    );
    // A sweep exactly at the bound stays.
    store.insert_sweep(&sweep(5, t0 + 25 * HOUR), DAY).unwrap();
    assert_eq!(store.sweep_count().unwrap(), 4);
}

#[test]
fn a_counter_sqlite_cannot_hold_is_named_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&db(&dir)).unwrap();
    let mut s = sweep(1, 5);
    s.ports[1].counters.as_mut().unwrap().xmit_data_bytes = u64::MAX;
    let err = store.insert_sweep(&s, DAY).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::SweepOutOfRange {
                value: u64::MAX,
                ..
            }
        ),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains(
            "runs.db: insert sweep: 0x0000000000200000[8] xmit_data_bytes = 18446744073709551615"
        ),
        "{text}"
    );
    assert_eq!(store.sweep_count().unwrap(), 0);
}

/// A database as schema v2 left it, with one run.
fn create_v2(path: &Path, report: &model::Report) {
    let mut conn = Connection::open(path).unwrap();
    let tx = conn.transaction().unwrap();
    for batch in &MIGRATIONS[..2] {
        tx.execute_batch(batch).unwrap();
    }
    tx.pragma_update(None, "user_version", 2).unwrap();
    tx.execute(
        "INSERT INTO runs (started_unix_ms, clock_ns, duration_ns, trigger, trigger_detail, \
         host, mode, provenance, healthy, snapshot, report, counters) \
         VALUES (1, 2, 3, 'idle', 'host idle', ?1, 'idle', 'simulated', 1, '{}', ?2, '{\"rnic0\": {}}')",
        rusqlite::params![report.host, serde_json::to_string(report).unwrap()],
    )
    .unwrap();
    tx.commit().unwrap();
}

#[test]
fn a_v2_database_migrates_to_v3_keeping_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let old = common::healthy("dgx-a100", 4);
    create_v2(&path, &old);
    assert!(matches!(
        Store::open_read_only(&path).unwrap_err(),
        StoreError::OlderSchema { found: 2, .. }
    ));

    let mut store = Store::open(&path).unwrap();
    // v3 and every later migration (v4: the outbox).
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    store.integrity_check().unwrap();
    let run = store.run(1).unwrap().expect("the v2 run survives");
    assert_eq!(run.report, old);
    assert_eq!(run.counters, Some(json!({"rnic0": {}})));
    assert_eq!(run.summary.trigger, "idle");
    assert_eq!(store.sweep_count().unwrap(), 0);

    store.insert_sweep(&sweep(1, 99), DAY).unwrap();
    assert_eq!(store.sweeps(5, None).unwrap()[0].sweep, sweep(1, 99));
    drop(store);
    let reader = Store::open_read_only(&path).unwrap();
    assert_eq!(reader.sweep_count().unwrap(), 1);
    assert_eq!(reader.recent_reports("dgx-a100", 3).unwrap(), vec![old]);
}

fn port_strategy() -> impl Strategy<Value = SwitchPortSample> {
    let value = 0..=i64::MAX as u64;
    let counters = prop::array::uniform9(value).prop_map(|v| SwitchPortCounters {
        xmit_data_bytes: v[0],
        rcv_data_bytes: v[1],
        xmit_pkts: v[2],
        rcv_pkts: v[3],
        xmit_wait: v[4],
        symbol_errors: v[5],
        link_downed: v[6],
        rcv_errors: v[7],
        xmit_discards: v[8],
    });
    (
        any::<u64>(),
        any::<u16>(),
        any::<u8>(),
        0..=i64::MAX as u64,
        prop::option::of(counters),
        prop::option::of("[ -~]{0,40}"),
    )
        .prop_map(
            |(guid, lid, port, at_unix_ns, counters, error)| SwitchPortSample {
                guid,
                lid,
                port,
                at_unix_ns,
                counters,
                error,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn any_sweep_round_trips(
        number in 0..=i64::MAX as u64,
        start in 0..=i64::MAX as u64,
        spread_us in 0.0..1e9f64,
        sampler in "[a-z0-9.-]{1,20}",
        ports in prop::collection::vec(port_strategy(), 0..20),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&db(&dir)).unwrap();
        let s = FabricSweep { sweep: number, start_unix_ns: start, spread_us, sampler, ports };
        store.insert_sweep(&s, DAY).unwrap();
        let back = store.sweeps(1, None).unwrap();
        prop_assert_eq!(&back[0].sweep, &s);
    }
}
