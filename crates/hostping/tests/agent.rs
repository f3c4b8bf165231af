//! The agent on a virtual host, through the binary and its database: the idle cadence, a
//! pause trigger, flapping across runs (and across a restart), the duty-cycle limit under
//! a symptom storm, SIGTERM and SIGKILL.

mod common;

use common::{agent, hostping, http_get, stderr, temp_dir, Agent};
use std::time::Duration;
use store::{RunQuery, Store};

const MIN: u64 = 60_000_000_000;
const SEC: u64 = 1_000_000_000;

fn runs(db: &std::path::Path) -> Vec<store::StoredRun> {
    let store = Store::open_read_only(db).unwrap();
    let mut out: Vec<store::StoredRun> = store
        .runs(&RunQuery {
            limit: 100_000,
            ..RunQuery::default()
        })
        .unwrap()
        .iter()
        .map(|s| store.run(s.id).unwrap().unwrap())
        .collect();
    out.reverse();
    out
}

fn causes(run: &store::StoredRun) -> Vec<String> {
    run.report
        .diagnoses
        .iter()
        .map(|d| d.cause.as_str().to_string())
        .collect()
}

#[test]
fn an_idle_host_gets_a_full_mesh_every_five_minutes() {
    let dir = temp_dir("idle");
    let db = dir.join("runs.db");
    let out = agent(&db, &["--time-scale", "3000", "--run-for", "16m"], &[]).wait_output();
    assert!(out.status.success(), "{}", out.stderr);
    let runs = runs(&db);
    let at: Vec<u64> = runs.iter().map(|r| r.summary.clock_ns / MIN).collect();
    assert_eq!(at, [0, 5, 10, 15], "{}", out.stderr);
    for r in &runs {
        assert_eq!(r.summary.trigger, "idle");
        assert_eq!(r.summary.mode, "idle");
        assert_eq!(r.report.paths.len(), 40, "full mesh of dgx-a100");
        assert!(r.report.healthy, "{:?}", causes(r));
        assert_eq!(r.summary.provenance, "simulated");
    }
    assert!(out.stderr.contains("4 runs stored"), "{}", out.stderr);
}

#[test]
fn a_pause_symptom_fires_an_affinitive_probe_within_two_seconds() {
    let dir = temp_dir("pfc");
    let db = dir.join("runs.db");
    // rnic0 is offered 250 Gb/s at 7 min: it can take 200, so it pauses its upstream port
    // for a fifth of the time (PFC_high is 3 %).
    let args = [
        "--time-scale",
        "600",
        "--run-for",
        "8m",
        "--schedule",
        "7m=service:rnic0:250",
    ];
    let out = agent(&db, &args, &[]).wait_output();
    assert!(out.status.success(), "{}", out.stderr);
    let runs = runs(&db);
    let first = runs
        .iter()
        .find(|r| r.summary.trigger == "pfc")
        .unwrap_or_else(|| panic!("no pfc run: {}", out.stderr));
    let after = first.summary.clock_ns - 7 * MIN;
    assert!(
        after <= 2 * SEC,
        "probed {} ms after the symptom",
        after / 1_000_000
    );
    assert_eq!(first.summary.mode, "busy");
    assert!(
        first
            .summary
            .trigger_detail
            .contains("rnic0 tx pause ratio 0.2"),
        "{}",
        first.summary.trigger_detail
    );
    assert_eq!(
        first.report.paths.len(),
        16,
        "affinitive paths only (4 per RNIC)"
    );
    assert!(first.report.paths.iter().all(|p| p.affinitive));
    let snapshot_pause = first.snapshot["rnics"][0]["tx_pause_ratio"]
        .as_f64()
        .unwrap();
    assert!(snapshot_pause > 0.03, "{snapshot_pause}");
    assert!(runs
        .iter()
        .filter(|r| r.summary.trigger == "pfc")
        .all(|r| r.summary.clock_ns >= 7 * MIN));
}

