//! The Performance Management class (0x04, IBA 16.1): a GMP whose 192 bytes of attribute
//! data start at byte 64 (the 24-byte common header, then 40 reserved bytes), and the
//! attributes a switch-port sampler reads: ClassPortInfo (0x0001, which says whether the
//! 64-bit counters and PortXmitWait exist), PortCounters (0x0012, 32-bit data counters in
//! units of 4 bytes that stop at their maximum) and PortCountersExtended (0x001D, 64-bit).
//! Offsets are those of libibmad's field table (`IB_PC_*`, `IB_PC_EXT_*`, `IB_CPI_*`).

use super::{
    be16, be32, be64, set_be16, set_be32, set_be64, Error, Field, MadHeaderRepr, MadPacket, Method,
    MgmtClass, MAD_LEN,
};

/// PerfMgt attribute ids (IBA 16.1.3, Table 248).
pub mod attr {
    /// ClassPortInfo.
    pub const CLASS_PORT_INFO: u16 = 0x0001;
    /// PortCounters.
    pub const PORT_COUNTERS: u16 = 0x0012;
    /// PortCountersExtended.
    pub const PORT_COUNTERS_EXTENDED: u16 = 0x001d;
}

/// The attribute data of a PerfMgt MAD.
const DATA: Field = 64..256;

/// The attribute data of the PerfMgt MAD in untrusted `bytes`, or why they are not one.
pub fn perf_data(bytes: &[u8]) -> Result<&[u8], Error> {
    let packet = MadPacket::new_checked(bytes)?;
    if packet.mgmt_class() != MgmtClass::Performance {
        return Err(Error::Malformed(
            "not a performance management MAD (class 0x04)",
        ));
    }
    Ok(&bytes[DATA])
}

/// A PerfMgt Get of `attribute_id` for `port` (PortSelect, which ClassPortInfo ignores;
/// perfquery sets it there too).
pub fn get_request(attribute_id: u16, port: u8, transaction_id: u64) -> [u8; MAD_LEN] {
    let mut bytes = [0u8; MAD_LEN];
    MadHeaderRepr {
        mgmt_class: MgmtClass::Performance,
        class_version: 1,
        method: Method::Get,
        status: 0,
        transaction_id,
        attribute_id,
        attribute_modifier: 0,
    }
    .emit(&mut MadPacket::new_unchecked(&mut bytes[..]));
    bytes[DATA.start + counters::PORT_SELECT] = port;
    bytes
}

/// ClassPortInfo of the PerfMgt class (IBA 13.4.8.1, 16.1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassPortInfoRepr {
    /// The class version.
    pub class_version: u8,
    /// CapabilityMask (16 bits; IBA Table 249).
    pub capability_mask: u16,
    /// CapabilityMask2 (27 bits).
    pub capability_mask2: u32,
    /// RespTimeValue: the response time is 4.096 us * 2^value.
    pub resp_time_value: u8,
}

mod class_port_info {
    use super::Field;
    pub const CLASS_VERSION: usize = 1;
    pub const CAPABILITY_MASK: Field = 2..4;
    /// CapabilityMask2 (27 high bits), RespTimeValue (5 low bits).
    pub const CAP2_RESP_TIME: Field = 4..8;
}

impl ClassPortInfoRepr {
    /// PortCounters and PortCountersExtended accept PortSelect 0xFF (all ports).
    pub const ALL_PORT_SELECT: u16 = 1 << 8;
    /// PortCountersExtended is supported, with its unicast and multicast counters.
    pub const EXTENDED_WIDTH: u16 = 1 << 9;
    /// PortCountersExtended is supported, without the unicast and multicast counters.
    pub const EXTENDED_WIDTH_NO_IETF: u16 = 1 << 10;
    /// PortCounters' PortXmitWait counts (else it reads 0).
    pub const PORT_XMIT_WAIT: u16 = 1 << 12;
    /// CapabilityMask2 bit 1, IsAdditionalPortCountersExtendedSupported: PortCountersExtended
    /// also carries the error counters and PortXmitWait ([`ExtendedErrorsRepr`]).
    pub const ADDITIONAL_PORT_COUNTERS_EXTENDED: u32 = 1 << 1;

