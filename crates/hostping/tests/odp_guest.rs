//! ISPASS'21's ODP micro-benchmarks measured for real: boots the QEMU guest of
//! `scripts/guest/` with `--kernel odp` (a Debian kernel whose rxe has ODP READ over RC),
//! runs `scripts/guest/odp-check.sh` in it (`odp-bench damming` at two intervals, `flood`
//! over 1 and 2 QPs) and asserts on what came back: a measured report with one point per
//! interval or QP count asked, every READ completed (a point exists only then), packets
//! counted, the benchmark's MRs listed by RDMA netlink during the run, and the damming
//! READs' bytes where they belong.
//!
//! It needs QEMU and the cached ODP kernel (`scripts/guest/setup.sh --kernel odp`) and takes
//! about a minute under TCG, so it is `#[ignore]`d; `./test.sh` runs it with `--ignored`.

mod common;

use common::{guest_run, read};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn results() -> PathBuf {
    guest_run("odp", 600, "scripts/guest/odp-check.sh", &[]).join("odp")
}

/// The step's report, after checking it exited 0.
fn report(dir: &Path, step: &str) -> Value {
    let err = read(dir, &format!("{step}.err"));
    assert_eq!(
        read(dir, &format!("{step}.status")).trim(),
        "0",
        "{step} failed: {err}"
    );
    serde_json::from_str(&read(dir, &format!("{step}.out")))
        .unwrap_or_else(|e| panic!("{step}.out is not JSON ({e}); stderr: {err}"))
}

fn notes(report: &Value) -> Vec<String> {
    report["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect()
}

/// Asserts what every point of a measured report on rxe0 shows.
fn every_point_measured(report: &Value, reads: u64) {
    assert_eq!(report["provenance"], "measured", "{report:#}");
    assert_eq!(report["device"], "rxe0");
    for p in report["points"].as_array().unwrap() {
        assert_eq!(p["reads"], reads, "{p:#}");
        assert_eq!(p["read_bytes"], 100);
        // Each READ is a request and a response, each counted sent and received by the
        // port its QP is connected to itself on: at least 4 packets a READ.
        let packets = p["packets"].as_u64().expect("rxe counts packets");
        assert!(packets >= 4 * reads, "{p:#}");
        let (elapsed, slowest) = (
            p["elapsed_us"].as_f64().unwrap(),
            p["slowest_read_us"].as_f64().unwrap(),
        );
        assert!(slowest > 0.0 && slowest <= elapsed, "{p:#}");
        // rxe counts sequence errors and duplicates under its own names, not timeouts.
        assert!(p["transport"]["packet_seq_err"].is_u64(), "{p:#}");
        assert!(p["transport"]["local_ack_timeout_err"].is_null(), "{p:#}");
    }
}

#[test]
#[ignore = "boots a QEMU guest with the ODP kernel (./test.sh runs it)"]
fn odp_bench_runs_for_real_on_rxe_with_odp() {
    let dir = results();
    let kernel = read(&dir, "kernel");
    let damming = report(&dir, "damming");
    every_point_measured(&damming, 2);
    let intervals: Vec<u64> = damming["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["interval_us"].as_u64().unwrap())
        .collect();
    assert_eq!(intervals, [500, 2000], "kernel {kernel}");
    for p in damming["points"].as_array().unwrap() {
        // The second READ is posted after the interval, so the point lasts longer.
        let interval = p["interval_us"].as_f64().unwrap();
        assert!(p["elapsed_us"].as_f64().unwrap() >= interval, "{p:#}");
    }
    let n = notes(&damming);
    let has = |notes: &[String], text: &str| {
        assert!(
            notes.iter().any(|n| n.contains(text)),
            "no `{text}` in {notes:#?}"
        )
    };
    has(&n, "rxe0 is a software RNIC");
    has(
        &n,
        "asked 1 (the smallest, 8.192 us), in force per ibv_query_qp 1",
    );
    // Two points, two ODP MRs each, all seen in the netlink dump while they were in use.
    has(&n, "RDMA netlink listed 4 of the 4 ODP MRs");
    has(&n, "every READ's bytes arrived at its local address");
    // ODP for real, though rxe puts no `odp` mark on its MRs in netlink: registering the
    // never-touched local pages faulted none of them in (a pinned MR faults them all).
    has(
        &n,
        "right after registration 0 of the local ODP mappings' 4 pages were resident",
    );

    let flood = report(&dir, "flood");
    every_point_measured(&flood, 8192);
    let qps: Vec<u64> = flood["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["qps"].as_u64().unwrap())
        .collect();
    assert_eq!(qps, [1, 2]);
    let n = notes(&flood);
    has(&n, "RDMA netlink listed 2 of the 2 ODP MRs");
    has(&n, "right after registration 0 of the local ODP mappings'");

    let table = read(&dir, "damming-table.out");
    assert!(
        table.starts_with("odp-bench damming on rxe0 (measured)"),
        "{table}"
    );
}
