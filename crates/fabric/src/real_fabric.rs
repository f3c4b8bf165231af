//! A real fabric simulated: the subnet its ibnetdiscover file (or discovery) gives,
//! recognised as the fat tree it is ([`crate::cabling`]) so that a real fabric can be
//! simulated, or, when it is none (a ring, a mesh, switches of several radixes), simulated
//! as it is cabled ([`Topology::graph`]) and routed as opensm's up/down engine routes it;
//! any tree routed as an engine or a subnet manager's tables route it; and its links at the
//! rates they were trained at. This is `--topology` of `hostping fabric sim`, a cluster
//! file's `[fabric] topology`, and the collector's fabric.
//!
//! Reading the file is the host layer's (`rdma::subnet::topofile`); `hostping` hands the
//! subnet over as a [`RealSubnet`], in this crate's words, and the tables of `fabric route
//! --dump` as [`RouteTables`].

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::cabling::{Cable, CableEnd, Cabling, Device, NotAFatTree, Recognized};
use crate::summary::FabricOrigin;
use crate::topology::{
    Engine, GraphLayout, GraphRouting, SwitchId, Topology, TopologyError, NO_ENTRY,
};

/// A real subnet as its ibnetdiscover file or discovery gives it: what recognising and
/// simulating it needs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RealSubnet {
    /// Its switches, channel adapters and routers.
    pub nodes: Vec<RealNode>,
    /// The links between their ports.
    pub links: Vec<RealLink>,
}

/// What a node of a real subnet is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RealNodeKind {
    /// A switch.
    Switch,
    /// A channel adapter (an HCA, or a switch's SHARP Aggregation Node).
    Ca,
    /// A router: an end of the tree for the simulator, as a host is.
    Router,
}

/// One node of a real subnet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RealNode {
    /// Node GUID.
    pub guid: u64,
    /// Switch, CA or router.
    pub kind: RealNodeKind,
    /// NodeDescription.
    pub description: String,
    /// Physical ports.
    pub ports: u8,
    /// Device id (the switch model).
    pub device_id: u16,
    /// Each addressed port's number and LID (0 before a subnet manager assigned one).
    pub lids: Vec<(u8, u16)>,
}

/// One end of a link: a node's port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RealEnd {
    /// The node's GUID.
    pub guid: u64,
    /// The port number.
    pub port: u8,
}

/// A link between two ports, at the rate it was trained at.
#[derive(Debug, Clone, PartialEq)]
pub struct RealLink {
    /// One end.
    pub a: RealEnd,
    /// The other end.
    pub b: RealEnd,
    /// Width and speed as the file names them (`4xEDR`).
    pub rate: String,
    /// Its data rate, Gb/s, when the rate is one hostping knows.
    pub data_gbps: Option<f64>,
}

/// A subnet manager's forwarding tables, as `fabric route --dump` writes them: each
/// switch's (by GUID) output port for each LID it routes.
pub type RouteTables = HashMap<u64, BTreeMap<u16, u8>>;

/// Why a real fabric, or a tree's routes, cannot be simulated. Messages name the file, the
/// switch, the port or the LID at fault.
#[derive(Debug, thiserror::Error)]
pub enum RealFabricError {
    /// The cabling is no fat tree, or has no graph the simulator routes.
    #[error(transparent)]
    NotAFatTree(#[from] NotAFatTree),
    /// The tree or graph the simulator refuses.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// `--routes` for a tree given by parameters.
    #[error(
        "--routes {file}: a subnet manager's tables route a real fabric; give its \
         ibnetdiscover file as --topology"
    )]
    RoutesWithoutFabric {
        /// The tables' file.
        file: String,
    },
    /// A switch of the tree without a table.
    #[error("{file}: no table for switch '{switch}' ({guid})")]
    NoTable {
        /// The tables' file.
        file: String,
        /// The switch, by name.
        switch: String,
        /// Its GUID, as the tables write it.
        guid: String,
    },
    /// A switch without a route to a node's LID.
    #[error("{file}: switch '{switch}' has no route to LID {lid} ({host})")]
    NoRoute {
        /// The tables' file.
        file: String,
        /// The switch, by name.
        switch: String,
        /// The LID.
        lid: u16,
        /// The host it addresses.
        host: String,
    },
    /// A route out of a port that is no link of the tree.
    #[error(
        "{file}: switch '{switch}' sends LID {lid} ({host}) out of port {port}, which is no \
         link of the tree"
    )]
    NotALink {
        /// The tables' file.
        file: String,
        /// The switch, by name.
        switch: String,
        /// The LID.
        lid: u16,
        /// The host it addresses.
        host: String,
        /// The output port.
        port: u8,
    },
    /// Tables whose routes the simulator refuses (a loop, a route that leads nowhere).
    #[error("--routes {file}")]
    Routes {
        /// The tables' file.
        file: String,
        /// Why.
        #[source]
        source: TopologyError,
    },
    /// A cable at a rate without a known data rate.
    #[error(
        "the link from '{a}' port {a_port} to '{b}' port {b_port} runs at {rate}, a rate whose \
         data rate hostping does not know; --link-gbps runs every link at one rate instead"
    )]
    UnknownRate {
        /// One end's device.
        a: String,
        /// Its port.
        a_port: u16,
        /// The other end's device.
        b: String,
        /// Its port.
        b_port: u16,
        /// The rate as the file names it.
        rate: String,
    },
    /// No switch has a cable.
    #[error("the fabric has no switch with a cable")]
    NoCabledSwitch,
    /// Switches of several port counts, where a fat tree has one radix.
    #[error(
        "switch '{first}' has {first_ports} ports and '{other}' has {other_ports}; the \
         simulator's fat trees have one radix"
    )]
    Radixes {
        /// The first cabled switch.
        first: String,
        /// Its ports.
        first_ports: u16,
        /// A switch with another port count.
        other: String,
        /// Its ports.
        other_ports: u16,
    },
    /// A real fabric that is neither a fat tree nor a graph the simulator runs.
    #[error(
        "{file}: cannot be simulated as cabled{}",
        not_a_tree.as_ref().map_or_else(String::new, |why| format!(": {file}: not a fat tree ({why})"))
    )]
    NotSimulable {
        /// The ibnetdiscover file.
        file: String,
        /// Why it is not a fat tree, when it was recognised as one first.
        not_a_tree: Option<String>,
        /// What reading it left out, one line each: still what the file holds.
        notes: Vec<String>,
        /// Why it cannot be simulated as cabled.
        #[source]
        source: Box<RealFabricError>,
    },
}

