//! The IOMMU parameters of a host model and the NIC-to-memory bound they give
//! (HotNets'22, "Understanding Host Interconnect Congestion", section 3.1).
//!
//! With the IOMMU translating an RNIC's DMA, "PCIe credits allow at most C packets in
//! flight, each PCIe write experiences a latency T_base + M * T_miss [...] As a result, the
//! throughput is bounded by (C * pkt_size) / (T_base + M * T_miss)" (3.1), where M is the
//! number of IOTLB misses per packet. The paper's testbed has "128 size IOTLB per IOMMU"
//! and 4 KiB MTUs; a miss costs "additional latency of few hundreds of nanoseconds to up to
//! a microsecond". C and T_base are hardware-specific and not given by the paper: the
//! defaults here make the bound without misses (262 Gb/s) just above a PCIe Gen4 x16 link,
//! as the paper's PCIe is "only nominally faster than the line rate".
//!
//! Both the virtual host (which applies the bound) and the analyzer (which quotes it against
//! the measured rate) read these values, so they cannot disagree.

use serde::{Deserialize, Serialize};

/// Bytes in a 4 KiB page.
pub const PAGE_4K: u64 = 4096;
/// Bytes in a 2 MiB huge page.
pub const PAGE_2M: u64 = 2 * 1024 * 1024;

/// The IOMMU of a host as the NIC-to-memory bound of HotNets'22 3.1 needs it. Written in a
/// host-model file as an optional `[iommu]` table; every field has the default below.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IommuModel {
    /// IOTLB entries per IOMMU (HotNets'22 3.1 testbed: 128).
    pub iotlb_entries: u32,
    /// C: posted DMA writes the PCIe credits allow in flight (hardware-specific; 4 makes
    /// the bound without misses 262 Gb/s).
    pub pcie_credits: u32,
    /// pkt_size: bytes of one DMA write (HotNets'22 3.1 uses 4 KiB MTUs).
    pub packet_bytes: u64,
    /// T_base: latency of a DMA write with no IOTLB miss, ns.
    pub t_base_ns: f64,
    /// T_miss: latency one IOTLB miss adds (a page-table walk), ns ("few hundreds of
    /// nanoseconds to up to a microsecond", HotNets'22 3.1).
    pub t_miss_ns: f64,
}

/// One point of an IOTLB sweep (`hostping check --iotlb`): a stream's throughput with its
/// buffers spanning a working set, as HotNets'22 Figures 3-5 plot it (3.1). Measured by
/// `check::iotlb`, judged by `analyze::iotlb_knee`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IotlbPoint {
    /// Bytes the stream's buffers span.
    pub working_set_bytes: u64,
    /// Throughput of the stream, Gb/s.
    pub gbps: f64,
}

impl Default for IommuModel {
    fn default() -> Self {
        IommuModel {
            iotlb_entries: 128,
            pcie_credits: 4,
            packet_bytes: 4096,
            t_base_ns: 500.0,
            t_miss_ns: 500.0,
        }
    }
}

impl IommuModel {
    /// Bytes the IOTLB maps at once with pages of `page_bytes` (its reach).
    pub fn reach_bytes(&self, page_bytes: u64) -> u64 {
        u64::from(self.iotlb_entries).saturating_mul(page_bytes)
    }

    /// Pages one DMA write touches on average at a random offset: `1 + pkt / page` for a
    /// packet no larger than a page (HotNets'22 3.1: a 4 KiB packet "requires fetching two
    /// pages instead of just a single hugepage").
    pub fn translations_per_packet(&self, page_bytes: u64) -> f64 {
        1.0 + self.packet_bytes as f64 / page_bytes.max(1) as f64
    }

    /// Share of translations that miss when DMA touches a working set of `working_set_bytes`
    /// uniformly: `1 - entries / pages`, 0 while the working set fits the IOTLB's reach.
    pub fn miss_ratio(&self, working_set_bytes: u64, page_bytes: u64) -> f64 {
        let pages = working_set_bytes.div_ceil(page_bytes.max(1)).max(1) as f64;
        (1.0 - f64::from(self.iotlb_entries) / pages).max(0.0)
    }

    /// The bound C * pkt / (T_base + M * T_miss) in Gb/s, for `misses_per_packet` = M.
    pub fn bound_gbps(&self, misses_per_packet: f64) -> f64 {
        let bits = f64::from(self.pcie_credits) * self.packet_bytes as f64 * 8.0;
        bits / (self.t_base_ns + misses_per_packet.max(0.0) * self.t_miss_ns)
    }

    /// Checks the values; an error names the field.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if self.iotlb_entries == 0 {
            return Err(("iotlb_entries", "must be at least 1".into()));
        }
        if self.pcie_credits == 0 {
            return Err(("pcie_credits", "must be at least 1".into()));
        }
        if self.packet_bytes == 0 {
            return Err(("packet_bytes", "must be at least 1".into()));
        }
        for (name, v) in [("t_base_ns", self.t_base_ns), ("t_miss_ns", self.t_miss_ns)] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err((name, format!("must be zero or more, got {v}")));
            }
        }
        if self.t_base_ns == 0.0 {
            return Err(("t_base_ns", "must be above 0".into()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_falls_with_misses_per_packet() {
        let m = IommuModel::default();
        // No miss: 4 x 4096 B x 8 / 500 ns = 262 Gb/s, above PCIe Gen4 x16 (252 Gb/s).
        assert!((m.bound_gbps(0.0) - 262.144).abs() < 1e-9);
        // Two misses per packet (4 KiB pages far beyond reach): 131072 / 1500 = 87 Gb/s.
        assert!((m.bound_gbps(2.0) - 87.381).abs() < 1e-3);
    }

    #[test]
    fn reach_and_misses_follow_the_page_size() {
        let m = IommuModel::default();
        assert_eq!(m.reach_bytes(PAGE_4K), 512 * 1024);
        assert_eq!(m.reach_bytes(PAGE_2M), 256 * 1024 * 1024);
        assert_eq!(m.miss_ratio(128 * 1024 * 1024, PAGE_2M), 0.0);
        assert_eq!(m.miss_ratio(256 * 1024 * 1024, PAGE_2M), 0.0);
        assert!((m.miss_ratio(4096 * 1024 * 1024, PAGE_2M) - 0.9375).abs() < 1e-12);
        let far = m.miss_ratio(4096 * 1024 * 1024, PAGE_4K);
        assert!(far > 0.9998 && far < 1.0, "{far}");
        assert_eq!(m.translations_per_packet(PAGE_4K), 2.0);
        assert!((m.translations_per_packet(PAGE_2M) - 1.001953125).abs() < 1e-12);
    }

    #[test]
    fn check_names_the_field() {
        let bad = IommuModel {
            t_miss_ns: f64::NAN,
            ..IommuModel::default()
        };
        assert_eq!(bad.check().unwrap_err().0, "t_miss_ns");
        let bad = IommuModel {
            iotlb_entries: 0,
            ..IommuModel::default()
        };
        assert_eq!(bad.check().unwrap_err().0, "iotlb_entries");
        assert!(IommuModel::default().check().is_ok());
    }
}
