//! `--topology` of the simulator's commands: a built-in tree, a TOML file of tree
//! parameters, or a real fabric's ibnetdiscover topology file (from `ibnetdiscover` or
//! `hostping fabric discover --format ibnetdiscover`), which is recognised as the fat tree it
//! is (`fabric::cabling`) so that a real fabric can be simulated, or, when it is none (a ring,
//! a mesh, switches of several radixes), simulated as it is cabled
//! ([`fabric::topology::Topology::graph`]) and routed as opensm's up/down engine routes it;
//! `--routing minhop|updn` routes any of them so; and `hostping fabric net`, which writes a
//! tree as an ibsim net file so that the simulator's trees run on ibsim.

use std::io::Write;
use std::path::Path;

use std::collections::{HashMap, HashSet};

use anyhow::{bail, Context, Result};
use fabric::cabling::{Cable, CableEnd, Cabling, Device, Recognized};
use fabric::input::InputError;
use fabric::summary::FabricOrigin;
use fabric::topology::{Engine, FatTreeParams, GraphLayout, Level, SwitchId, Topology, NO_ENTRY};
use rdma::subnet::route::{Dump, SwitchTable};
use rdma::subnet::topofile::{self, Format, Skipped};
use rdma::subnet::{guid_text, NodeKind, Subnet};

use crate::cli::fabric::NetArgs;

