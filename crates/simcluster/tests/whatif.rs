//! The what-if on the built-in clusters: each example of issue 28's section 3 comes out as
//! the replay says, and bad input is refused naming it.

use std::path::Path;

use fabric::traffic::WorkloadFile;
use model::job::{Culprit, JobEvidence, JobPair, JobPort, Layer, PairParts, WhatIf};
use model::pair::PairEnd;
use model::pair::PartStatus;
use model::switch_port::SwitchPortCounters;
use simcluster::whatif::{
    what_if, JobTraffic, LinkStates, Observed, WhatIfSettings, HEALTHY_TOLERANCE,
};
use simcluster::{Cluster, ClusterFaults};

fn pod() -> Cluster {
    Cluster::builtin("pod-32").unwrap().unwrap()
}

fn hosts(cluster: &Cluster, names: &[String]) -> Vec<usize> {
    names
        .iter()
        .map(|n| cluster.host_index(n).unwrap())
        .collect()
}

fn nodes(numbers: impl IntoIterator<Item = usize>) -> Vec<String> {
    numbers.into_iter().map(|n| format!("node{n:03}")).collect()
}

fn states(cluster: &Cluster, texts: &[&str]) -> LinkStates {
    let texts: Vec<String> = texts.iter().map(|s| s.to_string()).collect();
    LinkStates::from_faults(&ClusterFaults::parse(&texts, cluster).unwrap().fabric)
}

const RING: JobTraffic = JobTraffic::RingAllReduce { bytes: 64 << 20 };

/// The what-if of a simulated job that ran under `faults`, the verdict having measured them.
fn replay(cluster: &Cluster, order: &[String], traffic: &JobTraffic, faults: &[&str]) -> WhatIf {
    let truth = states(cluster, faults);
    let placement = hosts(cluster, order);
    what_if(
        cluster,
        &placement,
        traffic,
        Observed::Replay(truth.clone()),
        &truth,
        &WhatIfSettings::default(),
    )
    .unwrap()
}

