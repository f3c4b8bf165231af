//! A fabric as its cables: named switches and hosts and the links between their ports, the
//! shape a real subnet has (an ibnetdiscover topology file, an ibsim net file). Two ways
//! between cables and the simulator's fat trees:
//!
//! - [`Cabling::of_tree`] cables a [`Topology`] (switches `leaf-N`, `agg-P-A`, `core-C`,
//!   hosts `node-N`, IB ports numbered from 1), and [`Cabling::to_ibsim_net`] writes it as an
//!   ibsim net file, so the simulator's trees can be run on ibsim's management stack;
//! - [`Cabling::recognize`] finds the fat tree a real fabric is, so that it can be simulated:
//!   it infers the parameters from the cables (leaves are the switches with hosts, aggregation
//!   switches their neighbours, cores the rest; pods are the leaf/aggregation components),
//!   builds that tree, maps every switch, node and port onto it, and then checks that every
//!   cable of the fabric is a link of the tree. A pair of switches with fewer cables than
//!   most such pairs have is missing cables: the tree is simulated without them
//!   ([`Topology::without_links`]), as the fabric runs. A fabric the simulator cannot model
//!   (more cables than the tree has, a core wiring other than the tree's groups, leaves left
//!   without an up/down path) is refused with the first cable or switch that does not fit,
//!   never simulated as something it is not.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::topology::{
    FatTreeParams, GraphSpec, GraphSwitch, Level, Peer, PortRef, SwitchId, Topology, TopologyError,
};

/// A device a cable ends on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Device {
    /// Index into [`Cabling::switches`].
    Switch(usize),
    /// Index into [`Cabling::hosts`].
    Host(usize),
}

/// One end of a cable: a device and its port (IB numbering, from 1).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CableEnd {
    /// The switch or host the cable is plugged into.
    pub device: Device,
    /// Its port, from 1 as InfiniBand numbers them (port 0 is a switch's management port).
    pub port: u16,
}

/// A cable between two ports; its ends are unordered.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Cable {
    /// The end listed first (the order carries no meaning).
    pub a: CableEnd,
    /// The other end.
    pub b: CableEnd,
}

/// Named switches and hosts and their cables. Names are what people call the devices (node
/// descriptions); each must be unique.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cabling {
    /// Switch names; [`Device::Switch`] indexes this list.
    pub switches: Vec<String>,
    /// Host (channel adapter) names; [`Device::Host`] indexes this list.
    pub hosts: Vec<String>,
    /// Every cable, each once.
    pub cables: Vec<Cable>,
}

/// A real fabric recognised as a fat tree: the tree, and where each of its switches, nodes
/// and ports is in the fabric.
#[derive(Clone, Debug)]
pub struct Recognized {
    /// The fat tree whose links are exactly the fabric's cables.
    pub topology: Topology,
    /// Fabric switch name of each tree switch, by [`SwitchId`].
    pub switch_names: Vec<String>,
    /// The fabric's switch ([`Cabling::switches`] index) of each tree switch, by [`SwitchId`].
    pub fabric_switches: Vec<usize>,
    /// Fabric host (and its port) on each tree node, by [`crate::topology::NodeId`]; `None` where the leaf
    /// has a free port (the node exists in the tree and carries no traffic unless mapped).
    pub node_hosts: Vec<Option<(String, u16)>>,
    /// The fabric port of each tree switch output port, by [`crate::topology::PortIndex`]
    /// (0 for an absent link).
    pub fabric_ports: Vec<u16>,
    /// Pairs of switches with fewer cables than the tree has between them: the fabric runs
    /// without them, and so does the simulated tree ([`Topology::without_links`]).
    pub missing_cables: Vec<MissingCables>,
}

/// Cables missing between two switches of a recognised fat tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingCables {
    /// One switch, by name.
    pub a: String,
    /// The other.
    pub b: String,
    /// Cables between them in the fabric.
    pub fabric: usize,
    /// Links between them in the tree.
    pub tree: usize,
}

impl std::fmt::Display for MissingCables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "'{}' -- '{}' ({} of {} cables)",
            self.a, self.b, self.fabric, self.tree
        )
    }
}

