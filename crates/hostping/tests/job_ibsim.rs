//! The job verdict on real parts (DESIGN 4.7, issue 28 section 6, "ibsim"): a fabric run by
//! ibsim with its routes programmed by a real opensm (scripts/ibsim/run.sh, the net
//! scripts/ibsim/nets/job-tree.net whose CAs are described `HOST DEVICE`), discovered and
//! its forwarding tables dumped by `hostping fabric`, a real `hostping collector` on a real
//! PostgreSQL started with those files (`--fabric`, `--routes`), healthy runs posted for the
//! job's hosts, and sweeps of a real sampler (`hostping fabric sample --collector`) before
//! and during the job's window while ibsim raises a port's symbol error counter. Then
//! `hostping job --nodes ... --collector`:
//! - the error on a port off the job's routes (on the very spine its route crosses, and on
//!   its leaf) is found and listed in `not_the_jobs`, never the job's culprit;
//! - the same error on a port of the job's route, as the switches' tables say it runs, is
//!   a `network` verdict naming that port's cable (exit 1);
//! - with a sampler that keeps running but sweeps rarely, a route port with no counters in
//!   the window is not judged without `--probe`; with it, the collector has the sampler read
//!   it now, and its errors name its cable (`follow_ups` says what was read).
//!
//! Skipped (with a message) when ibsim or PostgreSQL's server binaries are missing, unless
//! `HOSTPING_REQUIRE_IBSIM` / `HOSTPING_REQUIRE_POSTGRES` are set, as `./test.sh` does.

mod common;

use common::ibsim::{have_ibsim, Driven};
use common::job::{job_verdict, now_ms, post_healthy_run, register, sleep_past, token};
use common::postgres::{Collector, Postgres};
use common::{probe_tokens_file, sim_report, temp_dir, tokens_file, wait_until};
use serde_json::{json, Value};
use std::time::Duration;

/// The job: node1 on leaf-1, node3 on leaf-2; its route crosses one spine each way.
const NODES: &str = "node[1,3]";
/// The sampler's name at the collector.
const SAMPLER: &str = "s1";
/// Symbol errors ibsim sets on a port: ten times `ibqueryerrors`' threshold.
const ERRORS: u64 = 100;

/// The first whole second after now.
fn next_second() -> i64 {
    now_ms() / 1000 + 1
}

/// Sets a switch port's symbol error counter through ibsim's console.
fn set_symbol_errors(fabric: &mut Driven, switch: &str, port: u64, count: u64) {
    fabric.run(&format!(
        "echo 'PerformanceSet \"{switch}\"[{port}] PortCounters.SymbolErrorCounter={count}' >&7; \
         sleep 0.3"
    ));
}

/// A hop of a route: the switch, the port entered, the port left.
type Hop = (String, u64, u64);

/// A hop of `fabric route --format json`.
fn hop(h: &Value) -> Hop {
    (
        h["description"].as_str().unwrap().to_string(),
        h["in_port"].as_u64().unwrap(),
        h["out_port"].as_u64().unwrap(),
    )
}

/// `hostping job` over the window; its exit status and its JSON.
fn job(url: &str, since: i64, until: i64) -> (Option<i32>, Value) {
    job_with(url, since, until, &[])
}

/// `hostping job` over the window with `extra` arguments; its exit status and its JSON.
fn job_with(url: &str, since: i64, until: i64, extra: &[&str]) -> (Option<i32>, Value) {
    job_verdict(NODES, url, since, until, extra)
}

/// The components culprits (or `not_the_jobs`) name.
fn components(culprits: &Value) -> Vec<&str> {
    culprits
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["component"].as_str())
        .collect()
}

/// The report's summary of `port`.
fn port<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["port"] == name)
        .unwrap_or_else(|| panic!("no port {name} in {report}"))
}

