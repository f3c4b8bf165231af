//! A real `hostping mesh` through the collector (DESIGN 4.6, issue 27): agents register
//! where they listen (`PUT /api/hosts/{host}/agent`, DESIGN 4.5's token rules), the
//! collector's `POST /api/mesh` is for probe-token holders only, and a node whose agent is
//! down is reported on its pairs while the others are kept. Simulated agents stand in where
//! no verbs are needed (their pair probes are refused: a simulated host has no RNIC to probe
//! from); the guest test (softroce.rs) runs the pairs on Soft-RoCE.

mod common;

use common::postgres::{client, free_port, get, post_to, Collector, Postgres};
use common::{agent, hostping, probe_tokens_file, stderr, temp_dir, tokens_file, wait_until};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

const NODE1: &str = "tok-node01-0123456789abcdef";
const NODE2: &str = "tok-node02-0123456789abcdef";
const NODE3: &str = "tok-node03-0123456789abcdef";
const OPS: &str = "probe-ops-0123456789abcdef";

/// `PUT /api/hosts/{host}/agent` with `token`: the status and the JSON answer.
fn register(
    addr: std::net::SocketAddr,
    host: &str,
    token: Option<&str>,
    body: &Value,
) -> (u16, Value) {
    let mut req = client().put(format!("http://{addr}/api/hosts/{host}/agent"));
    if let Some(t) = token {
        req = req.header("Authorization", format!("Bearer {t}"));
    }
    let mut resp = req
        .header("Content-Type", "application/json")
        .send(body.to_string().as_bytes())
        .unwrap();
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn mesh(addr: std::net::SocketAddr, token: Option<&str>, nodes: &[&str]) -> (u16, Value) {
    let body = serde_json::to_vec(&json!({"nodes": nodes, "duration_s": 0.2})).unwrap();
    post_to(addr, "/api/mesh", token, &body)
}

/// A simulated agent named `name`, registered with the collector at `url`.
fn sim_agent(dir: &Path, name: &str, token: &str, url: &str, probe_tokens: &Path) -> common::Agent {
    agent(
        &dir.join(format!("{name}.db")),
        &[
            "--time-scale",
            "600",
            "--name",
            name,
            "--collector",
            url,
            "--token",
            token,
            "--probe-tokens",
            probe_tokens.to_str().unwrap(),
        ],
        &[],
    )
}

#[test]
fn agents_register_and_a_mesh_reports_a_down_agent_on_its_pairs_and_keeps_the_others() {
    let dir = temp_dir("mesh-collector");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let tokens = tokens_file(
        &dir,
        &[("node01", NODE1), ("node02", NODE2), ("node03", NODE3)],
    );
    let probe_tokens = probe_tokens_file(&dir, OPS);
    let c = Collector::start(
        &pg,
        &tokens,
        &["--probe-tokens", probe_tokens.to_str().unwrap()],
    );
    let url = format!("http://{}", c.addr);

    // Registration: DESIGN 4.5's token rules, and a body that says what is wrong.
    let good = json!({"url": "http://127.0.0.1:1", "rnics": ["rnic0"]});
    assert_eq!(register(c.addr, "node03", None, &good).0, 401);
    let (code, body) = register(c.addr, "node03", Some(NODE1), &good);
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["error"],
        "the token belongs to host node01, not node03"
    );
    let (code, body) = register(
        c.addr,
        "node03",
        Some(NODE3),
        &json!({"url": "node03:9469", "rnics": ["rnic0"]}),
    );
    assert_eq!(code, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("url `node03:9469`"),
        "{body}"
    );
    // node03 registers an agent that is not running: nothing listens on its port.
    let down = format!("http://127.0.0.1:{}", free_port());
    let (code, body) = register(
        c.addr,
        "node03",
        Some(NODE3),
        &json!({"url": down, "rnics": ["rnic0", "rnic1", "rnic2", "rnic3"]}),
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["agent_url"], down.as_str());

    // Two agents register themselves at start, each under its own name and URL.
    let a1 = sim_agent(&dir, "node01", NODE1, &url, &probe_tokens);
    let a2 = sim_agent(&dir, "node02", NODE2, &url, &probe_tokens);
    let listed = || get(c.addr, "/api/agents").1;
    wait_until("both agents registered", Duration::from_secs(30), || {
        listed().as_array().is_some_and(|a| a.len() == 3)
    });
    let agents = listed();
    for (i, a) in [(0, &a1), (1, &a2)] {
        let entry = &agents[i];
        assert_eq!(entry["host"], format!("node0{}", i + 1));
        assert_eq!(entry["agent_url"], format!("http://{}", a.addr));
        assert_eq!(entry["rnics"], json!(["rnic0", "rnic1", "rnic2", "rnic3"]));
        // What a dgx-a100's links allow a job (DESIGN 4.8's `expected`): its four 200 Gb/s
        // RNICs across hosts, a GPU's Gen4 x16 link within one.
        let allows = &entry["expected_busbw_gbs"];
        assert_eq!(allows["across_hosts"], 100.0, "{entry}");
        let within = allows["within_host"].as_f64().unwrap();
        assert!((25.0..33.0).contains(&within), "{entry}");
    }
    // node03's was registered by hand, without it: not known.
    assert_eq!(
        agents[2]["expected_busbw_gbs"],
        json!({"across_hosts": null, "within_host": null})
    );
    let (code, body) = register(
        c.addr,
        "node03",
        Some(NODE3),
        &json!({"url": down, "rnics": ["rnic0"], "expected_busbw_gbs": {"across_hosts": -1.0}}),
    );
    assert_eq!(code, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("expected_busbw_gbs.across_hosts: -1"),
        "{body}"
    );

    // The hosts the collector lists (those that sent runs) carry their agent's URL.
    let node01 = || {
        get(c.addr, "/api/hosts")
            .1
            .as_array()
            .and_then(|hosts| hosts.iter().find(|h| h["host"] == "node01").cloned())
    };
    wait_until("node01's first run", Duration::from_secs(60), || {
        node01().is_some()
    });
    assert_eq!(
        node01().unwrap()["agent_url"],
        format!("http://{}", a1.addr)
    );

    // The mesh is for probe-token holders only; a host's token is not one.
    let nodes = ["node01", "node02", "node03"];
    assert_eq!(mesh(c.addr, None, &nodes).0, 401);
    assert_eq!(mesh(c.addr, Some(NODE1), &nodes).0, 401);
    let (code, body) = mesh(c.addr, Some(OPS), &["node01", "node09"]);
    assert_eq!(code, 404, "{body}");
    assert!(body["error"].as_str().unwrap().contains("node09"), "{body}");
    let (code, body) = mesh(c.addr, Some(OPS), &["node01"]);
    assert_eq!(code, 400, "{body}");

    // The CLI: every rail (4 rnics), a ring of the 3 hosts on each, never two RNICs of one
    // host; node03's pairs unreachable with its agent's error, the others answered by the
    // agents (a simulated host refuses to probe: failed, with its words), exit 1.
    let out = hostping(&[
        "mesh",
        "--nodes",
        "node[01-03]",
        "--collector",
        &url,
        "--token",
        OPS,
        "--duration",
        "0.2",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["simulated"], false);
    assert!(report["cover"]
        .as_str()
        .unwrap()
        .starts_with("per rail only"));
    let pairs = report["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 12, "{report:#}");
    for p in pairs {
        assert_ne!(p["a"]["host"], p["b"]["host"], "{p}");
        assert_eq!(p["a"]["rnic"], p["b"]["rnic"], "{p}");
        assert_eq!(p["route"], Value::Null, "{p}");
        assert!(p["route_reason"].as_str().is_some(), "{p}");
        let with_node03 = p["a"]["host"] == "node03" || p["b"]["host"] == "node03";
        let error = p["error"].as_str().unwrap_or_default();
        if with_node03 {
            assert_eq!(p["status"], "unreachable", "{p}");
            assert!(error.starts_with("node03's agent is unreachable: "), "{p}");
            assert!(error.contains(&down), "{p}");
        } else {
            assert_eq!(p["status"], "failed", "{p}");
            assert!(error.contains("pair probes need a real RNIC"), "{p}");
        }
    }
    let node03 = report["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["host"] == "node03")
        .unwrap();
    assert!(node03["error"].as_str().is_some(), "{node03}");

    // The table says the same for people.
    let out = hostping(&[
        "mesh",
        "--nodes",
        "node[01-03]",
        "--collector",
        &url,
        "--token",
        OPS,
        "--duration",
        "0.2",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("3 hosts, 12 pairs through"), "{text}");
    assert!(
        text.contains("0 abnormal, 4 failed, 8 unreachable"),
        "{text}"
    );
}

#[test]
fn without_probe_tokens_mesh_is_off_and_the_cli_says_so() {
    let dir = temp_dir("mesh-collector-off");
    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let tokens = tokens_file(&dir, &[("node01", NODE1)]);
    let c = Collector::start(&pg, &tokens, &[]);
    let (code, body) = mesh(c.addr, Some(OPS), &["node01", "node02"]);
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["error"],
        "mesh is off: start the collector with --probe-tokens FILE"
    );
    let out = hostping(&[
        "mesh",
        "--nodes",
        "node[01-02]",
        "--collector",
        &format!("http://{}", c.addr),
        "--token",
        OPS,
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("--collector: 403 from http://"), "{err}");
    assert!(err.contains("mesh is off"), "{err}");
    // Without a token the CLI refuses before asking.
    let out = hostping(&[
        "mesh",
        "--nodes",
        "a,b",
        "--collector",
        "http://127.0.0.1:1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("needs a token of its probe-tokens file"));
}

#[test]
fn an_agent_serves_pair_probes_to_probe_token_holders_only() {
    let dir = temp_dir("mesh-agent-pair");
    let probe_tokens = probe_tokens_file(&dir, OPS);
    let body = json!({"rnic": "rnic0", "peer": "http://127.0.0.1:1", "peer_rnic": "rnic0"});
    let ask = |addr, token: Option<&str>, path: &str| {
        post_to(addr, path, token, &serde_json::to_vec(&body).unwrap())
    };
    // No probe-tokens file: pair probes are off, as POST /api/probe is.
    let off = agent(&dir.join("off.db"), &["--time-scale", "600"], &[]);
    let (code, answer) = ask(off.addr, Some(OPS), "/api/pair/probe");
    assert_eq!(code, 403, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("--probe-tokens"));
    let on = agent(
        &dir.join("on.db"),
        &[
            "--time-scale",
            "600",
            "--probe-tokens",
            probe_tokens.to_str().unwrap(),
        ],
        &[],
    );
    for path in ["/api/pair/probe", "/api/pair/accept"] {
        assert_eq!(ask(on.addr, None, path).0, 401, "{path}");
        assert_eq!(ask(on.addr, Some("nope"), path).0, 401, "{path}");
        let (code, answer) = ask(on.addr, Some(OPS), path);
        assert_eq!(code, 503, "{path}: {answer}");
        assert_eq!(
            answer["error"],
            "this agent watches a simulated host: pair probes need a real RNIC"
        );
    }
    // --devices names real devices: a simulated host has none to restrict to.
    let out = hostping(&[
        "agent",
        "--sim",
        "dgx-a100",
        "--devices",
        "rxe_a",
        "--run-for",
        "1s",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// The hosts of the fabric test: two pairs of neighbours on one leaf, two hosts alone on
/// theirs (the SX6036 capture's leaves hold stage1-24, 25-48, 49-72, 97-120).
const ON_FABRIC: [&str; 6] = [
    "stage1", "stage2", "stage30", "stage60", "stage100", "stage101",
];

/// The cables a route crosses, named by both of their ends (DESIGN 4.6's labels: each
/// switch's input then output port; the first and last are host cables).
fn cables_of(route: &Value, into: &mut std::collections::BTreeSet<(String, String)>) {
    let labels: Vec<String> = route
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect();
    assert!(
        labels.len() >= 2 && labels.len().is_multiple_of(2),
        "{route}"
    );
    let host = |l: &String| (l.clone(), String::new());
    into.insert(host(&labels[0]));
    into.insert(host(&labels[labels.len() - 1]));
    for hop in labels[1..labels.len() - 1].chunks(2) {
        let (a, b) = (hop[0].clone(), hop[1].clone());
        into.insert(if a < b { (a, b) } else { (b, a) });
    }
}

/// With `--fabric` (an SX6036 fat tree's ibnetdiscover capture, its CAs `stageN mlx4_0`,
/// crates/fabric/testdata/ibnetdiscover/SOURCES.md) the collector finds each node's RNIC on
/// the fabric by the device its agent registered and picks the pairs as the simulated mesh
/// picks them on that cabling (simcluster::pairs::select): the same pairs, routes and coverage
/// as `mesh --sim-cluster` on a cluster file of the same hosts and fabric; every cable
/// between the nodes crossed, each pair's budget by its leaf, a node or device off the
/// fabric refused naming it, a bad fabric file refused at start naming it.
#[test]
fn with_the_fabric_the_pairs_cross_every_cable_as_the_simulated_mesh_picks_them() {
    let dir = temp_dir("mesh-collector-fabric");
    let capture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fabric/testdata/ibnetdiscover/loginoff-sx6036-fattree.topo");

    // A bad fabric file: exit 2 before the database is asked, naming the file.
    let bad = dir.join("bad.topo");
    std::fs::write(&bad, "Switch 36 \"S-1\"\n[1] nonsense\n").unwrap();
    let out = hostping(&[
        "collector",
        "--database",
        "postgres://nobody@127.0.0.1:1/none",
        "--fabric",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("bad.topo"), "{}", stderr(&out));
    let out = hostping(&["collector", "--routes", "tables.json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--fabric"), "{}", stderr(&out));

    let Some(pg) = Postgres::start(&dir) else {
        return;
    };
    let mut hosts: Vec<(String, String)> = ON_FABRIC
        .iter()
        .map(|h| (h.to_string(), format!("tok-{h}-0123456789abcdef")))
        .collect();
    for h in ["node99", "stage3", "stage4"] {
        hosts.push((h.to_string(), format!("tok-{h}-0123456789abcdef")));
    }
    let pairs_of: Vec<(&str, &str)> = hosts
        .iter()
        .map(|(h, t)| (h.as_str(), t.as_str()))
        .collect();
    let tokens = tokens_file(&dir, &pairs_of);
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
    // Every agent is down (nothing listens at its URL): the pairs are chosen and routed
    // all the same, and reported unreachable.
    let down = format!("http://127.0.0.1:{}", free_port());
    let token_of = |h: &str| hosts.iter().find(|(n, _)| n == h).unwrap().1.clone();
    let enrol = |h: &str, rnics: Value, devices: Value| {
        let body = json!({"url": down, "rnics": rnics, "devices": devices});
        let (code, answer) = register(c.addr, h, Some(&token_of(h)), &body);
        assert_eq!(code, 200, "{answer}");
    };
    for h in ON_FABRIC.iter().chain(&["node99"]) {
        enrol(h, json!(["rnic0"]), json!(["mlx4_0"]));
    }
    enrol(
        "stage3",
        json!(["rnic0", "rnic1"]),
        json!(["mlx4_0", "mlx4_1"]),
    );
    enrol("stage4", json!(["rnic0"]), json!([]));
    let listed = get(c.addr, "/api/agents").1;
    let stage3 = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["host"] == "stage3")
        .unwrap();
    assert_eq!(stage3["devices"], json!(["mlx4_0", "mlx4_1"]));

    // Nodes that cannot be placed on the fabric: 400, naming the node or the device.
    for (nodes, says) in [
        (
            ["stage1", "node99"],
            "host `node99` has no CA on the fabric",
        ),
        (
            ["stage1", "stage3"],
            "`stage3/rnic1` (device mlx4_1) is not on the fabric",
        ),
        (
            ["stage1", "stage4"],
            "stage4's agent registered no device names",
        ),
    ] {
        let (code, body) = mesh(c.addr, Some(OPS), &nodes);
        assert_eq!(code, 400, "{body}");
        assert!(
            body["error"].as_str().unwrap().contains(says),
            "{says}: {body}"
        );
    }

    // The mesh through the collector.
    let list = ON_FABRIC.join(",");
    let out = hostping(&[
        "mesh",
        "--nodes",
        &list,
        "--collector",
        &format!("http://{}", c.addr),
        "--token",
        OPS,
        "--duration",
        "0.2",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let real: Value = serde_json::from_slice(&out.stdout).unwrap();

    // The simulated mesh on the same hosts and cabling picks with simcluster::pairs::select.
    let cluster = dir.join("cluster.toml");
    std::fs::write(
        &cluster,
        format!(
            "[[hosts]]\nnames = \"{list}\"\nmodel = \"single-socket\"\n[fabric]\ntopology = \"{}\"\n",
            capture.display()
        ),
    )
    .unwrap();
    let out = hostping(&[
        "mesh",
        "--sim-cluster",
        cluster.to_str().unwrap(),
        "--duration",
        "0.2",
        "--format",
        "json",
    ]);
    assert!(out.status.code().is_some_and(|c| c < 2), "{}", stderr(&out));
    let simulated: Value = serde_json::from_slice(&out.stdout).unwrap();
    let shape = |report: &Value| -> Vec<Value> {
        report["pairs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                json!([
                    p["a"]["host"],
                    p["a"]["rnic"],
                    p["b"]["host"],
                    p["b"]["rnic"],
                    p["route"],
                    p["route_back"],
                    p["same_leaf"]
                ])
            })
            .collect()
    };
    assert_eq!(shape(&real), shape(&simulated));
    assert_eq!(real["coverage"], simulated["coverage"]);

    // Every cable between the nodes is crossed, and the pairs say how they were routed.
    let pairs = real["pairs"].as_array().unwrap();
    let mut crossed = std::collections::BTreeSet::new();
    let mut probes = 0;
    for p in pairs {
        assert_ne!(p["a"]["host"], p["b"]["host"], "{p}");
        assert_eq!(p["status"], "unreachable", "{p}");
        assert_eq!(p["route_source"], "cabling", "{p}");
        assert!(p["route_reason"]
            .as_str()
            .unwrap()
            .starts_with("reconstructed from the cabling"));
        cables_of(&p["route"], &mut crossed);
        cables_of(&p["route_back"], &mut crossed);
        // R-Pingmesh's rates over 0.2 s: 10/s a same-leaf target, 1/s (at least one) across.
        let want = if p["same_leaf"] == true { 2 } else { 1 };
        assert_eq!(p["probes"], want, "{p}");
        probes += want;
    }
    assert!(pairs.iter().any(|p| p["same_leaf"] == true));
    assert!(pairs.iter().any(|p| p["same_leaf"] == false));
    assert_eq!(
        crossed.len() as u64,
        real["coverage"]["cables"].as_u64().unwrap()
    );
    assert_eq!(real["budget"]["latency_probes"], probes);
    let cover = real["cover"].as_str().unwrap();
    assert!(
        cover.starts_with("every cable between the nodes on "),
        "{cover}"
    );
}
