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

/// The IOTLB of the IOMMU group an RNIC's DMA goes through, over the last interval
/// (HotNets'22 3.1): what the analyzer needs to quote the NIC-to-memory bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IommuActivity {
    /// The RNIC.
    pub rnic: ComponentId,
    /// The IOMMU translates the RNIC's DMA (group type `DMA`/`DMA-FQ`), where known.
    pub translated: Option<bool>,
    /// Page size of the RNIC's DMA mappings, bytes (4096, 2097152), where known.
    pub page_bytes: Option<u64>,
    /// Bytes the RNIC's active buffers span (its DMA working set), where known.
    pub working_set_bytes: Option<u64>,
    /// Length of the interval the counts cover, ns.
    pub interval_ns: Option<u64>,
    /// DMA writes (packets) of the RNIC in the interval.
    pub dma_packets: Option<u64>,
    /// IOTLB lookups in the interval (Intel `iotlb_lookup`; AMD hits plus misses).
    pub iotlb_lookups: Option<u64>,
    /// IOTLB misses in the interval (lookups minus Intel `iotlb_hit`; AMD `*_mis`).
    pub iotlb_misses: Option<u64>,
}

impl IommuActivity {
    /// IOTLB misses per DMA write (M of HotNets'22 3.1), when both counts were read.
    pub fn misses_per_packet(&self) -> Option<f64> {
        let packets = self.dma_packets.filter(|&p| p > 0)?;
        Some(self.iotlb_misses? as f64 / packets as f64)
    }

    /// Share of lookups that missed, when both counts were read.
    pub fn miss_ratio(&self) -> Option<f64> {
        let lookups = self.iotlb_lookups.filter(|&l| l > 0)?;
        Some(self.iotlb_misses? as f64 / lookups as f64)
    }
}

/// One memory node's bandwidth as the uncore (IMC) counters read it, split into the RNICs'
/// DMA (from RNIC counters) and the rest, which is the cores' (HotNets'22 3.2).
///
/// The IMC counters count a socket's memory controllers, not its NUMA nodes: where a socket
/// holds several memory nodes (AMD NPS2/NPS4, Intel SNC), the figures are the socket's (its
/// nodes' capacities summed, all its traffic) and `measured_with` names the other nodes they
/// include.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryBandwidth {
    /// The memory node.
    pub node: ComponentId,
    /// The node's bandwidth (with `measured_with`'s), reads and writes together, Gb/s.
    pub capacity_gbps: Option<f64>,
    /// Everything the memory controllers moved, Gb/s.
    pub total_gbps: Option<f64>,
    /// Of it, DMA by the RNICs, Gb/s.
    pub rnic_dma_gbps: Option<f64>,
    /// The other memory nodes of the same socket, counted together with this one; empty
    /// where the node is its socket's only one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub measured_with: Vec<ComponentId>,
}

impl MemoryBandwidth {
    /// What the cores (everything but the RNICs' DMA) moved, Gb/s.
    pub fn cores_gbps(&self) -> Option<f64> {
        Some((self.total_gbps? - self.rnic_dma_gbps?).max(0.0))
    }
}

/// An RNIC's transport error counters over the last interval, as mlx5 names them in
/// `hw_counters` (ISPASS'21: ODP damming and flood show here).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransportCounters {
    /// The RNIC.
    pub rnic: ComponentId,
    /// Length of the interval the counts cover, ns.
    pub interval_ns: Option<u64>,
    /// Requests that waited the whole transport (ACK) timeout (`local_ack_timeout_err`).
    pub local_ack_timeout_err: Option<u64>,
    /// NAKs for a sequence error received by the requester (`packet_seq_err`).
    pub packet_seq_err: Option<u64>,
    /// Out-of-sequence packets received by the responder (`out_of_sequence`).
    pub out_of_sequence: Option<u64>,
    /// Duplicate requests received by the responder (`duplicate_request`).
    pub duplicate_request: Option<u64>,
}

/// How an ODP memory region was registered (`rdma resource show mr -dd`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OdpKind {
    /// `IBV_ACCESS_ON_DEMAND` on a range.
    Explicit,
    /// The implicit ODP MR over the whole address space.
    Implicit,
}

/// An on-demand-paging memory region in use on an RNIC (ISPASS'21).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OdpRegion {
    /// The RNIC it is registered on.
    pub rnic: ComponentId,
    /// Explicit or implicit ODP.
    pub kind: OdpKind,
    /// Length, bytes (none for an implicit MR).
    pub bytes: Option<u64>,
    /// RNIC page faults on it (`rdma statistic mr`: page_faults).
    pub page_faults: Option<u64>,
    /// Pages invalidated under it (page_invalidations).
    pub page_invalidations: Option<u64>,
    /// The owning process id.
    pub pid: Option<u32>,
    /// The owning process name.
    pub process: Option<String>,
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
    /// The IOTLB of each RNIC's IOMMU group, where read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub iommu: Vec<IommuActivity>,
    /// Each memory node's bandwidth, where the uncore counters were read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory: Vec<MemoryBandwidth>,
    /// Each RNIC's transport error counters, where read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transport: Vec<TransportCounters>,
    /// ODP memory regions in use, where read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub odp: Vec<OdpRegion>,
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
