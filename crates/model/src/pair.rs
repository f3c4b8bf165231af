//! A probed RNIC pair between two hosts, split into its parts (DESIGN 4.6): what the
//! analyzer is given and what it concludes.

use serde::{Deserialize, Serialize};

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
