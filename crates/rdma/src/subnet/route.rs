//! The route the subnet manager programmed between two ports, read from the switches'
//! LinearForwardingTables (IBA 14.2.5.10) as `ibtracert` does: start at the source port
//! (a channel adapter's goes to the switch across its cable), and at each switch look up
//! the destination LID in the table block that holds it, leave by that port and follow
//! the cable, until the destination port. The cables and the switches' directed routes
//! come from a discovery ([`super::discover`]), so a switch's table is read over the
//! cables even when LID routing itself is what is broken.
//!
//! [`dump`] reads every switch's whole table (LIDs 0 to LinearFDBTop of its SwitchInfo),
//! the `ibroute` of every switch at once, with the MADs in flight together.

use super::discover::{ask, path_text, query};
use super::{guid_text, End, Node, NodeKind, Subnet};
use crate::mad::smp::{attr, LftBlockRepr, SwitchInfoRepr, LFT_BLOCK_LIDS};
use crate::umad::rpc::Settings;
use crate::umad::{Agent, Port, UmadError};
use serde_json::json;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt;
use std::fmt::Write as _;
use std::str::FromStr;

/// The highest unicast LID: 0xC000 and up are multicast (IBA 4.1.3).
pub const MAX_UNICAST_LID: u16 = 0xbfff;

/// One end of a route as it is named: a LID (decimal, as `ibtracert` takes it) or a port
/// GUID (`0x` and hex digits, as `ibtracert -G` takes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// A unicast LID (a port with an LMC answers to several).
    Lid(u16),
    /// A port GUID (a switch's port 0 GUID is its node GUID).
    PortGuid(u64),
}

impl FromStr for Endpoint {
    type Err = String;

    fn from_str(s: &str) -> Result<Endpoint, String> {
        let hex = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"));
        let parsed = match hex {
            Some(digits) if (1..=16).contains(&digits.len()) => {
                u64::from_str_radix(digits, 16).ok().map(Endpoint::PortGuid)
            }
            Some(_) => None,
            None => s
                .parse::<u16>()
                .ok()
                .filter(|l| (1..=MAX_UNICAST_LID).contains(l))
                .map(Endpoint::Lid),
        };
        parsed.ok_or_else(|| {
            format!(
                "`{s}`: expected a LID (decimal, 1 to {MAX_UNICAST_LID}) or a port GUID \
                 (0x and up to 16 hex digits)"
            )
        })
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Lid(l) => write!(f, "LID {l}"),
            Endpoint::PortGuid(g) => write!(f, "port GUID {}", guid_text(*g)),
        }
    }
}

/// A port of the subnet an [`Endpoint`] names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The node's GUID.
    pub node: u64,
    /// Its type.
    pub kind: NodeKind,
    /// Its NodeDescription.
    pub description: String,
    /// The port (0 for a switch).
    pub port: u8,
    /// The port's GUID.
    pub port_guid: u64,
    /// The LID the route is traced to: the one named, or the port's base LID.
    pub lid: u16,
}

impl Located {
    fn to_json(&self) -> serde_json::Value {
        json!({
            "type": self.kind.word(),
            "guid": guid_text(self.port_guid),
            "node_guid": guid_text(self.node),
            "description": self.description,
            "port": self.port,
            "lid": self.lid,
        })
    }

    /// The port as `ibtracert` writes it: `ca {0x...} portnum 1 lid 2 "host-1"`.
    fn ibtracert_text(&self) -> String {
        format!(
            "{} {{{}}} portnum {} lid {} \"{}\"",
            self.kind.word(),
            guid_text(self.port_guid),
            self.port,
            self.lid,
            self.description
        )
    }
}

/// Finds the port `endpoint` names among the ports discovery addressed.
pub fn locate(subnet: &Subnet, endpoint: Endpoint) -> Result<Located, RouteError> {
    subnet
        .nodes
        .iter()
        .flat_map(|n| n.addressed_ports.iter().map(move |a| (n, a)))
        .find_map(|(n, a)| {
            let lid = match endpoint {
                Endpoint::PortGuid(g) if g == a.guid => a.lid,
                Endpoint::Lid(l)
                    if a.lid != 0 && (a.lid..a.lid.saturating_add(1 << a.lmc)).contains(&l) =>
                {
                    l
                }
                _ => return None,
            };
            Some(Located {
                node: n.guid,
                kind: n.kind,
                description: n.description.clone(),
                port: a.port,
                port_guid: a.guid,
                lid,
            })
        })
        .ok_or(RouteError::NotFound {
            endpoint,
            nodes: subnet.nodes.len(),
        })
}

