//! Fleet baselines, slow hosts, status and causes on a real PostgreSQL (the collector's
//! harness, `common::postgres`), and `hostping fleet` reading them: a fleet of virtual
//! dgx-a100s, one of them slow on one path by less than Abnormal_th (its GPU0 link keeps 70 %
//! of its capacity: rnic0 -> gpu0 loses about 12 %, and no run flags it), one without a
//! baseline of its own (its reports judged relatively, as a real host's without a baseline
//! file are), one with a failed link; then the same with real agents on virtual hosts. The expected baselines are computed here
//! from the runs sent, by the definitions, not by the collector's code.

mod common;

use common::postgres::{causes, get, post, Collector, Postgres};
use common::{agent, hostping, stdout, temp_dir, wait_until};
use fleet_api::read::{
    CauseHosts, FleetStatus, HostBaseline, HostSummary, KindBaseline, SlowHost, Source, Verdict,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn token(host: &str) -> String {
    format!("token-of-{host}-0123456789")
}

fn tokens_file(dir: &Path, hosts: &[&str]) -> PathBuf {
    let file = dir.join("tokens");
    let text: String = hosts
        .iter()
        .map(|h| format!("{h} {}\n", token(h)))
        .collect();
    std::fs::write(&file, text).unwrap();
    file
}

/// `runs` real reports of the virtual dgx-a100 with `seed` and `faults`, oldest first.
fn reports(runs: u32, seed: u64, faults: &[&str]) -> Vec<Value> {
    let runs = runs.to_string();
    let seed = seed.to_string();
    let mut args = vec![
        "check", "--sim", "dgx-a100", "--format", "json", "--runs", &runs, "--seed", &seed,
    ];
    for f in faults {
        args.extend(["--inject", f]);
    }
    let out = hostping(&args);
    // One run is one pretty document; several are JSON Lines (DESIGN 4.3).
    let text = stdout(&out);
    let docs: Vec<Value> = serde_json::Deserializer::from_str(&text)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(docs.len().to_string(), runs);
    docs
}

/// A report as a host without a baseline of its own would send it: judged relatively (line
/// rate and peers), so its paths carry no baseline values of the host's own.
fn without_own_baseline(mut report: Value) -> Value {
    report["baseline"] = "relative".into();
    for p in report["paths"].as_array_mut().unwrap() {
        p["baseline_latency_us"] = Value::Null;
        p["baseline_bandwidth_gbps"] = Value::Null;
    }
    report
}

/// `answer` read into the read API's type for it (`fleet_api::read`, what `hostping fleet`
/// reads) and written back: the same JSON, so the type holds every field the collector sent.
fn typed<T: Serialize + DeserializeOwned>(answer: &Value) -> T {
    let t: T = serde_json::from_value(answer.clone()).unwrap_or_else(|e| panic!("{e}: {answer}"));
    assert_eq!(&serde_json::to_value(&t).unwrap(), answer);
    t
}

fn now_ms() -> i64 {
    model::time::unix_ms(std::time::SystemTime::now())
}

/// The median by its definition (the middle of the sorted values, or the mean of the two).
fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    assert!(n > 0);
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn mad(values: &[f64]) -> f64 {
    let m = median(values);
    median(&values.iter().map(|x| (x - m).abs()).collect::<Vec<_>>())
}

type PathKey = (String, String);

/// Per host and path, the bandwidths and latencies that describe a healthy idle host, in
/// the order sent: idle runs, measured paths that were not abnormal, from the last 9 runs
/// that gave any (the collector's documented HOST_RUNS).
fn host_values(runs: &[Value]) -> BTreeMap<PathKey, (Vec<f64>, Vec<f64>)> {
    let sets: Vec<Vec<(PathKey, f64, f64)>> = runs
        .iter()
        .filter(|r| r["mode"] == "idle")
        .map(|r| {
            r["paths"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| {
                    p["status"] != "abnormal" && p["error"].is_null() && p["unavailable"] != true
                })
                .filter_map(|p| {
                    let key = (
                        p["rnic"].as_str().unwrap().to_owned(),
                        p["endpoint"].as_str().unwrap().to_owned(),
                    );
                    Some((
                        key,
                        p["bandwidth_gbps"].as_f64()?,
                        p["latency_us"].as_f64()?,
                    ))
                })
                .collect()
        })
        .filter(|set: &Vec<_>| !set.is_empty())
        .collect();
    let mut out: BTreeMap<PathKey, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for set in &sets[sets.len().saturating_sub(9)..] {
        for (key, bw, lat) in set {
            let e = out.entry(key.clone()).or_default();
            e.0.push(*bw);
            e.1.push(*lat);
        }
    }
    out
}

/// One path of a fleet baseline: (median, MAD) of the hosts' medians of bandwidth and of
/// latency, the hosts, the runs.
type Expected = ((f64, f64), (f64, f64), usize, usize);

/// Per path with 3 hosts or more, its expected fleet baseline.
fn expected_fleet(fleet: &BTreeMap<String, Vec<Value>>) -> BTreeMap<PathKey, Expected> {
    let mut per_path: BTreeMap<PathKey, (Vec<f64>, Vec<f64>, usize)> = BTreeMap::new();
    for runs in fleet.values() {
        for (key, (bw, lat)) in host_values(runs) {
            let e = per_path.entry(key).or_default();
            e.0.push(median(&bw));
            e.1.push(median(&lat));
            e.2 += bw.len();
        }
    }
    per_path
        .into_iter()
        .filter(|(_, (bw, _, _))| bw.len() >= 3)
        .map(|(k, (bw, lat, runs))| {
            (
                k,
                (
                    (median(&bw), mad(&bw)),
                    (median(&lat), mad(&lat)),
                    bw.len(),
                    runs,
                ),
            )
        })
        .collect()
}

fn close(a: &Value, b: f64) -> bool {
    a.as_f64()
        .is_some_and(|a| (a - b).abs() <= 1e-9 * b.abs().max(1.0))
}

fn path_of<'a>(paths: &'a Value, rnic: &str, endpoint: &str) -> &'a Value {
    paths
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["rnic"] == rnic && p["endpoint"] == endpoint)
        .unwrap_or_else(|| panic!("no path {rnic}->{endpoint} in {paths}"))
}