/// The tree to simulate, and the real fabric it stands for when it came from one.
pub struct TreeInput {
    /// The tree (or graph) to simulate.
    pub topology: Topology,
    /// The real fabric it stands for, when it came from one.
    pub fabric: Option<FabricOrigin>,
    /// What reading a real fabric left out or passed over, one line each, for stderr.
    pub notes: Vec<String>,
    /// A real fabric's link rates, when the file gives them.
    pub rates: Option<FabricRates>,
    /// A real fabric's addresses, for its subnet manager's tables (`--routes`).
    pub addresses: Option<TreeAddresses>,
    /// Why a real fabric is simulated as cabled rather than as a fat tree, when it is not one.
    pub not_a_tree: Option<String>,
}

/// The rates a real fabric's links were trained at, as the file gives them.
pub struct FabricRates {
    /// The rate most links run at, Gb/s of data (`4xEDR`: 100).
    pub common_gbps: f64,
    /// Each tree port's link rate, Gb/s, by port index, where some link runs at another
    /// rate than the common one; `None` when all run at it.
    pub per_port: Option<Vec<f64>>,
    /// The rates seen and how many cables run at each, most common first (`4xQDR x 145`).
    pub seen: Vec<(String, usize)>,
}

impl TreeInput {
    /// Whether the tree is a real fabric's, read from its ibnetdiscover file, so that a
    /// subnet manager's tables can route it ([`TreeInput::with_routes`]).
    pub fn is_real(&self) -> bool {
        self.fabric.is_some() && self.addresses.is_some()
    }

    /// The tree routed by the subnet manager's `tables`, read from `file` (`fabric route
    /// --dump -o FILE`), instead of the simulator's rules; it must be a real fabric's, read
    /// from its ibnetdiscover file. A switch without a table, a destination without a route, a port
    /// that is no link of the tree, a loop or a route that leads nowhere are refused, naming
    /// the switch and the LID. Tables that route a fat tree otherwise than as one (a longer
    /// way round) route its cables as a graph, as they run.
    pub fn with_routes(
        mut self,
        file: &str,
        tables: &RouteTables,
    ) -> Result<TreeInput, RealFabricError> {
        let shown = file.to_string();
        let (Some(fabric), Some(addresses)) = (&self.fabric, &self.addresses) else {
            return Err(RealFabricError::RoutesWithoutFabric { file: shown });
        };
        let t = &self.topology;
        let nodes = t.num_nodes() as usize;
        let mut ports = vec![NO_ENTRY; t.num_switches() as usize * nodes];
        for s in 0..t.num_switches() {
            let switch = SwitchId(s);
            let name = &fabric.switches[s as usize];
            let guid = addresses.switch_guids[s as usize];
            let table = tables.get(&guid).ok_or_else(|| RealFabricError::NoTable {
                file: shown.clone(),
                switch: name.clone(),
                guid: guid_text(guid),
            })?;
            let base = t.port_base(switch) as usize;
            for (n, lid) in addresses.node_lids.iter().enumerate() {
                let Some(lid) = *lid else { continue };
                let host = fabric.hosts[n].as_deref().unwrap_or("?");
                let Some(&out) = table.get(&lid) else {
                    return Err(RealFabricError::NoRoute {
                        file: shown,
                        switch: name.clone(),
                        lid,
                        host: host.to_string(),
                    });
                };
                let port = (0..t.ports(switch))
                    .find(|&p| fabric.ports[base + usize::from(p)] == u16::from(out))
                    .ok_or_else(|| RealFabricError::NotALink {
                        file: shown.clone(),
                        switch: name.clone(),
                        lid,
                        host: host.to_string(),
                        port: out,
                    })?;
                ports[s as usize * nodes + n] = port;
            }
        }
        let not_as_a_tree = match self.topology.clone().with_forwarding(ports.clone()) {
            Ok(routed) => {
                self.topology = routed;
                return Ok(self);
            }
            Err(e) if !self.topology.is_graph() => e,
            Err(source) => {
                return Err(RealFabricError::Routes {
                    file: shown,
                    source,
                })
            }
        };
        // The tree's cables as a graph number switches, nodes and ports as the tree does.
        let free = self.topology.free_nodes().to_vec();
        let graph = tree_as_graph(&self.topology, Engine::MinHop)?.with_free_nodes(free);
        self.topology = graph
            .with_forwarding(ports)
            .map_err(|source| RealFabricError::Routes {
                file: shown.clone(),
                source,
            })?;
        self.not_a_tree = Some(format!(
            "its subnet manager's tables do not route it as one: {not_as_a_tree}"
        ));
        Ok(self)
    }

