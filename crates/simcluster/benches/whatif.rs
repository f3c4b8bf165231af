//! The what-if's cost at scale (issue 28: a 256-node job on the 3,564-node fabric answers in
//! under 30 s): a 64 MiB all-reduce over node001..node256 of `full-891` (1,024 RNICs, one
//! ring or tree per rail), one case per answer. `cargo bench -p simcluster --bench whatif --
//! [CASE]`; prints the work done (scenarios, packets the simulator moved) beside the time.
//! `background*` is the background case with the load measured at 0.5 where it was 0.6, so
//! that the observed replay and the measured background are two runs, not one.

use std::time::Instant;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use simcluster::whatif::{what_if, JobTraffic, LinkStates, Observed, WhatIfSettings};
use simcluster::{Cluster, ClusterFaults};

const HOSTS: usize = 256;
const BYTES: u64 = 64 << 20;

fn main() {
    // `cargo bench` passes `--bench`; a positional argument picks one case.
    let only: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    let started = Instant::now();
    let full = Cluster::builtin("full-891")
        .expect("full-891 is built in")
        .expect("full-891 builds");
    println!(
        "full-891: {} hosts, {} RNICs, {} switches, built in {:.2} s",
        full.hosts.len(),
        full.rnic_ports().count(),
        full.fabric.switch_names.len(),
        started.elapsed().as_secs_f64()
    );
    let rack: Vec<usize> = (0..HOSTS).collect();
    let mut joined = rack.clone();
    joined.shuffle(&mut ChaCha8Rng::seed_from_u64(1));
    let ring = JobTraffic::RingAllReduce { bytes: BYTES };
    let tree = JobTraffic::TreeAllReduce { bytes: BYTES };
    // Each case: the true faults, and the states the verdict measured when they differ
    // (then the observed replay and the measured ones are separate runs).
    type Case<'a> = (
        &'a str,
        &'a [usize],
        &'a JobTraffic,
        &'a [&'a str],
        Option<&'a [&'a str]>,
    );
    let cases: [Case; 6] = [
        ("healthy", &rack, &ring, &[], None),
        (
            "element",
            &rack,
            &ring,
            &["fabric:degrade:node040/rnic2:0.5"],
            None,
        ),
        ("mapping", &joined, &ring, &[], None),
        ("pattern", &rack, &tree, &[], None),
        ("background", &rack, &ring, &["fabric:background:0.6"], None),
        (
            "background*",
            &rack,
            &ring,
            &["fabric:background:0.6"],
            Some(&["fabric:background:0.5"]),
        ),
    ];
    println!(
        "{:<11} {:<19} {:>9} {:>12} {:>11} {:>8}",
        "case", "explains", "scenarios", "packets", "observed_us", "wall_s"
    );
    let states = |texts: &[&str]| {
        let texts: Vec<String> = texts.iter().map(|s| s.to_string()).collect();
        LinkStates::from_faults(&ClusterFaults::parse(&texts, &full).unwrap().fabric)
    };
    for (name, placement, traffic, faults, measured) in cases {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let truth = states(faults);
        let measured = measured.map_or(truth.clone(), states);
        let start = Instant::now();
        let answer = what_if(
            &full,
            placement,
            traffic,
            Observed::Replay(truth),
            &measured,
            &WhatIfSettings::default(),
        )
        .expect("the what-if runs");
        let wall = start.elapsed().as_secs_f64();
        let packets: u64 = answer.scenarios.iter().map(|s| s.packets).sum();
        let observed = answer.scenarios.iter().find(|s| s.name == "observed");
        println!(
            "{:<11} {:<19} {:>9} {:>12} {:>11.1} {:>8.2}",
            name,
            match &answer.element {
                Some(e) => format!("{} {e}", answer.explains),
                None => answer.explains.clone(),
            },
            answer.scenarios.len(),
            packets,
            observed.map_or(f64::NAN, |s| s.time_us),
            wall
        );
    }
}
