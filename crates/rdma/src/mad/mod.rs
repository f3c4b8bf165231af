/*!
Management datagrams (MADs) of InfiniBand, as byte views and validated representations in
the style of smoltcp's `wire` module: [`MadPacket`] reads and writes the fields of the
24-byte common MAD header (IBA vol. 1, 13.4.2) in place; [`smp`] has the subnet management
packets (LID-routed and directed-route, 14.2.1) and their attributes NodeInfo,
NodeDescription, PortInfo and SwitchInfo; [`perf`] has the Performance Management class
(0x04, 16.1): ClassPortInfo, PortCounters and PortCountersExtended.

Every MAD is 256 bytes and **big-endian**. Field offsets live in a `field` module next to
each view, never inline. The contract is smoltcp's: `new_unchecked` wraps a buffer,
`check_len` promises that no accessor panics afterwards, and `new_checked` (wrap, then
check) is the only way untrusted bytes come in. Values this code does not name (a new
attribute, a vendor class) survive as `Unknown(raw)`, never as an error.

These modules do no I/O: the umad transport sends and receives the bytes.
*/

pub mod perf;
pub mod smp;

use std::fmt;
use std::ops::Range;

/// A field's byte range in a buffer.
pub type Field = Range<usize>;

/// Every MAD is this long (IBA 13.4.1: "MADs are 256 bytes").
pub const MAD_LEN: usize = 256;

/// Why bytes are not a MAD of the kind asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The buffer is shorter than a MAD.
    #[error("a MAD is {MAD_LEN} bytes, got {0}")]
    Truncated(usize),
    /// The bytes are a MAD, but not one this view can read.
    #[error("{0}")]
    Malformed(&'static str),
}

/// The `enum_with_unknown!` pattern of smoltcp: named values, and the raw value kept for
/// the rest.
macro_rules! enum_with_unknown {
    ($(#[$meta:meta])* pub enum $name:ident($ty:ty) { $($(#[$vmeta:meta])* $variant:ident = $value:expr),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
            /// A value this code does not name.
            Unknown($ty),
        }

        impl From<$ty> for $name {
            fn from(raw: $ty) -> Self {
                match raw {
                    $($value => $name::$variant,)+
                    other => $name::Unknown(other),
                }
            }
        }

        impl From<$name> for $ty {
            fn from(value: $name) -> Self {
                match value {
                    $($name::$variant => $value,)+
                    $name::Unknown(other) => other,
                }
            }
        }
    };
}
pub(crate) use enum_with_unknown;

enum_with_unknown! {
    /// The management class (byte 1).
    pub enum MgmtClass(u8) {
        /// Subnet management, LID-routed (0x01).
        SubnLid = 0x01,
        /// Subnet administration (0x03).
        SubnAdm = 0x03,
        /// Performance management (0x04).
        Performance = 0x04,
        /// Subnet management, directed-route (0x81).
        SubnDirectedRoute = 0x81,
    }
}

enum_with_unknown! {
    /// The method (byte 3, the response bit included: `GetResp` is 0x81).
    pub enum Method(u8) {
        /// Get (0x01).
        Get = 0x01,
        /// Set (0x02).
        Set = 0x02,
        /// Trap (0x05).
        Trap = 0x05,
        /// GetResp (0x81), the answer to Get and Set.
        GetResp = 0x81,
    }
}

/// The byte offsets of the common MAD header (IBA 13.4.2, Figure 146).
mod field {
    use super::Field;
    pub const BASE_VERSION: usize = 0;
    pub const MGMT_CLASS: usize = 1;
    pub const CLASS_VERSION: usize = 2;
    pub const METHOD: usize = 3;
    pub const STATUS: Field = 4..6;
    pub const CLASS_SPECIFIC: Field = 6..8;
    pub const TRANSACTION_ID: Field = 8..16;
    pub const ATTRIBUTE_ID: Field = 16..18;
    pub const ATTRIBUTE_MODIFIER: Field = 20..24;
}

/// The length of the common header; class headers and data follow it.
pub const HEADER_LEN: usize = 24;

/// The response bit of the method byte.
const RESPONSE_BIT: u8 = 0x80;

