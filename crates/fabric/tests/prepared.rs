//! A prepared simulator (`fabric::sim::Prepared`) gives, run after run, exactly what a fresh
//! `Simulation` of the same tree, configuration, seed and jobs gives: the jobs' results and
//! the counters of every port, whatever the runs before it left behind. On a complete tree
//! with adaptive routing, on one with a missing link (routed around) and links at rates of
//! their own, and with runs cut off at their end.

mod common;

use common::{radix8, send, Script};
use std::collections::VecDeque;

use fabric::sim::{PortCounters, Prepared, SimConfig, Simulation};
use fabric::telemetry::{TelemetryConfig, TelemetryKind};
use fabric::topology::{Level, NodeId, PortRef, SwitchId, Topology};
use fabric::traffic::{Job, Op, Uniform, Workload};
use rand::{Rng, SeedableRng};

fn config() -> SimConfig {
    SimConfig {
        telemetry: TelemetryConfig {
            kind: TelemetryKind::Off,
            ..TelemetryConfig::default()
        },
        counter_interval_ps: Some(1_000_000_000_000),
        ..SimConfig::default()
    }
}

/// Every one of `nodes` sends `messages` messages of `bytes` to random others (`seed`).
fn random(nodes: &[u32], messages: u32, bytes: u64, seed: u64) -> Job {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let n = nodes.len() as u32;
    let ops: Vec<VecDeque<Op>> = (0..n)
        .map(|rank| {
            (0..messages)
                .map(|_| {
                    let other = rng.gen_range(0..n - 1);
                    send(if other >= rank { other + 1 } else { other }, bytes)
                })
                .collect()
        })
        .collect();
    Job {
        name: "random".to_string(),
        placement: nodes.iter().map(|&n| NodeId(n)).collect(),
        program: Box::new(Script(ops)),
    }
}

/// Other jobs' load as the mesh runs it: uniform random traffic drawn from the run's seed.
fn uniform(nodes: &[u32], load: f64) -> Job {
    Job {
        name: "uniform".to_string(),
        placement: nodes.iter().map(|&n| NodeId(n)).collect(),
        program: Workload::Uniform(Uniform {
            ranks: nodes.len() as u32,
            bytes: 8192,
            load,
            link_gbps: 100.0,
            end_ps: Some(20_000_000),
            messages: None,
        })
        .program(),
    }
}

/// The jobs of run `i`: runs on different nodes, of different kinds, one job or several.
fn jobs(i: u64) -> Vec<Job> {
    let range = |a: u32, b: u32| (a..b).collect::<Vec<u32>>();
    match i % 4 {
        0 => vec![random(&range(0, 64), 8, 20_000, i)],
        1 => vec![random(&[3, 20], 4, 5_000, i), uniform(&range(32, 128), 0.6)],
        2 => vec![
            random(&range(64, 128), 6, 12_000, i),
            random(&range(0, 16), 2, 300, i + 7),
        ],
        _ => vec![uniform(&range(0, 128), 0.9)],
    }
}

/// Runs `runs` jobs lists in a row on one prepared simulator and each on a fresh
/// simulation, and compares them.
fn same_as_fresh(topology: &Topology, config: SimConfig, runs: u64) {
    let mut prepared = Prepared::new(topology, config.clone()).unwrap();
    for i in 0..runs {
        let seed = 1000 + i * 17;
        let fresh = Simulation::new(
            topology,
            SimConfig {
                seed,
                ..config.clone()
            },
            jobs(i),
        )
        .unwrap()
        .run(&mut |_| {});
        let reused = prepared.run(seed, jobs(i)).unwrap();
        assert!(fresh.packets_delivered > 0, "run {i}");
        assert_eq!(reused.jobs, fresh.jobs, "run {i}");
        assert_eq!(
            (reused.end_ps, reused.events, reused.packets_delivered),
            (fresh.end_ps, fresh.events, fresh.packets_delivered),
            "run {i}"
        );
        let end = fresh.counters.last().expect("a snapshot at the end");
        let mut listed = vec![false; topology.num_ports()];
        for &(port, counters) in &reused.ports {
            assert_eq!(counters, end.ports[port as usize], "run {i}, port {port}");
            listed[port as usize] = true;
        }
        for (port, counters) in end.ports.iter().enumerate() {
            if !listed[port] {
                assert_eq!(*counters, PortCounters::default(), "run {i}, port {port}");
            }
        }
        assert!(
            reused.ports.windows(2).all(|pair| pair[0].0 < pair[1].0),
            "ascending, once each"
        );
    }
}

#[test]
fn a_prepared_simulator_runs_as_a_fresh_one_run_after_run() {
    same_as_fresh(&radix8(), config(), 8);
}

#[test]
fn deterministic_routing_around_a_missing_link_at_links_own_rates_runs_as_a_fresh_one() {
    let tree = radix8();
    let agg = tree.switches_at(Level::Aggregation).start;
    let missing = [(0, 4), (agg, 2)].map(|(s, port)| PortRef {
        switch: SwitchId(s),
        port,
    });
    let rates = (0..tree.num_ports())
        .map(|p| if p % 5 == 0 { 50.0 } else { 100.0 })
        .collect();
    let tree = tree
        .without_links(&missing)
        .unwrap()
        .with_link_rates(rates)
        .unwrap();
    let config = SimConfig {
        adaptive: false,
        ..config()
    };
    same_as_fresh(&tree, config, 8);
}

#[test]
fn runs_cut_off_at_their_end_leave_nothing_behind() {
    let config = SimConfig {
        end_ps: Some(3_000_000),
        ..config()
    };
    same_as_fresh(&radix8(), config, 6);
}
