//! The numbers of `include/uapi/rdma/rdma_netlink.h` that hostping uses, and [`Attr`], a
//! typed view of one netlink attribute's value (the header itself, `struct nlattr`, is
//! `netlink_packet_core::NlaBuffer`). `tests/netlink_constants.rs` compiles a C program
//! against the installed header and compares every number here.

use netlink_packet_core::{NlaBuffer, NlasIterator, NLA_ALIGNTO, NLA_HEADER_SIZE};

/// `NETLINK_RDMA`, the socket protocol (include/uapi/linux/netlink.h).
pub const NETLINK_RDMA: isize = 20;
/// `RDMA_NL_NLDEV`: the device-interface client of RDMA netlink.
pub const RDMA_NL_NLDEV: u16 = 5;

/// `RDMA_NL_GET_TYPE(client, op)`: the message type is the client in bits 10..16 and the
/// operation in bits 0..10.
pub const fn message_type(op: u16) -> u16 {
    (RDMA_NL_NLDEV << 10) + op
}

/// `RDMA_NL_GET_OP(type)`.
pub const fn op_of(message_type: u16) -> u16 {
    message_type & ((1 << 10) - 1)
}

/// `RDMA_NL_GET_CLIENT(type)`.
pub const fn client_of(message_type: u16) -> u16 {
    (message_type & (((1 << 6) - 1) << 10)) >> 10
}

/// `enum rdma_nldev_command`.
pub mod cmd {
    /// `RDMA_NLDEV_CMD_GET` (can dump): the devices.
    pub const GET: u16 = 1;
    /// `RDMA_NLDEV_CMD_RES_MR_GET` (can dump): a device's memory regions.
    pub const RES_MR_GET: u16 = 13;
    /// `RDMA_NLDEV_CMD_STAT_GET` (can dump): counters; with `STAT_RES = RES_MR`, per MR.
    pub const STAT_GET: u16 = 17;
}

/// `enum rdma_nldev_attr` (ABI: the kernel never renumbers them).
pub mod attr {
    /// `RDMA_NLDEV_ATTR_PAD`: padding before a 64-bit value on architectures without
    /// efficient unaligned access (`nla_put_u64_64bit`); skipped.
    pub const PAD: u16 = 0;
    /// `RDMA_NLDEV_ATTR_DEV_INDEX`, u32.
    pub const DEV_INDEX: u16 = 1;
    /// `RDMA_NLDEV_ATTR_DEV_NAME`, string.
    pub const DEV_NAME: u16 = 2;
    /// `RDMA_NLDEV_ATTR_RES_PID`, u32: the process that created the resource.
    pub const RES_PID: u16 = 28;
    /// `RDMA_NLDEV_ATTR_RES_KERN_NAME`, string: the kernel module that did.
    pub const RES_KERN_NAME: u16 = 29;
    /// `RDMA_NLDEV_ATTR_RES_MR`, nested table.
    pub const RES_MR: u16 = 40;
    /// `RDMA_NLDEV_ATTR_RES_MR_ENTRY`, nested table.
    pub const RES_MR_ENTRY: u16 = 41;
    /// `RDMA_NLDEV_ATTR_RES_RKEY`, u32.
    pub const RES_RKEY: u16 = 42;
    /// `RDMA_NLDEV_ATTR_RES_LKEY`, u32.
    pub const RES_LKEY: u16 = 43;
    /// `RDMA_NLDEV_ATTR_RES_IOVA`, u64.
    pub const RES_IOVA: u16 = 44;
    /// `RDMA_NLDEV_ATTR_RES_MRLEN`, u64.
    pub const RES_MRLEN: u16 = 45;
    /// `RDMA_NLDEV_ATTR_DRIVER`, nested table of driver-specific attributes.
    pub const DRIVER: u16 = 52;
    /// `RDMA_NLDEV_ATTR_DRIVER_STRING`, string: a driver attribute's name, or its value.
    pub const DRIVER_STRING: u16 = 54;
    /// `RDMA_NLDEV_ATTR_DRIVER_PRINT_TYPE`, u8 (`RDMA_NLDEV_PRINT_TYPE_HEX` = 1).
    pub const DRIVER_PRINT_TYPE: u16 = 55;
    /// `RDMA_NLDEV_ATTR_DRIVER_S32`.
    pub const DRIVER_S32: u16 = 56;
    /// `RDMA_NLDEV_ATTR_DRIVER_U32`.
    pub const DRIVER_U32: u16 = 57;
    /// `RDMA_NLDEV_ATTR_DRIVER_S64`.
    pub const DRIVER_S64: u16 = 58;
    /// `RDMA_NLDEV_ATTR_DRIVER_U64`.
    pub const DRIVER_U64: u16 = 59;
    /// `RDMA_NLDEV_ATTR_RES_PDN`, u32: the protection domain.
    pub const RES_PDN: u16 = 60;
    /// `RDMA_NLDEV_ATTR_RES_MRN`, u32: the MR's restrack id (`rdma ... mrn N`).
    pub const RES_MRN: u16 = 62;
    /// `RDMA_NLDEV_ATTR_STAT_RES`, u32: which resource a statistics request is about.
    pub const STAT_RES: u16 = 75;
    /// `RDMA_NLDEV_ATTR_STAT_HWCOUNTERS`, nested table.
    pub const STAT_HWCOUNTERS: u16 = 80;
    /// `RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY`, nested table.
    pub const STAT_HWCOUNTER_ENTRY: u16 = 81;
    /// `RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME`, string.
    pub const STAT_HWCOUNTER_ENTRY_NAME: u16 = 82;
    /// `RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE`, u64.
    pub const STAT_HWCOUNTER_ENTRY_VALUE: u16 = 83;