    /// Reads ClassPortInfo from a PerfMgt MAD's data.
    pub fn parse(data: &[u8]) -> Result<ClassPortInfoRepr, Error> {
        use class_port_info as f;
        let d = data
            .get(..8)
            .ok_or(Error::Malformed("ClassPortInfo is cut short"))?;
        let word = be32(d, f::CAP2_RESP_TIME);
        Ok(ClassPortInfoRepr {
            class_version: d[f::CLASS_VERSION],
            capability_mask: be16(d, f::CAPABILITY_MASK),
            capability_mask2: word >> 5,
            resp_time_value: (word & 0x1f) as u8,
        })
    }

    /// Writes ClassPortInfo into a PerfMgt MAD's data (base version 1).
    pub fn emit(&self, data: &mut [u8]) {
        use class_port_info as f;
        data[0] = 1;
        data[f::CLASS_VERSION] = self.class_version;
        set_be16(data, f::CAPABILITY_MASK, self.capability_mask);
        set_be32(
            data,
            f::CAP2_RESP_TIME,
            (self.capability_mask2 << 5) | u32::from(self.resp_time_value & 0x1f),
        );
    }

    /// The port answers PortCountersExtended (64-bit data counters).
    pub fn has_extended_counters(&self) -> bool {
        self.capability_mask & (Self::EXTENDED_WIDTH | Self::EXTENDED_WIDTH_NO_IETF) != 0
    }

    /// PortXmitWait counts.
    pub fn has_xmit_wait(&self) -> bool {
        self.capability_mask & Self::PORT_XMIT_WAIT != 0
    }

    /// One PortCountersExtended reads a port whole: data, packets, errors and XmitWait.
    pub fn has_extended_errors(&self) -> bool {
        self.has_extended_counters()
            && self.capability_mask2 & Self::ADDITIONAL_PORT_COUNTERS_EXTENDED != 0
    }
}

/// PortCounters (IBA 16.1.3.5, Table 254): 32-bit data counters in 4-byte units and narrow
/// error counters, each of which stops at its maximum instead of wrapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PortCountersRepr {
    /// The port the counters are of.
    pub port_select: u8,
    /// CounterSelect (which counters a Set clears).
    pub counter_select: u16,
    /// SymbolErrorCounter.
    pub symbol_errors: u16,
    /// LinkErrorRecoveryCounter.
    pub link_error_recovery: u8,
    /// LinkDownedCounter.
    pub link_downed: u8,
    /// PortRcvErrors.
    pub rcv_errors: u16,
    /// PortRcvRemotePhysicalErrors.
    pub rcv_remote_physical_errors: u16,
    /// PortRcvSwitchRelayErrors.
    pub rcv_switch_relay_errors: u16,
    /// PortXmitDiscards.
    pub xmit_discards: u16,
    /// PortXmitConstraintErrors.
    pub xmit_constraint_errors: u8,
    /// PortRcvConstraintErrors.
    pub rcv_constraint_errors: u8,
    /// LocalLinkIntegrityErrors (4 bits).
    pub local_link_integrity_errors: u8,
    /// ExcessiveBufferOverrunErrors (4 bits).
    pub excessive_buffer_overrun_errors: u8,
    /// VL15Dropped.
    pub vl15_dropped: u16,
    /// PortXmitData, in units of 4 bytes.
    pub xmit_data_dwords: u32,
    /// PortRcvData, in units of 4 bytes.
    pub rcv_data_dwords: u32,
    /// PortXmitPkts.
    pub xmit_pkts: u32,
    /// PortRcvPkts.
    pub rcv_pkts: u32,
    /// PortXmitWait: ticks the port had data to send but no credits.
    pub xmit_wait: u32,
}

