//! The simulator on fabrics that are no fat tree, simulated as cabled
//! (`Topology::graph`): a ring of switches and a fabric of switches of several radixes. Every
//! packet is delivered, along the routing's one path, and the port counters add up.

mod common;

use common::{send, Script};
use std::collections::VecDeque;

use fabric::sim::{SimConfig, SimResult, Simulation};
use fabric::telemetry::{TelemetryConfig, TelemetryKind};
use fabric::topology::{Engine, GraphSpec, GraphSwitch, NodeId, PortIndex, Topology};
use fabric::traffic::{Job, Op};
use rand::Rng;

/// Switches `sw0..` with the given hosts; switch-to-switch cables on the next free ports.
fn spec(hosts: &[u32], cables: &[(usize, usize)]) -> GraphSpec {
    let mut next = vec![1u16; hosts.len()];
    let mut port = |s: usize| {
        next[s] += 1;
        next[s] - 1
    };
    let mut spec = GraphSpec {
        name: "test".into(),
        switches: (0..hosts.len())
            .map(|s| GraphSwitch {
                name: format!("sw{s}"),
                id: 0x1000 + s as u64,
            })
            .collect(),
        ..GraphSpec::default()
    };
    for (s, &h) in hosts.iter().enumerate() {
        for _ in 0..h {
            spec.hosts.push((s, port(s)));
        }
    }
    for &(a, b) in cables {
        spec.links.push([(a, port(a)), (b, port(b))]);
    }
    spec
}

fn config() -> SimConfig {
    SimConfig {
        telemetry: TelemetryConfig {
            kind: TelemetryKind::Off,
            ..TelemetryConfig::default()
        },
        ..SimConfig::default()
    }
}

/// Every host sends `messages` messages of 10 000 bytes (3 packets) to random other hosts;
/// checks delivery and counters, and that each pair's packets cross exactly its route.
fn check_delivery(t: &Topology, messages: u32, seed: u64) -> SimResult {
    let hosts = t.compute_nodes();
    let ranks = hosts.len() as u32;
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(seed);
    let mut expected = vec![0u64; t.num_ports()];
    let mut hops = 0u64;
    let scripts: Vec<VecDeque<Op>> = (0..ranks)
        .map(|rank| {
            (0..messages)
                .map(|_| {
                    let other = rng.gen_range(0..ranks - 1);
                    let dst = if other >= rank { other + 1 } else { other };
                    let route = t.deterministic_route(hosts[rank as usize], hosts[dst as usize]);
                    for port in &route {
                        expected[t.port_index(*port) as usize] += 3;
                    }
                    hops += 3 * route.len() as u64;
                    send(dst, 10_000)
                })
                .collect()
        })
        .collect();
    let job = Job {
        name: "random".into(),
        placement: hosts.clone(),
        program: Box::new(Script(scripts)),
    };
    let result = Simulation::new(t, config(), vec![job])
        .unwrap()
        .run(&mut |_| {});
    let job = &result.jobs[0];
    assert!(job.finished);
    assert_eq!(job.messages_delivered, u64::from(ranks * messages));
    assert_eq!(job.packets_delivered, 3 * job.messages_delivered);
    assert_eq!(job.total_hops, hops);
    // Each port carried exactly the packets whose route crosses it.
    assert_eq!(result.ground_truth.packets[0], expected);
    result
}

#[test]
fn a_ring_of_switches_delivers_every_packet_along_its_routes() {
    let ring: Vec<(usize, usize)> = (0..6).map(|s| (s, (s + 1) % 6)).collect();
    for engine in [Engine::MinHop, Engine::UpDown] {
        let (t, _) = Topology::graph(&spec(&[2; 6], &ring), engine).unwrap();
        assert_eq!(t.diameter(), 4);
        check_delivery(&t, 20, 3);
    }
}

/// Switches with 8, 3, 1 and no hosts, of 10, 10, 10 and 4 ports (node slots counted):
/// hosts per switch differ, one switch has none, two cables join one pair.
#[test]
fn a_mixed_radix_fabric_delivers_every_packet_and_its_counters_add_up() {
    let cables = [(0, 3), (0, 3), (1, 3), (2, 3), (1, 2)];
    let (t, layout) = Topology::graph(&spec(&[8, 3, 1, 0], &cables), Engine::UpDown).unwrap();
    assert_eq!(t.compute_nodes().len(), 12);
    // Leaves get 8 node slots each; the smaller ones' spare slots are free nodes.
    assert_eq!(
        (t.num_leaves(), t.nodes_per_leaf(), t.num_nodes()),
        (3, 8, 24)
    );
    assert_eq!(layout.node_hosts.iter().flatten().count(), 12);
    let ports: Vec<u16> = (0..4)
        .map(|s| t.ports(fabric::topology::SwitchId(s)))
        .collect();
    assert_eq!(ports, [10, 10, 10, 4]);
    let result = check_delivery(&t, 30, 11);
    // The ports to free slots carried nothing.
    for &free in t.free_nodes() {
        let port: PortIndex = t.port_index(t.node_port(NodeId(free)));
        assert_eq!(result.ground_truth.packets[0][port as usize], 0);
    }
}
