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

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::engine::{management, Engine, SERVICE_DONE, SWEEP_DUE};
use super::packets::{Fifo, Packet, Trip, NIL};
use super::wiring::{FarEnd, Route};
use crate::telemetry::Header;
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
struct Lane15 {
    queue: Fifo,
    bytes: u64,
    packets: u64,
}

struct Processor {
    queue: VecDeque<u32>,
    busy: bool,
}

struct Sampler {
    spec: SamplerSpec,
    /// The query in flight (index in `spec.ports`); `None` between sweeps.
    query: Option<usize>,
    sweep_start: u64,
    sweep_due: u64,
    /// A sweep came due during this one.
    pending: Option<u64>,
    result: SamplerResult,
}

/// The model's state, all of it cold except `queued`.
pub(crate) struct Mads {
    /// MADs waiting in VL15 queues over all links: while 0, transmissions look no further.
    pub queued: u32,
    lanes: Vec<Lane15>,
    processors: Vec<Processor>,
    samplers: Vec<Sampler>,
    /// `to_switch[target]`: the output port each switch sends a query for `target` to
    /// (`NIL` at the target), for the targets some sampler reads.
    to_switch: Vec<Option<Vec<u32>>>,
    served: Vec<u64>,
    mad_hops: u64,
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

impl Engine {
    /// A sampler's sweep is due: start it, or mark it pending behind the one running; and
    /// schedule the next.
    pub fn sweep_due(&mut self, sampler: u32) {
        let s = &mut self.mads.samplers[sampler as usize];
        let due = self.now;
        let next = due + s.spec.period_ps;
        if next <= self.config.end_ps.unwrap_or(u64::MAX) {
            self.events.push(next, management(SWEEP_DUE, sampler));
        }
        let s = &mut self.mads.samplers[sampler as usize];
        if s.query.is_some() {
            s.pending.get_or_insert(due);
            return;
        }
        self.begin_sweep(sampler, due);
    }

    fn begin_sweep(&mut self, sampler: u32, due: u64) {
        let s = &mut self.mads.samplers[sampler as usize];
        s.sweep_start = self.now;
        s.sweep_due = due;
        s.query = Some(0);
        self.send_query(sampler);
    }

    /// Sends the sampler's current query from its node.
    fn send_query(&mut self, sampler: u32) {
        let s = &mut self.mads.samplers[sampler as usize];
        let target = s.spec.ports[s.query.expect("a query in flight")].switch;
        let node = s.spec.node.0;
        s.result.queries_sent += 1;
        let link = self.wiring.nic_link(node);
        let packet = Packet {
            link,
            next: NIL,
            dst: node,
            bytes: self.config.mads.mad_bytes,
            id: target.0,
            job: MAD_QUERY,
            header: Header::default(),
        };
        let trip = Trip {
            message: NIL,
            src: node,
            receiver: sampler,
            ready_ps: self.now,
        };
        let index = self.packets.insert(packet, trip);
        self.queue_mad(link, index);
    }

    /// Puts a MAD in `link`'s VL15 queue and sends it at once if the link is free.
    fn queue_mad(&mut self, link: u32, packet: u32) {
        self.packets[packet].link = link;
        self.mads.lanes[link as usize]
            .queue
            .push(&mut self.packets, packet);
        self.mads.queued += 1;
        self.send_mad(link);
    }

    /// Sends the head of `link`'s VL15 queue if the link is free (then looks again when it is
    /// free once more, for the next MAD or data), or waits for the link. Returns whether the
    /// queue held a MAD: then the link is taken care of and data must wait.
    pub fn send_mad(&mut self, link: u32) -> bool {
        if self.mads.lanes[link as usize].queue.is_empty() {
            return false;
        }
        let busy_until = self.links[link].busy_until;
        if busy_until > self.now {
            self.wake(link, busy_until);
            return true;
        }
        let packet = self.mads.lanes[link as usize].queue.pop(&self.packets);
        self.mads.queued -= 1;
        self.mads.mad_hops += 1;
        let bytes = self.packets[packet].bytes;
        let lane = &mut self.mads.lanes[link as usize];
        lane.bytes += u64::from(bytes);
        lane.packets += 1;
        let serialisation = self.timing.serialisation_ps(link, bytes);
        let sender = &mut self.links[link];
        sender.busy_until = self.now + serialisation;
        sender.busy_ps += serialisation;
        let arrival = self.now + serialisation + self.timing.link_ps;
        match self.wiring.far_end(link) {
            FarEnd::Switch(_) => {
                let what = u64::from(link) << 32 | u64::from(packet);
                self.events.push(arrival + self.timing.switch_ps, what);
            }
            FarEnd::Node(_) => self
                .events
                .push(arrival, super::engine::DELIVER | u64::from(packet)),
        }
        let free = self.links[link].busy_until;
        self.wake(link, free);
        true
    }

