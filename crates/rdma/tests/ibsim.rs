//! The umad transport against a real InfiniBand management stack: ibsim (the fabric
//! simulator of OFED developers) on `scripts/ibsim/nets/two-switches.net`, LIDs from a real
//! opensm, and hostping's MADs through the real libibumad, redirected to ibsim by
//! `libumad2sim` (Debian packages ibsim-utils, libumad2sim0, opensm), all set up by
//! `scripts/ibsim/run.sh`.
//!
//! libumad2sim works by LD_PRELOAD, which a running test cannot give itself: the outer
//! test (`umad_exchanges_with_ibsim`, ignored by default, run by `./test.sh`) runs this test
//! binary again under `scripts/ibsim/run.sh`, one fresh fabric per inner session
//! (`inner_*`, which do nothing without `HOSTPING_IBSIM_SESSION`).

use rdma::mad::perf::{self, ClassPortInfoRepr, PortCountersRepr};
use rdma::mad::smp::{self, NodeInfoRepr, NodeType, PortInfoRepr, Route, SmpPacket, SmpRequest};
use rdma::mad::{Method, MgmtClass, MAD_LEN};
use rdma::umad::rpc::{exchange_in_order, Failure, Request, Settings};
use rdma::umad::{Address, Port, Umad};
use std::process::Command;
use std::time::{Duration, Instant};

const RUN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/ibsim/run.sh");

/// Counters the inner sessions expect, set through ibsim's console.
const COUNTERS: [&str; 2] = [
    r#"PerformanceSet "leaf-a"[7] PortCounters.SymbolErrorCounter=7"#,
    r#"PerformanceSet "leaf-a"[7] PortCounters.PortXmitWait=1234"#,
];