/// Byte offsets within PerfMgt attribute data (PortCounters and the common PortSelect).
mod counters {
    use super::Field;
    pub const PORT_SELECT: usize = 1;
    pub const COUNTER_SELECT: Field = 2..4;
    pub const SYMBOL_ERRORS: Field = 4..6;
    pub const LINK_ERROR_RECOVERY: usize = 6;
    pub const LINK_DOWNED: usize = 7;
    pub const RCV_ERRORS: Field = 8..10;
    pub const RCV_REMOTE_PHYSICAL_ERRORS: Field = 10..12;
    pub const RCV_SWITCH_RELAY_ERRORS: Field = 12..14;
    pub const XMIT_DISCARDS: Field = 14..16;
    pub const XMIT_CONSTRAINT_ERRORS: usize = 16;
    pub const RCV_CONSTRAINT_ERRORS: usize = 17;
    /// LocalLinkIntegrityErrors (high nibble), ExcessiveBufferOverrunErrors (low nibble).
    pub const LINK_INTEGRITY_OVERRUN: usize = 19;
    pub const VL15_DROPPED: Field = 22..24;
    pub const XMIT_DATA: Field = 24..28;
    pub const RCV_DATA: Field = 28..32;
    pub const XMIT_PKTS: Field = 32..36;
    pub const RCV_PKTS: Field = 36..40;
    pub const XMIT_WAIT: Field = 40..44;
}

impl PortCountersRepr {
    /// Reads PortCounters from a PerfMgt MAD's data.
    pub fn parse(data: &[u8]) -> Result<PortCountersRepr, Error> {
        use counters as f;
        let d = data
            .get(..44)
            .ok_or(Error::Malformed("PortCounters is cut short"))?;
        Ok(PortCountersRepr {
            port_select: d[f::PORT_SELECT],
            counter_select: be16(d, f::COUNTER_SELECT),
            symbol_errors: be16(d, f::SYMBOL_ERRORS),
            link_error_recovery: d[f::LINK_ERROR_RECOVERY],
            link_downed: d[f::LINK_DOWNED],
            rcv_errors: be16(d, f::RCV_ERRORS),
            rcv_remote_physical_errors: be16(d, f::RCV_REMOTE_PHYSICAL_ERRORS),
            rcv_switch_relay_errors: be16(d, f::RCV_SWITCH_RELAY_ERRORS),
            xmit_discards: be16(d, f::XMIT_DISCARDS),
            xmit_constraint_errors: d[f::XMIT_CONSTRAINT_ERRORS],
            rcv_constraint_errors: d[f::RCV_CONSTRAINT_ERRORS],
            local_link_integrity_errors: d[f::LINK_INTEGRITY_OVERRUN] >> 4,
            excessive_buffer_overrun_errors: d[f::LINK_INTEGRITY_OVERRUN] & 0x0f,
            vl15_dropped: be16(d, f::VL15_DROPPED),
            xmit_data_dwords: be32(d, f::XMIT_DATA),
            rcv_data_dwords: be32(d, f::RCV_DATA),
            xmit_pkts: be32(d, f::XMIT_PKTS),
            rcv_pkts: be32(d, f::RCV_PKTS),
            xmit_wait: be32(d, f::XMIT_WAIT),
        })
    }

    /// Writes PortCounters into a PerfMgt MAD's data.
    pub fn emit(&self, data: &mut [u8]) {
        use counters as f;
        data[f::PORT_SELECT] = self.port_select;
        set_be16(data, f::COUNTER_SELECT, self.counter_select);
        set_be16(data, f::SYMBOL_ERRORS, self.symbol_errors);
        data[f::LINK_ERROR_RECOVERY] = self.link_error_recovery;
        data[f::LINK_DOWNED] = self.link_downed;
        set_be16(data, f::RCV_ERRORS, self.rcv_errors);
        set_be16(
            data,
            f::RCV_REMOTE_PHYSICAL_ERRORS,
            self.rcv_remote_physical_errors,
        );
        set_be16(
            data,
            f::RCV_SWITCH_RELAY_ERRORS,
            self.rcv_switch_relay_errors,
        );
        set_be16(data, f::XMIT_DISCARDS, self.xmit_discards);
        data[f::XMIT_CONSTRAINT_ERRORS] = self.xmit_constraint_errors;
        data[f::RCV_CONSTRAINT_ERRORS] = self.rcv_constraint_errors;
        data[f::LINK_INTEGRITY_OVERRUN] =
            (self.local_link_integrity_errors << 4) | (self.excessive_buffer_overrun_errors & 0x0f);
        set_be16(data, f::VL15_DROPPED, self.vl15_dropped);
        set_be32(data, f::XMIT_DATA, self.xmit_data_dwords);
        set_be32(data, f::RCV_DATA, self.rcv_data_dwords);
        set_be32(data, f::XMIT_PKTS, self.xmit_pkts);
        set_be32(data, f::RCV_PKTS, self.rcv_pkts);
        set_be32(data, f::XMIT_WAIT, self.xmit_wait);
    }

