/*!
PCIe link state, AER counters and the config-space capabilities (PCI Express, ACS, ATS) of
one PCI function, or of every function from its root port down (linux-counters.md 4.1 to
4.3).

These are the link failures and misconfigurations that need no probe to see (Hostping,
`shared/papers/000_e45f64ac996c38a3.txt`): a link trained below what it supports (section
2.1 and section 6 #1 to #5, "link failures"; section 7: some are there from the factory,
and settings are lost at each reboot, so check before running applications), AER
errors counted at either end of a link, ACS redirecting peer-to-peer traffic up to the root
complex (#7) and ATS disabled on an RNIC (#8).

| file (below `sys/bus/pci/devices/<addr>/`) | policy |
|---|---|
| the folder itself | required: a missing function is an error naming it |
| `class` | required: `0x%06x` ([`pci::parse_class`]) |
| `current_link_speed`, `current_link_width`, `max_link_speed`, `max_link_width` | optional (PCIe functions only): absent, `Unknown` or width `0` give no link; malformed is an error ([`pci::parse_link_speed`], [`pci::parse_link_width`]) |
| `aer_dev_correctable`, `aer_dev_nonfatal`, `aer_dev_fatal` | optional (`CONFIG_PCIEAER` and an AER capability): `<name> <count>` lines, then `TOTAL_ERR_COR`, `TOTAL_ERR_NONFATAL` or `TOTAL_ERR_FATAL`; malformed is an error |
| `aer_rootport_total_err_{cor,nonfatal,fatal}` | optional (root ports): `%llu`; all three or none |
| `config` (binary) | optional: missing leaves every capability unknown; fewer than 64 bytes is an error; 64 bytes (a reader without `CAP_SYS_ADMIN`) leaves the capabilities unknown, not absent |

[`parse_config`] walks the raw config space and never panics, whatever the bytes.
*/

use crate::sysfs::pci::{self, PciAddr, PcieLink};
use crate::sysfs::{means_no_value, DiscoverError, ParseError, SysRoot};
use serde::Serialize;
use std::fmt;
use std::path::Path;

// ------------------------------------------------------------------ one function

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
        None => ConfigSpace::unknown(0, "`config` is missing".into()),
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
        Ok(bytes) if bytes.len() < HEADER_LEN => Err(DiscoverError::Malformed {
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

// ------------------------------------------------------------------------ AER

/// The AER statistics of a function (`Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats`,
/// linux-counters.md 4.1). Errors are often counted at the link partner, not at the device
/// at fault: read both ends of a link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Aer {
    /// `aer_dev_correctable`.
    pub correctable: Option<AerCounts>,
    /// `aer_dev_nonfatal`.
    pub nonfatal: Option<AerCounts>,
    /// `aer_dev_fatal`.
    pub fatal: Option<AerCounts>,
    /// `aer_rootport_total_err_*`: error messages this root port received from below.
    pub rootport: Option<RootPortTotals>,
}

impl Aer {
    /// Errors this function saw itself: the sum of the three `TOTAL_ERR_*` lines.
    pub fn device_total(&self) -> u64 {
        [&self.correctable, &self.nonfatal, &self.fatal]
            .into_iter()
            .flatten()
            .map(|c| c.total)
            .fold(0, u64::saturating_add)
    }
}

/// One `aer_dev_*` file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AerCounts {
    /// Every `<name> <count>` line but the total, in file order (`Receiver Error`,
    /// `Bad TLP`, ...; the kernel writes `<array>_bit[<n>]` for an unnamed bit).
    pub errors: Vec<(String, u64)>,
    /// The `TOTAL_ERR_*` line.
    pub total: u64,
}

impl AerCounts {
    /// The errors with a nonzero count.
    pub fn nonzero(&self) -> impl Iterator<Item = (&str, u64)> {
        self.errors
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(name, n)| (name.as_str(), *n))
    }
}

/// The `aer_rootport_total_err_*` files of a root port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RootPortTotals {
    /// `aer_rootport_total_err_cor`.
    pub correctable: u64,
    /// `aer_rootport_total_err_nonfatal`.
    pub nonfatal: u64,
    /// `aer_rootport_total_err_fatal`.
    pub fatal: u64,
}

fn read_aer(root: &SysRoot, dir: &Path) -> Result<Option<Aer>, DiscoverError> {
    let counts = |file: &str, total: &'static str| {
        root.parse_optional(&dir.join(file), |s| parse_aer_counts(s, total))
    };
    let correctable = counts("aer_dev_correctable", "TOTAL_ERR_COR")?;
    let nonfatal = counts("aer_dev_nonfatal", "TOTAL_ERR_NONFATAL")?;
    let fatal = counts("aer_dev_fatal", "TOTAL_ERR_FATAL")?;
    let rootport = read_rootport_totals(root, dir)?;
    let any = correctable.is_some() || nonfatal.is_some() || fatal.is_some() || rootport.is_some();
    Ok(any.then_some(Aer {
        correctable,
        nonfatal,
        fatal,
        rootport,
    }))
}

