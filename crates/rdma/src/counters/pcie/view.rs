/*!
A typed view over the bytes of PCI config space, in the style of smoltcp's wire layer: the
view reads (and, over a mutable buffer, writes) fields in place, through the offsets of a
`field` module, and checks only what it needs so that no accessor panics.

Byte order: PCI config space is little-endian (PCI Local Bus 3.0, 6.1); every accessor uses
`from_le_bytes`. Offsets and bits follow `include/uapi/linux/pci_regs.h`.

| view | over | length checked |
|---|---|---|
| [`ConfigSpace`] | the whole config space | 64 bytes (the header, what every reader gets) |
| [`PcieCap`] | the PCI Express capability (id 0x10), from its offset | [`PcieCap::LEN`] |
| [`AcsCap`] | the ACS extended capability (0x000D) | [`AcsCap::LEN`] |
| [`AtsCap`] | the ATS extended capability (0x000F) | [`AtsCap::LEN`] |
| [`AerCap`] | the AER extended capability (0x0001) | [`AerCap::LEN`] |

The contract (smoltcp's): `new_unchecked` wraps any buffer; `check_len` promises that no
accessor of the view panics afterwards; `new_checked` is both, and untrusted input (a
`config` file) must go through it. [`ConfigSpace::check_len`] accepts any length from the
64-byte header up: a reader without `CAP_SYS_ADMIN` gets 64 bytes, with it 256
(conventional) or 4096 (extended), and a copy may hold anything in between. Capabilities
past the end are not an accessor's concern: the list walks ([`ConfigSpace::capabilities`],
[`ConfigSpace::ext_capabilities`]) yield a [`WalkError`] for them and stop.

Capability ids are enums with an `Unknown(raw)` variant: a vendor's capability is data, not
a parse error.
*/

use serde::Serialize;
use std::fmt;

/// A field of a register block: a byte range.
pub type Field = std::ops::Range<usize>;

/// Offsets in config space and in the capabilities read here.
pub mod field {
    use super::Field;

    /// Vendor ID (`PCI_VENDOR_ID`).
    pub const VENDOR_ID: Field = 0x00..0x02;
    /// Device ID (`PCI_DEVICE_ID`).
    pub const DEVICE_ID: Field = 0x02..0x04;
    /// Command register (`PCI_COMMAND`).
    pub const COMMAND: Field = 0x04..0x06;
    /// Status register (`PCI_STATUS`).
    pub const STATUS: Field = 0x06..0x08;
    /// Class code: programming interface, subclass, base class (`PCI_CLASS_PROG` to 0x0b).
    pub const CLASS: Field = 0x09..0x0c;
    /// Header type, bits 6:0; bit 7 marks a multi-function device (`PCI_HEADER_TYPE`).
    pub const HEADER_TYPE: usize = 0x0e;
    /// The standard capability list pointer of type 0 and 1 headers (`PCI_CAPABILITY_LIST`).
    pub const CAP_PTR: usize = 0x34;
    /// The capability list pointer of a CardBus (type 2) header (`PCI_CB_CAPABILITY_LIST`).
    pub const CARDBUS_CAP_PTR: usize = 0x14;
    /// The header every reader may see; the rest needs `CAP_SYS_ADMIN`.
    pub const HEADER_LEN: usize = 0x40;
    /// Conventional config space ends, and the extended capability list starts, here.
    pub const EXT_START: usize = 0x100;
    /// The size of extended config space.
    pub const EXT_LEN: usize = 0x1000;

    /// A standard capability entry: id, then the next pointer.
    pub mod cap {
        /// Capability ID (`PCI_CAP_LIST_ID`).
        pub const ID: usize = 0;
        /// Next pointer (`PCI_CAP_LIST_NEXT`), dword aligned.
        pub const NEXT: usize = 1;
    }

    /// An extended capability header: id bits 15:0, version 19:16, next 31:20.
    pub mod ext_cap {
        use super::Field;
        /// The header dword.
        pub const HEADER: Field = 0..4;
    }

    /// The PCI Express capability (`PCI_EXP_*`), from its offset.
    pub mod express {
        use super::Field;
        /// Capabilities register: version 3:0, Device/Port Type 7:4 (`PCI_EXP_FLAGS`).
        pub const FLAGS: Field = 0x02..0x04;
        /// Device Control: Max_Payload_Size 7:5 (`PCI_EXP_DEVCTL`).
        pub const DEVCTL: Field = 0x08..0x0a;
        /// Link Capabilities: Max Link Speed 3:0, Max Link Width 9:4 (`PCI_EXP_LNKCAP`).
        pub const LNKCAP: Field = 0x0c..0x10;
        /// Link Status: Current Link Speed 3:0, Negotiated Link Width 9:4 (`PCI_EXP_LNKSTA`).
        pub const LNKSTA: Field = 0x12..0x14;
    }

    /// Access Control Services (`PCI_ACS_*`), from the extended capability's offset.
    pub mod acs {
        use super::Field;
        /// ACS Capability register (`PCI_ACS_CAP`).
        pub const CAP: Field = 0x04..0x06;
        /// ACS Control register (`PCI_ACS_CTRL`).
        pub const CTRL: Field = 0x06..0x08;
    }

