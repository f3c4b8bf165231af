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
use super::{BufferPeaks, PreparedResult, Progress, SimConfig, SimResult};
use crate::telemetry::{Collector, TelemetryKind};
use crate::topology::{NodeId, PortIndex, Topology};
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
    /// The event list's lanes (`lanes`), worked out once: on a tree whose links have rates
    /// of their own that looks at every link.
    pub lanes: Vec<u64>,
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
    /// Links the run has sent on, to reset after a prepared run (`reset`); a link may be
    /// listed more than once.
    pub touched: Vec<u32>,
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
        let mut engine = Self::idle(topology, config, samplers);
        engine.load(jobs, true);
        engine
    }

    /// The engine of `topology` with no job loaded: everything that depends on the tree and
    /// the configuration alone (the wiring, the links, the MAD model), built once.
    pub fn idle(topology: Topology, config: SimConfig, samplers: Vec<SamplerSpec>) -> Self {
        let timing = Timing::new(&config, &topology);
        let wiring = Wiring::towards(&topology, &[]);
        let wiring_links = wiring.num_links();
        let lanes = Self::lanes(&timing);
        let mads = Mads::new(&topology, wiring_links, samplers);
        let links = Links::new(
            (0..wiring.num_links() as u32).map(|link| InputBuffer::new(wiring.far_end(link))),
            timing.buffer_units,
        );
        let stream = |n| {
            let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
            rng.set_stream(n);
            rng
        };
        Engine {
            tally: Tally::new(0, Vec::new()),
            links,
            routing_rng: stream(0),
            traffic_rng: stream(1),
            telemetry_rng: stream(2),
            collector: None,
            node_nic: vec![NIL; topology.num_nodes() as usize],
            events: EventQueue::new(lanes.iter().copied()),
            lanes,
            topology,
            config,
            timing,
            wiring,
            packets: Packets::new(),
            messages: Pool::new(),
            nics: Vec::new(),
            first_nic: Vec::new(),
            programs: Vec::new(),
            unblocked: VecDeque::new(),
            tied: Vec::new(),
            now: 0,
            next_packet_id: 0,
            waits: vec![Default::default(); wiring_links],
            touched: Vec::new(),
            snapshots: Vec::new(),
            mads,
        }
    }

    /// The delays that get a lane in the event list: full-size packets at each link rate
    /// (arrival at the next switch, delivery, the link free again).
    fn lanes(timing: &Timing) -> Vec<u64> {
        timing
            .full_packet_times()
            .into_iter()
            .flat_map(|full| {
                [
                    full + timing.link_ps + timing.switch_ps,
                    full + timing.link_ps,
                    full,
                ]
            })
            .collect()
    }

    /// Loads `jobs` for a run from time 0 with `config.seed`, on an engine that is idle (just
    /// built, or [`Self::reset`]). `per_job_ports`: split the ground truth's per-port counts
    /// by job, which costs jobs x ports counters (a prepared run reports no ground truth).
    pub fn load(&mut self, jobs: Vec<Job>, per_job_ports: bool) {
        // Packets go to the jobs' nodes and MAD answers to the samplers: routes towards
        // those alone.
        let mut destinations: Vec<NodeId> = jobs
            .iter()
            .flat_map(|job| job.placement.iter().copied())
            .chain(self.mads.samplers.iter().map(|s| s.spec.node))
            .collect();
        destinations.sort_unstable_by_key(|n| n.0);
        destinations.dedup();
        self.wiring.route_towards(&self.topology, &destinations);
        let mut names = Vec::new();
        for (j, job) in jobs.into_iter().enumerate() {
            self.first_nic.push(self.nics.len() as u32);
            for (rank, node) in job.placement.iter().enumerate() {
                self.node_nic[node.0 as usize] = self.nics.len() as u32;
                self.nics.push(Nic::new(j as u16, rank as u32, node.0));
            }
            names.push((job.name, job.placement.len() as u32));
            self.programs.push(job.program);
        }
        self.first_nic.push(self.nics.len() as u32);
        self.collector = (self.config.telemetry.kind != TelemetryKind::Off).then(|| {
            Collector::new(
                &self.topology,
                &self.config.telemetry,
                self.programs.len(),
                self.config.window_ps,
            )
        });
        let ports = if per_job_ports {
            self.topology.num_ports()
        } else {
            0
        };
        self.tally = Tally::new(ports, names);
        let stream = |n| {
            let mut rng = ChaCha8Rng::seed_from_u64(self.config.seed);
            rng.set_stream(n);
            rng
        };
        self.routing_rng = stream(0);
        self.traffic_rng = stream(1);
        self.telemetry_rng = stream(2);
    }

    pub fn run(mut self, progress: &mut dyn FnMut(Progress)) -> (SimResult, BufferPeaks) {
        let started = Instant::now();
        let (end_ps, events, _) = self.simulate(progress);
        if self.config.counter_interval_ps.is_some() {
            // The counters at the end, unless a periodic snapshot was taken then.
            if !matches!(self.snapshots.last(), Some(s) if s.at_ps >= end_ps) {
                let snapshot = self.counter_snapshot();
                self.snapshots.push(snapshot);
            }
        }
        self.finish(end_ps, events, started.elapsed().as_secs_f64())
    }

    /// Runs the loaded jobs as [`Self::run`] does, but reports only what a short run on a
    /// large tree needs ([`PreparedResult`]: the jobs, the counters of the ports the run
    /// used), then resets the engine for the next [`Self::load`].
    pub fn run_prepared(&mut self) -> PreparedResult {
        let (end_ps, events, cut_off) = self.simulate(&mut |_| {});
        let mut ports: Vec<PortIndex> = self
            .touched
            .iter()
            .flat_map(|&link| {
                let sent = (link < self.wiring.num_ports).then_some(link);
                sent.into_iter().chain(self.wiring.receiving_port(link))
            })
            .collect();
        ports.sort_unstable();
        ports.dedup();
        let tally = std::mem::replace(&mut self.tally, Tally::new(0, Vec::new()));
        let result = PreparedResult {
            end_ps,
            events,
            packets_delivered: tally.packets_delivered,
            jobs: tally.job_results(end_ps),
            ports: ports
                .into_iter()
                .map(|port| (port, self.port_counters(port)))
                .collect(),
        };
        self.reset(cut_off);
        result
    }

    /// Puts the engine back as [`Self::idle`] left it. A run that drained (every event
    /// handled) left state only on the links it sent on (`touched`): a packet queued at a
    /// port or held in a buffer was sent on from there, and a sender waits for credits only
    /// after its first packet (one always fits in a buffer). A run cut off at its end may
    /// have left packets queued and wake-ups pending on any link: all are reset then.
    fn reset(&mut self, all_links: bool) {
        let links: Vec<u32> = if all_links {
            (0..self.wiring.num_links() as u32).collect()
        } else {
            std::mem::take(&mut self.touched)
        };
        for link in links {
            self.links
                .reset(link, InputBuffer::new(self.wiring.far_end(link)));
            self.waits[link as usize] = Default::default();
        }
        self.touched.clear();
        for nic in self.nics.drain(..) {
            self.node_nic[nic.node as usize] = NIL;
        }
        self.first_nic.clear();
        self.programs.clear();
        self.packets = Packets::new();
        self.messages = Pool::new();
        self.events = EventQueue::new(self.lanes.iter().copied());
        self.unblocked.clear();
        self.now = 0;
        self.next_packet_id = 0;
        self.snapshots.clear();
    }

    /// The event loop, to the end of the run: returns when it ended, the events handled,
    /// and whether `end_ps` cut it off. The clock is left at the end.
    fn simulate(&mut self, progress: &mut dyn FnMut(Progress)) -> (u64, u64, bool) {
        let mut last_report = Instant::now();
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
        self.now = end_ps;
        progress(Progress {
            sim_ps: end_ps,
            ..self.progress(events)
        });
        (end_ps, events, cut_off)
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
        if sender.busy_ps == 0 {
            // Its first packet this run (or one of none but zero-time ones, listed again).
            self.touched.push(link);
        }
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
        CounterSnapshot {
            at_ps: self.now,
            ports: (0..self.wiring.num_ports)
                .map(|port| self.port_counters(port))
                .collect(),
        }
    }

    /// One switch port's counters now.
    fn port_counters(&self, port: PortIndex) -> PortCounters {
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