/// All three `aer_rootport_total_err_*` files, or none: the kernel shows them together.
fn read_rootport_totals(
    root: &SysRoot,
    dir: &Path,
) -> Result<Option<RootPortTotals>, DiscoverError> {
    let names =
        ["cor", "nonfatal", "fatal"].map(|k| dir.join(format!("aer_rootport_total_err_{k}")));
    let mut values = [None; 3];
    for (value, path) in values.iter_mut().zip(&names) {
        *value = root.parse_optional(path, parse_count)?;
    }
    match values {
        [Some(correctable), Some(nonfatal), Some(fatal)] => Ok(Some(RootPortTotals {
            correctable,
            nonfatal,
            fatal,
        })),
        [None, None, None] => Ok(None),
        _ => {
            let missing = values.iter().position(Option::is_none).unwrap_or(0);
            Err(DiscoverError::Malformed {
                path: names[missing].clone(),
                reason: "missing while other aer_rootport_total_err_* files exist".into(),
            })
        }
    }
}

/// Parses an `aer_dev_*` file: lines `<name> <count>` (`%s %llu`; names have spaces), the
/// last one `<total_name> <count>` (`TOTAL_ERR_COR`, ...).
pub fn parse_aer_counts(s: &str, total_name: &'static str) -> Result<AerCounts, ParseError> {
    let mut errors = Vec::new();
    let mut total = None;
    for line in s.lines() {
        let bad = || ParseError::new(line, "an AER line `<name> <count>`");
        let (name, count) = line.trim_end().rsplit_once(' ').ok_or_else(bad)?;
        let name = name.trim_end();
        let count = parse_count(count).map_err(|_| bad())?;
        if name.is_empty() || total.is_some() {
            return Err(bad());
        }
        if name == total_name {
            total = Some(count);
        } else {
            errors.push((name.to_string(), count));
        }
    }
    let total =
        total.ok_or_else(|| ParseError::new(s, "AER counts ending in a TOTAL_ERR_* line"))?;
    Ok(AerCounts { errors, total })
}

/// Parses a counter: decimal digits only, as `%llu` writes it.
pub fn parse_count(s: &str) -> Result<u64, ParseError> {
    let bad = || ParseError::new(s, "a decimal count");
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    s.parse().map_err(|_| bad())
}

// --------------------------------------------------------------- config space

/// A capability of config space: not implemented, not readable, or read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability<T> {
    /// The function does not implement it: the capability list ends without it.
    Absent,
    /// It cannot be told: config space is truncated or its list is broken.
    Unknown {
        /// Why, in words (`config space truncated to 64 bytes: needs CAP_SYS_ADMIN`).
        reason: String,
    },
    /// Implemented, with its registers.
    Present(T),
}

impl<T> Capability<T> {
    /// The registers, when present.
    pub fn present(&self) -> Option<&T> {
        match self {
            Capability::Present(x) => Some(x),
            _ => None,
        }
    }

    fn and_then<U>(self, f: impl FnOnce(T) -> Capability<U>) -> Capability<U> {
        match self {
            Capability::Absent => Capability::Absent,
            Capability::Unknown { reason } => Capability::Unknown { reason },
            Capability::Present(x) => f(x),
        }
    }
}

impl<T: fmt::Display> fmt::Display for Capability<T> {
    /// `absent`, `unknown (<reason>)`, or the registers as `lspci -vvv` writes them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Capability::Absent => f.write_str("absent"),
            Capability::Unknown { reason } => write!(f, "unknown ({reason})"),
            Capability::Present(x) => x.fmt(f),
        }
    }
}

/// The capabilities [`parse_config`] reads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigSpace {
    /// Bytes given.
    pub len: usize,
    /// The PCI Express capability.
    pub express: Capability<ExpressCap>,
    /// The ACS extended capability.
    pub acs: Capability<AcsControl>,
    /// The ATS extended capability.
    pub ats: Capability<AtsControl>,
}

impl ConfigSpace {
    fn unknown(len: usize, reason: String) -> ConfigSpace {
        ConfigSpace {
            len,
            express: Capability::Unknown {
                reason: reason.clone(),
            },
            acs: Capability::Unknown {
                reason: reason.clone(),
            },
            ats: Capability::Unknown { reason },
        }
    }
}

/// The Device/Port Type field of the PCI Express capability (flags at cap+2, bits 7:4;
/// `PCI_EXP_TYPE_*` in `include/uapi/linux/pci_regs.h`, linux-counters.md 4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PortType {
    /// 0: a PCI Express endpoint (NIC, GPU, NVMe).
    Endpoint,
    /// 1: a legacy endpoint.
    LegacyEndpoint,
    /// 4: a root port of the root complex.
    RootPort,
    /// 5: the upstream port of a switch.
    SwitchUpstream,
    /// 6: a downstream port of a switch.
    SwitchDownstream,
    /// 7: a PCI Express to PCI/PCI-X bridge.
    PcieToPciBridge,
    /// 8: a PCI/PCI-X to PCI Express bridge.
    PciToPcieBridge,
    /// 9: an endpoint integrated in the root complex.
    RcIntegratedEndpoint,
    /// 10: a root complex event collector.
    RcEventCollector,
    /// A value the specification reserves.
    Reserved(u8),
}