pub(crate) fn be16(b: &[u8], f: Field) -> u16 {
    u16::from_be_bytes(b[f].try_into().expect("two bytes"))
}
pub(crate) fn be32(b: &[u8], f: Field) -> u32 {
    u32::from_be_bytes(b[f].try_into().expect("four bytes"))
}
pub(crate) fn be64(b: &[u8], f: Field) -> u64 {
    u64::from_be_bytes(b[f].try_into().expect("eight bytes"))
}
pub(crate) fn set_be16(b: &mut [u8], f: Field, v: u16) {
    b[f].copy_from_slice(&v.to_be_bytes());
}
pub(crate) fn set_be32(b: &mut [u8], f: Field, v: u32) {
    b[f].copy_from_slice(&v.to_be_bytes());
}
pub(crate) fn set_be64(b: &mut [u8], f: Field, v: u64) {
    b[f].copy_from_slice(&v.to_be_bytes());
}

/// A view of a MAD's common header over a buffer.
#[derive(Debug, Clone)]
pub struct MadPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> MadPacket<T> {
    /// Wraps `buffer` without checking it: accessors may panic on a short buffer.
    pub fn new_unchecked(buffer: T) -> MadPacket<T> {
        MadPacket { buffer }
    }

    /// Wraps untrusted `buffer` and checks that it holds a whole MAD.
    pub fn new_checked(buffer: T) -> Result<MadPacket<T>, Error> {
        let packet = MadPacket::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds a whole MAD (256 bytes; more is cut off by the
    /// accessors, which read the first 256): after it, no accessor panics.
    pub fn check_len(&self) -> Result<(), Error> {
        let len = self.buffer.as_ref().len();
        if len < MAD_LEN {
            Err(Error::Truncated(len))
        } else {
            Ok(())
        }
    }

    /// The bytes of the MAD.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buffer.as_ref()[..MAD_LEN]
    }

    /// The base version (1 for every MAD here).
    pub fn base_version(&self) -> u8 {
        self.buffer.as_ref()[field::BASE_VERSION]
    }

    /// The management class.
    pub fn mgmt_class(&self) -> MgmtClass {
        MgmtClass::from(self.buffer.as_ref()[field::MGMT_CLASS])
    }

    /// The class version.
    pub fn class_version(&self) -> u8 {
        self.buffer.as_ref()[field::CLASS_VERSION]
    }

    /// The method, response bit included.
    pub fn method(&self) -> Method {
        Method::from(self.buffer.as_ref()[field::METHOD])
    }

    /// The response bit: the MAD answers a request.
    pub fn is_response(&self) -> bool {
        self.buffer.as_ref()[field::METHOD] & RESPONSE_BIT != 0
    }

    /// The status word (a directed-route SMP keeps its direction bit in bit 15: see
    /// [`smp::SmpPacket::status`]).
    pub fn status(&self) -> u16 {
        be16(self.buffer.as_ref(), field::STATUS)
    }

    /// The class-specific word.
    pub fn class_specific(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CLASS_SPECIFIC)
    }

    /// The transaction id, which a response echoes.
    pub fn transaction_id(&self) -> u64 {
        be64(self.buffer.as_ref(), field::TRANSACTION_ID)
    }

    /// The attribute id (its meaning depends on the class).
    pub fn attribute_id(&self) -> u16 {
        be16(self.buffer.as_ref(), field::ATTRIBUTE_ID)
    }