/// `hostping fleet ARGS --collector URL`: exit status and stdout.
fn fleet(url: &str, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["fleet"];
    all.extend_from_slice(args);
    all.extend(["--collector", url]);
    let out = hostping(&all);
    (
        out.status.code().unwrap(),
        stdout(&out),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn fleet_json(url: &str, args: &[&str]) -> (i32, Value) {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    let (code, out, err) = fleet(url, &all);
    (
        code,
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}")),
    )
}

/// Posts `runs` of `host` to the collector, oldest first, one a second, the last started at
/// `last_started_unix_ms`; each must be stored (201).
fn post_runs(
    addr: std::net::SocketAddr,
    host: &str,
    rack: Option<&str>,
    runs: &[Value],
    last_started_unix_ms: i64,
) {
    let n = runs.len() as i64;
    for (i, report) in runs.iter().enumerate() {
        let body = json!({"host": host, "id": i + 1, "trigger": "idle",
                          "started_unix_ms": last_started_unix_ms - (n - 1 - i as i64) * 1_000,
                          "instance": "0123456789abcdef0123456789abcdef",
                          "rack": rack, "report": report});
        let (status, answer) = post(
            addr,
            Some(&token(host)),
            &serde_json::to_vec(&body).unwrap(),
        );
        assert_eq!(status, 201, "{answer}");
    }
}

#[test]
fn baselines_slow_hosts_status_and_causes_from_a_fleet_of_runs() {
    let dir = temp_dir("fleet-baselines");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let names = [
        "node-1",
        "node-2",
        "node-3",
        "node-4",
        "node-slow",
        "node-bare",
        "node-broken",
    ];
    let collector = Collector::start(&pg, &tokens_file(&dir, &names), &[]);
    let addr = collector.addr;
    let url = format!("http://{addr}");
    let mut fleet_runs: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for (i, name) in names.iter().enumerate() {
        let seed = i as u64 + 1;
        let runs = match *name {
            "node-slow" => reports(9, seed, &["degrade:gpu0--lsw0:0.7"]),
            "node-bare" => reports(9, seed, &[])
                .into_iter()
                .map(without_own_baseline)
                .collect(),
            "node-broken" => reports(1, seed, &["degrade:gpu4--lsw4:0.3"]),
            // More runs than a host keeps (9): its oldest sample sets must be dropped.
            _ => reports(12, seed, &[]),
        };
        fleet_runs.insert(name.to_string(), runs);
    }
    // No run of the slow host is flagged: it is under Abnormal_th.
    assert!(fleet_runs["node-slow"].iter().all(|r| r["healthy"] == true));
    assert!(fleet_runs["node-broken"][0]["healthy"] == false);
    let start = now_ms() - 60_000;
    for (name, runs) in &fleet_runs {
        let rack = format!("r{}", name.len() % 2);
        post_runs(addr, name, Some(&rack), runs, start - 1_000);
    }

    // A host keeps the sample sets of its last 9 idle runs: the 12-run hosts dropped 3.
    assert_eq!(
        pg.scalar("SELECT max(n) FROM (SELECT count(*) AS n FROM host_samples GROUP BY host_id) c"),
        "9"
    );

    // The collector's background refresh takes the new values without any read asking.
    wait_until("the background refresh", Duration::from_secs(30), || {
        pg.scalar("SELECT count(*) FROM hosts WHERE paths_version <> baseline_version") == "0"
            && pg.count("fleet_baselines") == 40
    });

    // The kind's baseline: the median and MAD of the hosts' medians, each host one vote.
    let expected = expected_fleet(&fleet_runs);
    let (status, kind) = get(addr, "/api/kinds/dgx-a100/baseline");
    assert_eq!(status, 200, "{kind}");
    let batch: Vec<&str> = kind["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    let mut all = names.to_vec();
    all.sort();
    assert_eq!(batch, all);
    let paths = kind["paths"].as_array().unwrap();
    assert_eq!(paths.len(), expected.len());
    assert_eq!(paths.len(), 40, "every path of a dgx-a100");
    for ((rnic, endpoint), ((bw, bw_mad), (lat, lat_mad), hosts, runs)) in &expected {
        let p = path_of(&kind["paths"], rnic, endpoint);
        assert!(close(&p["bandwidth_gbps"], *bw), "{p} vs {bw}");
        assert!(close(&p["bandwidth_mad_gbps"], *bw_mad), "{p} vs {bw_mad}");
        assert!(close(&p["latency_us"], *lat), "{p} vs {lat}");
        assert!(close(&p["latency_mad_us"], *lat_mad), "{p} vs {lat_mad}");
        assert_eq!(
            (&p["hosts"], &p["runs"]),
            (&json!(hosts), &json!(runs)),
            "{p}"
        );
    }
    // The broken host's abnormal paths are left out of the baseline, its others count.
    let broken = &fleet_runs["node-broken"][0];
    let abnormal = broken["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["status"] == "abnormal")
        .unwrap();
    let p = path_of(
        &kind["paths"],
        abnormal["rnic"].as_str().unwrap(),
        abnormal["endpoint"].as_str().unwrap(),
    );
    assert_eq!(p["hosts"], 6);
    assert_eq!(path_of(&kind["paths"], "rnic0", "mem0")["hosts"], 7);
    assert_eq!(get(addr, "/api/kinds/no-such-kind/baseline").0, 404);
    let kind_typed: KindBaseline = typed(&kind);
    assert_eq!(
        (
            kind_typed.kind.as_str(),
            kind_typed.hosts_of_kind,
            kind_typed.paths.len()
        ),
        ("dgx-a100", 7, 40)
    );

    // The host without a baseline of its own is judged against the fleet's.
    let (status, bare) = get(addr, "/api/hosts/node-bare/baseline");
    assert_eq!(status, 200, "{bare}");
    assert_eq!(
        (&bare["host"], &bare["kind"], &bare["rack"]),
        (&json!("node-bare"), &json!("dgx-a100"), &json!("r1"))
    );
    let latest_bare = fleet_runs["node-bare"].last().unwrap();
    for p in bare["paths"].as_array().unwrap() {
        let key = (
            p["rnic"].as_str().unwrap().to_owned(),
            p["endpoint"].as_str().unwrap().to_owned(),
        );
        let ((bw, bw_mad), (lat, _), hosts, runs) = expected[&key];
        assert_eq!(p["source"], "fleet", "{p}");
        assert!(close(&p["bandwidth_gbps"], bw), "{p}");
        assert!(close(&p["bandwidth_mad_gbps"], bw_mad), "{p}");
        assert!(close(&p["latency_us"], lat), "{p}");
        assert_eq!((&p["hosts"], &p["runs"]), (&json!(hosts), &json!(runs)));
        let sent = path_of(&latest_bare["paths"], &key.0, &key.1);
        assert_eq!(p["measured_bandwidth_gbps"], sent["bandwidth_gbps"]);
        let deficit = (bw - sent["bandwidth_gbps"].as_f64().unwrap()) / bw * 100.0;
        assert!(
            (p["deficit_pct"].as_f64().unwrap() - deficit).abs() < 0.01,
            "{p}"
        );
        assert_eq!(p["verdict"], "normal", "{p}");
    }
    let bare_typed: HostBaseline = typed(&bare);
    assert!(bare_typed.paths.iter().all(|p| p.source == Source::Fleet));
    assert_eq!(bare_typed.rack.as_deref(), Some("r1"));
    // A host with its own (simulated) baseline is judged against it.
    let (_, own) = get(addr, "/api/hosts/node-2/baseline");
    let own_typed: HostBaseline = typed(&own);
    assert!(own_typed.paths.iter().all(|p| p.source == Source::Own));
    let sent = fleet_runs["node-2"].last().unwrap();
    for p in own["paths"].as_array().unwrap() {
        assert_eq!(p["source"], "own", "{p}");
        let s = path_of(
            &sent["paths"],
            p["rnic"].as_str().unwrap(),
            p["endpoint"].as_str().unwrap(),
        );
        assert_eq!(p["bandwidth_gbps"], s["baseline_bandwidth_gbps"]);
        assert_eq!(p["bandwidth_mad_gbps"], Value::Null);
        assert_eq!(p["verdict"], "normal", "{p}");
    }
    // The slow host's latest run: rnic0 -> gpu0 slow, under Abnormal_th.
    let (_, slow_host) = get(addr, "/api/hosts/node-slow/baseline");
    let p = path_of(&slow_host["paths"], "rnic0", "gpu0");
    assert_eq!(p["verdict"], "slow", "{p}");
    let deficit = p["deficit_pct"].as_f64().unwrap();
    assert!((5.0..20.0).contains(&deficit), "{p}");
    let slow_paths: Vec<&Value> = slow_host["paths"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["verdict"] != "normal")
        .collect();
    assert_eq!(slow_paths.len(), 1, "{slow_paths:?}");
    let slow_typed: HostBaseline = typed(&slow_host);
    assert_eq!(
        slow_typed
            .paths
            .iter()
            .filter(|p| p.verdict == Verdict::Slow)
            .count(),
        1
    );
    // The broken host's failed paths are abnormal against its baseline.
    let (_, broken_judged) = get(addr, "/api/hosts/node-broken/baseline");
    let p = path_of(
        &broken_judged["paths"],
        abnormal["rnic"].as_str().unwrap(),
        abnormal["endpoint"].as_str().unwrap(),
    );
    assert_eq!(p["verdict"], "abnormal", "{p}");
    assert_eq!(get(addr, "/api/hosts/node-9/baseline").0, 404);

    // Slow hosts: only the slow one, with the right path; the broken host has too few
    // runs to be called slow (its failure is a cause, below).
    let (status, ranked) = get(addr, "/api/fleet/slow-hosts");
    assert_eq!(status, 200, "{ranked}");
    let ranked_names: Vec<&str> = ranked
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["host"].as_str().unwrap())
        .collect();
    assert_eq!(ranked_names, ["node-slow"], "{ranked}");
    let ranked_typed: Vec<SlowHost> = typed(&ranked);
    assert_eq!(ranked_typed[0].paths.len(), 1);
    let top = &ranked[0];
    let slow_path_keys: Vec<(String, String, String)> = top["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["rnic"].as_str().unwrap().to_owned(),
                p["endpoint"].as_str().unwrap().to_owned(),
                p["metric"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        slow_path_keys,
        [(
            "rnic0".to_owned(),
            "gpu0".to_owned(),
            "bandwidth".to_owned()
        )]
    );
    let sp = &top["paths"][0];
    let (bw_values, _) =
        &host_values(&fleet_runs["node-slow"])[&("rnic0".to_owned(), "gpu0".to_owned())];
    assert!(
        close(
            &sp["host_value"],
            (median(bw_values) * 1000.0).round() / 1000.0
        ),
        "{sp}"
    );
    assert_eq!((&sp["runs"], &sp["runs_worse"]), (&json!(9), &json!(9)));
    assert!(sp["deficit_pct"].as_f64().unwrap() > 5.0, "{sp}");
    assert_eq!(top["score"], sp["deficit_pct"]);
    let evidence = top["evidence"].as_str().unwrap();
    assert!(evidence.contains("bandwidth rnic0->gpu0"), "{evidence}");
    assert!(
        evidence.contains("9 of its last 9 runs below"),
        "{evidence}"
    );
    assert_eq!(get(addr, "/api/fleet/slow-hosts?kind=other").1, json!([]));
    assert_eq!(get(addr, "/api/fleet/slow-hosts?limit=0").0, 400);

    // Status and causes.
    let (_, status) = get(addr, "/api/fleet/status");
    assert_eq!(
        (
            &status["hosts"],
            &status["healthy"],
            &status["unhealthy"],
            &status["stale"]
        ),
        (&json!(7), &json!(6), &json!(1), &json!(0)),
        "{status}"
    );
    let total_runs: usize = fleet_runs.values().map(Vec::len).sum();
    assert_eq!(status["runs"], total_runs);
    let status_typed: FleetStatus = typed(&status);
    assert_eq!(status_typed.stale_after_ms, analyze::fleet::STALE_AFTER_MS);
    assert!(status["last_ingest_unix_ms"].as_i64().unwrap() >= start);
    assert_eq!(
        status["kinds"],
        json!([{"kind": "dgx-a100", "kind_known": true, "hosts": 7, "unhealthy": 1, "stale": 0,
                "inconclusive": 0}])
    );
    let broken_causes = causes(broken);
    assert!(broken_causes.contains(&"link_failure".to_owned()));
    let status_causes: Vec<&str> = status["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            assert_eq!(c["hosts"], 1);
            c["cause"].as_str().unwrap()
        })
        .collect();
    let mut sorted = status_causes.clone();
    sorted.sort();
    assert_eq!(sorted, broken_causes);
    let (_, causes) = get(addr, "/api/fleet/causes");
    let failure = causes
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cause"] == "link_failure")
        .unwrap();
    assert_eq!(failure["count"], 1);
    let causes_typed: Vec<CauseHosts> = typed(&causes);
    assert!(causes_typed.iter().all(|c| c.count == c.hosts.len()));
    assert_eq!(failure["hosts"][0]["host"], "node-broken");
    assert_eq!(failure["hosts"][0]["rack"], "r1");
    let sent_failure = broken["diagnoses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["cause"] == "link_failure")
        .unwrap();
    assert_eq!(
        failure["hosts"][0]["diagnoses"][0]["links"],
        sent_failure["links"]
    );
    assert_eq!(
        failure["hosts"][0]["diagnoses"][0]["evidence"],
        sent_failure["evidence"]
    );

    // `hostping fleet`: the same answers as JSON, tables for people, exit 1 on findings.
    let (code, cli_status) = fleet_json(&url, &["status"]);
    assert_eq!(code, 1);
    for field in [
        "hosts",
        "healthy",
        "unhealthy",
        "inconclusive",
        "stale",
        "runs",
        "kinds",
        "causes",
    ] {
        assert_eq!(cli_status[field], status[field], "{field}");
    }
    let (code, cli_slow) = fleet_json(&url, &["slow"]);
    assert_eq!((code, &cli_slow), (1, &ranked));
    let (code, cli_slow) = fleet_json(&url, &["slow", "--kind", "other"]);
    assert_eq!((code, cli_slow), (0, json!([])));
    let (code, cli_causes) = fleet_json(&url, &["causes"]);
    assert_eq!((code, &cli_causes), (1, &causes));
    let (_, hosts) = get(addr, "/api/hosts");
    let hosts_typed: Vec<HostSummary> = typed(&hosts);
    assert!(hosts_typed
        .iter()
        .all(|h| h.kind_known == Some(true) && h.rack.is_some()));
    let (code, cli_hosts) = fleet_json(&url, &["hosts"]);
    assert_eq!((code, &cli_hosts), (1, &hosts));
    let (code, healthy_rack) = fleet_json(&url, &["hosts", "--rack", "r0", "--kind", "dgx-a100"]);
    let in_r0: Vec<&str> = healthy_rack
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["host"].as_str().unwrap())
        .collect();
    assert_eq!(in_r0, ["node-1", "node-2", "node-3", "node-4"]);
    assert_eq!(code, 0);
    let (_, by_cause) = fleet_json(&url, &["hosts", "--cause", "link_failure"]);
    assert_eq!(by_cause.as_array().unwrap().len(), 1);
    // A job's nodes as Slurm names them: the broken one among them is a finding.
    let host_names = |hosts: &Value| -> Vec<String> {
        hosts
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["host"].as_str().unwrap().to_string())
            .collect()
    };
    let (code, job) = fleet_json(&url, &["hosts", "--nodes", "node-[1-3],node-broken"]);
    assert_eq!(
        (code, host_names(&job)),
        (
            1,
            ["node-1", "node-2", "node-3", "node-broken"]
                .map(String::from)
                .to_vec()
        )
    );
    // Nodes the collector never heard from are not judged: named, and exit 3, not 0.
    let (code, out, err) = fleet(&url, &["hosts", "--nodes", "node-[1-2],node-[8-9]"]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        err.contains("2 of the nodes named have no run at")
            && err.contains("not judged: node-8, node-9"),
        "{err}"
    );
    assert_eq!(out.lines().count(), 1 + 2, "{out}");
    let (code, _, err) = fleet(&url, &["hosts", "--nodes", "node-[3-1]"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("hostlist `node-[3-1]`: the range `3-1` runs backwards"),
        "{err}"
    );
    let (code, cli_host) = fleet_json(&url, &["host", "node-bare"]);
    assert_eq!(code, 0);
    assert_eq!(cli_host["baseline"], bare);
    assert_eq!(cli_host["healthy"], true);
    let (code, cli_host) = fleet_json(&url, &["host", "node-slow"]);
    assert_eq!(code, 1, "a slow path is a finding");
    assert_eq!(cli_host["baseline"], slow_host);
    // The latest run's verdict and diagnoses, as the agent sent them.
    let (code, cli_broken) = fleet_json(&url, &["host", "node-broken"]);
    assert_eq!(code, 1, "an unhealthy host is a finding");
    assert_eq!(cli_broken["baseline"], broken_judged);
    assert_eq!(
        (
            &cli_broken["healthy"],
            &cli_broken["diagnoses"],
            &cli_broken["rack"]
        ),
        (&json!(false), &broken["diagnoses"], &json!("r1"))
    );

    let (_, table, _) = fleet(&url, &["status"]);
    assert!(
        table.starts_with(&format!(
            "collector {url}: 7 hosts, 6 healthy, 1 unhealthy, 0 inconclusive, 0 stale (no run for 15 min)\n"
        )),
        "{table}"
    );
    assert!(table.contains("dgx-a100"), "{table}");
    let (_, table, _) = fleet(&url, &["hosts"]);
    let header = table.lines().next().unwrap();
    assert!(header.starts_with("HOST"), "{table}");
    let broken_line = table
        .lines()
        .find(|l| l.starts_with("node-broken"))
        .unwrap();
    assert!(
        broken_line.contains("UNHEALTHY") && broken_line.contains("link_failure"),
        "{table}"
    );
    assert_eq!(table.lines().count(), 1 + names.len());
    let (_, table, _) = fleet(&url, &["slow"]);
    assert!(
        table
            .lines()
            .nth(1)
            .unwrap()
            .trim_start()
            .starts_with("1  node-slow"),
        "{table}"
    );
    assert!(table.contains(evidence), "{table}");
    let (_, table, _) = fleet(&url, &["host", "node-slow"]);
    let row = table
        .lines()
        .find(|l| l.starts_with("rnic0") && l.contains(" gpu0 "))
        .unwrap();
    assert!(row.ends_with("slow"), "{table}");
    let (_, table, _) = fleet(&url, &["causes"]);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("link_failure") && l.contains("node-broken")),
        "{table}"
    );

    // Errors name the URL, exit 2.
    let (code, _, err) = fleet(&url, &["host", "node-9"]);
    assert_eq!(code, 2);
    assert!(
        err.contains(&format!(
            "the collector at {url}/api/hosts/node-9/baseline answered 404: no host node-9"
        )),
        "{err}"
    );
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let gone = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let (code, _, err) = fleet(&gone, &["status"]);
    assert_eq!(code, 2);
    assert!(
        err.contains(&format!(
            "cannot reach the collector at {gone}/api/fleet/status"
        )),
        "{err}"
    );
}

