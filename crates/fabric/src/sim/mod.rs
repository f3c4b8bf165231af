//! The packet-level discrete-event simulator of a fat tree (thesis 3.5; the CODES fat-tree
//! model of `../shared/reference/codes-peer.md` is the peer it is measured against).
//!
//! CONTRACT (fixed by the integrator; the engine helper implements it and may add fields):
//! [`Simulation::new`] takes a topology, a [`SimConfig`] and the jobs; [`Simulation::run`]
//! runs to completion (every job finished) or to `end_ps`, reporting [`Progress`] now and
//! then, and returns a [`SimResult`]. Same inputs and seed give the same result bit for bit
//! (all but `wall_seconds`, which is measured).
//!
//! # The model
//!
//! Time is integer picoseconds. Every link is full duplex at `link_gbps` each way: a packet
//! occupies it for its serialisation (bytes / bandwidth) and reaches the far end
//! `link_latency_ns` later, whole (store and forward). Flow control is credit based, in flow
//! units of `flow_unit_bytes` (codes-peer.md's "chunk"): a sender spends
//! ceil(bytes / unit) credits of the far buffer when it starts a packet and gets them back
//! one link latency after the packet leaves that buffer.
//!
//! - **NIC** (`nic`): one per node with a rank. It plays the rank's program: a `Send` waits
//!   for its `not_before_ps`, is cut into packets of at most `packet_bytes` and injected one
//!   at a time when the node's link is free and the leaf's input buffer has credit;
//!   `AwaitReceived` holds the rank until that many whole messages have arrived. The node
//!   sinks at line rate: the leaf-to-node link serialises, and the node's buffer returns its
//!   credits on arrival.
//! - **Switch** (`switch`): a FIFO input buffer per input port and an output queue per output
//!   port, `buffer_bytes` each, as codes-peer.md's one buffer per port. The head of an input
//!   buffer is routed `switch_latency_ns` after it arrived: down deterministically
//!   ([`Topology::down_port`]), up adaptively to the least loaded port (queue plus
//!   uncredited bytes, ties at random; codes-peer.md) or by D-mod-K
//!   ([`Topology::deterministic_route`]). A full output
//!   queue blocks the whole input buffer (head of line), which is what spreads congestion
//!   trees. An output port is **congested** by [`CongestionRule`], judged when a packet
//!   enters its queue (thesis 3.2: the queue, this packet included, exceeds the available
//!   credits; 5.10 for the alternatives and for why the moment of judging matters little);
//!   that is also where the ground truth is counted and the telemetry of algorithm 3 runs.
//! - **Delivery**: the receiver NIC's telemetry (algorithm 4/7/9) and the per-job counts:
//!   messages, packets, bytes, hops ([`Topology::hops`], from `wiring`'s tables), message
//!   latency from ready to the last packet's arrival, completion time.
//!
//! The run ends when no event is left (every job finished and the network drained, or ranks
//! waiting for messages that will never come) or at `end_ps`.
//!
//! - **Port counters** (`counters`): every switch port counts what it sends and receives
//!   (bytes, packets; a switch's PortXmitData/PortRcvData/PortXmitPkts/PortRcvPkts, in bytes)
//!   and its XmitWait, the time it had data queued, its link idle and not the credits to send
//!   (picoseconds; [`PortCounters::xmit_wait_ticks`] in ticks of one flow unit at link rate).
//!   With [`SimConfig::counter_interval_ps`] the run keeps a [`CounterSnapshot`] of every
//!   port at each multiple of the interval and at its end ([`SimResult::counters`]; 40 bytes
//!   per port per snapshot), so that a caller computes what a sampler at that rate would see.
//! - **MADs** (`mads`, [`Simulation::with_samplers`]): samplers on nodes send 256-byte PerfMgt
//!   queries to switches, one after another, a sweep every period; each switch answers from
//!   one management processor (a FIFO, [`MadConfig::service_ns`] a query). MADs ride VL15:
//!   their own queue at every link, no credits, strict priority over data, so a MAD waits at
//!   most for the data packet on the wire (the paper's and the model; on real fabrics
//!   PerfMgt GMPs use a data VL, see `mads`). Each sweep's spread (first query sent to last
//!   answer received, the LDMS ibfabric paper's definition) is in [`SimResult::sampling`].
//!
//! # The engine
//!
//! Built for millions of packets on one core, where the cost is cache misses more than
//! instructions:
//!
//! - A hop costs one event (arrival at the next switch's routing logic, or delivery). Credit
//!   returns are applied lazily (`credits`), and a sender only gets a wake-up event when it
//!   actually waits for its link or its credits.
//! - Packets live in a pool of small structs addressed by `u32`, split into what every hop
//!   reads and what only injection and delivery need (`packets`); queues are intrusive FIFOs
//!   through the packets; no allocation per packet, no hash map anywhere.
//! - All per-link state is one 128-byte record, laid out so that a hop touches its packet
//!   and two line pairs (`links`), except what adaptive routing compares for every up port
//!   (credits, queue bytes, the next credit return): that is a 16-byte record in an array of
//!   its own, so that a scan of a switch's up ports reads a few consecutive lines, in one
//!   pass without branches on the loads (`credits`). The tree is flattened into per-link,
//!   per-switch and per-destination tables (`wiring`).
//! - The future event list (`events`) keeps the events scheduled a fixed delay ahead (most of
//!   them) in FIFO lanes and the rest in a calendar of 1 ns buckets whose next bucket is
//!   sorted when it comes due; the lanes' and the calendar's earliest entries sit side by
//!   side, so that the next event is found in one line; sequence numbers break ties in
//!   scheduling order. The loop prefetches the lines of the events coming next, so that
//!   their misses overlap the current event's work (`engine`).
//! - Seeded ChaCha8 streams make runs reproducible bit for bit: one for routing tie-breaks,
//!   one for the traffic programs, and one for telemetry, so that telemetry observes a run
//!   without changing it (the same seed gives the same routes and ground truth whatever
//!   the telemetry kind).
//!
//! - The counters and the MAD model keep the data path as it was: receive counters are two
//!   adds in the line an arrival updates anyway, send counters are derived from the ground
//!   truth at snapshot time, XmitWait is a flag in the line `transmit` reads plus a cold
//!   array touched when a credit wait starts and ends; management events (snapshots, MAD
//!   service, sweeps) are tested for after the three hot kinds, and a transmission looks
//!   for MADs only while some wait (an engine field, 0 in runs without samplers).
//!
//! Modules, from the bottom up: `timing` (config to picoseconds and flow units), `validate`,
//! `wiring`, `events`, `payload` (what an event says), `prefetch`, `packets`, `links`
//! (per-link state, the flow control's and input buffers' included), `credits` (flow
//! control), `tally` (ground truth and job results), `counters` (port counters and
//! snapshots), `mads` (the MAD service model's state), `nic_state`; `engine` (state and
//! event loop); and the logic it hands events to, each an `impl Engine` of its own: `switch`,
//! `nic`, `mad_events`.