/// One switch a route crosses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hop {
    /// The switch's GUID.
    pub guid: u64,
    /// Its NodeDescription.
    pub description: String,
    /// Its LID, when it has one.
    pub lid: Option<u16>,
    /// The port the route enters by (0 where it starts at this switch).
    pub in_port: u8,
    /// The port its forwarding table sends the destination LID to (0: the switch itself).
    pub out_port: u8,
}

/// Why a route stops before its destination: what the forwarding tables or the cables
/// say, not a failure to read them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Broken {
    /// The switch's table has no entry (0xFF) for the LID.
    NoRoute {
        /// The switch ([`switch_name`]).
        switch: String,
        /// The destination LID.
        lid: u16,
    },
    /// The route enters a switch it already crossed.
    Loop {
        /// The switch entered again.
        switch: String,
        /// The destination LID.
        lid: u16,
        /// The port it is entered by the second time.
        port: u8,
    },
    /// The table sends the LID out of a port with no active link.
    PortDown {
        /// The switch.
        switch: String,
        /// The destination LID.
        lid: u16,
        /// The output port its table names.
        port: u8,
    },
    /// The route ends at a port that is not the destination.
    Elsewhere {
        /// The destination LID.
        lid: u16,
        /// Where it ended.
        reached: String,
    },
}

impl fmt::Display for Broken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Broken::NoRoute { switch, lid } => write!(
                f,
                "no route to LID {lid} at switch {switch}: its forwarding table entry is 0xFF"
            ),
            Broken::Loop { switch, lid, port } => write!(
                f,
                "routing loop towards LID {lid}: switch {switch} is entered again, by port {port}"
            ),
            Broken::PortDown { switch, lid, port } => write!(
                f,
                "no route to LID {lid} at switch {switch}: its forwarding table sends it out of \
                 port {port}, which has no active link"
            ),
            Broken::Elsewhere { lid, reached } => write!(
                f,
                "the route to LID {lid} ends at {reached}, which does not hold that LID"
            ),
        }
    }
}

/// The route between two ports: the switches crossed, and where it broke if it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Traced {
    /// The source port.
    pub from: Located,
    /// The destination port (its `lid` is the LID looked up in the tables).
    pub to: Located,
    /// One per switch crossed, in order (up to where it broke).
    pub hops: Vec<Hop>,
    /// Why it stops short of `to`; `None` when it reaches it.
    pub broken: Option<Broken>,
}

impl Traced {
    /// DESIGN 4.6: `{"from", "to", "hops": [{"guid", "description", "in_port",
    /// "out_port"}]}`; each hop also has the switch's `lid`, and `error` says why a
    /// route stops short (`null` when it reaches its destination).
    pub fn to_json(&self) -> serde_json::Value {
        let hops: Vec<_> = self
            .hops
            .iter()
            .map(|h| {
                json!({
                    "guid": guid_text(h.guid),
                    "description": h.description,
                    "lid": h.lid,
                    "in_port": h.in_port,
                    "out_port": h.out_port,
                })
            })
            .collect();
        json!({
            "from": self.from.to_json(),
            "to": self.to.to_json(),
            "hops": hops,
            "error": self.broken.as_ref().map(ToString::to_string),
        })
    }

    /// The route as `ibtracert` lays it out: each line the port left by, then the port
    /// entered; where it broke, and how many switches it crossed.
    pub fn to_ibtracert(&self) -> String {
        let mut out = format!("From {}\n", self.from.ibtracert_text());
        let mut left_by = self.from.port;
        for h in &self.hops {
            // A route that starts at a switch enters it by no port.
            if h.in_port != 0 {
                let lid = h.lid.map_or("-".into(), |l| l.to_string());
                let _ = writeln!(
                    out,
                    "[{left_by}] -> switch {{{}}}[{}] lid {lid} \"{}\"",
                    guid_text(h.guid),
                    h.in_port,
                    h.description
                );
            }
            left_by = h.out_port;
        }
        match &self.broken {
            Some(b) => {
                let _ = writeln!(out, "route broken: {b}");
            }
            None => {
                if self.to.kind != NodeKind::Switch && !self.hops.is_empty() {
                    let _ = writeln!(
                        out,
                        "[{left_by}] -> {} {{{}}}[{}] lid {} \"{}\"",
                        self.to.kind.word(),
                        guid_text(self.to.port_guid),
                        self.to.port,
                        self.to.lid,
                        self.to.description
                    );
                }
                let _ = writeln!(out, "To {}", self.to.ibtracert_text());
            }
        }
        let _ = writeln!(
            out,
            "{} {} crossed",
            self.hops.len(),
            if self.hops.len() == 1 {
                "switch"
            } else {
                "switches"
            }
        );
        out
    }
}

