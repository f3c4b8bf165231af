//! What the hardware monitor and the bus monitor see at one instant (Hostping 4.1.2, 4.2):
//! RNIC throughput and symptoms, GPU activity, link utilisation. Absent is not zero: a
//! value the source does not expose is `None`.

use crate::ids::{ComponentId, LinkId};
use serde::{Deserialize, Serialize};

/// One RNIC's activity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RnicActivity {
    /// The RNIC.
    pub id: ComponentId,
    /// Service throughput (receive), Gb/s.
    pub throughput_gbps: Option<f64>,
    /// Fraction of time the RNIC paused its upstream port (Tx PFC pause duration ratio).
    pub tx_pause_ratio: Option<f64>,
    /// Packets dropped since the previous snapshot.
    pub drops: Option<u64>,
}

/// One GPU's activity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuActivity {
    /// The GPU.
    pub id: ComponentId,
    /// Whether it is running work.
    pub busy: Option<bool>,
}

/// One link's utilisation as the bus monitor reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkUtilisation {
    /// The link.
    pub id: LinkId,
    /// Busiest direction's load over capacity, 0..1 (may exceed 1 while congested).
    pub utilisation: Option<f64>,
}

/// The monitors' view of a host at one instant.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HostSnapshot {
    /// Clock, ns.
    pub at_ns: u64,
    /// Every RNIC.
    pub rnics: Vec<RnicActivity>,
    /// Every GPU.
    pub gpus: Vec<GpuActivity>,
    /// Every link the bus monitor can read.
    pub links: Vec<LinkUtilisation>,
}

impl HostSnapshot {
    /// The utilisation of a link, if it was read.
    pub fn utilisation(&self, link: &LinkId) -> Option<f64> {
        self.links
            .iter()
            .find(|l| &l.id == link)
            .and_then(|l| l.utilisation)
    }

    /// The activity of an RNIC, if it was read.
    pub fn rnic(&self, id: &ComponentId) -> Option<&RnicActivity> {
        self.rnics.iter().find(|r| &r.id == id)
    }
}