/// The tree to simulate, and the real fabric it stands for when it came from one.
pub struct TreeInput {
    pub topology: Topology,
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
    /// The tree routed by the subnet manager's tables in `file` (`fabric route --dump -o
    /// FILE`) instead of the simulator's rules; it must be a real fabric's, read from its
    /// ibnetdiscover file. A switch without a table, a destination without a route, a port
    /// that is no link of the tree, a loop or a route that leads nowhere are refused, naming
    /// the switch and the LID. Tables that route a fat tree otherwise than as one (a longer
    /// way round) route its cables as a graph, as they run.
    pub fn with_routes(mut self, file: &Path) -> Result<TreeInput> {
        let shown = file.display().to_string();
        let (Some(fabric), Some(addresses)) = (&self.fabric, &self.addresses) else {
            bail!(
                "--routes {shown}: a subnet manager's tables route a real fabric; give its \
                 ibnetdiscover file as --topology"
            );
        };
        let text = InputError::read(file)?;
        let dump = Dump::from_json(&text, &shown).map_err(anyhow::Error::msg)?;
        let tables: HashMap<u64, &SwitchTable> =
            dump.switches.iter().map(|s| (s.guid, s)).collect();
        let t = &self.topology;
        let nodes = t.num_nodes() as usize;
        let mut ports = vec![NO_ENTRY; t.num_switches() as usize * nodes];
        for s in 0..t.num_switches() {
            let switch = SwitchId(s);
            let name = &fabric.switches[s as usize];
            let guid = addresses.switch_guids[s as usize];
            let table = tables.get(&guid).with_context(|| {
                format!(
                    "{shown}: no table for switch '{name}' ({})",
                    guid_text(guid)
                )
            })?;
            let base = t.port_base(switch) as usize;
            for (n, lid) in addresses.node_lids.iter().enumerate() {
                let Some(lid) = *lid else { continue };
                let host = fabric.hosts[n].as_deref().unwrap_or("?");
                let Some(&out) = table.routes.get(&lid) else {
                    bail!("{shown}: switch '{name}' has no route to LID {lid} ({host})");
                };
                let port = (0..t.ports(switch))
                    .find(|&p| fabric.ports[base + usize::from(p)] == u16::from(out))
                    .with_context(|| {
                        format!(
                            "{shown}: switch '{name}' sends LID {lid} ({host}) out of port {out}, \
                             which is no link of the tree"
                        )
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
            Err(e) => return Err(anyhow::Error::new(e).context(format!("--routes {shown}"))),
        };
        // The tree's cables as a graph number switches, nodes and ports as the tree does.
        let free = self.topology.free_nodes().to_vec();
        let graph = tree_as_graph(&self.topology, Engine::MinHop)?.with_free_nodes(free);
        self.topology = graph
            .with_forwarding(ports)
            .with_context(|| format!("--routes {shown}"))?;
        self.not_a_tree = Some(format!(
            "its subnet manager's tables do not route it as one: {not_as_a_tree}"
        ));
        Ok(self)
    }

    /// The tree to run and the one rate of the run, Gb/s: `--link-gbps` for every link when
    /// given; otherwise the rates the fabric's file gives (each link at its own); otherwise
    /// 100 Gb/s. A line for stderr says which.
    pub fn with_rates(self, link_gbps: Option<f64>) -> Result<(Topology, f64, Option<String>)> {
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

/// The format wanted, for a file that is not one hostping reads.
const FORMATS: &str = "--topology takes a built-in tree (full, tapered, radix8), a fat-tree \
     TOML file (radix, nodes_per_leaf, leaves, leaves_per_pod, aggs_per_pod), or the topology \
     file that `ibnetdiscover > FILE` or `hostping fabric discover --format ibnetdiscover > FILE` \
     writes";

/// The node description SHARP Aggregation Nodes report (one per switch on HDR/NDR fabrics).
const AGGREGATION_NODE: &str = "Mellanox Technologies Aggregation Node";

impl TreeInput {
    /// A built-in name, a TOML file, or an ibnetdiscover file; a file of another kind (empty,
    /// only comments, `ibnetdiscover -p`, `iblinkinfo`) is named for what it is. A real
    /// fabric that is no fat tree is simulated as cabled, routed up/down.
    pub fn resolve(arg: &str) -> Result<TreeInput> {
        Self::resolve_routed(arg, None)
    }

    /// [`TreeInput::resolve`], simulated as cabled and routed by `engine` when one is given
    /// (a fat tree too: its cables, routed as the subnet manager would).
    pub fn resolve_routed(arg: &str, engine: Option<Engine>) -> Result<TreeInput> {
        let topology = match FatTreeParams::builtin(arg) {
            Some(params) => Topology::new(params).expect("built-in tree is valid"),
            None => {
                let text = InputError::read(Path::new(arg))?;
                let what = match topofile::identify(&text) {
                    Format::Topology => return Self::from_ibnetdiscover(arg, &text, engine),
                    Format::Other => None,
                    Format::Empty => Some("is empty"),
                    Format::CommentsOnly => Some(
                        "holds only comments, no topology (what `fabric discover > FILE` \
                         leaves when discovery fails)",
                    ),
                    Format::PortsList => Some(
                        "is a ports list of `ibnetdiscover -p`, which lacks the switches' port \
                         counts; run ibnetdiscover without -p",
                    ),
                    Format::LinkInfo => Some("is the output of `iblinkinfo`, not a topology file"),
                };
                if let Some(what) = what {
                    bail!("{arg}: {what}; {FORMATS}");
                }
                Topology::parse(Path::new(arg), &text)?
            }
        };
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

    fn from_ibnetdiscover(file: &str, text: &str, engine: Option<Engine>) -> Result<TreeInput> {
        let reading = topofile::read(text, file)?;
        let mut notes = skipped_note(&reading.skipped)
            .into_iter()
            .collect::<Vec<_>>();
        let name = Path::new(file)
            .file_stem()
            .map_or_else(|| file.to_string(), |s| s.to_string_lossy().into_owned());
        let fabric = RealFabric::of(&reading.subnet);
        notes.extend(fabric.notes.iter().cloned());
        let not_a_tree = match engine {
            Some(_) => None,
            None => match recognize_real(&fabric, &name, &mut notes) {
                Ok((recognized, rates)) => {
                    let origin = FabricOrigin::of(file, &recognized);
                    let addresses = TreeAddresses::of(
                        &reading.subnet,
                        &recognized.switch_names,
                        &recognized.node_hosts,
                    );
                    return Ok(TreeInput {
                        topology: recognized.topology,
                        fabric: Some(origin),
                        notes,
                        rates: Some(rates),
                        addresses: Some(addresses),
                        not_a_tree: None,
                    });
                }
                Err(e) => Some(format!("{e:#}")),
            },
        };
        let routed = Self::cabled(file, &name, &reading.subnet, &fabric, engine);
        match routed {
            Ok(mut input) => {
                input.notes = notes;
                input.not_a_tree = not_a_tree;
                Ok(input)
            }
            Err(e) => {
                // What was left out still says what the file holds.
                for note in &notes {
                    eprintln!("{file}: note: {note}");
                }
                let e = match not_a_tree {
                    Some(why) => e.context(format!("{file}: not a fat tree ({why})")),
                    None => e,
                };
                Err(e.context(format!("{file}: cannot be simulated as cabled")))
            }
        }
    }

    /// A real fabric simulated as cabled: every switch, host and cable it has (but the
    /// SHARP Aggregation Nodes and loopback cables), routed by `engine` (up/down unless
    /// given), each link at its own rate.
    fn cabled(
        file: &str,
        name: &str,
        subnet: &Subnet,
        fabric: &RealFabric,
        engine: Option<Engine>,
    ) -> Result<TreeInput> {
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
    fn describe_graph(&self, routing: &fabric::topology::GraphRouting) -> String {
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
) -> Result<(Recognized, FabricRates)> {
    let (compute, above) = fabric.cabling.without_hosts_above_leaves();
    if !above.is_empty() {
        notes.push(format!(
            "left out {} hosts cabled to switches above the leaves (management, UFM, login or \
             storage hosts, not compute nodes): {}",
            above.len(),
            above.join(", ")
        ));
    }
    let radix = fabric.radix(&compute)?;
    let recognized = compute.recognize_with_radix(name, Some(radix))?;
    let layout = GraphLayout {
        switches: recognized.fabric_switches.clone(),
        node_hosts: Vec::new(),
        fabric_ports: recognized.fabric_ports.clone(),
    };
    let rates = fabric.rates_of(&compute, &recognized.topology, &layout)?;
    Ok((recognized, rates))
}

/// One note for the lines the reader passed over, naming them (the first few in full).
fn skipped_note(skipped: &[Skipped]) -> Option<String> {
    const SHOWN: usize = 4;
    let first = skipped.first()?;
    let mut note = format!(
        "skipped {} that {} not topology: line {} (`{}`, {})",
        lines(skipped.len()),
        if skipped.len() == 1 { "is" } else { "are" },
        first.line,
        first.text,
        first.kind.words()
    );
    for s in skipped.iter().skip(1).take(SHOWN - 1) {
        note += &format!("; line {} (`{}`, {})", s.line, s.text, s.kind.words());
    }
    if skipped.len() > SHOWN {
        note += &format!("; and {} more", skipped.len() - SHOWN);
    }
    Some(note)
}

/// `1 line`, `3 lines`.
fn lines(n: usize) -> String {
    format!("{n} line{}", if n == 1 { "" } else { "s" })
}

/// A node's name in the fabric's cabling: its description, with its GUID where two share one
/// (as every unconfigured switch of a vendor does) or it has none.
fn fabric_name(subnet: &Subnet, guid: u64, description: &str) -> String {
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
        subnet: &Subnet,
        switch_names: &[String],
        node_hosts: &[Option<(String, u16)>],
    ) -> TreeAddresses {
        let by_name: HashMap<String, &rdma::subnet::Node> = subnet
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
                let address = node
                    .addressed_ports
                    .iter()
                    .find(|a| u16::from(a.port) == *port)?;
                (address.lid != 0).then_some(address.lid)
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
    fn of(subnet: &Subnet) -> RealFabric {
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
                NodeKind::Switch => {
                    cabling.switches.push(named);
                    switch_guids.push(node.guid);
                    ports.push(u16::from(node.ports));
                    models.push((node.device_id, node.ports));
                    Device::Switch(cabling.switches.len() - 1)
                }
                NodeKind::Ca if node.description == AGGREGATION_NODE => {
                    aggregation_nodes.insert(node.guid);
                    continue;
                }
                // A router is an end of the tree for the simulator, as a host is.
                NodeKind::Ca | NodeKind::Router => {
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
            let end = |e: rdma::subnet::End| {
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
            let rate = (format!("{}{}", link.width, link.speed), link.data_gbps());
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
    ) -> Result<FabricRates> {
        // Cables per rate, with its data rate.
        let mut counts: HashMap<&str, (usize, Option<f64>)> = HashMap::new();
        for cable in &compute.cables {
            let (rate, gbps) = &self.rates[&cable.a];
            counts.entry(rate.as_str()).or_insert((0, *gbps)).0 += 1;
        }
        if let Some(cable) = compute.cables.iter().find(|c| self.rates[&c.a].1.is_none()) {
            bail!(
                "the link from '{}' port {} to '{}' port {} runs at {}, a rate whose data rate \
                 hostping does not know; --link-gbps runs every link at one rate instead",
                compute.name(cable.a.device),
                cable.a.port,
                compute.name(cable.b.device),
                cable.b.port,
                self.rates[&cable.a].0
            );
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
    fn radix(&self, compute: &Cabling) -> Result<u16> {
        let cabled = |s: usize| {
            let switch = Device::Switch(s);
            compute
                .cables
                .iter()
                .any(|c| c.a.device == switch || c.b.device == switch)
        };
        let switches: Vec<usize> = (0..compute.switches.len()).filter(|&s| cabled(s)).collect();
        let first = *switches
            .first()
            .context("the fabric has no switch with a cable")?;
        if let Some(&other) = switches
            .iter()
            .find(|&&s| self.ports[s] != self.ports[first])
        {
            bail!(
                "switch '{}' has {} ports and '{}' has {}; the simulator's fat trees have one \
                 radix",
                compute.switches[first],
                self.ports[first],
                compute.switches[other],
                self.ports[other]
            );
        }
        Ok(self.ports[first])
    }
}

/// A tree's cables as a graph routed by `engine` (switch GUIDs: their numbers, from 1).
fn tree_as_graph(tree: &Topology, engine: Engine) -> Result<Topology> {
    let cabling = Cabling::of_tree(tree);
    let ids: Vec<u64> = (1..=cabling.switches.len() as u64).collect();
    let (spec, _) = cabling.graph_spec(tree.name(), &ids)?;
    Ok(Topology::graph(&spec, engine)?.0)
}

/// `hostping fabric net`: a tree as an ibsim net file.
pub fn net_command(args: &NetArgs) -> Result<()> {
    let topology = Topology::resolve(&args.topology.topology)?;
    let title = format!(
        "The fat tree '{}' as an ibsim net file ({} switches of {} ports, {} hosts; \
         hostping fabric net --topology {})",
        topology.name(),
        topology.num_switches(),
        topology.radix(),
        topology.num_nodes(),
        args.topology.topology
    );
    let net = Cabling::of_tree(&topology).to_ibsim_net(topology.radix(), &title);
    match &args.output {
        Some(path) => std::fs::write(path, net)
            .with_context(|| format!("{}: cannot write", path.display()))?,
        None => std::io::stdout()
            .lock()
            .write_all(net.as_bytes())
            .context("cannot write the net file to stdout")?,
    }
    let cores = topology.switches_at(Level::Core).len();
    eprintln!(
        "{} leaves, {} aggregation switches, {cores} cores, {} hosts",
        topology.num_leaves(),
        topology.num_aggs(),
        topology.num_nodes()
    );
    Ok(())
}