fn scenario(w: &WhatIf, name: &str) -> f64 {
    w.scenarios
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no scenario {name}: {w:#?}"))
        .time_us
}

/// Ring all-reduce's line-rate bound: 2 (n - 1) / n x bytes over all the host's rails, us.
fn ring_bound_us(hosts: usize, bytes: u64, rails: usize, gbps: f64) -> f64 {
    let n = hosts as f64;
    2.0 * (n - 1.0) / n * bytes as f64 * 8.0 / (rails as f64 * gbps) / 1e3
}

#[test]
fn a_ring_in_rack_order_on_a_healthy_fabric_is_none() {
    let pod = pod();
    let w = replay(&pod, &nodes(1..=16), &RING, &[]);
    assert_eq!(w.explains, "none", "{w:#?}");
    assert!(w.simulated && w.element.is_none() && w.suggested_mapping.is_empty());
    assert_eq!(
        w.traffic,
        "ring all-reduce of 64 MiB over 16 ranks, 4 rails per host"
    );
    // The replay comes within 10 % of the ring's bound, never under it.
    let bound = ring_bound_us(16, 64 << 20, 4, 200.0);
    let healthy = scenario(&w, "healthy");
    assert!(
        healthy >= bound && healthy < 1.1 * bound,
        "{healthy} vs {bound}"
    );
    // Rack order is the suggested order: nothing to compare with.
    assert!(w.scenarios.iter().all(|s| s.name != "suggested_mapping"));
    // The true states are the healthy ones: one run, the observed scenario points at it.
    let observed = &w.scenarios[0];
    assert_eq!((observed.name.as_str(), observed.packets), ("observed", 0));
    assert!(observed.setting.ends_with("(the same run as `healthy`)"));
    assert!(scenario(&w, "healthy") == observed.time_us);
}

#[test]
fn interleaving_two_leaves_costs_nothing_on_pod_32() {
    // node001, node009, node002, node010, ...: every ring step crosses the spines, but
    // D-mod-k routes send each cross-leaf flow up its own uplink (the destinations' ports
    // differ) and down its own spine port, so pod-32's full bisection hides the mapping.
    let pod = pod();
    let order: Vec<String> = (1..=8).flat_map(|n| nodes([n, n + 8])).collect();
    let w = replay(&pod, &order, &RING, &[]);
    assert_eq!(w.explains, "none", "{w:#?}");
    let (healthy, rack) = (scenario(&w, "healthy"), scenario(&w, "suggested_mapping"));
    assert!(
        rack <= healthy && healthy < 1.05 * rack,
        "{healthy} vs {rack}"
    );
}

#[test]
fn a_random_rank_order_over_four_leaves_is_mapping() {
    // Ranks in the order hosts joined (torchrun's dynamic rendezvous): consecutive ranks
    // on different leaves whose destinations share a port number share one uplink.
    let pod = pod();
    let order = nodes([
        26, 31, 15, 11, 10, 8, 22, 17, 18, 14, 21, 25, 24, 29, 4, 16, 13, 30, 6, 32, 3, 19, 12, 1,
        28, 23, 2, 5, 27, 9, 7, 20,
    ]);
    let w = replay(&pod, &order, &RING, &[]);
    assert_eq!(w.explains, "mapping", "{w:#?}");
    assert_eq!(w.suggested_mapping, nodes(1..=32));
    let (healthy, suggested) = (scenario(&w, "healthy"), scenario(&w, "suggested_mapping"));
    assert!(suggested < 0.5 * healthy, "{suggested} vs {healthy}");
    assert!(w.evidence.contains("faster"), "{}", w.evidence);
}

#[test]
fn a_tree_all_reduce_is_pattern_whatever_the_mapping() {
    let pod = pod();
    let w = replay(
        &pod,
        &nodes(1..=16),
        &JobTraffic::TreeAllReduce { bytes: 64 << 20 },
        &[],
    );
    assert_eq!(w.explains, "pattern", "{w:#?}");
    // Rank 0's link carries log2(16) = 4 buffers each way: about 4 x the ring's bound.
    let bound = ring_bound_us(16, 64 << 20, 4, 200.0);
    assert!(scenario(&w, "healthy") > 3.0 * bound, "{w:#?}");
    assert!(w.suggested_mapping.is_empty());
}

#[test]
fn a_naive_reduce_from_a_workload_file_is_pattern() {
    let pod = pod();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/naive-reduce-16.workload");
    let file = WorkloadFile::load(&path).unwrap();
    let w = replay(&pod, &nodes(1..=16), &JobTraffic::File(file), &[]);
    assert_eq!(w.explains, "pattern", "{w:#?}");
    assert!(
        w.traffic.contains("15 messages over 16 ranks"),
        "{}",
        w.traffic
    );
}

#[test]
fn other_jobs_traffic_on_the_jobs_leaves_is_background_traffic() {
    // A job sharing its leaves with other jobs: node005..012 and node021..028.
    let pod = pod();
    let order = nodes((5..=12).chain(21..=28));
    let w = replay(&pod, &order, &RING, &["fabric:background:0.6"]);
    assert_eq!(w.explains, "background_traffic", "{w:#?}");
    assert!(
        scenario(&w, "observed") > 1.2 * scenario(&w, "healthy"),
        "{w:#?}"
    );
    assert!(w.element.is_none());
}

#[test]
fn other_jobs_on_other_leaves_do_not_slow_a_job_that_fills_its_own() {
    // node001..016 fill their leaves: other jobs' traffic (node017..032) crosses none of
    // the job's links under D-mod-k routes.
    let pod = pod();
    let w = replay(&pod, &nodes(1..=16), &RING, &["fabric:background:0.6"]);
    assert_eq!(w.explains, "none", "{w:#?}");
}

#[test]
fn a_degraded_cable_on_the_jobs_route_is_the_element() {
    let pod = pod();
    let w = replay(
        &pod,
        &nodes(1..=16),
        &RING,
        &["fabric:degrade:node005/rnic0:0.5"],
    );
    assert_eq!(w.explains, "element", "{w:#?}");
    assert_eq!(w.element.as_deref(), Some("leaf1/5"));
    // The ring waits for its slowest step: half the rate on one rail, twice the time.
    let ratio = scenario(&w, "observed") / scenario(&w, "healthy");
    assert!((1.8..2.1).contains(&ratio), "{ratio}");
}

#[test]
fn a_degraded_cable_off_the_jobs_routes_is_not_the_element() {
    // leaf3/9 is the uplink of node017..024's rail 0: no route of node001..016 crosses it.
    let pod = pod();
    let w = replay(&pod, &nodes(1..=16), &RING, &["fabric:degrade:leaf3/9:0.5"]);
    assert_ne!(w.explains, "element", "{w:#?}");
    assert!(w.element.is_none());
}

#[test]
fn of_two_degraded_cables_the_one_that_slows_the_job_most_is_named() {
    let pod = pod();
    let w = replay(
        &pod,
        &nodes(1..=16),
        &RING,
        &[
            "fabric:degrade:leaf1/5:0.8",
            "fabric:degrade:leaf6/2:0.4",
            "fabric:degrade:leaf3/9:0.1",
        ],
    );
    assert_eq!(w.explains, "element", "{w:#?}");
    // leaf6/2 is node010's rail-1 cable; leaf3/9 is off the routes and not tried.
    assert_eq!(w.element.as_deref(), Some("leaf6/2"));
    let tried: Vec<&str> = w
        .scenarios
        .iter()
        .filter(|s| s.name.starts_with("element "))
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(tried, ["element leaf1/5", "element leaf6/2"]);
}

#[test]
fn a_down_cable_of_a_jobs_rnic_is_the_element() {
    let pod = pod();
    let w = replay(&pod, &nodes(1..=16), &RING, &["fabric:down:node003/rnic2"]);
    assert_eq!(w.explains, "element", "{w:#?}");
    assert_eq!(w.element.as_deref(), Some("leaf9/3"));
    assert!(w.evidence.contains("cannot run"), "{}", w.evidence);
}

#[test]
fn a_real_jobs_time_is_compared_with_the_replays() {
    let pod = pod();
    let placement = hosts(&pod, &nodes(1..=16));
    let run = |observed_us: f64, measured: &LinkStates| {
        what_if(
            &pod,
            &placement,
            &RING,
            Observed::Time(observed_us),
            measured,
            &WhatIfSettings::default(),
        )
        .unwrap()
    };
    let healthy_us = scenario(&run(1000.0, &LinkStates::default()), "healthy");
    let on_time = run(1.02 * healthy_us, &LinkStates::default());
    assert_eq!(on_time.explains, "none", "{on_time:#?}");
    assert_eq!(on_time.scenarios[0].packets, 0, "observed is measured");
    // Three times slower, and the fabric's measured states explain none of it.
    let slow = run(3.0 * healthy_us, &LinkStates::default());
    assert_eq!(slow.explains, "unexplained", "{slow:#?}");
    // Twice slower, with a measured cable at half rate on the job's route.
    let measured = states(&pod, &["fabric:degrade:leaf1/5:0.5"]);
    let element = run(2.0 * healthy_us, &measured);
    assert_eq!(element.explains, "element", "{element:#?}");
    assert_eq!(element.element.as_deref(), Some("leaf1/5"));
}

#[test]
fn the_same_seed_gives_the_same_answer() {
    let pod = pod();
    let order = nodes((5..=12).chain(21..=28));
    let a = replay(&pod, &order, &RING, &["fabric:background:0.3"]);
    let b = replay(&pod, &order, &RING, &["fabric:background:0.3"]);
    assert_eq!(a, b);
    // Other seeds draw other jobs' traffic anew: the time moves by less than the tolerance
    // that calls a job healthy.
    let truth = states(&pod, &["fabric:background:0.3"]);
    for seed in 2..=4 {
        let other = what_if(
            &pod,
            &hosts(&pod, &order),
            &RING,
            Observed::Replay(truth.clone()),
            &truth,
            &WhatIfSettings { seed },
        )
        .unwrap();
        let ratio = scenario(&other, "observed") / scenario(&a, "observed");
        println!("seed {seed}: {ratio:.4}");
        assert!(
            (ratio - 1.0).abs() < 0.5 * HEALTHY_TOLERANCE,
            "seed {seed}: {ratio}"
        );
    }
}

#[test]
fn bad_input_is_refused_naming_it() {
    let pod = pod();
    let file = WorkloadFile::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/naive-reduce-16.workload"),
    )
    .unwrap();
    let none = LinkStates::default();
    let settings = WhatIfSettings::default();
    for (placement, traffic, observed, says) in [
        (vec![0], RING, Observed::Time(1.0), "at least two hosts"),
        (
            vec![0, 1, 0],
            RING,
            Observed::Time(1.0),
            "`node001` is placed twice",
        ),
        (
            vec![0, 99],
            RING,
            Observed::Time(1.0),
            "no host of index 99",
        ),
        (
            vec![0, 1],
            RING,
            Observed::Time(-3.0),
            "not a positive number",
        ),
        (
            vec![0, 1],
            JobTraffic::File(file.clone()),
            Observed::Time(1.0),
            "the workload file has 16 ranks but the job has 2 hosts",
        ),
    ] {
        let err = what_if(&pod, &placement, &traffic, observed, &none, &settings)
            .unwrap_err()
            .to_string();
        assert!(err.contains(says), "{says}: {err}");
    }
}

