//! The engine's state and its event loop: pop the earliest event, hand it to the switch or
//! NIC logic, forward whatever input buffers that unblocked, report progress now and then.
//! The four kinds of event, and how their payload says which, are in `payload`; the
//! management events are tested last but one so that the hot kinds pay one predictable
//! branch for them.
//!
//! The logic the loop hands events to is written as further `impl Engine` blocks beside the
//! state it works on (`switch`, `nic`, `mad_events`); this module uses none of them by
//! name, so that they sit above it and it above the state they share.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::counters::{CounterSnapshot, PortCounters, Waits};
use super::events::EventQueue;
use super::links::{InputBuffer, Links};
use super::mads::{Mads, SamplerSpec};
use super::nic_state::Nic;
use super::packets::{Message, Packets, Pool, NIL};
use super::payload::{
    management, DELIVER, MGMT, MGMT_KIND_SHIFT, PACKET, SERVICE_DONE, SNAPSHOT, SWEEP_DUE, WAKE,
};
use super::prefetch::prefetch;
use super::tally::{PortTotals, Tally};
use super::timing::Timing;
use super::wiring::{FarEnd, Route, Wiring};
use super::{BufferPeaks, Progress, SimConfig, SimResult};
use crate::telemetry::{Collector, TelemetryKind};
use crate::topology::{NodeId, Topology};
use crate::traffic::{Job, Program};

/// How far down an event lane the data of upcoming events is prefetched: far enough for the
/// loads to complete, near enough for the lines to stay cached.
const PREFETCH_AHEAD: usize = 6;

/// Events between two looks at the wall clock (reading it costs more than an event).
const CLOCK_EVERY: u64 = 4096;
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

pub(crate) struct Engine {
    pub topology: Topology,
    pub config: SimConfig,
    pub timing: Timing,
    pub wiring: Wiring,
    pub links: Links,
    pub packets: Packets,
    pub messages: Pool<Message>,
    /// Job by job, rank by rank.
    pub nics: Vec<Nic>,
    /// Index of each job's first rank in `nics`, and one past the last job's.
    pub first_nic: Vec<u32>,
    /// The rank each node runs, as an index in `nics` (`NIL`: idle node).
    pub node_nic: Vec<u32>,
    pub programs: Vec<Box<dyn Program>>,
    pub tally: Tally,
    pub events: EventQueue,
    /// Three streams of one seed. Routing tie-breaks.
    pub routing_rng: ChaCha8Rng,
    /// The traffic programs' draws.
    pub traffic_rng: ChaCha8Rng,
    /// Telemetry's draws, apart from the others so that turning telemetry on, or changing its
    /// algorithm, leaves the run itself (routes, timing, ground truth) exactly as it was.
    pub telemetry_rng: ChaCha8Rng,
    pub collector: Option<Collector>,
    /// Input buffers whose blocked head just moved on, with more packets behind it.
    pub unblocked: VecDeque<u32>,
    /// Scratch list of a switch's least loaded up ports.
    pub tied: Vec<u32>,
    pub now: u64,
    pub next_packet_id: u32,
    /// XmitWait of every link (`counters`).
    pub waits: Waits,
    pub snapshots: Vec<CounterSnapshot>,
    /// The MAD service model (`mads`), idle without samplers.
    pub mads: Mads,
}

