//! The job verdict on real hosts (DESIGN 4.7, issue 28): `GET /api/jobs/verdict` of a real
//! `hostping collector` on a real PostgreSQL, with runs posted for a few hosts (one with a
//! fault diagnosed), switch sweeps posted, and the collector started with the cabling of a
//! real fat tree (`--fabric`, an SX6036 capture whose CAs are `stageN mlx4_0`) so that it
//! knows the job's routes. Then `hostping job --nodes ... --collector` on the same.
//!
//! Skipped (with a message) when PostgreSQL's server binaries are missing, unless
//! `HOSTPING_REQUIRE_POSTGRES` is set, as `./test.sh` does.

mod common;

use common::job::{now_s, post_run, post_sweep, register, register_at, token, OFF_ROUTE, ON_ROUTE};
use common::postgres::{free_port, get, get_with, Collector, Postgres};
use common::{
    agent, hostping, probe_tokens_file, sim_report, stderr, stdout, temp_dir, tokens_file,
    wait_until,
};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

const OPS: &str = "tok-ops-0123456789abcdef";
/// The job's hosts and one beside them (stage100), each with its RNIC `mlx4_0` on the
/// fabric: stage1 and stage2 on the leaf `MF0;ib1:SX6036/U1` (ports 32 and 16), stage30,
/// stage60 and stage100 on leaves of their own.
const HOSTS: [&str; 5] = ["stage1", "stage2", "stage30", "stage60", "stage100"];
/// A host whose agent registered a device the fabric does not have.
const OFF_FABRIC: &str = "node99";
// `ON_ROUTE` (common::job) is stage1's cable, on every route of a job that holds stage1;
// `OFF_ROUTE` is stage100's, off the routes of any job without stage100.

/// The verdict of `nodes` over the window.
fn verdict(addr: SocketAddr, nodes: &str, since: i64, until: i64) -> Value {
    let (status, report) = get(
        addr,
        &format!("/api/jobs/verdict?nodes={nodes}&since={since}&until={until}&job=77"),
    );
    assert_eq!(status, 200, "{report}");
    // Every run the agents post here comes from a simulated host (`check --sim`): the
    // verdict says so whenever it read one (issue 38), and not otherwise.
    let read_a_run = report["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .any(|h| !h["healthy"].is_null());
    assert_eq!(report["simulated"], read_a_run, "{report}");
    assert_eq!(report["job"], "77", "{report}");
    report
}

fn port<'a>(report: &'a Value, name: &str) -> Option<&'a Value> {
    report["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["port"] == name)
}