/// Why no route could be traced at all.
#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    /// The endpoint is no port discovery addressed.
    #[error("{endpoint}: no such port among the {nodes} nodes discovered")]
    NotFound {
        /// What was named.
        endpoint: Endpoint,
        /// Nodes discovered.
        nodes: usize,
    },
    /// The destination has no LID to look up (no subnet manager has run).
    #[error("{0}: the port has no LID (has a subnet manager assigned LIDs?)")]
    NoLid(String),
    /// A channel adapter source with nothing behind its port.
    #[error("{0}: the port has no active link")]
    Unlinked(String),
    /// A switch's table could not be read.
    #[error("switch {switch}: {error}")]
    Read {
        /// The switch, named.
        switch: String,
        /// What went wrong.
        error: String,
    },
    /// The umad port failed as a whole.
    #[error(transparent)]
    Umad(#[from] UmadError),
}

/// A switch for messages: `"leaf-a" (0x..., LID 1)`.
pub fn switch_name(node: &Node) -> String {
    match node.lid() {
        Some(lid) => format!(
            "\"{}\" ({}, LID {lid})",
            node.description,
            guid_text(node.guid)
        ),
        None => format!("\"{}\" ({})", node.description, guid_text(node.guid)),
    }
}

/// Traces the route from `from` to `to` over `subnet`, with `read_block(switch, block)`
/// giving a switch's forwarding table block (a function, so that the walk is tested on
/// tables of any shape). A switch entered twice ends the walk as a loop, so it ends
/// whatever the tables hold, after at most one block read per switch.
pub fn trace(
    subnet: &Subnet,
    from: Located,
    to: Located,
    mut read_block: impl FnMut(&Node, u32) -> Result<LftBlockRepr, RouteError>,
) -> Result<Traced, RouteError> {
    if to.lid == 0 {
        return Err(RouteError::NoLid(
            Endpoint::PortGuid(to.port_guid).to_string(),
        ));
    }
    let lid = to.lid;
    let start = End {
        guid: from.node,
        port: from.port,
    };
    let mut at = if from.kind == NodeKind::Switch {
        start
    } else if from.port_guid == to.port_guid {
        return Ok(Traced {
            from,
            to,
            hops: Vec::new(),
            broken: None,
        });
    } else {
        subnet
            .peer(start)
            .map(|(_, far)| far)
            .ok_or_else(|| RouteError::Unlinked(Endpoint::PortGuid(from.port_guid).to_string()))?
    };
    let mut hops = Vec::new();
    let mut crossed = HashSet::new();
    let broken = loop {
        let Some(node) = subnet.node(at.guid) else {
            break Some(Broken::Elsewhere {
                lid,
                reached: format!("{}[{}]", guid_text(at.guid), at.port),
            });
        };
        if node.kind != NodeKind::Switch {
            if node.guid == to.node && at.port == to.port {
                break None;
            }
            break Some(Broken::Elsewhere {
                lid,
                reached: format!("\"{}\"[{}]", node.description, at.port),
            });
        }
        if !crossed.insert(node.guid) {
            break Some(Broken::Loop {
                switch: switch_name(node),
                lid,
                port: at.port,
            });
        }
        let block = read_block(node, LftBlockRepr::block_of(lid))?;
        let Some(out) = block.out_port(lid) else {
            break Some(Broken::NoRoute {
                switch: switch_name(node),
                lid,
            });
        };
        hops.push(Hop {
            guid: node.guid,
            description: node.description.clone(),
            lid: node.lid(),
            in_port: at.port,
            out_port: out,
        });
        if out == 0 {
            if node.guid == to.node {
                break None;
            }
            break Some(Broken::Elsewhere {
                lid,
                reached: format!("switch {}", switch_name(node)),
            });
        }
        let here = End {
            guid: node.guid,
            port: out,
        };
        match subnet.peer(here) {
            Some((_, far)) => at = far,
            None => {
                break Some(Broken::PortDown {
                    switch: switch_name(node),
                    lid,
                    port: out,
                })
            }
        }
    };
    Ok(Traced {
        from,
        to,
        hops,
        broken,
    })
}

