//! What `hostping mesh --format json` prints (DESIGN 4.6, with fields added after its own).

pub use model::job::PairParts;
pub use model::pair::{PairEnd, PartStatus};
use model::switch_port::SwitchPortCounters;
use model::Report;
use serde::Serialize;
pub use verdict::pairs::Coverage;
pub use verdict::Endpoint;

/// One probed pair (DESIGN 4.6's `pairs[]`; fields after `status` are additions).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PairReport {
    /// The ends, the figures and their judgement.
    #[serde(flatten)]
    pub parts: PairParts,
    /// Host A's loopback bandwidth on that path, Gb/s.
    pub host_a_gbps: Option<f64>,
    /// Host B's, Gb/s.
    pub host_b_gbps: Option<f64>,
    /// The network's bandwidth between the two RNICs' ports, Gb/s (the slower direction).
    pub network_gbps: Option<f64>,
    /// The network part on the healthy fabric for pairs as far apart, us.
    pub baseline_network_us: f64,
    /// The network's bandwidth on the healthy fabric, Gb/s.
    pub baseline_network_gbps: f64,
    /// Switch ports from B back to A (destination-based tables may route it elsewhere).
    pub route_back: Vec<String>,
    /// Both RNICs on one leaf switch.
    pub same_leaf: bool,
    /// Latency probes the budget gives the pair over the mesh.
    pub probes: u32,
    /// Round trips the simulator played (at most `network::MAX_SIMULATED_ROUND_TRIPS`).
    pub simulated_round_trips: u32,
    /// Packets lost on corrupting cables and sent again.
    pub retransmitted_packets: u64,
    /// When the pair was probed, seconds into the mesh.
    pub probed_at_s: f64,
    /// The mesh's round the pair was probed in, from 1 (`MeshSettings::rounds`: the same
    /// pairs again, half a flap period later).
    pub round: u32,
    /// Why the pair is not normal, in words; `None` when it is.
    pub reason: Option<String>,
}

/// A host's own check, as the mesh used it.
#[derive(Clone, Debug, Serialize)]
pub struct HostSummary {
    /// Host name.
    pub host: String,
    /// Its check's verdict.
    pub healthy: bool,
    /// Causes its check found (`link_failure`, ...).
    pub causes: Vec<String>,
    /// Its check, whole (DESIGN 4.3).
    pub report: Report,
}

/// The probe budget and what it costs.
#[derive(Clone, Debug, Serialize)]
pub struct Budget {
    /// Seconds the probes are spread over.
    pub duration_s: f64,
    /// Latency probes a second per same-leaf target.
    pub rate_same_leaf: f64,
    /// Latency probes a second per cross-leaf target.
    pub rate_cross_leaf: f64,
    /// Latency probes over the mesh, all pairs.
    pub latency_probes: u64,
    /// Bytes the probes put on the wire (pings both ways, one stream each way a pair),
    /// payload only.
    pub bytes: u64,
}

/// One switch port's counters over the mesh (DESIGN 4.4's names), as a sampler on the
/// simulated fabric would read their deltas across it.
#[derive(Clone, Debug, Serialize)]
pub struct PortReport {
    /// `leaf2/9`.
    pub port: String,
    /// The counters.
    pub counters: SwitchPortCounters,
}

/// `hostping mesh --format json` (DESIGN 4.6).
#[derive(Clone, Debug, Serialize)]
pub struct MeshReport {
    /// The pairs, in host order.
    pub pairs: Vec<PairReport>,
    /// Always true here: every number came from the simulators.
    pub simulated: bool,
    /// The cluster's name.
    pub cluster: String,
    /// The faults injected, as given.
    pub faults: Vec<String>,
    /// Where the data lived.
    pub endpoint: Endpoint,
    /// Each probed host's own check.
    pub hosts: Vec<HostSummary>,
    /// What the pairs cover.
    pub coverage: Coverage,
    /// The budget.
    pub budget: Budget,
    /// Every switch port that counted something over the mesh: the probes' and the other
    /// jobs' traffic, symbol and receive errors on corrupting cables, a down cable's
    /// LinkDowned.
    pub ports: Vec<PortReport>,
}

impl MeshReport {
    /// DESIGN 4.3's exit status applied to pairs: 0 every pair normal, 1 some pair abnormal
    /// or failed, 3 none abnormal but some not judged.
    pub fn exit_code(&self) -> i32 {
        let any = |s: PartStatus| self.pairs.iter().any(|p| p.parts.status == s);
        if any(PartStatus::Abnormal) || any(PartStatus::Failed) {
            1
        } else if any(PartStatus::Uncertain) {
            3
        } else {
            0
        }
    }
}
