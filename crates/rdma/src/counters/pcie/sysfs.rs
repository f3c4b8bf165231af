//! One PCI function read from sysfs (its link files, AER files and `config`), and the path
//! of functions from a root port down to a device.

use super::aer::read_aer;
use super::repr::{
    parse_config, AcsControl, AerRegisters, AtsControl, Capability, ConfigSummary, ExpressCap,
};
use super::view::{field, PortType};
use super::Aer;
use crate::sysfs::pci::{self, PciAddr, PcieLink};
use crate::sysfs::{means_no_value, DiscoverError, SysRoot};
use serde::Serialize;
use std::path::Path;

/// What sysfs and config space say about one PCI function.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PcieFunction {
    /// The function's address.
    pub addr: PciAddr,
    /// `class` (`0x%06x`): base class, subclass, programming interface.
    pub class: u32,
    /// `current_link_speed` and `current_link_width`: the negotiated link; `None` when not
    /// reported (conventional PCI) or down.
    pub current: Option<PcieLink>,
    /// `max_link_speed` and `max_link_width`: what this function supports.
    pub max: Option<PcieLink>,
    /// The `aer_*` files; `None` when the kernel exposes none of them.
    pub aer: Option<Aer>,
    /// The PCI Express capability (standard capability id 0x10).
    pub express: Capability<ExpressCap>,
    /// Access Control Services (extended capability id 0x0D).
    pub acs: Capability<AcsControl>,
    /// Address Translation Services (extended capability id 0x0F).
    pub ats: Capability<AtsControl>,
    /// The registers of Advanced Error Reporting (extended capability id 0x01): which
    /// errors are logged, masked and fatal.
    pub aer_registers: Capability<AerRegisters>,
    /// How many bytes `config` gave: 64 without `CAP_SYS_ADMIN`, 256 or 4096 with it, 0
    /// when the file is missing.
    pub config_bytes: usize,
}

impl PcieFunction {
    /// The Device/Port Type of the PCI Express capability, when it was read.
    pub fn port_type(&self) -> Option<PortType> {
        self.express.present().map(|e| e.port_type)
    }

    /// The negotiated and the supported link: from sysfs where present, else from LNKSTA
    /// and LNKCAP of config space.
    fn links(&self) -> (Option<PcieLink>, Option<PcieLink>) {
        let express = self.express.present();
        (
            self.current.or(express.and_then(|e| e.link_status)),
            self.max.or(express.and_then(|e| e.link_cap)),
        )
    }
}

/// The link above `device`: how it trained (the device's view, else the port's: both
/// describe the same link) and what it can do (the lesser speed and width of the two ends'
/// capabilities, so a Gen4 device in a Gen3 slot is not downtrained). Without a `port`
/// (a device on the root bus) the device's own capability is all there is.
pub fn link_state(
    port: Option<&PcieFunction>,
    device: &PcieFunction,
) -> Option<(PcieLink, PcieLink)> {
    let (port_current, port_max) = port.map_or((None, None), PcieFunction::links);
    let (device_current, device_max) = device.links();
    let current = device_current.or(port_current)?;
    let capable = match (port_max, device_max) {
        (Some(a), Some(b)) => PcieLink {
            gts: a.gts.min(b.gts),
            width: a.width.min(b.width),
        },
        (one, other) => one.or(other)?,
    };
    Some((current, capable))
}

/// Reads the function at `sys/bus/pci/devices/<addr>` (see the module doc for each file).
pub fn read_function(root: &SysRoot, addr: PciAddr) -> Result<PcieFunction, DiscoverError> {
    let dir = root.path(&format!("sys/bus/pci/devices/{addr}"));
    if root.resolve(&dir)?.is_none() {
        return Err(DiscoverError::Malformed {
            path: dir,
            reason: "no such PCI function".into(),
        });
    }
    let class = root.parse_required(&dir.join("class"), pci::parse_class)?;
    let config = match read_config(&dir.join("config"))? {
        Some(bytes) => parse_config(&bytes),
        None => ConfigSummary::unknown(0, "`config` is missing"),
    };
    Ok(PcieFunction {
        addr,
        class,
        current: read_link(root, &dir, "current")?,
        max: read_link(root, &dir, "max")?,
        aer: read_aer(root, &dir)?,
        express: config.express,
        acs: config.acs,
        ats: config.ats,
        aer_registers: config.aer,
        config_bytes: config.len,
    })
}