mod counters;
mod credits;
mod engine;
mod events;
mod links;
mod mad_events;
mod mads;
mod nic;
mod nic_state;
mod packets;
mod payload;
mod prefetch;
mod switch;
mod tally;
mod timing;
mod validate;
mod wiring;

use serde::{Deserialize, Serialize};

pub use counters::{CounterSnapshot, PortCounters};
pub use mads::{SamplerResult, SamplerSpec, SamplingResult, Sweep};
pub use validate::SimError;

use crate::telemetry::{Samples, TelemetryConfig};
use crate::topology::Topology;
use crate::traffic::{Job, JobSettings};

/// When an output port counts as congested (thesis 3.2; alternatives of 5.10).
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "rule")]
pub enum CongestionRule {
    /// The thesis' definition: when a packet is added to the output queue, the queue (bytes,
    /// including the packet) exceeds the port's available credits (bytes).
    QueueExceedsCredits,
    /// The queue holds more than `bytes`.
    QueueAbove {
        /// Queue length that counts as congested, bytes.
        bytes: u32,
    },
    /// Fewer than `bytes` of credit are left.
    CreditsBelow {
        /// Credit left below which the port counts as congested, bytes.
        bytes: u32,
    },
}

/// Everything a simulation run is configured by (the defaults are the thesis' 100 Gb/s network
/// of chapter 3); `fabric sim`'s flags set it and `summary.json` records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimConfig {
    /// Link bandwidth, every link, each direction.
    pub link_gbps: f64,
    /// Propagation delay of a link.
    pub link_latency_ns: f64,
    /// Time from a packet's arrival at a switch to its entering an output queue.
    pub switch_latency_ns: f64,
    /// Largest packet: messages are cut into packets of this size (the last one smaller).
    pub packet_bytes: u32,
    /// Flow-control unit: credits are counted in these; a packet takes ceil(size / unit).
    pub flow_unit_bytes: u32,
    /// Buffer of each switch input port and each output port, bytes.
    pub buffer_bytes: u32,
    /// Stop at this simulated time (picoseconds), or run until every job finishes.
    pub end_ps: Option<u64>,
    /// The seed of the run's one random number generator (routing ties, workloads, telemetry):
    /// the same seed gives the same run.
    pub seed: u64,
    /// Adaptive (least-loaded up port) or deterministic (D-mod-K,
    /// [`crate::topology::Topology::deterministic_route`]) up routing.
    pub adaptive: bool,
    /// When an output port counts as congested.
    pub congestion: CongestionRule,
    /// The telemetry the switches and receivers run (algorithms 2 to 9).
    pub telemetry: TelemetryConfig,
    /// Width of telemetry arrival-time windows (thesis Figure 4.11), or one window.
    pub window_ps: Option<u64>,
    /// Take a snapshot of every switch port's counters this often (simulated time), as a
    /// PerfMgt sampler at 1 / interval Hz would read them ([`SimResult::counters`]); `None`:
    /// none. Memory: 40 bytes per switch port per snapshot.
    #[serde(default)]
    pub counter_interval_ps: Option<u64>,
    /// The MAD service model, used by samplers ([`Simulation::with_samplers`]).
    #[serde(default)]
    pub mads: MadConfig,
}

