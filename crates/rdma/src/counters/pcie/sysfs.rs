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
use std::fmt;
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

    /// `Some("running 8.0 GT/s x8 of 16.0 GT/s x16")` when this function's link runs below
    /// the speed or the width the function supports: a link failure visible without a
    /// probe (Hostping 2.1, 6 #1 to #5). `max` is this function's own capability, so a
    /// partner that supports less also shows here (a root port whose device has 4 lanes);
    /// [`downtrained_links`] compares with both ends.
    pub fn downtrained(&self) -> Option<String> {
        let (Some(current), Some(max)) = self.links() else {
            return None;
        };
        runs_below(&current, &max).then(|| running(&current, &max))
    }

    /// Where sysfs and config space disagree on the link (LNKSTA against
    /// `current_link_*`, LNKCAP against `max_link_*`): both read the same registers, so a
    /// difference means a capture taken at two moments or a broken tree.
    pub fn config_mismatch(&self) -> Option<String> {
        let express = self.express.present()?;
        let pairs = [
            (
                "current_link_*",
                self.current,
                "LNKSTA",
                express.link_status,
            ),
            ("max_link_*", self.max, "LNKCAP", express.link_cap),
        ];
        let differences: Vec<String> = pairs
            .iter()
            .filter_map(|(file, sysfs, reg, config)| match (sysfs, config) {
                (Some(s), Some(c)) if s != c => Some(format!(
                    "{file} says {} but {reg} says {}",
                    describe_link(s),
                    describe_link(c)
                )),
                _ => None,
            })
            .collect();
        (!differences.is_empty()).then(|| differences.join("; "))
    }
}

/// `16.0 GT/s x16`, as `lspci` and the kernel log write a link.
fn describe_link(link: &PcieLink) -> String {
    format!("{:.1} GT/s x{}", link.gts, link.width)
}

fn runs_below(current: &PcieLink, capable: &PcieLink) -> bool {
    current.gts < capable.gts || current.width < capable.width
}

fn running(current: &PcieLink, capable: &PcieLink) -> String {
    format!(
        "running {} of {}",
        describe_link(current),
        describe_link(capable)
    )
}

/// A PCIe link that runs below what both of its ends support.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DowntrainedLink {
    /// The root port or switch downstream port above the link.
    pub port: PciAddr,
    /// The function below it.
    pub device: PciAddr,
    /// The negotiated link.
    pub current: PcieLink,
    /// The lesser speed and width of the two ends' capabilities.
    pub capable: PcieLink,
}

impl fmt::Display for DowntrainedLink {
    /// `0000:98:00.0 -> 0000:99:00.0: running 16.0 GT/s x8 of 16.0 GT/s x16`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} -> {}: {}",
            self.port,
            self.device,
            running(&self.current, &self.capable)
        )
    }
}