/// The directed route to every node that can be reached from discovery's origin: out of
/// the origin's port, then through switches only (a channel adapter forwards nothing).
pub fn directed_paths(subnet: &Subnet) -> HashMap<u64, Vec<u8>> {
    let mut paths = HashMap::new();
    let Some(origin) = subnet.origin else {
        return paths;
    };
    paths.insert(origin.guid, Vec::new());
    let mut queue = VecDeque::from([origin.guid]);
    while let Some(guid) = queue.pop_front() {
        let forwards = guid == origin.guid
            || subnet
                .node(guid)
                .is_some_and(|n| n.kind == NodeKind::Switch);
        if !forwards {
            continue;
        }
        let path = paths[&guid].clone();
        let mut exits: Vec<(End, End)> = subnet
            .links
            .iter()
            .filter_map(|l| {
                if l.a.guid == guid {
                    Some((l.a, l.b))
                } else if l.b.guid == guid {
                    Some((l.b, l.a))
                } else {
                    None
                }
            })
            .filter(|(here, _)| guid != origin.guid || origin.port == 0 || here.port == origin.port)
            .collect();
        exits.sort();
        for (here, far) in exits {
            if path.len() < crate::mad::smp::MAX_HOPS && !paths.contains_key(&far.guid) {
                let mut next = path.clone();
                next.push(here.port);
                paths.insert(far.guid, next);
                queue.push_back(far.guid);
            }
        }
    }
    paths
}

/// Reads forwarding table blocks over directed routes, each block once.
pub struct TableReader<'a> {
    port: &'a mut Port,
    agent: Agent,
    settings: Settings,
    paths: HashMap<u64, Vec<u8>>,
    read: HashMap<(u64, u32), LftBlockRepr>,
}

impl<'a> TableReader<'a> {
    /// A reader for `subnet`'s switches through `port`, `agent` registered for class 0x81.
    pub fn new(
        port: &'a mut Port,
        agent: Agent,
        settings: Settings,
        subnet: &Subnet,
    ) -> TableReader<'a> {
        TableReader {
            port,
            agent,
            settings,
            paths: directed_paths(subnet),
            read: HashMap::new(),
        }
    }

    /// Block `block` of `switch`'s table.
    pub fn block(&mut self, switch: &Node, block: u32) -> Result<LftBlockRepr, RouteError> {
        if let Some(b) = self.read.get(&(switch.guid, block)) {
            return Ok(*b);
        }
        let fail = |error: String| RouteError::Read {
            switch: switch_name(switch),
            error,
        };
        let path = self
            .paths
            .get(&switch.guid)
            .ok_or_else(|| fail("no directed route to it from the local port".into()))?;
        let q = query(
            self.agent,
            path,
            attr::LINEAR_FORWARDING_TABLE,
            block,
            format!(
                "LinearForwardingTable block {block} via {}",
                path_text(path)
            ),
        );
        let data = ask(self.port, &[q], self.settings)?
            .remove(0)
            .map_err(fail)?;
        let b = LftBlockRepr::parse(&data).map_err(|e| fail(e.to_string()))?;
        self.read.insert((switch.guid, block), b);
        Ok(b)
    }
}

/// One switch's whole forwarding table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchTable {
    /// The switch's GUID.
    pub guid: u64,
    /// Its NodeDescription.
    pub description: String,
    /// Its LID.
    pub lid: Option<u16>,
    /// The highest LID its table holds (SwitchInfo LinearFDBTop).
    pub linear_fdb_top: u16,
    /// Each LID that has a route, and its output port (0: the switch itself).
    pub routes: BTreeMap<u16, u8>,
}

/// Every switch's table, and the switches or blocks that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Dump {
    /// The switches read, in discovery order.
    pub switches: Vec<SwitchTable>,
    /// What could not be read, and why.
    pub errors: Vec<String>,
}

