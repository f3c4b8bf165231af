//! A host's static configuration as `hostping lint` judges it: how each PCIe link of the
//! model trained, ACS and ATS control, and how the IOMMU translates device memory
//! accesses. The real backend reads it from sysfs and PCI config space; the virtual host
//! derives it from its injected faults. Unknown is not "fine": a value a source could not
//! read is `None`, and `unavailable` says why.

use crate::ids::{ComponentId, LinkId};
use crate::measure::Provenance;
use serde::{Deserialize, Serialize};

/// How one PCIe link of the model trained: its downstream end's current vs maximum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkTraining {
    /// The link.
    pub link: LinkId,
    /// The function at its downstream end (`0000:15:00.0`), where known.
    pub function: Option<String>,
    /// Negotiated speed, GT/s.
    pub current_gts: f64,
    /// Negotiated width, lanes.
    pub current_width: u32,
    /// The most the link can do, GT/s.
    pub max_gts: f64,
    /// The most lanes it can use.
    pub max_width: u32,
}

impl LinkTraining {
    /// Whether the link trained below what it can do (a failure seen without a probe).
    pub fn downtrained(&self) -> bool {
        self.current_gts < self.max_gts || self.current_width < self.max_width
    }
}

/// ACS control of one switch port.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcsPort {
    /// The switch the port belongs to.
    pub switch: ComponentId,
    /// The port's PCI function, or a name where there is none (a virtual host).
    pub port: String,
    /// P2P Request Redirect or Completion Redirect is on: peer-to-peer traffic is sent up
    /// to the root complex.
    pub redirect: bool,
    /// The control bits as `lspci -vvv` prints them (`SrcValid+ ReqRedir+ ...`).
    pub control: String,
}

/// ATS control of an RNIC or GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AtsState {
    /// The device.
    pub device: ComponentId,
    /// Whether ATS is enabled.
    pub enabled: bool,
}

/// How the IOMMU handles the RNICs' DMA, and what page sizes their buffers can use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IommuConfig {
    /// The IOMMU translates the RNICs' DMA (group type `DMA` or `DMA-FQ`), rather than
    /// passing it through or being off: `Some(true)` when any RNIC's DMA is known to be
    /// translated, `Some(false)` when every RNIC's is known not to be, `None` when it could
    /// not be told (absent is not "not translated"). Hardware RNICs only: a software RNIC
    /// (rxe, siw) moves data by the CPU's copies, so a host with only those gives `None`;
    /// the per-RNIC entries of [`HostConfig::iommu_groups`] still show the group of its
    /// parent NIC.
    pub translated: Option<bool>,
    /// The mode in words (`DMA-FQ`, `identity`, `off`).
    pub mode: String,
    /// Huge pages reserved, all sizes; `None` when the counts could not be read (absent is
    /// not zero: "no huge pages" is a finding, "unknown" is not).
    pub hugepages_total: Option<u64>,
    /// Transparent huge pages setting (`always`, `madvise`, `never`), where known.
    pub thp: Option<String>,
}

/// How the IOMMU group of one device translates its DMA.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IommuGroup {
    /// The device (an RNIC).
    pub device: ComponentId,
    /// The group number under `/sys/kernel/iommu_groups`, where known.
    pub group: Option<u32>,
    /// The group's `type` (`identity`, `DMA`, `DMA-FQ`), where known.
    pub kind: Option<String>,
    /// Whether the IOMMU translates the device's DMA (`DMA`/`DMA-FQ`), where known.
    pub translated: Option<bool>,
    /// Page size of the device's DMA mappings, bytes, where known.
    pub page_bytes: Option<u64>,
}

/// The smallest transport (ACK) timeout an RNIC honours: below it a QP's `timeout`
/// attribute is raised to it by firmware (ISPASS'21: about 500 ms on ConnectX with ODP).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransportTimeout {
    /// The RNIC.
    pub rnic: ComponentId,
    /// The floor, ms, where known.
    pub floor_ms: Option<f64>,
    /// Where the value comes from (`firmware floor, ISPASS'21`, a measurement).
    pub source: String,
}

/// The static configuration of a host, in model ids.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HostConfig {
    /// Measured on this host, or derived from a simulated one.
    pub provenance: Option<Provenance>,
    /// PCIe links with their training, where read.
    pub links: Vec<LinkTraining>,
    /// Switch ports with ACS control, where read.
    pub acs: Vec<AcsPort>,
    /// RNICs and GPUs with ATS control, where read.
    pub ats: Vec<AtsState>,
    /// IOMMU and page configuration, where read.
    pub iommu: Option<IommuConfig>,
    /// The IOMMU group of each RNIC, where read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub iommu_groups: Vec<IommuGroup>,
    /// ODP memory regions in use, where read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub odp: Vec<crate::snapshot::OdpRegion>,
    /// Each RNIC's transport timeout floor, where known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transport_timeouts: Vec<TransportTimeout>,
    /// What could not be read, and why (`ACS/ATS: config space truncated to 64 bytes`).
    pub unavailable: Vec<String>,
}