/// Runs the inner session `session` on a fresh fabric after `console` commands.
fn inner(session: &str, console: &[&str], extra: &[(&str, String)]) -> String {
    let mut c = Command::new(RUN);
    for line in COUNTERS.iter().chain(console) {
        c.args(["--console", line]);
    }
    c.arg("--")
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            session,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("HOSTPING_IBSIM_SESSION", "1");
    for (k, v) in extra {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{session}:\n{text}");
    assert!(text.contains("1 passed"), "{session} did not run:\n{text}");
    text
}

#[test]
#[ignore = "needs ibsim, libumad2sim and opensm (run by ./test.sh)"]
fn umad_exchanges_with_ibsim() {
    let text = inner("inner_answers", &[], &[]);
    let leaf_b = text
        .lines()
        // (libtest prints "test inner_answers ... " on the same line first)
        .find_map(|l| l.split("LEAF_B_LID=").nth(1))
        .unwrap_or_else(|| panic!("the inner session names leaf-b's LID:\n{text}"))
        .trim()
        .to_string();
    inner("inner_discovers", &[], &[]);
    inner("inner_samples", &[], &[]);
    // Every MAD to leaf-b is lost. (opensm gives the same fabric the same LIDs each run:
    // inner_losses checks that leaf-b's is not leaf-a's.)
    inner(
        "inner_losses",
        &[r#"Error "leaf-b" 100"#],
        &[("LEAF_B_LID", leaf_b)],
    );
}

fn session() -> Option<Port> {
    std::env::var_os("HOSTPING_IBSIM_SESSION")?;
    let umad = Umad::load().expect("libibumad loads");
    assert_eq!(umad.ca_names().unwrap(), ["ibsim0"]);
    Some(Port::open(umad, None, 0).expect("the simulated port opens"))
}

fn smp_get(route: Route, attribute_id: u16, modifier: u32) -> [u8; MAD_LEN] {
    SmpRequest {
        route,
        attribute_id,
        attribute_modifier: modifier,
        transaction_id: 0,
    }
    .emit()
    .unwrap()
}

#[test]
#[ignore = "an inner session of umad_exchanges_with_ibsim"]
fn inner_answers() {
    let Some(mut port) = session() else { return };
    let smi = port.register(MgmtClass::SubnDirectedRoute).unwrap();
    let pma = port.register(MgmtClass::Performance).unwrap();
    let settings = Settings::default();

    // Directed route: the local switch, then the one behind its port 7.
    let requests = [
        Request {
            agent: smi,
            to: Address::directed(),
            mad: smp_get(Route::Directed(vec![]), smp::attr::NODE_INFO, 0),
        },
        Request {
            agent: smi,
            to: Address::directed(),
            mad: smp_get(Route::Directed(vec![7]), smp::attr::NODE_INFO, 0),
        },
        Request {
            agent: smi,
            to: Address::directed(),
            mad: smp_get(Route::Directed(vec![7]), smp::attr::PORT_INFO, 0),
        },
        Request {
            agent: smi,
            to: Address::directed(),
            mad: smp_get(Route::Directed(vec![]), smp::attr::PORT_INFO, 0),
        },
    ];
    let answers = exchange_in_order(&mut port, &requests, settings).unwrap();
    let node = |i: usize| {
        let bytes = answers[i].as_ref().unwrap();
        let p = SmpPacket::new_checked(&bytes[..]).unwrap();
        assert_eq!(p.mad().method(), Method::GetResp);
        assert_eq!(p.status(), 0);
        NodeInfoRepr::parse(p.data()).unwrap()
    };
    let (local, far) = (node(0), node(1));
    assert_eq!(local.node_type, NodeType::Switch);
    assert_eq!(far.node_type, NodeType::Switch);
    assert_ne!(local.node_guid, far.node_guid);
    assert_eq!(
        far.local_port, 7,
        "entered through the link from leaf-a port 7"
    );
    let lid_of = |i: usize| {
        let bytes = answers[i].as_ref().unwrap();
        PortInfoRepr::parse(SmpPacket::new_checked(&bytes[..]).unwrap().data())
            .unwrap()
            .lid
    };
    let (leaf_a, leaf_b) = (lid_of(3), lid_of(2));
    assert!(
        leaf_a > 0 && leaf_b > 0 && leaf_a != leaf_b,
        "opensm gave LIDs: {leaf_a} {leaf_b}"
    );
    println!("LEAF_B_LID={leaf_b}");

    // PerfMgt: what ibsim's console set comes back exactly.
    let cpi = exchange_in_order(
        &mut port,
        &[Request {
            agent: pma,
            to: Address::gsi(leaf_a),
            mad: perf::get_request(perf::attr::CLASS_PORT_INFO, 0, 0),
        }],
        settings,
    )
    .unwrap();
    let cpi_bytes = cpi[0].as_ref().unwrap();
    let c = ClassPortInfoRepr::parse(perf::perf_data(&cpi_bytes[..]).unwrap()).unwrap();
    assert!(c.has_xmit_wait() && c.has_extended_counters(), "{c:?}");

    // A window of 64 requests over leaf-a's 8 ports, answered in any order.
    let requests: Vec<Request> = (0..64u8)
        .map(|i| Request {
            agent: pma,
            to: Address::gsi(leaf_a),
            mad: perf::get_request(perf::attr::PORT_COUNTERS, i % 8 + 1, 0),
        })
        .collect();
    let started = Instant::now();
    let answers = exchange_in_order(&mut port, &requests, settings).unwrap();
    println!("64 PortCounters in {:?}", started.elapsed());
    for (i, a) in answers.iter().enumerate() {
        let bytes = a.as_ref().unwrap_or_else(|e| panic!("request {i}: {e}"));
        let c = PortCountersRepr::parse(perf::perf_data(&bytes[..]).unwrap()).unwrap();
        assert_eq!(
            c.port_select,
            i as u8 % 8 + 1,
            "request {i} got another port's answer"
        );
        if c.port_select == 7 {
            assert_eq!((c.symbol_errors, c.xmit_wait), (7, 1234));
        }
    }
}

#[test]
#[ignore = "an inner session of umad_exchanges_with_ibsim"]
fn inner_losses() {
    let Some(mut port) = session() else { return };
    let pma = port.register(MgmtClass::Performance).unwrap();
    let leaf_b: u16 = std::env::var("LEAF_B_LID").unwrap().parse().unwrap();
    let leaf_a_lid = {
        let smi = port.register(MgmtClass::SubnDirectedRoute).unwrap();
        let r = exchange_in_order(
            &mut port,
            &[Request {
                agent: smi,
                to: Address::directed(),
                mad: smp_get(Route::Directed(vec![]), smp::attr::PORT_INFO, 0),
            }],
            Settings::default(),
        )
        .unwrap();
        let bytes = r[0].as_ref().unwrap();
        PortInfoRepr::parse(SmpPacket::new_checked(&bytes[..]).unwrap().data())
            .unwrap()
            .lid
    };
    assert_ne!(
        leaf_a_lid, leaf_b,
        "opensm gave this fabric other LIDs than the last"
    );
    let settings = Settings {
        window: 8,
        timeout: Duration::from_millis(50),
        retries: 1,
    };
    let requests: Vec<Request> = (0..16u8)
        .map(|i| Request {
            agent: pma,
            to: Address::gsi(if i % 2 == 0 { leaf_a_lid } else { leaf_b }),
            mad: perf::get_request(perf::attr::PORT_COUNTERS, 1, 0),
        })
        .collect();
    let started = Instant::now();
    let answers = exchange_in_order(&mut port, &requests, settings).unwrap();
    let took = started.elapsed();
    for (i, a) in answers.iter().enumerate() {
        if i % 2 == 0 {
            assert!(a.is_ok(), "leaf-a answers: {a:?}");
        } else {
            assert_eq!(
                a.as_ref().unwrap_err(),
                &Failure::Timeout {
                    timeout_ms: 50,
                    tries: 2
                }
            );
        }
    }
    // 8 lost requests, 2 tries of 50 ms each, 8 at a time (leaf-a's answers free slots at
    // once): about 2 rounds of 2 x 50 ms, never the 16 x 100 ms of one at a time.
    assert!(
        took < Duration::from_millis(800),
        "the window waited out losses one by one: {took:?}"
    );

    // A sweep over both switches: leaf-b's ports get an error, leaf-a's their counters, and
    // the sweep ends within its deadlines (ClassPortInfo, then nothing more to leaf-b).
    use rdma::subnet::sample::{SamplePort, Sampler};
    let ports: Vec<SamplePort> = [(0x20_0000, leaf_a_lid), (0x20_0001, leaf_b)]
        .into_iter()
        .flat_map(|(guid, lid)| [1u8, 2, 7, 8].map(|port| SamplePort { guid, lid, port }))
        .collect();
    let mut sampler = Sampler::new(pma, settings);
    let sweep = sampler.sweep(&mut port, &ports).unwrap();
    for p in &sweep.ports {
        if p.lid == leaf_b {
            assert!(p.counters.is_none(), "{p:?}");
            let error = p.error.as_deref().unwrap();
            assert!(error.starts_with("ClassPortInfo: no response"), "{p:?}");
        } else {
            assert!(p.counters.is_some() && p.error.is_none(), "{p:?}");
        }
    }
    assert!(
        sweep.spread_us < 500_000.0,
        "a lost switch held the sweep {} us",
        sweep.spread_us
    );
}

#[test]
#[ignore = "an inner session of umad_exchanges_with_ibsim"]
fn inner_discovers() {
    use rdma::subnet::{discover::discover, topofile, Subnet};
    let Some(mut port) = session() else { return };
    let smi = port.register(MgmtClass::SubnDirectedRoute).unwrap();
    let ours = discover(&mut port, smi, Settings::default()).unwrap();
    assert!(ours.errors.is_empty(), "{:?}", ours.errors);
    // ibnetdiscover on the same fabric (this process's preload and socket are inherited).
    let out = Command::new("ibnetdiscover").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs = topofile::parse(&String::from_utf8(out.stdout).unwrap(), "ibnetdiscover").unwrap();
    let nodes = |s: &Subnet| {
        let mut v: Vec<_> = s
            .nodes
            .iter()
            .map(|n| {
                (
                    n.guid,
                    n.kind,
                    n.ports,
                    n.description.clone(),
                    n.lid(),
                    n.addressed_ports.clone(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let links = |s: &Subnet| {
        let mut v: Vec<_> = s
            .links
            .iter()
            .map(|l| (l.ends(), l.width.clone(), l.speed.clone()))
            .collect();
        v.sort();
        v
    };
    assert_eq!(nodes(&ours), nodes(&theirs));
    assert_eq!(links(&ours), links(&theirs));
    assert_eq!(ours.origin, theirs.origin);
    assert_eq!(ours.nodes.len(), 6);
    assert_eq!(ours.links.len(), 6);
    // Our topology file reads back as the same subnet.
    let again = topofile::parse(&topofile::write(&ours), "ours").unwrap();
    assert_eq!(nodes(&again), nodes(&ours));
    assert_eq!(links(&again), links(&ours));
    let json = ours.to_json();
    assert_eq!(json["nodes"].as_array().unwrap().len(), 6);
    assert!(
        json["nodes"][0]["guid"].as_str().unwrap().len() == 18,
        "{json}"
    );
}

#[test]
#[ignore = "an inner session of umad_exchanges_with_ibsim"]
fn inner_samples() {
    use rdma::subnet::discover::discover;
    use rdma::subnet::sample::{switch_ports, Sampler, Sweep};
    let Some(mut port) = session() else { return };
    let smi = port.register(MgmtClass::SubnDirectedRoute).unwrap();
    let pma = port.register(MgmtClass::Performance).unwrap();
    let subnet = discover(&mut port, smi, Settings::default()).unwrap();
    let ports = switch_ports(&subnet);
    assert_eq!(
        ports.len(),
        8,
        "two switches, four linked ports each: {ports:?}"
    );
    let mut sampler = Sampler::new(pma, Settings::default());
    let first = sampler.sweep(&mut port, &ports).unwrap();
    let second = sampler.sweep(&mut port, &ports).unwrap();
    assert_eq!((first.sweep, second.sweep), (1, 2));
    let is_leaf_a_7 = |p: &rdma::subnet::sample::PortSample| {
        subnet.node(p.guid).unwrap().description == "leaf-a" && p.port == 7
    };
    for sweep in [&first, &second] {
        assert_eq!(sweep.ports.len(), 8);
        assert!(
            sweep.spread_us > 0.0 && sweep.spread_us < 100_000.0,
            "{}",
            sweep.spread_us
        );
        for p in &sweep.ports {
            let c = p.counters.unwrap_or_else(|| panic!("{p:?}"));
            assert!(
                p.error.is_none() && p.at_unix_ns >= sweep.start_unix_ns,
                "{p:?}"
            );
            if is_leaf_a_7(p) {
                // set through ibsim's console by the outer test
                assert_eq!((c.symbol_errors, c.xmit_wait), (7, 1234), "{p:?}");
            }
        }
    }
    // The inter-switch links carry the MADs themselves: their data counters grow between
    // sweeps, in bytes (a multiple of 4).
    let leaf_a_7 = |s: &Sweep| {
        s.ports
            .iter()
            .find(|p| is_leaf_a_7(p))
            .unwrap()
            .counters
            .unwrap()
    };
    let (a, b) = (leaf_a_7(&first), leaf_a_7(&second));
    assert!(
        b.xmit_data_bytes > a.xmit_data_bytes && b.xmit_data_bytes % 4 == 0,
        "{a:?} {b:?}"
    );
    let line = serde_json::to_value(&first).unwrap();
    assert_eq!(line["ports"][0]["guid"].as_str().unwrap().len(), 18);
    assert!(line["ports"][0]["error"].is_null());
}