    /// Address Translation Services (`PCI_ATS_*`).
    pub mod ats {
        use super::Field;
        /// ATS Capability: Invalidate Queue Depth 4:0 (`PCI_ATS_CAP`).
        pub const CAP: Field = 0x04..0x06;
        /// ATS Control: Enable bit 15, Smallest Translation Unit 4:0 (`PCI_ATS_CTRL`).
        pub const CTRL: Field = 0x06..0x08;
    }

    /// Advanced Error Reporting (`PCI_ERR_*`).
    pub mod aer {
        use super::Field;
        /// Uncorrectable Error Status (`PCI_ERR_UNCOR_STATUS`).
        pub const UNCOR_STATUS: Field = 0x04..0x08;
        /// Uncorrectable Error Mask (`PCI_ERR_UNCOR_MASK`).
        pub const UNCOR_MASK: Field = 0x08..0x0c;
        /// Uncorrectable Error Severity: set bits are fatal (`PCI_ERR_UNCOR_SEVER`).
        pub const UNCOR_SEVER: Field = 0x0c..0x10;
        /// Correctable Error Status (`PCI_ERR_COR_STATUS`).
        pub const COR_STATUS: Field = 0x10..0x14;
        /// Correctable Error Mask (`PCI_ERR_COR_MASK`).
        pub const COR_MASK: Field = 0x14..0x18;
    }
}

fn u16_in(b: &[u8], f: Field) -> u16 {
    u16::from_le_bytes([b[f.start], b[f.start + 1]])
}

fn u32_in(b: &[u8], f: Field) -> u32 {
    u32::from_le_bytes([b[f.start], b[f.start + 1], b[f.start + 2], b[f.start + 3]])
}

fn put_u16(b: &mut [u8], f: Field, v: u16) {
    b[f].copy_from_slice(&v.to_le_bytes());
}

fn put_u32(b: &mut [u8], f: Field, v: u32) {
    b[f].copy_from_slice(&v.to_le_bytes());
}

/// `enum_with_unknown!`, as smoltcp's `wire` has it: an enum of known values with an
/// `Unknown(raw)` catch-all and `From` both ways.
macro_rules! enum_with_unknown {
    (
        $(#[$meta:meta])* pub enum $name:ident($ty:ty) {
            $( $(#[$vmeta:meta])* $variant:ident = $value:expr ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A value this list does not name.
            Unknown($ty),
        }

        impl From<$ty> for $name {
            fn from(raw: $ty) -> Self {
                match raw {
                    $( $value => $name::$variant, )+
                    other => $name::Unknown(other),
                }
            }
        }

        impl From<$name> for $ty {
            fn from(id: $name) -> Self {
                match id {
                    $( $name::$variant => $value, )+
                    $name::Unknown(raw) => raw,
                }
            }
        }
    };
}

enum_with_unknown! {
    /// A standard capability id (`PCI_CAP_ID_*`).
    pub enum CapabilityId(u8) {
        /// Power Management.
        PowerManagement = 0x01,
        /// AGP.
        Agp = 0x02,
        /// Vital Product Data.
        Vpd = 0x03,
        /// Slot identification.
        SlotId = 0x04,
        /// Message Signalled Interrupts.
        Msi = 0x05,
        /// PCI-X.
        PciX = 0x07,
        /// Vendor specific.
        Vendor = 0x09,
        /// Subsystem vendor id of a bridge.
        BridgeSubsystem = 0x0d,
        /// PCI Express.
        Express = 0x10,
        /// MSI-X.
        MsiX = 0x11,
        /// Advanced Features.
        AdvancedFeatures = 0x13,
        /// Enhanced Allocation.
        EnhancedAllocation = 0x14,
    }
}

enum_with_unknown! {
    /// An extended capability id (`PCI_EXT_CAP_ID_*`).
    pub enum ExtCapabilityId(u16) {
        /// Advanced Error Reporting.
        Aer = 0x0001,
        /// Virtual Channel.
        VirtualChannel = 0x0002,
        /// Device Serial Number.
        SerialNumber = 0x0003,
        /// Power Budgeting.
        PowerBudgeting = 0x0004,
        /// Vendor specific.
        Vendor = 0x000b,
        /// Access Control Services.
        Acs = 0x000d,
        /// Alternative Routing-ID Interpretation.
        Ari = 0x000e,
        /// Address Translation Services.
        Ats = 0x000f,
        /// Single Root I/O Virtualization.
        SrIov = 0x0010,
        /// Page Request Interface.
        Pri = 0x0013,
        /// Resizable BAR.
        ResizableBar = 0x0015,
        /// Latency Tolerance Reporting.
        Ltr = 0x0018,
        /// Secondary PCI Express.
        SecondaryPcie = 0x0019,
        /// Process Address Space ID.
        Pasid = 0x001b,
        /// Downstream Port Containment.
        Dpc = 0x001d,
        /// L1 PM Substates.
        L1PmSubstates = 0x001e,
        /// Precision Time Measurement.
        Ptm = 0x001f,
        /// Designated Vendor-Specific.
        Dvsec = 0x0023,
        /// Data Link Feature.
        DataLinkFeature = 0x0025,
        /// Physical Layer 16.0 GT/s.
        PhysicalLayer16 = 0x0026,
        /// Lane Margining at the Receiver.
        LaneMargining = 0x0027,
        /// Physical Layer 32.0 GT/s.
        PhysicalLayer32 = 0x002a,
    }
}

/// Why a capability list walk stopped before its end, or why registers cannot be read.
/// The messages are the `Unknown` reasons a reader sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WalkError {
    /// Fewer bytes than the 64-byte header.
    #[error("config space is {len} bytes, shorter than the 64-byte header")]
    ShortHeader {
        /// Bytes given.
        len: usize,
    },
    /// Registers past the end of the bytes given. Below 256 bytes that is a reader without
    /// `CAP_SYS_ADMIN`.
    #[error("{}", truncated(*len, what, *offset))]
    Truncated {
        /// Bytes given.
        len: usize,
        /// What was being read (`the ACS capability`).
        what: &'static str,
        /// Where it starts.
        offset: usize,
    },
    /// A standard pointer below 0x40.
    #[error("capability pointer {offset:#x} points into the header")]
    IntoHeader {
        /// The pointer.
        offset: usize,
    },
    /// An extended pointer below 0x100.
    #[error("extended capability pointer {offset:#x} points below 0x100")]
    BelowExtended {
        /// The pointer.
        offset: usize,
    },
    /// A list that comes back to an entry it visited.
    #[error("{}capability list loops back to {offset:#x}", if *extended { "extended " } else { "" })]
    Loops {
        /// The extended list (else the standard one).
        extended: bool,
        /// The entry visited twice.
        offset: usize,
    },
    /// A PCI Express function of which only the 256 conventional bytes were given.
    #[error("config space is {len} bytes: extended capabilities from 0x100 not readable")]
    ExtendedNotGiven {
        /// Bytes given.
        len: usize,
    },
    /// The vendor id reads all ones: the function no longer answers.
    #[error("vendor ID reads 0xffff: the function does not answer")]
    NotAnswering,
}

fn truncated(len: usize, what: &str, offset: usize) -> String {
    if len < field::EXT_START {
        format!("config space truncated to {len} bytes: needs CAP_SYS_ADMIN")
    } else {
        format!("{what} at {offset:#x} runs past the end of config space ({len} bytes)")
    }
}

/// A view of PCI config space (see the module doc for the length contract).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigSpace<T: AsRef<[u8]>> {
    buffer: T,
}