fn pair(a: &str, b: &str, gbps: f64, cables: &[&str]) -> JobPair {
    let end = |name: &str| PairEnd {
        host: name.to_string(),
        rnic: "rnic0".to_string(),
        device: None,
    };
    JobPair {
        parts: PairParts {
            a: end(a),
            b: end(b),
            latency_us: Some(3.0),
            bandwidth_gbps: Some(gbps),
            host_a_us: Some(1.0),
            host_b_us: Some(1.0),
            network_us: Some(1.0),
            route: Vec::new(),
            status: PartStatus::Abnormal,
            host_a_status: PartStatus::Normal,
            host_b_status: PartStatus::Normal,
            network_status: PartStatus::Abnormal,
            endpoint_a: "gpu0".to_string(),
            endpoint_b: "gpu0".to_string(),
        },
        cables: cables.iter().map(|c| c.to_string()).collect(),
        retransmitted_packets: 0,
        reason: None,
        counters_a: None,
        round: None,
    }
}

fn culprit(component: Option<&str>, cause: &str) -> Culprit {
    Culprit {
        layer: Layer::Fabric,
        host: None,
        component: component.map(str::to_string),
        cause: cause.to_string(),
        score: 0.9,
        evidence: String::new(),
        candidates: Vec::new(),
        action: String::new(),
    }
}