/// The report of a host whose agent judges with `abnormal_th` (its `[thresholds]`), as that
/// agent would send it: the thresholds in the report, and the paths more than Abnormal_th
/// below their own baseline marked abnormal.
fn judged_with(mut report: Value, abnormal_th: f64) -> Value {
    let th = model::Thresholds {
        abnormal_th,
        ..model::Thresholds::default()
    };
    report["thresholds"] = serde_json::to_value(th).unwrap();
    for p in report["paths"].as_array_mut().unwrap() {
        if let (Some(b), Some(reference)) = (
            p["bandwidth_gbps"].as_f64(),
            p["baseline_bandwidth_gbps"].as_f64(),
        ) {
            if (reference - b) / reference > abnormal_th {
                p["status"] = json!("abnormal");
            }
        }
    }
    report
}

#[test]
fn the_collector_judges_a_host_with_the_thresholds_its_runs_carry() {
    let dir = temp_dir("fleet-thresholds");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    // node-strict's agent calls 5 % below baseline abnormal, node-lenient's only 150 %; both
    // have rnic0 -> gpu0 about 12 % slow (GPU0's link keeps 70 %), node-default too, with
    // Hostping 5's 20 %.
    let names = [
        "node-1",
        "node-2",
        "node-3",
        "node-strict",
        "node-lenient",
        "node-default",
    ];
    let collector = Collector::start(&pg, &tokens_file(&dir, &names), &[]);
    let addr = collector.addr;
    let start = now_ms() - 60_000;
    for (i, name) in names.iter().enumerate() {
        let seed = i as u64 + 1;
        let slow = ["degrade:gpu0--lsw0:0.7"];
        let runs: Vec<Value> = match *name {
            "node-strict" => reports(9, seed, &slow)
                .into_iter()
                .map(|r| judged_with(r, 0.05))
                .collect(),
            "node-lenient" => reports(9, seed, &slow)
                .into_iter()
                .map(|r| judged_with(r, 1.5))
                .collect(),
            "node-default" => reports(9, seed, &slow),
            _ => reports(9, seed, &[]),
        };
        post_runs(addr, name, None, &runs, start);
    }
    // The host's summary keeps the thresholds of its latest run; a report without them
    // (node-default's carry them too: `check` writes the defaults) reads as the defaults.
    assert_eq!(
        pg.scalar(
            "SELECT latest_thresholds ->> 'abnormal_th' FROM hosts WHERE name = 'node-strict'"
        ),
        "0.05"
    );

    // The latest run judged again: abnormal for the strict host (12 % > 5 %), as its agent
    // said; slow for the host with the defaults (under 20 %, but beyond the fleet's spread).
    let verdict = |host: &str| {
        let (status, judged) = get(addr, &format!("/api/hosts/{host}/baseline"));
        assert_eq!(status, 200, "{judged}");
        path_of(&judged["paths"], "rnic0", "gpu0")["verdict"].clone()
    };
    assert_eq!(verdict("node-strict"), "abnormal");
    assert_eq!(verdict("node-default"), "slow");
    assert_eq!(verdict("node-lenient"), "normal");

    // Slow hosts: a deficit counts from a tenth of the host's own Abnormal_th, so the lenient
    // host's 12 % is no finding (its floor is 15 %), the default host's is (2 %). The strict
    // host's slow path is abnormal in its runs, a finding of each run, not a slow path.
    let (status, ranked) = get(addr, "/api/fleet/slow-hosts");
    assert_eq!(status, 200, "{ranked}");
    let ranked: Vec<SlowHost> = typed(&ranked);
    let ranked: Vec<&str> = ranked.iter().map(|h| h.host.as_str()).collect();
    assert_eq!(ranked, ["node-default"]);
}

