//! `hostping bench collector` does the work it reports: on a throw-away PostgreSQL, a small
//! fleet's day is ingested through the API and copied back over the other days, so the
//! database ends with exactly hosts x runs a day x days runs, each with the model's paths,
//! and every timeline read returns one point per run of the host. (The figures themselves
//! are measured by the bench, not asserted here: BENCHMARKS.md.)
//!
//! Skipped (with a message) without PostgreSQL's server binaries (see `common::postgres`).

mod common;

use common::postgres::Postgres;
use common::{hostping, stderr, stdout, temp_dir};
use serde_json::Value;

#[test]
fn the_bench_stores_every_run_it_counts_and_reads_them_back() {
    let dir = temp_dir("collector-bench");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let (hosts, days, runs_a_day) = (3, 2, 4);
    let out = hostping(&[
        "bench",
        "collector",
        "--database",
        &pg.url(),
        "--hosts",
        &hosts.to_string(),
        "--days",
        &days.to_string(),
        "--cadence",
        "6h",
        "--clients",
        "2",
        "--queries",
        "3",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let bench: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(bench["simulated"], true);
    let paths = bench["paths_per_run"].as_i64().unwrap();
    assert!(paths > 0);
    assert_eq!(bench["ingest"]["runs"], hosts * runs_a_day);
    // The ingested day's growth: the rows it added to each table a run writes, and the
    // per-run tables' bytes a host a day (their sum over the hosts).
    let growth = &bench["growth"];
    let table = |name: &str| {
        growth["tables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["table"] == name)
            .unwrap_or_else(|| panic!("{name} in {growth}"))
            .clone()
    };
    for name in ["runs", "run_paths", "run_links"] {
        assert_eq!(table(name)["rows"], hosts * runs_a_day, "{name}");
        assert_eq!(table(name)["per_run"], true, "{name}");
        assert!(table(name)["bytes"].as_i64().unwrap() > 0, "{name}");
    }
    assert_eq!(table("hosts")["rows"], hosts);
    assert_eq!(table("hosts")["per_run"], false);
    let per_run: i64 = ["runs", "run_paths", "run_links", "diagnoses"]
        .iter()
        .map(|n| table(n)["bytes"].as_i64().unwrap())
        .sum();
    assert_eq!(
        growth["bytes_per_host_day"].as_f64().unwrap(),
        per_run as f64 / hosts as f64
    );
    let runs = hosts * runs_a_day * days;
    assert_eq!(bench["history"]["runs"], runs);
    assert_eq!(bench["history"]["paths"], runs * paths);
    assert_eq!(pg.count("runs"), runs);
    // Each host's runs are distinct, 6 h apart, over both days.
    assert_eq!(
        pg.scalar("SELECT count(DISTINCT (host_id, started_unix_ms)) FROM runs"),
        runs.to_string()
    );
    assert_eq!(
        pg.scalar("SELECT (max(started_unix_ms) - min(started_unix_ms)) / 3600000 FROM runs"),
        ((runs_a_day * days - 1) * 6).to_string()
    );
    // A host with a degraded link (one host in 50: host 0 and 1) has its diagnoses copied
    // onto every day's runs.
    assert_eq!(
        pg.scalar(
            "SELECT count(DISTINCT r.id) FROM diagnoses d JOIN runs r ON r.id = d.run_id
             JOIN hosts h ON h.id = r.host_id WHERE h.name = 'bench-00000'"
        ),
        (runs_a_day * days).to_string()
    );
    let latency = bench["latency"].as_array().unwrap();
    let work = |prefix: &str| -> String {
        latency
            .iter()
            .find(|l| l["request"].as_str().unwrap().starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} in {latency:?}"))["work"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(work("GET /api/hosts "), format!("{hosts} hosts"));
    assert_eq!(work("GET /api/hosts/{host}/runs"), "1 runs");
    assert_eq!(
        work("GET /api/hosts/{host}/timeline"),
        format!("{} points", runs_a_day * days)
    );
    for l in latency {
        assert_eq!(l["requests"], 3, "{l}");
        assert!(l["p95_ms"].as_f64().unwrap() >= l["p50_ms"].as_f64().unwrap());
    }

    // A database that already holds runs is refused, naming it.
    let again = hostping(&[
        "bench",
        "collector",
        "--database",
        &pg.url(),
        "--hosts",
        "1",
    ]);
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("already holds runs"),
        "{}",
        stderr(&again)
    );
}
