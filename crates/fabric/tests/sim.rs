//! The engine against what the model promises (`fabric::sim` docs): exact latencies, line-rate
//! streaming, conservation, flow control within its buffers, adaptive spreading, congestion at
//! a hot spot, cut-off, the op order of a rank, input checks and reproducibility.

mod common;

use common::{radix8, send, Script};
use std::collections::VecDeque;

use fabric::sim::{Progress, SimConfig, SimResult, Simulation};
use fabric::telemetry::{TelemetryConfig, TelemetryKind};
use fabric::topology::{NodeId, PortRef, SwitchId, Topology};
use fabric::traffic::{Job, Op, Program};
use rand::{Rng, RngCore};

fn config() -> SimConfig {
    SimConfig {
        telemetry: TelemetryConfig {
            kind: TelemetryKind::Off,
            ..TelemetryConfig::default()
        },
        ..SimConfig::default()
    }
}

/// Picoseconds to serialise `bytes` at the default 100 Gb/s.
fn serialisation_ps(bytes: u64) -> u64 {
    bytes * 80
}

/// A job whose rank `r` runs on node `nodes[r]` and plays `ops[r]`.
fn scripted(name: &str, nodes: &[u32], ops: Vec<Vec<Op>>) -> Job {
    Job {
        name: name.to_string(),
        placement: nodes.iter().map(|&n| NodeId(n)).collect(),
        program: Box::new(Script(ops.into_iter().map(VecDeque::from).collect())),
    }
}

/// Every rank sends `messages` messages of `bytes` to uniformly random other ranks, as fast
/// as its link allows; the destinations come from the simulation's traffic stream.
struct Uniform {
    ranks: u32,
    bytes: u64,
    left: Vec<u32>,
}

impl Program for Uniform {
    fn next_op(&mut self, rank: u32, rng: &mut dyn RngCore) -> Option<Op> {
        let left = &mut self.left[rank as usize];
        if *left == 0 {
            return None;
        }
        *left -= 1;
        let other = rng.gen_range(0..self.ranks - 1);
        Some(send(
            if other >= rank { other + 1 } else { other },
            self.bytes,
        ))
    }
}

fn uniform(nodes: u32, messages: u32, bytes: u64) -> Job {
    Job {
        name: "uniform".to_string(),
        placement: (0..nodes).map(NodeId).collect(),
        program: Box::new(Uniform {
            ranks: nodes,
            bytes,
            left: vec![messages; nodes as usize],
        }),
    }
}

fn run(topology: &Topology, config: SimConfig, jobs: Vec<Job>) -> SimResult {
    Simulation::new(topology, config, jobs)
        .unwrap()
        .run(&mut |_| {})
}

/// The port a leaf uses to reach a node.
fn to_node(topology: &Topology, node: u32) -> usize {
    topology.port_index(topology.node_port(NodeId(node))) as usize
}

#[test]
fn one_packet_takes_exactly_its_serialisations_and_latencies() {
    let t = radix8();
    let bytes = 1000;
    // Node 0 to node 1 (same leaf: 1 hop), node 2 to node 127 (another pod: 5 hops).
    let job = scripted(
        "pairs",
        &[0, 1, 2, 127],
        vec![vec![send(1, bytes)], vec![], vec![send(3, bytes)], vec![]],
    );
    let result = run(&t, config(), vec![job]);
    let (link, switch) = (20_000, 90_000);
    let per_hop = serialisation_ps(bytes) + link;
    let same_leaf = 2 * per_hop + switch;
    let across_pods = 6 * per_hop + 5 * switch;
    let job = &result.jobs[0];
    assert!(job.finished);
    assert_eq!(job.completion_ps, across_pods);
    assert_eq!(job.max_message_latency_ns, across_pods as f64 / 1000.0);
    assert_eq!(
        job.mean_message_latency_ns,
        (same_leaf + across_pods) as f64 / 2000.0
    );
    assert_eq!(job.total_hops, 1 + 5);
}

#[test]
fn a_large_message_streams_at_link_rate() {
    let t = radix8();
    let bytes = 4 << 20;
    let job = scripted("stream", &[0, 127], vec![vec![send(1, bytes)], vec![]]);
    let result = run(&t, config(), vec![job]);
    let job = &result.jobs[0];
    assert_eq!(job.packets_delivered, bytes / 4096);
    // Line rate end to end, plus the pipeline filling: the first packet's five extra hops.
    // Credits for 16 packets cover each hop's credit round trip many times over, so nothing
    // ever waits: exactly line rate.
    let ideal = serialisation_ps(bytes) + 5 * (serialisation_ps(4096) + 110_000) + 20_000;
    assert_eq!(job.completion_ps, ideal);
}