    /// The header's name of an attribute number, for error messages.
    pub fn name(kind: u16) -> &'static str {
        match kind {
            PAD => "RDMA_NLDEV_ATTR_PAD",
            DEV_INDEX => "RDMA_NLDEV_ATTR_DEV_INDEX",
            DEV_NAME => "RDMA_NLDEV_ATTR_DEV_NAME",
            RES_PID => "RDMA_NLDEV_ATTR_RES_PID",
            RES_KERN_NAME => "RDMA_NLDEV_ATTR_RES_KERN_NAME",
            RES_MR => "RDMA_NLDEV_ATTR_RES_MR",
            RES_MR_ENTRY => "RDMA_NLDEV_ATTR_RES_MR_ENTRY",
            RES_RKEY => "RDMA_NLDEV_ATTR_RES_RKEY",
            RES_LKEY => "RDMA_NLDEV_ATTR_RES_LKEY",
            RES_IOVA => "RDMA_NLDEV_ATTR_RES_IOVA",
            RES_MRLEN => "RDMA_NLDEV_ATTR_RES_MRLEN",
            DRIVER => "RDMA_NLDEV_ATTR_DRIVER",
            DRIVER_STRING => "RDMA_NLDEV_ATTR_DRIVER_STRING",
            DRIVER_PRINT_TYPE => "RDMA_NLDEV_ATTR_DRIVER_PRINT_TYPE",
            DRIVER_S32 => "RDMA_NLDEV_ATTR_DRIVER_S32",
            DRIVER_U32 => "RDMA_NLDEV_ATTR_DRIVER_U32",
            DRIVER_S64 => "RDMA_NLDEV_ATTR_DRIVER_S64",
            DRIVER_U64 => "RDMA_NLDEV_ATTR_DRIVER_U64",
            RES_PDN => "RDMA_NLDEV_ATTR_RES_PDN",
            RES_MRN => "RDMA_NLDEV_ATTR_RES_MRN",
            STAT_RES => "RDMA_NLDEV_ATTR_STAT_RES",
            STAT_HWCOUNTERS => "RDMA_NLDEV_ATTR_STAT_HWCOUNTERS",
            STAT_HWCOUNTER_ENTRY => "RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY",
            STAT_HWCOUNTER_ENTRY_NAME => "RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME",
            STAT_HWCOUNTER_ENTRY_VALUE => "RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE",
            _ => "an attribute hostping does not read",
        }
    }
}

/// `RDMA_NLDEV_PRINT_TYPE_HEX`: the driver asks for a value to be shown in hex.
pub const PRINT_TYPE_HEX: u8 = 1;

/// A message that does not hold what the kernel sends. `at` names the input: the reply,
/// the entry and the attribute (`RES_MR_GET reply 2, RDMA_NLDEV_ATTR_RES_MR_ENTRY 3,
/// RDMA_NLDEV_ATTR_RES_MRLEN`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Bytes that do not parse.
    #[error("{at}: {reason}")]
    Malformed {
        /// Where.
        at: String,
        /// What is wrong.
        reason: String,
    },
    /// A required attribute is absent.
    #[error("{at}: no {attr}")]
    Missing {
        /// Where.
        at: String,
        /// The attribute.
        attr: &'static str,
    },
}