    /// A MAD has arrived at a switch (past the switch latency): a query for this switch joins
    /// its processor's queue, anything else goes on towards its target.
    #[cold]
    pub fn mad_arrives(&mut self, packet: u32) {
        let link = self.packets[packet].link;
        let bytes = self.packets[packet].bytes;
        let arrived = &mut self.links[link];
        arrived.rcv_bytes += u64::from(bytes);
        arrived.rcv_packets += 1;
        let switch = arrived.input.switch();
        let p = self.packets[packet];
        if p.job == MAD_QUERY {
            if p.id == switch {
                return self.queue_for_service(switch, packet);
            }
            let routes = self.mads.to_switch[p.id as usize]
                .as_ref()
                .expect("routes to every target");
            let port = routes[switch as usize];
            return self.queue_mad(port, packet);
        }
        let port = self.answer_port(switch, p.dst);
        self.queue_mad(port, packet);
    }

    /// The port an answer for `node` leaves `switch` by: the data routing, deterministic
    /// (D-mod-K) on the way up.
    fn answer_port(&self, switch: u32, node: u32) -> u32 {
        match self.wiring.route(switch, node) {
            Route::Down(port) => port,
            Route::Up { start, count } => start + self.wiring.deterministic_up(switch, node, count),
            Route::UpAmong { at, count } => self
                .wiring
                .up_among(at, self.wiring.deterministic_up(switch, node, count)),
        }
    }

    fn queue_for_service(&mut self, switch: u32, packet: u32) {
        let processor = &mut self.mads.processors[switch as usize];
        processor.queue.push_back(packet);
        if !processor.busy {
            processor.busy = true;
            let done = self.now + self.timing.mad_service_ps;
            self.events.push(done, management(SERVICE_DONE, switch));
        }
    }

    /// `switch`'s processor has answered the query at the head of its queue.
    pub fn service_done(&mut self, switch: u32) {
        let processor = &mut self.mads.processors[switch as usize];
        let packet = processor.queue.pop_front().expect("a query in service");
        if processor.queue.is_empty() {
            processor.busy = false;
        } else {
            let done = self.now + self.timing.mad_service_ps;
            self.events.push(done, management(SERVICE_DONE, switch));
        }
        self.mads.served[switch as usize] += 1;
        let node = self.packets.trip(packet).src;
        let answer = &mut self.packets[packet];
        answer.job = MAD_ANSWER;
        answer.dst = node;
        let port = self.answer_port(switch, node);
        self.queue_mad(port, packet);
    }

    /// An answer has reached its sampler's node: the next query, or the end of the sweep.
    #[cold]
    pub fn mad_delivered(&mut self, packet: u32) {
        let (_, trip) = self.packets.remove(packet);
        let sampler = trip.receiver;
        let now = self.now;
        let s = &mut self.mads.samplers[sampler as usize];
        s.result.answers_received += 1;
        let next = s.query.expect("a sweep running") + 1;
        if next < s.spec.ports.len() {
            s.query = Some(next);
            return self.send_query(sampler);
        }
        s.query = None;
        s.result.sweeps.push(Sweep {
            start_ps: s.sweep_start,
            spread_ps: now - s.sweep_start,
            late_ps: s.sweep_start - s.sweep_due,
        });
        if let Some(due) = s.pending.take() {
            self.begin_sweep(sampler, due);
        }
    }
}