impl PortType {
    fn from_code(code: u8) -> PortType {
        match code {
            0 => PortType::Endpoint,
            1 => PortType::LegacyEndpoint,
            4 => PortType::RootPort,
            5 => PortType::SwitchUpstream,
            6 => PortType::SwitchDownstream,
            7 => PortType::PcieToPciBridge,
            8 => PortType::PciToPcieBridge,
            9 => PortType::RcIntegratedEndpoint,
            10 => PortType::RcEventCollector,
            other => PortType::Reserved(other),
        }
    }
}

/// The PCI Express capability (id 0x10; linux-counters.md 4.3 and 4.4).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ExpressCap {
    /// Where it sits in config space.
    pub offset: usize,
    /// Flags bits 7:4.
    pub port_type: PortType,
    /// LNKCAP (cap+0x0c): Max Link Speed bits 3:0, Max Link Width bits 9:4; `None` when
    /// either is zero or the speed code is unknown (a function without a link).
    pub link_cap: Option<PcieLink>,
    /// LNKSTA (cap+0x12): Current Link Speed bits 3:0, Negotiated Link Width bits 9:4;
    /// `None` when the link is down.
    pub link_status: Option<PcieLink>,
    /// DevCtl (cap+0x08) Max_Payload_Size, bits 7:5: 128 << n bytes; `None` for the
    /// reserved codes 6 and 7. Payload efficiency is about MPS / (MPS + 24) (4.4).
    pub max_payload_bytes: Option<u32>,
}

/// ACS Capability and Control registers (extended capability 0x0D, cap+0x04 and cap+0x06;
/// linux-counters.md 4.3). The same bits in both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AcsControl {
    /// ACS Capability: the controls the port implements.
    pub capability: u16,
    /// ACS Control: the controls enabled.
    pub control: u16,
}

impl AcsControl {
    /// Source Validation.
    pub const SRC_VALID: u16 = 0x0001;
    /// Translation Blocking.
    pub const TRANS_BLK: u16 = 0x0002;
    /// P2P Request Redirect.
    pub const REQ_REDIR: u16 = 0x0004;
    /// P2P Completion Redirect.
    pub const CMPLT_REDIR: u16 = 0x0008;
    /// Upstream Forwarding.
    pub const UPSTREAM_FWD: u16 = 0x0010;
    /// P2P Egress Control.
    pub const EGRESS_CTRL: u16 = 0x0020;
    /// Direct Translated P2P.
    pub const DIRECT_TRANS: u16 = 0x0040;

    /// The seven bits `lspci -vvv` prints, in its order and with its names.
    const LSPCI: [(u16, &'static str); 7] = [
        (Self::SRC_VALID, "SrcValid"),
        (Self::TRANS_BLK, "TransBlk"),
        (Self::REQ_REDIR, "ReqRedir"),
        (Self::CMPLT_REDIR, "CmpltRedir"),
        (Self::UPSTREAM_FWD, "UpstreamFwd"),
        (Self::EGRESS_CTRL, "EgressCtrl"),
        (Self::DIRECT_TRANS, "DirectTrans"),
    ];

    /// ReqRedir or CmpltRedir enabled: peer-to-peer requests or completions through this
    /// port go up to the root complex (and its IOMMU) instead of across the switch, which
    /// takes GPUDirect RDMA off the switch (linux-counters.md 4.3; Hostping 2.1 and 6 #7).
    pub fn redirects(&self) -> bool {
        self.control & (Self::REQ_REDIR | Self::CMPLT_REDIR) != 0
    }

    /// `SrcValid+ TransBlk- ...` for a register, as `lspci -vvv` writes it.
    fn flags(register: u16) -> String {
        let words: Vec<String> = Self::LSPCI
            .iter()
            .map(|(bit, name)| format!("{name}{}", if register & bit != 0 { '+' } else { '-' }))
            .collect();
        words.join(" ")
    }

    /// The `ACSCap:` line of `lspci -vvv`, without its indent.
    pub fn cap_line(&self) -> String {
        format!("ACSCap:\t{}", Self::flags(self.capability))
    }
}

impl fmt::Display for AcsControl {
    /// The `ACSCtl:` line of `lspci -vvv`, without its indent:
    /// `ACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ACSCtl:\t{}", Self::flags(self.control))
    }
}

/// ATS capability and control (extended capability 0x0F; linux-counters.md 4.3). With ATS
/// off, an RNIC sends every DMA address to the root complex for translation (Hostping 6 #8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AtsControl {
    /// ATS Control bit 15, Enable.
    pub enabled: bool,
    /// ATS Control bits 4:0, Smallest Translation Unit: 2^(12 + stu) bytes.
    pub stu: u8,
    /// ATS Capability bits 4:0, Invalidate Queue Depth, with the encoding 0 read as 32.
    pub invalidate_queue_depth: u8,
}

impl fmt::Display for AtsControl {
    /// The `ATSCtl:` line of `lspci -vvv`: `ATSCtl:\tEnable+, Smallest Translation Unit: 00`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let enable = if self.enabled { '+' } else { '-' };
        write!(
            f,
            "ATSCtl:\tEnable{enable}, Smallest Translation Unit: {:02x}",
            self.stu
        )
    }
}