/// Why a fabric is not a fat tree the simulator models; names the devices involved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotAFatTree {
    /// No switch has a host: there are no leaves to build a tree from.
    #[error("no switch has a host cabled to it")]
    NoHosts,
    /// Two hosts are cabled to each other, with no switch between them.
    #[error("host '{host}' is cabled to host '{other}'; hosts must hang from switches")]
    HostToHost {
        /// The host listed first, by name.
        host: String,
        /// The host at the other end.
        other: String,
    },
    /// A switch port is cabled back to the same switch.
    #[error("switch '{switch}' has a cable from its port {port} to itself")]
    Loop {
        /// The switch, by name.
        switch: String,
        /// The port the loop leaves from.
        port: u16,
    },
    /// One port is an end of two cables.
    #[error("'{device}' port {port} has two cables")]
    PortTwice {
        /// The switch or host.
        device: String,
        /// The port with two cables.
        port: u16,
    },
    /// Two leaves (switches with hosts) are cabled directly.
    #[error("leaf switches '{a}' and '{b}' are cabled to each other; a fat tree joins leaves only through the switches above them")]
    LeafToLeaf {
        /// The first leaf, by name.
        a: String,
        /// The other leaf.
        b: String,
    },
    /// Two core switches are cabled directly.
    #[error("core switches '{a}' and '{b}' are cabled to each other; a fat tree's top level has no links within it")]
    CoreToCore {
        /// The first core switch, by name.
        a: String,
        /// The other core switch.
        b: String,
    },
    /// A leaf has hosts but no cable upwards.
    #[error("leaf switch '{leaf}' has no cable to a switch above it")]
    NoUplinks {
        /// The leaf without uplinks, by name.
        leaf: String,
    },
    /// The pods (leaf/aggregation components) are not joined by any core switch.
    #[error("the leaves and the switches above them form {pods} separate groups and no core switch joins them")]
    Disconnected {
        /// How many separate pods there are.
        pods: usize,
    },
    /// A switch above the aggregation level is cabled to a single pod: a tree of one pod has
    /// two levels, not three.
    #[error("core switch '{core}' sits above a single pod; a one-pod fat tree has two levels")]
    CoreAboveOnePod {
        /// The core switch.
        core: String,
    },
    /// Two pods differ in their number of leaves or aggregation switches.
    #[error("pods differ in size: '{first}' has {first_leaves} leaves and {first_aggs} aggregation switches, '{other}' has {other_leaves} and {other_aggs}")]
    UnevenPods {
        /// A leaf of the first pod, naming it.
        first: String,
        /// Leaves of the first pod.
        first_leaves: usize,
        /// Aggregation switches of the first pod.
        first_aggs: usize,
        /// A leaf of the pod that differs, naming it.
        other: String,
        /// Leaves of that pod.
        other_leaves: usize,
        /// Aggregation switches of that pod.
        other_aggs: usize,
    },
    /// A leaf has more parallel cables to one aggregation switch than most leaves have (a fat
    /// tree has the same number between every leaf and aggregation switch of a pod; fewer are
    /// missing cables).
    #[error(
        "leaf '{leaf}' has {links} cables to '{agg}', more than the {expected} that most leaves have to each switch above them ('{first_leaf}' has {expected} to '{first_agg}')"
    )]
    UnevenUplinks {
        /// The leaf whose cable count differs, by name.
        leaf: String,
        /// The aggregation switch the cables go to.
        agg: String,
        /// Cables between the two.
        links: usize,
        /// Cables the first leaf has to its first aggregation switch.
        expected: usize,
        /// The first leaf, which sets `expected`.
        first_leaf: String,
        /// Its aggregation switch.
        first_agg: String,
    },
    /// An aggregation switch has more cables to the cores than most have (fewer are missing
    /// cables).
    #[error(
        "aggregation switches differ in core links: '{agg}' has {links}, most (such as '{first}') have {expected}"
    )]
    UnevenCoreLinks {
        /// The aggregation switch whose core cables differ, by name.
        agg: String,
        /// Its cables to core switches.
        links: usize,
        /// The first aggregation switch, which sets `expected`.
        first: String,
        /// Its cables to core switches.
        expected: usize,
    },
    /// A leaf has more hosts than a fat-tree leaf of the fabric's radix has node ports.
    #[error("leaf '{leaf}' has {hosts} hosts, more than the {slots} host ports a leaf of radix {radix} with {uplinks} uplinks has")]
    TooManyHosts {
        /// The leaf with the most hosts, by name.
        leaf: String,
        /// Hosts cabled to it.
        hosts: usize,
        /// Node ports of a leaf: the radix less its uplinks.
        slots: u32,
        /// Ports per switch, as inferred from the fabric.
        radix: u32,
        /// The leaf's cables upwards.
        uplinks: usize,
    },
    /// The parameters inferred from the cables make no valid tree (or one too large), in
    /// words.
    #[error("{0}")]
    Parameters(String),
    /// The aggregation-to-core cables are not the groups the simulator's tree wires.
    #[error("the core switches are not wired as the simulator's fat tree wires them (aggregation switches in groups of {group}, each joined to every core of its group): {detail}")]
    CoreWiring {
        /// Aggregation switches per pod joined to the same cores.
        group: u32,
        /// The first cable or switch that does not fit, in words.
        detail: String,
    },
    /// Without its missing cables, the fabric leaves two leaves joined by no up/down path.
    #[error("without its {missing} pairs of switches' missing cables, leaf '{from}' has no up/down path to leaf '{to}'")]
    Cut {
        /// The leaf with no way up towards `to`.
        from: String,
        /// The leaf it cannot reach.
        to: String,
        /// Pairs of switches with cables missing.
        missing: usize,
    },
    /// The fabric has more cables between two devices than the recognised tree has links.
    #[error(
        "the cables between '{a}' and '{b}' number {fabric}, the recognised fat tree has {tree}"
    )]
    Mismatch {
        /// One end's device, by name.
        a: String,
        /// The other end's device.
        b: String,
        /// Cables between them in the fabric.
        fabric: usize,
        /// Links between them in the tree.
        tree: usize,
    },
}

