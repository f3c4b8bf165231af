//! Subnet management packets (IBA 14.2.1): LID-routed (class 0x01) and directed-route (class
//! 0x81, 14.2.2), and the attributes fabric discovery reads: NodeDescription (0x0010),
//! NodeInfo (0x0011), SwitchInfo (0x0012) and PortInfo (0x0015), and the one a route walk
//! reads: LinearForwardingTable (0x0019). Offsets are IBA's, as
//! libibmad's field table (`libibmad/fields.c`) decodes them; bit fields inside a byte count
//! from its most significant bit, as the spec draws them.

use super::{
    be16, be32, be64, enum_with_unknown, set_be16, set_be32, set_be64, Error, Field, MadHeaderRepr,
    MadPacket, Method, MgmtClass, MAD_LEN,
};

/// SMP attribute ids (IBA 14.2.5, Table 145).
pub mod attr {
    /// NodeDescription.
    pub const NODE_DESCRIPTION: u16 = 0x0010;
    /// NodeInfo.
    pub const NODE_INFO: u16 = 0x0011;
    /// SwitchInfo.
    pub const SWITCH_INFO: u16 = 0x0012;
    /// PortInfo (the modifier is the port number).
    pub const PORT_INFO: u16 = 0x0015;
    /// LinearForwardingTable (the modifier is the block number).
    pub const LINEAR_FORWARDING_TABLE: u16 = 0x0019;
}

/// The SMP layout (IBA 14.2.1.1 and 14.2.1.2, Figures 159 and 160).
mod field {
    use super::Field;
    /// Directed route: bit 15 of the status word is the direction (1: returning).
    pub const DR_STATUS: Field = 4..6;
    pub const DR_HOP_POINTER: usize = 6;
    pub const DR_HOP_COUNT: usize = 7;
    pub const M_KEY: Field = 24..32;
    pub const DR_SLID: Field = 32..34;
    pub const DR_DLID: Field = 34..36;
    pub const DATA: Field = 64..128;
    pub const INITIAL_PATH: Field = 128..192;
    pub const RETURN_PATH: Field = 192..256;
}

/// The permissive LID: a directed-route SMP's DrSLID and DrDLID when the whole route is
/// directed (14.2.2.1).
pub const PERMISSIVE_LID: u16 = 0xffff;

/// The longest directed route: 63 hops (the path arrays have 64 entries, entry 0 unused).
pub const MAX_HOPS: usize = 63;

/// A view of an SMP over a buffer.
#[derive(Debug, Clone)]
pub struct SmpPacket<T: AsRef<[u8]>> {
    mad: MadPacket<T>,
}

impl<T: AsRef<[u8]>> SmpPacket<T> {
    /// Wraps `buffer` without checking it.
    pub fn new_unchecked(buffer: T) -> SmpPacket<T> {
        SmpPacket {
            mad: MadPacket::new_unchecked(buffer),
        }
    }

    /// Wraps untrusted `buffer`: a whole MAD of class 0x01 or 0x81 whose hop count fits the
    /// path arrays.
    pub fn new_checked(buffer: T) -> Result<SmpPacket<T>, Error> {
        let p = SmpPacket::new_unchecked(buffer);
        p.check()?;
        Ok(p)
    }

    fn check(&self) -> Result<(), Error> {
        self.mad.check_len()?;
        match self.mad.mgmt_class() {
            MgmtClass::SubnLid => Ok(()),
            MgmtClass::SubnDirectedRoute if usize::from(self.hop_count()) <= MAX_HOPS => Ok(()),
            MgmtClass::SubnDirectedRoute => {
                Err(Error::Malformed("directed route longer than 63 hops"))
            }
            _ => Err(Error::Malformed(
                "not a subnet management class (0x01 or 0x81)",
            )),
        }
    }

    /// The common header.
    pub fn mad(&self) -> &MadPacket<T> {
        &self.mad
    }

    fn bytes(&self) -> &[u8] {
        self.mad.as_bytes()
    }

    /// Directed route: the SMP is on its way back (the D bit).
    pub fn is_returning(&self) -> bool {
        be16(self.bytes(), field::DR_STATUS) & 0x8000 != 0
    }