/// The MAD service model's parameters (`mads`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MadConfig {
    /// Bytes a MAD occupies on a link (a MAD is 256 bytes; the headers around it are left
    /// out).
    pub mad_bytes: u32,
    /// Time a switch's management processor takes to answer one PerfMgt query. The default,
    /// 1.1 us, is derived from the LDMS ibfabric paper's smallest spread (section V: about
    /// 50 us for 36 serial queries to the sampler's own leaf, 1.39 us a query) less the
    /// simulated round trip of a query to a leaf at QDR rate (about 0.3 us). It is fitted to
    /// that one figure, nothing else.
    pub service_ns: f64,
}

impl Default for MadConfig {
    fn default() -> Self {
        MadConfig {
            mad_bytes: 256,
            service_ns: 1100.0,
        }
    }
}

impl SimConfig {
    /// What building jobs needs from this configuration.
    pub fn job_settings(&self) -> JobSettings {
        JobSettings {
            seed: self.seed,
            link_gbps: self.link_gbps,
            packet_bytes: self.packet_bytes,
            end_ps: self.end_ps,
        }
    }
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            link_gbps: 100.0,
            link_latency_ns: 20.0,
            switch_latency_ns: 90.0,
            packet_bytes: 4096,
            flow_unit_bytes: 64,
            buffer_bytes: 64 * 1024,
            end_ps: None,
            seed: 1,
            adaptive: true,
            congestion: CongestionRule::QueueExceedsCredits,
            telemetry: TelemetryConfig::default(),
            window_ps: None,
            counter_interval_ps: None,
            mads: MadConfig::default(),
        }
    }
}

/// Reported to the progress callback about every 100 ms of wall time.
#[derive(Copy, Clone, Debug)]
pub struct Progress {
    /// Simulated time reached, ps.
    pub sim_ps: u64,
    /// The run's end time, ps, when it has one.
    pub end_ps: Option<u64>,
    /// Events processed so far.
    pub events: u64,
    /// Packets delivered so far, all jobs.
    pub packets_delivered: u64,
}

/// Exact per-port counts kept by the simulator (the ground truth telemetry is judged by);
/// vectors indexed by [`crate::topology::PortIndex`].
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct GroundTruth {
    /// `packets[j][e]`: packets of job `j` that left through port `e`.
    pub packets: Vec<Vec<u64>>,
    /// `congested[j][e]`: of those, the ones marked congested at `e`.
    pub congested: Vec<Vec<u64>>,
    /// Bytes through each port, all jobs.
    pub bytes: Vec<u64>,
    /// Time each port spent transmitting, picoseconds.
    pub busy_ps: Vec<u64>,
}

