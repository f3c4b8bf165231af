//! The analyzer's thresholds, with their defaults from Hostping Section 5 (DESIGN 3).

use serde::{Deserialize, Serialize};

/// Thresholds and their defaults: fractions, except the run count `flapping_runs` (the
/// paper's) and the round count `reprobe_rounds` (beyond the paper).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Thresholds {
    /// A path is abnormal when its bandwidth is this far below the baseline, or its
    /// latency this far above it (Hostping 5: 20 %).
    pub abnormal_th: f64,
    /// A link above this utilisation is overloaded (Hostping 5: 90 %).
    pub util_high: f64,
    /// An RNIC below this share of its line rate is idle (Hostping 5: 5 %).
    pub thp_low: f64,
    /// A Tx pause duration ratio above this triggers a probe (Hostping 5: 3 %).
    pub pfc_high: f64,
    /// A link gray in this many consecutive runs is flapping (Hostping 4.3: 3).
    pub flapping_runs: u32,
    /// Rounds of within-run re-probes of the paths that alone judge a link, in idle runs
    /// (beyond the paper, `analyze::reprobe`: 10, about a second of a run); 0 turns them
    /// off, leaving the flapping rules across runs.
    pub reprobe_rounds: u32,
}

impl Thresholds {
    /// Whether an RNIC carrying `throughput_gbps` of service traffic is idle: at most Thp_low
    /// of its line rate (Hostping 5).
    pub fn rnic_idle(&self, throughput_gbps: f64, line_rate_gbps: f64) -> bool {
        throughput_gbps <= self.thp_low * line_rate_gbps
    }
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            abnormal_th: 0.20,
            util_high: 0.90,
            thp_low: 0.05,
            pfc_high: 0.03,
            flapping_runs: 3,
            reprobe_rounds: 10,
        }
    }
}