    /// Data and packet counters that have stopped at their 32-bit maximum (IBA 16.1.3.5:
    /// counters "stop" rather than wrap): their deltas are no longer true, by name.
    pub fn saturated(&self) -> Vec<&'static str> {
        [
            ("xmit_data", self.xmit_data_dwords),
            ("rcv_data", self.rcv_data_dwords),
            ("xmit_pkts", self.xmit_pkts),
            ("rcv_pkts", self.rcv_pkts),
            ("xmit_wait", self.xmit_wait),
        ]
        .into_iter()
        .filter(|(_, v)| *v == u32::MAX)
        .map(|(name, _)| name)
        .collect()
    }
}

/// PortCountersExtended (IBA 16.1.4.9, Table 268): 64-bit data counters in 4-byte units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PortCountersExtendedRepr {
    /// The port the counters are of.
    pub port_select: u8,
    /// CounterSelect.
    pub counter_select: u16,
    /// PortXmitData, in units of 4 bytes.
    pub xmit_data_dwords: u64,
    /// PortRcvData, in units of 4 bytes.
    pub rcv_data_dwords: u64,
    /// PortXmitPkts.
    pub xmit_pkts: u64,
    /// PortRcvPkts.
    pub rcv_pkts: u64,
    /// PortUnicastXmitPkts (valid with ClassPortInfo's EXTENDED_WIDTH).
    pub unicast_xmit_pkts: u64,
    /// PortUnicastRcvPkts.
    pub unicast_rcv_pkts: u64,
    /// PortMulticastXmitPkts.
    pub multicast_xmit_pkts: u64,
    /// PortMulticastRcvPkts.
    pub multicast_rcv_pkts: u64,
}

mod extended {
    use super::Field;
    pub const XMIT_DATA: Field = 8..16;
    pub const RCV_DATA: Field = 16..24;
    pub const XMIT_PKTS: Field = 24..32;
    pub const RCV_PKTS: Field = 32..40;
    pub const UNICAST_XMIT_PKTS: Field = 40..48;
    pub const UNICAST_RCV_PKTS: Field = 48..56;
    pub const MULTICAST_XMIT_PKTS: Field = 56..64;
    pub const MULTICAST_RCV_PKTS: Field = 64..72;
}

impl PortCountersExtendedRepr {
    /// Reads PortCountersExtended from a PerfMgt MAD's data.
    pub fn parse(data: &[u8]) -> Result<PortCountersExtendedRepr, Error> {
        use extended as f;
        let d = data
            .get(..72)
            .ok_or(Error::Malformed("PortCountersExtended is cut short"))?;
        Ok(PortCountersExtendedRepr {
            port_select: d[counters::PORT_SELECT],
            counter_select: be16(d, counters::COUNTER_SELECT),
            xmit_data_dwords: be64(d, f::XMIT_DATA),
            rcv_data_dwords: be64(d, f::RCV_DATA),
            xmit_pkts: be64(d, f::XMIT_PKTS),
            rcv_pkts: be64(d, f::RCV_PKTS),
            unicast_xmit_pkts: be64(d, f::UNICAST_XMIT_PKTS),
            unicast_rcv_pkts: be64(d, f::UNICAST_RCV_PKTS),
            multicast_xmit_pkts: be64(d, f::MULTICAST_XMIT_PKTS),
            multicast_rcv_pkts: be64(d, f::MULTICAST_RCV_PKTS),
        })
    }

