//! Probing on request (`POST /api/probe`, issue 14 part 5) through the binary: a real
//! `hostping agent --sim` whose scheduled checks lie far beyond the test (the idle check at
//! start aside), so every run after the first is one that was asked for. Only holders of a
//! token of `--probe-tokens` may ask; one request waits at most; the duty-cycle limiter
//! still decides.

mod common;

use common::{agent, agent_real, http_get, http_post, temp_dir, Agent, TestDir};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use store::{RunQuery, Store, StoredRun};

const ALICE: &str = "alice-probe-token-0123456789";
const BOB: &str = "bob-probe-token-abcdefghijkl";

/// At `--time-scale 600` the next scheduled check (100 h of virtual time) is 10 minutes of
/// wall time away: nothing but a request can start a run during a test.
const LONG_CADENCE: &str = "[triggers]\nhost_status_every = \"100h\"\nsymptoms_every = \"100h\"\n";

/// A folder with the probe-tokens file and an agent configuration of `extra` triggers.
fn setup(name: &str, triggers: &str) -> (TestDir, PathBuf, PathBuf, PathBuf) {
    let dir = temp_dir(name);
    let tokens = dir.join("probe.tokens");
    std::fs::write(
        &tokens,
        format!("# who may ask for a probe\nalice {ALICE}\nbob {BOB}\n"),
    )
    .unwrap();
    let config = dir.join("agent.toml");
    std::fs::write(&config, format!("{LONG_CADENCE}{triggers}")).unwrap();
    let db = dir.join("runs.db");
    (dir, db, tokens, config)
}

fn start(db: &Path, config: &Path, tokens: Option<&Path>, extra: &[&str]) -> Agent {
    let mut args = vec!["--time-scale", "600", "--config", config.to_str().unwrap()];
    if let Some(t) = tokens {
        args.extend(["--probe-tokens", t.to_str().unwrap()]);
    }
    args.extend_from_slice(extra);
    agent(db, &args, &[])
}

fn runs(db: &Path) -> Vec<StoredRun> {
    let store = Store::open_read_only(db).unwrap();
    let mut out: Vec<StoredRun> = store
        .runs(&RunQuery {
            limit: 1000,
            ..RunQuery::default()
        })
        .unwrap()
        .iter()
        .map(|s| store.run(s.id).unwrap().unwrap())
        .collect();
    out.reverse();
    out
}

fn manual_runs(db: &Path) -> Vec<StoredRun> {
    runs(db)
        .into_iter()
        .filter(|r| r.summary.trigger == "manual")
        .collect()
}

fn probe(addr: SocketAddr, token: Option<&str>) -> (u16, String, Value) {
    let auth = token.map(|t| format!("Authorization: Bearer {t}"));
    let headers: Vec<&str> = auth.iter().map(String::as_str).collect();
    let (code, head, body) = http_post(addr, "/api/probe", &headers);
    let json = serde_json::from_str(&body).unwrap_or(Value::Null);
    (code, head, json)
}