    /// The status without a directed route's direction bit.
    pub fn status(&self) -> u16 {
        let word = self.mad.status();
        if self.mad.mgmt_class() == MgmtClass::SubnDirectedRoute {
            word & 0x7fff
        } else {
            word
        }
    }

    /// Directed route: the hop being taken.
    pub fn hop_pointer(&self) -> u8 {
        self.bytes()[field::DR_HOP_POINTER]
    }

    /// Directed route: the number of hops.
    pub fn hop_count(&self) -> u8 {
        self.bytes()[field::DR_HOP_COUNT]
    }

    /// The management key.
    pub fn m_key(&self) -> u64 {
        be64(self.bytes(), field::M_KEY)
    }

    /// Directed route: the source LID of the LID-routed part.
    pub fn dr_slid(&self) -> u16 {
        be16(self.bytes(), field::DR_SLID)
    }

    /// Directed route: the destination LID of the LID-routed part.
    pub fn dr_dlid(&self) -> u16 {
        be16(self.bytes(), field::DR_DLID)
    }

    /// The 64 bytes of attribute data.
    pub fn data(&self) -> &[u8] {
        &self.bytes()[field::DATA]
    }

    /// Directed route: the out ports of the way there, hops 1..=hop count.
    pub fn initial_path(&self) -> &[u8] {
        let n = usize::from(self.hop_count()).min(MAX_HOPS);
        &self.bytes()[field::INITIAL_PATH][1..=n]
    }

    /// Directed route: the ports of the way back, filled in by the switches.
    pub fn return_path(&self) -> &[u8] {
        let n = usize::from(self.hop_count()).min(MAX_HOPS);
        &self.bytes()[field::RETURN_PATH][1..=n]
    }
}

/// How an SMP reaches its node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// LID-routed (class 0x01): the LID is the address of the umad send, not in the MAD.
    Lid,
    /// Directed route (class 0x81) out of these ports, one per hop; empty for the local
    /// node. Both LIDs permissive.
    Directed(Vec<u8>),
}

/// An SMP request: a Get of one attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmpRequest {
    /// How it travels.
    pub route: Route,
    /// The attribute id ([`attr`]).
    pub attribute_id: u16,
    /// The attribute modifier (PortInfo: the port).
    pub attribute_modifier: u32,
    /// The transaction id.
    pub transaction_id: u64,
}

impl SmpRequest {
    /// The 256 bytes of the request; a directed route over 63 hops is refused.
    pub fn emit(&self) -> Result<[u8; MAD_LEN], Error> {
        let mut bytes = [0u8; MAD_LEN];
        let class = match &self.route {
            Route::Lid => MgmtClass::SubnLid,
            Route::Directed(path) if path.len() > MAX_HOPS => {
                return Err(Error::Malformed("directed route longer than 63 hops"))
            }
            Route::Directed(_) => MgmtClass::SubnDirectedRoute,
        };
        MadHeaderRepr {
            mgmt_class: class,
            class_version: 1,
            method: Method::Get,
            status: 0,
            transaction_id: self.transaction_id,
            attribute_id: self.attribute_id,
            attribute_modifier: self.attribute_modifier,
        }
        .emit(&mut MadPacket::new_unchecked(&mut bytes[..]));
        if let Route::Directed(path) = &self.route {
            bytes[field::DR_HOP_POINTER] = 0;
            bytes[field::DR_HOP_COUNT] = path.len() as u8;
            set_be16(&mut bytes, field::DR_SLID, PERMISSIVE_LID);
            set_be16(&mut bytes, field::DR_DLID, PERMISSIVE_LID);
            let start = field::INITIAL_PATH.start + 1;
            bytes[start..start + path.len()].copy_from_slice(path);
        }
        Ok(bytes)
    }
}

enum_with_unknown! {
    /// NodeInfo's NodeType.
    pub enum NodeType(u8) {
        /// A channel adapter (an HCA).
        Ca = 1,
        /// A switch.
        Switch = 2,
        /// A router.
        Router = 3,
    }
}