    /// Writes PortCountersExtended into a PerfMgt MAD's data.
    pub fn emit(&self, data: &mut [u8]) {
        use extended as f;
        data[counters::PORT_SELECT] = self.port_select;
        set_be16(data, counters::COUNTER_SELECT, self.counter_select);
        set_be64(data, f::XMIT_DATA, self.xmit_data_dwords);
        set_be64(data, f::RCV_DATA, self.rcv_data_dwords);
        set_be64(data, f::XMIT_PKTS, self.xmit_pkts);
        set_be64(data, f::RCV_PKTS, self.rcv_pkts);
        set_be64(data, f::UNICAST_XMIT_PKTS, self.unicast_xmit_pkts);
        set_be64(data, f::UNICAST_RCV_PKTS, self.unicast_rcv_pkts);
        set_be64(data, f::MULTICAST_XMIT_PKTS, self.multicast_xmit_pkts);
        set_be64(data, f::MULTICAST_RCV_PKTS, self.multicast_rcv_pkts);
    }
}

/// The additional counters of PortCountersExtended, after its data counters (IBA 1.3,
/// Table 268; valid only where ClassPortInfo sets [`ClassPortInfoRepr::ADDITIONAL_PORT_COUNTERS_EXTENDED`],
/// zero elsewhere): the error counters and PortXmitWait at 64 bits, in libibmad's order
/// (`IB_PC_EXT_ERR_SYM_F` .. `IB_PC_EXT_QP1_DROP_F`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExtendedErrorsRepr {
    /// SymbolErrorCounter.
    pub symbol_errors: u64,
    /// LinkErrorRecoveryCounter.
    pub link_error_recovery: u64,
    /// LinkDownedCounter.
    pub link_downed: u64,
    /// PortRcvErrors.
    pub rcv_errors: u64,
    /// PortRcvRemotePhysicalErrors.
    pub rcv_remote_physical_errors: u64,
    /// PortRcvSwitchRelayErrors.
    pub rcv_switch_relay_errors: u64,
    /// PortXmitDiscards.
    pub xmit_discards: u64,
    /// PortXmitConstraintErrors.
    pub xmit_constraint_errors: u64,
    /// PortRcvConstraintErrors.
    pub rcv_constraint_errors: u64,
    /// LocalLinkIntegrityErrors.
    pub local_link_integrity_errors: u64,
    /// ExcessiveBufferOverrunErrors.
    pub excessive_buffer_overrun_errors: u64,
    /// VL15Dropped.
    pub vl15_dropped: u64,
    /// PortXmitWait.
    pub xmit_wait: u64,
    /// QP1Dropped.
    pub qp1_dropped: u64,
}

mod extended_errors {
    use super::Field;
    pub const SYMBOL_ERRORS: Field = 72..80;
    pub const LINK_ERROR_RECOVERY: Field = 80..88;
    pub const LINK_DOWNED: Field = 88..96;
    pub const RCV_ERRORS: Field = 96..104;
    pub const RCV_REMOTE_PHYSICAL_ERRORS: Field = 104..112;
    pub const RCV_SWITCH_RELAY_ERRORS: Field = 112..120;
    pub const XMIT_DISCARDS: Field = 120..128;
    pub const XMIT_CONSTRAINT_ERRORS: Field = 128..136;
    pub const RCV_CONSTRAINT_ERRORS: Field = 136..144;
    pub const LOCAL_LINK_INTEGRITY_ERRORS: Field = 144..152;
    pub const EXCESSIVE_BUFFER_OVERRUN_ERRORS: Field = 152..160;
    pub const VL15_DROPPED: Field = 160..168;
    pub const XMIT_WAIT: Field = 168..176;
    pub const QP1_DROPPED: Field = 176..184;
}