impl Engine {
    pub fn new(
        topology: Topology,
        config: SimConfig,
        jobs: Vec<Job>,
        samplers: Vec<SamplerSpec>,
    ) -> Self {
        let timing = Timing::new(&config, &topology);
        // Packets go to the jobs' nodes and MAD answers to the samplers: routes towards
        // those alone.
        let mut destinations: Vec<NodeId> = jobs
            .iter()
            .flat_map(|job| job.placement.iter().copied())
            .chain(samplers.iter().map(|s| s.node))
            .collect();
        destinations.sort_unstable_by_key(|n| n.0);
        destinations.dedup();
        let wiring = Wiring::towards(&topology, &destinations);
        let wiring_links = wiring.num_links();
        let mads = Mads::new(&topology, wiring_links, samplers);
        let links = Links::new(
            (0..wiring.num_links() as u32).map(|link| InputBuffer::new(wiring.far_end(link))),
            timing.buffer_units,
        );
        // Full-size packets at each link rate: arrival at the next switch, delivery, the
        // link free again.
        let lanes: Vec<u64> = timing
            .full_packet_times()
            .into_iter()
            .flat_map(|full| {
                [
                    full + timing.link_ps + timing.switch_ps,
                    full + timing.link_ps,
                    full,
                ]
            })
            .collect();
        let mut nics = Vec::new();
        let mut first_nic = Vec::new();
        let mut programs = Vec::new();
        let mut names = Vec::new();
        let mut node_nic = vec![NIL; topology.num_nodes() as usize];
        for (j, job) in jobs.into_iter().enumerate() {
            first_nic.push(nics.len() as u32);
            for (rank, node) in job.placement.iter().enumerate() {
                node_nic[node.0 as usize] = nics.len() as u32;
                nics.push(Nic::new(j as u16, rank as u32, node.0));
            }
            names.push((job.name, job.placement.len() as u32));
            programs.push(job.program);
        }
        first_nic.push(nics.len() as u32);
        let collector = (config.telemetry.kind != TelemetryKind::Off).then(|| {
            Collector::new(
                &topology,
                &config.telemetry,
                programs.len(),
                config.window_ps,
            )
        });
        let stream = |n| {
            let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
            rng.set_stream(n);
            rng
        };
        Engine {
            tally: Tally::new(topology.num_ports(), names),
            links,
            routing_rng: stream(0),
            traffic_rng: stream(1),
            telemetry_rng: stream(2),
            collector,
            topology,
            config,
            timing,
            wiring,
            packets: Packets::new(),
            messages: Pool::new(),
            nics,
            first_nic,
            node_nic,
            programs,
            events: EventQueue::new(lanes),
            unblocked: VecDeque::new(),
            tied: Vec::new(),
            now: 0,
            next_packet_id: 0,
            waits: vec![Default::default(); wiring_links],
            snapshots: Vec::new(),
            mads,
        }
    }

    pub fn run(mut self, progress: &mut dyn FnMut(Progress)) -> (SimResult, BufferPeaks) {
        let started = Instant::now();
        let mut last_report = started;
        for nic in 0..self.nics.len() as u32 {
            self.advance_nic(nic);
        }
        let limit = self.config.end_ps.unwrap_or(u64::MAX);
        if let Some(interval) = self.config.counter_interval_ps.filter(|&i| i <= limit) {
            self.events.push(interval, management(SNAPSHOT, 0));
        }
        let sweeps: Vec<(u64, u32)> = self.mads.first_sweeps().collect();
        for (at, sampler) in sweeps.into_iter().filter(|&(at, _)| at <= limit) {
            self.events.push(at, management(SWEEP_DUE, sampler));
        }
        let mut events = 0u64;
        let mut last_activity = 0;
        let mut cut_off = false;
        while let Some(event) = self.events.pop() {
            if event.time > limit {
                cut_off = true;
                break;
            }
            self.now = event.time;
            events += 1;
            if let Some(what) = self.events.upcoming(PREFETCH_AHEAD) {
                self.prefetch_event(what);
            }
            if let Some(next) = self.events.peek() {
                self.prefetch_event(next.what);
                self.prefetch_route(next.what);
            }
            if event.what & WAKE != 0 {
                let link = (event.what & !WAKE) as u32;
                // A wake superseded by an earlier one finds nothing to do: skip it.
                if self.links[link].wake_at == self.now {
                    self.links[link].wake_at = u64::MAX;
                    self.on_wake(link);
                    last_activity = self.now;
                }
            } else if event.what & DELIVER != 0 {
                self.deliver((event.what & PACKET) as u32);
                last_activity = self.now;
            } else if event.what & MGMT != 0 {
                if self.on_management(event.what) {
                    last_activity = self.now;
                }
            } else {
                self.arrive((event.what & PACKET) as u32);
                last_activity = self.now;
            }
            while let Some(input) = self.unblocked.pop_front() {
                self.forward(input);
            }
            if events % CLOCK_EVERY == 0 && last_report.elapsed() >= PROGRESS_EVERY {
                last_report = Instant::now();
                progress(self.progress(events));
            }
        }
        let end_ps = if cut_off { limit } else { last_activity };
        if self.config.counter_interval_ps.is_some() {
            // The counters at the end, unless a periodic snapshot was taken then.
            self.now = end_ps;
            if !matches!(self.snapshots.last(), Some(s) if s.at_ps >= end_ps) {
                let snapshot = self.counter_snapshot();
                self.snapshots.push(snapshot);
            }
        }
        progress(Progress {
            sim_ps: end_ps,
            ..self.progress(events)
        });
        self.finish(end_ps, events, started.elapsed().as_secs_f64())
    }

