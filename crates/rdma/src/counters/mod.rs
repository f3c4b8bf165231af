/*!
Counter sources of a real host (Hostping 4.1.2, 4.2; `shared/reference/linux-counters.md`),
one module per source. Each reads below a [`SysRoot`](crate::sysfs::SysRoot) (or through a
kernel interface that has no file: ethtool ioctls, perf_event, NVML) and returns typed
readings; absent is not an error, an unreadable or malformed file is, naming it.
*/

pub mod ethtool;
pub mod iommu;
pub mod iotlb;
pub mod nvml;
pub mod pcie;
pub mod rnic;
pub mod uncore;