    /// The tree to run and the one rate of the run, Gb/s: `--link-gbps` for every link when
    /// given; otherwise the rates the fabric's file gives (each link at its own); otherwise
    /// 100 Gb/s. A line for stderr says which.
    pub fn with_rates(
        self,
        link_gbps: Option<f64>,
    ) -> Result<(Topology, f64, Option<String>), RealFabricError> {
        let Some(rates) = self.rates else {
            return Ok((self.topology, link_gbps.unwrap_or(DEFAULT_LINK_GBPS), None));
        };
        let seen = rates
            .seen
            .iter()
            .map(|(rate, n)| format!("{rate} x {n}"))
            .collect::<Vec<_>>()
            .join(", ");
        if let Some(gbps) = link_gbps {
            let line = format!(
                "every link at {gbps} Gb/s as --link-gbps says; the file's cables run at {seen}"
            );
            return Ok((self.topology, gbps, Some(line)));
        }
        let line = match rates.per_port {
            None => format!(
                "links at {} Gb/s, the file's rate ({seen})",
                rates.common_gbps
            ),
            Some(_) => format!(
                "each link at its own rate, as the file gives them ({seen}); {} Gb/s is the \
                 rate of the run (loads, counters)",
                rates.common_gbps
            ),
        };
        let topology = match rates.per_port {
            None => self.topology,
            Some(per_port) => self.topology.with_link_rates(per_port)?,
        };
        Ok((topology, rates.common_gbps, Some(line)))
    }
}

/// The rate of a run without `--link-gbps` on a tree without rates of its own, Gb/s (4xEDR).
pub const DEFAULT_LINK_GBPS: f64 = 100.0;

/// The node description SHARP Aggregation Nodes report (one per switch on HDR/NDR fabrics).
const AGGREGATION_NODE: &str = "Mellanox Technologies Aggregation Node";

impl TreeInput {
    /// A tree given by parameters (a built-in or a TOML file), simulated as cabled and
    /// routed by `engine` when one is given (its cables, routed as the subnet manager would).
    pub fn tree(topology: Topology, engine: Option<Engine>) -> Result<TreeInput, RealFabricError> {
        let topology = match engine {
            None => topology,
            Some(engine) => tree_as_graph(&topology, engine)?,
        };
        Ok(TreeInput {
            topology,
            fabric: None,
            notes: Vec::new(),
            rates: None,
            addresses: None,
            not_a_tree: None,
        })
    }

    /// A real fabric read from `file` (its name: the file's stem): the fat tree it is, or,
    /// when it is none or `engine` is given, simulated as cabled ([`TreeInput::cabled`]).
    /// `notes` holds what reading the file passed over; what recognising it leaves out joins
    /// them. A fabric that cannot be simulated at all is refused with those notes.
    pub fn real(
        file: &str,
        subnet: &RealSubnet,
        mut notes: Vec<String>,
        engine: Option<Engine>,
    ) -> Result<TreeInput, RealFabricError> {
        let name = std::path::Path::new(file)
            .file_stem()
            .map_or_else(|| file.to_string(), |s| s.to_string_lossy().into_owned());
        let fabric = RealFabric::of(subnet);
        notes.extend(fabric.notes.iter().cloned());
        let not_a_tree = match engine {
            Some(_) => None,
            None => match recognize_real(&fabric, &name, &mut notes) {
                Ok((recognized, rates)) => {
                    let origin = FabricOrigin::of(file, &recognized);
                    let addresses =
                        TreeAddresses::of(subnet, &recognized.switch_names, &recognized.node_hosts);
                    return Ok(TreeInput {
                        topology: recognized.topology,
                        fabric: Some(origin),
                        notes,
                        rates: Some(rates),
                        addresses: Some(addresses),
                        not_a_tree: None,
                    });
                }
                Err(e) => Some(chain(&e)),
            },
        };
        match Self::cabled(file, &name, subnet, &fabric, engine) {
            Ok(mut input) => {
                input.notes = notes;
                input.not_a_tree = not_a_tree;
                Ok(input)
            }
            Err(e) => Err(RealFabricError::NotSimulable {
                file: file.to_string(),
                not_a_tree,
                notes,
                source: Box::new(e),
            }),
        }
    }

