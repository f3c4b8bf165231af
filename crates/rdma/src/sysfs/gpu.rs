/*!
GPUs, found by PCI class and vendor without NVML (linux-counters.md 5, "Without NVML"):
display controllers (base class 0x03: `0x0300xx` VGA, `0x0302xx` 3D, `0x0380xx` other) from
NVIDIA (`0x10de`) or AMD (`0x1002`), ids from `include/linux/pci_ids.h`. An NVSwitch
(NVIDIA, class 0x0680) or a BMC's VGA function (ASPEED `0x1a03`) is not a GPU.

| file (below `sys/bus/pci/devices/<addr>/`) | policy |
|---|---|
| `sys/bus/pci/devices/` | optional: absent means no PCI bus, so no GPUs |
| `class` | required: a function without it is skipped with a note |
| `vendor`, `device` | required for display controllers: one without them is skipped with a note |
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

/// Every GPU on the PCI bus, sorted by address. A function that lacks a file saying what
/// it is (`class`, or `vendor`/`device` of a display controller) is skipped with a note:
/// one odd function must not hide the others.
pub(crate) fn scan(
    root: &SysRoot,
    notes: &mut Vec<String>,
) -> Result<Vec<GpuDevice>, DiscoverError> {
    let dir = root.path("sys/bus/pci/devices");
    let mut gpus = Vec::new();
    for name in root.list_dir(&dir)?.unwrap_or_default() {
        let fdir = dir.join(&name);
        let pci = name
            .parse::<PciAddr>()
            .map_err(|e| DiscoverError::malformed(&fdir, e))?;
        let mut identity = |file: &str| -> Result<Option<String>, DiscoverError> {
            let text = root.read_optional(&fdir.join(file))?;
            if text.is_none() {
                notes.push(format!(
                    "PCI function {pci} has no `{file}` file: skipped (not looked at as a GPU)"
                ));
            }
            Ok(text)
        };
        let Some(class) = identity("class")? else {
            continue;
        };
        let class =
            parse_class(&class).map_err(|e| DiscoverError::malformed(&fdir.join("class"), e))?;
        if class >> 16 != 0x03 {
            continue;
        }
        let Some(vendor) = identity("vendor")? else {
            continue;
        };
        let vendor =
            parse_id(&vendor).map_err(|e| DiscoverError::malformed(&fdir.join("vendor"), e))?;
        if !is_gpu(class, vendor) {
            continue;
        }
        let Some(device) = identity("device")? else {
            continue;
        };
        gpus.push(GpuDevice {
            pci,
            vendor,
            device: parse_id(&device)
                .map_err(|e| DiscoverError::malformed(&fdir.join("device"), e))?,
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
