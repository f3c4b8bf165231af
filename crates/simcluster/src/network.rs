//! The network part of one probed pair, from the packet simulator (`fabric::sim`): the fabric
//! as the faults leave it (degraded and flapping cables at their reduced rates, down cables
//! routed around, other jobs' traffic), a WRITE ping-pong for latency as `ib_write_lat` does
//! it, and a stream of WRITEs for bandwidth as `ib_write_bw` does. Routing is deterministic,
//! as a subnet manager's tables are (`Topology::deterministic_route`).
//!
//! Corrupting cables are laid over the simulated times, since the simulator has no loss:
//! each packet crossing such a cable is lost with probability `per_second` x its time on the
//! wire (a symbol error hits whatever packet is being sent), and the RC transport recovers
//! it: a lone ping packet after the sender's ACK timeout (nothing follows it to show the gap),
//! a stream packet by go-back-N (the receiver's NAK a round trip later, then the message
//! sent again). docs/cluster.md gives the whole model.

use std::collections::{BTreeMap, HashSet};
use std::sync::Mutex;

use fabric::sim::{CounterSnapshot, Prepared, SimConfig};
use fabric::telemetry::{TelemetryConfig, TelemetryKind};
use fabric::topology::{NodeId, Peer, Topology};
use fabric::traffic::{Job, Op, Program};
use model::switch_port::SwitchPortCounters;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use verdict::background;
use verdict::links::{self, FabricFault, FaultedFabricError, Phases};
use verdict::spec::{Cable, Cluster};

/// ACK timeout of a probe QP: perftest's default exponent 14, 4.096 us x 2^14 = 67 ms (IBA
/// 9.7.6.1.3): what a lost lone packet costs.
pub const ACK_TIMEOUT_NS: f64 = 4096.0 * 16384.0;
/// `ib_write_lat`'s default message, bytes.
pub const PING_BYTES: u64 = 2;
/// `ib_write_bw`'s default message, bytes.
pub const STREAM_MESSAGE_BYTES: u64 = 65536;
/// Messages of one simulated bandwidth probe (1 MiB in all).
pub const STREAM_MESSAGES: u32 = 16;
/// Most round trips the simulator plays per pair; a real probe sends what the budget allows.
pub const MAX_SIMULATED_ROUND_TRIPS: u32 = 16;
/// What the simulator measured between two tree nodes.
#[derive(Clone, Debug, PartialEq)]
pub struct NetworkMeasurement {
    /// One-way latency of each simulated round trip (half of it), ns.
    pub latency_ns: Vec<f64>,
    /// Stream bandwidth, Gb/s, of the slower direction: each RNIC writes to the other at
    /// once (`ib_write_bw -b`), since a pair's two routes may cross different cables.
    pub bandwidth_gbps: f64,
    /// Packets lost on corrupting cables and sent again (latency and stream probes).
    pub retransmitted_packets: u64,
    /// Packets lost on each corrupting cable the probes crossed.
    pub lost_on: Vec<(Cable, u64)>,
    /// The counters over both runs (the probes and the other jobs' traffic) of the switch
    /// ports that counted anything, by `PortIndex`, as a sampler would read their deltas.
    /// Only those: a mesh of 256 hosts on `full-891` keeps thousands of pairs, and every
    /// port of the tree for each of them took 6 GB (issue 38).
    pub ports: Vec<(u32, SwitchPortCounters)>,
}

/// The fabric as the faults leave it, ready to simulate probes on.
pub struct FaultedFabric {
    /// The tree with down cables removed and degraded ones at their rate.
    healthy_phase: Topology,
    /// The same with flapping cables degraded too; `None` without a flap.
    flapped_phase: Option<Topology>,
    /// Corrupting cables and their errors a second.
    errors: Vec<(Cable, f64)>,
    /// Host cables that are down: their RNICs are unreachable.
    down_host_cables: Vec<Cable>,
    /// Other jobs' load, a share of line rate.
    background: Option<f64>,
    /// The tree nodes of the job's RNICs, where other jobs never run.
    job: HashSet<NodeId>,
    config: SimConfig,
    /// Simulators prepared on each phase (healthy, flapped), idle, for the next probes: a
    /// probe's run is a few packets, and preparing the engine for a large tree costs more
    /// (issue 38). One per worker that has measured; a run resets what it used.
    engines: [Mutex<Vec<Prepared>>; 2],
}

