/*!
GPUs, found by PCI class and vendor without NVML (linux-counters.md 5, "Without NVML"):
display controllers (base class 0x03: `0x0300xx` VGA, `0x0302xx` 3D, `0x0380xx` other) from
NVIDIA (`0x10de`) or AMD (`0x1002`), ids from `include/linux/pci_ids.h`. An NVSwitch
(NVIDIA, class 0x0680) or a BMC's VGA function (ASPEED `0x1a03`) is not a GPU.

| file (below `sys/bus/pci/devices/<addr>/`) | policy |
|---|---|
| `sys/bus/pci/devices/` | optional: absent means no PCI bus, so no GPUs |
| `class` | required |
| `vendor`, `device` | required for display controllers |
| `numa_node` | optional (see [`super::pci`]) |
*/

use super::pci::{self, parse_class, parse_id, PciAddr};
use super::{DiscoverError, SysRoot};
use serde::Serialize;

/// PCI vendor id of NVIDIA (`PCI_VENDOR_ID_NVIDIA`).
pub const VENDOR_NVIDIA: u16 = 0x10de;
/// PCI vendor id of AMD graphics (`PCI_VENDOR_ID_ATI`).
pub const VENDOR_AMD: u16 = 0x1002;

/// A GPU's PCI function.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuDevice {
    /// Its PCI address.
    pub pci: PciAddr,
    /// `vendor`.
    pub vendor: u16,
    /// `device` (NVIDIA `0x20b0` is an A100 SXM4).
    pub device: u16,
    /// `numa_node` (`-1` gives `None`).
    pub numa_node: Option<u32>,
}

/// Whether a function of this class and vendor is a GPU.
pub fn is_gpu(class: u32, vendor: u16) -> bool {
    class >> 16 == 0x03 && matches!(vendor, VENDOR_NVIDIA | VENDOR_AMD)
}

/// Every GPU on the PCI bus, sorted by address.
pub(crate) fn scan(root: &SysRoot) -> Result<Vec<GpuDevice>, DiscoverError> {
    let dir = root.path("sys/bus/pci/devices");
    let mut gpus = Vec::new();
    for name in root.list_dir(&dir)?.unwrap_or_default() {
        let fdir = dir.join(&name);
        let pci = name
            .parse::<PciAddr>()
            .map_err(|e| DiscoverError::malformed(&fdir, e))?;
        let class = root.parse_required(&fdir.join("class"), parse_class)?;
        if class >> 16 != 0x03 {
            continue;
        }
        let vendor = root.parse_required(&fdir.join("vendor"), parse_id)?;
        if !is_gpu(class, vendor) {
            continue;
        }
        gpus.push(GpuDevice {
            pci,
            vendor,
            device: root.parse_required(&fdir.join("device"), parse_id)?,
            numa_node: pci::read_numa_node(root, &fdir)?,
        });
    }
    gpus.sort_by_key(|g| g.pci);
    Ok(gpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpus_are_nvidia_or_amd_display_controllers() {
        let table = [
            (0x030200, VENDOR_NVIDIA, true),  // A100 (3D controller)
            (0x030000, VENDOR_NVIDIA, true),  // GeForce (VGA)
            (0x038000, VENDOR_AMD, true),     // Instinct MI250 (display, other)
            (0x030000, 0x1a03, false),        // ASPEED BMC graphics
            (0x068000, VENDOR_NVIDIA, false), // NVSwitch
            (0x040300, VENDOR_NVIDIA, false), // the GPU's HD audio function
            (0x020700, 0x15b3, false),        // ConnectX (InfiniBand)
        ];
        for (class, vendor, want) in table {
            assert_eq!(is_gpu(class, vendor), want, "{class:06x} {vendor:04x}");
        }
    }
}
