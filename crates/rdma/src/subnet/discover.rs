//! Directed-route discovery (IBA 14.2.2): from the local node, breadth first, one level of
//! the subnet per round trip. Each level takes two exchanges of many SMPs in flight
//! ([`crate::umad::rpc`]): first what each new node says of itself (NodeDescription,
//! SwitchInfo, PortInfo of its ports), then NodeInfo through each of its active ports that
//! no known link covers, which names the node behind it and the port it entered by. A
//! node answers at most once however many routes lead to it (NodeInfo's node GUID).
//!
//! `ibnetdiscover` walks the same way but one SMP at a time; a port that does not answer
//! is recorded in [`Subnet::errors`] and its branch left out, never waited on twice.

use super::{End, Link, Node, NodeKind, PortAddress, Subnet};
use crate::mad::smp::{
    self, node_description, NodeInfoRepr, NodeType, PortInfoRepr, PortState, Route, SmpPacket,
    SmpRequest, SwitchInfoRepr, MAX_HOPS,
};
use crate::umad::rpc::{exchange_in_order, Request, Settings};
use crate::umad::{Address, Agent, Port, UmadError};
use std::collections::{BTreeSet, HashMap};

/// Why discovery found nothing.
#[derive(Debug, thiserror::Error)]
pub enum DiscoverError {
    /// The port failed as a whole.
    #[error(transparent)]
    Umad(#[from] UmadError),
    /// The local node did not answer: no subnet can be walked from here.
    #[error("the local node did not answer NodeInfo: {0}")]
    Local(String),
}

/// Nodes beyond which discovery stops (a subnet has at most 48K unicast LIDs).
pub const MAX_NODES: usize = 49_152;

/// A node being walked: where it is and what it said.
struct Walked {
    path: Vec<u8>,
    info: NodeInfoRepr,
    index: usize,
    /// Each port's PortInfo, once read.
    port_info: HashMap<u8, PortInfoRepr>,
}

/// A directed route as `smpquery -D` spells it (`0,1,7`).
pub(super) fn path_text(path: &[u8]) -> String {
    std::iter::once("0".to_string())
        .chain(path.iter().map(u8::to_string))
        .collect::<Vec<_>>()
        .join(",")
}

/// One SMP to send and what it is for (for messages).
pub(super) struct Query {
    what: String,
    request: Request,
}

/// A directed-route Get of one attribute, `what` naming it in messages.
pub(super) fn query(
    agent: Agent,
    path: &[u8],
    attribute_id: u16,
    modifier: u32,
    what: String,
) -> Query {
    let mad = SmpRequest {
        route: Route::Directed(path.to_vec()),
        attribute_id,
        attribute_modifier: modifier,
        transaction_id: 0,
    }
    .emit()
    .expect("paths are bounded by MAX_HOPS");
    Query {
        what,
        request: Request {
            agent,
            to: Address::directed(),
            mad,
        },
    }
}

/// Sends `queries` and returns each answer's attribute data, or why there is none.
pub(super) fn ask(
    port: &mut Port,
    queries: &[Query],
    settings: Settings,
) -> Result<Vec<Result<[u8; 64], String>>, UmadError> {
    let requests: Vec<Request> = queries.iter().map(|q| q.request.clone()).collect();
    Ok(exchange_in_order(port, &requests, settings)?
        .into_iter()
        .zip(queries)
        .map(|(a, q)| {
            let bytes = match a {
                Ok(b) => b,
                Err(e) => return Err(format!("{}: {e}", q.what)),
            };
            let p = SmpPacket::new_checked(&bytes[..]).map_err(|e| format!("{}: {e}", q.what))?;
            if p.status() != 0 {
                return Err(format!(
                    "{}: {}",
                    q.what,
                    crate::mad::MadStatus::from_word(p.status())
                ));
            }
            let mut data = [0u8; 64];
            data.copy_from_slice(p.data());
            Ok(data)
        })
        .collect())
}

fn kind_of(t: NodeType) -> NodeKind {
    match t {
        NodeType::Switch => NodeKind::Switch,
        NodeType::Router => NodeKind::Router,
        _ => NodeKind::Ca,
    }
}

/// Walks the subnet from `port` with directed-route SMPs on `agent` (registered for class
/// 0x81).
pub fn discover(
    port: &mut Port,
    agent: Agent,
    settings: Settings,
) -> Result<Subnet, DiscoverError> {
    let mut subnet = Subnet::default();
    let local = ask(
        port,
        &[query(
            agent,
            &[],
            smp::attr::NODE_INFO,
            0,
            "NodeInfo of the local node".into(),
        )],
        settings,
    )?
    .remove(0)
    .map_err(DiscoverError::Local)?;
    let local = NodeInfoRepr::parse(&local).map_err(|e| DiscoverError::Local(e.to_string()))?;
    subnet.origin = Some(End {
        guid: local.node_guid,
        port: local.local_port,
    });
    let mut known: HashMap<u64, usize> = HashMap::new();
    let mut frontier = vec![new_node(&mut subnet, &mut known, Vec::new(), local)];
    while !frontier.is_empty() {
        describe(port, agent, settings, &mut subnet, &mut frontier)?;
        frontier = step(port, agent, settings, &mut subnet, &mut known, &frontier)?;
    }
    Ok(subnet)
}

fn new_node(
    subnet: &mut Subnet,
    known: &mut HashMap<u64, usize>,
    path: Vec<u8>,
    info: NodeInfoRepr,
) -> Walked {
    let index = subnet.nodes.len();
    known.insert(info.node_guid, index);
    subnet.nodes.push(Node {
        guid: info.node_guid,
        kind: kind_of(info.node_type),
        description: String::new(),
        ports: info.num_ports,
        system_image_guid: info.system_image_guid,
        vendor_id: info.vendor_id,
        device_id: info.device_id,
        enhanced_port0: false,
        addressed_ports: Vec::new(),
    });
    Walked {
        path,
        info,
        index,
        port_info: HashMap::new(),
    }
}

/// The ports of `w` worth a PortInfo: a switch's all (port 0 holds its LID), a CA's the
/// one it was entered by, and every port of the local node.
fn ports_to_read(w: &Walked) -> Vec<u8> {
    if w.info.node_type == NodeType::Switch {
        (0..=w.info.num_ports).collect()
    } else if w.path.is_empty() {
        (1..=w.info.num_ports).collect()
    } else {
        vec![w.info.local_port]
    }
}

/// Round one of a level: what each node of `frontier` says of itself.
fn describe(
    port: &mut Port,
    agent: Agent,
    settings: Settings,
    subnet: &mut Subnet,
    frontier: &mut [Walked],
) -> Result<(), UmadError> {
    enum Asked {
        Description(usize),
        Switch(usize),
        PortInfo(usize, u8),
    }
    let mut queries = Vec::new();
    let mut asked = Vec::new();
    for (i, w) in frontier.iter().enumerate() {
        let at = path_text(&w.path);
        queries.push(query(
            agent,
            &w.path,
            smp::attr::NODE_DESCRIPTION,
            0,
            format!("NodeDescription via {at}"),
        ));
        asked.push(Asked::Description(i));
        if w.info.node_type == NodeType::Switch {
            queries.push(query(
                agent,
                &w.path,
                smp::attr::SWITCH_INFO,
                0,
                format!("SwitchInfo via {at}"),
            ));
            asked.push(Asked::Switch(i));
        }
        for p in ports_to_read(w) {
            queries.push(query(
                agent,
                &w.path,
                smp::attr::PORT_INFO,
                u32::from(p),
                format!("PortInfo of port {p} via {at}"),
            ));
            asked.push(Asked::PortInfo(i, p));
        }
    }
    for (answer, what) in ask(port, &queries, settings)?.into_iter().zip(asked) {
        let data = match answer {
            Ok(d) => d,
            Err(e) => {
                subnet.errors.push(e);
                continue;
            }
        };
        match what {
            Asked::Description(i) => {
                let node = &mut subnet.nodes[frontier[i].index];
                node.description = node_description(&data).unwrap_or_default();
            }
            Asked::Switch(i) => {
                if let Ok(s) = SwitchInfoRepr::parse(&data) {
                    subnet.nodes[frontier[i].index].enhanced_port0 = s.enhanced_port0;
                }
            }
            Asked::PortInfo(i, p) => {
                let Ok(info) = PortInfoRepr::parse(&data) else {
                    continue;
                };
                let w = &mut frontier[i];
                // The port whose GUID NodeInfo gave: a switch's port 0 (all its ports
                // share it), a CA's port it was entered by.
                let addressed = if w.info.node_type == NodeType::Switch {
                    p == 0
                } else {
                    p == w.info.local_port
                };
                if addressed {
                    let node = &mut subnet.nodes[w.index];
                    node.addressed_ports.push(PortAddress {
                        port: p,
                        guid: w.info.port_guid,
                        lid: info.lid,
                        lmc: info.lmc,
                    });
                    node.addressed_ports.sort_by_key(|a| a.port);
                }
                w.port_info.insert(p, info);
            }
        }
    }
    Ok(())
}

/// A port with a link up behind it.
fn is_up(info: &PortInfoRepr) -> bool {
    !matches!(info.port_state, PortState::Down | PortState::Other(0))
}

/// Round two of a level: NodeInfo behind each active port of `frontier` that no known link
/// covers; links recorded, new nodes returned as the next level.
fn step(
    port: &mut Port,
    agent: Agent,
    settings: Settings,
    subnet: &mut Subnet,
    known: &mut HashMap<u64, usize>,
    frontier: &[Walked],
) -> Result<Vec<Walked>, UmadError> {
    let linked: BTreeSet<End> = subnet.links.iter().flat_map(|l| [l.a, l.b]).collect();
    let mut queries = Vec::new();
    let mut from = Vec::new();
    for w in frontier {
        let forwards = w.info.node_type == NodeType::Switch || w.path.is_empty();
        if !forwards || w.path.len() >= MAX_HOPS {
            continue;
        }
        let mut ports: Vec<_> = w
            .port_info
            .iter()
            .filter(|(p, i)| **p != 0 && is_up(i))
            .map(|(p, _)| *p)
            .collect();
        ports.sort_unstable();
        for p in ports {
            if linked.contains(&End {
                guid: w.info.node_guid,
                port: p,
            }) {
                continue;
            }
            let mut path = w.path.clone();
            path.push(p);
            queries.push(query(
                agent,
                &path,
                smp::attr::NODE_INFO,
                0,
                format!("NodeInfo via {}", path_text(&path)),
            ));
            from.push((w, p, path));
        }
    }
    let mut next = Vec::new();
    for (answer, (w, p, path)) in ask(port, &queries, settings)?.into_iter().zip(from) {
        let info = match answer.and_then(|d| NodeInfoRepr::parse(&d).map_err(|e| e.to_string())) {
            Ok(i) => i,
            Err(e) => {
                subnet.errors.push(e);
                continue;
            }
        };
        let here = End {
            guid: w.info.node_guid,
            port: p,
        };
        let there = End {
            guid: info.node_guid,
            port: info.local_port,
        };
        if subnet
            .links
            .iter()
            .any(|l| l.a == here || l.b == here || l.a == there || l.b == there)
        {
            continue;
        }
        let pi = &w.port_info[&p];
        subnet.links.push(Link {
            a: here,
            b: there,
            width: pi.width().to_string(),
            speed: pi.speed().to_string(),
        });
        if !known.contains_key(&info.node_guid) && subnet.nodes.len() < MAX_NODES {
            next.push(new_node(subnet, known, path, info));
        }
    }
    Ok(next)
}