/// NodeInfo (IBA 14.2.5.3, Table 147).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeInfoRepr {
    /// CA, switch or router.
    pub node_type: NodeType,
    /// Physical ports (a switch's port 0 not counted).
    pub num_ports: u8,
    /// The system image GUID.
    pub system_image_guid: u64,
    /// The node GUID.
    pub node_guid: u64,
    /// The GUID of the port the SMP came in through (a switch's port 0).
    pub port_guid: u64,
    /// Partition table entries per port.
    pub partition_cap: u16,
    /// Device id.
    pub device_id: u16,
    /// Device revision.
    pub revision: u32,
    /// The port the SMP came in through.
    pub local_port: u8,
    /// IEEE OUI of the vendor (24 bits).
    pub vendor_id: u32,
}

mod node_info {
    use super::Field;
    pub const BASE_VERSION: usize = 0;
    pub const CLASS_VERSION: usize = 1;
    pub const NODE_TYPE: usize = 2;
    pub const NUM_PORTS: usize = 3;
    pub const SYSTEM_IMAGE_GUID: Field = 4..12;
    pub const NODE_GUID: Field = 12..20;
    pub const PORT_GUID: Field = 20..28;
    pub const PARTITION_CAP: Field = 28..30;
    pub const DEVICE_ID: Field = 30..32;
    pub const REVISION: Field = 32..36;
    pub const LOCAL_PORT: usize = 36;
    pub const VENDOR_ID: Field = 37..40;
}

impl NodeInfoRepr {
    /// Reads NodeInfo from an SMP's data.
    pub fn parse(data: &[u8]) -> Result<NodeInfoRepr, Error> {
        use node_info as f;
        let d = attribute_data(data)?;
        let mut vendor = [0u8; 4];
        vendor[1..].copy_from_slice(&d[f::VENDOR_ID]);
        Ok(NodeInfoRepr {
            node_type: NodeType::from(d[f::NODE_TYPE]),
            num_ports: d[f::NUM_PORTS],
            system_image_guid: be64(d, f::SYSTEM_IMAGE_GUID),
            node_guid: be64(d, f::NODE_GUID),
            port_guid: be64(d, f::PORT_GUID),
            partition_cap: be16(d, f::PARTITION_CAP),
            device_id: be16(d, f::DEVICE_ID),
            revision: be32(d, f::REVISION),
            local_port: d[f::LOCAL_PORT],
            vendor_id: u32::from_be_bytes(vendor),
        })
    }

    /// Writes NodeInfo into an SMP's 64 data bytes (base and class version 1).
    pub fn emit(&self, data: &mut [u8]) {
        use node_info as f;
        data[f::BASE_VERSION] = 1;
        data[f::CLASS_VERSION] = 1;
        data[f::NODE_TYPE] = self.node_type.into();
        data[f::NUM_PORTS] = self.num_ports;
        set_be64(data, f::SYSTEM_IMAGE_GUID, self.system_image_guid);
        set_be64(data, f::NODE_GUID, self.node_guid);
        set_be64(data, f::PORT_GUID, self.port_guid);
        set_be16(data, f::PARTITION_CAP, self.partition_cap);
        set_be16(data, f::DEVICE_ID, self.device_id);
        set_be32(data, f::REVISION, self.revision);
        data[f::LOCAL_PORT] = self.local_port;
        data[f::VENDOR_ID].copy_from_slice(&self.vendor_id.to_be_bytes()[1..]);
    }
}

/// SMP attribute data is 64 bytes.
fn attribute_data(data: &[u8]) -> Result<&[u8], Error> {
    data.get(..64)
        .ok_or(Error::Malformed("SMP attribute data is 64 bytes"))
}

/// NodeDescription (14.2.5.2): up to 64 bytes of UTF-8, NUL-padded. Bytes that are not
/// UTF-8 are replaced, not refused (a switch's description is free text).
pub fn node_description(data: &[u8]) -> Result<String, Error> {
    let d = attribute_data(data)?;
    let end = d.iter().position(|&b| b == 0).unwrap_or(d.len());
    Ok(String::from_utf8_lossy(&d[..end]).into_owned())
}

/// Writes a NodeDescription (cut at 64 bytes, NUL-padded).
pub fn emit_node_description(text: &str, data: &mut [u8]) {
    let bytes = text.as_bytes();
    let n = bytes.len().min(64);
    data[..64].fill(0);
    data[..n].copy_from_slice(&bytes[..n]);
}

/// A port's logical state (PortInfo PortState).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortState {
    /// Down (1).
    Down,
    /// Initialize (2): trained, no LID yet.
    Init,
    /// Armed (3).
    Armed,
    /// Active (4).
    Active,
    /// No state change (0), or a reserved value.
    Other(u8),
}