impl WireError {
    /// Where the error is.
    pub fn at(&self) -> &str {
        match self {
            WireError::Malformed { at, .. } | WireError::Missing { at, .. } => at,
        }
    }
}

/// One attribute: its type (flags masked off) and value, with typed reads that check the
/// length and name the attribute when it is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attr<'a> {
    /// The type, `NLA_F_NESTED` and `NLA_F_NET_BYTEORDER` masked off.
    pub kind: u16,
    /// The value (without the header or trailing padding).
    pub value: &'a [u8],
}

/// The attributes of `bytes` (a message payload or a nest's value), in order, `PAD`
/// skipped. Stops at the first attribute whose header does not fit, with an error naming
/// `at` and the attribute's position; never panics.
pub fn attrs<'a>(bytes: &'a [u8], at: &str) -> Result<Vec<Attr<'a>>, WireError> {
    let mut out = Vec::new();
    for (i, nla) in NlasIterator::new(bytes).enumerate() {
        let nla: NlaBuffer<&[u8]> = nla.map_err(|e| WireError::Malformed {
            at: format!("{at}, attribute {}", i + 1),
            reason: e.to_string(),
        })?;
        if nla.kind() == attr::PAD {
            continue;
        }
        let (kind, length) = (nla.kind(), usize::from(nla.length()));
        // new_checked made sure NLA_HEADER_SIZE <= length <= the bytes left.
        out.push(Attr {
            kind,
            value: &nla.into_inner()[NLA_HEADER_SIZE..length],
        });
    }
    Ok(out)
}

impl<'a> Attr<'a> {
    fn wrong_size(&self, at: &str, what: &str, want: usize) -> WireError {
        WireError::Malformed {
            at: format!("{at}, {}", attr::name(self.kind)),
            reason: format!("{} bytes, a {what} is {want}", self.value.len()),
        }
    }

    fn fixed<const N: usize>(&self, at: &str, what: &str) -> Result<[u8; N], WireError> {
        self.value
            .try_into()
            .map_err(|_| self.wrong_size(at, what, N))
    }

    /// A u8.
    pub fn u8(&self, at: &str) -> Result<u8, WireError> {
        Ok(self.fixed::<1>(at, "u8")?[0])
    }

    /// A u32, host order.
    pub fn u32(&self, at: &str) -> Result<u32, WireError> {
        Ok(u32::from_ne_bytes(self.fixed(at, "u32")?))
    }

    /// An s32, host order.
    pub fn i32(&self, at: &str) -> Result<i32, WireError> {
        Ok(i32::from_ne_bytes(self.fixed(at, "s32")?))
    }

    /// A u64, host order.
    pub fn u64(&self, at: &str) -> Result<u64, WireError> {
        Ok(u64::from_ne_bytes(self.fixed(at, "u64")?))
    }

    /// An s64, host order.
    pub fn i64(&self, at: &str) -> Result<i64, WireError> {
        Ok(i64::from_ne_bytes(self.fixed(at, "s64")?))
    }

    /// A string (`nla_put_string`: NUL-terminated): up to the first NUL, UTF-8.
    pub fn string(&self, at: &str) -> Result<String, WireError> {
        let end = self
            .value
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(self.value.len());
        std::str::from_utf8(&self.value[..end])
            .map(str::to_string)
            .map_err(|_| WireError::Malformed {
                at: format!("{at}, {}", attr::name(self.kind)),
                reason: format!("not UTF-8: {:02x?}", &self.value[..end]),
            })
    }
}

/// Emits attributes the way the kernel does (`nla_put_*`: header, value, zero padding to 4
/// bytes; nests by `nla_nest_start`/`nla_nest_end`), for requests and for the round trip of
/// the representations.
#[derive(Debug, Default)]
pub struct AttrWriter {
    bytes: Vec<u8>,
}

impl AttrWriter {
    /// An empty writer.
    pub fn new() -> AttrWriter {
        AttrWriter::default()
    }

    /// The bytes written.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// One attribute with `value`. Panics when the attribute would exceed the 16-bit
    /// length (64 KiB; no RDMA attribute comes near).
    pub fn put(&mut self, kind: u16, value: &[u8]) -> &mut Self {
        let start = self.bytes.len();
        let len = NLA_HEADER_SIZE + value.len();
        let len16 = u16::try_from(len).expect("a netlink attribute is under 64 KiB");
        self.bytes
            .resize(start + len.next_multiple_of(NLA_ALIGNTO), 0);
        let mut nla = NlaBuffer::new(&mut self.bytes[start..start + len]);
        nla.set_kind(kind);
        nla.set_length(len16);
        nla.value_mut().copy_from_slice(value);
        self
    }