/// Random destinations drawn here (not by the simulation), so the test knows what each node
/// must receive: every rank sends `messages` messages of `bytes`.
fn random_scripts(nodes: u32, messages: u32, bytes: u64, seed: u64) -> Vec<Vec<Op>> {
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(seed);
    (0..nodes)
        .map(|rank| {
            (0..messages)
                .map(|_| {
                    let other = rng.gen_range(0..nodes - 1);
                    send(if other >= rank { other + 1 } else { other }, bytes)
                })
                .collect()
        })
        .collect()
}

#[test]
fn every_packet_is_delivered_and_counted_on_its_ports() {
    let t = radix8();
    let (messages, bytes) = (40, 10_000);
    let scripts = random_scripts(128, messages, bytes, 7);
    let mut expected_into = vec![0u64; 128];
    for op in scripts.iter().flatten() {
        if let Op::Send { dst, .. } = op {
            expected_into[*dst as usize] += 3; // 10 000 B in 4 KiB packets
        }
    }
    let nodes: Vec<u32> = (0..128).collect();
    let result = run(&t, config(), vec![scripted("random", &nodes, scripts)]);
    let job = &result.jobs[0];
    assert!(job.finished);
    assert_eq!(job.messages_sent, 128 * u64::from(messages));
    assert_eq!(job.messages_delivered, job.messages_sent);
    assert_eq!(job.packets_delivered, 3 * job.messages_sent);
    assert_eq!(job.bytes_delivered, bytes * job.messages_sent);
    assert_eq!(result.packets_delivered, job.packets_delivered);
    let truth = &result.ground_truth;
    for (n, &expected) in expected_into.iter().enumerate() {
        assert_eq!(
            truth.packets[0][to_node(&t, n as u32)],
            expected,
            "node {n}"
        );
    }
    // Every hop is one switch output port crossed.
    assert_eq!(truth.packets[0].iter().sum::<u64>(), job.total_hops);
    // The three packets of a message take paths of the same length (it depends on where the
    // nodes are, not on the route), so the ports carry each message's bytes once per hop.
    assert_eq!(truth.bytes.iter().sum::<u64>(), job.total_hops / 3 * bytes);
}

#[test]
fn same_seed_same_result_other_seed_other_result() {
    let t = radix8();
    let once = |seed: u64| {
        let config = SimConfig { seed, ..config() };
        let mut result = run(&t, config, vec![uniform(128, 30, 3000)]);
        result.wall_seconds = 0.0; // the one measured field
        serde_json::to_string(&result).unwrap()
    };
    let first = once(11);
    assert_eq!(first, once(11));
    assert_ne!(first, once(12));
}

#[test]
fn progress_ends_with_the_final_counts() {
    let t = radix8();
    let mut last: Option<Progress> = None;
    let result = Simulation::new(&t, config(), vec![uniform(128, 10, 3000)])
        .unwrap()
        .run(&mut |p| last = Some(p));
    let last = last.expect("at least the final report");
    assert_eq!(
        (last.sim_ps, last.events, last.packets_delivered),
        (result.end_ps, result.events, result.packets_delivered)
    );
}

/// All 127 other nodes send to node 0 at once: its leaf port is the bottleneck.
fn many_to_one(bytes: u64) -> Job {
    let nodes: Vec<u32> = (0..128).collect();
    let mut ops = vec![vec![]];
    ops.extend((1..128).map(|_| vec![send(0, bytes)]));
    scripted("incast", &nodes, ops)
}

#[test]
fn many_to_one_congests_the_root_port_and_runs_at_its_rate() {
    let t = radix8();
    let bytes = 64 * 1024;
    let result = run(&t, config(), vec![many_to_one(bytes)]);
    let job = &result.jobs[0];
    assert!(job.finished);
    let root = to_node(&t, 0);
    let truth = &result.ground_truth;
    let congested = truth.congested[0][root] as f64 / truth.packets[0][root] as f64;
    assert!(congested > 0.8, "{congested}");
    let at_link_rate = serialisation_ps(127 * bytes) as f64;
    let ratio = job.completion_ps as f64 / at_link_rate;
    assert!((1.0..1.02).contains(&ratio), "{ratio}");
    // The root port was busy all along.
    assert_eq!(truth.busy_ps[root], serialisation_ps(127 * bytes));
}

