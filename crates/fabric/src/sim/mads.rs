//! The MAD service model: samplers on nodes read switch port counters with PerfMgt queries
//! (256-byte MADs) and get 256-byte answers, as the LDMS `ibfabric` sampler does
//! (`../shared/papers/004_ec259f6a0c4ca99b.txt`, the paper below).
//!
//! - **Virtual lane 15**: a MAD is a packet of its own kind that waits in a per-link VL15
//!   queue, apart from the data queue, needs no credits (VL15 is the one lane without flow
//!   control in the InfiniBand architecture) and goes first whenever its link is free: at
//!   every output port, and at the sampler's own NIC, it waits at most for the data packet
//!   already on the wire. It skips the data input buffers too (VL15 has a buffer of its
//!   own), so data blocked at the head of an input never holds it. The paper says the
//!   queries ride VL15 with the highest priority (section I); on real fabrics only SMPs use VL15, and PerfMgt GMPs such as
//!   PortCounters travel on a data VL (VL0 to 14) under the SL-to-VL and arbitration tables,
//!   so this is the paper's model (and the issue's), an upper bound on the queries'
//!   priority.
//! - **The management processor**: each switch answers from one processor, a FIFO of
//!   queries served one at a time in [`super::MadConfig::service_ns`] each. The answer
//!   leaves by the port towards the sampler.
//! - **Routing**: queries go to a switch by the shortest path over the switch graph (a
//!   table per target switch, built once by breadth-first search); answers go to the node
//!   by the data routing, up ports chosen by D-mod-K on the node number (deterministic,
//!   like a LID route; [`crate::topology::Topology::deterministic_route`]).
//! - **Samplers** ([`super::SamplerSpec`]): a sampler queries its ports one after the other
//!   (the next query when the previous answer has arrived, as LDMS `ibnet` does), a sweep
//!   every period. A sweep's **spread** is the start of its first query to the arrival of
//!   its last answer (the paper's definition, section II). A sweep due while the previous
//!   one is still running starts as soon as that one ends.
//!
//! None of this runs unless a simulation has samplers: the data path pays one predictable
//! branch per event for it (the arrival and delivery of a MAD are told apart by the packet's
//! job, in the line those events read anyway; a transmission looks for MADs only while any
//! wait). MADs count in the port counters of every port they cross (`counters`), as real
//! data counters count every lane.
//!
//! This module keeps the model's state and results; its events on the engine (sweeps,
//! VL15 transmissions, service) are in `mad_events`.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::packets::{Fifo, NIL};
use crate::topology::{NodeId, Peer, PortRef, SwitchId, Topology};

/// The job number of a query on its way to a switch (`Packet::id`: the target switch).
pub(crate) const MAD_QUERY: u16 = u16::MAX;
/// The job number of an answer on its way back to the sampler's node.
pub(crate) const MAD_ANSWER: u16 = u16::MAX - 1;
/// Jobs are numbered below this.
pub(crate) const FIRST_MAD_JOB: u16 = MAD_ANSWER;

/// One sampler: the node it runs on, the switch ports it reads in order, how often.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SamplerSpec {
    /// The node the sampler runs on.
    pub node: NodeId,
    /// One query per entry, in this order. A port number only names the counters read: any
    /// port below the switch's radix may be read, linked or not (the paper's samplers read
    /// all 36 ports of each switch).
    pub ports: Vec<PortRef>,
    /// Time between the starts of two sweeps, ps (1 / rate).
    pub period_ps: u64,
    /// When the first sweep starts (the next ones every `period_ps` after it).
    pub first_sweep_ps: u64,
}

/// One finished sweep.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sweep {
    /// When its first query was sent.
    pub start_ps: u64,
    /// From then to the arrival of its last answer (the paper's spread).
    pub spread_ps: u64,
    /// How late it started behind its due time (the previous sweep was still running).
    pub late_ps: u64,
}

/// What one sampler did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SamplerResult {
    /// The node it ran on.
    pub node: u32,
    /// Finished sweeps, in order (one still running at the end of the run is left out).
    pub sweeps: Vec<Sweep>,
    /// Queries it sent.
    pub queries_sent: u64,
    /// Answers that came back.
    pub answers_received: u64,
}

/// What the samplers and the switches' management processors did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SamplingResult {
    /// One result per sampler, in the order given.
    pub samplers: Vec<SamplerResult>,
    /// Queries each switch's processor answered, by [`SwitchId`].
    pub served: Vec<u64>,
    /// MAD transmissions on all links (a query or answer crossing 3 links counts 3).
    pub mad_hops: u64,
}

