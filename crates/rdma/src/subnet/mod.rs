//! An InfiniBand subnet as discovery finds it: its nodes (switches and channel adapters)
//! and the links between their ports. [`discover`] finds it with directed-route SMPs
//! through a umad port; [`topofile`] writes and reads the topology-file format of
//! `ibnetdiscover`; [`sample`] sweeps the switch ports' counters, [`pace`] on a cadence;
//! [`delegate`] splits them among samplers; [`route`] traces the routes the switches' forwarding tables hold;
//! [`Subnet::to_json`] is the JSON of DESIGN 4.4.

pub mod delegate;
pub mod discover;
pub mod pace;
pub mod route;
pub mod sample;
pub mod topofile;

use serde_json::json;

/// What a node is (NodeInfo's NodeType).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NodeKind {
    /// A switch.
    Switch,
    /// A channel adapter (an HCA).
    Ca,
    /// A router.
    Router,
}

impl NodeKind {
    /// The word of the JSON (`switch`, `ca`, `router`).
    pub fn word(self) -> &'static str {
        match self {
            NodeKind::Switch => "switch",
            NodeKind::Ca => "ca",
            NodeKind::Router => "router",
        }
    }
}

/// One node of the subnet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Node GUID.
    pub guid: u64,
    /// Switch, CA or router.
    pub kind: NodeKind,
    /// NodeDescription.
    pub description: String,
    /// Physical ports.
    pub ports: u8,
    /// System image GUID.
    pub system_image_guid: u64,
    /// IEEE OUI of the vendor.
    pub vendor_id: u32,
    /// Device id.
    pub device_id: u16,
    /// A switch's port 0 is enhanced (it has a PMA of its own).
    pub enhanced_port0: bool,
    /// Each known port's GUID, LID and LMC: a switch's port 0 (the switch's LID), a CA's
    /// connected ports. Sorted by port.
    pub addressed_ports: Vec<PortAddress>,
}

/// The address of one port: what PortInfo and NodeInfo give for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct PortAddress {
    /// The port number.
    pub port: u8,
    /// Its GUID.
    pub guid: u64,
    /// Its base LID (0 before a subnet manager assigned one).
    pub lid: u16,
    /// Its LID mask control.
    pub lmc: u8,
}

impl Node {
    /// The node's LID: a switch's port 0's, a CA's first addressed port's.
    pub fn lid(&self) -> Option<u16> {
        self.addressed_ports
            .first()
            .map(|p| p.lid)
            .filter(|&l| l != 0)
    }
}

/// One end of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct End {
    /// The node's GUID.
    pub guid: u64,
    /// The port number.
    pub port: u8,
}

/// A link between two ports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// One end (the one discovery reached first).
    pub a: End,
    /// The other end.
    pub b: End,
    /// Active width (`4x`).
    pub width: String,
    /// Active speed (`HDR`).
    pub speed: String,
}

impl Link {
    /// The two ends, smaller first: the same link however it was found.
    pub fn ends(&self) -> (End, End) {
        (self.a.min(self.b), self.a.max(self.b))
    }

    /// The link's data rate, Gb/s: lanes times [`lane_data_gbps`] (`4xEDR`: 100); `None` for
    /// a width or speed this table does not know.
    pub fn data_gbps(&self) -> Option<f64> {
        let lanes: f64 = self.width.strip_suffix(['x', 'X'])?.parse().ok()?;
        Some(lanes * lane_data_gbps(&self.speed)?)
    }
}

/// Data rate of one lane at a speed as `ibnetdiscover` names it, Gb/s: the signalling rate
/// less the line code (8b/10b up to QDR, 64b/66b from FDR10 on).
pub fn lane_data_gbps(speed: &str) -> Option<f64> {
    Some(match speed {
        "SDR" => 2.0,
        "DDR" => 4.0,
        "QDR" => 8.0,
        "FDR10" => 10.0,
        "FDR" => 13.64,
        "EDR" => 25.0,
        "HDR" => 50.0,
        "NDR" => 100.0,
        "XDR" => 200.0,
        _ => return None,
    })
}

/// A discovered subnet.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Subnet {
    /// The nodes, in discovery order.
    pub nodes: Vec<Node>,
    /// The links, each once.
    pub links: Vec<Link>,
    /// Where discovery started: the local node and port.
    pub origin: Option<End>,
    /// Ports that could not be read, and why (the rest of the subnet was still found).
    pub errors: Vec<String>,
}

pub use model::switch_port::guid_text;

impl Subnet {
    /// The node with `guid`.
    pub fn node(&self, guid: u64) -> Option<&Node> {
        self.nodes.iter().find(|n| n.guid == guid)
    }

    /// The link at `end`, and the end across it.
    pub fn peer(&self, end: End) -> Option<(&Link, End)> {
        self.links.iter().find_map(|l| {
            if l.a == end {
                Some((l, l.b))
            } else if l.b == end {
                Some((l, l.a))
            } else {
                None
            }
        })
    }

    /// The JSON of DESIGN 4.4 (`hostping fabric discover --format json`), with the
    /// unreadable ports under `errors`.
    pub fn to_json(&self) -> serde_json::Value {
        let nodes: Vec<_> = self
            .nodes
            .iter()
            .map(|n| {
                json!({
                    "guid": guid_text(n.guid),
                    "type": n.kind.word(),
                    "description": n.description,
                    "lid": n.lid(),
                    "ports": n.ports,
                })
            })
            .collect();
        let links: Vec<_> = self
            .links
            .iter()
            .map(|l| {
                json!({
                    "a": {"guid": guid_text(l.a.guid), "port": l.a.port},
                    "b": {"guid": guid_text(l.b.guid), "port": l.b.port},
                    "width": l.width,
                    "speed": l.speed,
                })
            })
            .collect();
        json!({"nodes": nodes, "links": links, "errors": self.errors})
    }
}
