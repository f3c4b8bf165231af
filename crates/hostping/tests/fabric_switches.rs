//! `hostping fabric discover`, `fabric route` and `fabric sample` against a real InfiniBand
//! management stack: ibsim's simulated fabric (scripts/ibsim/nets/two-switches.net, and
//! radix8.net for routes), LIDs from a real opensm, and the binary's libibumad redirected to ibsim (`scripts/ibsim/run.sh`).
//!
//! Skipped (with a message) when ibsim, opensm or libumad2sim are missing, unless
//! `HOSTPING_REQUIRE_IBSIM` is set, as `./test.sh` does after installing them.

mod common;

use common::ibsim::{self, have_ibsim, NETS};
use common::{hostping, stderr, stdout, temp_dir};
use rdma::subnet::{topofile, Subnet};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// Runs `script` (bash) against a fresh simulated fabric of two-switches.net, after `console`
/// commands; `$HOSTPING` is the binary.
fn on_fabric(console: &[&str], script: &str) -> Output {
    on_net("two-switches.net", console, script)
}

/// [`on_fabric`] on another net file of scripts/ibsim/nets.
fn on_net(net: &str, console: &[&str], script: &str) -> Output {
    ibsim::run_on(net, console)
        .args(["bash", "-c", script])
        .output()
        .expect("scripts/ibsim/run.sh runs")
}

fn sorted_links(s: &Subnet) -> Vec<String> {
    let mut v: Vec<String> = s
        .links
        .iter()
        .map(|l| format!("{:?} {}{}", l.ends(), l.width, l.speed))
        .collect();
    v.sort();
    v
}

#[test]
fn discover_finds_what_ibnetdiscover_finds() {
    if !have_ibsim() {
        return;
    }
    let dir = temp_dir("fabric-discover");
    let o = on_fabric(
        &[],
        &format!(
            "set -e; cd {d}; \"$HOSTPING\" fabric discover --format ibnetdiscover > ours.topo; \
             ibnetdiscover > theirs.topo; \"$HOSTPING\" fabric discover --format json > ours.json; \
             \"$HOSTPING\" fabric discover > ours.txt",
            d = dir.display()
        ),
    );
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let ours = topofile::parse(&read("ours.topo"), "ours.topo").unwrap();
    let theirs = topofile::parse(&read("theirs.topo"), "theirs.topo").unwrap();
    let mut a = ours.nodes.clone();
    let mut b = theirs.nodes.clone();
    a.sort_by_key(|n| n.guid);
    b.sort_by_key(|n| n.guid);
    assert_eq!(a, b, "same GUIDs, types, ports, descriptions, LIDs");
    assert_eq!(sorted_links(&ours), sorted_links(&theirs));
    let json: Value = serde_json::from_str(&read("ours.json")).unwrap();
    assert_eq!(json["nodes"].as_array().unwrap().len(), 6);
    assert_eq!(json["links"].as_array().unwrap().len(), 6);
    let leaf_a = json["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["description"] == "leaf-a")
        .unwrap();
    assert_eq!(leaf_a["guid"], "0x0000000000200000");
    assert_eq!(
        (leaf_a["type"].as_str(), leaf_a["ports"].as_u64()),
        (Some("switch"), Some(8))
    );
    assert!(read("ours.txt").starts_with("6 nodes (2 switches, 4 channel adapters), 6 links"));
}

/// The switches `ibtracert` prints a route through, as `(GUID, in port, out port)`: a
/// `[out] -> switch port {GUID}[in]` line per switch entered (its out port is the next
/// line's `[out]`), a source switch entered by port 0, a destination switch left by 0.
fn ibtracert_hops(text: &str) -> Vec<(String, u64, u64)> {
    fn braced(line: &str) -> (String, &str) {
        let open = line
            .find('{')
            .unwrap_or_else(|| panic!("no GUID in `{line}`"));
        let close = line.find('}').unwrap();
        (line[open + 1..close].to_string(), &line[close + 1..])
    }
    let mut hops: Vec<(String, u64, u64)> = Vec::new();
    let mut last_is_switch = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix('[') {
            let (out, rest) = rest.split_once("] -> ").unwrap();
            if last_is_switch {
                hops.last_mut().unwrap().2 = out.parse().unwrap();
            }
            last_is_switch = rest.starts_with("switch ");
            if last_is_switch {
                let (guid, after) = braced(rest);
                let port = after[1..after.find(']').unwrap()].parse().unwrap();
                hops.push((guid, port, 0));
            }
        } else if line.starts_with("From switch ") {
            hops.push((braced(line).0, 0, 0));
            last_is_switch = true;
        }
    }
    hops
}

