//! The simulator's switch port counters (`fabric::sim` counters): what a port sends arrives
//! at its peer's input, XmitWait stays at zero on an idle tree and grows on the ports that
//! feed an incast, and periodic snapshots are cumulative and in time order.

mod common;

use common::{radix8, send, Script};
use std::collections::VecDeque;

use fabric::sim::{CounterSnapshot, SimConfig, SimResult, Simulation};
use fabric::telemetry::{TelemetryConfig, TelemetryKind};
use fabric::topology::{Level, NodeId, Peer, SwitchId, Topology};
use fabric::traffic::{Job, Op};
use rand::{Rng, SeedableRng};

fn config(interval_ps: u64) -> SimConfig {
    SimConfig {
        telemetry: TelemetryConfig {
            kind: TelemetryKind::Off,
            ..TelemetryConfig::default()
        },
        counter_interval_ps: Some(interval_ps),
        ..SimConfig::default()
    }
}

fn scripted(nodes: &[u32], ops: Vec<Vec<Op>>) -> Job {
    Job {
        name: "script".to_string(),
        placement: nodes.iter().map(|&n| NodeId(n)).collect(),
        program: Box::new(Script(ops.into_iter().map(VecDeque::from).collect())),
    }
}

/// Every node sends `messages` messages of `bytes` to random other nodes.
fn random(nodes: u32, messages: u32, bytes: u64) -> Job {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let ops = (0..nodes)
        .map(|n| {
            (0..messages)
                .map(|_| {
                    let other = rng.gen_range(0..nodes - 1);
                    send(if other >= n { other + 1 } else { other }, bytes)
                })
                .collect()
        })
        .collect();
    scripted(&(0..nodes).collect::<Vec<_>>(), ops)
}

fn run(topology: &Topology, config: SimConfig, jobs: Vec<Job>) -> SimResult {
    Simulation::new(topology, config, jobs)
        .unwrap()
        .run(&mut |_| {})
}

/// The port index whose input a port's link arrives at (`None` for links into nodes).
fn peer_port(t: &Topology, port: u32) -> Option<u32> {
    match t.peer(t.port_ref(port)) {
        Peer::Switch { switch, port } => {
            Some(t.port_index(fabric::topology::PortRef { switch, port }))
        }
        Peer::Node(_) => None,
    }
}

#[test]
fn what_a_port_sends_arrives_at_its_peer_and_totals_match_the_ground_truth() {
    let t = radix8();
    let result = run(&t, config(2_000_000), vec![random(128, 20, 10_000)]);
    let job = &result.jobs[0];
    assert!(job.finished);
    let snapshots = &result.counters;
    assert!(snapshots.len() > 3, "{} snapshots", snapshots.len());
    for snapshot in snapshots {
        for port in 0..t.num_ports() as u32 {
            let sent = snapshot.ports[port as usize];
            if let Some(peer) = peer_port(&t, port) {
                let received = snapshot.ports[peer as usize];
                // In flight on the wire at a snapshot: sent, not yet received; never the
                // other way round.
                assert!(received.rcv_bytes <= sent.xmit_bytes, "port {port}");
                assert!(received.rcv_packets <= sent.xmit_packets, "port {port}");
            }
        }
    }
    // Drained at the end: every byte sent has arrived, port by port.
    let last = snapshots.last().unwrap();
    assert_eq!(last.at_ps, result.end_ps);
    for port in 0..t.num_ports() as u32 {
        let sent = last.ports[port as usize];
        assert_eq!(sent.xmit_bytes, result.ground_truth.bytes[port as usize]);
        assert_eq!(
            sent.xmit_packets,
            result.ground_truth.packets[0][port as usize]
        );
        if let Some(peer) = peer_port(&t, port) {
            let received = last.ports[peer as usize];
            assert_eq!(
                (received.rcv_bytes, received.rcv_packets),
                (sent.xmit_bytes, sent.xmit_packets),
                "port {port}"
            );
        }
    }
    // What the leaves received from their nodes is what the job sent; what they sent down to
    // their nodes is what it delivered.
    let leaves = t.switches_at(Level::Leaf);
    let node_ports = (0..t.num_nodes()).map(|n| t.port_index(t.node_port(NodeId(n))) as usize);
    let into_leaves: u64 = node_ports.clone().map(|p| last.ports[p].rcv_bytes).sum();
    let out_of_leaves: u64 = node_ports.map(|p| last.ports[p].xmit_bytes).sum();
    assert_eq!(leaves.len(), 32);
    assert_eq!(into_leaves, job.bytes_delivered);
    assert_eq!(out_of_leaves, job.bytes_delivered);
}

