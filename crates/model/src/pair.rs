//! A probed RNIC pair between two hosts, split into its parts (DESIGN 4.6): what the
//! analyzer is given and what it concludes, and the pair object as it is measured and
//! travels ([`PairReport`]), below every crate that reads it.

use serde::{Deserialize, Serialize};

mod report;
pub use report::{MeshNotes, NetworkFrom, PairReport, PairStatus, RouteSource};

/// The state of one part of a pair (host A's path, host B's, the network), or of the pair.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PartStatus {
    /// Within Abnormal_th of its baseline.
    Normal,
    /// Past Abnormal_th.
    Abnormal,
    /// Not judged (a host path its own check could not judge).
    Uncertain,
    /// The probe could not run (no route).
    Failed,
}

impl PartStatus {
    /// The name in JSON (`normal`, `abnormal`, `uncertain`, `failed`).
    pub fn as_str(self) -> &'static str {
        match self {
            PartStatus::Normal => "normal",
            PartStatus::Abnormal => "abnormal",
            PartStatus::Uncertain => "uncertain",
            PartStatus::Failed => "failed",
        }
    }
}

/// Where a probe's times come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimestampSource {
    /// The CPU's clock around post and poll only; the initiator's device offers no
    /// completion timestamps (rdma_rxe), so host processing stays in the samples.
    CpuNoCompletionTimestamps,
    /// The CPU's clock only: the device offers completion timestamps but they could not be
    /// used (the probe's `timestamps_note` says why).
    CpuCompletionTimestampsUnusable,
    /// The CPU's clock for the ping-pong, and the device's completion timestamps for
    /// the round trips its RNIC timed.
    CompletionTimestamps,
}

/// One end of a real pair probe (DESIGN 4.6's `a` and `b`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairEnd {
    /// The host's name.
    pub host: String,
    /// The RNIC: its id (`rnic0`) where an agent probed, the device where `hostping pair`
    /// did.
    pub rnic: String,
    /// The RDMA device, where `rnic` is an id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
}

/// What judging a real pair against a baseline of the same pair reads of each of the two
/// probes (the fields of DESIGN 4.6's pair object; the rest of the JSON is ignored): a
/// healthy probe recorded as the baseline (`hostping pair probe --baseline FILE`, or the
/// collector's recorded pair baselines) and the probe judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairFigures {
    /// The initiator.
    pub a: PairEnd,
    /// The responder.
    pub b: PairEnd,
    /// p50 of the half round trips, us.
    pub latency_us: Option<f64>,
    /// Half host A's loopback latency, us.
    #[serde(default)]
    pub host_a_us: Option<f64>,
    /// The same on host B.
    #[serde(default)]
    pub host_b_us: Option<f64>,
    /// The network's part, us.
    #[serde(default)]
    pub network_us: Option<f64>,
    /// Its noise, us (DESIGN 4.6's `network_noise_us`), where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_noise_us: Option<f64>,
    /// The bandwidth phase's rate, Gb/s.
    #[serde(default)]
    pub bandwidth_gbps: Option<f64>,
    /// Percentiles of the half round trips (the tail).
    #[serde(default)]
    pub latency: Option<crate::LatencyStats>,
}

/// One host's part of a pair: its loopback path from the RNIC to the endpoint the data lives
/// in, as its own check measured and judged it.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct HostPart {
    /// Half the loopback latency (a write crosses the path once, the loopback twice), us.
    pub one_way_us: Option<f64>,
    /// The loopback path's bandwidth, Gb/s.
    pub gbps: Option<f64>,
    /// The path's status in the host's own check.
    pub status: PartStatus,
}

/// The network's part of a pair, measured and on the healthy fabric.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct NetworkPart {
    /// One-way latency between the two RNIC ports, us.
    pub one_way_us: f64,
    /// Stream bandwidth between them, Gb/s.
    pub gbps: f64,
    /// The same on the healthy fabric for pairs as many hops apart, us.
    pub baseline_us: f64,
    /// The same on the healthy fabric, Gb/s.
    pub baseline_gbps: f64,
    /// Packets lost on the way and sent again.
    pub retransmitted_packets: u64,
}