impl Cabling {
    /// The cables of a simulated tree (absent links left out): switch and host names as the
    /// simulator numbers them, port `p` of the tree as IB port `p + 1`.
    pub fn of_tree(topology: &Topology) -> Cabling {
        let switch_name = |s: SwitchId| match topology.level(s) {
            Level::Leaf => format!("leaf-{}", s.0),
            Level::Aggregation => {
                let pod = topology.pod_of(s).expect("aggregation switches have pods");
                let first = topology.switches_at(Level::Aggregation).start;
                let per_pod = topology.num_aggs() / topology.num_pods();
                format!("agg-{pod}-{}", (s.0 - first) % per_pod)
            }
            Level::Core => format!("core-{}", s.0 - topology.switches_at(Level::Core).start),
        };
        let switches = (0..topology.num_switches())
            .map(|s| switch_name(SwitchId(s)))
            .collect();
        let hosts = (0..topology.num_nodes())
            .map(|n| format!("node-{n}"))
            .collect();
        let mut cables = Vec::new();
        for s in 0..topology.num_switches() {
            let switch = SwitchId(s);
            for port in (0..topology.ports(switch))
                .filter(|&port| !topology.is_absent(PortRef { switch, port }))
            {
                let here = CableEnd {
                    device: Device::Switch(s as usize),
                    port: port + 1,
                };
                match topology.peer(PortRef { switch, port }) {
                    Peer::Node(node) => cables.push(Cable {
                        a: here,
                        b: CableEnd {
                            device: Device::Host(node.0 as usize),
                            port: 1,
                        },
                    }),
                    // Each switch-to-switch cable once, from its lower-numbered end.
                    Peer::Switch {
                        switch: far,
                        port: far_port,
                    } => {
                        if (far.0, far_port) > (s, port) {
                            cables.push(Cable {
                                a: here,
                                b: CableEnd {
                                    device: Device::Switch(far.0 as usize),
                                    port: far_port + 1,
                                },
                            });
                        }
                    }
                }
            }
        }
        Cabling {
            switches,
            hosts,
            cables,
        }
    }

    /// The cabling as a graph to simulate as it is cabled ([`Topology::graph`]), with `ids`
    /// the switches' GUIDs (by [`Cabling::switches`] index), and the host end of each of the
    /// graph's hosts (a host cabled twice is two). Refuses a cable between two hosts.
    pub fn graph_spec(
        &self,
        name: &str,
        ids: &[u64],
    ) -> Result<(GraphSpec, Vec<CableEnd>), NotAFatTree> {
        let mut spec = GraphSpec {
            name: name.to_string(),
            switches: self
                .switches
                .iter()
                .zip(ids)
                .map(|(name, &id)| GraphSwitch {
                    name: name.clone(),
                    id,
                })
                .collect(),
            ..GraphSpec::default()
        };
        let mut host_ends = Vec::new();
        for cable in &self.cables {
            match (cable.a.device, cable.b.device) {
                (Device::Switch(a), Device::Switch(b)) => {
                    spec.links.push([(a, cable.a.port), (b, cable.b.port)])
                }
                (Device::Switch(s), Device::Host(_)) => {
                    spec.hosts.push((s, cable.a.port));
                    host_ends.push(cable.b);
                }
                (Device::Host(_), Device::Switch(s)) => {
                    spec.hosts.push((s, cable.b.port));
                    host_ends.push(cable.a);
                }
                (Device::Host(a), Device::Host(b)) => {
                    return Err(NotAFatTree::HostToHost {
                        host: self.hosts[a].clone(),
                        other: self.hosts[b].clone(),
                    })
                }
            }
        }
        Ok((spec, host_ends))
    }

    /// The cabling as an ibsim net file (`ibsim -s FILE`): a `Switch <ports> "name"` or
    /// `Hca <ports> "name"` header per device, then one `[port] "peer"[peer port]` line per
    /// cabled port. Every switch gets `radix` ports.
    pub fn to_ibsim_net(&self, radix: u32, title: &str) -> String {
        let mut by_device: BTreeMap<Device, Vec<(u16, CableEnd)>> = BTreeMap::new();
        for cable in &self.cables {
            by_device
                .entry(cable.a.device)
                .or_default()
                .push((cable.a.port, cable.b));
            by_device
                .entry(cable.b.device)
                .or_default()
                .push((cable.b.port, cable.a));
        }
        let mut net = format!("# {title}\n");
        let mut device = |header: String, device: Device| {
            let _ = write!(net, "\n{header}\n");
            let mut ports = by_device.remove(&device).unwrap_or_default();
            ports.sort_by_key(|(port, _)| *port);
            for (port, far) in ports {
                let _ = writeln!(net, "[{port}]\t\"{}\"[{}]", self.name(far.device), far.port);
            }
        };
        for (s, name) in self.switches.iter().enumerate() {
            device(format!("Switch\t{radix} \"{name}\""), Device::Switch(s));
        }
        for (h, name) in self.hosts.iter().enumerate() {
            device(format!("Hca\t1 \"{name}\""), Device::Host(h));
        }
        net
    }

    /// The fabric without the hosts of switches that sit above the leaves, and those hosts'
    /// names. A switch is a leaf by where the compute hosts hang; one cabled to two or more
    /// switches that each have more hosts than its own joins those leaves (a spine), and its
    /// hosts are UFM, login, storage or management hosts, not compute nodes of the tree.
    pub fn without_hosts_above_leaves(&self) -> (Cabling, Vec<String>) {
        let mut hosts_on = vec![0usize; self.switches.len()];
        for cable in &self.cables {
            for (here, far) in [(cable.a, cable.b), (cable.b, cable.a)] {
                if let (Device::Switch(s), Device::Host(_)) = (here.device, far.device) {
                    hosts_on[s] += 1;
                }
            }
        }
        // Per switch: the switches with more hosts than it has, that it is cabled to.
        let mut fuller: Vec<BTreeMap<usize, ()>> = vec![BTreeMap::new(); self.switches.len()];
        for cable in &self.cables {
            if let (Device::Switch(s), Device::Switch(t)) = (cable.a.device, cable.b.device) {
                if hosts_on[t] > hosts_on[s] {
                    fuller[s].insert(t, ());
                }
                if hosts_on[s] > hosts_on[t] {
                    fuller[t].insert(s, ());
                }
            }
        }
        let above: Vec<bool> = (0..self.switches.len())
            .map(|s| hosts_on[s] > 0 && fuller[s].len() >= 2)
            .collect();
        let mut left_out = Vec::new();
        let mut kept = self.clone();
        kept.cables.retain(|cable| {
            let host_above = |here: CableEnd, far: CableEnd| match (here.device, far.device) {
                (Device::Switch(s), Device::Host(h)) if above[s] => Some(h),
                _ => None,
            };
            match host_above(cable.a, cable.b).or_else(|| host_above(cable.b, cable.a)) {
                Some(h) => {
                    left_out.push(self.hosts[h].clone());
                    false
                }
                None => true,
            }
        });
        left_out.sort();
        left_out.dedup();
        (kept, left_out)
    }