    /// A real fabric simulated as cabled: every switch, host and cable it has (but the
    /// SHARP Aggregation Nodes and loopback cables), routed by `engine` (up/down unless
    /// given), each link at its own rate.
    fn cabled(
        file: &str,
        name: &str,
        subnet: &RealSubnet,
        fabric: &RealFabric,
        engine: Option<Engine>,
    ) -> Result<TreeInput, RealFabricError> {
        let (spec, host_ends) = fabric.cabling.graph_spec(name, &fabric.switch_guids)?;
        let (topology, layout) = Topology::graph(&spec, engine.unwrap_or(Engine::UpDown))?;
        let switch_names: Vec<String> = layout
            .switches
            .iter()
            .map(|&s| fabric.cabling.switches[s].clone())
            .collect();
        let node_hosts: Vec<Option<(String, u16)>> = layout
            .node_hosts
            .iter()
            .map(|h| {
                h.map(|h| {
                    let end = host_ends[h];
                    (fabric.cabling.name(end.device).to_string(), end.port)
                })
            })
            .collect();
        let rates = fabric.rates_of(&fabric.cabling, &topology, &layout)?;
        let origin = FabricOrigin {
            file: file.to_string(),
            switches: switch_names.clone(),
            free_nodes: topology.free_nodes().to_vec(),
            missing_cables: Vec::new(),
            ports: layout.fabric_ports.clone(),
            hosts: node_hosts
                .iter()
                .map(|h| h.as_ref().map(|(name, _)| name.clone()))
                .collect(),
        };
        let addresses = TreeAddresses::of(subnet, &switch_names, &node_hosts);
        Ok(TreeInput {
            topology,
            fabric: Some(origin),
            notes: Vec::new(),
            rates: Some(rates),
            addresses: Some(addresses),
            not_a_tree: None,
        })
    }

    /// What was recognised and what was left out, for stderr; `None` for a tree given by
    /// parameters.
    pub fn describe(&self) -> Option<String> {
        let t = &self.topology;
        if let Some(routing) = t.graph_routing() {
            return Some(self.describe_graph(routing));
        }
        let fabric = self.fabric.as_ref()?;
        let shape = if t.num_aggs() == 0 {
            format!(
                "a one-level tree: one switch with {} node ports",
                t.nodes_per_leaf()
            )
        } else if t.num_cores() == 0 {
            format!(
                "a two-level fat tree: {} leaves ({} node ports each) under {} spines",
                t.num_leaves(),
                t.nodes_per_leaf(),
                t.num_aggs()
            )
        } else {
            format!(
                "a three-level fat tree: {} leaves ({} node ports each) and {} aggregation \
                 switches in {} pods under {} cores",
                t.num_leaves(),
                t.nodes_per_leaf(),
                t.num_aggs(),
                t.num_pods(),
                t.num_cores()
            )
        };
        let mut line = format!("{}: {shape}; radix {}", fabric.file, t.radix());
        if !fabric.free_nodes.is_empty() {
            line += &format!(
                "; {} of its {} nodes have no host cabled (free leaf ports) and get no \
                 ranks unless a mapping file places them there",
                fabric.free_nodes.len(),
                t.num_nodes()
            );
        }
        if !fabric.missing_cables.is_empty() {
            line += &format!(
                "\n{}: note: simulated without the missing cables, as the fabric runs: {}",
                fabric.file,
                fabric.missing_cables.join(", ")
            );
        }
        for note in &self.notes {
            line += &format!("\n{}: note: {note}", fabric.file);
        }
        Some(line)
    }
}

impl TreeInput {
    /// A graph's line for stderr: why it is simulated as cabled, how it is routed, its size.
    fn describe_graph(&self, routing: &GraphRouting) -> String {
        let t = &self.topology;
        let what = self
            .fabric
            .as_ref()
            .map_or_else(|| t.name().to_string(), |f| f.file.clone());
        let why = match &self.not_a_tree {
            Some(why) => format!("not a fat tree ({why}): "),
            None => String::new(),
        };
        let ports = (0..t.num_switches()).map(|s| t.ports(SwitchId(s)));
        let (least, most) = (ports.clone().min().unwrap_or(0), ports.max().unwrap_or(0));
        let radix = if least == most {
            format!("{most} ports each")
        } else {
            format!("{least} to {most} ports")
        };
        let mut line = format!(
            "{what}: {why}simulated as cabled, {routing}; {} switches ({radix}, node slots \
             counted), {} hosts, paths of up to {} hops",
            t.num_switches(),
            t.compute_nodes().len(),
            t.diameter()
        );
        for note in &self.notes {
            line += &format!("\n{what}: note: {note}");
        }
        line
    }
}