/// Everyone may read the first 64 bytes of config space; the rest needs `CAP_SYS_ADMIN`.
const HEADER_LEN: usize = 64;
/// Conventional config space; extended capabilities start here (linux-counters.md 4.3).
const EXT_START: usize = 0x100;
/// Status register bit 4: the function has a standard capability list.
const STATUS_CAP_LIST: u16 = 0x0010;
const CAP_ID_EXP: u16 = 0x10;
const EXT_CAP_ID_ACS: u16 = 0x0D;
const EXT_CAP_ID_ATS: u16 = 0x0F;

/// Parses raw config space (little-endian; linux-counters.md 4.3). Never panics: short
/// input, a truncated copy and looping or out-of-range capability pointers give
/// [`Capability::Unknown`] with the reason.
pub fn parse_config(bytes: &[u8]) -> ConfigSpace {
    let len = bytes.len();
    if len < HEADER_LEN {
        return ConfigSpace::unknown(
            len,
            format!("config space is {len} bytes, shorter than the 64-byte header"),
        );
    }
    if u16_at(bytes, 0) == Some(0xffff) {
        // A function that no longer answers (surprise down, D3cold) reads all ones.
        return ConfigSpace::unknown(
            len,
            "vendor ID reads 0xffff: the function does not answer".into(),
        );
    }
    let express = walk_standard(bytes)
        .find(CAP_ID_EXP)
        .and_then(|off| parse_express(bytes, off));
    let extended = if len == EXT_START && express.present().is_some() {
        // A PCIe function has 4096 bytes; only 256 were given (no ECAM access, or a copy).
        Walk::stopped(format!(
            "config space is {len} bytes: extended capabilities from 0x100 not readable"
        ))
    } else {
        walk_extended(bytes)
    };
    ConfigSpace {
        len,
        express,
        acs: extended
            .find(EXT_CAP_ID_ACS)
            .and_then(|off| parse_acs(bytes, off)),
        ats: extended
            .find(EXT_CAP_ID_ATS)
            .and_then(|off| parse_ats(bytes, off)),
    }
}

fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    let s = b.get(off..off.checked_add(2)?)?;
    Some(u16::from_le_bytes([s[0], s[1]]))
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    let s = b.get(off..off.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// Why bytes past `len` are missing: below 256 bytes, the reader lacked `CAP_SYS_ADMIN`.
fn cut_short(len: usize, what: &str, off: usize) -> String {
    if len < EXT_START {
        format!("config space truncated to {len} bytes: needs CAP_SYS_ADMIN")
    } else {
        format!("{what} at {off:#x} runs past the end of config space ({len} bytes)")
    }
}

/// The capabilities a list walk found, and why it stopped early if it did.
#[derive(Default)]
struct Walk {
    found: Vec<(u16, usize)>,
    stopped: Option<String>,
}

impl Walk {
    fn stopped(reason: String) -> Walk {
        Walk {
            found: Vec::new(),
            stopped: Some(reason),
        }
    }

    /// The offset of the first capability `id`; unknown when not found before a break.
    fn find(&self, id: u16) -> Capability<usize> {
        match (self.found.iter().find(|(i, _)| *i == id), &self.stopped) {
            (Some((_, off)), _) => Capability::Present(*off),
            (None, Some(reason)) => Capability::Unknown {
                reason: reason.clone(),
            },
            (None, None) => Capability::Absent,
        }
    }
}

/// The standard list: status bit 4 says it exists, the pointer is at 0x34 (0x14 in a
/// CardBus header), each entry `id` then `next`, pointers dword-aligned (`& 0xfc`).
fn walk_standard(b: &[u8]) -> Walk {
    let mut walk = Walk::default();
    if u16_at(b, 0x06).unwrap_or(0) & STATUS_CAP_LIST == 0 {
        return walk;
    }
    let pointer_at = if b[0x0e] & 0x7f == 2 { 0x14 } else { 0x34 };
    let mut ptr = usize::from(b[pointer_at] & 0xfc);
    let mut seen = [false; 64];
    while ptr != 0 {
        if ptr < HEADER_LEN {
            walk.stopped = Some(format!(
                "capability pointer {ptr:#x} points into the header"
            ));
            break;
        }
        if ptr + 2 > b.len() {
            walk.stopped = Some(cut_short(b.len(), "capability", ptr));
            break;
        }
        if std::mem::replace(&mut seen[ptr / 4], true) {
            walk.stopped = Some(format!("capability list loops back to {ptr:#x}"));
            break;
        }
        walk.found.push((u16::from(b[ptr]), ptr));
        ptr = usize::from(b[ptr + 1] & 0xfc);
    }
    walk
}

/// The extended list from 0x100: header `id` bits 15:0, `next` bits 31:20; it ends at a
/// zero or all-ones header or a zero `next`. Each offset is visited once, which bounds
/// the walk to (4096 - 256) / 4 entries.
fn walk_extended(b: &[u8]) -> Walk {
    let mut walk = Walk::default();
    if b.len() < EXT_START {
        walk.stopped = Some(cut_short(b.len(), "extended capability", EXT_START));
        return walk;
    }
    let mut off = EXT_START;
    let mut seen = [false; 1024];
    loop {
        if std::mem::replace(&mut seen[off / 4], true) {
            walk.stopped = Some(format!("extended capability list loops back to {off:#x}"));
            break;
        }
        let Some(header) = u32_at(b, off) else {
            if off != EXT_START || b.len() != EXT_START {
                walk.stopped = Some(cut_short(b.len(), "extended capability", off));
            }
            break;
        };
        if header == 0 || header == 0xffff_ffff {
            break;
        }
        walk.found.push(((header & 0xffff) as u16, off));
        let next = ((header >> 20) & 0xffc) as usize;
        if next == 0 {
            break;
        }
        if next < EXT_START {
            walk.stopped = Some(format!(
                "extended capability pointer {next:#x} points below 0x100"
            ));
            break;
        }
        off = next;
    }
    walk
}

/// LNKCAP and LNKSTA speed codes 1 to 6: 2.5 to 64 GT/s (`PCI_EXP_LNKSTA_CLS_*`).
fn link_from_register(register: u32) -> Option<PcieLink> {
    let gts = match register & 0x000f {
        1 => 2.5,
        2 => 5.0,
        3 => 8.0,
        4 => 16.0,
        5 => 32.0,
        6 => 64.0,
        _ => return None,
    };
    let width = (register & 0x03f0) >> 4;
    (width > 0).then_some(PcieLink { gts, width })
}

fn parse_express(b: &[u8], off: usize) -> Capability<ExpressCap> {
    let fields = (
        u16_at(b, off + 2),
        u16_at(b, off + 0x08),
        u32_at(b, off + 0x0c),
        u16_at(b, off + 0x12),
    );
    let (Some(flags), Some(devctl), Some(lnkcap), Some(lnksta)) = fields else {
        return Capability::Unknown {
            reason: cut_short(b.len(), "the PCI Express capability", off),
        };
    };
    let mps_code = (devctl >> 5) & 0x7;
    Capability::Present(ExpressCap {
        offset: off,
        port_type: PortType::from_code(((flags >> 4) & 0xf) as u8),
        link_cap: link_from_register(lnkcap),
        link_status: link_from_register(u32::from(lnksta)),
        max_payload_bytes: (mps_code <= 5).then(|| 128 << mps_code),
    })
}

/// The two registers after an extended capability's header, at +0x04 and +0x06.
fn ext_registers(b: &[u8], off: usize, what: &str) -> Result<(u16, u16), String> {
    match (u16_at(b, off + 4), u16_at(b, off + 6)) {
        (Some(cap), Some(ctl)) => Ok((cap, ctl)),
        _ => Err(cut_short(b.len(), what, off)),
    }
}

fn parse_acs(b: &[u8], off: usize) -> Capability<AcsControl> {
    match ext_registers(b, off, "the ACS capability") {
        Ok((capability, control)) => Capability::Present(AcsControl {
            capability,
            control,
        }),
        Err(reason) => Capability::Unknown { reason },
    }
}

fn parse_ats(b: &[u8], off: usize) -> Capability<AtsControl> {
    match ext_registers(b, off, "the ATS capability") {
        Ok((cap, ctl)) => Capability::Present(AtsControl {
            enabled: ctl & 0x8000 != 0,
            stu: (ctl & 0x1f) as u8,
            invalidate_queue_depth: match cap & 0x1f {
                0 => 32,
                depth => depth as u8,
            },
        }),
        Err(reason) => Capability::Unknown { reason },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn put16(b: &mut [u8], off: usize, v: u16) {
        b[off..off + 2].copy_from_slice(&v.to_le_bytes());
    }

    fn put32(b: &mut [u8], off: usize, v: u32) {
        b[off..off + 4].copy_from_slice(&v.to_le_bytes());
    }

    /// A header with a capability list at 0x40: `len` bytes of a Mellanox function.
    fn header(len: usize) -> Vec<u8> {
        let mut b = vec![0; len.max(HEADER_LEN)];
        put16(&mut b, 0x00, 0x15b3);
        put16(&mut b, 0x06, STATUS_CAP_LIST);
        b[0x34] = 0x40;
        b.truncate(len);
        b
    }

    /// A power management capability at 0x40 pointing to a PCI Express capability at 0x60.
    fn express(b: &mut [u8], port_type: u8, devctl: u16, lnkcap: u32, lnksta: u16) {
        b[0x40] = 0x01;
        b[0x41] = 0x60;
        b[0x60] = 0x10;
        put16(b, 0x62, 0x0002 | u16::from(port_type) << 4);
        put16(b, 0x68, devctl);
        put32(b, 0x6c, lnkcap);
        put16(b, 0x72, lnksta);
    }

    fn ext(b: &mut [u8], off: usize, id: u16, next: usize, cap: u16, ctl: u16) {
        put32(b, off, u32::from(id) | 1 << 16 | (next as u32) << 20);
        put16(b, off + 4, cap);
        put16(b, off + 6, ctl);
    }

    fn link(gts: f64, width: u32) -> Option<PcieLink> {
        Some(PcieLink { gts, width })
    }

    fn unknown<T>(reason: &str) -> Capability<T> {
        Capability::Unknown {
            reason: reason.into(),
        }
    }

    #[test]
    fn a_switch_downstream_port_with_acs_redirects() {
        let mut b = header(4096);
        // MPS 256 (code 1); Gen4 x16 capable, running Gen3 x8.
        express(&mut b, 6, 1 << 5, 0x0104, 0x0083);
        ext(&mut b, 0x100, 0x0001, 0x148, 0, 0);
        ext(&mut b, 0x148, EXT_CAP_ID_ACS, 0x160, 0x005f, 0x001d);
        ext(&mut b, 0x160, EXT_CAP_ID_ATS, 0, 0x0000, 0x8002);
        let got = parse_config(&b);
        let want = ConfigSpace {
            len: 4096,
            express: Capability::Present(ExpressCap {
                offset: 0x60,
                port_type: PortType::SwitchDownstream,
                link_cap: link(16.0, 16),
                link_status: link(8.0, 8),
                max_payload_bytes: Some(256),
            }),
            acs: Capability::Present(AcsControl {
                capability: 0x005f,
                control: 0x001d,
            }),
            ats: Capability::Present(AtsControl {
                enabled: true,
                stu: 2,
                invalidate_queue_depth: 32,
            }),
        };
        assert_eq!(got, want);
        let acs = got.acs.present().unwrap();
        assert!(acs.redirects());
        assert_eq!(
            got.acs.to_string(),
            "ACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-"
        );
        assert_eq!(
            acs.cap_line(),
            "ACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans+"
        );
        assert_eq!(
            got.ats.to_string(),
            "ATSCtl:\tEnable+, Smallest Translation Unit: 02"
        );
    }

    #[test]
    fn acs_redirects_only_with_req_or_cmplt_redirect() {
        for (control, want) in [
            (0x0000, false),
            (0x0001 | 0x0010 | 0x0002 | 0x0020 | 0x0040, false),
            (AcsControl::REQ_REDIR, true),
            (AcsControl::CMPLT_REDIR, true),
            (0xffff, true),
        ] {
            let acs = AcsControl {
                capability: 0x7f,
                control,
            };
            assert_eq!(acs.redirects(), want, "{control:#x}");
        }
    }

    #[test]
    fn sixty_four_bytes_leave_every_capability_unknown() {
        let mut b = header(4096);
        express(&mut b, 0, 0, 0x0104, 0x0104);
        ext(&mut b, 0x100, EXT_CAP_ID_ATS, 0, 0, 0x8000);
        b.truncate(64);
        let got = parse_config(&b);
        let reason = "config space truncated to 64 bytes: needs CAP_SYS_ADMIN";
        assert_eq!(got, ConfigSpace::unknown(64, reason.into()));
        assert_eq!(
            got.ats.to_string(),
            "unknown (config space truncated to 64 bytes: needs CAP_SYS_ADMIN)"
        );
    }

    #[test]
    fn short_all_ones_and_capless_config_spaces() {
        assert_eq!(
            parse_config(&[0; 10]),
            ConfigSpace::unknown(
                10,
                "config space is 10 bytes, shorter than the 64-byte header".into()
            )
        );
        assert_eq!(
            parse_config(&[0xff; 4096]),
            ConfigSpace::unknown(
                4096,
                "vendor ID reads 0xffff: the function does not answer".into()
            )
        );
        // Status bit 4 clear: no list at all, whatever 0x34 says.
        let mut b = header(4096);
        express(&mut b, 0, 0, 0x0104, 0x0104);
        put16(&mut b, 0x06, 0);
        let got = parse_config(&b);
        assert_eq!(got.express, Capability::Absent);
        assert_eq!((got.acs, got.ats), (Capability::Absent, Capability::Absent));
    }

    #[test]
    fn two_hundred_fifty_six_bytes_hide_extended_capabilities_of_pcie_functions_only() {
        // Conventional PCI: 256 bytes is the whole config space.
        let mut b = header(256);
        b[0x40] = 0x01;
        let got = parse_config(&b);
        assert_eq!(got.express, Capability::Absent);
        assert_eq!((got.acs, got.ats), (Capability::Absent, Capability::Absent));
        // PCI Express: 4096 bytes exist, 256 were given.
        express(&mut b, 4, 0, 0x0104, 0x0104);
        let got = parse_config(&b);
        assert_eq!(got.express.present().unwrap().port_type, PortType::RootPort);
        let reason = "config space is 256 bytes: extended capabilities from 0x100 not readable";
        assert_eq!((got.acs, got.ats), (unknown(reason), unknown(reason)));
    }

    #[test]
    fn broken_lists_make_later_capabilities_unknown() {
        // The standard list loops before the PCI Express capability.
        let mut b = header(4096);
        b[0x40] = 0x01;
        b[0x41] = 0x50;
        b[0x50] = 0x05;
        b[0x51] = 0x40;
        assert_eq!(
            parse_config(&b).express,
            unknown("capability list loops back to 0x40")
        );
        b[0x51] = 0x3c;
        assert_eq!(
            parse_config(&b).express,
            unknown("capability pointer 0x3c points into the header")
        );
        // The extended list: ACS found before it loops, ATS unknown.
        ext(&mut b, 0x100, EXT_CAP_ID_ACS, 0x200, 0x1f, 0);
        ext(&mut b, 0x200, 0x0001, 0x100, 0, 0);
        let got = parse_config(&b);
        assert!(got.acs.present().is_some());
        assert_eq!(
            got.ats,
            unknown("extended capability list loops back to 0x100")
        );
        ext(&mut b, 0x200, 0x0001, 0x0fc, 0, 0);
        assert_eq!(
            parse_config(&b).ats,
            unknown("extended capability pointer 0xfc points below 0x100")
        );
        // A capability whose registers lie past the end.
        ext(&mut b, 0x200, 0x0001, 0xffc, 0, 0);
        put32(&mut b, 0xffc, u32::from(EXT_CAP_ID_ATS) | 1 << 16);
        assert_eq!(
            parse_config(&b).ats,
            unknown("the ATS capability at 0xffc runs past the end of config space (4096 bytes)")
        );
        b.truncate(0x300);
        assert_eq!(
            parse_config(&b).ats,
            unknown("extended capability at 0xffc runs past the end of config space (768 bytes)")
        );
    }

    #[test]
    fn express_fields_decode_per_pci_regs() {
        let mut b = header(4096);
        // Link down (width 0), speed code 7 (reserved), MPS code 6 (reserved).
        express(&mut b, 10, 6 << 5, 0x0107, 0x0004);
        let cap = parse_config(&b).express;
        let cap = cap.present().unwrap();
        assert_eq!(cap.port_type, PortType::RcEventCollector);
        assert_eq!((cap.link_cap, cap.link_status), (None, None));
        assert_eq!(cap.max_payload_bytes, None);
        for (code, port_type) in [
            (0, PortType::Endpoint),
            (1, PortType::LegacyEndpoint),
            (4, PortType::RootPort),
            (5, PortType::SwitchUpstream),
            (7, PortType::PcieToPciBridge),
            (8, PortType::PciToPcieBridge),
            (9, PortType::RcIntegratedEndpoint),
            (3, PortType::Reserved(3)),
            (15, PortType::Reserved(15)),
        ] {
            assert_eq!(PortType::from_code(code), port_type);
        }
        for (code, gts) in [
            (1, 2.5),
            (2, 5.0),
            (3, 8.0),
            (4, 16.0),
            (5, 32.0),
            (6, 64.0),
        ] {
            assert_eq!(link_from_register(code | 4 << 4), link(gts, 4));
        }
        assert_eq!(link_from_register(0), None);
        // A CardBus header keeps its list pointer at 0x14.
        let mut b = header(256);
        b[0x0e] = 0x02;
        b[0x34] = 0;
        b[0x14] = 0x80;
        b[0x80] = 0x10;
        put16(&mut b, 0x82, 0x0002);
        assert_eq!(
            parse_config(&b).express.present().map(|e| e.offset),
            Some(0x80)
        );
        b.truncate(128);
        assert_eq!(
            parse_config(&b).express,
            unknown("config space truncated to 128 bytes: needs CAP_SYS_ADMIN")
        );
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

    const CORRECTABLE: &str = "Receiver Error 2\nBad TLP 0\nBad DLLP 7\nRELAY_NUM Rollover 0\n\
        Replay Timer Timeout 0\nAdvisory Non-Fatal 0\nCorrected Internal Error 0\n\
        Header Log Overflow 0\ndev_cor_errs_bit[9] 1\nTOTAL_ERR_COR 10";

    #[test]
    fn aer_files_parse_as_the_kernel_writes_them() {
        let got = parse_aer_counts(CORRECTABLE, "TOTAL_ERR_COR").unwrap();
        assert_eq!(got.total, 10);
        assert_eq!(got.errors.len(), 9);
        assert_eq!(got.errors[0], ("Receiver Error".to_string(), 2));
        assert_eq!(
            got.nonzero().collect::<Vec<_>>(),
            [
                ("Receiver Error", 2),
                ("Bad DLLP", 7),
                ("dev_cor_errs_bit[9]", 1)
            ]
        );
        let only_total = parse_aer_counts("TOTAL_ERR_FATAL 0", "TOTAL_ERR_FATAL").unwrap();
        assert_eq!(
            only_total,
            AerCounts {
                errors: vec![],
                total: 0
            }
        );
        let aer = Aer {
            correctable: Some(got),
            nonfatal: None,
            fatal: Some(only_total),
            rootport: None,
        };
        assert_eq!(aer.device_total(), 10);
    }

    #[test]
    fn malformed_aer_files_are_errors() {
        let table = [
            ("", "TOTAL_ERR_COR"),
            ("Receiver Error 2", "TOTAL_ERR_COR"),
            (CORRECTABLE, "TOTAL_ERR_FATAL"),
            ("TOTAL_ERR_COR 1\nBad TLP 0", "TOTAL_ERR_COR"),
            ("TOTAL_ERR_COR 1\nTOTAL_ERR_COR 1", "TOTAL_ERR_COR"),
            ("Bad TLP -1\nTOTAL_ERR_COR 0", "TOTAL_ERR_COR"),
            ("Bad TLP\nTOTAL_ERR_COR 0", "TOTAL_ERR_COR"),
            (" 3\nTOTAL_ERR_COR 0", "TOTAL_ERR_COR"),
            ("TOTAL_ERR_COR 18446744073709551616", "TOTAL_ERR_COR"),
        ];
        for (text, total) in table {
            assert!(parse_aer_counts(text, total).is_err(), "{text:?}");
        }
        let e = parse_aer_counts("Bad TLP x\nTOTAL_ERR_COR 0", "TOTAL_ERR_COR").unwrap_err();
        assert_eq!(
            e.to_string(),
            "`Bad TLP x` is not an AER line `<name> <count>`"
        );
    }

    #[test]
    fn counts_are_plain_decimals() {
        assert_eq!(parse_count("0"), Ok(0));
        assert_eq!(parse_count("18446744073709551615"), Ok(u64::MAX));
        for bad in ["", "-1", "+1", "1.0", "0x10", " 1", "18446744073709551616"] {
            assert!(parse_count(bad).is_err(), "{bad}");
        }
    }

    /// Config space of `len` bytes whose lists follow `standard` and `extended` pointers
    /// (each entry the next pointer of one capability), loops and strays included.
    fn chained(len: usize, standard: &[u8], extended: &[u16]) -> Vec<u8> {
        let mut b = header(len.max(4096));
        let mut at = 0x40usize;
        for next in standard {
            b[at] = CAP_ID_EXP as u8;
            b[at + 1] = *next;
            at = usize::from(next & 0xfc).max(0x40);
        }
        let mut at = EXT_START;
        for (i, next) in extended.iter().enumerate() {
            let id = if i % 2 == 0 {
                EXT_CAP_ID_ACS
            } else {
                EXT_CAP_ID_ATS
            };
            put32(&mut b, at, u32::from(id) | u32::from(*next) << 20);
            at = usize::from(next & 0xffc).max(EXT_START);
        }
        b.truncate(len);
        b
    }

    proptest! {
        #[test]
        fn parse_config_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..5000)) {
            let got = parse_config(&bytes);
            prop_assert_eq!(got.len, bytes.len());
            if bytes.len() < HEADER_LEN {
                let unknown = matches!(got.express, Capability::Unknown { .. });
                prop_assert!(unknown);
            }
        }

        #[test]
        fn looping_and_stray_lists_end(
            len in prop_oneof![Just(64usize), Just(128), Just(256), Just(4096), 0usize..4200],
            standard in prop::collection::vec(any::<u8>(), 0..80),
            extended in prop::collection::vec(0u16..0x1000, 0..1100),
        ) {
            let got = parse_config(&chained(len, &standard, &extended));
            prop_assert_eq!(got.len, len);
        }

        #[test]
        fn well_formed_registers_read_back(
            port_type in 0u8..16, speed in 1u32..7, width in 1u32..33, mps in 0u16..6,
            acs_cap: u16, acs_ctl: u16, ats_ctl: u16, ats_cap: u16,
        ) {
            let mut b = header(4096);
            let reg = speed | width << 4;
            express(&mut b, port_type, mps << 5, reg, reg as u16);
            ext(&mut b, 0x100, EXT_CAP_ID_ATS, 0x300, ats_cap, ats_ctl);
            ext(&mut b, 0x300, EXT_CAP_ID_ACS, 0, acs_cap, acs_ctl);
            let got = parse_config(&b);
            let e = got.express.present().unwrap();
            prop_assert_eq!(e.port_type, PortType::from_code(port_type));
            prop_assert_eq!(e.link_cap, e.link_status);
            prop_assert_eq!(e.link_cap.map(|l| l.width), Some(width));
            prop_assert_eq!(e.max_payload_bytes, Some(128 << mps));
            let acs = *got.acs.present().unwrap();
            prop_assert_eq!(acs, AcsControl { capability: acs_cap, control: acs_ctl });
            prop_assert_eq!(acs.redirects(), acs_ctl & 0x000c != 0);
            let ats = *got.ats.present().unwrap();
            prop_assert_eq!(ats.enabled, ats_ctl & 0x8000 != 0);
            prop_assert_eq!(u16::from(ats.stu), ats_ctl & 0x1f);
            prop_assert!((1..=32).contains(&ats.invalidate_queue_depth));
        }

        #[test]
        fn text_parsers_never_panic(s in "\\PC*") {
            let _ = parse_aer_counts(&s, "TOTAL_ERR_COR");
            let _ = parse_count(&s);
        }

        #[test]
        fn generated_aer_files_read_back(
            counts in prop::collection::vec(("[A-Za-z][A-Za-z _\\[\\]0-9-]{0,20}[A-Za-z]", any::<u64>()), 0..20),
            total: u64,
        ) {
            let mut text: Vec<String> = counts.iter().map(|(n, c)| format!("{n} {c}")).collect();
            text.push(format!("TOTAL_ERR_NONFATAL {total}"));
            prop_assume!(counts.iter().all(|(n, _)| n != "TOTAL_ERR_NONFATAL"));
            let got = parse_aer_counts(&text.join("\n"), "TOTAL_ERR_NONFATAL").unwrap();
            prop_assert_eq!(got.total, total);
            let want: Vec<(String, u64)> = counts.iter().map(|(n, c)| (n.trim_end().to_string(), *c)).collect();
            prop_assert_eq!(got.errors, want);
        }

        #[test]
        fn counts_round_trip(n: u64) {
            prop_assert_eq!(parse_count(&n.to_string()), Ok(n));
        }
    }
}