/// The VL15 queue of one link and the MADs it has sent (for the port counters).
#[derive(Copy, Clone, Debug)]
pub(super) struct Lane15 {
    pub(super) queue: Fifo,
    pub(super) bytes: u64,
    pub(super) packets: u64,
}

pub(super) struct Processor {
    pub(super) queue: VecDeque<u32>,
    pub(super) busy: bool,
}

pub(super) struct Sampler {
    pub(super) spec: SamplerSpec,
    /// The query in flight (index in `spec.ports`); `None` between sweeps.
    pub(super) query: Option<usize>,
    pub(super) sweep_start: u64,
    pub(super) sweep_due: u64,
    /// A sweep came due during this one.
    pub(super) pending: Option<u64>,
    pub(super) result: SamplerResult,
}

/// The model's state, all of it cold except `queued`.
pub(crate) struct Mads {
    /// MADs waiting in VL15 queues over all links: while 0, transmissions look no further.
    pub queued: u32,
    pub(super) lanes: Vec<Lane15>,
    pub(super) processors: Vec<Processor>,
    pub(super) samplers: Vec<Sampler>,
    /// `to_switch[target]`: the output port each switch sends a query for `target` to
    /// (`NIL` at the target), for the targets some sampler reads.
    pub(super) to_switch: Vec<Option<Vec<u32>>>,
    pub(super) served: Vec<u64>,
    pub(super) mad_hops: u64,
}

/// The counts of MADs a port has sent.
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct MadCounts {
    pub bytes: u64,
    pub packets: u64,
}

impl Mads {
    pub fn new(topology: &Topology, links: usize, samplers: Vec<SamplerSpec>) -> Self {
        let switches = topology.num_switches() as usize;
        let mut to_switch: Vec<Option<Vec<u32>>> = (0..switches).map(|_| None).collect();
        for spec in &samplers {
            for port in &spec.ports {
                let target = port.switch.0 as usize;
                if to_switch[target].is_none() {
                    to_switch[target] = Some(routes_to(topology, port.switch));
                }
            }
        }
        Mads {
            queued: 0,
            lanes: vec![
                Lane15 {
                    queue: Fifo::EMPTY,
                    bytes: 0,
                    packets: 0,
                };
                links
            ],
            processors: (0..switches)
                .map(|_| Processor {
                    queue: VecDeque::new(),
                    busy: false,
                })
                .collect(),
            samplers: samplers
                .into_iter()
                .map(|spec| Sampler {
                    result: SamplerResult {
                        node: spec.node.0,
                        ..SamplerResult::default()
                    },
                    sweep_due: spec.first_sweep_ps,
                    spec,
                    query: None,
                    sweep_start: 0,
                    pending: None,
                })
                .collect(),
            to_switch,
            served: vec![0; switches],
            mad_hops: 0,
        }
    }

    /// The MADs `port` has sent.
    pub fn port_counts(&self, port: u32) -> MadCounts {
        let lane = &self.lanes[port as usize];
        MadCounts {
            bytes: lane.bytes,
            packets: lane.packets,
        }
    }

    /// The samplers' first sweeps: (time, sampler).
    pub fn first_sweeps(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        (0..)
            .zip(&self.samplers)
            .map(|(i, s)| (s.spec.first_sweep_ps, i))
    }

    /// `None` when the run had no samplers.
    pub fn finish(self) -> Option<SamplingResult> {
        (!self.samplers.is_empty()).then(|| SamplingResult {
            samplers: self.samplers.into_iter().map(|s| s.result).collect(),
            served: self.served,
            mad_hops: self.mad_hops,
        })
    }
}

/// For every switch, the output port of a shortest path to `target` over the switch links
/// (`NIL` at the target itself): a breadth-first search outwards from the target, each
/// switch taking the first link found towards it.
fn routes_to(topology: &Topology, target: SwitchId) -> Vec<u32> {
    let switches = topology.num_switches() as usize;
    let mut next = vec![NIL; switches];
    let mut seen = vec![false; switches];
    seen[target.0 as usize] = true;
    let mut frontier = VecDeque::from([target]);
    while let Some(at) = frontier.pop_front() {
        for port in 0..topology.ports(at) {
            let here = PortRef { switch: at, port };
            if topology.is_absent(here) {
                continue;
            }
            if let Peer::Switch { switch, port } = topology.peer(here) {
                if !seen[switch.0 as usize] {
                    seen[switch.0 as usize] = true;
                    // The peer's port `port` leads back to `at`.
                    next[switch.0 as usize] = topology.port_index(PortRef { switch, port });
                    frontier.push_back(switch);
                }
            }
        }
    }
    next
}