/// Why a pair could not be probed at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unreachable(pub String);

impl FaultedFabric {
    /// The cluster's fabric with `faults` applied, for probes between the hosts `job` (other
    /// jobs' traffic runs beside them, [`background`]). Fails when the down cables cut the
    /// tree (the simulator's message names the leaves left apart).
    pub fn new(
        cluster: &Cluster,
        faults: &[FabricFault],
        job: &[usize],
    ) -> Result<FaultedFabric, FaultedFabricError> {
        let topology = &cluster.fabric.topology;
        let Phases { healthy, flapped } = links::phases(cluster, faults)?;
        let down_host_cables = faults
            .iter()
            .filter_map(|fault| match *fault {
                FabricFault::Down { cable } => Some(cable),
                _ => None,
            })
            .filter(|cable| matches!(topology.peer(topology.port_ref(cable.0)), Peer::Node(_)))
            .collect();
        let errors = faults
            .iter()
            .filter_map(|f| match *f {
                FabricFault::Errors { cable, per_second } => Some((cable, per_second)),
                _ => None,
            })
            .collect();
        let background = faults.iter().find_map(|f| match *f {
            FabricFault::Background { load } => Some(load),
            _ => None,
        });
        Ok(FaultedFabric {
            healthy_phase: healthy,
            flapped_phase: flapped,
            errors,
            down_host_cables,
            background,
            job: background::job_nodes(cluster, job),
            config: probe_config(cluster.fabric.link_gbps),
            engines: Default::default(),
        })
    }

    /// The tree as the faults leave it (down cables routed around), for routes.
    pub fn topology(&self) -> &Topology {
        &self.healthy_phase
    }

    /// The healthy fabric: what a pair's network part is judged against.
    pub fn healthy(cluster: &Cluster) -> FaultedFabric {
        FaultedFabric::new(cluster, &[], &[]).expect("a cluster's own fabric routes")
    }