impl ExtendedErrorsRepr {
    /// Reads the additional counters from a PortCountersExtended MAD's data.
    pub fn parse(data: &[u8]) -> Result<ExtendedErrorsRepr, Error> {
        use extended_errors as f;
        let d = data.get(..184).ok_or(Error::Malformed(
            "PortCountersExtended's additional counters are cut short",
        ))?;
        Ok(ExtendedErrorsRepr {
            symbol_errors: be64(d, f::SYMBOL_ERRORS),
            link_error_recovery: be64(d, f::LINK_ERROR_RECOVERY),
            link_downed: be64(d, f::LINK_DOWNED),
            rcv_errors: be64(d, f::RCV_ERRORS),
            rcv_remote_physical_errors: be64(d, f::RCV_REMOTE_PHYSICAL_ERRORS),
            rcv_switch_relay_errors: be64(d, f::RCV_SWITCH_RELAY_ERRORS),
            xmit_discards: be64(d, f::XMIT_DISCARDS),
            xmit_constraint_errors: be64(d, f::XMIT_CONSTRAINT_ERRORS),
            rcv_constraint_errors: be64(d, f::RCV_CONSTRAINT_ERRORS),
            local_link_integrity_errors: be64(d, f::LOCAL_LINK_INTEGRITY_ERRORS),
            excessive_buffer_overrun_errors: be64(d, f::EXCESSIVE_BUFFER_OVERRUN_ERRORS),
            vl15_dropped: be64(d, f::VL15_DROPPED),
            xmit_wait: be64(d, f::XMIT_WAIT),
            qp1_dropped: be64(d, f::QP1_DROPPED),
        })
    }

    /// Writes the additional counters into a PortCountersExtended MAD's data.
    pub fn emit(&self, data: &mut [u8]) {
        use extended_errors as f;
        set_be64(data, f::SYMBOL_ERRORS, self.symbol_errors);
        set_be64(data, f::LINK_ERROR_RECOVERY, self.link_error_recovery);
        set_be64(data, f::LINK_DOWNED, self.link_downed);
        set_be64(data, f::RCV_ERRORS, self.rcv_errors);
        set_be64(
            data,
            f::RCV_REMOTE_PHYSICAL_ERRORS,
            self.rcv_remote_physical_errors,
        );
        set_be64(
            data,
            f::RCV_SWITCH_RELAY_ERRORS,
            self.rcv_switch_relay_errors,
        );
        set_be64(data, f::XMIT_DISCARDS, self.xmit_discards);
        set_be64(data, f::XMIT_CONSTRAINT_ERRORS, self.xmit_constraint_errors);
        set_be64(data, f::RCV_CONSTRAINT_ERRORS, self.rcv_constraint_errors);
        set_be64(
            data,
            f::LOCAL_LINK_INTEGRITY_ERRORS,
            self.local_link_integrity_errors,
        );
        set_be64(
            data,
            f::EXCESSIVE_BUFFER_OVERRUN_ERRORS,
            self.excessive_buffer_overrun_errors,
        );
        set_be64(data, f::VL15_DROPPED, self.vl15_dropped);
        set_be64(data, f::XMIT_WAIT, self.xmit_wait);
        set_be64(data, f::QP1_DROPPED, self.qp1_dropped);
    }
}