/// `ibroute`'s table: each LID with a route, and its output port.
fn ibroute_entries(text: &str) -> std::collections::BTreeMap<u64, u64> {
    text.lines()
        .filter_map(|l| {
            let (lid, rest) = l.strip_prefix("0x")?.split_once(' ')?;
            let port = rest.split_whitespace().next()?;
            Some((u64::from_str_radix(lid, 16).ok()?, port.parse().ok()?))
        })
        .collect()
}

/// On `net`, for every pair of every `every`-th channel adapter (by LID): `fabric route`'s
/// hops equal `ibtracert`'s; `--dump` equals `ibroute` on every switch and agrees with
/// each route's hops. Returns the pairs compared.
fn routes_agree_with_infiniband_diags(net: &str, every: usize) -> usize {
    let dir = temp_dir(&format!("fabric-route-{net}"));
    let o = on_net(
        net,
        &[],
        &format!(
            "set -e; cd {d}; \"$HOSTPING\" fabric discover > nodes.txt; \
             cas=$(awk '$1 == \"ca\" {{ print $3 }}' nodes.txt | awk '(NR - 1) % {every} == 0'); \
             for a in $cas; do for b in $cas; do [ $a = $b ] && continue; \
               \"$HOSTPING\" fabric route --from $a --to $b --format json > route-$a-$b.json; \
               ibtracert $a $b > tracert-$a-$b.txt 2>/dev/null; done; done; \
             \"$HOSTPING\" fabric route --dump -o dump.json; \
             for s in $(awk '$1 == \"switch\" {{ print $3 }}' nodes.txt); do \
               ibroute $s > ibroute-$s.txt 2>/dev/null; done",
            d = dir.display()
        ),
    );
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let read =
        |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
    let dump: Value = serde_json::from_str(&read("dump.json")).unwrap();
    assert_eq!(dump["errors"], serde_json::json!([]));
    let mut tables = std::collections::HashMap::new();
    for s in dump["switches"].as_array().unwrap() {
        let lid = s["lid"].as_u64().unwrap();
        let ours: std::collections::BTreeMap<u64, u64> = s["routes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["lid"].as_u64().unwrap(), r["port"].as_u64().unwrap()))
            .collect();
        let theirs = ibroute_entries(&read(&format!("ibroute-{lid}.txt")));
        assert!(!theirs.is_empty(), "ibroute {lid} printed no routes");
        assert_eq!(ours, theirs, "switch {} (LID {lid})", s["description"]);
        tables.insert(s["guid"].as_str().unwrap().to_string(), ours);
    }
    let mut pairs = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(pair) = name
            .strip_prefix("route-")
            .and_then(|n| n.strip_suffix(".json"))
        else {
            continue;
        };
        let route: Value = serde_json::from_str(&read(&name)).unwrap();
        assert!(route["error"].is_null(), "{pair}: {route}");
        let ours: Vec<(String, u64, u64)> = route["hops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                let guid = h["guid"].as_str().unwrap().to_string();
                let lid = route["to"]["lid"].as_u64().unwrap();
                let out = h["out_port"].as_u64().unwrap();
                assert_eq!(tables[&guid].get(&lid), Some(&out), "{pair}: {h} vs --dump");
                (guid, h["in_port"].as_u64().unwrap(), out)
            })
            .collect();
        assert!(
            !ours.is_empty(),
            "{pair}: a route between two CAs crosses a switch"
        );
        let theirs = ibtracert_hops(&read(&format!("tracert-{pair}.txt")));
        assert_eq!(ours, theirs, "{pair}: fabric route vs ibtracert");
        pairs += 1;
    }
    pairs
}

#[test]
fn route_is_what_ibtracert_traces_and_dump_what_ibroute_reads() {
    if !have_ibsim() {
        return;
    }
    assert_eq!(
        routes_agree_with_infiniband_diags("two-switches.net", 1),
        12,
        "every ordered pair of the 4 hosts"
    );
    // radix8: 128 hosts on 32 leaves, 3 levels; every 16th host spans the pods.
    assert_eq!(routes_agree_with_infiniband_diags("radix8.net", 16), 56);
}