/// The fat tree a real subnet is, once what is not part of it is left out (each left-out
/// thing noted in `notes`), and its links' rates.
fn recognize_real(
    fabric: &RealFabric,
    name: &str,
    notes: &mut Vec<String>,
) -> Result<(Recognized, FabricRates), RealFabricError> {
    let (compute, above) = fabric.cabling.without_hosts_above_leaves();
    if !above.is_empty() {
        notes.push(format!(
            "left out {} hosts cabled to switches above the leaves (management, UFM, login or \
             storage hosts, not compute nodes): {}",
            above.len(),
            above.join(", ")
        ));
    }
    let (compute, extra) = compute.without_extra_pods();
    let recognized = fabric.radix(&compute).and_then(|radix| {
        compute
            .recognize_with_radix(name, Some(radix))
            .map_err(RealFabricError::from)
    });
    if !extra.is_empty() {
        let hosts: usize = extra.iter().map(|(_, hosts)| hosts.len()).sum();
        let named: Vec<String> = extra
            .iter()
            .map(|(switch, hosts)| format!("'{switch}' ({})", hosts.join(", ")))
            .collect();
        // A two-level tree's top rank is its spines.
        let top = match &recognized {
            Ok(tree) if tree.topology.num_cores() == 0 => "spines",
            _ => "cores",
        };
        notes.push(format!(
            "left out {} switches cabled into the {top} beside the tree (an extra pod: \
             management, UFM or storage switches) and their {hosts} hosts: {}",
            extra.len(),
            named.join(", ")
        ));
    }
    let recognized = recognized?;
    let layout = GraphLayout {
        switches: recognized.fabric_switches.clone(),
        node_hosts: Vec::new(),
        fabric_ports: recognized.fabric_ports.clone(),
    };
    let rates = fabric.rates_of(&compute, &recognized.topology, &layout)?;
    Ok((recognized, rates))
}

/// A node's name in the fabric's cabling: its description, with its GUID where two share one
/// (as every unconfigured switch of a vendor does) or it has none.
fn fabric_name(subnet: &RealSubnet, guid: u64, description: &str) -> String {
    let shared = subnet
        .nodes
        .iter()
        .filter(|n| n.description == description)
        .count()
        > 1;
    if description.is_empty() || shared {
        format!("{description} ({})", guid_text(guid))
            .trim()
            .to_string()
    } else {
        description.to_string()
    }
}

/// What a subnet manager's tables are keyed by, for each part of the recognised tree: each
/// switch's GUID, and the LID of each node's CA port (`None` on a free leaf port).
pub struct TreeAddresses {
    switch_guids: Vec<u64>,
    node_lids: Vec<Option<u16>>,
}

impl TreeAddresses {
    /// The GUIDs of `switch_names` and the LIDs of `node_hosts` (name and port) in `subnet`.
    fn of(
        subnet: &RealSubnet,
        switch_names: &[String],
        node_hosts: &[Option<(String, u16)>],
    ) -> TreeAddresses {
        let by_name: HashMap<String, &RealNode> = subnet
            .nodes
            .iter()
            .map(|n| (fabric_name(subnet, n.guid, &n.description), n))
            .collect();
        let switch_guids = switch_names.iter().map(|name| by_name[name].guid).collect();
        let node_lids = node_hosts
            .iter()
            .map(|host| {
                let (name, port) = host.as_ref()?;
                let node = by_name.get(name)?;
                let &(_, lid) = node.lids.iter().find(|(p, _)| u16::from(*p) == *port)?;
                (lid != 0).then_some(lid)
            })
            .collect();
        TreeAddresses {
            switch_guids,
            node_lids,
        }
    }
}

/// A real subnet as cables, without what is not part of the tree: SHARP Aggregation Nodes
/// (CAs inside the switches, no ranks run on them) and loopback cables (a port cabled to
/// another port of its own switch). Each cable keeps its rate, each switch its port count.
struct RealFabric {
    cabling: Cabling,
    /// GUID of each switch, by [`Cabling::switches`] index.
    switch_guids: Vec<u64>,
    /// Rate of each cable as the file names it (`4xEDR`) and its data rate in Gb/s when
    /// known, by either end.
    rates: HashMap<CableEnd, (String, Option<f64>)>,
    /// Port count of each switch, by index.
    ports: Vec<u16>,
    notes: Vec<String>,
}