/// A file that is not a dump of `fabric route --dump -o FILE`; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum DumpFileError {
    /// Not the dump's JSON.
    #[error("{file}: not a dump of `fabric route --dump -o FILE`: {source}")]
    Json {
        /// The file.
        file: String,
        /// Why.
        source: serde_json::Error,
    },
    /// A switch's GUID is not one.
    #[error("{file}: switch {index}: guid `{guid}` is not 0x and 16 hex digits")]
    Guid {
        /// The file.
        file: String,
        /// The switch's place in the file, from 0.
        index: usize,
        /// The GUID as written.
        guid: String,
    },
    /// A switch with two routes to one LID.
    #[error("{file}: switch {} has two routes to LID {lid}", guid_text(*.guid))]
    TwoRoutes {
        /// The file.
        file: String,
        /// The switch.
        guid: u64,
        /// The LID.
        lid: u16,
    },
}

impl Dump {
    /// `{"switches": [{"guid", "description", "lid", "linear_fdb_top", "routes": [{"lid",
    /// "port"}]}], "errors": [..]}` (docs/fabric.md).
    pub fn to_json(&self) -> serde_json::Value {
        let switches: Vec<_> = self
            .switches
            .iter()
            .map(|s| {
                let routes: Vec<_> = s
                    .routes
                    .iter()
                    .map(|(lid, port)| json!({"lid": lid, "port": port}))
                    .collect();
                json!({
                    "guid": guid_text(s.guid),
                    "description": s.description,
                    "lid": s.lid,
                    "linear_fdb_top": s.linear_fdb_top,
                    "routes": routes,
                })
            })
            .collect();
        json!({"switches": switches, "errors": self.errors})
    }

    /// Reads what [`Dump::to_json`] writes (`fabric route --dump -o FILE`), naming `file`
    /// and what is wrong in one line.
    pub fn from_json(text: &str, file: &str) -> Result<Dump, DumpFileError> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct DumpFile {
            switches: Vec<SwitchFile>,
            errors: Vec<String>,
        }
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct SwitchFile {
            guid: String,
            description: String,
            lid: Option<u16>,
            linear_fdb_top: u16,
            routes: Vec<RouteFile>,
        }
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct RouteFile {
            lid: u16,
            port: u8,
        }
        let read: DumpFile = serde_json::from_str(text).map_err(|source| DumpFileError::Json {
            file: file.to_owned(),
            source,
        })?;
        let mut switches = Vec::with_capacity(read.switches.len());
        for (index, s) in read.switches.into_iter().enumerate() {
            let guid =
                model::switch_port::parse_guid(&s.guid).ok_or_else(|| DumpFileError::Guid {
                    file: file.to_owned(),
                    index,
                    guid: s.guid.clone(),
                })?;
            let mut routes = BTreeMap::new();
            for r in s.routes {
                if routes.insert(r.lid, r.port).is_some() {
                    return Err(DumpFileError::TwoRoutes {
                        file: file.to_owned(),
                        guid,
                        lid: r.lid,
                    });
                }
            }
            switches.push(SwitchTable {
                guid,
                description: s.description,
                lid: s.lid,
                linear_fdb_top: s.linear_fdb_top,
                routes,
            });
        }
        Ok(Dump {
            switches,
            errors: read.errors,
        })
    }
}

