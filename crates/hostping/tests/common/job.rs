//! A job's hosts and switch ports at a real collector, as the job-verdict tests post them:
//! agents registered, runs posted, sweeps of a sampler.

use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::postgres::{client, free_port, post_to};
use super::{hostping, stderr, stdout};

/// A port on the job's routes in the SX6036 capture (`collector --fabric`), its switch's GUID.
pub const ON_ROUTE: &str = "MF0;ib1:SX6036/U1/32";
/// Its switch's GUID.
pub const IB1: &str = "0xf452140300115da0";
/// A port off the job's routes there.
pub const OFF_ROUTE: &str = "MF0;ib5:SX6036/U1/14";
/// Its switch's GUID.
pub const IB5: &str = "0xf4521403001165a0";

/// The host token the tests' tokens files give `host`.
pub fn token(host: &str) -> String {
    format!("tok-{host}-0123456789abcdef")
}

/// Now, Unix seconds.
pub fn now_s() -> i64 {
    now_ms() / 1000
}

/// Now, Unix milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Sleeps until the clock has passed the second `s`.
pub fn sleep_past(s: i64) {
    let wait = (s + 1) * 1000 - now_ms();
    if wait > 0 {
        std::thread::sleep(Duration::from_millis(wait as u64));
    }
}

/// `hostping job --nodes NODES --collector URL` over the window `since..until` (Unix
/// seconds) with `extra` arguments, as JSON: its exit status and its report.
pub fn job_verdict(
    nodes: &str,
    url: &str,
    since: i64,
    until: i64,
    extra: &[&str],
) -> (Option<i32>, Value) {
    let (since, until) = (since.to_string(), until.to_string());
    let mut args = vec![
        "job",
        "--nodes",
        nodes,
        "--collector",
        url,
        "--since",
        &since,
        "--until",
        &until,
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    let out = hostping(&args);
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&out), stderr(&out)));
    (out.status.code(), report)
}

/// `PUT /api/hosts/{host}/agent`: an agent that registered its RNIC `rnic0` as `device`
/// (nothing listens at its URL: a verdict without probes asks no agent).
pub fn register(addr: SocketAddr, host: &str, device: &str) {
    register_at(
        addr,
        host,
        &format!("http://127.0.0.1:{}", free_port()),
        device,
    );
}

/// `PUT /api/hosts/{host}/agent`: an agent listening at `url` that registered its RNIC
/// `rnic0` as `device`.
pub fn register_at(addr: SocketAddr, host: &str, url: &str, device: &str) {
    register_body(
        addr,
        host,
        &json!({"url": url, "rnics": ["rnic0"], "devices": [device]}),
    );
}

/// `PUT /api/hosts/{host}/agent` of `body` with `host`'s token, taken (200).
pub fn register_body(addr: SocketAddr, host: &str, body: &Value) {
    let mut resp = client()
        .put(format!("http://{addr}/api/hosts/{host}/agent"))
        .header("Authorization", format!("Bearer {}", token(host)))
        .header("Content-Type", "application/json")
        .send(body.to_string().as_bytes())
        .unwrap();
    let status = resp.status().as_u16();
    assert_eq!(status, 200, "{}", resp.body_mut().read_to_string().unwrap());
}

/// Posts run `id` of `host` started at `started_s` with `report`.
pub fn post_run(addr: SocketAddr, host: &str, id: i64, started_s: i64, report: &Value) {
    post_run_ms(addr, host, id, started_s * 1000, report);
}

/// Posts a healthy run (id 1) of `host` started now.
pub fn post_healthy_run(addr: SocketAddr, host: &str, report: &Value) {
    post_run_ms(addr, host, 1, now_ms(), report);
}

/// Posts run `id` of `host` started at `started_ms` with `report`.
fn post_run_ms(addr: SocketAddr, host: &str, id: i64, started_ms: i64, report: &Value) {
    let run = json!({"host": host, "id": id, "trigger": "idle",
                     "started_unix_ms": started_ms, "report": report});
    let body = serde_json::to_vec(&run).unwrap();
    let (status, answer) = post_to(addr, "/api/runs", Some(&token(host)), &body);
    assert_eq!(status, 201, "{answer}");
}

/// Posts sweep `n` of the sampler `s1` at `at_s`: the symbol error totals of the ports
/// [`ON_ROUTE`] and [`OFF_ROUTE`] (the switches' own totals, not deltas).
pub fn post_sweep(addr: SocketAddr, n: u64, at_s: i64, on_route: u64, off_route: u64) {
    let at_ns = at_s as u64 * 1_000_000_000;
    let port = |guid: &str, switch: &str, port: u64, symbol_errors: u64| {
        json!({"guid": guid, "switch": switch, "lid": 1, "port": port, "at_unix_ns": at_ns,
               "counters": {"xmit_data_bytes": 1000 * n, "rcv_data_bytes": 1000 * n,
                            "xmit_pkts": 10 * n, "rcv_pkts": 10 * n, "xmit_wait": 0,
                            "symbol_errors": symbol_errors, "link_downed": 0,
                            "rcv_errors": 0, "xmit_discards": 0},
               "error": null})
    };
    let sweep = json!({"sampler": "s1", "sweep": n, "start_unix_ns": at_ns, "spread_us": 10.0,
        "ports": [port(IB1, "MF0;ib1:SX6036/U1", 32, on_route),
                  port(IB5, "MF0;ib5:SX6036/U1", 14, off_route)]});
    let body = serde_json::to_vec(&sweep).unwrap();
    let (status, answer) = post_to(addr, "/api/fabric/sweeps", Some(&token("s1")), &body);
    assert_eq!(status, 201, "{answer}");
}

/// `hostping job --format json ARGS`: its exit status, its report (`null` when stdout is no
/// JSON) and its stderr.
pub fn job_json(args: &[&str]) -> (i32, Value, String) {
    let mut all = vec!["job", "--format", "json"];
    all.extend_from_slice(args);
    let out = hostping(&all);
    let code = out.status.code().unwrap_or(-1);
    let json = serde_json::from_str(&stdout(&out)).unwrap_or(Value::Null);
    (code, json, stderr(&out))
}