impl RealFabric {
    /// Switches and channel adapters named by node description (with the GUID where two
    /// share one, as every unconfigured switch of a vendor does).
    fn of(subnet: &RealSubnet) -> RealFabric {
        let name = |guid: u64, description: &str| fabric_name(subnet, guid, description);
        let mut cabling = Cabling::default();
        let mut switch_guids = Vec::new();
        let mut ports = Vec::new();
        // Device id and port count of each switch, by index.
        let mut models = Vec::new();
        let mut device = HashMap::new();
        let mut aggregation_nodes = HashSet::new();
        for node in &subnet.nodes {
            let named = name(node.guid, &node.description);
            let d = match node.kind {
                RealNodeKind::Switch => {
                    cabling.switches.push(named);
                    switch_guids.push(node.guid);
                    ports.push(u16::from(node.ports));
                    models.push((node.device_id, node.ports));
                    Device::Switch(cabling.switches.len() - 1)
                }
                RealNodeKind::Ca if node.description == AGGREGATION_NODE => {
                    aggregation_nodes.insert(node.guid);
                    continue;
                }
                // A router is an end of the tree for the simulator, as a host is.
                RealNodeKind::Ca | RealNodeKind::Router => {
                    cabling.hosts.push(named);
                    Device::Host(cabling.hosts.len() - 1)
                }
            };
            device.insert(node.guid, d);
        }
        let mut notes = Vec::new();
        if !aggregation_nodes.is_empty() {
            notes.push(format!(
                "left out {} SHARP Aggregation Nodes (\"{AGGREGATION_NODE}\": \
                 the switches' in-network reduction engines, not compute nodes; their ports are not \
                 counted in the switches' radix)",
                aggregation_nodes.len()
            ));
        }
        let mut loops = Vec::new();
        let mut rates = HashMap::new();
        // Switches whose last port holds an Aggregation Node, and their models.
        let mut with_node = HashSet::new();
        let mut models_with_node = HashSet::new();
        for link in &subnet.links {
            let end = |e: RealEnd| {
                device.get(&e.guid).map(|&d| CableEnd {
                    device: d,
                    port: u16::from(e.port),
                })
            };
            let (Some(a), Some(b)) = (end(link.a), end(link.b)) else {
                // An Aggregation Node takes a port of its switch (port 37 of a 36-port
                // MSB7800): not one a cable can use.
                for (here, far) in [(link.a, link.b), (link.b, link.a)] {
                    if let (Some(Device::Switch(s)), true) = (
                        device.get(&here.guid),
                        aggregation_nodes.contains(&far.guid),
                    ) {
                        ports[*s] = ports[*s].saturating_sub(1);
                        with_node.insert(*s);
                        if here.port == models[*s].1 {
                            models_with_node.insert(models[*s]);
                        }
                    }
                }
                continue;
            };
            if a.device == b.device {
                loops.push(format!(
                    "'{}' {}-{}",
                    cabling.name(a.device),
                    a.port,
                    b.port
                ));
                continue;
            }
            let rate = (link.rate.clone(), link.data_gbps);
            rates.insert(a, rate.clone());
            rates.insert(b, rate);
            cabling.cables.push(Cable { a, b });
        }
        // The same model's last port is its Aggregation Node's port where the node is off
        // or not reported (an MQM9700 spine's port 65 beside leaves whose port 65 holds one).
        let cabled_last = |s: usize| {
            cabling.cables.iter().any(|c| {
                [c.a, c.b]
                    .iter()
                    .any(|e| e.device == Device::Switch(s) && e.port == u16::from(models[s].1))
            })
        };
        let mut internal = Vec::new();
        for s in 0..ports.len() {
            if models_with_node.contains(&models[s]) && !with_node.contains(&s) && !cabled_last(s) {
                ports[s] = ports[s].saturating_sub(1);
                internal.push(format!("'{}' port {}", cabling.switches[s], models[s].1));
            }
        }
        if !internal.is_empty() {
            notes.push(format!(
                "counted {} as the SHARP Aggregation Node port that the same switch model has \
                 (no node reported there), not a port of the radix",
                internal.join(", ")
            ));
        }
        if !loops.is_empty() {
            notes.push(format!(
                "left out {} loopback cables (a port cabled to another port of its own switch, \
                 not a link of the tree): {}",
                loops.len(),
                loops.join(", ")
            ));
        }
        RealFabric {
            cabling,
            switch_guids,
            rates,
            ports,
            notes,
        }
    }