    /// The fabric without its extra pods' switches that have hosts (and their cables), and
    /// those switches by name, each with its hosts' names. Management switches cabled into the cores
    /// of a three-level tree make the cores look like aggregation switches (switches cabled
    /// to a switch with hosts) and the tree no fat tree. Grouped as recognition groups pods
    /// (the switches with hosts and the switches without hosts cabled to them), such a pod's
    /// switches without hosts are the cores: cabled to those of two or more other pods, each
    /// of which holds more hosts than it. A tree's own pods are not: their aggregation
    /// switches are cabled to cores, which belong to no pod, or to the extra pods only.
    /// Without the extra pods' switches the cores are cores again. In a two-level tree the
    /// extra switches are cabled into the spines beside the leaves and look like leaves missing
    /// most of their cables ([`beside_the_spines`]); they are left out alike.
    pub fn without_extra_pods(&self) -> (Cabling, Vec<(String, Vec<String>)>) {
        let n = self.switches.len();
        let mut hosts_on = vec![Vec::new(); n];
        let mut far: Vec<Vec<usize>> = vec![Vec::new(); n];
        for cable in &self.cables {
            for (here, there) in [(cable.a, cable.b), (cable.b, cable.a)] {
                match (here.device, there.device) {
                    (Device::Switch(s), Device::Host(h)) => hosts_on[s].push(h),
                    (Device::Switch(s), Device::Switch(t)) => far[s].push(t),
                    _ => {}
                }
            }
        }
        let has_hosts = |s: usize| !hosts_on[s].is_empty();
        // Pods: a switch with hosts and the switches without hosts cabled to it, joined.
        let mut pod: Vec<usize> = (0..n).collect();
        fn root(pod: &mut [usize], mut s: usize) -> usize {
            while pod[s] != s {
                pod[s] = pod[pod[s]];
                s = pod[s];
            }
            s
        }
        for s in (0..n).filter(|&s| has_hosts(s)) {
            for &t in far[s].iter().filter(|&&t| !has_hosts(t)) {
                let (a, b) = (root(&mut pod, s), root(&mut pod, t));
                pod[a] = b;
            }
        }
        let in_pod = |s: usize| has_hosts(s) || far[s].iter().any(|&t| has_hosts(t));
        let mut hosts_in: BTreeMap<usize, usize> = BTreeMap::new();
        for (s, hosts) in hosts_on.iter().enumerate() {
            let p = root(&mut pod, s);
            *hosts_in.entry(p).or_default() += hosts.len();
        }
        // Per pod: the other pods its switches without hosts are cabled to, through theirs.
        let mut joined: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
        for s in (0..n).filter(|&s| !has_hosts(s) && in_pod(s)) {
            let p = root(&mut pod, s);
            for &t in far[s].iter().filter(|&&t| !has_hosts(t) && in_pod(t)) {
                let q = root(&mut pod, t);
                if q != p {
                    joined.entry(p).or_default().insert(q);
                }
            }
        }
        let extra: BTreeSet<usize> = joined
            .iter()
            .filter(|(p, others)| {
                others.len() >= 2 && others.iter().all(|q| hosts_in[q] > hosts_in[p])
            })
            .map(|(&p, _)| p)
            .collect();
        let mut out: Vec<bool> = (0..n)
            .map(|s| has_hosts(s) && extra.contains(&root(&mut pod, s)))
            .collect();
        if !out.contains(&true) {
            out = beside_the_spines(&hosts_on, &far);
        }
        let left_out = (0..n)
            .filter(|&s| out[s])
            .map(|s| {
                let mut hosts: Vec<String> =
                    hosts_on[s].iter().map(|&h| self.hosts[h].clone()).collect();
                hosts.sort();
                hosts.dedup();
                (self.switches[s].clone(), hosts)
            })
            .collect();
        let mut kept = self.clone();
        let on_out = |end: CableEnd| matches!(end.device, Device::Switch(s) if out[s]);
        kept.cables.retain(|c| !on_out(c.a) && !on_out(c.b));
        (kept, left_out)
    }

    /// The name of a device.
    pub fn name(&self, device: Device) -> &str {
        match device {
            Device::Switch(s) => &self.switches[s],
            Device::Host(h) => &self.hosts[h],
        }
    }

    /// The fat tree this fabric is, named `name`, with the radix its cables need; see the
    /// module doc.
    pub fn recognize(&self, name: &str) -> Result<Recognized, NotAFatTree> {
        self.recognize_with_radix(name, None)
    }

    /// As [`Cabling::recognize`], with the switches' port count when the fabric says it (a
    /// topology file's `Switch 36` header): a real switch's free ports are ports of the tree,
    /// not absent.
    pub fn recognize_with_radix(
        &self,
        name: &str,
        radix: Option<u16>,
    ) -> Result<Recognized, NotAFatTree> {
        let shape = Shape::of(self)?;
        let params = shape.params(self, name, radix)?;
        let topology = Topology::new(params).map_err(|e| NotAFatTree::Parameters(e.to_string()))?;
        let order = shape.switch_order(self, &topology)?;
        shape.check_and_map(self, topology, order)
    }
}