#[test]
fn a_flapping_channel_is_gray_in_three_runs_even_across_a_restart() {
    let dir = temp_dir("flap");
    let db = dir.join("runs.db");
    let flap = ["--inject", "flap:mem1--cpu1:0.15"];
    // Two runs (0 and 5 min), then the agent stops; a new agent goes on from its history.
    let out = agent(
        &db,
        &[&["--time-scale", "6000", "--run-for", "6m"][..], &flap].concat(),
        &[],
    )
    .wait_output();
    assert!(out.status.success(), "{}", out.stderr);
    let first = runs(&db);
    assert_eq!(first.len(), 2);
    // Each idle run sees the flap in its own re-probes of the paths over the channel; the
    // paper's gray rule needs the third run, across the restart.
    for r in &first {
        let d = &r.report.diagnoses;
        assert_eq!(d.len(), 1, "{:?}", causes(r));
        assert!(d[0].evidence.starts_with("within run"), "{}", d[0].evidence);
    }
    let out = agent(
        &db,
        &[&["--time-scale", "6000", "--run-for", "1m"][..], &flap].concat(),
        &[],
    )
    .wait_output();
    assert!(out.status.success(), "{}", out.stderr);
    let all = runs(&db);
    assert_eq!(all.len(), 3);
    let third = &all[2];
    assert!(
        causes(third).contains(&"link_flapping".to_string()),
        "{:?}",
        causes(third)
    );
    let d = third
        .report
        .diagnoses
        .iter()
        .find(|d| d.cause.as_str() == "link_flapping")
        .unwrap();
    assert_eq!(
        d.links.iter().map(|l| l.as_str()).collect::<Vec<_>>(),
        ["mem1--cpu1"]
    );
    assert!(
        d.evidence.contains("gray in each of the last 3 runs"),
        "{}",
        d.evidence
    );
}

#[test]
fn a_symptom_storm_cannot_push_probing_past_the_duty_cycle() {
    let dir = temp_dir("storm");
    let db = dir.join("runs.db");
    let config = dir.join("agent.toml");
    std::fs::write(
        &config,
        "[triggers]\nmax_duty_cycle = 0.05\nburst = \"2s\"\n",
    )
    .unwrap();
    let args = [
        "--time-scale",
        "200",
        "--run-for",
        "10m",
        "--inject",
        "service:rnic0:250",
    ];
    let out = agent(&db, &args, &[("--config", config.to_str().unwrap())]).wait_output();
    assert!(out.status.success(), "{}", out.stderr);
    let runs = runs(&db);
    let pfc: Vec<_> = runs.iter().filter(|r| r.summary.trigger == "pfc").collect();
    let probing: u64 = runs.iter().map(|r| r.summary.duration_ns).sum();
    let longest = runs.iter().map(|r| r.summary.duration_ns).max().unwrap();
    let window = 10 * MIN;
    // Token bucket: burst + duty x window + one run at most.
    let bound = 2 * SEC + window / 20 + longest;
    assert!(
        probing <= bound,
        "probed {} ms of {} ms",
        probing / 1_000_000,
        window / 1_000_000
    );
    assert!(
        probing as f64 / window as f64 > 0.03,
        "the limiter should not starve probing: {} runs, {} ms",
        pfc.len(),
        probing / 1_000_000
    );
    // A symptom every second, far fewer probes: the rest were rate-limited.
    assert!(pfc.len() < 400, "{}", pfc.len());
}

#[test]
fn sigterm_stops_cleanly_and_sigkill_leaves_a_sound_database() {
    let dir = temp_dir("signals");
    let db = dir.join("runs.db");
    let storm = ["--time-scale", "1000", "--inject", "service:rnic0:250"];
    let config = dir.join("agent.toml");
    // No rate limit, so the agent is almost always in the middle of a run.
    std::fs::write(&config, "[triggers]\nmax_duty_cycle = 1.0\n").unwrap();
    let cfg = [("--config", config.to_str().unwrap())];

    let mut a: Agent = agent(&db, &storm, &cfg);
    a.wait_for_runs(3, Duration::from_secs(60));
    a.signal(libc::SIGTERM);
    let out = a.wait_output();
    assert_eq!(out.status.code(), Some(0), "{}", out.stderr);
    let stored: usize = out
        .stderr
        .split("stopped; ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", out.stderr));
    assert_eq!(
        runs(&db).len(),
        stored,
        "every run the agent finished is stored"
    );

    for round in 0..3 {
        let before = runs(&db).len();
        let mut a = agent(&db, &storm, &cfg);
        a.wait_for_runs(before + 2 + round, Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(37 * round as u64));
        a.signal(libc::SIGKILL);
        let _ = a.wait_output();
        let store = Store::open_read_only(&db).unwrap();
        store.integrity_check().unwrap();
        for r in runs(&db) {
            assert_eq!(
                r.report.paths.len() as u32,
                r.summary.paths,
                "run {} complete",
                r.summary.id
            );
        }
    }
}