    /// The rates of the topology's links from the cables they stand for (`layout`: the
    /// fabric switch and port of each of its switches and ports): the most common rate, and
    /// each port's own where some cable runs at another (a 4xDDR link in an EDR fabric).
    /// Free node ports and absent links take the common rate; they carry nothing. Refuses a
    /// rate the rate table does not know, naming the link.
    fn rates_of(
        &self,
        compute: &Cabling,
        t: &Topology,
        layout: &GraphLayout,
    ) -> Result<FabricRates, RealFabricError> {
        // Cables per rate, with its data rate.
        let mut counts: HashMap<&str, (usize, Option<f64>)> = HashMap::new();
        for cable in &compute.cables {
            let (rate, gbps) = &self.rates[&cable.a];
            counts.entry(rate.as_str()).or_insert((0, *gbps)).0 += 1;
        }
        if let Some(cable) = compute.cables.iter().find(|c| self.rates[&c.a].1.is_none()) {
            return Err(RealFabricError::UnknownRate {
                a: compute.name(cable.a.device).to_string(),
                a_port: cable.a.port,
                b: compute.name(cable.b.device).to_string(),
                b_port: cable.b.port,
                rate: self.rates[&cable.a].0.clone(),
            });
        }
        let mut by_count: Vec<(&str, usize, Option<f64>)> = counts
            .into_iter()
            .map(|(rate, (n, gbps))| (rate, n, gbps))
            .collect();
        by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let common_gbps = by_count
            .first()
            .and_then(|&(_, _, gbps)| gbps)
            .unwrap_or(DEFAULT_LINK_GBPS);
        let seen: Vec<(String, usize)> = by_count
            .iter()
            .map(|&(rate, n, _)| (rate.to_string(), n))
            .collect();
        let per_port = (seen.len() > 1).then(|| {
            (0..t.num_ports() as u32)
                .map(|index| {
                    let port = t.port_ref(index);
                    let end = CableEnd {
                        device: Device::Switch(layout.switches[port.switch.0 as usize]),
                        port: layout.fabric_ports[index as usize],
                    };
                    self.rates
                        .get(&end)
                        .and_then(|(_, gbps)| *gbps)
                        .unwrap_or(common_gbps)
                })
                .collect()
        });
        Ok(FabricRates {
            common_gbps,
            per_port,
            seen,
        })
    }

    /// The one port count (from the node headers) of the switches `compute` cables: the
    /// simulator's trees have one radix.
    fn radix(&self, compute: &Cabling) -> Result<u16, RealFabricError> {
        let cabled = |s: usize| {
            let switch = Device::Switch(s);
            compute
                .cables
                .iter()
                .any(|c| c.a.device == switch || c.b.device == switch)
        };
        let switches: Vec<usize> = (0..compute.switches.len()).filter(|&s| cabled(s)).collect();
        let first = *switches.first().ok_or(RealFabricError::NoCabledSwitch)?;
        if let Some(&other) = switches
            .iter()
            .find(|&&s| self.ports[s] != self.ports[first])
        {
            return Err(RealFabricError::Radixes {
                first: compute.switches[first].clone(),
                first_ports: self.ports[first],
                other: compute.switches[other].clone(),
                other_ports: self.ports[other],
            });
        }
        Ok(self.ports[first])
    }
}

/// A tree's cables as a graph routed by `engine` (switch GUIDs: their numbers, from 1).
fn tree_as_graph(tree: &Topology, engine: Engine) -> Result<Topology, RealFabricError> {
    let cabling = Cabling::of_tree(tree);
    let ids: Vec<u64> = (1..=cabling.switches.len() as u64).collect();
    let (spec, _) = cabling.graph_spec(tree.name(), &ids)?;
    Ok(Topology::graph(&spec, engine)?.0)
}

/// A GUID as ibnetdiscover and the tables' files write it (`0x0002c90300a1b2c3`).
fn guid_text(guid: u64) -> String {
    format!("0x{guid:016x}")
}

