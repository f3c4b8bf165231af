//! Where a culprit lies: its own module, as both the job verdict (`crate::job`) and the
//! actions taken on it (`crate::action`) name it.

use serde::{Deserialize, Serialize};

/// Where a culprit lies (DESIGN 4.7's `layer`; `job` is an addition: the job's own pattern
/// or mapping, named when the infrastructure is healthy).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// A host's intra-host network (a PCIe link, a memory channel, the IOMMU).
    Host,
    /// A host's RNIC or its settings.
    Rnic,
    /// A cable, a switch port, the fabric's traffic.
    Fabric,
    /// The job's own communication pattern or placement.
    Job,
}