#[test]
fn buffers_never_hold_more_than_their_size_under_contention() {
    let t = radix8();
    // A hot spot plus uniform background traffic, in two jobs sharing the tree.
    let incast_nodes: Vec<u32> = (0..64).collect();
    let mut ops = vec![vec![]];
    ops.extend((1..64).map(|_| vec![send(0, 32 * 1024); 4]));
    let incast = scripted("incast", &incast_nodes, ops);
    let background_nodes: Vec<u32> = (64..128).collect();
    let background = scripted(
        "background",
        &background_nodes,
        random_scripts(64, 30, 8192, 3),
    );
    let config = SimConfig {
        buffer_bytes: 16 * 1024,
        ..config()
    };
    let (result, peaks) = Simulation::new(&t, config, vec![incast, background])
        .unwrap()
        .run_with_buffer_peaks(&mut |_| {});
    assert!(result.jobs.iter().all(|j| j.finished));
    let limit = 16 * 1024;
    assert!(peaks.input_bytes.iter().all(|&b| b <= limit));
    assert!(peaks.output_bytes.iter().all(|&b| b <= limit));
    // The contention filled buffers to the brim: the limits were what held them.
    assert_eq!(peaks.input_bytes.iter().max(), Some(&limit));
    assert_eq!(peaks.output_bytes.iter().max(), Some(&limit));
    // Two jobs: their ground truth is kept apart.
    let truth = &result.ground_truth;
    assert_eq!(truth.packets[0][to_node(&t, 70)], 0);
    assert!(truth.packets[1][to_node(&t, 70)] > 0);
    assert_eq!(truth.packets[1][to_node(&t, 0)], 0);
}

/// Bytes on each up port of leaf 0 when its four nodes stream to one node in another pod.
fn leaf_up_bytes(adaptive: bool) -> Vec<u64> {
    let t = radix8();
    let ops = (0..4).map(|_| vec![send(4, 256 * 1024)]).chain([vec![]]);
    let job = scripted("fan-in", &[0, 1, 2, 3, 100], ops.collect());
    let config = SimConfig {
        adaptive,
        ..config()
    };
    let result = run(&t, config, vec![job]);
    let leaf = SwitchId(0);
    t.up_ports(leaf)
        .map(|port| {
            result.ground_truth.bytes[t.port_index(PortRef { switch: leaf, port }) as usize]
        })
        .collect()
}

#[test]
fn adaptive_routing_spreads_over_up_ports_and_deterministic_does_not() {
    let total = 4 * 256 * 1024;
    let adaptive = leaf_up_bytes(true);
    assert_eq!(adaptive.iter().sum::<u64>(), total);
    assert!(adaptive.iter().all(|&b| b > total / 8), "{adaptive:?}");
    // Node 100 mod 4 up ports: all on the first.
    assert_eq!(leaf_up_bytes(false), vec![total, 0, 0, 0]);
}

#[test]
fn end_time_stops_the_run_unfinished() {
    let t = radix8();
    let config = SimConfig {
        end_ps: Some(5_000_000),
        ..config()
    };
    let result = run(&t, config, vec![uniform(128, 1000, 4096)]);
    assert_eq!(result.end_ps, 5_000_000);
    let job = &result.jobs[0];
    assert!(!job.finished);
    assert_eq!(job.completion_ps, 5_000_000);
    assert!(job.messages_delivered > 0 && job.messages_delivered < job.messages_sent);
}

#[test]
fn a_rank_waiting_for_a_message_sends_only_after_it_arrives() {
    let t = radix8();
    let bytes = 1000;
    // Rank 0 sends to rank 1, which waits for it before sending to rank 2; all in different
    // pods, so each message takes the 5-hop latency.
    let ops = vec![
        vec![send(1, bytes)],
        vec![Op::AwaitReceived { total: 1 }, send(2, bytes)],
        vec![],
    ];
    let result = run(&t, config(), vec![scripted("relay", &[0, 40, 80], ops)]);
    let five_hops = 6 * (serialisation_ps(bytes) + 20_000) + 5 * 90_000;
    let job = &result.jobs[0];
    assert!(job.finished);
    assert_eq!(job.completion_ps, 2 * five_hops);
    assert_eq!(job.max_message_latency_ns, five_hops as f64 / 1000.0);
}