/// An error and its sources, one after the other (`why: because: ...`).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text += &format!(": {s}");
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The subnet a simulated tree would be as discovered: switches of `radix` ports (GUIDs
    /// from 0x100), hosts (GUIDs from 0x1000, LID 100 + index), every cable at 4xEDR.
    fn subnet_of(tree: &Topology) -> RealSubnet {
        let cabling = Cabling::of_tree(tree);
        let guid = |d: Device| match d {
            Device::Switch(s) => 0x100 + s as u64,
            Device::Host(h) => 0x1000 + h as u64,
        };
        let mut nodes: Vec<RealNode> = cabling
            .switches
            .iter()
            .enumerate()
            .map(|(s, name)| RealNode {
                guid: guid(Device::Switch(s)),
                kind: RealNodeKind::Switch,
                description: name.clone(),
                ports: tree.radix() as u8,
                device_id: 0xcf08,
                lids: vec![(0, 1 + s as u16)],
            })
            .collect();
        nodes.extend(cabling.hosts.iter().enumerate().map(|(h, name)| RealNode {
            guid: guid(Device::Host(h)),
            kind: RealNodeKind::Ca,
            description: name.clone(),
            ports: 1,
            device_id: 0x1017,
            lids: vec![(1, 100 + h as u16)],
        }));
        let links = cabling
            .cables
            .iter()
            .map(|c| RealLink {
                a: RealEnd {
                    guid: guid(c.a.device),
                    port: c.a.port as u8,
                },
                b: RealEnd {
                    guid: guid(c.b.device),
                    port: c.b.port as u8,
                },
                rate: "4xEDR".into(),
                data_gbps: Some(100.0),
            })
            .collect();
        RealSubnet { nodes, links }
    }

    fn radix8() -> Topology {
        Topology::resolve("radix8").unwrap()
    }

    #[test]
    fn a_tree_by_parameters_is_no_real_fabric() {
        let input = TreeInput::tree(radix8(), None).unwrap();
        assert!(!input.is_real());
        assert!(input.describe().is_none());
        let Err(e) = input.with_routes("dump.json", &RouteTables::new()) else {
            panic!("routed by tables");
        };
        assert!(
            e.to_string()
                .starts_with("--routes dump.json: a subnet manager's tables route a real fabric"),
            "{e}"
        );
        let (_, gbps, line) = TreeInput::tree(radix8(), None)
            .unwrap()
            .with_rates(None)
            .unwrap();
        assert_eq!((gbps, line), (DEFAULT_LINK_GBPS, None));
        let routed = TreeInput::tree(radix8(), Some(Engine::UpDown)).unwrap();
        assert!(routed.topology.is_graph());
    }

    #[test]
    fn a_discovered_tree_is_recognised_with_its_rates_and_addresses() {
        let tree = radix8();
        let input = TreeInput::real("fabric.topo", &subnet_of(&tree), Vec::new(), None).unwrap();
        assert!(input.is_real() && input.not_a_tree.is_none());
        assert_eq!(input.topology.num_nodes(), tree.num_nodes());
        assert_eq!(input.topology.num_switches(), tree.num_switches());
        let addresses = input.addresses.as_ref().unwrap();
        assert!(addresses
            .node_lids
            .iter()
            .all(|l| l.is_some_and(|l| l >= 100)));
        assert!(input
            .describe()
            .unwrap()
            .starts_with("fabric.topo: a three-level fat tree"));
        let (_, gbps, line) = input.with_rates(None).unwrap();
        assert_eq!(gbps, 100.0);
        let cables = Cabling::of_tree(&tree).cables.len();
        assert_eq!(
            line.unwrap(),
            format!("links at 100 Gb/s, the file's rate (4xEDR x {cables})")
        );
    }

    #[test]
    fn aggregation_nodes_and_slow_links_are_noted() {
        let mut subnet = subnet_of(&radix8());
        let cables = subnet.links.len();
        // A SHARP Aggregation Node on the first switch's last port, and one link at 4xDDR.
        subnet.nodes.push(RealNode {
            guid: 0x9000,
            kind: RealNodeKind::Ca,
            description: AGGREGATION_NODE.into(),
            ports: 1,
            device_id: 0xcf09,
            lids: vec![(1, 900)],
        });
        subnet.links.push(RealLink {
            a: RealEnd {
                guid: 0x100,
                port: 9,
            },
            b: RealEnd {
                guid: 0x9000,
                port: 1,
            },
            rate: "4xEDR".into(),
            data_gbps: Some(100.0),
        });
        subnet.links[0].rate = "4xDDR".into();
        subnet.links[0].data_gbps = Some(16.0);
        let input = TreeInput::real("f.topo", &subnet, vec!["skipped".into()], None).unwrap();
        assert_eq!(input.notes[0], "skipped");
        assert!(
            input.notes[1].starts_with("left out 1 SHARP Aggregation Nodes"),
            "{:?}",
            input.notes
        );
        let rates = input.rates.as_ref().unwrap();
        assert_eq!(
            rates.seen,
            [("4xEDR".to_string(), cables - 1), ("4xDDR".to_string(), 1)]
        );
        let per_port = rates.per_port.as_ref().unwrap();
        // Each switch end of the slow cable runs at its rate (a host's end is no tree port).
        let switch_ends = [subnet.links[0].a, subnet.links[0].b]
            .iter()
            .filter(|e| e.guid < 0x1000)
            .count();
        assert_eq!(per_port.iter().filter(|&&g| g == 16.0).count(), switch_ends);
    }

    #[test]
    fn a_rate_without_a_data_rate_is_refused_naming_the_link() {
        let mut subnet = subnet_of(&radix8());
        subnet.links[0].rate = "4xWHAT".into();
        subnet.links[0].data_gbps = None;
        let Err(e) = TreeInput::real("f.topo", &subnet, vec!["kept".into()], None) else {
            panic!("simulated");
        };
        let RealFabricError::NotSimulable { notes, .. } = &e else {
            panic!("{e}");
        };
        assert_eq!(notes[0], "kept");
        let text = chain(&e);
        assert!(
            text.starts_with(
                "f.topo: cannot be simulated as cabled: f.topo: not a fat tree (the link from"
            ),
            "{text}"
        );
        assert!(text.contains("runs at 4xWHAT"), "{text}");
    }
}
