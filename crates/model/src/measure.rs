//! What a probe run measures: per-path latency statistics, bandwidth, streaming results
//! (Hostping 4.1.1), and where the numbers come from.

use crate::ids::ComponentId;
use serde::{Deserialize, Serialize};

/// Where a number comes from. A simulated number is always labelled as simulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provenance {
    /// Measured through the verbs API on a real RNIC.
    Measured,
    /// Computed by the virtual host.
    Simulated,
}

impl Provenance {
    /// The word reports use (`measured`, `simulated`), as serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            Provenance::Measured => "measured",
            Provenance::Simulated => "simulated",
        }
    }
}

/// How a probe run was triggered, which decides its plan and the inference rules
/// (Hostping 4.2, 4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// The host is idle: full-mesh probe, paths judged against the baseline.
    Idle,
    /// The host is busy with services: affinitive-only probe, relative judgement.
    Busy,
}

impl Mode {
    /// The word reports use (`idle`, `busy`), as serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Idle => "idle",
            Mode::Busy => "busy",
        }
    }
}

/// The RDMA operation of a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// RDMA WRITE from the read region to the write region (Hostping Fig. 7).
    Write,
    /// RDMA READ from the read region into the write region.
    Read,
}

/// Latency percentiles over the timed iterations of one message size (warm-up excluded).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    /// Number of timed iterations.
    pub samples: u32,
    /// Smallest, us.
    pub min_us: f64,
    /// Median, us.
    pub p50_us: f64,
    /// 90th percentile, us.
    pub p90_us: f64,
    /// 99th percentile, us.
    pub p99_us: f64,
    /// Largest, us.
    pub max_us: f64,
}

/// The latency test of one path: small and large messages, and the bandwidth derived from
/// them by Hostping eq. 1 to 3.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathMeasurement {
    /// The RDMA operation used.
    pub op: Op,
    /// Small message size, bytes (1 B in Hostping 4.1.1).
    pub small_bytes: u64,
    /// Large message size, bytes (128 KiB for 200 Gb/s RNICs).
    pub large_bytes: u64,
    /// Small-message latency: T_proc + Lat_host (eq. 2).
    pub small: LatencyStats,
    /// Large-message latency (eq. 1).
    pub large: LatencyStats,
    /// BW_host = (large - small) / (Lat_large - Lat_small) from the medians, Gb/s (eq. 3).
    pub bandwidth_gbps: f64,
    /// Bytes of loopback data checked after the test (the write region against the read
    /// region); absent on the virtual host, where no data moves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified_bytes: Option<u64>,
}

/// A streaming bandwidth test: `qps` QPs each keeping `depth` messages in flight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamResult {
    /// QPs used.
    pub qps: u32,
    /// Work requests kept outstanding per QP.
    pub depth: u32,
    /// Message size, bytes.
    pub message_bytes: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Duration, us.
    pub duration_us: f64,
    /// Achieved bandwidth, Gb/s.
    pub bandwidth_gbps: f64,
}

/// The result of probing one path: a measurement, or why it could not be made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum PathOutcome {
    /// The latency test completed.
    Measured(PathMeasurement),
    /// The probe failed on the host (a QP in error, a timeout, a refused registration): a
    /// finding in its own right.
    Failed {
        /// The error, naming the operation and status.
        error: String,
    },
    /// The engine cannot probe this path by design (a GPU without a driver, no way to
    /// register GPU memory): not a finding about the host.
    Unavailable {
        /// Why.
        reason: String,
    },
}

/// One path of a probe run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathProbe {
    /// The probing RNIC.
    pub rnic: ComponentId,
    /// The endpoint probed.
    pub endpoint: ComponentId,
    /// Clock at the start of this path's probe, ns.
    pub started_ns: u64,
    /// The latency test, or the failure.
    #[serde(flatten)]
    pub outcome: PathOutcome,
    /// The streaming test, when the plan asked for one.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub stream: Option<StreamResult>,
}

impl PathProbe {
    /// The measurement, if the probe succeeded.
    pub fn measurement(&self) -> Option<&PathMeasurement> {
        match &self.outcome {
            PathOutcome::Measured(m) => Some(m),
            PathOutcome::Failed { .. } | PathOutcome::Unavailable { .. } => None,
        }
    }
}

/// A loopback matrix: one probe run over a plan of paths.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeRun {
    /// Host model name.
    pub host: String,
    /// Measured or simulated.
    pub provenance: Provenance,
    /// Idle (full mesh) or busy (affinitive only).
    pub mode: Mode,
    /// Clock at the start of the run, ns (simulated clock on a virtual host).
    pub started_ns: u64,
    /// Clock at the end of the run, ns.
    pub finished_ns: u64,
    /// The probed paths, in plan order.
    pub paths: Vec<PathProbe>,
}

impl ProbeRun {
    /// The probe of one path, if the plan included it.
    pub fn probe(&self, rnic: &ComponentId, endpoint: &ComponentId) -> Option<&PathProbe> {
        self.paths
            .iter()
            .find(|p| &p.rnic == rnic && &p.endpoint == endpoint)
    }
}