    /// The attribute modifier (a port number for PortInfo, for example).
    pub fn attribute_modifier(&self) -> u32 {
        be32(self.buffer.as_ref(), field::ATTRIBUTE_MODIFIER)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> MadPacket<T> {
    /// Sets the base version.
    pub fn set_base_version(&mut self, v: u8) {
        self.buffer.as_mut()[field::BASE_VERSION] = v;
    }
    /// Sets the management class.
    pub fn set_mgmt_class(&mut self, v: MgmtClass) {
        self.buffer.as_mut()[field::MGMT_CLASS] = v.into();
    }
    /// Sets the class version.
    pub fn set_class_version(&mut self, v: u8) {
        self.buffer.as_mut()[field::CLASS_VERSION] = v;
    }
    /// Sets the method.
    pub fn set_method(&mut self, v: Method) {
        self.buffer.as_mut()[field::METHOD] = v.into();
    }
    /// Sets the status word.
    pub fn set_status(&mut self, v: u16) {
        set_be16(self.buffer.as_mut(), field::STATUS, v);
    }
    /// Sets the class-specific word.
    pub fn set_class_specific(&mut self, v: u16) {
        set_be16(self.buffer.as_mut(), field::CLASS_SPECIFIC, v);
    }
    /// Sets the transaction id.
    pub fn set_transaction_id(&mut self, v: u64) {
        set_be64(self.buffer.as_mut(), field::TRANSACTION_ID, v);
    }
    /// Sets the attribute id.
    pub fn set_attribute_id(&mut self, v: u16) {
        set_be16(self.buffer.as_mut(), field::ATTRIBUTE_ID, v);
    }
    /// Sets the attribute modifier.
    pub fn set_attribute_modifier(&mut self, v: u32) {
        set_be32(self.buffer.as_mut(), field::ATTRIBUTE_MODIFIER, v);
    }
}

/// The status word's meaning (IBA 13.4.7, Table 112): bit 0 busy, bit 1 redirect, bits
/// 2-4 the invalid-field code, bits 8-15 class-specific.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MadStatus {
    /// Success.
    Ok,
    /// The responder is busy: ask again later.
    Busy,
    /// The class is served elsewhere (ClassPortInfo redirect).
    Redirect,
    /// The request was refused: the code of bits 2-4 in words.
    Invalid(&'static str),
    /// Class-specific bits (8-15) only.
    ClassSpecific(u16),
}

impl MadStatus {
    /// Decodes the 16-bit status word.
    pub fn from_word(word: u16) -> MadStatus {
        let code = (word >> 2) & 0x7;
        if code != 0 {
            return MadStatus::Invalid(match code {
                1 => "bad version",
                2 => "method not supported",
                3 => "method/attribute combination not supported",
                7 => "invalid attribute or attribute modifier",
                _ => "reserved invalid-field code",
            });
        }
        if word & 0x1 != 0 {
            MadStatus::Busy
        } else if word & 0x2 != 0 {
            MadStatus::Redirect
        } else if word & 0xff00 != 0 {
            MadStatus::ClassSpecific(word >> 8)
        } else {
            MadStatus::Ok
        }
    }
}

impl fmt::Display for MadStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MadStatus::Ok => f.write_str("ok"),
            MadStatus::Busy => f.write_str("busy"),
            MadStatus::Redirect => f.write_str("redirect"),
            MadStatus::Invalid(why) => f.write_str(why),
            MadStatus::ClassSpecific(bits) => write!(f, "class-specific status 0x{bits:02x}"),
        }
    }
}

/// The common header as values: what a request sets and a response is matched on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MadHeaderRepr {
    /// The management class.
    pub mgmt_class: MgmtClass,
    /// The class version (1 for SMPs and PerfMgt).
    pub class_version: u8,
    /// The method.
    pub method: Method,
    /// The status word.
    pub status: u16,
    /// The transaction id.
    pub transaction_id: u64,
    /// The attribute id.
    pub attribute_id: u16,
    /// The attribute modifier.
    pub attribute_modifier: u32,
}

impl MadHeaderRepr {
    /// Reads the header of a checked packet; a base version other than 1 is malformed.
    pub fn parse<T: AsRef<[u8]>>(packet: &MadPacket<T>) -> Result<MadHeaderRepr, Error> {
        packet.check_len()?;
        if packet.base_version() != 1 {
            return Err(Error::Malformed("MAD base version is not 1"));
        }
        Ok(MadHeaderRepr {
            mgmt_class: packet.mgmt_class(),
            class_version: packet.class_version(),
            method: packet.method(),
            status: packet.status(),
            transaction_id: packet.transaction_id(),
            attribute_id: packet.attribute_id(),
            attribute_modifier: packet.attribute_modifier(),
        })
    }

    /// Writes the header into `packet` (base version 1; the class-specific word is left
    /// as it is).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut MadPacket<T>) {
        packet.set_base_version(1);
        packet.set_mgmt_class(self.mgmt_class);
        packet.set_class_version(self.class_version);
        packet.set_method(self.method);
        packet.set_status(self.status);
        packet.set_transaction_id(self.transaction_id);
        packet.set_attribute_id(self.attribute_id);
        packet.set_attribute_modifier(self.attribute_modifier);
    }
}

impl<T: AsRef<[u8]>> fmt::Display for MadPacket<T> {
    /// The header in words when it parses, the raw bytes' length when it does not.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match MadHeaderRepr::parse(self) {
            Ok(h) => write!(
                f,
                "MAD class {:?} v{} {:?} attr 0x{:04x} mod 0x{:x} tid 0x{:016x} status {}",
                h.mgmt_class,
                h.class_version,
                h.method,
                h.attribute_id,
                h.attribute_modifier,
                h.transaction_id,
                MadStatus::from_word(h.status & 0x7fff)
            ),
            Err(e) => write!(f, "MAD ({e})"),
        }
    }
}