/// The fabric as the subnet manager brought it up (its cabling `fabric.topo`, its
/// forwarding tables `tables.json`) and the job's route both ways as the switches forward
/// it: each hop's switch, port entered and port left; there leaf-1, a spine, leaf-2.
fn job_route(fabric: &mut Driven) -> (Vec<Hop>, Vec<Hop>) {
    fabric.run(
        "\"$HOSTPING\" fabric discover --format ibnetdiscover > fabric.topo && \
         \"$HOSTPING\" fabric discover --format json > nodes.json && \
         \"$HOSTPING\" fabric route --dump -o tables.json",
    );
    let nodes = fabric.read_json("nodes.json");
    let lid = |ca: &str| -> u64 {
        let nodes = nodes["nodes"].as_array().unwrap();
        let found = nodes.iter().find(|n| n["description"] == ca);
        found.unwrap_or_else(|| panic!("no CA `{ca}` in {nodes:?}"))["lid"]
            .as_u64()
            .unwrap()
    };
    let (a, b) = (lid("node1 mlx5_0"), lid("node3 mlx5_0"));
    fabric.run(&format!(
        "\"$HOSTPING\" fabric route --from {a} --to {b} --format json > there.json && \
         \"$HOSTPING\" fabric route --from {b} --to {a} --format json > back.json"
    ));
    let hops = |file: &str| -> Vec<Hop> {
        let route = fabric.read_json(file);
        route["hops"].as_array().unwrap().iter().map(hop).collect()
    };
    let (there, back) = (hops("there.json"), hops("back.json"));
    assert_eq!(there.len(), 3, "{there:?}");
    assert!(there[1].0.starts_with("spine-"), "{there:?}");
    assert_eq!(there[2].0, "leaf-2", "{there:?}");
    (there, back)
}

#[test]
fn an_error_on_the_jobs_route_is_the_network_and_one_off_it_is_not_the_jobs() {
    if !have_ibsim() {
        return;
    }
    let dir = temp_dir("job-ibsim");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let mut fabric = Driven::start("job-tree.net", &dir);
    let (there, back) = job_route(&mut fabric);
    // leaf-1, a spine, leaf-2.
    let (spine, spine_in, spine_out) = there[1].clone();
    let (leaf2, leaf2_in, _) = there[2].clone();
    // The switch ports the job's route crosses, either way.
    let on_route: Vec<String> = there
        .iter()
        .chain(&back)
        .flat_map(|(s, i, o)| [format!("{s}/{i}"), format!("{s}/{o}")])
        .collect();
    // Off the route: node2's cable beside node1 on leaf-1, and the route's spine's port
    // to leaf-3 (no route between leaf-1 and leaf-2 enters leaf-3).
    let off_route = ["leaf-1/2".to_string(), format!("{spine}/3")];
    assert!(
        off_route.iter().all(|p| !on_route.contains(p)),
        "{on_route:?}"
    );

    // The collector knows the fabric and the tables just read; the job's hosts registered
    // their RNIC by its device, and each ran a healthy check.
    let names = ["node1", "node3", SAMPLER];
    let tokens: Vec<(String, String)> = names.iter().map(|n| (n.to_string(), token(n))).collect();
    let pairs: Vec<(&str, &str)> = tokens
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    let path = |f: &str| dir.join(f).to_str().unwrap().to_string();
    let c = Collector::start(
        &pg,
        &tokens_file(&dir, &pairs),
        &[
            "--fabric",
            &path("fabric.topo"),
            "--routes",
            &path("tables.json"),
        ],
    );
    let url = format!("http://{}", c.addr);
    for host in ["node1", "node3"] {
        register(c.addr, host, "mlx5_0");
    }
    let sweep = format!(
        "\"$HOSTPING\" fabric sample --once --format json --collector {url} --token {} \
         --name {SAMPLER} >> sweeps.jsonl",
        token(SAMPLER)
    );

    // Before the window: a baseline sweep, then a steady one.
    fabric.run(&sweep);
    std::thread::sleep(Duration::from_millis(1100));
    fabric.run(&sweep);
    let since = next_second();
    sleep_past(since);
    let report = sim_report(&[]);
    for host in ["node1", "node3"] {
        post_healthy_run(c.addr, host, &report);
    }

    // In the window, the error on the two ports off the job's route.
    set_symbol_errors(&mut fabric, "leaf-1", 2, ERRORS);
    set_symbol_errors(&mut fabric, &spine, 3, ERRORS);
    fabric.run(&sweep);
    let until = next_second();
    sleep_past(until);
    let (status, report) = job(&url, since, until);
    assert_eq!(report["nodes"], json!(["node1", "node3"]), "{report}");
    assert!(components(&report["culprits"]).is_empty(), "{report}");
    // Found, and not the job's: each named by its cable.
    let found = components(&report["not_the_jobs"]);
    let leaf3_cable = "leaf-3/".to_string() + if spine == "spine-1" { "7" } else { "8" };
    for cable in ["leaf-1/2", leaf3_cable.as_str()] {
        assert!(
            found.contains(&cable),
            "{cable} not in not_the_jobs: {report}"
        );
    }
    for p in &off_route {
        assert_eq!(port(&report, p)["on_job_route"], false, "{p}: {report}");
        assert!(
            port(&report, p)["errors_per_s"].as_f64().unwrap() > 0.0,
            "{report}"
        );
    }
    // The collector's routes are the switches' own: every port of the route read from
    // them is on the job's route, with no error yet.
    for p in &on_route {
        assert_eq!(port(&report, p)["on_job_route"], true, "{p}: {report}");
        assert_eq!(port(&report, p)["errors_per_s"], 0.0, "{p}: {report}");
    }
    // No pair was probed (no agent runs here): nothing faulty, not all judged.
    assert_eq!(report["verdict"], "inconclusive", "{report}");
    assert_eq!(status, Some(3), "{report}");
    assert!(
        report["not_judged"]
            .to_string()
            .contains("no RNIC-to-RNIC pair was probed"),
        "{report}"
    );

    // The same error on the spine's port to leaf-2, on the job's route: the network,
    // naming that port's cable by its lower end, leaf-2's port (DESIGN 4.6).
    set_symbol_errors(&mut fabric, &spine, spine_out, ERRORS);
    fabric.run(&sweep);
    let until = next_second();
    sleep_past(until);
    let (status, report) = job(&url, since, until);
    assert_eq!(report["verdict"], "network", "{report}");
    assert_eq!(status, Some(1), "{report}");
    let culprit = &report["culprits"][0];
    let cable = format!("{leaf2}/{leaf2_in}");
    assert_eq!(culprit["component"], cable.as_str(), "{report}");
    assert_eq!(
        (culprit["layer"].as_str(), culprit["cause"].as_str()),
        (Some("fabric"), Some("link_errors")),
        "{report}"
    );
    assert!(
        !components(&report["culprits"]).contains(&"leaf-1/2"),
        "{report}"
    );
    assert!(
        components(&report["not_the_jobs"]).contains(&"leaf-1/2"),
        "{report}"
    );
    let raised = port(&report, &format!("{spine}/{spine_out}"));
    assert_eq!(raised["on_job_route"], true, "{report}");
    // The spine's port that route enters by is on it too, and clean.
    assert_eq!(
        port(&report, &format!("{spine}/{spine_in}"))["errors_per_s"],
        0.0
    );
}