/// What one job did in a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobResult {
    /// The job's name.
    pub name: String,
    /// MPI ranks of the job.
    pub ranks: u32,
    /// Messages its ranks injected.
    pub messages_sent: u64,
    /// Messages whose last packet arrived.
    pub messages_delivered: u64,
    /// Packets delivered.
    pub packets_delivered: u64,
    /// Payload bytes delivered.
    pub bytes_delivered: u64,
    /// Sum over delivered packets of their path length in hops (average path length =
    /// total_hops / packets_delivered, Table 4.1).
    pub total_hops: u64,
    /// When its last message was delivered (or the end of the run if it did not finish).
    pub completion_ps: u64,
    /// Whether every rank finished its program and every message arrived.
    pub finished: bool,
    /// Mean message latency, ns: from a message's becoming ready at its NIC to the delivery of
    /// its last packet.
    pub mean_message_latency_ns: f64,
    /// Longest message latency, ns.
    pub max_message_latency_ns: f64,
}

impl JobResult {
    /// Hops per delivered packet (Table 4.1's average path length), 0 before any delivery.
    pub fn average_path_length(&self) -> f64 {
        if self.packets_delivered > 0 {
            self.total_hops as f64 / self.packets_delivered as f64
        } else {
            0.0
        }
    }

    /// [`Self::completion_ps`] in microseconds.
    pub fn completion_us(&self) -> f64 {
        self.completion_ps as f64 / 1e6
    }
}

/// What a simulation run produced: per-job results, the exact per-port counts, and what the
/// telemetry and samplers saw.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SimResult {
    /// The tree's name.
    pub topology: String,
    /// The configuration it ran with.
    pub config: SimConfig,
    /// Simulated time when the run stopped.
    pub end_ps: u64,
    /// Events the engine processed.
    pub events: u64,
    /// Packets delivered, all jobs.
    pub packets_delivered: u64,
    /// Wall-clock time of the run, s.
    pub wall_seconds: f64,
    /// One result per job, in the workload's order.
    pub jobs: Vec<JobResult>,
    /// The simulator's exact counts, which telemetry is judged against.
    pub ground_truth: GroundTruth,
    /// `None` when telemetry is off.
    pub telemetry: Option<Samples>,
    /// With [`SimConfig::counter_interval_ps`]: the switch port counters at every multiple
    /// of the interval while the run goes on, and at its end; times increasing. Empty
    /// otherwise.
    #[serde(default)]
    pub counters: Vec<CounterSnapshot>,
    /// With samplers: their sweeps and what the switches' processors answered.
    #[serde(default)]
    pub sampling: Option<SamplingResult>,
}

impl CongestionRule {
    /// Whether an output port is congested when its queue holds `queue_bytes` (the packet
    /// being added included) and its sender holds `credit_bytes` of credit.
    pub fn is_congested(&self, queue_bytes: u64, credit_bytes: u64) -> bool {
        match *self {
            CongestionRule::QueueExceedsCredits => queue_bytes > credit_bytes,
            CongestionRule::QueueAbove { bytes } => queue_bytes > u64::from(bytes),
            CongestionRule::CreditsBelow { bytes } => credit_bytes < u64::from(bytes),
        }
    }
}

/// The most each buffer held during a run (what the credit loop must bound by
/// `buffer_bytes`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct BufferPeaks {
    /// Input buffer at the far end of each link, in whole flow units (bytes); indexed like
    /// [`crate::topology::PortIndex`] for switch ports, then `num_ports + node` for the
    /// node-to-leaf links. Links into nodes have none (0). A packet counts from the moment
    /// it is routable (its arrival plus the switch latency) until it leaves.
    pub input_bytes: Vec<u64>,
    /// Output queue of each switch port, bytes, by [`crate::topology::PortIndex`].
    pub output_bytes: Vec<u64>,
}

/// A simulation ready to run.
pub struct Simulation {
    engine: engine::Engine,
}

impl Simulation {
    /// Fails with a [`SimError`] when the inputs do not fit together (a job placed on a node
    /// the tree does not have, two ranks on one node, a zero-sized packet...).
    pub fn new(topology: &Topology, config: SimConfig, jobs: Vec<Job>) -> Result<Self, SimError> {
        Self::with_samplers(topology, config, jobs, Vec::new())
    }