impl From<u8> for PortState {
    fn from(v: u8) -> Self {
        match v {
            1 => PortState::Down,
            2 => PortState::Init,
            3 => PortState::Armed,
            4 => PortState::Active,
            other => PortState::Other(other),
        }
    }
}

/// PortInfo (IBA 14.2.5.6, Table 155): the fields discovery needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortInfoRepr {
    /// The port's base LID (a switch's external ports have none: 0).
    pub lid: u16,
    /// The LID of the master subnet manager.
    pub sm_lid: u16,
    /// CapabilityMask.
    pub capability_mask: u32,
    /// The port number.
    pub local_port: u8,
    /// LinkWidthActive (bit 0: 1x, 1: 4x, 2: 8x, 3: 12x, 4: 2x).
    pub link_width_active: u8,
    /// LinkSpeedActive (bit 0: SDR, 1: DDR, 2: QDR).
    pub link_speed_active: u8,
    /// LinkSpeedExtActive (bit 0: FDR, 1: EDR, 2: HDR, 3: NDR; 0: none).
    pub link_speed_ext_active: u8,
    /// PortState.
    pub port_state: PortState,
    /// PortPhysicalState (5: LinkUp).
    pub phys_state: u8,
    /// LID mask control.
    pub lmc: u8,
}

mod port_info {
    use super::Field;
    pub const LID: Field = 16..18;
    pub const SM_LID: Field = 18..20;
    pub const CAPABILITY_MASK: Field = 20..24;
    pub const LOCAL_PORT: usize = 28;
    pub const LINK_WIDTH_ACTIVE: usize = 31;
    /// LinkSpeedSupported (high nibble), PortState (low nibble).
    pub const SPEED_SUPPORTED_STATE: usize = 32;
    /// PortPhysicalState (high nibble), LinkDownDefaultState (low nibble).
    pub const PHYS_STATE: usize = 33;
    /// M_KeyProtectBits (2 high bits), LMC (3 low bits).
    pub const LMC: usize = 34;
    /// LinkSpeedActive (high nibble), LinkSpeedEnabled (low nibble).
    pub const SPEED_ACTIVE: usize = 35;
    /// LinkSpeedExtActive (high nibble), LinkSpeedExtSupported (low nibble).
    pub const SPEED_EXT_ACTIVE: usize = 62;
}

impl PortInfoRepr {
    /// Reads PortInfo from an SMP's data.
    pub fn parse(data: &[u8]) -> Result<PortInfoRepr, Error> {
        use port_info as f;
        let d = attribute_data(data)?;
        Ok(PortInfoRepr {
            lid: be16(d, f::LID),
            sm_lid: be16(d, f::SM_LID),
            capability_mask: be32(d, f::CAPABILITY_MASK),
            local_port: d[f::LOCAL_PORT],
            link_width_active: d[f::LINK_WIDTH_ACTIVE],
            link_speed_active: d[f::SPEED_ACTIVE] >> 4,
            link_speed_ext_active: d[f::SPEED_EXT_ACTIVE] >> 4,
            port_state: PortState::from(d[f::SPEED_SUPPORTED_STATE] & 0x0f),
            phys_state: d[f::PHYS_STATE] >> 4,
            lmc: d[f::LMC] & 0x07,
        })
    }

    /// Writes these fields into an SMP's 64 data bytes, keeping the bits it does not hold.
    pub fn emit(&self, data: &mut [u8]) {
        use port_info as f;
        set_be16(data, f::LID, self.lid);
        set_be16(data, f::SM_LID, self.sm_lid);
        set_be32(data, f::CAPABILITY_MASK, self.capability_mask);
        data[f::LOCAL_PORT] = self.local_port;
        data[f::LINK_WIDTH_ACTIVE] = self.link_width_active;
        let state = match self.port_state {
            PortState::Down => 1,
            PortState::Init => 2,
            PortState::Armed => 3,
            PortState::Active => 4,
            PortState::Other(v) => v & 0x0f,
        };
        data[f::SPEED_SUPPORTED_STATE] = (data[f::SPEED_SUPPORTED_STATE] & 0xf0) | state;
        data[f::PHYS_STATE] = (data[f::PHYS_STATE] & 0x0f) | (self.phys_state << 4);
        data[f::LMC] = (data[f::LMC] & 0xf8) | (self.lmc & 0x07);
        data[f::SPEED_ACTIVE] = (data[f::SPEED_ACTIVE] & 0x0f) | (self.link_speed_active << 4);
        data[f::SPEED_EXT_ACTIVE] =
            (data[f::SPEED_EXT_ACTIVE] & 0x0f) | (self.link_speed_ext_active << 4);
    }