/// Reads a fixture in the hex format of `testdata/` (`#` lines, then bytes in hex).
#[cfg(test)]
pub(crate) fn fixture(name: &str) -> Vec<u8> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/mad/").to_string() + name;
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .flat_map(|l| l.split_whitespace())
        .map(|b| u8::from_str_radix(b, 16).unwrap_or_else(|_| panic!("{path}: {b}")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_header_of_a_captured_perfquery_response_reads_field_by_field() {
        let bytes = fixture("perf-portcounters-response.hex");
        let p = MadPacket::new_checked(&bytes[..]).unwrap();
        assert_eq!(p.base_version(), 1);
        assert_eq!(p.mgmt_class(), MgmtClass::Performance);
        assert_eq!(p.class_version(), 1);
        assert_eq!(p.method(), Method::GetResp);
        assert!(p.is_response());
        assert_eq!(p.status(), 0);
        assert_eq!(p.attribute_id(), perf::attr::PORT_COUNTERS);
        assert_eq!(p.attribute_modifier(), 0);
        // The request's transaction id comes back in the response's low 32 bits; the high
        // 32 bits are the sending agent's, set on the way out (as the kernel's MAD layer
        // does): responses are matched on the low half.
        let request = fixture("perf-portcounters-request.hex");
        let q = MadPacket::new_checked(&request[..]).unwrap();
        assert_eq!(q.method(), Method::Get);
        assert!(!q.is_response());
        assert_eq!(q.transaction_id() >> 32, 0);
        assert_eq!(p.transaction_id() as u32, q.transaction_id() as u32);
        assert_ne!(p.transaction_id() >> 32, 0);
    }

    #[test]
    fn setters_rebuild_the_captured_header() {
        let captured = fixture("perf-portcounters-request.hex");
        let repr = MadHeaderRepr::parse(&MadPacket::new_checked(&captured[..]).unwrap()).unwrap();
        let mut bytes = [0u8; MAD_LEN];
        bytes[HEADER_LEN..].copy_from_slice(&captured[HEADER_LEN..]);
        repr.emit(&mut MadPacket::new_unchecked(&mut bytes[..]));
        assert_eq!(&bytes[..], &captured[..]);
    }

    #[test]
    fn short_buffers_and_other_base_versions_are_refused() {
        let bytes = fixture("perf-portcounters-response.hex");
        assert_eq!(
            MadPacket::new_checked(&bytes[..255]).unwrap_err(),
            Error::Truncated(255)
        );
        let mut v2 = bytes.clone();
        MadPacket::new_unchecked(&mut v2[..]).set_base_version(2);
        assert!(matches!(
            MadHeaderRepr::parse(&MadPacket::new_unchecked(&v2[..])),
            Err(Error::Malformed(_))
        ));
    }

    #[test]
    fn unknown_classes_and_methods_survive_as_values() {
        assert_eq!(MgmtClass::from(0x0a), MgmtClass::Unknown(0x0a));
        assert_eq!(u8::from(MgmtClass::Unknown(0x0a)), 0x0a);
        assert_eq!(Method::from(0x86), Method::Unknown(0x86));
        assert_eq!(u8::from(MgmtClass::SubnDirectedRoute), 0x81);
    }

    #[test]
    fn status_words_name_their_meaning() {
        assert_eq!(MadStatus::from_word(0), MadStatus::Ok);
        assert_eq!(MadStatus::from_word(1), MadStatus::Busy);
        assert_eq!(
            MadStatus::from_word(0x1c).to_string(),
            "invalid attribute or attribute modifier"
        );
        assert_eq!(MadStatus::from_word(0x0800), MadStatus::ClassSpecific(8));
    }

    proptest! {
        #[test]
        fn any_bytes_never_panic_and_headers_round_trip(
            bytes in proptest::collection::vec(any::<u8>(), 0..300)
        ) {
            let packet = MadPacket::new_unchecked(&bytes[..]);
            let _ = packet.to_string();
            if let Ok(repr) = MadHeaderRepr::parse(&packet) {
                let mut out = bytes[..MAD_LEN].to_vec();
                repr.emit(&mut MadPacket::new_unchecked(&mut out[..]));
                prop_assert_eq!(&out[..], &bytes[..MAD_LEN]);
            }
        }
    }
}