    fn progress(&self, events: u64) -> Progress {
        Progress {
            sim_ps: self.now,
            end_ps: self.config.end_ps,
            events,
            packets_delivered: self.tally.packets_delivered,
        }
    }

    /// Prefetches the cache lines the event `what` starts with (its packet, the link it
    /// came by), so that their misses overlap the work on earlier events. Hops are a chain of
    /// dependent random loads (packet, then its link, then its next port); the run loop
    /// prefetches them in two stages, this one a few events ahead and
    /// [`Self::prefetch_route`] for the next event. Always inlined: the compiler kept it out
    /// of line, two calls per event that cost more than the hints (22 M instructions of
    /// workload D's first 5 us).
    #[inline(always)]
    fn prefetch_event(&self, what: u64) {
        if what & MGMT != 0 {
            return;
        }
        if what & WAKE != 0 {
            self.links.prefetch((what & !WAKE) as u32);
        } else if what & DELIVER != 0 {
            let packet = (what & PACKET) as u32;
            prefetch(&self.packets[packet]);
            prefetch(self.packets.trip(packet));
        } else {
            prefetch(&self.packets[(what & PACKET) as u32]);
            self.links.prefetch((what >> 32) as u32);
        }
    }

    /// For an arrival routed down, prefetches its output port (reads the packet and its input
    /// buffer, which the first stage has brought in). An up route scans consecutive records,
    /// which the hardware prefetcher follows on its own.
    #[inline]
    fn prefetch_route(&self, what: u64) {
        if what & (WAKE | DELIVER | MGMT) != 0 {
            return;
        }
        let switch = self.links[(what >> 32) as u32].input.switch();
        let dst = self.packets[(what & PACKET) as u32].dst;
        if let Route::Down(port) = self.wiring.route(switch, dst) {
            self.links.prefetch(port);
        }
    }

    /// A management event: a counter snapshot, or the MAD service model's. Returns whether
    /// it was activity of the run (a snapshot only observes).
    #[cold]
    fn on_management(&mut self, what: u64) -> bool {
        let kind = (what & !MGMT) >> MGMT_KIND_SHIFT;
        let index = (what & PACKET) as u32;
        match kind {
            SNAPSHOT => {
                self.take_snapshot();
                return false;
            }
            SERVICE_DONE => self.service_done(index),
            SWEEP_DUE => self.sweep_due(index),
            _ => unreachable!("management event kind {kind}"),
        }
        true
    }

    /// Records the counters now and schedules the next snapshot, while anything else is
    /// still to happen (so that snapshots neither keep a drained run going nor move its
    /// end; the run's last activity, before this, gets the final snapshot).
    fn take_snapshot(&mut self) {
        if self.events.peek().is_none() {
            return;
        }
        let snapshot = self.counter_snapshot();
        self.snapshots.push(snapshot);
        let interval = self
            .config
            .counter_interval_ps
            .expect("snapshots configured");
        let next = self.now + interval;
        if next <= self.config.end_ps.unwrap_or(u64::MAX) {
            self.events.push(next, management(SNAPSHOT, 0));
        }
    }

    fn on_wake(&mut self, link: u32) {
        if link < self.wiring.num_ports {
            self.transmit(link);
        } else {
            if self.mads.queued > 0 && self.send_mad(link) {
                return;
            }
            // A node may run a sampler and no rank.
            let nic = self.node_nic[(link - self.wiring.num_ports) as usize];
            if nic != super::packets::NIL {
                self.advance_nic(nic);
            }
        }
    }