#[test]
fn real_agents_make_the_fleet_baseline_and_the_slow_agent_is_ranked() {
    let dir = temp_dir("fleet-agents");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let names = ["node-a", "node-b", "node-c", "node-own", "node-slow"];
    let collector = Collector::start(&pg, &tokens_file(&dir, &names), &[]);
    let url = format!("http://{}", collector.addr);
    // node-own judges its runs against a recorded baseline (simulated) of its own.
    let baseline = dir.join("own.baseline.json");
    let out = hostping(&[
        "baseline",
        "--sim",
        "dgx-a100",
        "--runs",
        "3",
        "-o",
        baseline.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let config = dir.join("own.toml");
    std::fs::write(
        &config,
        format!(
            "[agent]\nbaseline = \"{}\"\nrack = \"r9\"\n",
            baseline.display()
        ),
    )
    .unwrap();
    let mut agents = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let db = dir.join(format!("{name}.db"));
        let seed = (i + 1).to_string();
        let token = token(name);
        let mut args = vec![
            "--time-scale",
            "600",
            "--seed",
            &seed,
            "--collector",
            &url,
            "--token",
            &token,
            "--name",
            name,
        ];
        match *name {
            "node-slow" => args.extend(["--inject", "degrade:gpu0--lsw0:0.7", "--rack", "r2"]),
            "node-own" => args.extend(["--config", config.to_str().unwrap()]),
            _ => args.extend(["--rack", "r1"]),
        }
        agents.push(agent(&db, &args, &[]));
    }
    // Enough runs from every agent for the slow ranking (at least 5 per path).
    wait_until("7 runs from every agent", Duration::from_secs(120), || {
        pg.scalar("SELECT coalesce(min(runs), 0) FROM hosts WHERE name LIKE 'node-%'")
            .parse::<i64>()
            .unwrap()
            >= 7
            && pg.count("hosts") == names.len() as i64
    });
    for a in &agents {
        a.signal(libc::SIGTERM);
    }
    for a in agents {
        assert!(a.wait_output().status.success());
    }

    let (code, ranked) = fleet_json(&url, &["slow"]);
    assert_eq!(code, 1);
    let ranked_names: Vec<&str> = ranked
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["host"].as_str().unwrap())
        .collect();
    assert_eq!(ranked_names, ["node-slow"], "{ranked}");
    assert_eq!(ranked[0]["rack"], "r2");
    let paths: Vec<(&str, &str, &str)> = ranked[0]["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["rnic"].as_str().unwrap(),
                p["endpoint"].as_str().unwrap(),
                p["metric"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(paths, [("rnic0", "gpu0", "bandwidth")], "{ranked}");

    // A simulated agent judges its runs against a simulated baseline of its own (node-own
    // against its recorded one); every path of a healthy agent is normal against it.
    let (code, a) = fleet_json(&url, &["host", "node-a"]);
    assert_eq!(code, 0, "{a}");
    let judged = a["baseline"]["paths"].as_array().unwrap();
    assert_eq!(judged.len(), 40);
    assert!(
        judged
            .iter()
            .all(|p| p["source"] == "own" && p["verdict"] == "normal"),
        "{a}"
    );
    assert_eq!(a["rack"], "r1");
    assert_eq!(a["baseline"]["run"]["baseline"], "simulated");
    let (_, own) = fleet_json(&url, &["host", "node-own"]);
    assert!(
        own["baseline"]["paths"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["source"] == "own"),
        "{own}"
    );
    assert_eq!(own["baseline"]["run"]["baseline"], "recorded");
    assert_eq!(own["rack"], "r9");
    // The slow agent's run is within Abnormal_th of its own baseline, but slow by the
    // fleet's spread of a run.
    let (code, slow) = fleet_json(&url, &["host", "node-slow"]);
    assert_eq!(code, 1);
    assert_eq!(slow["healthy"], true);
    let p = path_of(&slow["baseline"]["paths"], "rnic0", "gpu0");
    assert_eq!(
        (&p["source"], &p["verdict"]),
        (&json!("own"), &json!("slow")),
        "{p}"
    );
    let (_, kind) = get(collector.addr, "/api/kinds/dgx-a100/baseline");
    let mut batch: Vec<&str> = kind["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    batch.sort();
    assert_eq!(batch, names);
    // The fleet's rnic0 -> gpu0 is the healthy hosts' (one slow vote of five cannot move
    // the median below the healthy ones).
    let fleet_bw = path_of(&kind["paths"], "rnic0", "gpu0")["bandwidth_gbps"]
        .as_f64()
        .unwrap();
    let healthy_bw = path_of(&a["baseline"]["paths"], "rnic0", "gpu0")["measured_bandwidth_gbps"]
        .as_f64()
        .unwrap();
    assert!(
        (fleet_bw - healthy_bw).abs() / healthy_bw < 0.01,
        "{fleet_bw} vs {healthy_bw}"
    );
}
