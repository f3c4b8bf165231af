//! The MAD service model (`fabric::sim` mads) and the sampling study's set-up
//! (`fabric::sampling`): exact query timing, spread growing with ports and with redundancy,
//! one query per port per sweep per sampler, application bytes conserved beside the MADs,
//! VL15 priority bounding a MAD's wait behind data, and the Delegator's split.

use std::collections::BTreeSet;

use fabric::sampling::study::{bandwidth_test, spread_cell, StudyConfig, Targets};
use fabric::sampling::{delegate, switch_hops, testbed, testbed_nodes};
use fabric::sim::{SamplerSpec, SimConfig, SimError, SimResult, Simulation};
use fabric::topology::{NodeId, Peer, PortRef, SwitchId, Topology};
use fabric::traffic::{Job, Op, Program};
use rand::RngCore;

/// The study's settings: QDR links (a byte in 250 ps), 20 ns links, 90 ns switches, 1.1 us
/// service.
fn config() -> SimConfig {
    StudyConfig::default().sim
}

const BYTE_PS: u64 = 250;
const LINK_PS: u64 = 20_000;
const SWITCH_PS: u64 = 90_000;
const SERVICE_PS: u64 = 1_100_000;
const MAD_PS: u64 = 256 * BYTE_PS;
const PACKET_PS: u64 = 4096 * BYTE_PS;

fn sampler(node: u32, ports: Vec<PortRef>, period_ps: u64) -> SamplerSpec {
    SamplerSpec {
        node: NodeId(node),
        ports,
        period_ps,
        first_sweep_ps: 1_000_000,
    }
}

fn run(t: &Topology, end_ps: u64, jobs: Vec<Job>, samplers: Vec<SamplerSpec>) -> SimResult {
    let config = SimConfig {
        end_ps: Some(end_ps),
        counter_interval_ps: Some(end_ps),
        ..config()
    };
    Simulation::with_samplers(t, config, jobs, samplers)
        .unwrap()
        .run(&mut |_| {})
}

fn spreads(result: &SimResult) -> Vec<u64> {
    result
        .sampling
        .as_ref()
        .unwrap()
        .samplers
        .iter()
        .flat_map(|s| s.sweeps.iter().map(|w| w.spread_ps))
        .collect()
}

#[test]
fn an_idle_sweep_takes_exactly_its_queries_round_trips() {
    let t = testbed();
    let leaf = t.leaf_of(NodeId(0));
    let all = |s| fabric::sampling::switch_ports(&t, s);
    let core = fabric::sampling::switch_at_hops(&t, NodeId(0), 1).unwrap();
    let far = fabric::sampling::switch_at_hops(&t, NodeId(0), 2).unwrap();
    // To the own leaf: up the node's link, the leaf's latency, the service, down again.
    let local = 2 * (MAD_PS + LINK_PS) + SWITCH_PS + SERVICE_PS;
    // Each switch further adds a link each way and a switch latency each way.
    let per_hop = 2 * (MAD_PS + LINK_PS + SWITCH_PS);
    for (switch, round_trip) in [
        (leaf, local),
        (core, local + per_hop),
        (far, local + 2 * per_hop),
    ] {
        // Sweeps 200 us apart, the first 1 us in: two in 401 us.
        let result = run(
            &t,
            401_000_000,
            vec![],
            vec![sampler(0, all(switch), 200_000_000)],
        );
        let spreads = spreads(&result);
        assert_eq!(spreads.len(), 2, "switch {}", switch.0);
        for s in spreads {
            assert_eq!(s, 36 * round_trip, "switch {}", switch.0);
        }
    }
}

#[test]
fn spread_grows_with_ports_and_with_redundancy() {
    let t = testbed();
    let study = StudyConfig {
        spread_sweeps: 3,
        ..StudyConfig::default()
    };
    let cell = |targets, samplers| spread_cell(&study, &t, targets, samplers, false).unwrap();
    let one: Vec<f64> = [Targets::Local, Targets::LocalAndCore, Targets::All]
        .into_iter()
        .map(|targets| cell(targets, 1).spread.mean_us)
        .collect();
    assert!(one[0] < one[1] && one[1] < one[2], "{one:?}");
    for targets in Targets::ALL {
        let single = cell(targets, 1);
        let redundant = cell(targets, 16);
        assert_eq!(single.ports, redundant.ports);
        assert!(
            redundant.spread.mean_us > single.spread.mean_us
                && redundant.spread.max_us > single.spread.max_us,
            "{targets:?}: {:?} vs {:?}",
            single.spread,
            redundant.spread
        );
        // Sixteen samplers on one core switch queue behind each other at its processor:
        // the last of them waits for nearly all 16 x 36 queries.
        if targets == Targets::OneHop {
            let all_queries_us = (16 * 36 * SERVICE_PS) as f64 / 1e6;
            assert!(redundant.spread.max_us > 0.9 * all_queries_us);
        }
    }
}