    /// Simulates the probes of one pair: `round_trips` ping-pongs and one stream, in the
    /// flapped phase when `flapped`. `seed` makes the run (background, losses) repeatable.
    pub fn measure(
        &self,
        cluster: &Cluster,
        src: NodeId,
        dst: NodeId,
        round_trips: u32,
        flapped: bool,
        seed: u64,
    ) -> Result<NetworkMeasurement, Unreachable> {
        let (topology, phase) = match (&self.flapped_phase, flapped) {
            (Some(flapped), true) => (flapped, 1),
            _ => (&self.healthy_phase, 0),
        };
        let cables = self.cables_between(cluster, src, dst);
        if let Some(down) = cables.iter().find(|c| self.down_host_cables.contains(c)) {
            return Err(Unreachable(format!(
                "no route: the cable at {} is down",
                cluster.cable_label(*down)
            )));
        }
        let round_trips = round_trips.clamp(1, MAX_SIMULATED_ROUND_TRIPS);
        let mut ports = BTreeMap::new();
        let (ping, stream_ns) = self.with_engine(topology, phase, |engine| {
            let ping = self.run(
                engine,
                topology,
                (src, dst),
                Probe::PingPong { round_trips },
                seed,
                &mut ports,
            );
            let stream = self.run(
                engine,
                topology,
                (src, dst),
                Probe::Stream,
                seed ^ 0x5eed,
                &mut ports,
            );
            (ping, stream)
        });
        let one_way_ns = ping / (2.0 * f64::from(round_trips));
        let stream_bytes = STREAM_MESSAGE_BYTES * u64::from(STREAM_MESSAGES);
        let mut stream_ns = stream_ns;
        let mut latency_ns = vec![one_way_ns; round_trips as usize];
        let mut retransmitted = 0;
        let losses = self.loss_probabilities(topology, &cables);
        let mut lost_on: Vec<(Cable, u64)> = losses.iter().map(|&(c, _)| (c, 0)).collect();
        if !losses.is_empty() {
            let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x1055);
            // Whether one packet is lost, and on which cable.
            let mut lost = |rng: &mut ChaCha8Rng| {
                let hit = losses.iter().position(|&(_, p)| rng.gen_bool(p));
                if let Some(i) = hit {
                    lost_on[i].1 += 1;
                }
                hit.is_some()
            };
            for sample in &mut latency_ns {
                // A round trip crosses the cable twice, one packet each way.
                for _ in 0..2 {
                    if lost(&mut rng) {
                        *sample += ACK_TIMEOUT_NS / 2.0;
                        retransmitted += 1;
                    }
                }
            }
            let packets = stream_bytes.div_ceil(u64::from(self.config.packet_bytes));
            let message_ns = STREAM_MESSAGE_BYTES as f64 * 8.0 / self.config.link_gbps;
            // Each direction recovers its own losses; the slower one ends the stream.
            let mut extra_ns = [0.0f64; 2];
            for extra in &mut extra_ns {
                for _ in 0..packets {
                    if lost(&mut rng) {
                        // Go-back-N: the NAK comes a round trip later, then the message again.
                        *extra += 2.0 * one_way_ns + message_ns;
                        retransmitted += 1;
                    }
                }
            }
            stream_ns += extra_ns[0].max(extra_ns[1]);
        }
        Ok(NetworkMeasurement {
            latency_ns,
            bandwidth_gbps: stream_bytes as f64 * 8.0 / stream_ns,
            retransmitted_packets: retransmitted,
            lost_on,
            ports: ports
                .into_iter()
                .filter(|(_, c)| *c != SwitchPortCounters::default())
                .collect(),
        })
    }

    /// The cables from `src` to `dst` and back (routes may differ each way).
    fn cables_between(&self, cluster: &Cluster, src: NodeId, dst: NodeId) -> Vec<Cable> {
        let topology = &self.healthy_phase;
        let mut cables = vec![
            Cable(topology.port_index(topology.node_port(src))),
            Cable(topology.port_index(topology.node_port(dst))),
        ];
        for (a, b) in [(src, dst), (dst, src)] {
            cables.extend(
                topology
                    .deterministic_route(a, b)
                    .into_iter()
                    .map(|p| cluster.cable_at(p)),
            );
        }
        cables.sort_unstable();
        cables.dedup();
        cables
    }

    /// The chance that one packet is lost on each corrupting cable among `cables`: a symbol
    /// error hits the packet on the wire then, so `per_second` x the packet's time on it.
    fn loss_probabilities(&self, topology: &Topology, cables: &[Cable]) -> Vec<(Cable, f64)> {
        let packet_bits = f64::from(self.config.packet_bytes) * 8.0;
        self.errors
            .iter()
            .filter(|(cable, _)| cables.contains(cable))
            .map(|&(cable, per_second)| {
                let gbps = topology.link_rate_or(cable.0, self.config.link_gbps);
                (cable, (per_second * packet_bits / (gbps * 1e9)).min(1.0))
            })
            .collect()
    }

    /// Calls `f` with an idle simulator prepared on `topology`, phase `phase` of
    /// `engines`, and keeps it for later probes (not when `f` panics).
    fn with_engine<R>(
        &self,
        topology: &Topology,
        phase: usize,
        f: impl FnOnce(&mut Prepared) -> R,
    ) -> R {
        let idle = |pool: &Mutex<Vec<Prepared>>| {
            pool.lock().expect("no probe panics holding the pool").pop()
        };
        let mut engine = idle(&self.engines[phase]).unwrap_or_else(|| {
            // One snapshot, at the end of the run: the counters' totals. (The periodic one,
            // a simulated second away, is never due: a probe's run lasts microseconds.)
            let config = SimConfig {
                counter_interval_ps: Some(1_000_000_000_000),
                ..self.config.clone()
            };
            Prepared::new(topology, config).expect("the probes' settings are valid")
        });
        let result = f(&mut engine);
        self.engines[phase]
            .lock()
            .expect("no probe panics holding the pool")
            .push(engine);
        result
    }

    /// Simulated time of one probe, ns from its first send to its end; the run's port
    /// counters are added to `ports`.
    fn run(
        &self,
        engine: &mut Prepared,
        topology: &Topology,
        (src, dst): (NodeId, NodeId),
        probe: Probe,
        seed: u64,
        ports: &mut BTreeMap<u32, SwitchPortCounters>,
    ) -> f64 {
        let start_ps = if self.background.is_some() {
            background::WARMUP_PS
        } else {
            0
        };
        let mut jobs = vec![Job {
            name: "probe".to_string(),
            placement: vec![src, dst],
            program: Box::new(ProbeProgram::new(probe, start_ps)),
        }];
        if let Some(load) = self.background {
            let mut used = self.job.clone();
            used.extend([src, dst]);
            let healthy_ps = probe.healthy_ps(self.config.link_gbps);
            jobs.extend(background::other_jobs(
                topology,
                &used,
                load,
                self.config.link_gbps,
                healthy_ps,
            ));
        }
        let result = engine
            .run(seed, jobs)
            .expect("a probe between two nodes of the tree is a valid run");
        let tick_ps = CounterSnapshot::tick_ps(self.config.link_gbps, self.config.flow_unit_bytes);
        for (port, c) in &result.ports {
            let sum: &mut SwitchPortCounters = ports.entry(*port).or_default();
            sum.xmit_data_bytes += c.xmit_bytes;
            sum.rcv_data_bytes += c.rcv_bytes;
            sum.xmit_pkts += c.xmit_packets;
            sum.rcv_pkts += c.rcv_packets;
            sum.xmit_wait += c.xmit_wait_ticks(tick_ps);
        }
        let probe = &result.jobs[0];
        assert!(probe.finished, "a probe on a routable fabric finishes");
        (probe.completion_ps - start_ps) as f64 / 1000.0
    }
}