    /// [`Self::new`] with samplers reading switch port counters over MADs (`mads`); the
    /// run then needs an `end_ps`, since samplers never finish.
    pub fn with_samplers(
        topology: &Topology,
        config: SimConfig,
        jobs: Vec<Job>,
        samplers: Vec<SamplerSpec>,
    ) -> Result<Self, SimError> {
        validate::check_config(&config)?;
        validate::check_jobs(topology, &jobs)?;
        validate::check_samplers(topology, &config, &samplers)?;
        Ok(Simulation {
            engine: engine::Engine::new(topology.clone(), config, jobs, samplers),
        })
    }

    /// Runs to the end (see the module docs), calling `progress` about every 100 ms of wall
    /// time and once at the end.
    ///
    /// # Panics
    ///
    /// When a program sends to a rank its job does not have.
    pub fn run(self, progress: &mut dyn FnMut(Progress)) -> SimResult {
        self.run_with_buffer_peaks(progress).0
    }

    /// [`Self::run`], also returning how full every buffer got.
    pub fn run_with_buffer_peaks(
        self,
        progress: &mut dyn FnMut(Progress),
    ) -> (SimResult, BufferPeaks) {
        self.engine.run(progress)
    }
}

/// A simulator built once for a tree and a configuration, for many short runs in a row: a
/// mesh's probes are a few packets each on a tree of thousands of ports, where setting up a
/// [`Simulation`] (its links, buffers and routes) costs far more than the run (issue 38). Each
/// run gives exactly what a [`Simulation`] of the same tree, configuration, seed and jobs
/// gives; after it, only the links it used are reset. No samplers.
pub struct Prepared {
    /// Idle between runs.
    engine: engine::Engine,
}

/// What one run of a [`Prepared`] simulator produced: a [`SimResult`]'s jobs, and its last
/// counter snapshot restricted to the switch ports the run used (every other port counted
/// nothing). No ground truth, telemetry or buffer peaks: their per-port tables are what a
/// short run on a large tree cannot afford.
#[derive(Clone, Debug, PartialEq)]
pub struct PreparedResult {
    /// Simulated time when the run stopped.
    pub end_ps: u64,
    /// Events the engine processed.
    pub events: u64,
    /// Packets delivered, all jobs.
    pub packets_delivered: u64,
    /// One result per job, in the workload's order.
    pub jobs: Vec<JobResult>,
    /// The counters at the end of the run of the ports it sent on or received at, by
    /// [`crate::topology::PortIndex`], ascending; some may be all zero.
    pub ports: Vec<(crate::topology::PortIndex, PortCounters)>,
}

impl Prepared {
    /// Builds the engine's per-tree state once; fails as [`Simulation::new`] does for a
    /// configuration that does not hold together.
    pub fn new(topology: &Topology, config: SimConfig) -> Result<Self, SimError> {
        validate::check_config(&config)?;
        Ok(Prepared {
            engine: engine::Engine::idle(topology.clone(), config, Vec::new()),
        })
    }

    /// Runs `jobs` with the configuration's `seed` replaced by `seed`, as
    /// `Simulation::new(topology, config, jobs)?.run(..)` would; fails as it does for jobs
    /// that do not fit the tree.
    ///
    /// # Panics
    ///
    /// When a program sends to a rank its job does not have.
    pub fn run(&mut self, seed: u64, jobs: Vec<Job>) -> Result<PreparedResult, SimError> {
        validate::check_jobs(&self.engine.topology, &jobs)?;
        self.engine.config.seed = seed;
        self.engine.load(jobs, false);
        Ok(self.engine.run_prepared())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn congestion_rules_compare_queue_and_credits() {
        let thesis = CongestionRule::QueueExceedsCredits;
        assert!(thesis.is_congested(4097, 4096));
        assert!(!thesis.is_congested(4096, 4096));
        let queue = CongestionRule::QueueAbove { bytes: 1000 };
        assert!(queue.is_congested(1001, 0) && !queue.is_congested(1000, 0));
        let credits = CongestionRule::CreditsBelow { bytes: 1000 };
        assert!(credits.is_congested(0, 999) && !credits.is_congested(u64::MAX, 1000));
    }
}