#[test]
fn every_sweep_sends_one_query_per_port_and_every_switch_answers_its_share() {
    let t = testbed();
    let nodes = testbed_nodes(&t);
    let period = 5_000_000_000; // 5 ms
    let sweeps = 4;
    let samplers: Vec<SamplerSpec> = nodes
        .iter()
        .map(|n| sampler(n.0, Targets::All.ports(&t, *n), period))
        .collect();
    // Every sweep ends well within its period (a switch answers its 16 x 36 queries in
    // 0.63 ms, the three one after the other in under 2 ms); the run stops after the last.
    // Just before the next sweep would start.
    let end = 1_000_000 + sweeps * period - 1;
    let result = run(&t, end, vec![], samplers);
    let sampling = result.sampling.as_ref().unwrap();
    for s in &sampling.samplers {
        assert_eq!(s.sweeps.len() as u64, sweeps);
        assert_eq!(s.queries_sent, 108 * sweeps);
        assert_eq!(s.answers_received, s.queries_sent);
        assert!(s.sweeps.iter().all(|w| w.late_ps == 0));
    }
    // Each of the 3 switches answered 36 queries per sampler per sweep.
    assert_eq!(sampling.served, vec![16 * 36 * sweeps; 3]);
}

/// Rank 0 sends `messages` messages of 64 KiB to rank 1.
struct Messages(u32);

impl Program for Messages {
    fn next_op(&mut self, rank: u32, _rng: &mut dyn RngCore) -> Option<Op> {
        if rank != 0 || self.0 == 0 {
            return None;
        }
        self.0 -= 1;
        Some(Op::Send {
            dst: 1,
            bytes: 64 * 1024,
            not_before_ps: 0,
        })
    }
}

#[test]
fn application_bytes_are_conserved_beside_the_mads() {
    let t = testbed();
    let nodes = testbed_nodes(&t);
    let job = Job {
        name: "messages".into(),
        placement: vec![nodes[0], nodes[8]],
        program: Box::new(Messages(300)),
    };
    let samplers = nodes
        .iter()
        .map(|n| sampler(n.0, Targets::All.ports(&t, *n), 1_000_000_000))
        .collect();
    // 300 x 64 KiB at 4 GB/s take 4.9 ms; samplers sweep every 1 ms for 12 ms.
    let result = run(&t, 12_000_000_000, vec![job], samplers);
    let job = &result.jobs[0];
    assert!(job.finished);
    assert_eq!(job.bytes_delivered, 300 * 64 * 1024);
    let sampling = result.sampling.as_ref().unwrap();
    let queries: u64 = sampling.samplers.iter().map(|s| s.queries_sent).sum();
    let answers: u64 = sampling.samplers.iter().map(|s| s.answers_received).sum();
    assert!(queries > 1000);
    let last = result.counters.last().unwrap();
    // Every switch-to-switch link: what left arrived, MADs and data together, but for the
    // MADs still in flight when the run stopped.
    let mut in_flight = 0;
    for port in 0..t.num_ports() as u32 {
        if let Peer::Switch { switch, port: p } = t.peer(t.port_ref(port)) {
            let far = t.port_index(PortRef { switch, port: p }) as usize;
            let sent = last.ports[port as usize].xmit_bytes;
            let received = last.ports[far].rcv_bytes;
            assert!(received <= sent && (sent - received) % 256 == 0);
            in_flight += sent - received;
        }
    }
    assert!(in_flight <= 256 * (queries - answers));
    // All bytes the switches sent: the data's, hop by hop, and one MAD per MAD hop that
    // left a switch (a query's first hop leaves its node).
    let sent: u64 = last.ports.iter().map(|p| p.xmit_bytes).sum();
    let data: u64 = result.ground_truth.bytes.iter().sum();
    assert_eq!(
        data,
        job.bytes_delivered * 3,
        "3 switch hops leaf-core-leaf"
    );
    assert_eq!(sent - data, 256 * (sampling.mad_hops - queries));
}

/// Ranks 1 and 2 stream to rank 0 and rank 0 streams to rank 3, without end.
struct Crowd;

impl Program for Crowd {
    fn next_op(&mut self, rank: u32, _rng: &mut dyn RngCore) -> Option<Op> {
        let dst = match rank {
            0 => 3,
            1 | 2 => 0,
            _ => return None,
        };
        Some(Op::Send {
            dst,
            bytes: 64 * 1024,
            not_before_ps: 0,
        })
    }
}