/// The simulator's settings for probes: the cluster's link rate, deterministic routing (a
/// subnet manager's tables), no in-packet telemetry; the rest the simulator's defaults.
fn probe_config(link_gbps: f64) -> SimConfig {
    SimConfig {
        link_gbps,
        adaptive: false,
        telemetry: TelemetryConfig {
            kind: TelemetryKind::Off,
            ..TelemetryConfig::default()
        },
        ..SimConfig::default()
    }
}

#[derive(Copy, Clone, Debug)]
enum Probe {
    /// `ib_write_lat`: rank 0 writes, rank 1 answers once it has seen the write.
    PingPong { round_trips: u32 },
    /// `ib_write_bw -b`: each rank writes to the other back to back.
    Stream,
}

impl Probe {
    /// About how long the probe takes on a healthy fabric, ps (a bound for the background).
    fn healthy_ps(self, link_gbps: f64) -> u64 {
        match self {
            Probe::PingPong { round_trips } => u64::from(round_trips) * 2 * 1_000_000,
            Probe::Stream => {
                let bits = (STREAM_MESSAGE_BYTES * u64::from(STREAM_MESSAGES) * 8) as f64;
                (bits / link_gbps * 1000.0) as u64 + 2_000_000
            }
        }
    }
}

/// The two ranks of a probe.
struct ProbeProgram {
    probe: Probe,
    start_ps: u64,
    /// Operations each rank has been given.
    step: [u32; 2],
}

impl ProbeProgram {
    fn new(probe: Probe, start_ps: u64) -> ProbeProgram {
        ProbeProgram {
            probe,
            start_ps,
            step: [0, 0],
        }
    }
}

