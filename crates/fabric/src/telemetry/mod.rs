//! In-packet reservoir-sampling telemetry (thesis chapter 3 and 5): what the sender NIC puts
//! in a packet, what every switch does to it, and what the receiver NIC accumulates.
//!
//! CONTRACT (fixed by the integrator; helpers implement the bodies, keep the signatures):
//! the simulator calls [`TelemetryConfig::on_send`] when a packet leaves its NIC,
//! [`TelemetryConfig::on_switch`] at every switch output port, and [`Collector::on_receive`]
//! when the packet is delivered. The collector's [`Samples`] are what `analysis` reads.
//!
//! - `switch`: the sender and switch side (algorithms 2, 3, 5, 6, 8; saturating counters of 5.6).
//! - [`hash`]: `H_mult'` and the port key `d` (5.4).
//! - `collect`: the receiver side (algorithms 4, 7, 9), per job and arrival-time window, into
//!   `tally`, with the candidate sets D of algorithm 7 cached in `candidates`.
//! - `samples`: summing samples over jobs and windows.
//! - [`estimate`]: congested fraction, the 1-bit false-positive threshold, the scale-up for
//!   tagging, and the expected moments of 3.3 and 5.3.

use serde::{Deserialize, Serialize};

use crate::topology::NodeId;

mod candidates;
mod collect;
pub mod estimate;
pub mod hash;
mod samples;
mod switch;
mod tally;

pub use collect::Collector;
pub use switch::TelemetryConfigError;

/// Which algorithm the switches run.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TelemetryKind {
    /// No telemetry (ground truth counts only).
    Off,
    /// Two reservoirs holding (switch, port): algorithms 2-4.
    Reservoir,
    /// Two reservoirs holding a 1-bit hash of (switch, port): algorithms 5-7.
    Reservoir1Bit,
    /// One 1-bit reservoir plus a congested bit: algorithms 8-9.
    SingleBit,
}

/// The telemetry a run uses: the algorithm, its counter width and the share of packets tagged
/// (thesis 5.1, 5.6).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TelemetryConfig {
    /// Which algorithm the switches run.
    pub kind: TelemetryKind,
    /// Width of the saturating hop counters (thesis 5.6: b >= 3 for fat trees).
    pub hop_counter_bits: u8,
    /// Fraction of packets the sender tags (thesis 5.1: tag a subset to cut overhead).
    pub tag_fraction: f64,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        TelemetryConfig {
            kind: TelemetryKind::Reservoir,
            hop_counter_bits: 8,
            tag_fraction: 1.0,
        }
    }
}

/// The telemetry fields a packet carries (written by [`TelemetryConfig::on_send`] and
/// [`TelemetryConfig::on_switch`], in `switch.rs`). `hop_sample`/`congested_sample` hold a
/// [`PortIndex`](crate::topology::PortIndex) for [`TelemetryKind::Reservoir`] and a hash bit (0 or 1) for the 1-bit kinds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// Whether the sender tagged the packet for telemetry (thesis 5.1); an untagged packet
    /// carries no samples.
    pub tagged: bool,
    /// Hops the packet has crossed, a saturating counter of `hop_counter_bits` (the reservoir's
    /// weight, algorithm 2).
    pub hop_count: u8,
    /// The hop reservoir: one of the ports crossed, each with equal probability.
    pub hop_sample: u32,
    /// Congested hops crossed, saturating (algorithm 3).
    pub congested_count: u8,
    /// The congested reservoir: one of the congested ports crossed, each with equal
    /// probability.
    pub congested_sample: u32,
    /// Algorithm 8: whether the port in the hop reservoir was congested.
    pub congested_bit: bool,
}

/// A delivered packet as the receiver NIC sees it.
#[derive(Copy, Clone, Debug)]
pub struct Delivery {
    /// The node that sent it.
    pub src: NodeId,
    /// The node it was delivered to.
    pub dst: NodeId,
    /// Index of the job (application) that sent it.
    pub job: u16,
    /// Packet identifier used by the hash (thesis 5.2: the packet sequence number).
    pub packet_id: u32,
    /// Its size, bytes.
    pub bytes: u32,
    /// When it arrived, ps of simulated time.
    pub arrival_ps: u64,
    /// The telemetry fields it carried.
    pub header: Header,
}

/// What the receivers collected: weighted counts per switch output port.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Samples {
    /// The telemetry the switches ran.
    pub config: TelemetryConfig,
    /// Width of the arrival-time windows the samples are split into, ps; `None`: one window.
    pub window_ps: Option<u64>,
    /// `jobs[j][w]`: the samples carried by packets of job `j` that arrived in window `w`
    /// (`arrival_ps / window_ps`). Every job has the same number of windows, at least one, and
    /// every vector has one entry per port. Counts are over tagged packets
    /// ([`estimate::scale_to_all_packets`]).
    pub jobs: Vec<Vec<PortSamples>>,
}

/// Estimates for every port of one (job, window); vectors indexed by
/// [`PortIndex`](crate::topology::PortIndex).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PortSamples {
    /// `counts[e]` of algorithm 4/7/9: weighted estimate of packets through the port.
    pub counts: Vec<f64>,
    /// `congested counts[e]`.
    pub congested: Vec<f64>,
    /// Sum of the squared weights added to `counts[e]`: with `counts`, the estimate of its
    /// variance ([`estimate::weighted_count_variance`], thesis 3.3).
    pub counts_sq: Vec<f64>,
    /// The same for `congested[e]`.
    pub congested_sq: Vec<f64>,
    /// Weighted estimate of bytes through the port (counts weighted by packet size).
    pub bytes: Vec<f64>,
    /// Q of thesis 5.3: packets that might have passed through the port (1-bit kinds only;
    /// empty otherwise). The false-positive threshold of `counts` is built from it
    /// ([`estimate::thresholded_counts`]).
    pub candidates: Vec<u64>,
    /// The same Q for `congested`: candidate packets whose congested reservoir was filled
    /// (algorithm 7) or whose congested bit was set (algorithm 9).
    pub congested_candidates: Vec<u64>,
    /// Tagged packets received in this (job, window) and their arrival span (0 when none).
    pub packets: u64,
    /// Arrival time of the first of those packets, ps.
    pub first_arrival_ps: u64,
    /// Arrival time of the last of those packets, ps.
    pub last_arrival_ps: u64,
}