#[test]
fn a_mad_waits_at_most_one_data_packet_per_busy_link() {
    let t = testbed();
    let leaf = t.leaf_of(NodeId(0));
    let ports = fabric::sampling::switch_ports(&t, leaf);
    let period = 200_000_000; // 200 us
    let end = 1_000_000 + 5 * period;
    let idle = spreads(&run(
        &t,
        end,
        vec![],
        vec![sampler(0, ports.clone(), period)],
    ));
    // The sampler's node sends at line rate and two others send to it: its own link and the
    // leaf's port down to it always have a data packet on the wire and a full queue.
    let crowd = Job {
        name: "crowd".into(),
        placement: (0..4).map(NodeId).collect(),
        program: Box::new(Crowd),
    };
    let result = run(&t, end, vec![crowd], vec![sampler(0, ports, period)]);
    let down = t.port_index(t.node_port(NodeId(0))) as usize;
    let last = result.counters.last().unwrap();
    assert!(last.ports[down].xmit_bytes > 4096 * 500);
    let loaded = spreads(&result);
    assert_eq!(loaded.len(), idle.len());
    // Each of the 36 queries crosses two busy links (up the node's, down the leaf's): at
    // most one data packet's serialisation behind data on each, never the queue behind it
    // (a full 64 KiB queue would be 16 packets).
    for (&l, &i) in loaded.iter().zip(&idle) {
        assert!(l >= i);
        assert!(l - i <= 36 * 2 * PACKET_PS, "{l} vs {i}");
    }
    assert!(loaded.iter().zip(&idle).any(|(l, i)| l > i));
}

#[test]
fn the_delegator_gives_every_port_once_to_its_nearest_sampler() {
    let t = testbed();
    let nodes = testbed_nodes(&t);
    let switches: Vec<SwitchId> = (0..t.num_switches()).map(SwitchId).collect();
    let lists = delegate(&t, &nodes, &switches);
    let mut seen = BTreeSet::new();
    for list in &lists {
        for p in list {
            assert!(seen.insert(*p), "{p:?} twice");
        }
    }
    assert_eq!(seen.len(), 3 * 36);
    // A switch is never split: three samplers get one switch each, the others none.
    let busy: Vec<usize> = (0..lists.len()).filter(|&s| !lists[s].is_empty()).collect();
    assert_eq!(busy.len(), 3);
    for &s in &busy {
        let switch = lists[s][0].switch;
        assert!(lists[s].iter().all(|p| p.switch == switch));
        let hops = switch_hops(&t, nodes[s])[switch.0 as usize];
        let nearest = nodes
            .iter()
            .map(|&n| switch_hops(&t, n)[switch.0 as usize])
            .min()
            .unwrap();
        assert_eq!(hops, nearest, "switch {} to a nearest sampler", switch.0);
    }
}

#[test]
fn samplers_are_checked() {
    let t = testbed();
    let config = SimConfig {
        end_ps: Some(1_000_000),
        ..config()
    };
    let attempt = |samplers: Vec<SamplerSpec>, config: SimConfig| {
        Simulation::with_samplers(&t, config, vec![], samplers).err()
    };
    let good = || sampler(0, fabric::sampling::switch_ports(&t, SwitchId(0)), 1000);
    assert!(attempt(vec![good()], config.clone()).is_none());
    assert_eq!(
        attempt(
            vec![good()],
            SimConfig {
                end_ps: None,
                ..config.clone()
            }
        ),
        Some(SimError::SamplersNeedAnEnd)
    );
    let far_node = SamplerSpec {
        node: NodeId(1000),
        ..good()
    };
    assert!(matches!(
        attempt(vec![far_node], config.clone()),
        Some(SimError::Sampler { node: 1000, .. })
    ));
    let bad_port = SamplerSpec {
        ports: vec![PortRef {
            switch: SwitchId(0),
            port: 36,
        }],
        ..good()
    };
    let error = attempt(vec![good(), bad_port], config.clone()).unwrap();
    assert!(error.to_string().contains("sampler 1"), "{error}");
    assert!(error.to_string().contains("port 36"), "{error}");
    let no_period = SamplerSpec {
        period_ps: 0,
        ..good()
    };
    assert!(attempt(vec![no_period], config).is_some());
}

#[test]
fn sampling_costs_the_bandwidth_test_no_more_than_the_mads_link_time() {
    let t = testbed();
    let end = 20_000_000_000; // 20 ms
    let bandwidth = |samplers| run(&t, end, vec![bandwidth_test(&t)], samplers);
    let alone = bandwidth(vec![]).jobs[0].bytes_delivered;
    let nodes = testbed_nodes(&t);
    // The test's sender samples all 108 ports every 1 ms: its link carries 108 queries of
    // 256 B per sweep beside the data.
    let period = 1_000_000_000;
    let result = bandwidth(vec![sampler(
        nodes[0].0,
        Targets::All.ports(&t, nodes[0]),
        period,
    )]);
    let sampled = result.jobs[0].bytes_delivered;
    assert!(sampled < alone);
    let queries = result.sampling.as_ref().unwrap().samplers[0].queries_sent;
    assert!(queries >= 19 * 108);
    let mad_bytes = queries * 256;
    // The loss is the MADs' time on the sender's link, give or take a packet in flight.
    assert!(
        alone - sampled <= mad_bytes + 64 * 1024,
        "{alone} {sampled}"
    );
    assert!(
        alone - sampled + 64 * 1024 >= mad_bytes / 2,
        "{alone} {sampled}"
    );
}