/// What recognition learns from the cables before it picks parameters.
struct Shape {
    /// Per switch: `(port, far end)` of its cables, in port order.
    ports: Vec<Vec<(u16, CableEnd)>>,
    /// Per switch: cables to each other switch.
    neighbours: Vec<BTreeMap<usize, usize>>,
    /// Per switch: its level.
    levels: Vec<Level>,
    /// Pods: (leaves, aggregation switches), each in fabric order.
    pods: Vec<(Vec<usize>, Vec<usize>)>,
    cores: Vec<usize>,
}

impl Shape {
    fn of(cabling: &Cabling) -> Result<Shape, NotAFatTree> {
        let switches = cabling.switches.len();
        let mut ports: Vec<Vec<(u16, CableEnd)>> = vec![Vec::new(); switches];
        let mut host_ports: BTreeMap<(usize, u16), ()> = BTreeMap::new();
        for cable in &cabling.cables {
            for (here, far) in [(cable.a, cable.b), (cable.b, cable.a)] {
                match here.device {
                    Device::Switch(s) => ports[s].push((here.port, far)),
                    Device::Host(h) => {
                        if let Device::Host(other) = far.device {
                            return Err(NotAFatTree::HostToHost {
                                host: cabling.hosts[h].clone(),
                                other: cabling.hosts[other].clone(),
                            });
                        }
                        if host_ports.insert((h, here.port), ()).is_some() {
                            return Err(NotAFatTree::PortTwice {
                                device: cabling.hosts[h].clone(),
                                port: here.port,
                            });
                        }
                    }
                }
            }
        }
        let mut neighbours = vec![BTreeMap::new(); switches];
        for (s, list) in ports.iter_mut().enumerate() {
            list.sort_by_key(|(port, _)| *port);
            if let Some(pair) = list.windows(2).find(|w| w[0].0 == w[1].0) {
                return Err(NotAFatTree::PortTwice {
                    device: cabling.switches[s].clone(),
                    port: pair[0].0,
                });
            }
            for (port, far) in list.iter() {
                if let Device::Switch(t) = far.device {
                    if t == s {
                        return Err(NotAFatTree::Loop {
                            switch: cabling.switches[s].clone(),
                            port: *port,
                        });
                    }
                    *neighbours[s].entry(t).or_insert(0) += 1;
                }
            }
        }
        let has_host = |s: usize| {
            ports[s]
                .iter()
                .any(|(_, far)| matches!(far.device, Device::Host(_)))
        };
        let levels: Vec<Level> = (0..switches)
            .map(|s| {
                if has_host(s) {
                    Level::Leaf
                } else if neighbours[s].keys().any(|&t| has_host(t)) {
                    Level::Aggregation
                } else {
                    Level::Core
                }
            })
            .collect();
        if !levels.contains(&Level::Leaf) {
            return Err(NotAFatTree::NoHosts);
        }
        for s in 0..switches {
            for &t in neighbours[s].keys().filter(|&&t| t > s) {
                let pair = || (cabling.switches[s].clone(), cabling.switches[t].clone());
                match (levels[s], levels[t]) {
                    (Level::Leaf, Level::Leaf) => {
                        let (a, b) = pair();
                        return Err(NotAFatTree::LeafToLeaf { a, b });
                    }
                    (Level::Core, Level::Core) => {
                        let (a, b) = pair();
                        return Err(NotAFatTree::CoreToCore { a, b });
                    }
                    _ => {}
                }
            }
        }
        let pods = leaf_pods(&levels, &neighbours);
        // A switch without cables (an extra pod's once [`Cabling::without_extra_pods`] left
        // them out) is no part of the tree.
        let cores: Vec<usize> = (0..switches)
            .filter(|&s| levels[s] == Level::Core && !ports[s].is_empty())
            .collect();
        // One switch with its hosts is a one-level tree; a leaf among several needs uplinks.
        let one_switch = switches == 1;
        if let Some((leaves, _)) = pods.iter().find(|(_, aggs)| aggs.is_empty() && !one_switch) {
            return Err(NotAFatTree::NoUplinks {
                leaf: cabling.switches[leaves[0]].clone(),
            });
        }
        match (pods.len(), cores.first()) {
            (1, Some(&core)) => {
                return Err(NotAFatTree::CoreAboveOnePod {
                    core: cabling.switches[core].clone(),
                })
            }
            (n, None) if n > 1 => return Err(NotAFatTree::Disconnected { pods: n }),
            _ => {}
        }
        Ok(Shape {
            ports,
            neighbours,
            levels,
            pods,
            cores,
        })
    }

    fn hosts_on(&self, switch: usize) -> usize {
        self.ports[switch]
            .iter()
            .filter(|(_, far)| matches!(far.device, Device::Host(_)))
            .count()
    }