/// Every function from the root port down to `addr`, root port first and `addr` last
/// (the walk of linux-counters.md 4.2, as [`crate::sysfs::discover`] does it).
pub fn read_path(root: &SysRoot, addr: PciAddr) -> Result<Vec<PcieFunction>, DiscoverError> {
    // Links resolve to absolute paths; the walk needs the root in the same form.
    let real = std::fs::canonicalize(root.root())
        .map_err(|e| DiscoverError::unreadable(root.root(), &e))?;
    let root = SysRoot::new(real);
    pci::chain(&root, addr)?
        .iter()
        .map(|hop| read_function(&root, hop.addr))
        .collect()
}

/// `<which>_link_speed` and `<which>_link_width`: a link only when both have a value.
fn read_link(root: &SysRoot, dir: &Path, which: &str) -> Result<Option<PcieLink>, DiscoverError> {
    let speed = root
        .parse_optional(
            &dir.join(format!("{which}_link_speed")),
            pci::parse_link_speed,
        )?
        .flatten();
    let width = root
        .parse_optional(
            &dir.join(format!("{which}_link_width")),
            pci::parse_link_width,
        )?
        .flatten();
    Ok(speed.zip(width).map(|(gts, width)| PcieLink { gts, width }))
}

/// The binary `config`: `None` when missing; fewer than 64 bytes is malformed, since the
/// kernel gives every reader at least the header (`pci_read_config` in pci-sysfs.c).
fn read_config(path: &Path) -> Result<Option<Vec<u8>>, DiscoverError> {
    match std::fs::read(path) {
        Ok(bytes) if bytes.len() < field::HEADER_LEN => Err(DiscoverError::Malformed {
            path: path.to_path_buf(),
            reason: format!(
                "config space is {} bytes, shorter than the 64-byte header",
                bytes.len()
            ),
        }),
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if means_no_value(&e) => Ok(None),
        Err(e) => Err(DiscoverError::unreadable(path, &e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(gts: f64, width: u32) -> Option<PcieLink> {
        Some(PcieLink { gts, width })
    }

    fn function(current: Option<PcieLink>, max: Option<PcieLink>) -> PcieFunction {
        PcieFunction {
            addr: "0000:15:00.0".parse().unwrap(),
            class: 0x020700,
            current,
            max,
            aer: None,
            express: Capability::Absent,
            acs: Capability::Absent,
            ats: Capability::Absent,
            aer_registers: Capability::Absent,
            config_bytes: 0,
        }
    }

    #[test]
    fn a_link_is_read_from_sysfs_first_then_from_config_space() {
        let mut f = function(None, None);
        assert_eq!(link_state(None, &f), None);
        f.express = Capability::Present(ExpressCap {
            offset: 0x60,
            port_type: PortType::Endpoint,
            link_cap: link(16.0, 16),
            link_status: link(16.0, 4),
            max_payload_bytes: Some(256),
        });
        assert_eq!(f.port_type(), Some(PortType::Endpoint));
        assert_eq!(
            link_state(None, &f),
            Some((link(16.0, 4).unwrap(), link(16.0, 16).unwrap()))
        );
        // Sysfs and config space read the same registers; sysfs wins where both exist.
        f.current = link(8.0, 16);
        f.max = link(32.0, 16);
        assert_eq!(
            link_state(None, &f),
            Some((link(8.0, 16).unwrap(), link(32.0, 16).unwrap()))
        );
    }

    #[test]
    fn a_link_can_do_the_lesser_of_both_ends_capabilities() {
        let root_port = function(link(8.0, 4), link(16.0, 16));
        let nvme = function(link(8.0, 4), link(8.0, 4));
        assert_eq!(
            link_state(Some(&root_port), &nvme),
            Some((link(8.0, 4).unwrap(), link(8.0, 4).unwrap()))
        );
        let gpu = function(link(16.0, 8), link(32.0, 16));
        assert_eq!(
            link_state(Some(&root_port), &gpu),
            Some((link(16.0, 8).unwrap(), link(16.0, 16).unwrap()))
        );
        // The device's view of the link first, the port's when the device has none; the
        // capability of the end that has one when the other has none.
        let quiet_gpu = function(None, None);
        assert_eq!(
            link_state(Some(&root_port), &quiet_gpu),
            Some((link(8.0, 4).unwrap(), link(16.0, 16).unwrap()))
        );
        assert_eq!(link_state(Some(&quiet_gpu), &quiet_gpu), None);
    }
}
