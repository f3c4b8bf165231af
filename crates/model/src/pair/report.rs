//! DESIGN 4.6's pair object as it is measured and travels: an agent measures it (`hostping
//! pair probe --format json`, its answer to `POST /api/pair/probe`), the collector places and
//! judges it in a real mesh (`POST /api/mesh`'s `pairs[]`), and `hostping mesh` and the job
//! verdict read it. It lives here, below every crate that reads it (agent, collector, cluster,
//! verdict), and `fleet_api::pair` re-exports it beside the request that asks for one.

use super::{PairEnd, PartStatus, TimestampSource};
use crate::odp_bench::TransportDelta;
use crate::LatencyStats;
use serde::{Deserialize, Serialize};

/// The pair as a whole: a part's statuses, and what a probe that did not measure came to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PairStatus {
    /// Every part within Abnormal_th of the pair's baseline.
    Normal,
    /// A part past it.
    Abnormal,
    /// Measured, not judged (no baseline of the pair).
    #[default]
    Uncertain,
    /// The data did not verify, the peer refused, or the probe stopped.
    Failed,
    /// The peer could not be reached.
    Unreachable,
}

impl PairStatus {
    /// The name in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            PairStatus::Normal => "normal",
            PairStatus::Abnormal => "abnormal",
            PairStatus::Uncertain => "uncertain",
            PairStatus::Failed => "failed",
            PairStatus::Unreachable => "unreachable",
        }
    }

    /// As the verdict reads a pair: one that did not reach its peer failed.
    pub fn part(self) -> PartStatus {
        match self {
            PairStatus::Normal => PartStatus::Normal,
            PairStatus::Abnormal => PartStatus::Abnormal,
            PairStatus::Uncertain => PartStatus::Uncertain,
            PairStatus::Failed | PairStatus::Unreachable => PartStatus::Failed,
        }
    }
}

impl From<PartStatus> for PairStatus {
    fn from(s: PartStatus) -> PairStatus {
        match s {
            PartStatus::Normal => PairStatus::Normal,
            PartStatus::Abnormal => PairStatus::Abnormal,
            PartStatus::Uncertain => PairStatus::Uncertain,
            PartStatus::Failed => PairStatus::Failed,
        }
    }
}

/// Where the network's part comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetworkFrom {
    /// Half the median round trip host A's RNIC timed.
    CompletionTimestamps,
    /// The latency less both hosts' parts.
    #[default]
    LatencyLessHostParts,
}

impl NetworkFrom {
    /// The name in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkFrom::CompletionTimestamps => "completion_timestamps",
            NetworkFrom::LatencyLessHostParts => "latency_less_host_parts",
        }
    }
}

/// Where a pair's `route` comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteSource {
    /// Not traced (an agent's probe, or a mesh without the cabling).
    #[default]
    #[serde(rename = "none")]
    Untraced,
    /// The subnet manager's dumped tables (the collector's `--routes`).
    Tables,
    /// The simulator's deterministic routing of the cabling, a reconstruction.
    Cabling,
}

/// What the collector adds to a pair of a real mesh: where it runs and what it was given,
/// and its recorded baseline. Absent on an agent's own report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MeshNotes {
    /// The route from B back to A, as `route` (with the fabric).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_back: Option<Vec<String>>,
    /// Why `route` is what it is: not traced, or reconstructed from the cabling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_reason: Option<String>,
    /// Whether both ends hang off one leaf (with the fabric).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_leaf: Option<bool>,
    /// The latency probes the pair was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<u32>,
    /// `recorded` when the pair was stored as its ends' baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// When the baseline it was judged against was recorded, ms since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_recorded_unix_ms: Option<i64>,
}

/// DESIGN 4.6's pair object, measured (`hostping pair probe --format json`, an agent's
/// answer to `POST /api/pair/probe`, and each measured pair of a real `hostping mesh`). Read
/// leniently (a field an agent did not send takes its default), as the collector always
/// took what an agent sent. The fields are in the order they are written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PairReport {
    /// The initiator.
    pub a: PairEnd,
    /// The responder.
    pub b: PairEnd,
    /// p50 of the half round trips, us (ib_write_lat's t_typical).
    pub latency_us: Option<f64>,
    /// The bandwidth phase's rate, Gb/s.
    pub bandwidth_gbps: Option<f64>,
    /// Half host A's loopback latency to `endpoint_a`, us.
    pub host_a_us: Option<f64>,
    /// The same, measured by the peer.
    pub host_b_us: Option<f64>,
    /// The network's part, us: half the median round trip by host A's RNIC clock where
    /// its completions are stamped, else latency - host A - host B (`network_from`).
    pub network_us: Option<f64>,
    /// Where `network_us` comes from.
    pub network_from: NetworkFrom,
    /// The noise of `network_us`, us: its samples' and both host parts' (half their
    /// interquartile ranges, added in quadrature). A network part inside it is "within
    /// noise"; absent where not known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_noise_us: Option<f64>,
    /// Where the network part is within noise, that in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_note: Option<String>,
    /// Where the probe's times came from (`cpu_no_completion_timestamps` on rxe).
    pub timestamps: Option<TimestampSource>,
    /// Why offered completion timestamps were not used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamps_note: Option<String>,
    /// The switches crossed: not traced by the probe (`[]`); a mesh sets it from the
    /// fabric, or `null` without one.
    pub route: Option<Vec<String>>,
    /// Where `route` comes from.
    pub route_source: RouteSource,
    /// `uncertain` (measured, not judged: no baseline), `failed` (the data did not verify,
    /// the peer refused, or the probe stopped), `unreachable` (the peer could not be
    /// reached); against a baseline `normal` or `abnormal`.
    pub status: PairStatus,
    /// Why `status`, in words.
    pub reason: String,
    /// Each part against a baseline of the same pair: `normal`, `abnormal` or `uncertain`
    /// (not measured here or there); absent unjudged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_a_status: Option<PartStatus>,
    /// See `host_a_status`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_b_status: Option<PartStatus>,
    /// See `host_a_status`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_status: Option<PartStatus>,
    /// Always false: a real probe.
    pub simulated: bool,
    /// The memory node of host A's part.
    pub endpoint_a: String,
    /// Percentiles of the half round trips.
    pub latency: Option<LatencyStats>,
    /// Bytes of a ping.
    pub latency_bytes: u32,
    /// Bytes of a bandwidth message.
    pub bw_bytes: u32,
    /// Messages the bandwidth phase moved.
    pub bw_iterations: u64,
    /// The responder found the data the initiator wrote.
    pub verified: bool,
    /// Why host A's part is missing.
    pub host_a_error: Option<String>,
    /// Why host B's part is missing.
    pub host_b_error: Option<String>,
    /// The peer as given (HOST:PORT, or its agent's URL).
    pub peer: String,
    /// Where the stop happened, when the probe stopped.
    pub error: Option<String>,
    /// Host A's RNIC's transport counters over the probe (its port's `hw_counters` before
    /// and after): which way packets were lost. Absent where none could be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counters_a: Option<TransportDelta>,
    /// What a mesh adds.
    #[serde(flatten)]
    pub mesh: MeshNotes,
}

impl PairReport {
    /// What judging reads of this report.
    pub fn figures(&self) -> super::PairFigures {
        super::PairFigures {
            a: self.a.clone(),
            b: self.b.clone(),
            latency_us: self.latency_us,
            host_a_us: self.host_a_us,
            host_b_us: self.host_b_us,
            network_us: self.network_us,
            network_noise_us: self.network_noise_us,
            bandwidth_gbps: self.bandwidth_gbps,
            latency: self.latency,
        }
    }
}