#[test]
fn route_by_guid_and_a_route_cut_by_a_dead_cable() {
    if !have_ibsim() {
        return;
    }
    // host-1 to host-4 by port GUID: leaf-a, then leaf-b by one of the two cables.
    let route = "\"$HOSTPING\" fabric route --from 0x0000000000100001 --to 0x0000000000100007";
    let o = on_fabric(&[], &format!("{route} --format json && {route}"));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let json_end = text.find("\n}\n").unwrap() + 3;
    let json: Value = serde_json::from_str(&text[..json_end]).unwrap();
    assert_eq!(json["from"]["description"], "host-1");
    assert_eq!(json["to"]["guid"], "0x0000000000100007");
    let hops = json["hops"].as_array().unwrap();
    assert_eq!(hops.len(), 2, "{json}");
    assert_eq!(
        (hops[0]["guid"].as_str(), hops[0]["in_port"].as_u64()),
        (Some("0x0000000000200000"), Some(1))
    );
    assert_eq!(
        (
            hops[1]["description"].as_str(),
            hops[1]["out_port"].as_u64()
        ),
        (Some("leaf-b"), Some(2))
    );
    let table = &text[json_end..];
    assert!(
        table.starts_with("From ca {0x0000000000100001} portnum 1")
            && table.contains("-> switch {0x0000000000200001}")
            && table.ends_with("2 switches crossed\n"),
        "{table}"
    );
    // The cable leaf-a's table sends host-4's LID to goes down after opensm ran: the
    // table still names it, so the route breaks there (exit 1), named.
    let cable = hops[0]["out_port"].as_u64().unwrap();
    let lid = json["to"]["lid"].as_u64().unwrap();
    let o = on_fabric(
        &[&format!("Unlink \"leaf-a\"[{cable}]")],
        &format!("{route} --format json"),
    );
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let broken: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(broken["hops"].as_array().unwrap().len(), 1);
    assert_eq!(
        broken["error"].as_str().unwrap(),
        format!(
            "no route to LID {lid} at switch \"leaf-a\" (0x0000000000200000, LID 1): its \
             forwarding table sends it out of port {cable}, which has no active link"
        )
    );
    // A port the subnet does not have: exit 2, named.
    let o = on_fabric(
        &[],
        "\"$HOSTPING\" fabric route --from 0x0000000000100001 --to 0x42",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--to: port GUID 0x0000000000000042: no such port among the 6 nodes"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn sample_returns_the_counters_the_switch_holds() {
    if !have_ibsim() {
        return;
    }
    let o = on_fabric(
        &[
            r#"PerformanceSet "leaf-a"[7] PortCounters.SymbolErrorCounter=7"#,
            r#"PerformanceSet "leaf-a"[7] PortCounters.LinkDownedCounter=2"#,
            r#"PerformanceSet "leaf-b"[2] PortCounters.PortXmitWait=4321"#,
            r#"PerformanceSet "leaf-b"[2] PortCounters.PortRcvErrors=11"#,
            r#"PerformanceSet "leaf-b"[2] PortCounters.PortXmitDiscards=5"#,
        ],
        "\"$HOSTPING\" fabric sample --once --format json && \"$HOSTPING\" fabric sample --hz 50 --duration 100ms --format json",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // --once, then 100 ms at 50 Hz: 5 sweeps on time, fewer if one overran its period
    // (missed ticks are skipped, never made up).
    assert!(
        (4..=6).contains(&lines.len()),
        "--once, then 100 ms at 50 Hz: {}",
        stdout(&o)
    );
    let port = |sweep: &Value, guid: &str, port: u64| -> Value {
        sweep["ports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["guid"] == guid && p["port"] == port)
            .unwrap_or_else(|| panic!("no {guid}[{port}] in {sweep}"))
            .clone()
    };
    for sweep in &lines {
        assert_eq!(sweep["ports"].as_array().unwrap().len(), 8, "{sweep}");
        assert!(sweep["spread_us"].as_f64().unwrap() > 0.0);
        let a7 = port(sweep, "0x0000000000200000", 7);
        assert_eq!(a7["counters"]["symbol_errors"], 7);
        assert_eq!(a7["counters"]["link_downed"], 2);
        assert!(a7["error"].is_null());
        let b2 = port(sweep, "0x0000000000200001", 2);
        assert_eq!(b2["counters"]["xmit_wait"], 4321);
        assert_eq!(b2["counters"]["rcv_errors"], 11);
        assert_eq!(b2["counters"]["xmit_discards"], 5);
    }
    assert_eq!(lines[0]["sweep"], 1);
    for (n, sweep) in lines[1..].iter().enumerate() {
        assert_eq!(sweep["sweep"], n as u64 + 1, "a new process counts from 1");
    }
}

#[test]
fn a_silent_or_unlinked_switch_gives_errors_on_its_ports_and_the_sweep_still_ends() {
    if !have_ibsim() {
        return;
    }
    let dir = temp_dir("fabric-silent");
    let topo = dir.join("fabric.topo");
    // The topology comes from a healthy fabric; then leaf-b loses every MAD, or every link.
    let o = on_fabric(
        &[],
        &format!(
            "\"$HOSTPING\" fabric discover --format ibnetdiscover > {}",
            topo.display()
        ),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    for fault in [r#"Error "leaf-b" 100"#, r#"Unlink "leaf-b""#] {
        let o = on_fabric(
            &[fault],
            &format!(
                "\"$HOSTPING\" fabric sample --once --format json --timeout-ms 50 --retries 1 --topology {}",
                topo.display()
            ),
        );
        assert_eq!(
            o.status.code(),
            Some(1),
            "{fault}: some ports did not answer: {}",
            stderr(&o)
        );
        let sweep: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        for p in sweep["ports"].as_array().unwrap() {
            if p["guid"] == "0x0000000000200001" {
                assert!(p["counters"].is_null(), "{fault}: {p}");
                assert!(
                    p["error"]
                        .as_str()
                        .unwrap()
                        .contains("no response in 50 ms, 2 tries"),
                    "{fault}: {p}"
                );
            } else {
                assert!(
                    p["counters"].is_object() && p["error"].is_null(),
                    "{fault}: {p}"
                );
            }
        }
        // ClassPortInfo to leaf-b: 2 tries of 50 ms; nothing else waits on it.
        assert!(
            sweep["spread_us"].as_f64().unwrap() < 400_000.0,
            "{fault}: {sweep}"
        );
    }
}

#[test]
fn bad_inputs_exit_two_and_name_the_input() {
    let dir = temp_dir("fabric-bad");
    let missing = dir.join("nope.topo");
    let o = hostping(&[
        "fabric",
        "sample",
        "--once",
        "--topology",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("nope.topo: cannot read the topology file"),
        "{}",
        stderr(&o)
    );
    let bad = dir.join("bad.topo");
    std::fs::write(&bad, "Switch\t8 \"X-1\"\n").unwrap();
    let o = hostping(&[
        "fabric",
        "sample",
        "--once",
        "--topology",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("bad.topo:1: a node id is S-, H- or R-"),
        "{}",
        stderr(&o)
    );
    let o = hostping(&["fabric", "sample", "--once", "--hz", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--hz 0"), "{}", stderr(&o));
    // Without ibsim's preload this machine has no umad port (or no libibumad): named, exit 2.
    if !Path::new("/dev/infiniband").exists() {
        let o = hostping(&["fabric", "discover"]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("umad"), "{}", stderr(&o));
    }
}

const TWO_SWITCHES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../rdma/testdata/subnet/two-switches.topo"
);

#[test]
fn delegate_splits_the_ports_and_sample_reads_a_share() {
    let dir = temp_dir("fabric-delegate");
    let out = dir.join("lists");
    let o = hostping(&[
        "fabric",
        "delegate",
        "--topology",
        TWO_SWITCHES,
        "--samplers",
        "host-1,host-4",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("host-1: 4 ports on 1 switch, at most 1 hop away"),
        "{}",
        stdout(&o)
    );
    let host_1 = std::fs::read_to_string(out.join("host-1.ports")).unwrap();
    let host_4 = std::fs::read_to_string(out.join("host-4.ports")).unwrap();
    assert!(
        host_1.contains("\n1 0x0000000000200000 4 1-2,7-8\n"),
        "{host_1}"
    );
    assert!(
        host_4.contains("\n3 0x0000000000200001 4 1-2,7-8\n"),
        "{host_4}"
    );
    // host-4 gone: host-1 takes all eight ports.
    let o = hostping(&[
        "fabric",
        "delegate",
        "--topology",
        TWO_SWITCHES,
        "--samplers",
        "host-1,host-4",
        "--failed",
        "host-4",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("0x0000000000200001 4 1-2,7-8"),
        "{}",
        stdout(&o)
    );
    let o = hostping(&[
        "fabric",
        "delegate",
        "--topology",
        TWO_SWITCHES,
        "--samplers",
        "host-9",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("sampler `host-9` is not in the subnet"),
        "{}",
        stderr(&o)
    );

    if !have_ibsim() {
        return;
    }
    let o = on_fabric(
        &[],
        &format!(
            "\"$HOSTPING\" fabric sample --once --format json --ports {}",
            out.join("host-4.ports").display()
        ),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let sweep: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let ports = sweep["ports"].as_array().unwrap();
    assert_eq!(ports.len(), 4, "{sweep}");
    assert!(
        ports
            .iter()
            .all(|p| p["guid"] == "0x0000000000200001" && p["counters"].is_object()),
        "{sweep}"
    );
}

/// The net files of the simulator's trees are what `hostping fabric net` writes for them.
#[test]
fn the_tree_net_files_are_what_fabric_net_writes() {
    for (net, topology) in [
        ("fat-tree-36.net", "scripts/ibsim/nets/fat-tree-36.toml"),
        ("radix8.net", "radix8"),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_hostping"))
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .args(["fabric", "net", "--topology", topology])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let committed = std::fs::read_to_string(format!("{NETS}/{net}")).unwrap();
        assert!(
            stdout(&o) == committed,
            "{net} differs from `hostping fabric net --topology {topology}`"
        );
    }
}

/// The simulator's trees on ibsim: the two-level fat tree of 36-port switches (54 switches,
/// 648 hosts) and the three-level radix-8 tree (80 switches, 128 hosts). Discovery equals
/// ibnetdiscover's, one sweep reads every linked switch port, and the discovered topology
/// file is recognised by `fabric sim` as the tree the net file was written from.
#[test]
fn the_simulators_trees_on_ibsim_come_back_as_themselves() {
    if !have_ibsim() {
        return;
    }
    for (net, levels, switches, nodes, switch_ports) in [
        // 36 leaves x 36 ports + 18 spines x 36 ports; radix8: 80 switches x 8 ports.
        ("fat-tree-36.net", "two-level", 54, 648, 36 * 36 + 18 * 36),
        ("radix8.net", "three-level", 80, 128, 80 * 8),
    ] {
        let dir = temp_dir("fabric-trees");
        let o = on_net(
            net,
            &[],
            &format!(
                "set -e; cd {d}; \"$HOSTPING\" fabric discover --format ibnetdiscover > ours.topo; \
                 ibnetdiscover > theirs.topo; \
                 \"$HOSTPING\" fabric sample --topology ours.topo --once --format json > sweep.json; \
                 set +e; \"$HOSTPING\" fabric sim --topology ours.topo --workload uniform,load=0.3 \
                 --end 5us --out-dir sim > sim.txt 2> sim.err; echo $? > sim.rc",
                d = dir.display()
            ),
        );
        assert!(o.status.success(), "{net}: {}{}", stdout(&o), stderr(&o));
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        let ours = topofile::parse(&read("ours.topo"), "ours.topo").unwrap();
        let theirs = topofile::parse(&read("theirs.topo"), "theirs.topo").unwrap();
        assert_eq!(ours.nodes.len(), theirs.nodes.len(), "{net}");
        assert_eq!(sorted_links(&ours), sorted_links(&theirs), "{net}");

        let sweep: Value = serde_json::from_str(&read("sweep.json")).unwrap();
        let ports = sweep["ports"].as_array().unwrap();
        assert_eq!(
            ports.len(),
            switch_ports,
            "{net}: every linked switch port once"
        );
        assert!(ports.iter().all(|p| p["error"].is_null()), "{net}");

        assert!(
            // 3: 5 us of traffic on 648 hosts may sample too few packets to judge; the tree
            // is what is under test here.
            matches!(read("sim.rc").trim(), "0" | "1" | "3"),
            "{net}: {}",
            read("sim.err")
        );
        assert!(
            read("sim.err").contains(&format!("ours.topo: a {levels} fat tree")),
            "{net}: {}",
            read("sim.err")
        );
        let summary: Value = serde_json::from_str(&read("sim/summary.json")).unwrap();
        assert_eq!(summary["switches"], switches, "{net}");
        assert_eq!(summary["nodes"], nodes, "{net}");
        // Every tree switch is a fabric switch, each once.
        let mut named: Vec<String> = summary["fabric"]["switches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect();
        named.sort();
        let mut described: Vec<String> = ours
            .nodes
            .iter()
            .filter(|n| n.kind == rdma::subnet::NodeKind::Switch)
            .map(|n| n.description.clone())
            .collect();
        described.sort();
        assert_eq!(named, described, "{net}");
        assert!(read("sim/ports.csv")
            .lines()
            .next()
            .unwrap()
            .ends_with(",fabric_switch,fabric_port"));
    }
}

/// A fabric that is not a fat tree (two leaves cabled to each other) is simulated as cabled,
/// saying why it is no tree and how it is routed: opensm's up/down finds no root in it (each
/// switch has half the hosts at 0 hops and half at 1), so min-hop.
#[test]
fn sim_runs_a_fabric_that_is_not_a_fat_tree_as_cabled() {
    let root = temp_dir("fabric-not-a-tree");
    let out = root.join("out");
    let o = hostping(&[
        "fabric",
        "sim",
        "--topology",
        TWO_SWITCHES,
        "--workload",
        "ring",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "two-switches.topo: not a fat tree (leaf switches 'leaf-b' and 'leaf-a' are cabled \
             to each other; a fat tree joins leaves only through the switches above them): \
             simulated as cabled, routed minhop: updn found no root"
        ),
        "{}",
        stderr(&o)
    );
    // Two of the four ring messages stay on their leaf (1 hop), two cross (2).
    assert!(
        stdout(&o).contains("average path 1.500 hops"),
        "{}",
        stdout(&o)
    );
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    // The switches in the file's order.
    assert_eq!(
        summary["fabric"]["switches"],
        serde_json::json!(["leaf-b", "leaf-a"])
    );
}

/// `--routing` routes a fat tree as cabled too: up/down takes radix8's 16 cores as roots and
/// keeps the tree's path lengths; it cannot be given with `--routes`.
#[test]
fn routing_updn_routes_a_tree_from_its_cores_and_excludes_routes() {
    let dir = temp_dir("fabric-routing-updn");
    let run = |extra: &[&str]| {
        let out = dir.join("out");
        let mut args = vec![
            "fabric",
            "sim",
            "--topology",
            "radix8",
            "--workload",
            "ring",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend(extra);
        hostping(&args)
    };
    let o = run(&["--routing", "updn"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "radix8: simulated as cabled, routed updn from 16 roots; 80 switches (8 ports \
             each, node slots counted), 128 hosts, paths of up to 5 hops"
        ),
        "{}",
        stderr(&o)
    );
    let adaptive = run(&[]);
    let path = |o: &Output| {
        let text = stdout(o);
        let at = text.find("average path").unwrap();
        text[at..at + 24].to_string()
    };
    assert_eq!(path(&o), path(&adaptive));
    let o = run(&["--routing", "minhop", "--routes", "tables.json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
}

/// Issue 27 sections 4 and 6: the subnet manager's tables, dumped with `fabric route --dump`,
/// route the simulator as opensm routes the fabric. On radix8.net (three levels, 128 hosts),
/// a mesh of a simulated cluster on the discovered fabric with `routes` = the dump takes, pair
/// by pair and both ways, the route `fabric route` reads from the switches (which the test
/// above holds equal to `ibtracert`).
#[test]
fn dumped_tables_route_the_simulator_as_the_subnet_manager_routes_the_fabric() {
    if !have_ibsim() {
        return;
    }
    // MADs wait 500 ms rather than 100: this test's 56 routes and its dump run beside the
    // other ibsim tests, and a loaded machine answers slower.
    let dir = temp_dir("fabric-routes-sim");
    let o = on_net(
        "radix8.net",
        &[],
        &format!(
            "set -e; cd {d}; t='--timeout-ms 500'; \
             \"$HOSTPING\" fabric discover $t --format ibnetdiscover > fabric.topo; \
             \"$HOSTPING\" fabric discover $t > nodes.txt; \
             \"$HOSTPING\" fabric discover $t --format json > nodes.json; \
             cas=$(awk '$1 == \"ca\" {{ print $3 }}' nodes.txt | awk '(NR - 1) % 16 == 0'); \
             for a in $cas; do for b in $cas; do [ $a = $b ] && continue; \
               \"$HOSTPING\" fabric route $t --from $a --to $b --format json > route-$a-$b.json; \
             done; done; \
             \"$HOSTPING\" fabric route $t --dump -o tables.json",
            d = dir.display()
        ),
    );
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let read =
        |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
    let nodes: Value = serde_json::from_str(&read("nodes.json")).unwrap();
    let lid_of: std::collections::HashMap<String, u64> = nodes["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["type"] == "ca")
        .map(|n| {
            (
                n["description"].as_str().unwrap().to_string(),
                n["lid"].as_u64().unwrap(),
            )
        })
        .collect();
    // The hosts whose routes were read: every 16th CA by LID, as the script chose them
    // (one per pod, as in the test above).
    let routed: std::collections::HashSet<u64> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            let pair = name
                .strip_prefix("route-")?
                .strip_suffix(".json")?
                .to_string();
            pair.split_once('-').map(|(a, _)| a.parse().unwrap())
        })
        .collect();
    let hosts: Vec<&String> = lid_of
        .iter()
        .filter(|(_, lid)| routed.contains(lid))
        .map(|(h, _)| h)
        .collect();
    assert_eq!(hosts.len(), 8);
    std::fs::write(
        dir.join("cluster.toml"),
        "[[hosts]]\nnames = \"node-[0-127]\"\nmodel = \"single-socket\"\n\
         [fabric]\ntopology = \"fabric.topo\"\nroutes = \"tables.json\"\n",
    )
    .unwrap();
    let nodes_list = hosts
        .iter()
        .map(|h| h.as_str())
        .collect::<Vec<_>>()
        .join(",");
    let mesh = |extra: &[&str]| {
        let mut args = vec![
            "mesh",
            "--sim-cluster",
            "cluster.toml",
            "--nodes",
            &nodes_list,
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        let o = Command::new(env!("CARGO_BIN_EXE_hostping"))
            .current_dir(&dir)
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        serde_json::from_str::<Value>(&stdout(&o)).unwrap()
    };
    let report = mesh(&[]);
    let labels = |route: &Value| -> Vec<String> {
        route["hops"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|h| {
                let switch = h["description"].as_str().unwrap();
                [
                    format!("{switch}/{}", h["in_port"]),
                    format!("{switch}/{}", h["out_port"]),
                ]
            })
            .collect()
    };
    let pairs = report["pairs"].as_array().unwrap();
    assert!(pairs.len() >= 4, "{}", pairs.len());
    for p in pairs {
        let (a, b) = (
            p["a"]["host"].as_str().unwrap(),
            p["b"]["host"].as_str().unwrap(),
        );
        for (from, to, key) in [(a, b, "route"), (b, a, "route_back")] {
            let read_route: Value = serde_json::from_str(&read(&format!(
                "route-{}-{}.json",
                lid_of[from], lid_of[to]
            )))
            .unwrap();
            let simulated: Vec<String> = p[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h.as_str().unwrap().to_string())
                .collect();
            assert_eq!(simulated, labels(&read_route), "{from} -> {to}");
        }
    }
    // `fabric sim` routes by the same tables.
    let o = Command::new(env!("CARGO_BIN_EXE_hostping"))
        .current_dir(&dir)
        .args([
            "fabric",
            "sim",
            "--topology",
            "fabric.topo",
            "--routes",
            "tables.json",
        ])
        .args([
            "--workload",
            "uniform,load=0.3",
            "--end",
            "5us",
            "--out-dir",
            "sim",
        ])
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1 | 3)), "{}", stderr(&o));
    let summary: Value = serde_json::from_str(&read("sim/summary.json")).unwrap();
    assert_eq!(summary["nodes"], 128);
    // A table the fabric does not have is refused, naming the file.
    std::fs::write(dir.join("tables.json"), r#"{"switches": [], "errors": []}"#).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_hostping"))
        .current_dir(&dir)
        .args(["mesh", "--sim-cluster", "cluster.toml"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("tables.json: no table for switch"),
        "{}",
        stderr(&o)
    );
}

/// The fabric that `net` is under opensm's routing engine `routing`: as `fabric discover`
/// reads it, the tables `fabric route --dump` reads, and the topology file; `sim` is run on
/// that file with those tables (`fabric sim --routes`), its output returned.
fn opensm_routed(net: &str, routing: &str) -> (Subnet, rdma::subnet::route::Dump, Output) {
    let dir = temp_dir(&format!("fabric-{net}-{routing}"));
    let o = Command::new(ibsim::RUN)
        .args(["--net", &format!("{NETS}/{net}"), "--routing", routing, "--"])
        .env("HOSTPING", env!("CARGO_BIN_EXE_hostping"))
        .env("NO_COLOR", "1")
        .args([
            "bash",
            "-c",
            &format!(
                "set -e; cd {d}; \"$HOSTPING\" fabric discover --format ibnetdiscover > fabric.topo; \
                 \"$HOSTPING\" fabric route --dump -o dump.json",
                d = dir.display()
            ),
        ])
        .output()
        .expect("scripts/ibsim/run.sh runs");
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let subnet = topofile::read(&read("fabric.topo"), "fabric.topo")
        .unwrap()
        .subnet;
    let dump = rdma::subnet::route::Dump::from_json(&read("dump.json"), "dump.json").unwrap();
    let topo = dir.join("fabric.topo");
    let sim = hostping(&[
        "fabric",
        "sim",
        "--topology",
        topo.to_str().unwrap(),
        "--routes",
        dir.join("dump.json").to_str().unwrap(),
        "--workload",
        "ring,bytes=64KiB,rounds=2",
        "--out-dir",
        dir.join("sim").to_str().unwrap(),
    ]);
    (subnet, dump, sim)
}

/// The subnet as a graph for `Topology::graph`, and the LID of each of its hosts.
fn graph_of(subnet: &Subnet) -> (fabric::topology::GraphSpec, Vec<u16>) {
    use fabric::topology::{GraphSpec, GraphSwitch};
    use rdma::subnet::NodeKind;
    let switches: Vec<&rdma::subnet::Node> = subnet
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Switch)
        .collect();
    let index = |guid: u64| switches.iter().position(|s| s.guid == guid);
    let mut spec = GraphSpec {
        name: "opensm".into(),
        switches: switches
            .iter()
            .map(|s| GraphSwitch {
                name: s.description.clone(),
                id: s.guid,
            })
            .collect(),
        ..GraphSpec::default()
    };
    let mut lids = Vec::new();
    for link in &subnet.links {
        match (index(link.a.guid), index(link.b.guid)) {
            (Some(a), Some(b)) => spec
                .links
                .push([(a, u16::from(link.a.port)), (b, u16::from(link.b.port))]),
            (Some(s), None) | (None, Some(s)) => {
                let (switch_end, ca_end) = if index(link.a.guid).is_some() {
                    (link.a, link.b)
                } else {
                    (link.b, link.a)
                };
                spec.hosts.push((s, u16::from(switch_end.port)));
                let ca = subnet.node(ca_end.guid).unwrap();
                let address = ca.addressed_ports.iter().find(|a| a.port == ca_end.port);
                lids.push(address.unwrap().lid);
            }
            (None, None) => panic!("a cable between two CAs"),
        }
    }
    (spec, lids)
}

/// The route opensm's tables give from the CA with LID `from` to LID `to`: (switch GUID,
/// output port) per switch crossed.
fn tables_route(
    subnet: &Subnet,
    dump: &rdma::subnet::route::Dump,
    from: u16,
    to: u16,
) -> Vec<(u64, u16)> {
    let ca = |lid: u16| {
        subnet
            .nodes
            .iter()
            .flat_map(|n| n.addressed_ports.iter().map(move |a| (n, a)))
            .find(|(n, a)| a.lid == lid && n.kind != rdma::subnet::NodeKind::Switch)
            .map(|(n, a)| rdma::subnet::End {
                guid: n.guid,
                port: a.port,
            })
            .unwrap()
    };
    let (_, mut at) = subnet.peer(ca(from)).unwrap();
    let mut route = Vec::new();
    loop {
        let table = dump.switches.iter().find(|s| s.guid == at.guid).unwrap();
        let out = table.routes[&to];
        route.push((at.guid, u16::from(out)));
        assert!(route.len() <= dump.switches.len(), "a loop: {route:?}");
        let (_, far) = subnet
            .peer(rdma::subnet::End {
                guid: at.guid,
                port: out,
            })
            .unwrap();
        if dump.switches.iter().all(|s| s.guid != far.guid) {
            return route;
        }
        at = far;
    }
}

/// A ring of four switches (no fat tree), and the ring with a spine: opensm routes them with
/// its min-hop and up/down engines; hostping's own engines on the same graph give every pair
/// of hosts routes of the same length as opensm's (the port chosen among equal ways may
/// differ: opensm also counts its switches' own LIDs when it balances), and the simulator
/// routed by the dumped tables follows opensm's routes exactly.
#[test]
fn a_ring_is_routed_as_opensm_routes_it() {
    use fabric::topology::{Engine, GraphRouting, NodeId, SwitchId, Topology};
    if !have_ibsim() {
        return;
    }
    for (net, routing, roots) in [
        ("ring4.net", "updn", None),
        ("ring4.net", "minhop", None),
        ("ring4-spine.net", "updn", Some(1)),
        ("ring4-spine.net", "minhop", None),
    ] {
        let (subnet, dump, sim) = opensm_routed(net, routing);
        let case = format!("{net} -R {routing}");
        assert_eq!(dump.errors, Vec::<String>::new(), "{case}");
        let (spec, lids) = graph_of(&subnet);
        let engine: Engine = routing.parse().unwrap();
        let (t, layout) = Topology::graph(&spec, engine).unwrap();
        match (t.graph_routing().unwrap(), roots) {
            (GraphRouting::UpDown { roots }, Some(n)) => assert_eq!(roots.len(), n, "{case}"),
            (GraphRouting::MinHopWithoutRoots, None) => assert_eq!(routing, "updn"),
            (GraphRouting::MinHop, None) => assert_eq!(routing, "minhop"),
            (other, _) => panic!("{case}: {other:?}"),
        }
        let node_of = |h: usize| {
            NodeId(
                (0..t.num_nodes())
                    .find(|&n| layout.node_hosts[n as usize] == Some(h))
                    .unwrap(),
            )
        };
        // The dumped tables, as the topology's ports.
        let nodes = t.num_nodes() as usize;
        let mut ports = vec![fabric::topology::NO_ENTRY; t.num_switches() as usize * nodes];
        for s in 0..t.num_switches() {
            let guid = spec.switches[layout.switches[s as usize]].id;
            let table = dump.switches.iter().find(|d| d.guid == guid).unwrap();
            let base = t.port_base(SwitchId(s)) as usize;
            for (h, &lid) in lids.iter().enumerate() {
                let out = u16::from(table.routes[&lid]);
                let port = (0..t.ports(SwitchId(s)))
                    .find(|&p| layout.fabric_ports[base + usize::from(p)] == out)
                    .unwrap();
                ports[s as usize * nodes + node_of(h).0 as usize] = port;
            }
        }
        let routed = t.clone().with_forwarding(ports).unwrap();
        let mut pairs = 0;
        for a in 0..lids.len() {
            for b in (0..lids.len()).filter(|&b| b != a) {
                let theirs = tables_route(&subnet, &dump, lids[a], lids[b]);
                let (na, nb) = (node_of(a), node_of(b));
                assert_eq!(t.hops(na, nb) as usize, theirs.len(), "{case}: {a} -> {b}");
                let ours: Vec<(u64, u16)> = routed
                    .deterministic_route(na, nb)
                    .iter()
                    .map(|p| {
                        let switch = spec.switches[layout.switches[p.switch.0 as usize]].id;
                        (switch, layout.fabric_ports[routed.port_index(*p) as usize])
                    })
                    .collect();
                assert_eq!(ours, theirs, "{case}: {a} -> {b}");
                pairs += 1;
            }
        }
        assert_eq!(pairs, 8 * 7, "{case}");
        // The command line simulates the ring by the same tables.
        assert_ne!(sim.status.code(), Some(2), "{case}: {}", stderr(&sim));
        assert!(
            stderr(&sim).contains("simulated as cabled, routed by the subnet manager's tables"),
            "{case}: {}",
            stderr(&sim)
        );
    }
}