/// The value of one series of `/metrics`, if it is there.
fn metric(addr: SocketAddr, series: &str) -> Option<f64> {
    let (code, text) = http_get(addr, "/metrics");
    assert_eq!(code, 200);
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

/// Polls `/metrics` until `series` reads `value` (within `timeout`).
fn wait_for_metric(addr: SocketAddr, series: &str, value: f64, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while metric(addr, series) != Some(value) {
        assert!(
            Instant::now() < deadline,
            "{series} is {:?}, not {value}, after {timeout:?}",
            metric(addr, series)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_authorised_request_gets_a_manual_run_within_seconds() {
    let (_dir, db, tokens, config) = setup("probe-ok", "burst = \"1h\"\n");
    let mut a = start(&db, &config, Some(&tokens), &["--name", "node-7"]);
    // The idle check at start; the next is 100 h (10 wall minutes) away.
    a.wait_for_runs(1, Duration::from_secs(60));
    let (code, _, answer) = probe(a.addr, Some(ALICE));
    assert_eq!(code, 202, "{answer}");
    assert_eq!(answer, serde_json::json!({"queued": true, "by": "alice"}));
    // The loop wakes on the request: the run is there long before any scheduled one.
    a.wait_for_runs(2, Duration::from_secs(20));
    let all = runs(&db);
    assert_eq!(all.len(), 2);
    let run = &all[1];
    assert_eq!(run.summary.trigger, "manual");
    assert_eq!(run.summary.trigger_detail, "requested by alice");
    assert_eq!(
        run.summary.mode, "idle",
        "an idle host gets the idle full mesh"
    );
    assert_eq!(run.report.paths.len(), 40);
    assert!(
        run.summary.clock_ns < 100 * 3_600_000_000_000,
        "not the scheduled check: {}",
        run.summary.clock_ns
    );
    wait_for_metric(
        a.addr,
        "hostping_triggers_total{trigger=\"manual\",outcome=\"probed\"}",
        1.0,
        Duration::from_secs(10),
    );
    // The agent names its host by its fleet name, its kind by the model.
    let (code, body) = http_get(a.addr, "/api/hosts");
    assert_eq!(code, 200);
    let hosts: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(hosts[0]["host"], "node-7");
    assert_eq!(hosts[0]["kind"], "dgx-a100");
    assert_eq!(hosts[0]["runs"], 2);
    let (code, body) = http_get(a.addr, "/api/hosts/node-7/runs?limit=1");
    assert_eq!(code, 200, "{body}");
    let latest: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(latest[0]["trigger"], "manual");
    a.signal(libc::SIGTERM);
    let out = a.wait_output();
    assert!(out.status.success(), "{}", out.stderr);
    // The holder is named in the log, with the request and with the run.
    assert!(
        out.stderr.contains("probe requested by alice: queued"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("manual (requested by alice)"),
        "{}",
        out.stderr
    );
}

/// Both requests are on the wire before either answer is read, so the second reaches the
/// agent while the first still waits or runs (a full mesh takes the loop tens of ms).
#[test]
fn quick_requests_join_the_pending_one() {
    let (_dir, db, tokens, config) = setup("probe-twice", "burst = \"1h\"\n");
    let mut a = start(&db, &config, Some(&tokens), &[]);
    a.wait_for_runs(1, Duration::from_secs(60));
    let mut streams: Vec<TcpStream> = (0..2)
        .map(|_| TcpStream::connect(a.addr).unwrap())
        .collect();
    for (s, token) in streams.iter_mut().zip([ALICE, BOB]) {
        write!(
            s,
            "POST /api/probe HTTP/1.0\r\nContent-Length: 0\r\nAuthorization: Bearer {token}\r\n\r\n"
        )
        .unwrap();
    }
    let answers: Vec<Value> = streams
        .iter_mut()
        .map(|s| {
            let mut text = String::new();
            s.read_to_string(&mut text).unwrap();
            assert!(text.starts_with("HTTP/1.0 202"), "{text}");
            serde_json::from_str(text.split_once("\r\n\r\n").unwrap().1).unwrap()
        })
        .collect();
    let queued: Vec<&Value> = answers.iter().filter(|v| v["queued"] == true).collect();
    let joined: Vec<&Value> = answers.iter().filter(|v| v["pending"] == true).collect();
    // Both requests arrive within the ~35 ms of a simulated full mesh, so the second almost
    // always joins the first; on a machine slow enough to finish the run in between, the
    // second queues anew. Either way each run was asked for by exactly one queued answer.
    // (That a waiting request is joined, never queued behind, is the unit test
    // `one_probe_request_waits_at_most_and_later_ones_join_it`.)
    assert_eq!(queued.len() + joined.len(), 2, "{answers:?}");
    assert!(!queued.is_empty(), "{answers:?}");
    assert!(joined.iter().all(|v| v["queued"] == false), "{answers:?}");
    a.wait_for_runs(1 + queued.len(), Duration::from_secs(20));
    // Time for another run, were one queued by a joined request: there is none.
    std::thread::sleep(Duration::from_secs(1));
    let manual = manual_runs(&db);
    assert_eq!(manual.len(), queued.len(), "{answers:?}");
    let mut asked: Vec<String> = queued
        .iter()
        .map(|v| format!("requested by {}", v["by"].as_str().unwrap()))
        .collect();
    let mut stored: Vec<String> = manual
        .iter()
        .map(|r| r.summary.trigger_detail.clone())
        .collect();
    asked.sort();
    stored.sort();
    assert_eq!(stored, asked);
    let before = manual.len();
    // The slot is free again once the run is done: the next request queues anew.
    let (code, _, answer) = probe(a.addr, Some(ALICE));
    assert_eq!((code, &answer["queued"]), (202, &Value::Bool(true)));
    a.wait_for_runs(2 + before, Duration::from_secs(20));
    assert_eq!(manual_runs(&db).len(), before + 1);
}

#[test]
fn a_busy_host_is_probed_busy_on_request() {
    let (_dir, db, tokens, config) = setup("probe-busy", "burst = \"1h\"\n");
    // 100 Gb/s of service traffic on rnic0: above Thp_low, below what it can take, so the
    // host is busy but shows no symptom.
    let mut a = start(
        &db,
        &config,
        Some(&tokens),
        &["--inject", "service:rnic0:100"],
    );
    wait_for_metric(
        a.addr,
        "hostping_triggers_total{trigger=\"idle\",outcome=\"skipped_busy\"}",
        1.0,
        Duration::from_secs(30),
    );
    let (code, _, answer) = probe(a.addr, Some(BOB));
    assert_eq!((code, &answer["by"]), (202, &Value::from("bob")));
    a.wait_for_runs(1, Duration::from_secs(20));
    let all = runs(&db);
    assert_eq!(all.len(), 1, "the busy host had no idle run");
    assert_eq!(all[0].summary.trigger, "manual");
    assert_eq!(all[0].summary.mode, "busy");
    assert!(
        all[0].report.paths.len() < 40,
        "a busy probe takes the affinitive paths only: {}",
        all[0].report.paths.len()
    );
}

#[test]
fn refused_requests_store_nothing() {
    let (_dir, db, tokens, config) = setup("probe-refused", "burst = \"1h\"\n");
    let mut a = start(&db, &config, Some(&tokens), &[]);
    a.wait_for_runs(1, Duration::from_secs(60));
    for (what, header) in [
        ("no token", None),
        (
            "a wrong token",
            Some(format!("Authorization: Bearer {ALICE}x")),
        ),
        (
            "another scheme",
            Some(format!("Authorization: Basic {ALICE}")),
        ),
        ("the token alone", Some(format!("Authorization: {ALICE}"))),
    ] {
        let headers: Vec<&str> = header.iter().map(String::as_str).collect();
        let (code, head, body) = http_post(a.addr, "/api/probe", &headers);
        assert_eq!(code, 401, "{what}: {body}");
        assert!(
            head.to_ascii_lowercase()
                .contains("www-authenticate: bearer"),
            "{what}: {head}"
        );
        assert!(body.contains("probe-tokens"), "{what}: {body}");
    }
    // Reading is not asking: a GET of the endpoint does nothing.
    let (code, _) = http_get(a.addr, "/api/probe");
    assert_eq!(code, 405);
    // Had any refused request been queued, this one would join it (and a second run would
    // follow): it queues, and it is the only manual run.
    let (code, _, answer) = probe(a.addr, Some(BOB));
    assert_eq!(
        (code, answer),
        (202, serde_json::json!({"queued": true, "by": "bob"}))
    );
    a.wait_for_runs(2, Duration::from_secs(20));
    std::thread::sleep(Duration::from_secs(1));
    let manual = manual_runs(&db);
    assert_eq!(manual.len(), 1);
    assert_eq!(manual[0].summary.trigger_detail, "requested by bob");
    a.signal(libc::SIGTERM);
    let out = a.wait_output();
    assert_eq!(
        out.stderr
            .matches("probe request refused: no valid probe token")
            .count(),
        4,
        "{}",
        out.stderr
    );

    // Without a probe-tokens file probing on request is off, whatever is presented.
    let db_off = db.with_file_name("off.db");
    let mut off = start(&db_off, &config, None, &[]);
    off.wait_for_runs(1, Duration::from_secs(60));
    for token in [None, Some(ALICE)] {
        let (code, _, answer) = probe(off.addr, token);
        assert_eq!(code, 403, "{answer}");
        assert!(
            answer["error"].as_str().unwrap().contains("--probe-tokens"),
            "{answer}"
        );
    }
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(runs(&db_off).len(), 1, "only the idle check at start");
    assert_eq!(
        metric(
            off.addr,
            "hostping_triggers_total{trigger=\"manual\",outcome=\"probed\"}"
        ),
        None
    );
}

#[test]
fn without_rdma_a_request_is_503_and_stores_nothing() {
    let (_dir, db, tokens, _) = setup("probe-no-rdma", "");
    let root = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../rdma/testdata/hosts/no-rdma"
    );
    let a = agent_real(
        &db,
        &[
            "--sysfs-root",
            root,
            "--probe-tokens",
            tokens.to_str().unwrap(),
            "--run-for",
            "3s",
        ],
    );
    let (code, _, answer) = probe(a.addr, Some(ALICE));
    assert_eq!(code, 503, "{answer}");
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .contains("no RDMA device found"),
        "{answer}"
    );
    // A wrong token is still 401: the host's state is told to token holders only.
    let (code, _, _) = probe(a.addr, Some("not-a-probe-token-at-all"));
    assert_eq!(code, 401);
    let out = a.wait_output();
    assert!(out.status.success(), "{}", out.stderr);
    assert!(out.stderr.contains("0 runs stored"), "{}", out.stderr);
}

/// A bucket of 1 ms refilling at a millionth of the clock: the idle check at start empties
/// it for days of virtual time (its full mesh takes seconds), so a request is refused by
/// the limiter whenever it comes.
#[test]
fn the_duty_cycle_limiter_refuses_a_request_over_it() {
    let (_dir, db, tokens, config) = setup(
        "probe-limited",
        "burst = \"1ms\"\nmax_duty_cycle = 0.000001\n",
    );
    let mut a = start(&db, &config, Some(&tokens), &[]);
    a.wait_for_runs(1, Duration::from_secs(60));
    let (code, _, answer) = probe(a.addr, Some(ALICE));
    assert_eq!((code, &answer["queued"]), (202, &Value::Bool(true)));
    let limited = "hostping_triggers_total{trigger=\"manual\",outcome=\"rate_limited\"}";
    wait_for_metric(a.addr, limited, 1.0, Duration::from_secs(20));
    // A refused request frees the slot: the next one queues, and is refused in turn.
    let (code, _, answer) = probe(a.addr, Some(ALICE));
    assert_eq!((code, &answer["queued"]), (202, &Value::Bool(true)));
    wait_for_metric(a.addr, limited, 2.0, Duration::from_secs(20));
    assert_eq!(
        metric(
            a.addr,
            "hostping_triggers_total{trigger=\"manual\",outcome=\"probed\"}"
        ),
        None
    );
    a.signal(libc::SIGTERM);
    let out = a.wait_output();
    assert!(out.status.success(), "{}", out.stderr);
    assert_eq!(runs(&db).len(), 1, "only the idle check at start");
    assert_eq!(
        out.stderr
            .matches("probe requested by alice refused: over the duty-cycle limit")
            .count(),
        2,
        "{}",
        out.stderr
    );
}