/// Status register bit 4 (`PCI_STATUS_CAP_LIST`): the function has a capability list.
pub const STATUS_CAP_LIST: u16 = 0x0010;
/// Header type 2 (`PCI_HEADER_TYPE_CARDBUS`).
const HEADER_TYPE_CARDBUS: u8 = 2;

impl<T: AsRef<[u8]>> ConfigSpace<T> {
    /// Wraps a buffer without checking it: accessors may panic on less than 64 bytes.
    pub fn new_unchecked(buffer: T) -> ConfigSpace<T> {
        ConfigSpace { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<ConfigSpace<T>, WalkError> {
        let view = Self::new_unchecked(buffer);
        view.check_len()?;
        Ok(view)
    }

    /// At least the 64-byte header: afterwards no accessor panics. Every setter keeps
    /// this promise (none changes the length).
    pub fn check_len(&self) -> Result<(), WalkError> {
        let len = self.len();
        if len < field::HEADER_LEN {
            return Err(WalkError::ShortHeader { len });
        }
        Ok(())
    }

    /// The buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Bytes in the buffer.
    pub fn len(&self) -> usize {
        self.buffer.as_ref().len()
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Vendor ID; `0xffff` when the function does not answer.
    pub fn vendor_id(&self) -> u16 {
        u16_in(self.bytes(), field::VENDOR_ID)
    }

    /// Device ID.
    pub fn device_id(&self) -> u16 {
        u16_in(self.bytes(), field::DEVICE_ID)
    }

    /// Command register.
    pub fn command(&self) -> u16 {
        u16_in(self.bytes(), field::COMMAND)
    }

    /// Status register.
    pub fn status(&self) -> u16 {
        u16_in(self.bytes(), field::STATUS)
    }

    /// Class code (`0x020000` for an Ethernet controller), as sysfs `class` writes it.
    pub fn class(&self) -> u32 {
        let b = &self.bytes()[field::CLASS];
        u32::from_le_bytes([b[0], b[1], b[2], 0])
    }

    /// Header type, bits 6:0 (0 a function, 1 a bridge, 2 CardBus).
    pub fn header_type(&self) -> u8 {
        self.bytes()[field::HEADER_TYPE] & 0x7f
    }

    /// Where the capability list pointer lives: 0x14 in a CardBus header, else 0x34.
    fn cap_ptr_offset(&self) -> usize {
        if self.header_type() == HEADER_TYPE_CARDBUS {
            field::CARDBUS_CAP_PTR
        } else {
            field::CAP_PTR
        }
    }

    /// The first capability's offset, dword aligned; `None` without a list (status bit 4
    /// clear).
    pub fn capability_pointer(&self) -> Option<u8> {
        (self.status() & STATUS_CAP_LIST != 0).then(|| self.bytes()[self.cap_ptr_offset()] & 0xfc)
    }

    /// The standard capability list, in order. Stops after the first error: a pointer
    /// into the header, past the end, or back to an entry already visited (which bounds
    /// the walk to 48 entries).
    pub fn capabilities(&self) -> Capabilities<'_> {
        Capabilities {
            bytes: self.bytes(),
            next: self.capability_pointer().map_or(0, usize::from),
            seen: [false; 64],
            done: false,
        }
    }

    /// The extended capability list from 0x100, in order. It ends at a zero or all-ones
    /// header or a zero next pointer; with exactly 256 bytes it is empty (conventional
    /// PCI), with fewer the first step is [`WalkError::Truncated`]. Each offset is visited
    /// once, which bounds the walk to (4096 - 256) / 4 entries.
    pub fn ext_capabilities(&self) -> ExtCapabilities<'_> {
        ExtCapabilities {
            bytes: self.bytes(),
            next: field::EXT_START,
            seen: [false; field::EXT_LEN / 4],
            done: false,
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ConfigSpace<T> {
    fn bytes_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    /// Sets the vendor ID.
    pub fn set_vendor_id(&mut self, v: u16) {
        put_u16(self.bytes_mut(), field::VENDOR_ID, v)
    }

    /// Sets the device ID.
    pub fn set_device_id(&mut self, v: u16) {
        put_u16(self.bytes_mut(), field::DEVICE_ID, v)
    }

    /// Sets the command register.
    pub fn set_command(&mut self, v: u16) {
        put_u16(self.bytes_mut(), field::COMMAND, v)
    }

    /// Sets the status register.
    pub fn set_status(&mut self, v: u16) {
        put_u16(self.bytes_mut(), field::STATUS, v)
    }

    /// Sets the class code (the low 24 bits of `v`).
    pub fn set_class(&mut self, v: u32) {
        self.bytes_mut()[field::CLASS].copy_from_slice(&v.to_le_bytes()[..3]);
    }

    /// Sets the header type's bits 6:0, keeping the multi-function bit.
    pub fn set_header_type(&mut self, v: u8) {
        let b = &mut self.bytes_mut()[field::HEADER_TYPE];
        *b = (*b & 0x80) | (v & 0x7f);
    }

    /// Sets the capability list pointer at the place the header type gives, and the
    /// status bit that says there is a list (`None` clears it).
    pub fn set_capability_pointer(&mut self, ptr: Option<u8>) {
        let status = self.status();
        match ptr {
            Some(p) => {
                let at = self.cap_ptr_offset();
                self.bytes_mut()[at] = p;
                self.set_status(status | STATUS_CAP_LIST);
            }
            None => self.set_status(status & !STATUS_CAP_LIST),
        }
    }
}

/// One entry of the standard list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapabilityHeader {
    /// Its id.
    pub id: CapabilityId,
    /// Where it sits.
    pub offset: usize,
}

/// One entry of the extended list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtCapabilityHeader {
    /// Its id.
    pub id: ExtCapabilityId,
    /// Capability version, bits 19:16.
    pub version: u8,
    /// Where it sits.
    pub offset: usize,
}

/// The standard capability list ([`ConfigSpace::capabilities`]).
pub struct Capabilities<'a> {
    bytes: &'a [u8],
    next: usize,
    seen: [bool; 64],
    done: bool,
}

impl Iterator for Capabilities<'_> {
    type Item = Result<CapabilityHeader, WalkError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.next == 0 {
            return None;
        }
        let offset = self.next;
        let step = if offset < field::HEADER_LEN {
            Err(WalkError::IntoHeader { offset })
        } else if offset + field::cap::NEXT >= self.bytes.len() {
            Err(WalkError::Truncated {
                len: self.bytes.len(),
                what: "capability",
                offset,
            })
        } else if std::mem::replace(&mut self.seen[offset / 4], true) {
            Err(WalkError::Loops {
                extended: false,
                offset,
            })
        } else {
            self.next = usize::from(self.bytes[offset + field::cap::NEXT] & 0xfc);
            Ok(CapabilityHeader {
                id: self.bytes[offset + field::cap::ID].into(),
                offset,
            })
        };
        self.done = step.is_err();
        Some(step)
    }
}