fn names(culprits: &Value) -> Vec<String> {
    culprits
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{}:{}:{}",
                c["host"].as_str().unwrap_or("-"),
                c["component"].as_str().unwrap_or("-"),
                c["cause"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn the_collector_judges_a_jobs_hosts_and_the_ports_on_its_routes() {
    let dir = temp_dir("job-collector");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let capture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fabric/testdata/ibnetdiscover/loginoff-sx6036-fattree.topo");
    let tokens: Vec<(String, String)> = HOSTS
        .iter()
        .chain(&["s1", OFF_FABRIC])
        .map(|h| (h.to_string(), token(h)))
        .collect();
    let pairs: Vec<(&str, &str)> = tokens
        .iter()
        .map(|(h, t)| (h.as_str(), t.as_str()))
        .collect();
    let tokens = tokens_file(&dir, &pairs);
    let probe_tokens = probe_tokens_file(&dir, OPS);
    let c = Collector::start(
        &pg,
        &tokens,
        &[
            "--probe-tokens",
            probe_tokens.to_str().unwrap(),
            "--fabric",
            capture.to_str().unwrap(),
        ],
    );
    for h in HOSTS.iter().chain(&[OFF_FABRIC]) {
        register(c.addr, h, "mlx4_0");
    }
    // The job's window is the last 10 minutes; the same length before it is `before`.
    let now = now_s();
    let (since, until) = (now - 600, now);
    let healthy = sim_report(&[]);
    let faulty = sim_report(&["degrade:gpu0--lsw0:0.5"]);
    assert!(
        !faulty["diagnoses"].as_array().unwrap().is_empty(),
        "{faulty}"
    );
    post_run(c.addr, "stage1", 1, now - 300, &healthy);
    post_run(c.addr, "stage2", 1, now - 300, &healthy);
    post_run(c.addr, "stage60", 1, now - 200, &faulty);
    post_run(c.addr, OFF_FABRIC, 1, now - 200, &healthy);
    // stage30's only run is older than the window: it is not judged.
    post_run(c.addr, "stage30", 1, now - 900, &healthy);
    // Sweeps: a baseline before the window, steady counters through it so far.
    post_sweep(c.addr, 1, now - 1100, 7, 7);
    post_sweep(c.addr, 2, now - 700, 7, 7);
    post_sweep(c.addr, 3, now - 400, 7, 7);

    // A host with no run in the window: not judged, so the job is inconclusive.
    let report = verdict(c.addr, "stage1,stage2,stage30", since, until);
    assert_eq!(report["verdict"], "inconclusive", "{report}");
    let stage30 = &report["hosts"].as_array().unwrap()[2];
    assert_eq!(
        (stage30["host"].as_str(), stage30["healthy"].as_bool()),
        (Some("stage30"), None)
    );
    let said: Vec<&str> = report["not_judged"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["what"].as_str().unwrap())
        .collect();
    assert!(said.iter().any(|w| w.contains("stage30")), "{report}");
    // Without probe=1 no pair was probed, and the verdict says so in words.
    assert!(report["pairs"].as_array().unwrap().is_empty());
    assert!(
        report["not_judged"]
            .to_string()
            .contains("no RNIC-to-RNIC pair was probed"),
        "{report}"
    );

    // A host whose run in the window diagnoses a fault on the job's path: a host culprit.
    let report = verdict(c.addr, "stage1,stage60", since, until);
    assert_eq!(report["verdict"], "host", "{report}");
    let culprits = names(&report["culprits"]);
    assert!(culprits[0].starts_with("stage60:"), "{culprits:?}");
    assert!(culprits[0].contains("gpu0--lsw0"), "{culprits:?}");

    // Symbol errors rising on a port off the job's routes: found, not the job's culprit.
    post_sweep(c.addr, 4, now - 100, 7, 5007);
    let report = verdict(c.addr, "stage1,stage2", since, until);
    assert!(
        names(&report["not_the_jobs"])
            .iter()
            .any(|c| c.contains(OFF_ROUTE)),
        "{report}"
    );
    assert!(
        !names(&report["culprits"])
            .iter()
            .any(|c| c.contains(OFF_ROUTE)),
        "{report}"
    );
    assert_eq!(
        port(&report, OFF_ROUTE).unwrap()["on_job_route"],
        false,
        "{report}"
    );
    assert_eq!(
        port(&report, ON_ROUTE).unwrap()["on_job_route"],
        true,
        "{report}"
    );
    assert_ne!(report["verdict"], "network", "{report}");

    // The same on stage1's cable, on the job's routes: a network culprit naming it.
    post_sweep(c.addr, 5, now - 50, 5007, 5007);
    let report = verdict(c.addr, "stage1,stage2", since, until);
    assert_eq!(report["verdict"], "network", "{report}");
    let culprits = names(&report["culprits"]);
    assert!(culprits[0].contains(ON_ROUTE), "{culprits:?}");
    assert!(
        port(&report, ON_ROUTE).unwrap()["errors_per_s"]
            .as_f64()
            .unwrap()
            > 0.0
    );

    // `hostping job` asks the same and exits by the verdict: 1 for network.
    let url = format!("http://{}", c.addr);
    let window = [
        "--since".to_string(),
        since.to_string(),
        "--until".to_string(),
        until.to_string(),
    ];
    let job = |nodes: &str, extra: &[&str]| {
        let mut args = vec!["job", "--nodes", nodes, "--collector", &url];
        args.extend(window.iter().map(String::as_str));
        args.extend(extra);
        hostping(&args)
    };
    let out = job("stage1,stage2", &["--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["verdict"], "network");
    assert_eq!(printed["nodes"], json!(["stage1", "stage2"]));
    let out = job("stage1,stage2", &[]);
    let text = stdout(&out);
    assert!(text.contains("\nnetwork: "), "{text}");
    assert!(
        text.contains(ON_ROUTE) && text.contains("action: "),
        "{text}"
    );
    // Inconclusive (stage1's cable is not on stage2's and stage30's routes): exit 3, and
    // the words say what was not judged.
    let out = job("stage[2,30]", &[]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("not judged:\n") && text.contains("\n  stage30"),
        "{text}"
    );

    // Refusals: 400 naming the parameter; probe=1 without a probe token 401.
    for (query, says) in [
        ("since=1&until=2", "nodes=LIST is required"),
        ("nodes=stage[2-1]", "nodes=stage[2-1]"),
        (
            "nodes=stage1&since=9&until=3",
            "since=9 is not before until=3",
        ),
        ("nodes=stage1&probe=maybe", "probe=maybe"),
        ("nodes=stage1&colour=red", "colour"),
    ] {
        let (status, body) = get(c.addr, &format!("/api/jobs/verdict?{query}"));
        assert_eq!(status, 400, "{query}: {body}");
        assert!(
            body["error"].as_str().unwrap().contains(says),
            "{says}: {body}"
        );
    }
    let (status, body) = get(c.addr, "/api/jobs/verdict?nodes=stage1,stage2&probe=1");
    assert_eq!(status, 401, "{body}");

    // probe=1 with a probe token: the mesh's pairs on the job's routes, each with the
    // cables it crosses (the agents are down here: each pair failed, with why).
    let (status, report) = get_with(
        c.addr,
        &format!("/api/jobs/verdict?nodes=stage1,stage2&since={since}&until={until}&probe=1"),
        Some(OPS),
    );
    assert_eq!(status, 200, "{report}");
    // The mesh's pair, then the follow-up pair measuring the cable the counters named again
    // (DESIGN 4.9): an unreachable agent neither confirms nor clears it.
    let pairs = report["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2, "{report}");
    assert_eq!(pairs[1]["round"]["phase"], "follow_up", "{report}");
    let again = &report["follow_ups"][0];
    assert_eq!(
        again["why"].as_str().unwrap(),
        format!("crosses {ON_ROUTE}{}", verdict::follow_up::RECHECK_SUFFIX)
    );
    assert!(
        again["outcome"]
            .as_str()
            .unwrap()
            .starts_with("not judged: "),
        "{again}"
    );
    assert_eq!(pairs[0]["status"], "failed", "{report}");
    assert!(
        pairs[0]["reason"].as_str().unwrap().contains("unreachable"),
        "{report}"
    );
    assert_eq!(
        pairs[0]["route"],
        json!([ON_ROUTE, "MF0;ib1:SX6036/U1/16"]),
        "{report}"
    );
    assert_eq!(
        pairs[0]["cables"],
        json!([ON_ROUTE, "MF0;ib1:SX6036/U1/16"]),
        "{report}"
    );
    // A job the fabric cannot place: its routes are not known, and the report says why
    // (no port can be said to be on them or off them, so none is judged).
    let report = verdict(c.addr, &format!("stage1,{OFF_FABRIC}"), since, until);
    let why = not_judged_why(&report, "the job's routes");
    assert!(
        why.contains("host `node99` has no CA on the fabric"),
        "{why}"
    );
    assert!(report["ports"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["on_job_route"] == false));
    assert_ne!(report["verdict"], "neither", "{report}");

    // The CLI: a refusal and an unreachable collector are input errors naming the URL.
    let out = job("stage1", &["--probe"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--probe: the pair probes need a token"),
        "{}",
        stderr(&out)
    );
    let out = job(
        "stage1,stage2",
        &["--probe", "--token", "not-a-probe-token"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("401 from http://"),
        "{}",
        stderr(&out)
    );
    let gone = format!("http://127.0.0.1:{}", free_port());
    let out = hostping(&["job", "--nodes", "stage1", "--collector", &gone]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains(&gone), "{}", stderr(&out));
}

/// `--probe` on a job whose host has no check of its own in the window: the collector asks
/// that host's agent (a simulated one, with a half-width GPU link) for a check, waits for the
/// run, judges with it, and says what it ran and why, in JSON and in words.
#[test]
fn a_probe_checks_a_host_without_a_run_and_judges_it() {
    let dir = temp_dir("job-follow-up");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let host = "node07";
    let tokens = tokens_file(&dir, &[(host, &token(host))]);
    let probe_tokens = probe_tokens_file(&dir, OPS);
    let c = Collector::start(
        &pg,
        &tokens,
        &["--probe-tokens", probe_tokens.to_str().unwrap()],
    );
    let url = format!("http://{}", c.addr);
    // Its clock 600 times faster, so that its duty cycle lets the asked-for check run at
    // once; no check of its own but the first.
    let config = dir.join("agent.toml");
    std::fs::write(
        &config,
        "[triggers]\nhost_status_every = \"100h\"\nsymptoms_every = \"100h\"\n",
    )
    .unwrap();
    let _agent = agent(
        &dir.join("node07.db"),
        &[
            "--config",
            config.to_str().unwrap(),
            "--time-scale",
            "600",
            "--name",
            host,
            "--collector",
            &url,
            "--token",
            &token(host),
            "--probe-tokens",
            probe_tokens.to_str().unwrap(),
            "--inject",
            "degrade:gpu2--lsw2:0.5",
        ],
        &[],
    );
    // The agent's first check, at its start, has arrived: the one asked for comes after it.
    wait_until("the agent's first run", Duration::from_secs(60), || {
        pg.count("runs") >= 1
    });
    // The job ran an hour ago; the host's only run is from now.
    let now = now_s();
    let (since, until) = (now - 7200, now - 3600);
    let window = format!("nodes={host}&since={since}&until={until}");
    let unjudged = verdict(c.addr, host, since, until);
    assert_eq!(unjudged["verdict"], "inconclusive", "{unjudged:#}");
    assert!(unjudged["follow_ups"].as_array().unwrap().is_empty());

    let (status, probed) = get_with(
        c.addr,
        &format!("/api/jobs/verdict?{window}&probe=1"),
        Some(OPS),
    );
    assert_eq!(status, 200, "{probed}");
    assert_eq!(probed["verdict"], "host", "{probed:#}");
    assert_eq!(probed["culprits"][0]["host"], host, "{probed:#}");
    // The check asked for judged the host; its culprit was then checked again, as no
    // action may rest on the check that raised it (DESIGN 4.9).
    let follow_ups = probed["follow_ups"].as_array().unwrap();
    let kinds: Vec<&str> = follow_ups
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["loopback", "recheck"], "{probed:#}");
    for f in follow_ups {
        assert_eq!(f["target"], "node07 loopback");
        let outcome = f["outcome"].as_str().unwrap();
        assert!(
            outcome.starts_with("checked (run ") && outcome.contains("gpu2--lsw2"),
            "{outcome}"
        );
    }
    assert_ne!(
        follow_ups[0]["outcome"], follow_ups[1]["outcome"],
        "two runs"
    );
    assert_eq!(pg.count("runs"), 3, "two checks asked for");

    // The same through the command, in words: what was run, why, and what it found.
    let since_arg = since.to_string();
    let until_arg = until.to_string();
    let out = hostping(&[
        "job",
        "--nodes",
        host,
        "--collector",
        &url,
        "--since",
        &since_arg,
        "--until",
        &until_arg,
        "--probe",
        "--token",
        OPS,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let words = stdout(&out);
    assert!(words.contains("follow-ups run:"), "{words}");
    assert!(
        words.contains("loopback node07 loopback: checked (run "),
        "{words}"
    );
    assert!(
        words.contains("why: node07 has no check of its own in the window"),
        "{words}"
    );
    assert!(
        words.contains("recheck node07 loopback: checked (run "),
        "{words}"
    );

    // An agent that cannot be asked leaves the host unjudged and says why.
    drop(_agent);
    let (status, gone) = get_with(
        c.addr,
        &format!("/api/jobs/verdict?{window}&probe=1"),
        Some(OPS),
    );
    assert_eq!(status, 200, "{gone}");
    assert_eq!(gone["verdict"], "inconclusive", "{gone:#}");
    let outcome = gone["follow_ups"][0]["outcome"].as_str().unwrap();
    assert!(outcome.starts_with("not run: http://"), "{outcome}");
}

/// A host whose own check had no baseline of its own (judged against line rate and its like
/// paths) and passed a half-width GPU link: the collector judges its run again against its
/// kind's fleet baseline, which names it, with the figures.
#[test]
fn a_host_its_own_check_passed_is_judged_against_its_kinds_fleet() {
    let dir = temp_dir("job-fleet");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let peers = ["peer1", "peer2", "peer3"];
    let all: Vec<(String, String)> = peers
        .iter()
        .chain(&["slow"])
        .map(|h| (h.to_string(), token(h)))
        .collect();
    let pairs: Vec<(&str, &str)> = all.iter().map(|(h, t)| (h.as_str(), t.as_str())).collect();
    let c = Collector::start(&pg, &tokens_file(&dir, &pairs), &[]);
    // As a host without a baseline file sends its runs: judged relatively, no baseline
    // figures of its own.
    let relative = |mut report: Value| {
        report["baseline"] = "relative".into();
        for p in report["paths"].as_array_mut().unwrap() {
            p["baseline_latency_us"] = Value::Null;
            p["baseline_bandwidth_gbps"] = Value::Null;
        }
        report
    };
    let healthy = relative(sim_report(&[]));
    // The slow host's own check, judging its paths among themselves, passed them all.
    let mut passed = relative(sim_report(&["degrade:gpu0--lsw0:0.5"]));
    passed["healthy"] = true.into();
    passed["diagnoses"] = json!([]);
    for p in passed["paths"].as_array_mut().unwrap() {
        p["status"] = "normal".into();
    }
    for l in passed["links"].as_array_mut().unwrap() {
        l["status"] = "normal".into();
    }
    let now = now_s();
    for (i, host) in peers.iter().enumerate() {
        post_run(c.addr, host, 1, now - 300 - i as i64, &healthy);
    }
    post_run(c.addr, "slow", 1, now - 300, &passed);
    wait_until("the kind's fleet baseline", Duration::from_secs(30), || {
        pg.count("fleet_baselines") > 0
    });

    let report = verdict(c.addr, "slow,peer1", now - 600, now);
    assert_eq!(report["verdict"], "host", "{report:#}");
    let culprit = &report["culprits"][0];
    assert_eq!(culprit["host"], "slow", "{report:#}");
    let evidence = culprit["evidence"].as_str().unwrap();
    assert!(
        evidence.contains("its kind's fleet baseline does not: rnic0->gpu0 at "),
        "{evidence}"
    );
    assert!(evidence.contains("over 4 host(s)"), "{evidence}");
    // Its peers, as fast as the fleet, are not named.
    assert_eq!(
        report["culprits"].as_array().unwrap().len(),
        1,
        "{report:#}"
    );
}

/// Hosts the collector has never heard of (a typo) are an input error naming them, not
/// hosts without a run in the window; the window's times are Unix seconds or RFC 3339 with
/// its offset in the API as on the command line (issue 38).
#[test]
fn unknown_nodes_are_refused_and_times_take_both_forms() {
    let dir = temp_dir("job-unknown-nodes");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let tokens = tokens_file(
        &dir,
        &[("node01", &token("node01")), ("node02", &token("node02"))],
    );
    let c = Collector::start(&pg, &tokens, &[]);
    let now = now_s();
    post_run(c.addr, "node01", 1, now - 300, &sim_report(&[]));
    register(c.addr, "node02", "mlx5_0");

    let (status, body) = get(c.addr, "/api/jobs/verdict?nodes=node01,gpu[1-2]");
    assert_eq!(status, 404, "{body}");
    assert_eq!(
        body["error"],
        "unknown nodes: gpu[1-2] (no agent registered them and they sent no run)"
    );
    let url = format!("http://{}", c.addr);
    let out = hostping(&["job", "--nodes", "node01,gpu[1-2]", "--collector", &url]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("unknown nodes: gpu[1-2]"),
        "{}",
        stderr(&out)
    );

    // A registered host without a run is known: not judged, not refused.
    let since = humantime::format_rfc3339_seconds(
        std::time::UNIX_EPOCH + Duration::from_secs((now - 600) as u64),
    );
    let (status, report) = get(
        c.addr,
        &format!("/api/jobs/verdict?nodes=node01,node02&since={since}&until={now}"),
    );
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["nodes"], json!(["node01", "node02"]), "{report}");
    let (status, body) = get(
        c.addr,
        "/api/jobs/verdict?nodes=node01&since=2026-11-27T10:00:00&until=1795787165",
    );
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("since=2026-11-27T10:00:00: wants Unix seconds or an RFC 3339 time"),
        "{body}"
    );
}

/// Without Slurm's tools, `--slurm` is an input error that says what is missing, before any
/// collector is asked.
#[test]
fn without_slurm_the_slurm_flag_says_so() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hostping"))
        .args([
            "job",
            "--slurm",
            "12345",
            "--collector",
            "http://127.0.0.1:1",
        ])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--slurm: `scontrol` is not installed"),
        "{}",
        stderr(&out)
    );
}

/// A stand-in agent: answers `GET /api/status` and each `POST /api/pair/probe` with the
/// next of its reports (the last again once they run out), keeping each probe's request.
struct FakeAgent {
    url: String,
    probes: std::sync::Arc<std::sync::Mutex<Vec<Value>>>,
}

/// The probe token alone in `dir/ops.token`, for `--token-file`.
fn ops_token_file(dir: &Path) -> PathBuf {
    let file = dir.join("ops.token");
    std::fs::write(&file, format!("{OPS}\n")).unwrap();
    file
}

/// `hostping mesh --record-baseline` between `nodes` through the collector at `url`, for
/// half a second, with `extra` flags, as JSON.
fn record_pair_baseline(url: &str, nodes: &str, token_file: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "mesh",
        "--nodes",
        nodes,
        "--collector",
        url,
        "--token-file",
        token_file.to_str().unwrap(),
        "--record-baseline",
        "--duration",
        "0.5",
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    hostping(&args)
}

fn fake_agent(reports: Vec<Value>) -> FakeAgent {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let probes = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = probes.clone();
    serve_probes(listener, move |request| {
        let mut probes = kept.lock().unwrap();
        probes.push(request.clone());
        reports[(probes.len() - 1).min(reports.len() - 1)].clone()
    });
    FakeAgent { url, probes }
}

/// Serves a stand-in agent on `listener`, in a thread: each `POST /api/pair/probe` is
/// answered with `answer(request body)`, anything else with `{}`.
fn serve_probes(
    listener: std::net::TcpListener,
    answer: impl Fn(&Value) -> Value + Send + 'static,
) {
    use std::io::{BufRead, BufReader, Read, Write};
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let (mut first, mut length) = (String::new(), 0);
            reader.read_line(&mut first).unwrap();
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap() == 0 || header == "\r\n" {
                    break;
                }
                if let Some(v) = header.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let reply = if first.starts_with("POST /api/pair/probe") {
                answer(&serde_json::from_slice(&body).unwrap())
            } else {
                json!({})
            };
            let text = reply.to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
}

/// A pair as node01's agent reports it (agent::pair::PairReport's JSON): `bandwidth` Gb/s,
/// a p99 of `p99` us, and what rxe_a's counters counted over it (sequence-error NAKs).
fn agent_pair(bandwidth: f64, p99: f64, naks: u64) -> Value {
    json!({"a": {"host": "node01", "rnic": "rnic0", "device": "rxe_a"},
           "b": {"host": "node02", "rnic": "rnic0", "device": "rxe_b"},
           "latency_us": 17.0, "bandwidth_gbps": bandwidth, "host_a_us": 8.5,
           "host_b_us": 8.6, "network_us": -0.1, "network_from": "latency_less_host_parts",
           "latency": {"samples": 20, "min_us": 15.0, "p50_us": 17.0, "p90_us": 20.0,
                       "p99_us": p99, "max_us": p99},
           "status": "uncertain", "reason": "measured, not judged: a single pair has no baseline",
           "verified": true, "simulated": false, "endpoint_a": "mem1", "peer": "node02",
           "counters_a": {"local_ack_timeout_err": null, "packet_seq_err": naks,
                          "out_of_sequence": 0, "duplicate_request": 0}})
}

/// Recorded pair baselines without a fabric: `hostping mesh --record-baseline` stores the
/// healthy pair; `job --probe` then probes it on the same budget and judges it against it:
/// `neither` while it holds, `network` naming node01's own cable once rxe_a counts NAKs.
#[test]
fn a_recorded_pair_baseline_judges_the_jobs_probes_without_a_fabric() {
    let dir = temp_dir("job-pair-baselines");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let tokens = tokens_file(
        &dir,
        &[("node01", &token("node01")), ("node02", &token("node02"))],
    );
    let probe_tokens = probe_tokens_file(&dir, OPS);
    let c = Collector::start(
        &pg,
        &tokens,
        &["--probe-tokens", probe_tokens.to_str().unwrap()],
    );
    let healthy = agent_pair(0.23, 40.0, 0);
    let agent = fake_agent(vec![
        healthy.clone(),
        healthy,
        agent_pair(0.004, 38_000.0, 901),
    ]);
    for (host, device) in [("node01", "rxe_a"), ("node02", "rxe_b")] {
        register_at(c.addr, host, &agent.url, device);
    }
    let now = now_s();
    for host in ["node01", "node02"] {
        post_run(c.addr, host, 1, now - 60, &sim_report(&[]));
    }
    let url = format!("http://{}", c.addr);
    let token_file = ops_token_file(&dir);

    // Recorded: 40 pings a second for half a second, 77 WRITEs.
    let out = record_pair_baseline(
        &url,
        "node01,node02",
        &token_file,
        &["--rate-cross-leaf", "40", "--bw-iterations", "77"],
    );
    let recorded: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "recorded, not judged: {recorded:#}"
    );
    assert_eq!(recorded["baselines_recorded"], 1, "{recorded:#}");
    assert_eq!(recorded["pairs"][0]["baseline"], "recorded", "{recorded:#}");
    assert_eq!(
        pg.scalar(
            "SELECT host_a || '/' || rnic_a || '->' || host_b || '/' || rnic_b FROM pair_baselines"
        ),
        "node01/rnic0->node02/rnic0"
    );

    let verdict = || {
        let out = hostping(&[
            "job",
            "--nodes",
            "node01,node02",
            "--collector",
            &url,
            "--probe",
            "--token-file",
            token_file.to_str().unwrap(),
            "--since",
            &(now - 120).to_string(),
            "--format",
            "json",
        ]);
        let report: Value =
            serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
        (out.status.code(), report)
    };
    // Healthy: the pair within its baseline, both RNICs' own cables judged.
    let (code, healthy) = verdict();
    assert_eq!(healthy["verdict"], "neither", "{healthy:#}");
    assert_eq!(code, Some(0), "{healthy:#}");
    let pair = &healthy["pairs"][0];
    assert_eq!(pair["status"], "normal", "{healthy:#}");
    assert_eq!(
        pair["cables"],
        json!(["node01/rxe_a", "node02/rxe_b"]),
        "{healthy:#}"
    );
    // The verdict's probe ran on the recorded budget.
    let probes = agent.probes.lock().unwrap().clone();
    assert_eq!(probes.len(), 2, "{probes:?}");
    assert_eq!(
        (&probes[1]["iterations"], &probes[1]["bw_iterations"]),
        (&json!(20), &json!(77))
    );

    // Lossy: the bandwidth and the tail gone, and rxe_a counted NAKs: node01's cable first.
    let (code, lossy) = verdict();
    assert_eq!(lossy["verdict"], "network", "{lossy:#}");
    assert_eq!(code, Some(1), "{lossy:#}");
    let top = &lossy["culprits"][0];
    assert_eq!(top["component"], "node01/rxe_a", "{lossy:#}");
    assert_eq!(
        top["candidates"],
        json!(["node01/rxe_a", "node02/rxe_b"]),
        "{lossy:#}"
    );
    assert_eq!(top["cause"], "link_errors", "{lossy:#}");
    assert!(
        top["evidence"]
            .as_str()
            .unwrap()
            .contains("901 sequence-error NAK(s)"),
        "{lossy:#}"
    );
    assert_eq!(lossy["pairs"][0]["network_status"], "abnormal", "{lossy:#}");
}

/// The what-if on real hosts (issue 28 section 3): a healthy two-host job on the
/// collector's fabric (stage1 and stage2 on one leaf of the SX6036 capture, their pair
/// within its recorded baseline), its ring all-reduce replayed there against the time the
/// job measured. On time: the infrastructure explains nothing, `neither`, exit 0; three
/// times slower with nothing measured to show for it: the job's time is not judged, so
/// `inconclusive`, exit 3, never `neither`.
#[test]
fn the_what_if_compares_a_real_jobs_measured_time_with_its_replays() {
    let dir = temp_dir("job-what-if");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let capture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fabric/testdata/ibnetdiscover/loginoff-sx6036-fattree.topo");
    let tokens = tokens_file(
        &dir,
        &[("stage1", &token("stage1")), ("stage2", &token("stage2"))],
    );
    let probe_tokens = probe_tokens_file(&dir, OPS);
    let c = Collector::start(
        &pg,
        &tokens,
        &[
            "--probe-tokens",
            probe_tokens.to_str().unwrap(),
            "--fabric",
            capture.to_str().unwrap(),
        ],
    );
    // Both agents answer every probe with the same healthy pair, as stage1 to stage2.
    let mut pair = agent_pair(0.23, 40.0, 0);
    for (end, host) in [("a", "stage1"), ("b", "stage2")] {
        pair[end]["host"] = host.into();
        pair[end]["device"] = "mlx4_0".into();
    }
    pair["peer"] = "stage2".into();
    let agent = fake_agent(vec![pair]);
    let now = now_s();
    for host in ["stage1", "stage2"] {
        register_at(c.addr, host, &agent.url, "mlx4_0");
        post_run(c.addr, host, 1, now - 60, &sim_report(&[]));
    }
    let url = format!("http://{}", c.addr);
    let token_file = ops_token_file(&dir);
    let out = record_pair_baseline(&url, "stage1,stage2", &token_file, &[]);
    assert_eq!(pg.count("pair_baselines"), 1, "{}", stderr(&out));

    let since = (now - 120).to_string();
    let job = |extra: &[&str]| {
        let mut args = vec![
            "job",
            "--nodes",
            "stage1,stage2",
            "--collector",
            &url,
            "--probe",
            "--token-file",
            token_file.to_str().unwrap(),
            "--since",
            &since,
            "--what-if",
            "--bytes",
            "1048576",
        ];
        args.extend(extra);
        hostping(&args)
    };
    let judged = |observed_ns: f64| {
        let observed = format!("{observed_ns:.0}ns");
        let out = job(&["--observed-time", &observed, "--format", "json"]);
        let report: Value =
            serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
        (out.status.code(), report)
    };
    let scenario = |report: &Value, name: &str| {
        report["what_if"]["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("no {name} scenario: {report:#}"))["time_us"]
            .as_f64()
            .unwrap()
    };
    // A first call finds the healthy replay's time: the replays are seeded, so it holds.
    let (_, first) = judged(1e6);
    let healthy_us = scenario(&first, "healthy");
    assert!(healthy_us > 0.0, "{first:#}");

    // On time (2 % above the healthy replay, within its tolerance): nothing explains more.
    let (code, on_time) = judged(1.02 * healthy_us * 1e3);
    let w = &on_time["what_if"];
    assert!(
        ["none", "mapping", "pattern"].contains(&w["explains"].as_str().unwrap()),
        "{on_time:#}"
    );
    assert_eq!(on_time["verdict"], "neither", "{on_time:#}");
    assert_eq!(code, Some(0), "{on_time:#}");
    assert_eq!(on_time["pairs"][0]["status"], "normal", "{on_time:#}");
    // The observed scenario is the job's own time as given, measured: no packet moved.
    let observed = &w["scenarios"][0];
    assert_eq!(observed["name"], "observed", "{on_time:#}");
    assert_eq!(observed["packets"], 0, "{on_time:#}");
    assert!(
        (observed["time_us"].as_f64().unwrap() - 1.02 * healthy_us).abs() < 0.01,
        "{on_time:#}"
    );
    assert!(
        w["traffic"]
            .as_str()
            .unwrap()
            .starts_with("ring all-reduce of 1 MiB over 2 ranks"),
        "{on_time:#}"
    );

    // Three times the healthy replay on a fabric that measured healthy: unexplained, and
    // the time not judged.
    let (code, slow) = judged(3.0 * healthy_us * 1e3);
    assert_eq!(slow["what_if"]["explains"], "unexplained", "{slow:#}");
    assert_eq!(slow["verdict"], "inconclusive", "{slow:#}");
    assert_eq!(code, Some(3), "{slow:#}");
    let why = not_judged_why(&slow, "the job's time");
    assert!(why.contains("(+200 %)"), "{why}");

    // In words: the observed time reads as measured, the replays as simulated.
    let observed = format!("{:.0}ns", 3.0 * healthy_us * 1e3);
    let words = stdout(&job(&["--observed-time", &observed]));
    assert!(
        words.contains("; observed: measured, the replays: SIMULATED): explains unexplained"),
        "{words}"
    );
    let line = |name: &str| {
        words
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("{name}: {words}"))
    };
    assert!(line("observed ").contains(" measured "), "{words}");
    assert!(line("healthy ").contains(" packets "), "{words}");

    // Without the job's own time there is nothing to compare: an input error naming it.
    let out = job(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--what-if with --collector needs --observed-time"),
        "{}",
        stderr(&out)
    );
    // The collector's refusals name the parameter.
    for (query, says) in [
        ("what_if=ring", "observed_us=X is required"),
        ("what_if=ring&observed_us=-1", "observed_us=-1"),
        ("what_if=star&observed_us=5", "what_if=star"),
        ("observed_us=5", "observed_us=5: only with what_if"),
    ] {
        let (status, body) = get(
            c.addr,
            &format!("/api/jobs/verdict?nodes=stage1,stage2&{query}"),
        );
        assert_eq!(status, 400, "{query}: {body}");
        assert!(
            body["error"].as_str().unwrap().contains(says),
            "{says}: {body}"
        );
    }
    drop(agent);
}

/// Without a fabric the collector has no routes to replay a job's traffic on: the what-if
/// is listed in `not_judged` with why, and the verdict is answered all the same.
#[test]
fn without_a_fabric_the_what_if_is_not_judged() {
    let dir = temp_dir("job-what-if-no-fabric");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let tokens = tokens_file(
        &dir,
        &[("node01", &token("node01")), ("node02", &token("node02"))],
    );
    let c = Collector::start(&pg, &tokens, &[]);
    let now = now_s();
    for host in ["node01", "node02"] {
        post_run(c.addr, host, 1, now - 60, &sim_report(&[]));
    }
    let (status, report) = get(
        c.addr,
        &format!(
            "/api/jobs/verdict?nodes=node01,node02&since={}&what_if=ring&observed_us=8200",
            now - 120
        ),
    );
    assert_eq!(status, 200, "{report}");
    assert!(report["what_if"].is_null(), "{report:#}");
    let why = not_judged_why(&report, "what-if");
    assert!(
        why.contains("the collector knows no fabric to replay the job's traffic on"),
        "{why}"
    );
    assert_eq!(report["verdict"], "inconclusive", "{report:#}");
}

/// Why `report` did not judge `what` (its `not_judged` item); panics without one.
fn not_judged_why<'a>(report: &'a Value, what: &str) -> &'a str {
    report["not_judged"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["what"] == what)
        .and_then(|n| n["why"].as_str())
        .unwrap_or_else(|| panic!("`{what}` is not in not_judged: {report:#}"))
}

/// How a stand-in agent answers a pair probe from its host to a peer host.
type PairAnswer = std::sync::Arc<dyn Fn(&str, &str) -> Value + Send + Sync>;

/// Stand-in agents, one per host, each on its own port: every `POST /api/pair/probe` is
/// answered with `answer(a, b)`, `a` the agent's host, `b` the peer's (by its URL).
/// Returns each host's URL.
fn routed_agents(hosts: &[&str], answer: PairAnswer) -> Vec<String> {
    let listeners: Vec<std::net::TcpListener> = hosts
        .iter()
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let urls: Vec<String> = listeners
        .iter()
        .map(|l| format!("http://{}", l.local_addr().unwrap()))
        .collect();
    let host_of: std::sync::Arc<std::collections::HashMap<String, String>> = std::sync::Arc::new(
        urls.iter()
            .cloned()
            .zip(hosts.iter().map(|h| h.to_string()))
            .collect(),
    );
    for (listener, host) in listeners
        .into_iter()
        .zip(hosts.iter().map(|h| h.to_string()))
    {
        let (answer, host_of) = (answer.clone(), host_of.clone());
        serve_probes(listener, move |request| {
            answer(&host, &host_of[request["peer"].as_str().unwrap()])
        });
    }
    urls
}

/// A pair between `a` and `b` (each RNIC `mlx4_0`) as `agent_pair` reports it.
fn pair_between(a: &str, b: &str, bandwidth: f64, p99: f64) -> Value {
    let mut pair = agent_pair(bandwidth, p99, 0);
    pair["a"]["host"] = a.into();
    pair["a"]["device"] = "mlx4_0".into();
    pair["b"]["host"] = b.into();
    pair["b"]["device"] = "mlx4_0".into();
    pair["peer"] = b.into();
    pair
}

/// The follow-up pairs through the agents (issue 28 section 2): a slow pair whose cables
/// no other probe of the job clears leaves its cables as one culprit's candidates; with
/// `--probe` the collector plans, for each, a pair of the job's RNICs that crosses it and
/// none of the others, runs those through the agents, judges them against their recorded
/// baselines, and judges the job again: a candidate a healthy follow-up pair crosses is
/// cleared.
#[test]
fn a_follow_up_pair_through_the_agents_clears_a_candidate_cable() {
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    const JOB: [&str; 3] = ["stage1", "stage2", "stage60"];
    let dir = temp_dir("job-separating-pairs");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let capture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fabric/testdata/ibnetdiscover/loginoff-sx6036-fattree.topo");
    let tokens: Vec<(String, String)> = JOB.iter().map(|h| (h.to_string(), token(h))).collect();
    let pairs: Vec<(&str, &str)> = tokens
        .iter()
        .map(|(h, t)| (h.as_str(), t.as_str()))
        .collect();
    let probe_tokens = probe_tokens_file(&dir, OPS);
    let c = Collector::start(
        &pg,
        &tokens_file(&dir, &pairs),
        &[
            "--probe-tokens",
            probe_tokens.to_str().unwrap(),
            "--fabric",
            capture.to_str().unwrap(),
        ],
    );
    // Recording: every pair healthy. Then stage1<->stage60 is slow, and every other pair's
    // first probe measures no network part (not judged, so it clears nothing); asked again,
    // it is healthy.
    let recording = Arc::new(AtomicBool::new(true));
    let phase = recording.clone();
    let asked: Mutex<BTreeMap<(String, String), usize>> = Mutex::default();
    let urls = routed_agents(
        &JOB,
        Arc::new(move |a: &str, b: &str| {
            if phase.load(Ordering::SeqCst) {
                return pair_between(a, b, 0.23, 40.0);
            }
            if [a, b].contains(&"stage1") && [a, b].contains(&"stage60") {
                return pair_between(a, b, 0.004, 38_000.0);
            }
            let mut asked = asked.lock().unwrap();
            let before = asked.entry((a.to_string(), b.to_string())).or_default();
            let mut pair = pair_between(a, b, 0.23, 40.0);
            if *before == 0 {
                pair["network_us"] = Value::Null;
            }
            *before += 1;
            pair
        }),
    );
    let now = now_s();
    for (host, url) in JOB.iter().zip(&urls) {
        register_at(c.addr, host, url, "mlx4_0");
        post_run(c.addr, host, 1, now - 60, &sim_report(&[]));
    }
    let url = format!("http://{}", c.addr);
    let token_file = ops_token_file(&dir);
    let out = record_pair_baseline(&url, "stage[1-2],stage60", &token_file, &[]);
    assert!(pg.count("pair_baselines") >= 2, "{}", stdout(&out));
    recording.store(false, Ordering::SeqCst);

    let out = hostping(&[
        "job",
        "--nodes",
        "stage[1-2],stage60",
        "--collector",
        &url,
        "--probe",
        "--token-file",
        token_file.to_str().unwrap(),
        "--since",
        &(now - 120).to_string(),
        "--format",
        "json",
    ]);
    let report: Value = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("{e}: {} {}", stdout(&out), stderr(&out)));
    // The job's mesh: stage1<->stage2 (on one leaf, its network part not measured) and the
    // slow stage1<->stage60, whose six cables nothing cleared. Then the follow-up: the pair
    // on stage1's leaf crosses stage1's cable and none of the other five, through the
    // agents, judged against its recorded baseline.
    let stage1_cable = "MF0;ib1:SX6036/U1/32";
    let follow_up = report["follow_ups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "pair" && f["target"] == "stage1/rnic0<->stage2/rnic0")
        .unwrap_or_else(|| panic!("no follow-up pair: {report:#}"));
    assert!(
        follow_up["why"]
            .as_str()
            .unwrap()
            .starts_with(&format!("crosses {stage1_cable} and not ")),
        "{follow_up}"
    );
    assert_eq!(follow_up["outcome"], "network part normal", "{follow_up}");
    let probed: Vec<(&str, &str, &str)> = report["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["a"]["host"].as_str().unwrap(),
                p["b"]["host"].as_str().unwrap(),
                p["network_status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        probed,
        [
            ("stage1", "stage2", "uncertain"),
            ("stage1", "stage60", "abnormal"),
            ("stage1", "stage2", "normal"),
        ],
        "{report:#}"
    );
    // Judged again: stage1's cable is cleared, the other five stay the candidates, and
    // each of them is said to have no pair that splits it off.
    assert_eq!(report["verdict"], "network", "{report:#}");
    assert_eq!(out.status.code(), Some(1), "{report:#}");
    let candidates: Vec<&str> = report["culprits"][0]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(candidates.len(), 5, "{report:#}");
    assert!(!candidates.contains(&stage1_cable), "{report:#}");
    for cable in &candidates {
        assert!(
            report["follow_ups"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["target"] == *cable
                    && f["outcome"] == "no pair examined crosses it without the others"),
            "{cable}: {report:#}"
        );
    }
}