impl Program for ProbeProgram {
    fn next_op(&mut self, rank: u32, _: &mut dyn rand::RngCore) -> Option<Op> {
        let step = self.step[rank as usize];
        self.step[rank as usize] += 1;
        let send = |dst, bytes| Op::Send {
            dst,
            bytes,
            not_before_ps: self.start_ps,
        };
        match (self.probe, rank) {
            // Ping i: send, then wait for the answer; the responder waits, then answers.
            (Probe::PingPong { round_trips }, 0) => (step < 2 * round_trips).then(|| {
                if step.is_multiple_of(2) {
                    send(1, PING_BYTES)
                } else {
                    Op::AwaitReceived {
                        total: u64::from(step / 2 + 1),
                    }
                }
            }),
            (Probe::PingPong { round_trips }, _) => (step < 2 * round_trips).then(|| {
                if step.is_multiple_of(2) {
                    Op::AwaitReceived {
                        total: u64::from(step / 2 + 1),
                    }
                } else {
                    send(0, PING_BYTES)
                }
            }),
            (Probe::Stream, _) => match step.cmp(&STREAM_MESSAGES) {
                std::cmp::Ordering::Less => Some(send(1 - rank, STREAM_MESSAGE_BYTES)),
                std::cmp::Ordering::Equal => Some(Op::AwaitReceived {
                    total: u64::from(STREAM_MESSAGES),
                }),
                std::cmp::Ordering::Greater => None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use verdict::spec::RnicPort;

    fn pod() -> Cluster {
        Cluster::builtin("pod-32").unwrap().unwrap()
    }

    fn nodes(pod: &Cluster, a: (usize, usize), b: (usize, usize)) -> (NodeId, NodeId) {
        (
            pod.node_of(RnicPort {
                host: a.0,
                rnic: a.1,
            }),
            pod.node_of(RnicPort {
                host: b.0,
                rnic: b.1,
            }),
        )
    }

    #[test]
    fn a_healthy_pair_runs_near_line_rate_and_farther_pairs_take_longer() {
        let pod = pod();
        let fabric = FaultedFabric::healthy(&pod);
        let (a, same_leaf) = nodes(&pod, (0, 0), (1, 0));
        let (_, cross) = nodes(&pod, (0, 0), (8, 0));
        let near = fabric.measure(&pod, a, same_leaf, 4, false, 1).unwrap();
        let far = fabric.measure(&pod, a, cross, 4, false, 1).unwrap();
        assert!(
            near.bandwidth_gbps > 0.9 * 200.0 && near.bandwidth_gbps <= 200.0,
            "{near:?}"
        );
        assert!(far.bandwidth_gbps > 0.9 * 200.0, "{far:?}");
        // Two more switches and two more cables each way.
        assert!(
            far.latency_ns[0] > near.latency_ns[0] + 150.0,
            "{near:?} {far:?}"
        );
        assert_eq!(far.retransmitted_packets, 0);
    }

    #[test]
    fn a_degraded_cable_slows_only_the_pairs_across_it() {
        let pod = pod();
        let cable = pod.cable_at(pod.parse_port("leaf1/9").unwrap());
        let fabric = FaultedFabric::new(
            &pod,
            &[FabricFault::Degrade {
                cable,
                fraction: 0.5,
            }],
            &[0, 1, 8, 9],
        )
        .unwrap();
        // node001/rnic0 -> node009/rnic0 goes up leaf1/9 (DESIGN 4.6's example) and back
        // down it (destination 0 picks spine1 from every leaf).
        let (a, across) = nodes(&pod, (0, 0), (8, 0));
        let slow = fabric.measure(&pod, a, across, 2, false, 1).unwrap();
        assert!(slow.bandwidth_gbps < 0.55 * 200.0, "{slow:?}");
        // node002 <-> node010 (destinations 9 and 1) go through spine2 both ways.
        let (c, d) = nodes(&pod, (1, 0), (9, 0));
        let fine = fabric.measure(&pod, c, d, 2, false, 1).unwrap();
        assert!(fine.bandwidth_gbps > 0.9 * 200.0, "{fine:?}");
        // node001 -> node010 goes up to spine2, but the way back (destination 0) comes down
        // spine1's cable into leaf1: the bidirectional stream sees the one way it crosses.
        let (_, back) = nodes(&pod, (0, 0), (9, 0));
        let one_way = fabric.measure(&pod, a, back, 2, false, 1).unwrap();
        assert!(one_way.bandwidth_gbps < 0.55 * 200.0, "{one_way:?}");
    }

    #[test]
    fn a_down_host_cable_makes_its_rnic_unreachable_and_a_down_uplink_is_routed_around() {
        let pod = pod();
        let host_cable = pod.cable_at(pod.parse_port("node009/rnic0").unwrap());
        let uplink = pod.cable_at(pod.parse_port("leaf1/9").unwrap());
        let faults = [
            FabricFault::Down { cable: host_cable },
            FabricFault::Down { cable: uplink },
        ];
        let fabric = FaultedFabric::new(&pod, &faults, &[0, 8, 16]).unwrap();
        let (a, gone) = nodes(&pod, (0, 0), (8, 0));
        let err = fabric.measure(&pod, a, gone, 2, false, 1).unwrap_err();
        assert!(err.0.contains("leaf2/1"), "{err:?}");
        let (_, other) = nodes(&pod, (0, 0), (16, 0));
        let around = fabric.measure(&pod, a, other, 2, false, 1).unwrap();
        assert!(around.bandwidth_gbps > 0.9 * 200.0, "{around:?}");
    }

    #[test]
    fn a_corrupting_cable_costs_retransmissions() {
        let pod = pod();
        let cable = pod.cable_at(pod.parse_port("leaf1/1").unwrap());
        let fabric = FaultedFabric::new(
            &pod,
            &[FabricFault::Errors {
                cable,
                per_second: 2e5,
            }],
            &[0, 1],
        )
        .unwrap();
        let (a, b) = nodes(&pod, (0, 0), (1, 0));
        let hit = fabric.measure(&pod, a, b, 16, false, 7).unwrap();
        assert!(hit.retransmitted_packets > 0, "{hit:?}");
        assert!(hit.bandwidth_gbps < 0.8 * 200.0, "{hit:?}");
    }

    #[test]
    fn background_traffic_takes_a_share_of_a_cross_leaf_stream() {
        let pod = pod();
        let background = [FabricFault::Background { load: 0.8 }];
        let fabric = FaultedFabric::new(&pod, &background, &[0, 8]).unwrap();
        let (a, b) = nodes(&pod, (0, 0), (8, 0));
        let loaded = fabric.measure(&pod, a, b, 4, false, 3).unwrap();
        let quiet = FaultedFabric::healthy(&pod)
            .measure(&pod, a, b, 4, false, 3)
            .unwrap();
        assert!(
            loaded.bandwidth_gbps < 0.8 * quiet.bandwidth_gbps,
            "{loaded:?} {quiet:?}"
        );
        assert!(
            loaded.latency_ns[0] > quiet.latency_ns[0],
            "{loaded:?} {quiet:?}"
        );
    }

    /// A fabric measures pair after pair on simulators it prepared once per phase (issue
    /// 38); each measurement is exactly the one a fabric built for that pair alone gives:
    /// with other jobs' traffic, a flapping cable in both its phases, a degraded one, a down
    /// uplink routed around and a corrupting cable, seeds changing from pair to pair.
    #[test]
    fn reused_simulators_measure_exactly_as_fresh_ones() {
        let pod = pod();
        let cable = |port: &str| pod.cable_at(pod.parse_port(port).unwrap());
        let faults = [
            FabricFault::Background { load: 0.6 },
            FabricFault::Flap {
                cable: cable("leaf1/9"),
                fraction: 0.25,
            },
            FabricFault::Degrade {
                cable: cable("leaf2/10"),
                fraction: 0.5,
            },
            FabricFault::Down {
                cable: cable("leaf3/11"),
            },
            FabricFault::Errors {
                cable: cable("leaf1/1"),
                per_second: 1e5,
            },
        ];
        let job = [0, 1, 8, 9, 16, 17];
        let shared = FaultedFabric::new(&pod, &faults, &job).unwrap();
        let pairs = [
            ((0, 0), (8, 0)),
            ((1, 0), (9, 0)),
            ((0, 0), (1, 0)),
            ((16, 0), (0, 0)),
            ((8, 0), (17, 0)),
            ((9, 0), (16, 0)),
        ];
        for (i, &(a, b)) in pairs.iter().cycle().take(12).enumerate() {
            let (src, dst) = nodes(&pod, a, b);
            let flapped = i % 3 == 1;
            let seed = 11 + 7 * i as u64;
            let reused = shared.measure(&pod, src, dst, 3, flapped, seed).unwrap();
            let fresh = FaultedFabric::new(&pod, &faults, &job)
                .unwrap()
                .measure(&pod, src, dst, 3, flapped, seed)
                .unwrap();
            assert_eq!(reused, fresh, "pair {i}: {a:?} {b:?}, flapped {flapped}");
            assert!(!reused.ports.is_empty(), "{reused:?}");
        }
    }

    /// Other jobs run off the job's hosts, as the what-if has them (docs/cluster.md's
    /// example: node001..016 on leaves of their own): the same probe that other jobs slow in
    /// a two-host job meets none of their traffic when the job holds both its leaves.
    #[test]
    fn other_jobs_never_run_on_the_jobs_own_hosts() {
        let pod = pod();
        let background = [FabricFault::Background { load: 0.8 }];
        let whole_leaves: Vec<usize> = (0..16).collect();
        let fabric = FaultedFabric::new(&pod, &background, &whole_leaves).unwrap();
        let (a, b) = nodes(&pod, (0, 0), (8, 0));
        let beside = fabric.measure(&pod, a, b, 4, false, 3).unwrap();
        let quiet = FaultedFabric::healthy(&pod)
            .measure(&pod, a, b, 4, false, 3)
            .unwrap();
        assert!(
            beside.bandwidth_gbps > 0.95 * quiet.bandwidth_gbps,
            "{beside:?} {quiet:?}"
        );
        assert!(
            beside.latency_ns[0] < 1.05 * quiet.latency_ns[0],
            "{beside:?} {quiet:?}"
        );
    }
}