    /// The active width as `ibnetdiscover` writes it (`4x`), `?` for an unknown code.
    pub fn width(&self) -> &'static str {
        match self.link_width_active {
            1 => "1x",
            2 => "4x",
            4 => "8x",
            8 => "12x",
            16 => "2x",
            _ => "?",
        }
    }

    /// The active speed as `ibnetdiscover` writes it (`SDR` ... `NDR`): an extended speed,
    /// when one is active, wins (IBA 14.2.5.6: LinkSpeedExtActive overrides LinkSpeedActive).
    pub fn speed(&self) -> &'static str {
        match (self.link_speed_ext_active, self.link_speed_active) {
            (1, _) => "FDR",
            (2, _) => "EDR",
            (4, _) => "HDR",
            (8, _) => "NDR",
            (0, 1) => "SDR",
            (0, 2) => "DDR",
            (0, 4) => "QDR",
            _ => "???",
        }
    }

    /// Data rate per lane, Gb/s (the signalling rate less the line code).
    pub fn lane_gbps(&self) -> Option<f64> {
        crate::subnet::lane_data_gbps(self.speed())
    }
}

/// SwitchInfo (IBA 14.2.5.4, Table 148): the fields discovery needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwitchInfoRepr {
    /// Entries the linear forwarding table can hold.
    pub linear_fdb_cap: u16,
    /// Entries the multicast forwarding table can hold.
    pub multicast_fdb_cap: u16,
    /// The highest LID in the linear forwarding table.
    pub linear_fdb_top: u16,
    /// Port 0 is enhanced (it has its own PMA: PerfMgt to port 0 counts switch traffic).
    pub enhanced_port0: bool,
}

mod switch_info {
    use super::Field;
    pub const LINEAR_FDB_CAP: Field = 0..2;
    pub const MULTICAST_FDB_CAP: Field = 4..6;
    pub const LINEAR_FDB_TOP: Field = 6..8;
    /// Inbound/outbound partition enforcement, raw filters, then EnhancedPort0 (bit 3).
    pub const FLAGS: usize = 16;
    pub const ENHANCED_PORT0: u8 = 0x08;
}

impl SwitchInfoRepr {
    /// Reads SwitchInfo from an SMP's data.
    pub fn parse(data: &[u8]) -> Result<SwitchInfoRepr, Error> {
        use switch_info as f;
        let d = attribute_data(data)?;
        Ok(SwitchInfoRepr {
            linear_fdb_cap: be16(d, f::LINEAR_FDB_CAP),
            multicast_fdb_cap: be16(d, f::MULTICAST_FDB_CAP),
            linear_fdb_top: be16(d, f::LINEAR_FDB_TOP),
            enhanced_port0: d[f::FLAGS] & f::ENHANCED_PORT0 != 0,
        })
    }

    /// Writes these fields into an SMP's 64 data bytes, keeping the bits it does not hold.
    pub fn emit(&self, data: &mut [u8]) {
        use switch_info as f;
        set_be16(data, f::LINEAR_FDB_CAP, self.linear_fdb_cap);
        set_be16(data, f::MULTICAST_FDB_CAP, self.multicast_fdb_cap);
        set_be16(data, f::LINEAR_FDB_TOP, self.linear_fdb_top);
        data[f::FLAGS] = (data[f::FLAGS] & !f::ENHANCED_PORT0)
            | if self.enhanced_port0 {
                f::ENHANCED_PORT0
            } else {
                0
            };
    }
}

/// One block of a switch's LinearForwardingTable (IBA 14.2.5.10): the output
/// port of 64 consecutive LIDs. The attribute modifier is the block number, so LID
/// `block * 64 + i` leaves by `ports[i]`; port 0 is the switch itself, and [`NO_ROUTE`]
/// (0xFF) marks a LID the subnet manager gave no route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LftBlockRepr {
    /// The output port of each of the block's LIDs.
    pub ports: [u8; LFT_BLOCK_LIDS],
}