/// The extended capability list ([`ConfigSpace::ext_capabilities`]).
pub struct ExtCapabilities<'a> {
    bytes: &'a [u8],
    next: usize,
    seen: [bool; field::EXT_LEN / 4],
    done: bool,
}

impl Iterator for ExtCapabilities<'_> {
    type Item = Result<ExtCapabilityHeader, WalkError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let (offset, len) = (self.next, self.bytes.len());
        if offset < field::EXT_START {
            self.done = true;
            return Some(Err(WalkError::BelowExtended { offset }));
        }
        if len < field::EXT_START {
            self.done = true;
            return Some(Err(WalkError::Truncated {
                len,
                what: "extended capability",
                offset,
            }));
        }
        if std::mem::replace(&mut self.seen[offset / 4], true) {
            self.done = true;
            return Some(Err(WalkError::Loops {
                extended: true,
                offset,
            }));
        }
        let Some(header) = self.bytes.get(offset..offset + 4) else {
            self.done = true;
            // Exactly 256 bytes: conventional config space has no extended list.
            return (offset != field::EXT_START || len != field::EXT_START).then_some(Err(
                WalkError::Truncated {
                    len,
                    what: "extended capability",
                    offset,
                },
            ));
        };
        let header = u32_in(header, field::ext_cap::HEADER);
        if header == 0 || header == 0xffff_ffff {
            self.done = true;
            return None;
        }
        // A next pointer below 0x100 is the following step's error, not this entry's.
        self.next = ((header >> 20) & 0xffc) as usize;
        self.done = self.next == 0;
        let entry = ExtCapabilityHeader {
            id: ((header & 0xffff) as u16).into(),
            version: ((header >> 16) & 0xf) as u8,
            offset,
        };
        Some(Ok(entry))
    }
}