#[test]
fn bad_inputs_are_refused_with_a_reason() {
    let t = radix8();
    let one = || vec![scripted("a", &[0], vec![vec![]])];
    let reason = |config: SimConfig, jobs: Vec<Job>| match Simulation::new(&t, config, jobs) {
        Ok(_) => panic!("accepted"),
        Err(error) => error.to_string(),
    };
    let outside = reason(
        config(),
        vec![scripted("far", &[0, 128], vec![vec![], vec![]])],
    );
    assert!(
        outside.contains("node 128") && outside.contains("0 to 127"),
        "{outside}"
    );
    let shared = reason(
        config(),
        vec![
            scripted("a", &[5], vec![vec![]]),
            scripted("b", &[6, 5], vec![vec![], vec![]]),
        ],
    );
    assert!(
        shared.contains("node 5") && shared.contains("'a'") && shared.contains("'b'"),
        "{shared}"
    );
    let zero = reason(
        SimConfig {
            packet_bytes: 0,
            ..config()
        },
        one(),
    );
    assert!(zero.contains("packet size"), "{zero}");
    let unit = reason(
        SimConfig {
            flow_unit_bytes: 128 * 1024,
            ..config()
        },
        one(),
    );
    assert!(unit.contains("larger than a buffer"), "{unit}");
    let big = reason(
        SimConfig {
            packet_bytes: 100_000,
            ..config()
        },
        one(),
    );
    assert!(big.contains("does not fit"), "{big}");
    let empty = reason(config(), vec![scripted("none", &[], vec![])]);
    assert!(empty.contains("no ranks"), "{empty}");
    let slow = reason(
        SimConfig {
            link_gbps: 0.0,
            ..config()
        },
        one(),
    );
    assert!(slow.contains("bandwidth"), "{slow}");
}

#[test]
fn telemetry_samples_the_ports_that_carried_traffic() {
    let t = radix8();
    let config = SimConfig {
        telemetry: TelemetryConfig {
            kind: TelemetryKind::Reservoir,
            ..TelemetryConfig::default()
        },
        ..SimConfig::default()
    };
    let incast = many_to_one(16 * 1024);
    let result = run(&t, config, vec![incast]);
    let samples = result.telemetry.expect("telemetry on");
    let window = &samples.jobs[0][0];
    let truth = &result.ground_truth.packets[0];
    assert_eq!(window.packets, result.packets_delivered);
    for (port, &count) in window.counts.iter().enumerate() {
        if count > 0.0 {
            assert!(truth[port] > 0, "sampled port {port} carried nothing");
        }
    }
    // Each packet charges its whole path to the port it sampled (algorithm 4).
    assert_eq!(
        window.counts.iter().sum::<f64>(),
        result.jobs[0].total_hops as f64
    );
    // Every packet crosses the root port, and it was congested.
    let root = to_node(&t, 0);
    assert!(window.counts[root] > 0.0 && window.congested[root] > 0.0);
}

#[test]
fn telemetry_observes_a_run_without_changing_it() {
    let t = radix8();
    let with = |kind| {
        let config = SimConfig {
            telemetry: TelemetryConfig {
                kind,
                ..TelemetryConfig::default()
            },
            ..SimConfig::default()
        };
        let result = run(&t, config, vec![uniform(128, 20, 5000)]);
        let run = (
            &result.jobs,
            &result.ground_truth,
            result.events,
            result.end_ps,
        );
        serde_json::to_string(&run).unwrap()
    };
    let off = with(TelemetryKind::Off);
    assert_eq!(with(TelemetryKind::Reservoir), off);
    assert_eq!(with(TelemetryKind::SingleBit), off);
}

#[test]
fn an_empty_message_travels_as_one_empty_packet() {
    let t = radix8();
    let job = scripted("empty", &[0, 1], vec![vec![send(1, 0)], vec![]]);
    let result = run(&t, config(), vec![job]);
    let job = &result.jobs[0];
    assert_eq!(
        (
            job.messages_delivered,
            job.packets_delivered,
            job.bytes_delivered
        ),
        (1, 1, 0)
    );
    // No serialisation: two link latencies and one switch.
    assert_eq!(job.completion_ps, 2 * 20_000 + 90_000);
}