    /// The tree's parameters: pods of equal size, every leaf with the same cables to every
    /// aggregation switch of its pod, every aggregation switch with the same core links.
    fn params(
        &self,
        cabling: &Cabling,
        name: &str,
        header_radix: Option<u16>,
    ) -> Result<FatTreeParams, NotAFatTree> {
        let name_of = |s: usize| cabling.switches[s].clone();
        let (first_leaves, first_aggs) = &self.pods[0];
        if first_aggs.is_empty() {
            return self.one_switch_params(cabling, name, header_radix);
        }
        for (leaves, aggs) in &self.pods[1..] {
            if leaves.len() != first_leaves.len() || aggs.len() != first_aggs.len() {
                return Err(NotAFatTree::UnevenPods {
                    first: name_of(first_leaves[0]),
                    first_leaves: first_leaves.len(),
                    first_aggs: first_aggs.len(),
                    other: name_of(leaves[0]),
                    other_leaves: leaves.len(),
                    other_aggs: aggs.len(),
                });
            }
        }
        // The tree has as many cables between every leaf and aggregation switch of a pod as
        // most pairs have; a pair with fewer is missing cables (simulated absent), one with
        // more is not this tree.
        let pairs: Vec<(usize, usize, usize)> = self
            .pods
            .iter()
            .flat_map(|(leaves, aggs)| {
                leaves.iter().flat_map(move |&leaf| {
                    aggs.iter().map(move |&agg| {
                        (
                            leaf,
                            agg,
                            self.neighbours[leaf].get(&agg).copied().unwrap_or(0),
                        )
                    })
                })
            })
            .collect();
        let links_per_pair = most_common(pairs.iter().map(|&(_, _, links)| links));
        let (first_leaf, first_agg) = pairs
            .iter()
            .find(|&&(_, _, links)| links == links_per_pair)
            .map(|&(leaf, agg, _)| (leaf, agg))
            .expect("the most common count is some pair's");
        if let Some(&(leaf, agg, links)) = pairs.iter().find(|&&(_, _, n)| n > links_per_pair) {
            return Err(NotAFatTree::UnevenUplinks {
                leaf: name_of(leaf),
                agg: name_of(agg),
                links,
                expected: links_per_pair,
                first_leaf: name_of(first_leaf),
                first_agg: name_of(first_agg),
            });
        }
        let core_links = |agg: usize| {
            self.neighbours[agg]
                .iter()
                .filter(|(&t, _)| self.levels[t] == Level::Core)
                .map(|(_, &n)| n)
                .sum::<usize>()
        };
        let aggs = || self.pods.iter().flat_map(|(_, aggs)| aggs.iter().copied());
        let agg_up = most_common(aggs().map(core_links));
        if let Some(agg) = aggs().find(|&a| core_links(a) > agg_up) {
            return Err(NotAFatTree::UnevenCoreLinks {
                agg: name_of(agg),
                links: core_links(agg),
                first: name_of(
                    aggs()
                        .find(|&a| core_links(a) == agg_up)
                        .expect("most common"),
                ),
                expected: agg_up,
            });
        }
        let leaf_up = links_per_pair * first_aggs.len();
        let agg_down = links_per_pair * first_leaves.len();
        let (busiest, most_hosts) = self
            .pods
            .iter()
            .flat_map(|(leaves, _)| leaves)
            .map(|&l| (l, self.hosts_on(l)))
            .max_by_key(|&(l, hosts)| (hosts, std::cmp::Reverse(l)))
            .expect("a pod has leaves");
        // The tree's radix is one number for every level: with cores, the aggregation
        // switches' ports fix it; a two-level tree takes what its leaves and spines need.
        let radix = match header_radix {
            Some(radix) => usize::from(radix),
            None if self.cores.is_empty() => (most_hosts + leaf_up).max(agg_down),
            None => agg_down + agg_up,
        };
        let slots = radix.saturating_sub(leaf_up);
        if most_hosts > slots {
            return Err(NotAFatTree::TooManyHosts {
                leaf: name_of(busiest),
                hosts: most_hosts,
                slots: slots as u32,
                radix: radix as u32,
                uplinks: leaf_up,
            });
        }
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Ok(FatTreeParams {
            name: name.to_string(),
            radix: u16::try_from(radix)
                .map_err(|_| NotAFatTree::Parameters(format!("radix {radix} is too large")))?,
            nodes_per_leaf: slots as u16,
            leaves: count(first_leaves.len() * self.pods.len()),
            leaves_per_pod: count(first_leaves.len()),
            aggs_per_pod: count(first_aggs.len()),
        })
    }

    /// A one-level tree: the one switch's ports (the header's count, or as many as it has
    /// hosts) are all node ports; those without a host are free nodes.
    fn one_switch_params(
        &self,
        cabling: &Cabling,
        name: &str,
        header_radix: Option<u16>,
    ) -> Result<FatTreeParams, NotAFatTree> {
        let hosts = self.hosts_on(0);
        let radix = header_radix.map_or(hosts, usize::from);
        if hosts > radix {
            return Err(NotAFatTree::TooManyHosts {
                leaf: cabling.switches[0].clone(),
                hosts,
                slots: radix as u32,
                radix: radix as u32,
                uplinks: 0,
            });
        }
        // A tree has two ports at least; a switch with one host has one free.
        let radix = u16::try_from(radix.max(2))
            .map_err(|_| NotAFatTree::Parameters(format!("radix {radix} is too large")))?;
        Ok(FatTreeParams {
            name: name.to_string(),
            radix,
            nodes_per_leaf: radix,
            leaves: 1,
            leaves_per_pod: 1,
            aggs_per_pod: 0,
        })
    }