#[test]
fn a_verdicts_culprits_are_sized_from_its_evidence() {
    let pod = pod();
    let evidence = JobEvidence {
        pairs: vec![
            pair("node005", "node006", 100.0, &["leaf1/5", "leaf1/6"]),
            pair(
                "node005",
                "node013",
                120.0,
                &["leaf1/5", "leaf1/13", "leaf2/13", "leaf2/5"],
            ),
            pair("node001", "node002", 190.0, &["leaf1/1", "leaf1/2"]),
        ],
        ports: vec![JobPort {
            port: "leaf2/9".to_string(),
            cable: "leaf2/9".to_string(),
            on_job_route: true,
            during: SwitchPortCounters {
                symbol_errors: 3000,
                rcv_errors: 1000,
                ..Default::default()
            },
            during_s: 10.0,
            before: None,
            before_s: 0.0,
            read_now_s: 0.0,
        }],
        ..Default::default()
    };
    let culprits = [
        // Named by its far end: the same cable as leaf1/5.
        culprit(Some("node005/rnic0"), "link_degraded"),
        culprit(Some("spine1/2"), "link_errors"),
        culprit(Some("leaf4/16"), "link_down"),
        culprit(None, "background_traffic"),
        Culprit {
            layer: Layer::Host,
            ..culprit(Some("gpu4--lsw4"), "pcie_degraded")
        },
    ];
    let states = LinkStates::from_culprits(&pod, &culprits, &evidence).unwrap();
    let label = |c: simcluster::Cable| pod.cable_label(c);
    let degraded: Vec<(String, f64)> = states
        .degraded
        .iter()
        .map(|&(c, f)| (label(c), f))
        .collect();
    assert_eq!(degraded, [("leaf1/5".to_string(), 0.5)]);
    let errors: Vec<(String, f64)> = states.errors.iter().map(|&(c, r)| (label(c), r)).collect();
    assert_eq!(errors, [("leaf2/9".to_string(), 400.0)]);
    assert_eq!(
        states.down.iter().map(|&c| label(c)).collect::<Vec<_>>(),
        ["leaf4/16"]
    );
    // The median pair kept 120 of 200 Gb/s.
    assert!(
        (states.background.unwrap() - 0.4).abs() < 1e-9,
        "{states:?}"
    );

    for (culprit, says) in [
        (
            culprit(Some("leaf7/3"), "link_degraded"),
            "no pair measured a bandwidth across it",
        ),
        (
            culprit(Some("leaf7/3"), "link_errors"),
            "no port of the cable counted errors",
        ),
        (
            culprit(Some("leaf99/3"), "link_down"),
            "neither a switch nor a host",
        ),
        (culprit(None, "link_degraded"), "it names no cable"),
    ] {
        let err = LinkStates::from_culprits(&pod, &[culprit], &evidence)
            .unwrap_err()
            .to_string();
        assert!(err.contains(says), "{says}: {err}");
    }
}

#[test]
fn full_891_answers_on_the_three_level_tree() {
    let full = Cluster::resolve("full-891", &|_, _| unreachable!("built in")).unwrap();
    // 64 hosts: rail 0 on leaves 1..4, rails 1..3 further on; a cable on rail 2's ring.
    let w = replay(
        &full,
        &nodes(1..=64),
        &JobTraffic::RingAllReduce { bytes: 16 << 20 },
        &["fabric:degrade:node040/rnic2:0.5"],
    );
    assert_eq!(w.explains, "element", "{w:#?}");
    assert_eq!(
        w.element,
        Some(full.cable_label(full.cable_at(full.parse_port("node040/rnic2").unwrap())))
    );
}