/// The links of a path from [`read_path`] that run below what both ends support (Hostping
/// 2.1, 6 #1 to #5). A link is a root port or switch downstream port and the function
/// after it, so the port types of config space are needed (`CAP_SYS_ADMIN`); a pair whose
/// upper port type is unknown is skipped. The current link is the lower end's view, else
/// the port's (both describe the same link).
pub fn downtrained_links(path: &[PcieFunction]) -> Vec<DowntrainedLink> {
    path.windows(2)
        .filter_map(|pair| {
            let [port, device] = pair else { return None };
            let downstream = matches!(
                port.port_type(),
                Some(PortType::RootPort | PortType::SwitchDownstream)
            );
            if !downstream {
                return None;
            }
            let (current, capable) = link_state(Some(port), device)?;
            runs_below(&current, &capable).then_some(DowntrainedLink {
                port: port.addr,
                device: device.addr,
                current,
                capable,
            })
        })
        .collect()
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
    fn downtrained_compares_speed_and_width() {
        let table = [
            (link(16.0, 16), link(16.0, 16), None),
            (
                link(8.0, 8),
                link(16.0, 16),
                Some("running 8.0 GT/s x8 of 16.0 GT/s x16"),
            ),
            (
                link(16.0, 8),
                link(16.0, 16),
                Some("running 16.0 GT/s x8 of 16.0 GT/s x16"),
            ),
            (
                link(2.5, 4),
                link(5.0, 4),
                Some("running 2.5 GT/s x4 of 5.0 GT/s x4"),
            ),
            (None, link(16.0, 16), None),
            (link(8.0, 8), None, None),
        ];
        for (current, max, want) in table {
            let f = function(current, max);
            assert_eq!(f.downtrained().as_deref(), want, "{current:?} {max:?}");
            assert_eq!(f.port_type(), None);
        }
    }

    #[test]
    fn downtrained_falls_back_to_config_space_and_cross_checks_it() {
        let mut f = function(None, None);
        f.express = Capability::Present(ExpressCap {
            offset: 0x60,
            port_type: PortType::Endpoint,
            link_cap: link(16.0, 16),
            link_status: link(16.0, 4),
            max_payload_bytes: Some(256),
        });
        assert_eq!(f.port_type(), Some(PortType::Endpoint));
        assert_eq!(
            f.downtrained().as_deref(),
            Some("running 16.0 GT/s x4 of 16.0 GT/s x16")
        );
        assert_eq!(f.config_mismatch(), None);
        f.current = link(16.0, 16);
        f.max = link(16.0, 16);
        assert_eq!(f.downtrained(), None);
        assert_eq!(
            f.config_mismatch().as_deref(),
            Some("current_link_* says 16.0 GT/s x16 but LNKSTA says 16.0 GT/s x4")
        );
        f.max = link(32.0, 16);
        assert_eq!(
            f.config_mismatch().as_deref(),
            Some(
                "current_link_* says 16.0 GT/s x16 but LNKSTA says 16.0 GT/s x4; \
                 max_link_* says 32.0 GT/s x16 but LNKCAP says 16.0 GT/s x16"
            )
        );
    }

    #[test]
    fn downtrained_links_take_the_lesser_capability_of_both_ends() {
        let with_type = |addr: &str, port_type, current, max| PcieFunction {
            addr: addr.parse().unwrap(),
            express: Capability::Present(ExpressCap {
                offset: 0x60,
                port_type,
                link_cap: max,
                link_status: current,
                max_payload_bytes: None,
            }),
            ..function(current, max)
        };
        let root_port = with_type(
            "0000:10:00.0",
            PortType::RootPort,
            link(8.0, 4),
            link(16.0, 16),
        );
        let nvme = with_type(
            "0000:11:00.0",
            PortType::Endpoint,
            link(8.0, 4),
            link(8.0, 4),
        );
        assert!(root_port.downtrained().is_some());
        assert_eq!(downtrained_links(&[root_port.clone(), nvme.clone()]), []);
        let gpu = with_type(
            "0000:11:00.0",
            PortType::Endpoint,
            link(8.0, 4),
            link(16.0, 16),
        );
        let got = downtrained_links(&[root_port.clone(), gpu.clone()]);
        assert_eq!(
            got.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["0000:10:00.0 -> 0000:11:00.0: running 8.0 GT/s x4 of 16.0 GT/s x16"]
        );
        // Only a root port or a switch downstream port starts a link.
        let upstream = with_type(
            "0000:10:00.0",
            PortType::SwitchUpstream,
            link(8.0, 4),
            link(16.0, 16),
        );
        assert_eq!(downtrained_links(&[upstream, gpu.clone()]), []);
        let unknown_port = PcieFunction {
            express: Capability::Unknown {
                reason: "truncated".into(),
            },
            ..root_port.clone()
        };
        assert_eq!(downtrained_links(&[unknown_port, gpu.clone()]), []);
        // The device's view of the link first, the port's when the device has none.
        let quiet_gpu = PcieFunction {
            current: None,
            express: Capability::Absent,
            ..gpu
        };
        assert_eq!(downtrained_links(&[root_port, quiet_gpu]).len(), 1);
    }
}