/// Reads every switch's table: SwitchInfo of all switches in one exchange, then every
/// block up to each one's LinearFDBTop in another.
pub fn dump(
    port: &mut Port,
    agent: Agent,
    settings: Settings,
    subnet: &Subnet,
) -> Result<Dump, UmadError> {
    let paths = directed_paths(subnet);
    let mut out = Dump::default();
    let switches: Vec<(&Node, &Vec<u8>)> = subnet
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Switch)
        .filter_map(|n| match paths.get(&n.guid) {
            Some(p) => Some((n, p)),
            None => {
                out.errors.push(format!(
                    "switch {}: no directed route to it from the local port",
                    switch_name(n)
                ));
                None
            }
        })
        .collect();
    let infos = ask(
        port,
        &switches
            .iter()
            .map(|(_, p)| {
                query(
                    agent,
                    p,
                    attr::SWITCH_INFO,
                    0,
                    format!("SwitchInfo via {}", path_text(p)),
                )
            })
            .collect::<Vec<_>>(),
        settings,
    )?;
    let mut tables = Vec::new();
    let mut queries = Vec::new();
    let mut asked = Vec::new();
    for ((node, path), info) in switches.into_iter().zip(infos) {
        let top = match info.and_then(|d| SwitchInfoRepr::parse(&d).map_err(|e| e.to_string())) {
            Ok(i) => i.linear_fdb_top,
            Err(e) => {
                out.errors
                    .push(format!("switch {}: {e}", switch_name(node)));
                continue;
            }
        };
        for block in 0..=LftBlockRepr::block_of(top) {
            queries.push(query(
                agent,
                path,
                attr::LINEAR_FORWARDING_TABLE,
                block,
                format!(
                    "LinearForwardingTable block {block} via {}",
                    path_text(path)
                ),
            ));
            asked.push((tables.len(), node, block));
        }
        tables.push(SwitchTable {
            guid: node.guid,
            description: node.description.clone(),
            lid: node.lid(),
            linear_fdb_top: top,
            routes: BTreeMap::new(),
        });
    }
    for (answer, (i, node, block)) in ask(port, &queries, settings)?.into_iter().zip(asked) {
        let b = match answer.and_then(|d| LftBlockRepr::parse(&d).map_err(|e| e.to_string())) {
            Ok(b) => b,
            Err(e) => {
                out.errors
                    .push(format!("switch {}: {e}", switch_name(node)));
                continue;
            }
        };
        let table = &mut tables[i];
        let first = block * LFT_BLOCK_LIDS as u32;
        for offset in 0..LFT_BLOCK_LIDS as u32 {
            let Ok(lid) = u16::try_from(first + offset) else {
                break;
            };
            if lid > table.linear_fdb_top {
                break;
            }
            if let Some(port) = b.out_port(lid) {
                table.routes.insert(lid, port);
            }
        }
    }
    out.switches = tables;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dump_reads_back_as_written_and_a_bad_one_is_named() {
        let dump = Dump {
            switches: vec![SwitchTable {
                guid: 0x0002_c903_0000_0001,
                description: "MF0;ib1:SX6036/U1".to_string(),
                lid: Some(3),
                linear_fdb_top: 9,
                routes: BTreeMap::from([(1, 1), (3, 0), (9, 36)]),
            }],
            errors: vec!["switch 0x0002c90300000002: no answer".to_string()],
        };
        let text = dump.to_json().to_string();
        assert_eq!(Dump::from_json(&text, "d.json").unwrap(), dump);
        for (text, says) in [
            ("{", "d.json: not a dump"),
            (r#"{"switches": [], "errors": [], "x": 1}"#, "unknown field"),
            (
                r#"{"switches": [{"guid": "2", "description": "", "lid": null, "linear_fdb_top": 0, "routes": []}], "errors": []}"#,
                "switch 0: guid `2`",
            ),
            (
                r#"{"switches": [{"guid": "0x0000000000000002", "description": "", "lid": null, "linear_fdb_top": 0, "routes": [{"lid": 1, "port": 1}, {"lid": 1, "port": 2}]}], "errors": []}"#,
                "two routes to LID 1",
            ),
        ] {
            let err = Dump::from_json(text, "d.json").unwrap_err().to_string();
            assert!(
                err.contains(says) && err.starts_with("d.json: "),
                "{says}: {err}"
            );
        }
    }
    use crate::subnet::{Link, PortAddress};
    use proptest::prelude::*;

    fn node(guid: u64, kind: NodeKind, name: &str, port: u8, lid: u16) -> Node {
        Node {
            guid,
            kind,
            description: name.into(),
            ports: 8,
            system_image_guid: guid,
            vendor_id: 0,
            device_id: 0,
            enhanced_port0: false,
            addressed_ports: vec![PortAddress {
                port,
                guid: guid + u64::from(port),
                lid,
                lmc: 0,
            }],
        }
    }

    fn link(a: (u64, u8), b: (u64, u8)) -> Link {
        Link {
            a: End {
                guid: a.0,
                port: a.1,
            },
            b: End {
                guid: b.0,
                port: b.1,
            },
            width: "4x".into(),
            speed: "SDR".into(),
        }
    }

    /// two-switches.net: host-1 (LID 2) on leaf-a port 1, host-3 (LID 5) on leaf-b port 1,
    /// leaf-a (LID 1) and leaf-b (LID 3) joined by ports 7 and 8.
    fn two_switches() -> Subnet {
        Subnet {
            nodes: vec![
                node(0xa0, NodeKind::Switch, "leaf-a", 0, 1),
                node(0xb0, NodeKind::Switch, "leaf-b", 0, 3),
                node(0x10, NodeKind::Ca, "host-1", 1, 2),
                node(0x30, NodeKind::Ca, "host-3", 1, 5),
            ],
            links: vec![
                link((0xa0, 1), (0x10, 1)),
                link((0xa0, 7), (0xb0, 7)),
                link((0xa0, 8), (0xb0, 8)),
                link((0xb0, 1), (0x30, 1)),
            ],
            origin: Some(End {
                guid: 0xa0,
                port: 0,
            }),
            errors: Vec::new(),
        }
    }

    /// Tables from `(switch, lid, port)` entries, 0xFF elsewhere.
    fn tables(
        entries: &[(u64, u16, u8)],
    ) -> impl FnMut(&Node, u32) -> Result<LftBlockRepr, RouteError> + '_ {
        move |n, block| {
            assert_eq!(block, 0);
            let mut b = LftBlockRepr { ports: [0xff; 64] };
            for &(g, lid, port) in entries {
                if g == n.guid {
                    b.ports[usize::from(lid)] = port;
                }
            }
            Ok(b)
        }
    }

    fn trace_lids(s: &Subnet, from: u16, to: u16, entries: &[(u64, u16, u8)]) -> Traced {
        let from = locate(s, Endpoint::Lid(from)).unwrap();
        let to = locate(s, Endpoint::Lid(to)).unwrap();
        trace(s, from, to, tables(entries)).unwrap()
    }

    #[test]
    fn endpoints_are_decimal_lids_or_hex_guids() {
        assert_eq!("5".parse(), Ok(Endpoint::Lid(5)));
        assert_eq!(
            "0x0002c90300000001".parse(),
            Ok(Endpoint::PortGuid(0x0002_c903_0000_0001))
        );
        for bad in [
            "0",
            "49152",
            "-1",
            "leaf-a",
            "0x",
            "0x12345678901234567",
            "0xzz",
            "",
        ] {
            let e = bad.parse::<Endpoint>().unwrap_err();
            assert!(e.contains(&format!("`{bad}`")), "{e}");
        }
    }

    #[test]
    fn a_route_crosses_each_switch_by_its_table() {
        let s = two_switches();
        let t = trace_lids(&s, 2, 5, &[(0xa0, 5, 7), (0xb0, 5, 1)]);
        assert_eq!(t.broken, None);
        let crossed: Vec<_> = t
            .hops
            .iter()
            .map(|h| (h.guid, h.in_port, h.out_port))
            .collect();
        assert_eq!(crossed, [(0xa0, 1, 7), (0xb0, 7, 1)]);
        let json = t.to_json();
        assert_eq!(json["hops"][0]["guid"], "0x00000000000000a0");
        assert_eq!(json["hops"][1]["description"], "leaf-b");
        assert_eq!(json["from"]["lid"], 2);
        assert_eq!(json["to"]["guid"], "0x0000000000000031");
        assert!(json["error"].is_null());
        // A switch as the destination: its table says port 0.
        let t = trace_lids(&s, 2, 3, &[(0xa0, 3, 8), (0xb0, 3, 0)]);
        assert_eq!(t.broken, None);
        assert_eq!(t.hops.last().map(|h| (h.in_port, h.out_port)), Some((8, 0)));
        // A switch as the source starts at port 0.
        let t = trace_lids(&s, 1, 5, &[(0xa0, 5, 8), (0xb0, 5, 1)]);
        assert_eq!(t.hops[0].in_port, 0);
        assert_eq!(t.broken, None);
    }

    #[test]
    fn loops_missing_entries_and_dead_ports_name_the_switch_and_lid() {
        let s = two_switches();
        let t = trace_lids(&s, 2, 5, &[(0xa0, 5, 7), (0xb0, 5, 8)]);
        assert_eq!(
            t.broken.as_ref().unwrap().to_string(),
            "routing loop towards LID 5: switch \"leaf-a\" (0x00000000000000a0, LID 1) is \
             entered again, by port 8"
        );
        assert_eq!(t.hops.len(), 2);
        let t = trace_lids(&s, 2, 5, &[(0xa0, 5, 7)]);
        let e = t.broken.unwrap().to_string();
        assert!(
            e.contains("LID 5") && e.contains("\"leaf-b\"") && e.contains("0xFF"),
            "{e}"
        );
        let t = trace_lids(&s, 2, 5, &[(0xa0, 5, 3)]);
        let e = t.broken.unwrap().to_string();
        assert!(
            e.contains("port 3, which has no active link") && e.contains("leaf-a"),
            "{e}"
        );
        // A table that delivers to the wrong host.
        let t = trace_lids(&s, 5, 2, &[(0xb0, 2, 7), (0xa0, 2, 0)]);
        let e = t.broken.unwrap().to_string();
        assert!(e.contains("ends at switch \"leaf-a\""), "{e}");
    }

    #[test]
    fn unknown_ports_are_refused_by_name() {
        let s = two_switches();
        let e = locate(&s, Endpoint::Lid(9)).unwrap_err().to_string();
        assert_eq!(e, "LID 9: no such port among the 4 nodes discovered");
        let e = locate(&s, Endpoint::PortGuid(7)).unwrap_err().to_string();
        assert!(e.starts_with("port GUID 0x0000000000000007"), "{e}");
        let host = locate(&s, Endpoint::PortGuid(0x31)).unwrap();
        assert_eq!((host.node, host.port, host.lid), (0x30, 1, 5));
    }

    #[test]
    fn directed_routes_go_through_switches_only() {
        let s = two_switches();
        let p = directed_paths(&s);
        assert_eq!(p[&0xa0], Vec::<u8>::new());
        assert_eq!(p[&0xb0], [7]);
        assert_eq!(p[&0x30], [7, 1]);
        let mut from_host = s.clone();
        from_host.origin = Some(End {
            guid: 0x10,
            port: 1,
        });
        let p = directed_paths(&from_host);
        assert_eq!(p[&0xb0], [1, 7]);
    }

    proptest! {
        /// Any tables whatever: the walk ends, crosses each switch at most once, and a
        /// route that arrives has no error.
        #[test]
        fn any_tables_end(ports in proptest::collection::vec(any::<u8>(), 8)) {
            let s = two_switches();
            let lids = [1u16, 2, 3, 5];
            let mut entries = Vec::new();
            for (i, &port) in ports.iter().enumerate() {
                let switch = if i < 4 { 0xa0 } else { 0xb0 };
                entries.push((switch, lids[i % 4], port % 10));
            }
            for from in lids {
                for to in lids {
                    let t = trace_lids(&s, from, to, &entries);
                    prop_assert!(t.hops.len() <= 2);
                    let _ = t.to_json();
                }
            }
        }
    }

    fn port(kind: NodeKind, guid: u64, port: u8, lid: u16, name: &str) -> Located {
        Located {
            node: guid - u64::from(port),
            kind,
            description: name.into(),
            port,
            port_guid: guid,
            lid,
        }
    }

    fn hop(guid: u64, name: &str, lid: u16, in_port: u8, out_port: u8) -> Hop {
        Hop {
            guid,
            description: name.into(),
            lid: Some(lid),
            in_port,
            out_port,
        }
    }

    #[test]
    fn the_table_reads_like_ibtracert() {
        let t = Traced {
            from: port(NodeKind::Ca, 0x100001, 1, 2, "host-1"),
            to: port(NodeKind::Ca, 0x100007, 1, 6, "host-4"),
            hops: vec![
                hop(0x200000, "leaf-a", 1, 1, 8),
                hop(0x200001, "leaf-b", 3, 8, 2),
            ],
            broken: None,
        };
        assert_eq!(
            t.to_ibtracert(),
            "From ca {0x0000000000100001} portnum 1 lid 2 \"host-1\"\n\
             [1] -> switch {0x0000000000200000}[1] lid 1 \"leaf-a\"\n\
             [8] -> switch {0x0000000000200001}[8] lid 3 \"leaf-b\"\n\
             [2] -> ca {0x0000000000100007}[1] lid 6 \"host-4\"\n\
             To ca {0x0000000000100007} portnum 1 lid 6 \"host-4\"\n\
             2 switches crossed\n"
        );
        let broken = Traced {
            hops: vec![hop(0x200000, "leaf-a", 1, 1, 8)],
            broken: Some(Broken::NoRoute {
                switch: "\"leaf-b\"".into(),
                lid: 6,
            }),
            ..t
        };
        let text = broken.to_ibtracert();
        assert!(
            text.ends_with(
                "route broken: no route to LID 6 at switch \"leaf-b\": its forwarding table \
                 entry is 0xFF\n1 switch crossed\n"
            ),
            "{text}"
        );
    }
}