/// The probe token of the collector's probe-tokens file.
const OPS: &str = "tok-ops-0123456789abcdef";
/// Between the running sampler's sweeps: long enough that the job's window falls between
/// two of them, so that no port has counters in it.
const PERIOD_S: u64 = 20;

/// A port of the job's route that no sweep covered in the window: the verdict without
/// `--probe` cannot judge it; with `--probe` the collector asks the running sampler that
/// reads it (through the answer of its next post) to read it now, and a cable erring as
/// it is read is the job's culprit, with the read listed in `follow_ups`.
#[test]
fn with_probe_a_route_port_no_sweep_covered_is_read_now_through_its_sampler() {
    if !have_ibsim() {
        return;
    }
    let dir = temp_dir("job-ibsim-read");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let mut fabric = Driven::start("job-tree.net", &dir);
    let (there, _) = job_route(&mut fabric);
    let (spine, _, spine_out) = there[1].clone();
    let (leaf2, leaf2_in, _) = there[2].clone();
    let raised = format!("{spine}/{spine_out}");

    let names = ["node1", "node3", SAMPLER];
    let tokens: Vec<(String, String)> = names.iter().map(|n| (n.to_string(), token(n))).collect();
    let pairs: Vec<(&str, &str)> = tokens
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    let path = |f: &str| dir.join(f).to_str().unwrap().to_string();
    let probe_tokens = probe_tokens_file(&dir, OPS);
    let c = Collector::start(
        &pg,
        &tokens_file(&dir, &pairs),
        &[
            "--fabric",
            &path("fabric.topo"),
            "--routes",
            &path("tables.json"),
            "--probe-tokens",
            probe_tokens.to_str().unwrap(),
        ],
    );
    let url = format!("http://{}", c.addr);
    for host in ["node1", "node3"] {
        register(c.addr, host, "mlx5_0");
    }

    // A sampler that keeps running, sweeping every PERIOD_S (its first sweep is each port's
    // baseline); bounded, should the test stop before it ends it.
    fabric.run(&format!(
        "\"$HOSTPING\" fabric sample --hz {} --duration 3m --format json --collector {url} \
         --token {} --name {SAMPLER} > sampler.jsonl 2> sampler.log & echo $! > sampler.pid",
        1.0 / PERIOD_S as f64,
        token(SAMPLER)
    ));
    wait_until("the sampler's first sweep", Duration::from_secs(60), || {
        pg.count("fabric_sweeps") >= 1
    });
    let since = next_second();
    sleep_past(since);
    let report = sim_report(&[]);
    for host in ["node1", "node3"] {
        post_healthy_run(c.addr, host, &report);
    }
    // The spine's port to leaf-2 errs from now on, 100 symbol errors a second (a failing
    // cable keeps erring), for longer than the test runs.
    fabric.run(&format!(
        "(for i in $(seq 1 600); do echo 'PerformanceSet \"{spine}\"[{spine_out}] \
         PortCounters.SymbolErrorCounter='$((i * 20)) >&7; sleep 0.2; done) \
         > /dev/null 2>&1 &"
    ));
    let until = since + 2;
    sleep_past(until);

    // Without --probe: no sweep fell in the window, so that port has no counters there and
    // is not judged (nor is any other: no pair was probed either).
    let (status, report) = job(&url, since, until);
    let ports = report["ports"].as_array().unwrap();
    assert!(
        ports.iter().all(|p| p["port"] != raised.as_str()),
        "{raised} judged without counters: {report}"
    );
    assert_eq!(report["verdict"], "inconclusive", "{report}");
    assert_eq!(status, Some(3), "{report}");
    assert_eq!(report["follow_ups"], json!([]), "{report}");

    // With --probe: read now by the sampler, at its next post; the erring port's cable,
    // named by its lower end (DESIGN 4.6), is the network's culprit.
    let (status, report) = job_with(&url, since, until, &["--probe", "--token", OPS]);
    let follow_ups = report["follow_ups"].as_array().unwrap();
    let read = follow_ups
        .iter()
        .find(|f| f["kind"] == "ports" && f["target"].as_str().unwrap().contains(&raised))
        .unwrap_or_else(|| panic!("{raised} not read: {report}"));
    let outcome = read["outcome"].as_str().unwrap();
    assert!(
        outcome.starts_with(&format!("read now by sampler {SAMPLER}: ")),
        "{read}"
    );
    // `spine-1/2 100 symbol errors, ... in 1.0 s`: at least a second of 100 a second, less
    // the counter's steps of 20 that straddle the read's ends.
    let errors: u64 = outcome
        .split(&format!("{raised} "))
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of {raised} in {read}"));
    assert!(errors >= 60, "{read}");
    // The port's cable, named by its lower end as the culprit is.
    let why = read["why"].as_str().unwrap();
    assert!(
        why.starts_with(&format!(
            "the job's routes cross {leaf2}/{leaf2_in}, and no sampler's counters"
        )),
        "{read}"
    );
    assert_eq!(report["verdict"], "network", "{report}");
    assert_eq!(status, Some(1), "{report}");
    let culprit = &report["culprits"][0];
    assert_eq!(
        culprit["component"],
        format!("{leaf2}/{leaf2_in}").as_str(),
        "{report}"
    );
    assert_eq!(culprit["cause"], "link_errors", "{report}");
    // Its evidence says the count came after the window, never as the window's own.
    assert!(
        culprit["evidence"]
            .as_str()
            .unwrap()
            .contains("read now as a follow-up: no sampler read it in the window"),
        "{culprit}"
    );
    let judged = port(&report, &raised);
    assert_eq!(judged["state"], "errors", "{report}");
    assert!(judged["errors_per_s"].as_f64().unwrap() >= 10.0, "{report}");
    // Every port of the read was the sampler's: none is said unread.
    for f in follow_ups.iter().filter(|f| f["kind"] == "ports") {
        let outcome = f["outcome"].as_str().unwrap();
        assert!(!outcome.contains("not read"), "{f}");
        assert!(!outcome.contains("no read arrived"), "{f}");
    }
    let log = std::fs::read_to_string(dir.join("sampler.log")).unwrap_or_default();
    assert!(log.contains("the collector asked for"), "{log}");
    fabric.run("kill $(cat sampler.pid)");
}