/// A register block of a capability: a view from its offset to the end of config space.
macro_rules! cap_view {
    ($(#[$meta:meta])* $name:ident, $len:expr, $what:literal) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $name<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> $name<T> {
            /// Bytes from the capability's offset that the accessors read.
            pub const LEN: usize = $len;
            /// What the capability is called in messages.
            pub const WHAT: &'static str = $what;

            /// Wraps the bytes from the capability's offset on, unchecked.
            pub fn new_unchecked(buffer: T) -> Self {
                $name { buffer }
            }

            /// Wraps them after [`check_len`](Self::check_len).
            pub fn new_checked(buffer: T) -> Result<Self, usize> {
                let view = Self::new_unchecked(buffer);
                view.check_len()?;
                Ok(view)
            }

            /// At least [`LEN`](Self::LEN) bytes; `Err(bytes given)` otherwise.
            pub fn check_len(&self) -> Result<(), usize> {
                let len = self.buffer.as_ref().len();
                if len < Self::LEN {
                    Err(len)
                } else {
                    Ok(())
                }
            }

            /// The buffer back.
            pub fn into_inner(self) -> T {
                self.buffer
            }

            #[allow(dead_code)]
            fn bytes(&self) -> &[u8] {
                self.buffer.as_ref()
            }
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> $name<T> {
            #[allow(dead_code)]
            fn bytes_mut(&mut self) -> &mut [u8] {
                self.buffer.as_mut()
            }
        }
    };
}

cap_view!(
    /// The PCI Express capability's registers.
    PcieCap,
    field::express::LNKSTA.end,
    "the PCI Express capability"
);
cap_view!(
    /// The ACS extended capability's registers.
    AcsCap,
    field::acs::CTRL.end,
    "the ACS capability"
);
cap_view!(
    /// The ATS extended capability's registers.
    AtsCap,
    field::ats::CTRL.end,
    "the ATS capability"
);
cap_view!(
    /// The AER extended capability's status, mask and severity registers.
    AerCap,
    field::aer::COR_MASK.end,
    "the AER capability"
);

/// The Device/Port Type field of the PCI Express capability (flags bits 7:4;
/// `PCI_EXP_TYPE_*`, linux-counters.md 4.2).
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

impl From<u8> for PortType {
    fn from(code: u8) -> PortType {
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

impl From<PortType> for u8 {
    fn from(t: PortType) -> u8 {
        match t {
            PortType::Endpoint => 0,
            PortType::LegacyEndpoint => 1,
            PortType::RootPort => 4,
            PortType::SwitchUpstream => 5,
            PortType::SwitchDownstream => 6,
            PortType::PcieToPciBridge => 7,
            PortType::PciToPcieBridge => 8,
            PortType::RcIntegratedEndpoint => 9,
            PortType::RcEventCollector => 10,
            PortType::Reserved(code) => code,
        }
    }
}

impl<T: AsRef<[u8]>> PcieCap<T> {
    /// The capabilities register (`PCI_EXP_FLAGS`).
    pub fn flags(&self) -> u16 {
        u16_in(self.bytes(), field::express::FLAGS)
    }

    /// Device/Port Type, flags bits 7:4.
    pub fn port_type(&self) -> PortType {
        (((self.flags() >> 4) & 0xf) as u8).into()
    }

    /// Device Control (`PCI_EXP_DEVCTL`).
    pub fn device_control(&self) -> u16 {
        u16_in(self.bytes(), field::express::DEVCTL)
    }

    /// Max_Payload_Size code, DevCtl bits 7:5: 128 << code bytes for codes 0 to 5.
    pub fn max_payload_code(&self) -> u8 {
        ((self.device_control() >> 5) & 0x7) as u8
    }

    /// Link Capabilities (`PCI_EXP_LNKCAP`).
    pub fn link_capabilities(&self) -> u32 {
        u32_in(self.bytes(), field::express::LNKCAP)
    }

    /// Link Status (`PCI_EXP_LNKSTA`).
    pub fn link_status(&self) -> u16 {
        u16_in(self.bytes(), field::express::LNKSTA)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> PcieCap<T> {
    /// Sets the capabilities register.
    pub fn set_flags(&mut self, v: u16) {
        put_u16(self.bytes_mut(), field::express::FLAGS, v)
    }

    /// Sets Device Control.
    pub fn set_device_control(&mut self, v: u16) {
        put_u16(self.bytes_mut(), field::express::DEVCTL, v)
    }

    /// Sets Link Capabilities.
    pub fn set_link_capabilities(&mut self, v: u32) {
        put_u32(self.bytes_mut(), field::express::LNKCAP, v)
    }

    /// Sets Link Status.
    pub fn set_link_status(&mut self, v: u16) {
        put_u16(self.bytes_mut(), field::express::LNKSTA, v)
    }
}

bitflags::bitflags! {
    /// The ACS controls (`PCI_ACS_*`): the same bits in the ACS Capability register (what
    /// a port implements) and the ACS Control register (what is enabled).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct AcsFlags: u16 {
        /// Source Validation.
        const SRC_VALID = 0x0001;
        /// Translation Blocking.
        const TRANS_BLK = 0x0002;
        /// P2P Request Redirect: peer-to-peer requests go up to the root complex.
        const REQ_REDIR = 0x0004;
        /// P2P Completion Redirect.
        const CMPLT_REDIR = 0x0008;
        /// Upstream Forwarding.
        const UPSTREAM_FWD = 0x0010;
        /// P2P Egress Control.
        const EGRESS_CTRL = 0x0020;
        /// Direct Translated P2P.
        const DIRECT_TRANS = 0x0040;
        // Bits 15:8 are the Egress Control Vector Size in the capability register.
        const _ = !0;
    }
}

impl AcsFlags {
    /// The seven bits `lspci -vvv` prints, in its order and with its names.
    const LSPCI: [(AcsFlags, &'static str); 7] = [
        (AcsFlags::SRC_VALID, "SrcValid"),
        (AcsFlags::TRANS_BLK, "TransBlk"),
        (AcsFlags::REQ_REDIR, "ReqRedir"),
        (AcsFlags::CMPLT_REDIR, "CmpltRedir"),
        (AcsFlags::UPSTREAM_FWD, "UpstreamFwd"),
        (AcsFlags::EGRESS_CTRL, "EgressCtrl"),
        (AcsFlags::DIRECT_TRANS, "DirectTrans"),
    ];

    /// ReqRedir or CmpltRedir set: peer-to-peer requests or completions through the port
    /// go up to the root complex (linux-counters.md 4.3). A fact about the bits; whether
    /// that is a problem is `analyze::lint`'s call.
    pub fn redirects(self) -> bool {
        self.intersects(AcsFlags::REQ_REDIR | AcsFlags::CMPLT_REDIR)
    }
}

impl fmt::Display for AcsFlags {
    /// `SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-`,
    /// as `lspci -vvv` writes the register after `ACSCap:` or `ACSCtl:`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (bit, name)) in Self::LSPCI.iter().enumerate() {
            let sign = if self.contains(*bit) { '+' } else { '-' };
            let sep = if i == 0 { "" } else { " " };
            write!(f, "{sep}{name}{sign}")?;
        }
        Ok(())
    }
}

impl Serialize for AcsFlags {
    /// The raw register value.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u16(self.bits())
    }
}

impl<T: AsRef<[u8]>> AcsCap<T> {
    /// ACS Capability: the controls the port implements.
    pub fn capability(&self) -> AcsFlags {
        AcsFlags::from_bits_retain(u16_in(self.bytes(), field::acs::CAP))
    }

    /// ACS Control: the controls enabled.
    pub fn control(&self) -> AcsFlags {
        AcsFlags::from_bits_retain(u16_in(self.bytes(), field::acs::CTRL))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> AcsCap<T> {
    /// Sets ACS Capability.
    pub fn set_capability(&mut self, v: AcsFlags) {
        put_u16(self.bytes_mut(), field::acs::CAP, v.bits())
    }

    /// Sets ACS Control.
    pub fn set_control(&mut self, v: AcsFlags) {
        put_u16(self.bytes_mut(), field::acs::CTRL, v.bits())
    }
}

/// ATS Control bit 15 (`PCI_ATS_CTRL_ENABLE`).
const ATS_ENABLE: u16 = 0x8000;

impl<T: AsRef<[u8]>> AtsCap<T> {
    /// ATS Capability register.
    pub fn capability(&self) -> u16 {
        u16_in(self.bytes(), field::ats::CAP)
    }

    /// ATS Control register.
    pub fn control(&self) -> u16 {
        u16_in(self.bytes(), field::ats::CTRL)
    }

    /// Control bit 15, Enable.
    pub fn enabled(&self) -> bool {
        self.control() & ATS_ENABLE != 0
    }

    /// Control bits 4:0, Smallest Translation Unit: 2^(12 + stu) bytes.
    pub fn smallest_translation_unit(&self) -> u8 {
        (self.control() & 0x1f) as u8
    }

    /// Capability bits 4:0, Invalidate Queue Depth, with the encoding 0 read as 32.
    pub fn invalidate_queue_depth(&self) -> u8 {
        match self.capability() & 0x1f {
            0 => 32,
            depth => depth as u8,
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> AtsCap<T> {
    /// Sets the ATS Capability register.
    pub fn set_capability(&mut self, v: u16) {
        put_u16(self.bytes_mut(), field::ats::CAP, v)
    }

    /// Sets the ATS Control register.
    pub fn set_control(&mut self, v: u16) {
        put_u16(self.bytes_mut(), field::ats::CTRL, v)
    }
}

impl<T: AsRef<[u8]>> AerCap<T> {
    /// Uncorrectable Error Status: errors logged since software last cleared them.
    pub fn uncorrectable_status(&self) -> u32 {
        u32_in(self.bytes(), field::aer::UNCOR_STATUS)
    }

    /// Uncorrectable Error Mask: errors not reported.
    pub fn uncorrectable_mask(&self) -> u32 {
        u32_in(self.bytes(), field::aer::UNCOR_MASK)
    }

    /// Uncorrectable Error Severity: set bits are fatal, clear ones non-fatal.
    pub fn uncorrectable_severity(&self) -> u32 {
        u32_in(self.bytes(), field::aer::UNCOR_SEVER)
    }

    /// Correctable Error Status.
    pub fn correctable_status(&self) -> u32 {
        u32_in(self.bytes(), field::aer::COR_STATUS)
    }

    /// Correctable Error Mask.
    pub fn correctable_mask(&self) -> u32 {
        u32_in(self.bytes(), field::aer::COR_MASK)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> AerCap<T> {
    /// Sets Uncorrectable Error Status.
    pub fn set_uncorrectable_status(&mut self, v: u32) {
        put_u32(self.bytes_mut(), field::aer::UNCOR_STATUS, v)
    }

    /// Sets Uncorrectable Error Mask.
    pub fn set_uncorrectable_mask(&mut self, v: u32) {
        put_u32(self.bytes_mut(), field::aer::UNCOR_MASK, v)
    }

    /// Sets Uncorrectable Error Severity.
    pub fn set_uncorrectable_severity(&mut self, v: u32) {
        put_u32(self.bytes_mut(), field::aer::UNCOR_SEVER, v)
    }

    /// Sets Correctable Error Status.
    pub fn set_correctable_status(&mut self, v: u32) {
        put_u32(self.bytes_mut(), field::aer::COR_STATUS, v)
    }

    /// Sets Correctable Error Mask.
    pub fn set_correctable_mask(&mut self, v: u32) {
        put_u32(self.bytes_mut(), field::aer::COR_MASK, v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A 64-byte header laid out like a Mellanox ConnectX-6 function's (vendor 0x15b3,
    /// device 0x101b, class 0x020000), written by hand, with its capability list at 0x60.
    const CX6_HEADER: [u8; 64] = [
        0xb3, 0x15, 0x1b, 0x10, 0x46, 0x05, 0x10, 0x00, 0x00, 0x00, 0x00, 0x02, 0x08, 0x00, 0x00,
        0x00, 0x0c, 0x00, 0x00, 0x00, 0x38, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xb3,
        0x15, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x60, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0xff, 0x01, 0x00, 0x00,
    ];

    #[test]
    fn header_fields_deconstruct() {
        let view = ConfigSpace::new_checked(&CX6_HEADER[..]).unwrap();
        assert_eq!(view.vendor_id(), 0x15b3);
        assert_eq!(view.device_id(), 0x101b);
        assert_eq!(view.command(), 0x0546);
        assert_eq!(view.status(), 0x0010);
        assert_eq!(view.class(), 0x020000);
        assert_eq!(view.header_type(), 0);
        assert_eq!(view.capability_pointer(), Some(0x60));
        // 64 bytes: the first capability lies past the end.
        let steps: Vec<_> = view.capabilities().collect();
        assert_eq!(
            steps,
            [Err(WalkError::Truncated {
                len: 64,
                what: "capability",
                offset: 0x60
            })]
        );
        assert_eq!(
            steps[0].unwrap_err().to_string(),
            "config space truncated to 64 bytes: needs CAP_SYS_ADMIN"
        );
    }

    #[test]
    fn header_fields_construct() {
        let mut bytes = [0u8; 64];
        let mut view = ConfigSpace::new_unchecked(&mut bytes[..]);
        view.set_vendor_id(0x15b3);
        view.set_device_id(0x101b);
        view.set_command(0x0546);
        view.set_class(0x020000);
        view.set_header_type(0);
        view.set_capability_pointer(Some(0x60));
        // The bytes that the test does not set: revision, cache line size, BARs, IRQ.
        let mut want = CX6_HEADER;
        for (i, b) in want.iter_mut().enumerate() {
            if ![0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 14, 0x34].contains(&i) {
                *b = 0;
            }
        }
        assert_eq!(bytes, want);
    }

    #[test]
    fn short_buffers_fail_the_check() {
        assert_eq!(
            ConfigSpace::new_checked(&CX6_HEADER[..63]).unwrap_err(),
            WalkError::ShortHeader { len: 63 }
        );
        assert_eq!(AcsCap::new_checked(&[0u8; 7][..]).unwrap_err(), 7);
        assert!(AerCap::new_checked(&[0u8; 0x18][..]).is_ok());
    }

    #[test]
    fn ids_survive_as_values() {
        assert_eq!(CapabilityId::from(0x10), CapabilityId::Express);
        assert_eq!(CapabilityId::from(0x0b), CapabilityId::Unknown(0x0b));
        assert_eq!(u8::from(CapabilityId::Unknown(0x0b)), 0x0b);
        assert_eq!(ExtCapabilityId::from(0x000d), ExtCapabilityId::Acs);
        assert_eq!(ExtCapabilityId::from(0x0f), ExtCapabilityId::Ats);
        assert_eq!(ExtCapabilityId::from(0x1), ExtCapabilityId::Aer);
        assert_eq!(ExtCapabilityId::from(0x7f), ExtCapabilityId::Unknown(0x7f));
        for code in 0..=255u8 {
            assert_eq!(u8::from(PortType::from(code)), code);
        }
    }

    #[test]
    fn acs_flags_print_as_lspci() {
        let ctl = AcsFlags::SRC_VALID
            | AcsFlags::REQ_REDIR
            | AcsFlags::CMPLT_REDIR
            | AcsFlags::UPSTREAM_FWD;
        assert_eq!(
            ctl.to_string(),
            "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-"
        );
        assert!(ctl.redirects());
        assert!(!(AcsFlags::SRC_VALID | AcsFlags::DIRECT_TRANS).redirects());
        // Bits lspci does not name (the egress vector size) are kept but not printed.
        let raw = AcsFlags::from_bits_retain(0x7f00);
        assert_eq!(raw.bits(), 0x7f00);
        assert!(!raw.to_string().contains('+'));
    }

    #[test]
    fn a_chain_of_extended_capabilities_walks_in_order() {
        let mut b = vec![0u8; 4096];
        let header = |id: u32, next: u32| (id | 1 << 16 | next << 20).to_le_bytes();
        b[0x100..0x104].copy_from_slice(&header(0x0001, 0x148));
        b[0x148..0x14c].copy_from_slice(&header(0x000d, 0x160));
        b[0x160..0x164].copy_from_slice(&header(0x0042, 0x0f8));
        let view = ConfigSpace::new_checked(&b[..]).unwrap();
        let got: Vec<_> = view.ext_capabilities().collect();
        let entry = |id, offset| {
            Ok(ExtCapabilityHeader {
                id,
                version: 1,
                offset,
            })
        };
        assert_eq!(
            got,
            [
                entry(ExtCapabilityId::Aer, 0x100),
                entry(ExtCapabilityId::Acs, 0x148),
                entry(ExtCapabilityId::Unknown(0x42), 0x160),
                Err(WalkError::BelowExtended { offset: 0xf8 }),
            ]
        );
    }

    proptest! {
        /// Whatever the bytes, a checked view's accessors and walks do not panic, and the
        /// walks end (each offset is visited once).
        #[test]
        fn the_view_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..4200)) {
            let Ok(view) = ConfigSpace::new_checked(&bytes[..]) else {
                prop_assert!(bytes.len() < field::HEADER_LEN);
                return Ok(());
            };
            let _ = (view.vendor_id(), view.device_id(), view.command(), view.status());
            let _ = (view.class(), view.header_type(), view.capability_pointer());
            let standard = view.capabilities().count();
            prop_assert!(standard <= 49);
            let extended = view.ext_capabilities().count();
            prop_assert!(extended <= (field::EXT_LEN - field::EXT_START) / 4 + 1);
            for c in view.ext_capabilities().flatten() {
                let regs = &bytes[c.offset..];
                if let Ok(acs) = AcsCap::new_checked(regs) {
                    let _ = (acs.capability().to_string(), acs.control());
                }
                if let Ok(aer) = AerCap::new_checked(regs) {
                    let _ = (aer.uncorrectable_status(), aer.correctable_mask());
                }
            }
        }

        /// Reading every header field of arbitrary bytes and writing it into a zeroed
        /// buffer through the setters gives a view that reads the same values back.
        #[test]
        fn header_fields_round_trip(bytes in prop::collection::vec(any::<u8>(), 64..300)) {
            let src = ConfigSpace::new_checked(&bytes[..]).unwrap();
            let mut out = vec![0u8; bytes.len()];
            let mut dst = ConfigSpace::new_checked(&mut out[..]).unwrap();
            dst.set_vendor_id(src.vendor_id());
            dst.set_device_id(src.device_id());
            dst.set_command(src.command());
            dst.set_status(src.status());
            dst.set_class(src.class());
            dst.set_header_type(src.header_type());
            dst.set_capability_pointer(src.capability_pointer());
            dst.set_status(src.status());
            prop_assert_eq!(dst.vendor_id(), src.vendor_id());
            prop_assert_eq!(dst.device_id(), src.device_id());
            prop_assert_eq!(dst.command(), src.command());
            prop_assert_eq!(dst.status(), src.status());
            prop_assert_eq!(dst.class(), src.class());
            prop_assert_eq!(dst.header_type(), src.header_type());
            prop_assert_eq!(dst.capability_pointer(), src.capability_pointer());
        }

        /// The capability register views read back what their setters wrote.
        #[test]
        fn capability_registers_round_trip(
            flags: u16, devctl: u16, lnkcap: u32, lnksta: u16,
            acs_cap: u16, acs_ctl: u16, ats_cap: u16, ats_ctl: u16,
            aer in prop::array::uniform5(any::<u32>()),
        ) {
            let mut b = [0u8; 0x20];
            let mut e = PcieCap::new_checked(&mut b[..]).unwrap();
            e.set_flags(flags);
            e.set_device_control(devctl);
            e.set_link_capabilities(lnkcap);
            e.set_link_status(lnksta);
            prop_assert_eq!(
                (e.flags(), e.device_control(), e.link_capabilities(), e.link_status()),
                (flags, devctl, lnkcap, lnksta)
            );
            prop_assert_eq!(u8::from(e.port_type()), ((flags >> 4) & 0xf) as u8);
            let mut a = AcsCap::new_checked(&mut b[..]).unwrap();
            a.set_capability(AcsFlags::from_bits_retain(acs_cap));
            a.set_control(AcsFlags::from_bits_retain(acs_ctl));
            prop_assert_eq!((a.capability().bits(), a.control().bits()), (acs_cap, acs_ctl));
            let mut t = AtsCap::new_checked(&mut b[..]).unwrap();
            t.set_capability(ats_cap);
            t.set_control(ats_ctl);
            prop_assert_eq!((t.capability(), t.control()), (ats_cap, ats_ctl));
            prop_assert_eq!(t.enabled(), ats_ctl & 0x8000 != 0);
            let mut r = AerCap::new_checked(&mut b[..]).unwrap();
            r.set_uncorrectable_status(aer[0]);
            r.set_uncorrectable_mask(aer[1]);
            r.set_uncorrectable_severity(aer[2]);
            r.set_correctable_status(aer[3]);
            r.set_correctable_mask(aer[4]);
            prop_assert_eq!(
                [
                    r.uncorrectable_status(),
                    r.uncorrectable_mask(),
                    r.uncorrectable_severity(),
                    r.correctable_status(),
                    r.correctable_mask(),
                ],
                aer
            );
        }
    }
}