    /// Fabric switch of each tree switch. Leaves and pods keep fabric order; aggregation
    /// switches and cores are ordered into the tree's core groups: the cores of a group are
    /// those joined to the same aggregation switches, and group `g` takes aggregation
    /// switches `g*m..(g+1)*m` of every pod.
    fn switch_order(&self, cabling: &Cabling, tree: &Topology) -> Result<Vec<usize>, NotAFatTree> {
        let mut order: Vec<usize> = self.pods.iter().flat_map(|(l, _)| l.clone()).collect();
        if self.cores.is_empty() {
            order.extend(self.pods.iter().flat_map(|(_, a)| a.clone()));
            return Ok(order);
        }
        let group =
            tree.ports(SwitchId(tree.switches_at(Level::Core).start)) as usize / self.pods.len();
        let wiring = |detail: String| NotAFatTree::CoreWiring {
            group: group as u32,
            detail,
        };
        // Core groups: cores with the same aggregation switches, in order of first core. A
        // core missing a cable reaches a subset of its group's: it joins the one group whose
        // switches include all it reaches.
        let aggs_of =
            |core: usize| -> Vec<usize> { self.neighbours[core].keys().copied().collect() };
        let most = self.cores.iter().map(|&c| self.neighbours[c].len()).max();
        let (complete, short): (Vec<usize>, Vec<usize>) = self
            .cores
            .iter()
            .partition(|&&c| Some(self.neighbours[c].len()) == most);
        let mut groups: Vec<(Vec<usize>, Vec<usize>)> = Vec::new();
        for core in complete {
            let aggs = aggs_of(core);
            match groups.iter_mut().find(|(a, _)| *a == aggs) {
                Some((_, cores)) => cores.push(core),
                None => groups.push((aggs, vec![core])),
            }
        }
        for core in short {
            let aggs = aggs_of(core);
            let within: Vec<usize> = (0..groups.len())
                .filter(|&g| aggs.iter().all(|a| groups[g].0.contains(a)))
                .collect();
            match within[..] {
                [g] => groups[g].1.push(core),
                _ => {
                    return Err(wiring(format!(
                        "core '{}' reaches {} aggregation switches, {} group of the other cores' \
                         holding them all",
                        cabling.switches[core],
                        aggs.len(),
                        if within.is_empty() {
                            "no"
                        } else {
                            "more than one"
                        }
                    )))
                }
            }
        }
        for (_, cores) in &mut groups {
            cores.sort_unstable();
        }
        groups.sort_by_key(|(_, cores)| cores[0]);
        let aggs_per_pod = self.pods[0].1.len();
        if groups.len() * group != aggs_per_pod {
            return Err(wiring(format!(
                "the cores fall into {} groups by the aggregation switches they reach; {} are needed",
                groups.len(),
                aggs_per_pod / group.max(1)
            )));
        }
        for (pod, (_, aggs)) in self.pods.iter().enumerate() {
            for (aggs_of_group, cores) in &groups {
                let in_pod: Vec<usize> = aggs
                    .iter()
                    .copied()
                    .filter(|a| aggs_of_group.contains(a))
                    .collect();
                if in_pod.len() != group {
                    return Err(wiring(format!(
                        "core '{}' reaches {} aggregation switches of pod {pod} (the pod of '{}')",
                        cabling.switches[cores[0]],
                        in_pod.len(),
                        cabling.switches[self.pods[pod].0[0]],
                    )));
                }
            }
        }
        for (_, aggs) in &self.pods {
            for (aggs_of_group, _) in &groups {
                order.extend(aggs.iter().filter(|a| aggs_of_group.contains(a)));
            }
        }
        order.extend(groups.iter().flat_map(|(_, cores)| cores.clone()));
        Ok(order)
    }

    /// Maps nodes and ports onto the tree and checks every cable against it.
    fn check_and_map(
        &self,
        cabling: &Cabling,
        topology: Topology,
        order: Vec<usize>,
    ) -> Result<Recognized, NotAFatTree> {
        let mut tree_of = vec![usize::MAX; cabling.switches.len()];
        for (tree, &fabric) in order.iter().enumerate() {
            tree_of[fabric] = tree;
        }
        // Fabric cables per (tree switch, tree switch) pair, as (port here, port there).
        let mut fabric_pairs: BTreeMap<(usize, usize), Vec<(u16, u16)>> = BTreeMap::new();
        for (s, list) in self.ports.iter().enumerate() {
            for &(port, far) in list {
                if let Device::Switch(t) = far.device {
                    fabric_pairs
                        .entry((tree_of[s], tree_of[t]))
                        .or_default()
                        .push((port, far.port));
                }
            }
        }
        // Tree links per pair, from the lower-numbered switch, in port order.
        let mut tree_pairs: BTreeMap<(usize, usize), Vec<PortRef>> = BTreeMap::new();
        let mut node_hosts = vec![None; topology.num_nodes() as usize];
        let mut fabric_ports = vec![0u16; topology.num_ports()];
        for s in 0..topology.num_switches() {
            let switch = SwitchId(s);
            let fabric = order[s as usize];
            let mut hosts = self.ports[fabric]
                .iter()
                .filter_map(|&(port, far)| match far.device {
                    Device::Host(h) => Some((port, h, far.port)),
                    Device::Switch(_) => None,
                });
            for port in 0..topology.ports(switch) {
                let here = PortRef { switch, port };
                match topology.peer(here) {
                    Peer::Node(node) => {
                        if let Some((at, host, host_port)) = hosts.next() {
                            node_hosts[node.0 as usize] =
                                Some((cabling.hosts[host].clone(), host_port));
                            fabric_ports[topology.port_index(here) as usize] = at;
                        }
                    }
                    Peer::Switch { switch: far, .. } if far.0 > s => tree_pairs
                        .entry((s as usize, far.0 as usize))
                        .or_default()
                        .push(here),
                    Peer::Switch { .. } => {}
                }
            }
        }
        let name = |tree: usize| cabling.switches[order[tree]].clone();
        if let Some((&(a, b), cables)) = fabric_pairs.iter().find(|(&(a, b), cables)| {
            cables.len() > tree_pairs.get(&(a.min(b), a.max(b))).map_or(0, Vec::len)
        }) {
            return Err(NotAFatTree::Mismatch {
                a: name(a),
                b: name(b),
                fabric: cables.len(),
                tree: tree_pairs.get(&(a.min(b), a.max(b))).map_or(0, Vec::len),
            });
        }
        // The k-th cable of a pair, in port order, is the tree's k-th link; the links beyond
        // the fabric's cables are the missing ones.
        let mut absent = Vec::new();
        let mut missing_cables = Vec::new();
        for (&(a, b), links) in &tree_pairs {
            let cables = fabric_pairs.get(&(a, b)).map_or(&[][..], Vec::as_slice);
            for (&here, &(port_here, port_there)) in links.iter().zip(cables) {
                fabric_ports[topology.port_index(here) as usize] = port_here;
                if let Peer::Switch { switch, port } = topology.peer(here) {
                    fabric_ports[topology.port_index(PortRef { switch, port }) as usize] =
                        port_there;
                }
            }
            if cables.len() < links.len() {
                absent.extend(&links[cables.len()..]);
                missing_cables.push(MissingCables {
                    a: name(a),
                    b: name(b),
                    fabric: cables.len(),
                    tree: links.len(),
                });
            }
        }
        let topology = topology.without_links(&absent).map_err(|e| match e {
            TopologyError::Cut { from, to, .. } => NotAFatTree::Cut {
                from: name(from.0 as usize),
                to: name(to.0 as usize),
                missing: missing_cables.len(),
            },
            other => NotAFatTree::Parameters(other.to_string()),
        })?;
        let free = (0..topology.num_nodes())
            .filter(|&n| node_hosts[n as usize].is_none())
            .collect();
        let topology = topology.with_free_nodes(free);
        let switch_names = order.iter().map(|&f| cabling.switches[f].clone()).collect();
        Ok(Recognized {
            topology,
            switch_names,
            fabric_switches: order,
            node_hosts,
            fabric_ports,
            missing_cables,
        })
    }
}