/// LIDs per LinearForwardingTable block.
pub const LFT_BLOCK_LIDS: usize = 64;

/// A LinearForwardingTable entry with no route (IBA 14.2.5.10: an invalid port).
pub const NO_ROUTE: u8 = 0xff;

impl LftBlockRepr {
    /// Reads one block from an SMP's data.
    pub fn parse(data: &[u8]) -> Result<LftBlockRepr, Error> {
        let mut ports = [0u8; LFT_BLOCK_LIDS];
        ports.copy_from_slice(attribute_data(data)?);
        Ok(LftBlockRepr { ports })
    }

    /// The block that holds `lid` (the attribute modifier to ask for).
    pub fn block_of(lid: u16) -> u32 {
        u32::from(lid) / LFT_BLOCK_LIDS as u32
    }

    /// The output port of `lid`, which must lie in this block's range; `None` for no route.
    pub fn out_port(&self, lid: u16) -> Option<u8> {
        Some(self.ports[usize::from(lid) % LFT_BLOCK_LIDS]).filter(|&p| p != NO_ROUTE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mad::fixture;
    use proptest::prelude::*;

    fn response(name: &str) -> Vec<u8> {
        fixture(&format!("{name}-response.hex"))
    }

    #[test]
    fn a_directed_route_request_is_rebuilt_byte_for_byte() {
        // smpquery -D nodeinfo 0,7: one hop out of port 7.
        let captured = fixture("smp-dr-nodeinfo-hop-request.hex");
        let p = SmpPacket::new_checked(&captured[..]).unwrap();
        assert_eq!(p.mad().mgmt_class(), MgmtClass::SubnDirectedRoute);
        assert_eq!(p.hop_count(), 1);
        assert_eq!(p.hop_pointer(), 0);
        assert!(!p.is_returning());
        assert_eq!((p.dr_slid(), p.dr_dlid()), (PERMISSIVE_LID, PERMISSIVE_LID));
        assert_eq!(p.initial_path(), [7]);
        let rebuilt = SmpRequest {
            route: Route::Directed(vec![7]),
            attribute_id: attr::NODE_INFO,
            attribute_modifier: 0,
            transaction_id: p.mad().transaction_id(),
        }
        .emit()
        .unwrap();
        assert_eq!(&rebuilt[..], &captured[..]);
    }

    #[test]
    fn a_lid_routed_request_is_rebuilt_byte_for_byte() {
        let captured = fixture("smp-lid-switchinfo-request.hex");
        let p = SmpPacket::new_checked(&captured[..]).unwrap();
        let rebuilt = SmpRequest {
            route: Route::Lid,
            attribute_id: attr::SWITCH_INFO,
            attribute_modifier: 0,
            transaction_id: p.mad().transaction_id(),
        }
        .emit()
        .unwrap();
        assert_eq!(&rebuilt[..], &captured[..]);
    }

    #[test]
    fn node_info_of_the_switch_one_hop_away() {
        let bytes = response("smp-dr-nodeinfo-hop");
        let p = SmpPacket::new_checked(&bytes[..]).unwrap();
        assert!(p.is_returning());
        assert_eq!(p.status(), 0);
        assert_eq!(p.mad().method(), Method::GetResp);
        let n = NodeInfoRepr::parse(p.data()).unwrap();
        assert_eq!(n.node_type, NodeType::Switch);
        assert_eq!(n.num_ports, 8);
        assert_eq!(n.system_image_guid, 0x20_0001);
        assert_eq!(n.node_guid, 0x20_0001);
        assert_eq!(n.port_guid, 0x20_0001);
        assert_eq!(n.partition_cap, 8);
        assert_eq!(n.device_id, 0);
        assert_eq!(n.revision, 0xa1);
        assert_eq!(n.local_port, 7, "it was entered through its port 7");
        assert_eq!(n.vendor_id, 0);
        let mut data = p.data().to_vec();
        data.fill(0);
        n.emit(&mut data);
        assert_eq!(&data[..], p.data());
    }

    #[test]
    fn node_info_of_the_local_switch() {
        let bytes = response("smp-dr-nodeinfo");
        let n = NodeInfoRepr::parse(SmpPacket::new_checked(&bytes[..]).unwrap().data()).unwrap();
        assert_eq!(n.node_type, NodeType::Switch);
        assert_eq!(n.node_guid, 0x20_0000);
        assert_eq!(
            n.local_port, 0,
            "an SMP from the switch itself enters port 0"
        );
    }

    #[test]
    fn node_description_is_the_net_files_name() {
        let bytes = response("smp-dr-nodedesc");
        let p = SmpPacket::new_checked(&bytes[..]).unwrap();
        assert_eq!(node_description(p.data()).unwrap(), "leaf-a");
        let mut data = [0xffu8; 64];
        emit_node_description("leaf-a", &mut data);
        assert_eq!(&data[..], p.data());
    }

    #[test]
    fn port_info_of_an_inter_switch_port() {
        let bytes = response("smp-dr-portinfo");
        let p = SmpPacket::new_checked(&bytes[..]).unwrap();
        assert_eq!(p.mad().attribute_modifier(), 7);
        let i = PortInfoRepr::parse(p.data()).unwrap();
        assert_eq!(i.lid, 0, "a switch's external port has no LID");
        assert_eq!(i.local_port, 0);
        assert_eq!(i.link_width_active, 2);
        assert_eq!(i.width(), "4x");
        assert_eq!(i.link_speed_active, 1);
        assert_eq!(i.link_speed_ext_active, 0);
        assert_eq!(i.speed(), "SDR");
        assert_eq!(i.lane_gbps(), Some(2.0));
        assert_eq!(i.port_state, PortState::Active);
        assert_eq!(i.phys_state, 5, "LinkUp");
        assert_eq!(i.lmc, 0);
        let mut data = p.data().to_vec();
        i.emit(&mut data);
        assert_eq!(&data[..], p.data(), "emit keeps what it does not hold");
    }

    #[test]
    fn switch_info_of_an_ibsim_switch() {
        let bytes = response("smp-lid-switchinfo");
        let p = SmpPacket::new_checked(&bytes[..]).unwrap();
        assert_eq!(p.mad().mgmt_class(), MgmtClass::SubnLid);
        let s = SwitchInfoRepr::parse(p.data()).unwrap();
        assert_eq!(s.linear_fdb_cap, 30720, "ibsim's MaxLinearCap");
        assert_eq!(s.multicast_fdb_cap, 1024, "ibsim's MaxMcastCap");
        assert_eq!(s.linear_fdb_top, 6, "opensm gave out LIDs 1..6");
        assert!(!s.enhanced_port0, "ibnetdiscover: base port 0");
        let mut data = p.data().to_vec();
        s.emit(&mut data);
        assert_eq!(&data[..], p.data());
    }

    #[test]
    fn lft_block_zero_of_an_ibsim_switch() {
        // ibroute 1 on two-switches.net: leaf-a itself is LID 1, leaf-b LID 3, host-1..4
        // LIDs 2, 4, 5, 6; opensm spread host-3 and host-4 over the two inter-switch links.
        let bytes = response("smp-lid-lft");
        let p = SmpPacket::new_checked(&bytes[..]).unwrap();
        assert_eq!(p.mad().attribute_id(), attr::LINEAR_FORWARDING_TABLE);
        assert_eq!(p.mad().attribute_modifier(), 0, "block 0");
        let b = LftBlockRepr::parse(p.data()).unwrap();
        let routes: Vec<_> = (0..8).map(|lid| b.out_port(lid)).collect();
        assert_eq!(
            routes,
            [
                None,
                Some(0),
                Some(1),
                Some(7),
                Some(2),
                Some(7),
                Some(8),
                None
            ]
        );
        assert!((8..64).all(|lid| b.out_port(lid).is_none()));
        assert_eq!(LftBlockRepr::block_of(63), 0);
        assert_eq!(LftBlockRepr::block_of(64), 1);
        assert_eq!(LftBlockRepr::block_of(0xbfff), 767);
        assert!(LftBlockRepr::parse(&p.data()[..63]).is_err());
        let asked = fixture("smp-lid-lft-request.hex");
        let rebuilt = SmpRequest {
            route: Route::Lid,
            attribute_id: attr::LINEAR_FORWARDING_TABLE,
            attribute_modifier: 0,
            transaction_id: p.mad().transaction_id(),
        }
        .emit()
        .unwrap();
        assert_eq!(&rebuilt[..], &asked[..]);
    }

    #[test]
    fn extended_speeds_win_over_the_base_speed() {
        let mut i = PortInfoRepr::parse(&[0u8; 64]).unwrap();
        i.link_speed_active = 4;
        assert_eq!(i.speed(), "QDR");
        i.link_speed_ext_active = 4;
        assert_eq!(i.speed(), "HDR");
        assert_eq!(i.lane_gbps(), Some(50.0));
        i.link_speed_ext_active = 3;
        assert_eq!((i.speed(), i.lane_gbps()), ("???", None));
    }

    #[test]
    fn corrupted_smps_are_refused_not_misread() {
        let mut bytes = fixture("smp-dr-nodeinfo-hop-request.hex");
        bytes[7] = 64; // hop count beyond the path arrays
        assert!(matches!(
            SmpPacket::new_checked(&bytes[..]),
            Err(Error::Malformed(_))
        ));
        let perf = fixture("perf-portcounters-request.hex");
        assert!(matches!(
            SmpPacket::new_checked(&perf[..]),
            Err(Error::Malformed(_))
        ));
        assert!(matches!(
            SmpPacket::new_checked(&bytes[..100]),
            Err(Error::Truncated(100))
        ));
        assert!(NodeInfoRepr::parse(&[0u8; 63]).is_err());
        let too_long = SmpRequest {
            route: Route::Directed(vec![1; 64]),
            attribute_id: attr::NODE_INFO,
            attribute_modifier: 0,
            transaction_id: 1,
        };
        assert!(too_long.emit().is_err());
    }

    proptest! {
        #[test]
        fn any_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            if let Ok(p) = SmpPacket::new_checked(&bytes[..]) {
                let _ = (p.initial_path().len(), p.return_path().len(), p.status());
                let _ = NodeInfoRepr::parse(p.data()).unwrap();
                let _ = PortInfoRepr::parse(p.data()).unwrap().speed();
                let _ = SwitchInfoRepr::parse(p.data()).unwrap();
                let _ = node_description(p.data()).unwrap();
                let b = LftBlockRepr::parse(p.data()).unwrap();
                for lid in (0..=u16::MAX).step_by(97) {
                    let _ = b.out_port(lid);
                }
            }
        }

        #[test]
        fn any_lft_block_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..100), lid in any::<u16>()) {
            match LftBlockRepr::parse(&bytes) {
                Ok(b) => prop_assert_eq!(b.out_port(lid).unwrap_or(NO_ROUTE), bytes[usize::from(lid) % 64]),
                Err(_) => prop_assert!(bytes.len() < 64),
            }
        }

