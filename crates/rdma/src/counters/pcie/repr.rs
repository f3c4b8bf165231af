//! The capabilities hostping reads, parsed from a [`ConfigSpace`] view into small typed
//! values (smoltcp's `Repr` layer): the PCI Express capability, ACS, ATS and AER, each
//! [`Capability::Absent`], [`Capability::Unknown`] with the reason, or present with its
//! registers. [`parse_config`] never panics, whatever the bytes.

use super::view::{
    field, AcsCap, AcsFlags, AerCap, AtsCap, CapabilityId, ConfigSpace, ExtCapabilityId, PcieCap,
    PortType, WalkError,
};
use crate::sysfs::pci::PcieLink;
use serde::Serialize;
use std::fmt;

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

    fn unknown(e: WalkError) -> Capability<T> {
        Capability::Unknown {
            reason: e.to_string(),
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
pub struct ConfigSummary {
    /// Bytes given.
    pub len: usize,
    /// The PCI Express capability.
    pub express: Capability<ExpressCap>,
    /// The ACS extended capability.
    pub acs: Capability<AcsControl>,
    /// The ATS extended capability.
    pub ats: Capability<AtsControl>,
    /// The AER extended capability.
    pub aer: Capability<AerRegisters>,
}

impl ConfigSummary {
    /// Every capability unknown, for one reason.
    pub fn unknown(len: usize, reason: &str) -> ConfigSummary {
        fn unknown<T>(reason: &str) -> Capability<T> {
            Capability::Unknown {
                reason: reason.to_string(),
            }
        }
        ConfigSummary {
            len,
            express: unknown(reason),
            acs: unknown(reason),
            ats: unknown(reason),
            aer: unknown(reason),
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
    /// LNKCAP: Max Link Speed and Max Link Width; `None` when either is zero or the speed
    /// code is unknown (a function without a link).
    pub link_cap: Option<PcieLink>,
    /// LNKSTA: Current Link Speed and Negotiated Link Width; `None` when the link is down.
    pub link_status: Option<PcieLink>,
    /// DevCtl Max_Payload_Size: 128 << n bytes; `None` for the reserved codes 6 and 7.
    /// Payload efficiency is about MPS / (MPS + 24) (4.4).
    pub max_payload_bytes: Option<u32>,
}

impl ExpressCap {
    fn parse<T: AsRef<[u8]>>(view: &PcieCap<T>, offset: usize) -> ExpressCap {
        let mps = view.max_payload_code();
        ExpressCap {
            offset,
            port_type: view.port_type(),
            link_cap: link_from_register(view.link_capabilities()),
            link_status: link_from_register(u32::from(view.link_status())),
            max_payload_bytes: (mps <= 5).then(|| 128 << mps),
        }
    }
}

/// ACS Capability and Control registers (extended capability 0x0D; linux-counters.md
/// 4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AcsControl {
    /// ACS Capability: the controls the port implements.
    pub capability: AcsFlags,
    /// ACS Control: the controls enabled. ReqRedir or CmpltRedir send peer-to-peer traffic
    /// up to the root complex (Hostping 2.1 and 6 #7).
    pub control: AcsFlags,
}

impl AcsControl {
    /// The `ACSCap:` line of `lspci -vvv`, without its indent.
    pub fn cap_line(&self) -> String {
        format!("ACSCap:\t{}", self.capability)
    }
}

impl fmt::Display for AcsControl {
    /// The `ACSCtl:` line of `lspci -vvv`, without its indent:
    /// `ACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ACSCtl:\t{}", self.control)
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

/// The AER capability's status, mask and severity registers (extended capability 0x01;
/// `PCI_ERR_*`). Status bits stay set until software clears them, so a set bit is an error
/// seen since the last clear; the sysfs `aer_dev_*` files count them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AerRegisters {
    /// Uncorrectable Error Status.
    pub uncorrectable_status: u32,
    /// Uncorrectable Error Mask.
    pub uncorrectable_mask: u32,
    /// Uncorrectable Error Severity (set: fatal).
    pub uncorrectable_severity: u32,
    /// Correctable Error Status.
    pub correctable_status: u32,
    /// Correctable Error Mask.
    pub correctable_mask: u32,
}

impl fmt::Display for AerRegisters {
    /// `UESta: 00000000 UEMsk: 00400000 UESvrt: 00462030 CESta: 00000000 CEMsk: 00002000`,
    /// the registers of `lspci -vvv`'s AER block in hex.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "UESta: {:08x} UEMsk: {:08x} UESvrt: {:08x} CESta: {:08x} CEMsk: {:08x}",
            self.uncorrectable_status,
            self.uncorrectable_mask,
            self.uncorrectable_severity,
            self.correctable_status,
            self.correctable_mask
        )
    }
}

/// LNKCAP and LNKSTA: speed codes 1 to 6 are 2.5 to 64 GT/s (`PCI_EXP_LNKSTA_CLS_*`), the
/// width is bits 9:4.
pub fn link_from_register(register: u32) -> Option<PcieLink> {
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

/// The offset of the first capability a walk yields for which `is` holds: absent when the
/// list ends without it, unknown when the walk breaks first.
fn find<H>(
    walk: impl Iterator<Item = Result<H, WalkError>>,
    is: impl Fn(&H) -> Option<usize>,
) -> Result<Option<usize>, WalkError> {
    for step in walk {
        if let Some(offset) = is(&step?) {
            return Ok(Some(offset));
        }
    }
    Ok(None)
}

/// The registers of the capability at `offset`, read by `read` from the bytes at that
/// offset on (through the capability's view), or why they cannot be read: `read` gives
/// `None` when they run past the end of `bytes`.
fn registers<R>(
    bytes: &[u8],
    found: Result<Option<usize>, WalkError>,
    what: &'static str,
    read: impl Fn(&[u8], usize) -> Option<R>,
) -> Capability<R> {
    match found {
        Err(e) => Capability::unknown(e),
        Ok(None) => Capability::Absent,
        Ok(Some(offset)) => match read(&bytes[offset..], offset) {
            Some(r) => Capability::Present(r),
            None => Capability::unknown(WalkError::Truncated {
                len: bytes.len(),
                what,
                offset,
            }),
        },
    }
}

/// Parses raw config space (linux-counters.md 4.3). Never panics: short input, a
/// truncated copy and looping or out-of-range capability pointers give
/// [`Capability::Unknown`] with the reason.
pub fn parse_config(bytes: &[u8]) -> ConfigSummary {
    let len = bytes.len();
    let view = match ConfigSpace::new_checked(bytes) {
        Ok(v) => v,
        Err(e) => return ConfigSummary::unknown(len, &e.to_string()),
    };
    if view.vendor_id() == 0xffff {
        // A function that no longer answers (surprise down, D3cold) reads all ones.
        return ConfigSummary::unknown(len, &WalkError::NotAnswering.to_string());
    }
    let express_at = find(view.capabilities(), |c| {
        (c.id == CapabilityId::Express).then_some(c.offset)
    });
    let express = registers(bytes, express_at, PcieCap::<&[u8]>::WHAT, |b, offset| {
        let view = PcieCap::new_checked(b).ok()?;
        Some(ExpressCap::parse(&view, offset))
    });
    let ext = |id: ExtCapabilityId| {
        if len == field::EXT_START && express.present().is_some() {
            // A PCIe function has 4096 bytes; only 256 were given (no ECAM access, or a
            // copy).
            return Err(WalkError::ExtendedNotGiven { len });
        }
        find(view.ext_capabilities(), |c| {
            (c.id == id).then_some(c.offset)
        })
    };
    let acs = registers(
        bytes,
        ext(ExtCapabilityId::Acs),
        AcsCap::<&[u8]>::WHAT,
        |b, _| {
            let v = AcsCap::new_checked(b).ok()?;
            Some(AcsControl {
                capability: v.capability(),
                control: v.control(),
            })
        },
    );
    let ats = registers(
        bytes,
        ext(ExtCapabilityId::Ats),
        AtsCap::<&[u8]>::WHAT,
        |b, _| {
            let v = AtsCap::new_checked(b).ok()?;
            Some(AtsControl {
                enabled: v.enabled(),
                stu: v.smallest_translation_unit(),
                invalidate_queue_depth: v.invalidate_queue_depth(),
            })
        },
    );
    let aer = registers(
        bytes,
        ext(ExtCapabilityId::Aer),
        AerCap::<&[u8]>::WHAT,
        |b, _| {
            let v = AerCap::new_checked(b).ok()?;
            Some(AerRegisters {
                uncorrectable_status: v.uncorrectable_status(),
                uncorrectable_mask: v.uncorrectable_mask(),
                uncorrectable_severity: v.uncorrectable_severity(),
                correctable_status: v.correctable_status(),
                correctable_mask: v.correctable_mask(),
            })
        },
    );
    ConfigSummary {
        len,
        express,
        acs,
        ats,
        aer,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::pcie::view::STATUS_CAP_LIST;
    use proptest::prelude::*;

    const HEADER_LEN: usize = field::HEADER_LEN;
    const EXT_START: usize = field::EXT_START;
    const CAP_ID_EXP: u16 = 0x10;
    const EXT_CAP_ID_ACS: u16 = 0x0d;
    const EXT_CAP_ID_ATS: u16 = 0x0f;

    fn acs(capability: u16, control: u16) -> AcsControl {
        AcsControl {
            capability: AcsFlags::from_bits_retain(capability),
            control: AcsFlags::from_bits_retain(control),
        }
    }

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
        let want = ConfigSummary {
            len: 4096,
            express: Capability::Present(ExpressCap {
                offset: 0x60,
                port_type: PortType::SwitchDownstream,
                link_cap: link(16.0, 16),
                link_status: link(8.0, 8),
                max_payload_bytes: Some(256),
            }),
            acs: Capability::Present(acs(0x005f, 0x001d)),
            ats: Capability::Present(AtsControl {
                enabled: true,
                stu: 2,
                invalidate_queue_depth: 32,
            }),
            // The capability at 0x100 is AER, its registers all zero.
            aer: Capability::Present(AerRegisters {
                uncorrectable_status: 0,
                uncorrectable_mask: 0,
                uncorrectable_severity: 0,
                correctable_status: 0,
                correctable_mask: 0,
            }),
        };
        assert_eq!(got, want);
        let acs = got.acs.present().unwrap();
        assert!(acs.control.redirects());
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
            (AcsFlags::REQ_REDIR.bits(), true),
            (AcsFlags::CMPLT_REDIR.bits(), true),
            (0xffff, true),
        ] {
            let acs = acs(0x7f, control);
            assert_eq!(acs.control.redirects(), want, "{control:#x}");
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
        assert_eq!(got, ConfigSummary::unknown(64, reason));
        assert_eq!(
            got.ats.to_string(),
            "unknown (config space truncated to 64 bytes: needs CAP_SYS_ADMIN)"
        );
    }

    #[test]
    fn short_all_ones_and_capless_config_spaces() {
        assert_eq!(
            parse_config(&[0; 10]),
            ConfigSummary::unknown(
                10,
                "config space is 10 bytes, shorter than the 64-byte header"
            )
        );
        assert_eq!(
            parse_config(&[0xff; 4096]),
            ConfigSummary::unknown(4096, "vendor ID reads 0xffff: the function does not answer")
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
            assert_eq!(PortType::from(code), port_type);
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
            prop_assert_eq!(e.port_type, PortType::from(port_type));
            prop_assert_eq!(e.link_cap, e.link_status);
            prop_assert_eq!(e.link_cap.map(|l| l.width), Some(width));
            prop_assert_eq!(e.max_payload_bytes, Some(128 << mps));
            let acs = *got.acs.present().unwrap();
            prop_assert_eq!(acs, super::tests::acs(acs_cap, acs_ctl));
            prop_assert_eq!(acs.control.redirects(), acs_ctl & 0x000c != 0);
            let ats = *got.ats.present().unwrap();
            prop_assert_eq!(ats.enabled, ats_ctl & 0x8000 != 0);
            prop_assert_eq!(u16::from(ats.stu), ats_ctl & 0x1f);
            prop_assert!((1..=32).contains(&ats.invalidate_queue_depth));
        }

    }
}