#[test]
fn the_json_api_serves_runs_and_status() {
    let dir = temp_dir("api");
    let db = dir.join("runs.db");
    let mut a = agent(
        &db,
        &["--time-scale", "600", "--inject", "degrade:gpu4--lsw4:0.5"],
        &[],
    );
    a.wait_for_runs(1, Duration::from_secs(60));
    let (code, body) = http_get(a.addr, "/api/runs?limit=1");
    assert_eq!(code, 200, "{body}");
    let list: serde_json::Value = serde_json::from_str(&body).unwrap();
    let id = list[0]["id"].as_i64().unwrap();
    assert_eq!(list[0]["causes"][0], "link_failure");
    let (code, body) = http_get(a.addr, &format!("/api/runs/{id}"));
    assert_eq!(code, 200);
    let run: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(run["report"]["diagnoses"][0]["links"][0], "gpu4--lsw4");
    assert_eq!(run["trigger"], "idle");
    let (code, _) = http_get(a.addr, "/api/runs/999999");
    assert_eq!(code, 404);
    let (code, body) = http_get(a.addr, "/api/status");
    assert_eq!(code, 200);
    let status: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status["host"], "dgx-a100");
    assert_eq!(status["provenance"], "simulated");
    let (code, body) = http_get(a.addr, "/metrics");
    assert_eq!(code, 200);
    assert!(body.contains("hostping_path_bandwidth_gbps{"), "{body}");
    a.signal(libc::SIGTERM);
    assert!(a.wait_output().status.success());
}

#[test]
fn without_rdma_the_agent_says_so_and_keeps_reading_counters() {
    let dir = temp_dir("no-rdma");
    let db = dir.join("runs.db");
    let root = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../rdma/testdata/hosts/no-rdma"
    );
    for sysfs in [Some(root), None] {
        let mut args = vec!["--run-for", "2s"];
        if let Some(r) = sysfs {
            args.extend(["--sysfs-root", r]);
        }
        let a = common::agent_real(&db, &args);
        let (code, body) = http_get(a.addr, "/api/status");
        assert_eq!(code, 200);
        assert!(body.contains("no RDMA device found"), "{body}");
        let out = a.wait_output();
        assert!(out.status.success(), "{}", out.stderr);
        assert!(
            out.stderr
                .contains("probing disabled: no RDMA device found"),
            "{}",
            out.stderr
        );
        assert!(out.stderr.contains("0 runs stored"), "{}", out.stderr);
    }
}

#[test]
fn bad_agent_input_is_one_line_and_exit_2() {
    let dir = temp_dir("bad");
    let bad = dir.join("agent.toml");
    std::fs::write(&bad, "[triggers]\nmax_duty_cycle = 7\n").unwrap();
    let o = hostping(&[
        "agent",
        "--sim",
        "dgx-a100",
        "--config",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("agent.toml") && err.contains("max_duty_cycle"),
        "{}",
        err
    );
    let o = hostping(&[
        "agent",
        "--sim",
        "dgx-a100",
        "--db",
        "/nonexistent/dir/runs.db",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("/nonexistent/dir/runs.db"), "{}", err);
    let o = hostping(&[
        "agent",
        "--sim",
        "dgx-a100",
        "--db",
        dir.join("x.db").to_str().unwrap(),
        "--schedule",
        "soon=service:rnic0:250",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("soon"), "{}", err);
}
