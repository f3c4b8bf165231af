//! The virtual host's counters of the host interconnect, beside the monitors' RNIC, GPU and
//! link view: each RNIC's IOTLB (HotNets'22 3.1), each memory node's bandwidth split into
//! RNIC DMA and the cores' traffic (3.2), each RNIC's transport error counters and the ODP
//! memory regions in use (ISPASS'21, [`crate::odp`]).
//!
//! Counts cover the last [`COUNTER_INTERVAL_NS`] (the 1 s cadence of Hostping 5's abnormal
//! metrics) at the current flap phase. An RNIC under an `iommu` fault moves the service
//! traffic it carries plus [`APP_DMA_GBPS`], the application that keeps its buffers active
//! (the fault's working set) at a rate below Thp_low, so the host stays idle and the IOTLB
//! still has DMA to count.

use crate::fault::Fault;
use crate::net::{Network, Phase};
use crate::odp;
use model::{ComponentClass, HostTopology, IommuActivity, MemoryBandwidth, OdpRegion};

/// The interval the counts cover, ns.
pub(crate) const COUNTER_INTERVAL_NS: u64 = 1_000_000_000;

/// DMA of the application behind an `iommu` fault, Gb/s (below Thp_low of any RNIC here).
pub(crate) const APP_DMA_GBPS: f64 = 1.0;

/// Each RNIC's IOTLB activity over the interval.
pub(crate) fn iommu(host: &HostTopology, net: &Network, phase: &Phase) -> Vec<IommuActivity> {
    host.rnics()
        .enumerate()
        .map(|(r, c)| {
            let Some(t) = net.rnic(r).iommu else {
                return IommuActivity {
                    rnic: c.id.clone(),
                    translated: Some(false),
                    page_bytes: None,
                    working_set_bytes: None,
                    interval_ns: Some(COUNTER_INTERVAL_NS),
                    dma_packets: None,
                    iotlb_lookups: Some(0),
                    iotlb_misses: Some(0),
                };
            };
            let (_, delivered) = net.service_of(phase, r);
            let gbps = delivered + APP_DMA_GBPS;
            let bytes = gbps * COUNTER_INTERVAL_NS as f64 / 8.0;
            let packets = (bytes / host.iommu.packet_bytes as f64).round();
            let lookups = (packets * t.translations_per_packet).round();
            IommuActivity {
                rnic: c.id.clone(),
                translated: Some(true),
                page_bytes: Some(t.page_bytes),
                working_set_bytes: Some(t.working_set_bytes),
                interval_ns: Some(COUNTER_INTERVAL_NS),
                dma_packets: Some(packets as u64),
                iotlb_lookups: Some(lookups as u64),
                iotlb_misses: Some((lookups * t.miss_ratio).round() as u64),
            }
        })
        .collect()
}

/// Each memory node's bandwidth over the interval: its channel's load, and of it the RNICs'
/// DMA (service traffic written there).
pub(crate) fn memory(host: &HostTopology, net: &Network, phase: &Phase) -> Vec<MemoryBandwidth> {
    host.components()
        .iter()
        .filter(|c| c.class() == ComponentClass::Memory)
        .filter_map(|c| {
            let channel = host.links_to_cpu(&c.id).into_iter().next()?;
            let i = host.links().iter().position(|l| l.id == channel)?;
            let (capacity, total, rnic) = net.memory_bus(phase, i);
            Some(MemoryBandwidth {
                node: c.id.clone(),
                capacity_gbps: Some(capacity),
                total_gbps: Some(total),
                rnic_dma_gbps: Some(rnic),
                // The virtual host models each node's bus on its own.
                measured_with: Vec::new(),
            })
        })
        .collect()
}

/// The ODP memory regions in use on every RNIC, `elapsed_ns` after the host started.
pub(crate) fn odp_regions(
    host: &HostTopology,
    faults: &[Fault],
    elapsed_ns: u64,
) -> Vec<OdpRegion> {
    host.rnics()
        .filter_map(|c| odp::pitfall(faults, &c.id).map(|p| odp::regions(&c.id, p, elapsed_ns)))
        .flatten()
        .collect()
}