/// The switches with hosts cabled into a two-level tree's spines beside its leaves (an extra
/// pod's, [`Cabling::without_extra_pods`]), by switch, from each switch's hosts and the
/// switches it is cabled to. The fabric is two-level when every switch without hosts is
/// cabled only to switches with hosts (a spine); a leaf of the tree is cabled to every spine
/// and to nothing else. A management switch is cabled to spines only, but not to all of them,
/// and holds fewer hosts than every leaf: as a leaf it would be one with most of its cables
/// missing, and its hosts would have no up/down path to each other. A leaf that lost cables
/// stays a leaf (simulated without them) unless it also holds fewer hosts than every leaf.
fn beside_the_spines(hosts_on: &[Vec<usize>], far: &[Vec<usize>]) -> Vec<bool> {
    let n = far.len();
    let none = vec![false; n];
    let hosts = |s: usize| hosts_on[s].len();
    let spines: BTreeSet<usize> = (0..n)
        .filter(|&s| hosts(s) == 0 && !far[s].is_empty())
        .collect();
    let two_level = spines.iter().all(|&s| far[s].iter().all(|&t| hosts(t) > 0));
    if spines.is_empty() || !two_level {
        return none;
    }
    let reached = |s: usize| far[s].iter().copied().collect::<BTreeSet<usize>>();
    let leaves: Vec<usize> = (0..n)
        .filter(|&s| hosts(s) > 0 && reached(s) == spines)
        .collect();
    let fewest = match leaves.iter().map(|&l| hosts(l)).min() {
        Some(fewest) if leaves.len() >= 2 => fewest,
        _ => return none,
    };
    (0..n)
        .map(|s| {
            let reach = reached(s);
            hosts(s) > 0
                && hosts(s) < fewest
                && !reach.is_empty()
                && reach != spines
                && reach.is_subset(&spines)
        })
        .collect()
}

/// Leaves and aggregation switches grouped into pods (connected through each other, not
/// through cores), each pod's members in fabric order, pods in order of their first leaf.
fn leaf_pods(
    levels: &[Level],
    neighbours: &[BTreeMap<usize, usize>],
) -> Vec<(Vec<usize>, Vec<usize>)> {
    let mut pod_of = vec![usize::MAX; levels.len()];
    let mut pods = Vec::new();
    for start in 0..levels.len() {
        if levels[start] != Level::Leaf || pod_of[start] != usize::MAX {
            continue;
        }
        let pod = pods.len();
        let mut members = vec![start];
        pod_of[start] = pod;
        let mut next = 0;
        while next < members.len() {
            let s = members[next];
            next += 1;
            for &t in neighbours[s].keys() {
                if levels[t] != Level::Core && pod_of[t] == usize::MAX {
                    pod_of[t] = pod;
                    members.push(t);
                }
            }
        }
        members.sort_unstable();
        let (leaves, aggs) = members.into_iter().partition(|&s| levels[s] == Level::Leaf);
        pods.push((leaves, aggs));
    }
    pods
}

/// The value most of `counts` have (the larger of equally common ones).
fn most_common(counts: impl Iterator<Item = usize>) -> usize {
    let mut seen: BTreeMap<usize, usize> = BTreeMap::new();
    for n in counts {
        *seen.entry(n).or_default() += 1;
    }
    seen.into_iter()
        .max_by_key(|&(n, times)| (times, n))
        .map_or(0, |(n, _)| n)
}