/// Data counters count 4-byte words (IBA 16.1.3.5: "divided by 4"): bytes, saturating.
pub fn dwords_to_bytes(dwords: u64) -> u64 {
    dwords.saturating_mul(4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mad::fixture;
    use proptest::prelude::*;

    fn data_of(name: &str) -> Vec<u8> {
        let bytes = fixture(name);
        perf_data(&bytes[..]).unwrap().to_vec()
    }

    #[test]
    fn requests_are_rebuilt_byte_for_byte() {
        for (name, attribute) in [
            ("perf-classportinfo-request.hex", attr::CLASS_PORT_INFO),
            ("perf-portcounters-request.hex", attr::PORT_COUNTERS),
            (
                "perf-portcounters-ext-request.hex",
                attr::PORT_COUNTERS_EXTENDED,
            ),
        ] {
            let captured = fixture(name);
            let tid = MadPacket::new_checked(&captured[..])
                .unwrap()
                .transaction_id();
            assert_eq!(&get_request(attribute, 7, tid)[..], &captured[..], "{name}");
        }
    }

    #[test]
    fn class_port_info_of_an_ibsim_switch() {
        let c = ClassPortInfoRepr::parse(&data_of("perf-classportinfo-response.hex")).unwrap();
        // perfquery printed "CapMask: 0x1300": AllPortSelect, ExtendedWidth, PortXmitWait.
        assert_eq!(c.capability_mask, 0x1300);
        assert_eq!(c.class_version, 1);
        assert_eq!(c.capability_mask2, 0);
        assert_eq!(c.resp_time_value, 18);
        assert!(c.has_extended_counters());
        assert!(c.has_xmit_wait());
        assert!(
            !c.has_extended_errors(),
            "ibsim lacks the additional counters"
        );
        // (ibsim leaves stray bytes past the attribute's 72 bytes: compare those only)
        let mut data = vec![0u8; 72];
        c.emit(&mut data);
        assert_eq!(&data[..], &data_of("perf-classportinfo-response.hex")[..72]);
    }

    #[test]
    fn port_counters_hold_what_ibsims_console_set() {
        // capture-mads.sh set SymbolErrorCounter=7, LinkDownedCounter=2, PortXmitWait=1234
        // on leaf-a port 7; the data counters moved with the MAD traffic itself.
        let data = data_of("perf-portcounters-response.hex");
        let c = PortCountersRepr::parse(&data).unwrap();
        assert_eq!(c.port_select, 7);
        assert_eq!(c.counter_select, 0);
        assert_eq!(c.symbol_errors, 7);
        assert_eq!(c.link_error_recovery, 0);
        assert_eq!(c.link_downed, 2);
        assert_eq!(c.rcv_errors, 0);
        assert_eq!(c.xmit_discards, 0);
        assert_eq!(c.vl15_dropped, 0);
        assert_eq!(c.xmit_wait, 1234);
        assert!(c.xmit_data_dwords > 0 && c.xmit_pkts > 0, "{c:?}");
        assert_eq!(
            c.xmit_data_dwords, c.rcv_data_dwords,
            "the two links carry the same MADs both ways"
        );
        assert!(c.saturated().is_empty());
        let mut out = vec![0u8; 44];
        c.emit(&mut out);
        assert_eq!(&out[..], &data[..44]);
    }

    #[test]
    fn extended_counters_agree_with_the_narrow_ones() {
        let e = PortCountersExtendedRepr::parse(&data_of("perf-portcounters-ext-response.hex"))
            .unwrap();
        assert_eq!(e.port_select, 7);
        assert!(e.xmit_data_dwords > 0);
        assert_eq!(e.xmit_data_dwords, e.rcv_data_dwords);
        assert_eq!(e.xmit_pkts, e.rcv_pkts);
        assert_eq!(dwords_to_bytes(e.xmit_data_dwords), 4 * e.xmit_data_dwords);
        let mut out = vec![0u8; 72];
        e.emit(&mut out);
        assert_eq!(
            &out[..],
            &data_of("perf-portcounters-ext-response.hex")[..72]
        );
    }

    #[test]
    fn additional_counters_sit_where_libibmad_reads_them() {
        // libibmad's fields.c: IB_PC_EXT_ERR_SYM_F at bit 576, IB_PC_EXT_XMT_WAIT_F at bit
        // 1344, IB_PC_EXT_QP1_DROP_F at bit 1408, each 64 bits wide.
        let mut data = [0u8; 192];
        data[576 / 8..576 / 8 + 8].copy_from_slice(&3u64.to_be_bytes());
        data[1344 / 8..1344 / 8 + 8].copy_from_slice(&(7u64 << 40).to_be_bytes());
        data[1408 / 8..1408 / 8 + 8].copy_from_slice(&9u64.to_be_bytes());
        let e = ExtendedErrorsRepr::parse(&data).unwrap();
        assert_eq!(
            (e.symbol_errors, e.xmit_wait, e.qp1_dropped),
            (3, 7 << 40, 9)
        );
        assert_eq!(e.link_downed, 0);
    }

    #[test]
    fn a_counter_at_its_maximum_is_named_saturated() {
        let mut data = data_of("perf-portcounters-response.hex");
        data[24..28].copy_from_slice(&u32::MAX.to_be_bytes());
        data[40..44].copy_from_slice(&u32::MAX.to_be_bytes());
        let c = PortCountersRepr::parse(&data).unwrap();
        assert_eq!(c.saturated(), ["xmit_data", "xmit_wait"]);
        assert_eq!(dwords_to_bytes(u64::MAX), u64::MAX);
    }

    #[test]
    fn an_smp_is_not_read_as_perf_data() {
        let smp = fixture("smp-dr-portinfo-response.hex");
        assert!(matches!(perf_data(&smp[..]), Err(Error::Malformed(_))));
        assert!(PortCountersRepr::parse(&[0u8; 43]).is_err());
        assert!(PortCountersExtendedRepr::parse(&[0u8; 71]).is_err());
        assert!(ClassPortInfoRepr::parse(&[0u8; 7]).is_err());
        assert!(ExtendedErrorsRepr::parse(&[0u8; 183]).is_err());
    }

    proptest! {
        #[test]
        fn port_counters_round_trip(
            narrow in any::<(u8, u16, u16, u8, u8, u16)>(),
            errors in any::<(u16, u16, u16, u8, u8, u16)>(),
            nibbles in (0u8..16, 0u8..16),
            wide in any::<(u32, u32, u32, u32, u32)>(),
        ) {
            let c = PortCountersRepr {
                port_select: narrow.0,
                counter_select: narrow.1,
                symbol_errors: narrow.2,
                link_error_recovery: narrow.3,
                link_downed: narrow.4,
                rcv_errors: narrow.5,
                rcv_remote_physical_errors: errors.0,
                rcv_switch_relay_errors: errors.1,
                xmit_discards: errors.2,
                xmit_constraint_errors: errors.3,
                rcv_constraint_errors: errors.4,
                local_link_integrity_errors: nibbles.0,
                excessive_buffer_overrun_errors: nibbles.1,
                vl15_dropped: errors.5,
                xmit_data_dwords: wide.0,
                rcv_data_dwords: wide.1,
                xmit_pkts: wide.2,
                rcv_pkts: wide.3,
                xmit_wait: wide.4,
            };
            let mut data = [0u8; 192];
            c.emit(&mut data);
            prop_assert_eq!(PortCountersRepr::parse(&data).unwrap(), c);
        }

        #[test]
        fn extended_counters_round_trip(v in any::<[u64; 8]>(), port in any::<u8>()) {
            let e = PortCountersExtendedRepr {
                port_select: port,
                counter_select: 0,
                xmit_data_dwords: v[0],
                rcv_data_dwords: v[1],
                xmit_pkts: v[2],
                rcv_pkts: v[3],
                unicast_xmit_pkts: v[4],
                unicast_rcv_pkts: v[5],
                multicast_xmit_pkts: v[6],
                multicast_rcv_pkts: v[7],
            };
            let mut data = [0u8; 192];
            e.emit(&mut data);
            prop_assert_eq!(PortCountersExtendedRepr::parse(&data).unwrap(), e);
        }

        #[test]
        fn extended_errors_round_trip_beside_the_data_counters(
            v in any::<[u64; 14]>(),
            data_counters in any::<[u64; 8]>(),
        ) {
            let e = ExtendedErrorsRepr {
                symbol_errors: v[0],
                link_error_recovery: v[1],
                link_downed: v[2],
                rcv_errors: v[3],
                rcv_remote_physical_errors: v[4],
                rcv_switch_relay_errors: v[5],
                xmit_discards: v[6],
                xmit_constraint_errors: v[7],
                rcv_constraint_errors: v[8],
                local_link_integrity_errors: v[9],
                excessive_buffer_overrun_errors: v[10],
                vl15_dropped: v[11],
                xmit_wait: v[12],
                qp1_dropped: v[13],
            };
            let w = PortCountersExtendedRepr {
                xmit_data_dwords: data_counters[0],
                multicast_rcv_pkts: data_counters[7],
                ..Default::default()
            };
            let mut data = [0u8; 192];
            w.emit(&mut data);
            e.emit(&mut data);
            prop_assert_eq!(ExtendedErrorsRepr::parse(&data).unwrap(), e);
            prop_assert_eq!(PortCountersExtendedRepr::parse(&data).unwrap(), w);
        }

        #[test]
        fn any_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            if let Ok(d) = perf_data(&bytes[..]) {
                let _ = ClassPortInfoRepr::parse(d).unwrap().has_extended_counters();
                let _ = PortCountersRepr::parse(d).unwrap().saturated();
                let _ = PortCountersExtendedRepr::parse(d).unwrap();
                let _ = ExtendedErrorsRepr::parse(d).unwrap();
            }
        }
    }
}