#[test]
fn snapshots_are_cumulative_and_in_time_order_at_the_interval() {
    let t = radix8();
    let interval = 1_500_000;
    let result = run(&t, config(interval), vec![random(128, 10, 8000)]);
    let snapshots = &result.counters;
    for (k, pair) in snapshots.windows(2).enumerate() {
        assert!(pair[0].at_ps < pair[1].at_ps);
        if k + 2 < snapshots.len() {
            assert_eq!(pair[1].at_ps - pair[0].at_ps, interval);
        }
        for delta in pair[1].delta_since(&pair[0]) {
            // delta_since subtracts without wrapping: a counter that went back would panic in
            // this debug build; the bytes of a delta cover its packets.
            assert!(delta.xmit_bytes >= delta.xmit_packets.min(1));
        }
    }
    assert_eq!(snapshots[0].at_ps, interval);
    assert_eq!(snapshots.last().unwrap().at_ps, result.end_ps);
}

#[test]
fn an_idle_tree_has_no_xmit_wait_and_an_incast_has_it_where_it_backs_up() {
    let t = radix8();
    // One message at a time across the tree: nothing ever waits for credits.
    let lone = scripted(&[0, 127], vec![vec![send(1, 1 << 20)], vec![]]);
    let result = run(&t, config(1_000_000), vec![lone]);
    let last = result.counters.last().unwrap();
    assert!(last.ports.iter().all(|p| p.xmit_wait_ps == 0));
    assert!(last.ports.iter().any(|p| p.xmit_bytes > 0));

    // All other nodes send 64 KiB to node 0: the leaf port to node 0 is the bottleneck, its
    // input buffers fill, and the ports feeding them wait for credits.
    let nodes: Vec<u32> = (0..128).collect();
    let mut ops = vec![vec![]];
    ops.extend((1..128).map(|_| vec![send(0, 64 * 1024)]));
    let result = run(&t, config(10_000_000), vec![scripted(&nodes, ops)]);
    let last = result.counters.last().unwrap();
    let leaf0 = SwitchId(0);
    let root = t.port_index(t.node_port(NodeId(0))) as usize;
    // The node sinks at line rate: the root port never lacks credits, it just has a queue.
    assert_eq!(last.ports[root].xmit_wait_ps, 0);
    // The aggregation switches' ports down into leaf 0 wait.
    let into_leaf0: Vec<usize> = (0..t.num_ports() as u32)
        .filter(
            |&p| matches!(t.peer(t.port_ref(p)), Peer::Switch { switch, .. } if switch == leaf0),
        )
        .map(|p| p as usize)
        .collect();
    assert_eq!(into_leaf0.len(), 4);
    for &p in &into_leaf0 {
        assert!(last.ports[p].xmit_wait_ps > 0, "port {p}");
    }
    // No port wait longer than the run, and the total is in ticks too.
    let tick = CounterSnapshot::tick_ps(100.0, 64);
    assert_eq!(tick, 5120);
    for p in &last.ports {
        assert!(p.xmit_wait_ps <= result.end_ps);
        assert_eq!(p.xmit_wait_ticks(tick), p.xmit_wait_ps / tick);
    }
}

#[test]
fn counters_leave_the_run_as_it_was() {
    let t = radix8();
    let plain = SimConfig {
        counter_interval_ps: None,
        ..config(1)
    };
    let mut without = run(&t, plain, vec![random(128, 10, 5000)]);
    let mut with = run(&t, config(700_000), vec![random(128, 10, 5000)]);
    assert!(without.counters.is_empty() && !with.counters.is_empty());
    assert_eq!(with.end_ps, without.end_ps);
    for r in [&mut with, &mut without] {
        r.wall_seconds = 0.0;
        r.counters.clear();
        r.config.counter_interval_ps = None;
        // Snapshots are events of their own.
        r.events = 0;
    }
    assert_eq!(
        serde_json::to_string(&with).unwrap(),
        serde_json::to_string(&without).unwrap()
    );
}