    /// Makes sure the sender of `link` looks again at `time` (or earlier).
    #[inline]
    pub fn wake(&mut self, link: u32, time: u64) {
        let sender = &mut self.links[link];
        if time < sender.wake_at {
            sender.wake_at = time;
            self.events.push(time, WAKE | u64::from(link));
        }
    }

    /// Puts `packet` on `link`: the link is busy for its serialisation, and the packet reaches
    /// the far switch's routing logic after the propagation and switch latency, or its node
    /// after the propagation. The caller has taken the credits.
    pub fn start_transmission(&mut self, link: u32, packet: u32) {
        let bytes = self.packets[packet].bytes;
        let serialisation = self.timing.serialisation_ps(link, bytes);
        let sender = &mut self.links[link];
        sender.busy_until = self.now + serialisation;
        sender.busy_ps += serialisation;
        self.packets[packet].link = link;
        let arrival = self.now + serialisation + self.timing.link_ps;
        match self.wiring.far_end(link) {
            FarEnd::Switch(_) => {
                let what = u64::from(link) << 32 | u64::from(packet);
                self.events.push(arrival + self.timing.switch_ps, what);
            }
            FarEnd::Node(_) => {
                self.events.push(arrival, DELIVER | u64::from(packet));
                // The node sinks at line rate: its buffer frees the packet on arrival and the
                // credits travel back over the link.
                let units = self.timing.units(bytes);
                let back = arrival + self.timing.link_ps;
                if let Some(at) = self.links.give_back(link, self.now, back, units) {
                    self.wake(link, at);
                }
            }
        }
    }

    /// Every switch port's counters now.
    pub fn counter_snapshot(&self) -> CounterSnapshot {
        let ports = (0..self.wiring.num_ports)
            .map(|port| {
                let out = &self.links[port];
                let mut queued = 0u64;
                let mut packet = out.queue.head;
                while packet != NIL {
                    queued += 1;
                    packet = self.packets[packet].next;
                }
                let inbound = &self.links[self.wiring.inbound(port)];
                let mads = self.mads.port_counts(port);
                PortCounters {
                    xmit_bytes: out.bytes - u64::from(self.links.queue_bytes(port)) + mads.bytes,
                    xmit_packets: out.packets - queued + mads.packets,
                    rcv_bytes: inbound.rcv_bytes,
                    rcv_packets: inbound.rcv_packets,
                    xmit_wait_ps: self.waits[port as usize].total_at(self.now, out.returns.waiting),
                }
            })
            .collect();
        CounterSnapshot {
            at_ps: self.now,
            ports,
        }
    }

    fn finish(self, end_ps: u64, events: u64, wall_seconds: f64) -> (SimResult, BufferPeaks) {
        let unit = u64::from(self.timing.unit_bytes);
        let ports = || self.links.iter().take(self.wiring.num_ports as usize);
        let peaks = BufferPeaks {
            input_bytes: self
                .links
                .iter()
                .map(|l| u64::from(l.input.peak_units()) * unit)
                .collect(),
            output_bytes: ports()
                .map(|p| u64::from(p.returns.peak_queue_bytes()))
                .collect(),
        };
        let totals = PortTotals {
            packets: ports().map(|p| p.packets).collect(),
            congested: ports().map(|p| p.congested).collect(),
            bytes: ports().map(|p| p.bytes).collect(),
            busy_ps: ports().map(|p| p.busy_ps).collect(),
        };
        let packets_delivered = self.tally.packets_delivered;
        let (jobs, ground_truth) = self.tally.finish(end_ps, totals);
        let result = SimResult {
            topology: self.topology.name().to_string(),
            config: self.config,
            end_ps,
            events,
            packets_delivered,
            wall_seconds,
            jobs,
            ground_truth,
            telemetry: self.collector.map(Collector::finish),
            counters: self.snapshots,
            sampling: self.mads.finish(),
        };
        (result, peaks)
    }
}
