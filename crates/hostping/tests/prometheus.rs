//! A real Prometheus server (Debian's `prometheus` package) scrapes the agent's /metrics,
//! and the series are read back through Prometheus's HTTP API.
//!
//! Skipped (with a message) when the `prometheus` binary is missing, unless
//! `HOSTPING_REQUIRE_PROMETHEUS` is set, as `./test.sh` does after installing it.

mod common;

use common::prometheus::{have_prometheus, Prometheus};
use common::{agent, dashboard, http_get, temp_dir};
use std::time::{Duration, Instant};

/// Every query of the Grafana dashboard (packaging/grafana/) is valid PromQL and returns
/// series from this agent, but those of the switch-port row, which need a `[fabric]`
/// sampler's sweeps: agent_fabric.rs runs them on ibsim's fabric.
fn every_dashboard_query_returns_series(prom: &Prometheus, agent: &str) {
    let agents = prom.query(&dashboard::instance_variable_metric());
    assert_eq!(agents.len(), 1, "{agents:?}");
    assert_eq!(agents[0]["metric"]["instance"], agent);
    let queries: Vec<_> = dashboard::queries()
        .into_iter()
        .filter(|q| q.row != dashboard::SWITCH_PORT_ROW)
        .collect();
    assert!(queries.len() >= 20, "{queries:?}");
    // rate() needs two scrapes in its window; the first queries may come before them.
    let deadline = Instant::now() + Duration::from_secs(30);
    for q in &queries {
        while prom.query(&q.expr).is_empty() {
            assert!(
                Instant::now() < deadline,
                "dashboard panel {:?} (row {:?}) returns no series: {}",
                q.panel,
                q.row,
                q.expr
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

fn value(sample: &serde_json::Value) -> f64 {
    sample["value"][1].as_str().unwrap().parse().unwrap()
}

#[test]
fn prometheus_scrapes_the_agent_and_answers_queries() {
    if !have_prometheus() {
        return;
    }
    let dir = temp_dir("prometheus");
    let db = dir.join("runs.db");
    // A failed GPU link, so there is a diagnosis to see; 5 min of cadence per 0.5 s.
    let mut a = agent(
        &db,
        &["--time-scale", "600", "--inject", "degrade:gpu4--lsw4:0.5"],
        &[],
    );
    a.wait_for_runs(1, Duration::from_secs(60));
    let prom = Prometheus::start(&dir, a.addr);

    let deadline = Instant::now() + Duration::from_secs(60);
    let bandwidth = loop {
        let r = prom.query("hostping_path_bandwidth_gbps");
        if r.len() == 40 {
            break r;
        }
        assert!(
            Instant::now() < deadline,
            "Prometheus has no hostping series after 60 s"
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    // The up series says the scrape itself worked.
    let up = prom.query("up{job=\"hostping\"}");
    assert_eq!(value(&up[0]), 1.0);
    // Every path of the full mesh, with its labels; rnic2 -> gpu4 at about half.
    let path = |rnic: &str, endpoint: &str| {
        bandwidth
            .iter()
            .find(|s| s["metric"]["rnic"] == rnic && s["metric"]["endpoint"] == endpoint)
            .map(value)
            .unwrap_or_else(|| panic!("no series for {rnic}->{endpoint}"))
    };
    assert!(path("rnic0", "gpu0") > 180.0, "{}", path("rnic0", "gpu0"));
    assert!(path("rnic2", "gpu4") < 140.0, "{}", path("rnic2", "gpu4"));
    let active = prom.query("hostping_diagnosis_active{cause=\"link_failure\"}");
    assert_eq!(active.len(), 1, "{active:?}");
    assert_eq!(active[0]["metric"]["links"], "gpu4--lsw4");
    let status = prom.query("hostping_link_status{link=\"gpu4--lsw4\",status=\"abnormal\"}");
    assert_eq!(value(&status[0]), 1.0);
    // The run judged every link: unhealthy, not inconclusive (DESIGN 4.3); the two gauges
    // come from the same run.
    let healthy = prom.query("hostping_last_run_healthy");
    assert_eq!(value(&healthy[0]), 0.0, "{healthy:?}");
    let inconclusive = prom.query("hostping_host_inconclusive");
    assert_eq!(inconclusive.len(), 1, "{inconclusive:?}");
    assert_eq!(inconclusive[0]["metric"]["instance"], a.addr.to_string());
    assert_eq!(value(&inconclusive[0]), 0.0);
    let runs = prom.query("sum(hostping_runs_total{trigger=\"idle\"})");
    assert!(value(&runs[0]) >= 1.0);
    let cpu = prom.query("hostping_agent_cpu_seconds_total");
    assert!(value(&cpu[0]) > 0.0);
    let rss = prom.query("hostping_agent_resident_memory_bytes");
    assert!(value(&rss[0]) > 1e6);
    // The same numbers as the agent's own JSON API.
    let (_, body) = http_get(a.addr, "/api/runs?limit=1");
    let latest: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(latest[0]["causes"][0], "link_failure");
    every_dashboard_query_returns_series(&prom, &a.addr.to_string());
    a.signal(libc::SIGTERM);
    assert!(a.wait_output().status.success());
}