        #[test]
        fn directed_routes_round_trip(path in proptest::collection::vec(1u8..=36, 0..=63), tid in any::<u64>()) {
            let bytes = SmpRequest {
                route: Route::Directed(path.clone()),
                attribute_id: attr::PORT_INFO,
                attribute_modifier: 3,
                transaction_id: tid,
            }
            .emit()
            .unwrap();
            let p = SmpPacket::new_checked(&bytes[..]).unwrap();
            prop_assert_eq!(p.initial_path(), &path[..]);
            prop_assert_eq!(p.mad().transaction_id(), tid);
            prop_assert_eq!(p.mad().attribute_modifier(), 3);
        }

        #[test]
        fn node_info_round_trips(
            kind in 0u8..=4, ports in any::<u8>(), guids in any::<(u64, u64, u64)>(),
            device in any::<u16>(), rev in any::<u32>(), port in any::<u8>(), vendor in 0u32..1 << 24,
        ) {
            let n = NodeInfoRepr {
                node_type: NodeType::from(kind),
                num_ports: ports,
                system_image_guid: guids.0,
                node_guid: guids.1,
                port_guid: guids.2,
                partition_cap: 8,
                device_id: device,
                revision: rev,
                local_port: port,
                vendor_id: vendor,
            };
            let mut data = [0u8; 64];
            n.emit(&mut data);
            prop_assert_eq!(NodeInfoRepr::parse(&data).unwrap(), n);
        }
    }
}