    /// A u8.
    pub fn u8(&mut self, kind: u16, v: u8) -> &mut Self {
        self.put(kind, &[v])
    }

    /// A u32, host order.
    pub fn u32(&mut self, kind: u16, v: u32) -> &mut Self {
        self.put(kind, &v.to_ne_bytes())
    }

    /// An s32.
    pub fn i32(&mut self, kind: u16, v: i32) -> &mut Self {
        self.put(kind, &v.to_ne_bytes())
    }

    /// A u64 (as `nla_put_u64_64bit` on x86_64: no pad).
    pub fn u64(&mut self, kind: u16, v: u64) -> &mut Self {
        self.put(kind, &v.to_ne_bytes())
    }

    /// An s64.
    pub fn i64(&mut self, kind: u16, v: i64) -> &mut Self {
        self.put(kind, &v.to_ne_bytes())
    }

    /// A string with its NUL, as `nla_put_string`.
    pub fn string(&mut self, kind: u16, s: &str) -> &mut Self {
        let mut v = s.as_bytes().to_vec();
        v.push(0);
        self.put(kind, &v)
    }

    /// A nest holding what `fill` writes, as `nla_nest_start_noflag` (no `NLA_F_NESTED`:
    /// what nldev.c uses for its tables and entries).
    pub fn nest(&mut self, kind: u16, fill: impl FnOnce(&mut AttrWriter)) -> &mut Self {
        let mut inner = AttrWriter::new();
        fill(&mut inner);
        self.put(kind, &inner.bytes)
    }

    /// A nest with `NLA_F_NESTED` set, as `nla_nest_start` (what drivers use).
    pub fn nest_flagged(&mut self, kind: u16, fill: impl FnOnce(&mut AttrWriter)) -> &mut Self {
        let start = self.bytes.len();
        self.nest(kind, fill);
        NlaBuffer::new(&mut self.bytes[start..]).set_nested_flag();
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_types_pack_client_and_operation() {
        assert_eq!(message_type(cmd::RES_MR_GET), 5 * 1024 + 13);
        assert_eq!(op_of(message_type(cmd::STAT_GET)), cmd::STAT_GET);
        assert_eq!(client_of(message_type(cmd::GET)), RDMA_NL_NLDEV);
    }

    #[test]
    fn attributes_are_padded_and_read_back() {
        let mut w = AttrWriter::new();
        w.string(attr::DEV_NAME, "mlx5_0")
            .u32(attr::DEV_INDEX, 3)
            .u64(attr::RES_MRLEN, 1 << 40);
        let bytes = w.into_bytes();
        // "mlx5_0\0" is 7 bytes: 4 + 7 = 11, padded to 12.
        assert_eq!(&bytes[..4], &[11, 0, 2, 0]);
        assert_eq!(bytes.len(), 12 + 8 + 12);
        let list = attrs(&bytes, "test").unwrap();
        assert_eq!(list.len(), 3);
        assert_eq!(list[0].string("t").unwrap(), "mlx5_0");
        assert_eq!(list[1].u32("t").unwrap(), 3);
        assert_eq!(list[2].u64("t").unwrap(), 1 << 40);
        let e = list[1].u64("reply 1").unwrap_err();
        assert_eq!(
            e.to_string(),
            "reply 1, RDMA_NLDEV_ATTR_DEV_INDEX: 4 bytes, a u64 is 8"
        );
    }

    #[test]
    fn pad_attributes_are_skipped_and_flags_masked() {
        // nla_put_u64_64bit on an architecture without efficient unaligned access: a
        // 4-byte PAD first. And a nest with NLA_F_NESTED set (nla_nest_start).
        let mut bytes = vec![4, 0, 0, 0];
        bytes.extend([12, 0, 45, 0]);
        bytes.extend(7u64.to_ne_bytes());
        bytes.extend([4, 0, 52, 0x80]);
        let list = attrs(&bytes, "t").unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].kind, attr::RES_MRLEN);
        assert_eq!(list[1].kind, attr::DRIVER);
        assert!(list[1].value.is_empty());
    }

    #[test]
    fn a_header_past_the_end_names_the_attribute() {
        let e = attrs(&[8, 0, 1, 0, 1, 0], "RES_MR_GET reply 1").unwrap_err();
        assert!(e.at().starts_with("RES_MR_GET reply 1, attribute 1"), "{e}");
    }
}
