//! A cluster: hosts (each a host model) and the fabric their RNICs are cabled to, with the
//! component ids of DESIGN 4.6 (`leaf2/9` for a switch port, `node007/rnic2` for a host's
//! RNIC port).

use std::collections::HashMap;

use fabric::topology::{
    FatTreeParams, Level, NodeId, Peer, PortIndex, PortRef, SwitchId, Topology,
};
use model::{ComponentClass, ComponentId, HostTopology};

use crate::PlanError;

/// The built-in clusters by name.
pub const BUILTIN_NAMES: [&str; 2] = ["pod-32", "full-891"];

/// One host of the cluster.
#[derive(Clone, Debug)]
pub struct ClusterHost {
    /// Its name (`node007`).
    pub name: String,
    /// Its host model; `None` for a real host known by its RNICs' device names only
    /// ([`cabled_by_device`]), which is paired and routed but never simulated.
    model: Option<HostTopology>,
    /// Its RNICs in model order (`rnic0`, `rnic1`, ...): rail `r` is `rnics[r]`.
    pub rnics: Vec<ComponentId>,
}

/// An RNIC port of the cluster: host index and RNIC index on that host.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RnicPort {
    /// Index into [`Cluster::hosts`].
    pub host: usize,
    /// Index into that host's [`ClusterHost::rnics`].
    pub rnic: usize,
}

/// A cable of the fabric, named by the switch output port of its lower end (the leaf's
/// port down to a host, or the lower switch's port up), so that both directions are one cable.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cable(pub PortIndex);

/// The fabric of a cluster: the simulator's tree, the switch names, and which RNIC is on
/// which tree node.
#[derive(Clone, Debug)]
pub struct Fabric {
    /// The tree the simulator runs.
    pub topology: Topology,
    /// Each switch's name, by [`SwitchId`].
    pub switch_names: Vec<String>,
    /// The RNIC on each tree node, by [`NodeId`]; `None` for a free leaf port.
    attached: Vec<Option<RnicPort>>,
    /// The tree node of each RNIC port.
    node_of: HashMap<RnicPort, NodeId>,
    /// The rate most links run at, Gb/s (a real fabric's own rates are in the topology).
    pub link_gbps: f64,
    /// A real fabric's port number of each switch output port, by `PortIndex`; `None` on a
    /// built tree, whose ports are numbered from 1 in order.
    port_numbers: Option<Vec<u16>>,
}

/// A real fabric as `fabric sim --topology FILE` reads it from an ibnetdiscover file,
/// recognised as a tree (`fabric::topology_file`), for a cluster file's `topology`.
#[derive(Clone, Debug)]
pub struct CabledFabric {
    /// The tree, with the fabric's missing cables, free ports and link rates.
    pub topology: Topology,
    /// The rate most links run at, Gb/s.
    pub link_gbps: f64,
    /// Each switch's description, by `SwitchId`.
    pub switch_names: Vec<String>,
    /// The fabric's port number of each switch output port, by `PortIndex`.
    pub port_numbers: Vec<u16>,
    /// The CA description on each node (`node001 mlx5_0`), by `NodeId`.
    pub node_cas: Vec<Option<String>>,
}

/// The cluster: hosts and fabric.
#[derive(Clone, Debug)]
pub struct Cluster {
    /// Its name (`pod-32`, or the file's `name`).
    pub name: String,
    /// The hosts, in the order they were given.
    pub hosts: Vec<ClusterHost>,
    /// The fabric.
    pub fabric: Fabric,
}

impl ClusterHost {
    /// A host named `name` running `model`.
    pub fn new(name: String, model: HostTopology) -> ClusterHost {
        let rnics = model
            .components()
            .iter()
            .filter(|c| c.class() == ComponentClass::Rnic)
            .map(|c| c.id.clone())
            .collect();
        ClusterHost {
            name,
            model: Some(model),
            rnics,
        }
    }

    /// Its host model. Only a simulated cluster's hosts are simulated, and each has one.
    pub fn model(&self) -> &HostTopology {
        self.model
            .as_ref()
            .expect("a simulated cluster's hosts have models")
    }
}

/// A port label that names no cabled port of the cluster; each names the label or its part.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PortLabelError {
    /// No `/`.
    #[error("`{label}` is not `<switch>/<port>` nor `<host>/<rnic>`")]
    NotALabel {
        /// The label as given.
        label: String,
    },
    /// The host has no such RNIC.
    #[error("host `{host}` has no RNIC `{rnic}` (it has {})", .has.join(", "))]
    NoRnic {
        /// The host.
        host: String,
        /// The RNIC as given.
        rnic: String,
        /// The host's RNICs.
        has: Vec<String>,
    },
    /// The host's RNIC has no cable to the fabric.
    #[error("`{label}` is not cabled to the fabric")]
    NotCabled {
        /// The label as given.
        label: String,
    },
    /// Neither a switch nor a host.
    #[error(
        "`{device}` is neither a switch nor a host of cluster `{cluster}` (switches \
         {switches}, hosts {hosts})"
    )]
    Unknown {
        /// The part before the `/`.
        device: String,
        /// The cluster.
        cluster: String,
        /// Its switches, in hostlist syntax (`leaf[1-16],spine[1-8]`).
        switches: String,
        /// Its hosts, in hostlist syntax.
        hosts: String,
    },
    /// The switch has no such port.
    #[error("`{device}` has {cabled}, not `{port}`")]
    NoPort {
        /// The switch.
        device: String,
        /// Its ports (`ports 1..16`, `cabled ports 1,3`).
        cabled: String,
        /// The port as given.
        port: String,
    },
    /// A leaf port with no host cabled to it.
    #[error("no cable at `{label}`: the port is free")]
    Free {
        /// The label as given.
        label: String,
    },
}

impl Cluster {
    /// The built-in cluster `name`, if there is one.
    pub fn builtin(name: &str) -> Option<Result<Cluster, PlanError>> {
        match name {
            "pod-32" => Some(pod_32()),
            "full-891" => Some(full_891()),
            _ => None,
        }
    }

    /// The index of the host named `name`.
    pub fn host_index(&self, name: &str) -> Option<usize> {
        self.hosts.iter().position(|h| h.name == name)
    }

    /// Every RNIC port cabled to the fabric, host by host, rail by rail.
    pub fn rnic_ports(&self) -> impl Iterator<Item = RnicPort> + '_ {
        self.hosts
            .iter()
            .enumerate()
            .flat_map(|(host, h)| (0..h.rnics.len()).map(move |rnic| RnicPort { host, rnic }))
            .filter(|port| self.fabric.node_of.contains_key(port))
    }

    /// `node007/rnic2`.
    pub fn rnic_label(&self, port: RnicPort) -> String {
        let host = &self.hosts[port.host];
        format!("{}/{}", host.name, host.rnics[port.rnic])
    }

    /// The tree node an RNIC port is cabled to.
    pub fn node_of(&self, port: RnicPort) -> NodeId {
        self.fabric.node_of[&port]
    }

    /// The RNIC port on a tree node, if a host is cabled there.
    pub fn rnic_at(&self, node: NodeId) -> Option<RnicPort> {
        self.fabric.attached[node.0 as usize]
    }

    /// `leaf2/9`: a switch port by its switch's name and its port number (a real fabric's
    /// own; from 1 on a built tree).
    pub fn port_label(&self, port: PortRef) -> String {
        let name = &self.fabric.switch_names[port.switch.0 as usize];
        format!("{name}/{}", self.port_number(port))
    }

    fn port_number(&self, port: PortRef) -> u16 {
        match &self.fabric.port_numbers {
            Some(numbers) => numbers[self.fabric.topology.port_index(port) as usize],
            None => port.port + 1,
        }
    }

    /// The switch output port a label names, or why it names none: `leaf2/9` (a switch
    /// port, 1-based) or `node007/rnic2` (a host's RNIC port: the leaf port it is cabled to).
    pub fn parse_port(&self, label: &str) -> Result<PortRef, PortLabelError> {
        // A real switch's description may hold '/' itself (`MF0;ib1:SX6036/U1`).
        let (device, port) = label
            .rsplit_once('/')
            .ok_or_else(|| PortLabelError::NotALabel {
                label: label.to_owned(),
            })?;
        if let Some(host) = self.host_index(device) {
            let rnics = &self.hosts[host].rnics;
            let rnic = rnics
                .iter()
                .position(|r| r.as_str() == port)
                .ok_or_else(|| PortLabelError::NoRnic {
                    host: device.to_owned(),
                    rnic: port.to_owned(),
                    has: rnics.iter().map(|r| r.to_string()).collect(),
                })?;
            let node = self.fabric.node_of.get(&RnicPort { host, rnic });
            let node = node.ok_or_else(|| PortLabelError::NotCabled {
                label: label.to_owned(),
            })?;
            return Ok(self.fabric.topology.node_port(*node));
        }
        let switch = self
            .fabric
            .switch_names
            .iter()
            .position(|s| s == device)
            .ok_or_else(|| PortLabelError::Unknown {
                device: device.to_owned(),
                cluster: self.name.clone(),
                switches: name_range(&self.fabric.switch_names),
                hosts: name_range(
                    &self
                        .hosts
                        .iter()
                        .map(|h| h.name.clone())
                        .collect::<Vec<_>>(),
                ),
            })?;
        let switch = SwitchId(switch as u32);
        let ports: Vec<PortRef> = (0..self.fabric.topology.ports(switch))
            .map(|port| PortRef { switch, port })
            .collect();
        let wanted = port.parse::<u16>().ok();
        let found = ports
            .iter()
            .copied()
            .find(|&p| Some(self.port_number(p)) == wanted);
        let port = found.ok_or_else(|| {
            let mut numbers: Vec<u16> = ports.iter().map(|&p| self.port_number(p)).collect();
            numbers.sort_unstable();
            let cabled = match numbers.as_slice() {
                [first, .., last] if usize::from(last - first) + 1 == numbers.len() => {
                    format!("ports {first}..{last}")
                }
                _ => {
                    let list: Vec<String> = numbers.iter().map(u16::to_string).collect();
                    format!("cabled ports {}", list.join(","))
                }
            };
            PortLabelError::NoPort {
                device: device.to_owned(),
                cabled,
                port: port.to_owned(),
            }
        })?;
        if let Peer::Node(node) = self.fabric.topology.peer(port) {
            if self.rnic_at(node).is_none() {
                return Err(PortLabelError::Free {
                    label: label.to_owned(),
                });
            }
        }
        Ok(port)
    }

    /// The cable at a switch output port (either end of it names the same cable).
    pub fn cable_at(&self, port: PortRef) -> Cable {
        let topology = &self.fabric.topology;
        match topology.peer(port) {
            Peer::Node(_) => Cable(topology.port_index(port)),
            Peer::Switch { switch, port: back } => {
                let far = PortRef { switch, port: back };
                // The lower end's output port is the one that leads up.
                let lower = if topology.is_up(port) { port } else { far };
                Cable(topology.port_index(lower))
            }
        }
    }

    /// The switch output ports of a cable: both ends of a switch-to-switch cable, the leaf's
    /// port of a host's (the host's side is no switch port).
    pub fn cable_ports(&self, cable: Cable) -> Vec<PortIndex> {
        let topology = &self.fabric.topology;
        match topology.peer(topology.port_ref(cable.0)) {
            Peer::Node(_) => vec![cable.0],
            Peer::Switch { switch, port } => {
                vec![cable.0, topology.port_index(PortRef { switch, port })]
            }
        }
    }

    /// The cables a packet from `a` to `b` crosses, host cables included.
    pub fn cables_between(&self, a: RnicPort, b: RnicPort) -> Vec<Cable> {
        let topology = &self.fabric.topology;
        let (src, dst) = (self.node_of(a), self.node_of(b));
        let mut cables = vec![Cable(topology.port_index(topology.node_port(src)))];
        cables.extend(
            topology
                .deterministic_route(src, dst)
                .into_iter()
                .map(|p| self.cable_at(p)),
        );
        cables
    }

    /// A cable's name, by its lower end (`leaf2/9`, or `leaf2/1` for a host's).
    pub fn cable_label(&self, cable: Cable) -> String {
        self.port_label(self.fabric.topology.port_ref(cable.0))
    }

    /// The route from `a` to `b` on `topology` (the cluster's tree, or the tree as faults
    /// leave it) as DESIGN 4.6 writes it: each switch's input port then its output port
    /// (`leaf1/1`, `leaf1/9`, `spine1/1`, `spine1/2`, `leaf2/9`, `leaf2/1`).
    pub fn route_labels(&self, topology: &Topology, a: RnicPort, b: RnicPort) -> Vec<String> {
        let mut input = topology.node_port(self.node_of(a));
        let mut labels = Vec::new();
        for out in topology.deterministic_route(self.node_of(a), self.node_of(b)) {
            labels.push(self.port_label(input));
            labels.push(self.port_label(out));
            if let Peer::Switch { switch, port } = topology.peer(out) {
                input = PortRef { switch, port };
            }
        }
        labels
    }

    /// Whether two RNIC ports hang off the same leaf switch.
    pub fn same_leaf(&self, a: RnicPort, b: RnicPort) -> bool {
        let topology = &self.fabric.topology;
        topology.leaf_of(self.node_of(a)) == topology.leaf_of(self.node_of(b))
    }
}

/// A list of names in hostlist syntax (`leaf[1-16],spine[1-8]`): every name, in few words.
fn name_range(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        model::hostlist::compress(names)
    }
}

/// DESIGN 4.6's `pod-32`: 32 `dgx-a100` hosts `node001`..`node032` on a rail-optimised
/// two-level tree of 16-port switches.
fn pod_32() -> Result<Cluster, PlanError> {
    let model = model::builtin::load("dgx-a100")
        .expect("dgx-a100 is built in")
        .map_err(|e| PlanError::Host(e.to_string()))?;
    let hosts = (1..=32)
        .map(|n| ClusterHost::new(format!("node{n:03}"), model.clone()))
        .collect();
    rail_optimised("pod-32", hosts, 16, 200.0)
}

/// `full-891`: 891 `dgx-a100` hosts `node001`..`node891` filling every one of the 3,564 node
/// ports of the thesis's `full` three-level tree (Table 3.1: radix 36, 18 nodes per leaf,
/// 198 leaves, 198 aggregation and 108 core switches), rail-major ([`rail_major`]).
fn full_891() -> Result<Cluster, PlanError> {
    let model = model::builtin::load("dgx-a100")
        .expect("dgx-a100 is built in")
        .map_err(|e| PlanError::Host(e.to_string()))?;
    let hosts = (1..=891)
        .map(|n| ClusterHost::new(format!("node{n:03}"), model.clone()))
        .collect();
    rail_major("full-891", hosts, FatTreeParams::full(), 200.0)
}

/// `hosts` on the three-level tree `params` builds, rail-major: rail `r` (RNIC index) of
/// host `n` (from 0) on tree node `r * hosts + n`, so that each rail is one run of
/// consecutive leaves and consecutive hosts share a leaf on every rail, as on a
/// rail-optimised two-level tree. Leaves are `leaf1`.., aggregation switches `spine1`..,
/// cores `core1`.. (in the tree's order); ports are numbered from 1, down ports first.
/// Nodes beyond the hosts' RNICs are free.
pub fn rail_major(
    name: &str,
    hosts: Vec<ClusterHost>,
    params: FatTreeParams,
    link_gbps: f64,
) -> Result<Cluster, PlanError> {
    let unfit = |reason: String| PlanError::Fabric(format!("cluster `{name}`: {reason}"));
    let rails = hosts.first().map_or(0, |h| h.rnics.len());
    if let Some(h) = hosts.iter().find(|h| h.rnics.len() != rails || rails == 0) {
        return Err(unfit(format!(
            "rail-major cabling needs as many RNICs, at least one, on every host: `{}` has {}",
            h.name,
            h.rnics.len()
        )));
    }
    let tree = Topology::new(params).map_err(|e| unfit(e.to_string()))?;
    let needed = rails * hosts.len();
    if needed > tree.num_nodes() as usize {
        return Err(unfit(format!(
            "{} hosts of {rails} RNICs need {needed} node ports; the tree has {}",
            hosts.len(),
            tree.num_nodes()
        )));
    }
    let mut attached = vec![None; tree.num_nodes() as usize];
    let mut node_of = HashMap::new();
    for host in 0..hosts.len() {
        for rnic in 0..rails {
            let node = NodeId((rnic * hosts.len() + host) as u32);
            attached[node.0 as usize] = Some(RnicPort { host, rnic });
            node_of.insert(RnicPort { host, rnic }, node);
        }
    }
    let free = (needed as u32..tree.num_nodes()).collect();
    let topology = tree.with_free_nodes(free);
    let switch_names = (0..topology.num_switches())
        .map(|s| {
            let (prefix, first) = match topology.level(SwitchId(s)) {
                Level::Leaf => ("leaf", topology.switches_at(Level::Leaf).start),
                Level::Aggregation => ("spine", topology.switches_at(Level::Aggregation).start),
                Level::Core => ("core", topology.switches_at(Level::Core).start),
            };
            format!("{prefix}{}", s - first + 1)
        })
        .collect();
    Ok(Cluster {
        name: name.to_string(),
        hosts,
        fabric: Fabric {
            topology,
            switch_names,
            attached,
            node_of,
            link_gbps,
            port_numbers: None,
        },
    })
}

/// A rail-optimised two-level fat tree of `radix`-port switches for `hosts` (DESIGN 4.6):
/// `radix / 2` hosts per leaf, one group of leaves per rail (RNIC index), RNIC `r` of host
/// `n` (from 0) on leaf `r * leaves_per_rail + n div (radix / 2)`, port `n mod (radix / 2)`;
/// leaf port `radix / 2 + s` up to spine `s`, spine port `l` down to leaf `l` (all 1-based
/// in names). Every host must have the same number of RNICs (the rails).
pub fn rail_optimised(
    name: &str,
    hosts: Vec<ClusterHost>,
    radix: u16,
    link_gbps: f64,
) -> Result<Cluster, PlanError> {
    let unfit = |reason: String| PlanError::Fabric(format!("cluster `{name}`: {reason}"));
    let rails = hosts.first().map_or(0, |h| h.rnics.len());
    if rails == 0 {
        return Err(unfit("no host with an RNIC".to_string()));
    }
    if let Some(h) = hosts.iter().find(|h| h.rnics.len() != rails) {
        return Err(unfit(format!(
            "a rail-optimised tree needs as many RNICs on every host: `{}` has {}, `{}` has {rails}",
            h.name,
            h.rnics.len(),
            hosts[0].name
        )));
    }
    if radix < 4 || !radix.is_multiple_of(2) {
        return Err(unfit(format!(
            "the switch radix must be even and at least 4, not {radix}"
        )));
    }
    let per_leaf = usize::from(radix / 2);
    let leaves_per_rail = hosts.len().div_ceil(per_leaf);
    let leaves = rails * leaves_per_rail;
    if leaves > usize::from(radix) {
        return Err(unfit(format!(
            "{} hosts of {rails} RNICs need {leaves} leaves of {per_leaf} hosts, more than a \
             spine of {radix} ports reaches (a two-level tree of radix {radix} holds at most {} \
             hosts of {rails} RNICs)",
            hosts.len(),
            usize::from(radix) / rails * per_leaf
        )));
    }
    let params = FatTreeParams {
        name: name.to_string(),
        radix,
        nodes_per_leaf: radix / 2,
        leaves: leaves as u32,
        leaves_per_pod: leaves as u32,
        aggs_per_pod: u32::from(radix / 2),
    };
    let tree = Topology::new(params).map_err(|e| unfit(e.to_string()))?;
    let mut attached = vec![None; tree.num_nodes() as usize];
    let mut node_of = HashMap::new();
    for host in 0..hosts.len() {
        for rnic in 0..rails {
            let leaf = rnic * leaves_per_rail + host / per_leaf;
            let node = NodeId((leaf * per_leaf + host % per_leaf) as u32);
            attached[node.0 as usize] = Some(RnicPort { host, rnic });
            node_of.insert(RnicPort { host, rnic }, node);
        }
    }
    let free = (0..tree.num_nodes())
        .filter(|&n| attached[n as usize].is_none())
        .collect();
    let topology = tree.with_free_nodes(free);
    let switch_names = (0..topology.num_switches())
        .map(|s| {
            let s = s as usize;
            if s < leaves {
                format!("leaf{}", s + 1)
            } else {
                format!("spine{}", s - leaves + 1)
            }
        })
        .collect();
    Ok(Cluster {
        name: name.to_string(),
        hosts,
        fabric: Fabric {
            topology,
            switch_names,
            attached,
            node_of,
            link_gbps,
            port_numbers: None,
        },
    })
}

/// A cluster on a real fabric: each host's RNICs are the CAs whose description starts with
/// its name (`node001 mlx5_0`, `node001 HCA-2`), in the natural order of the rest (HCA-2
/// before HCA-11). A host with fewer CAs than RNICs has the others off this fabric; one
/// with none, or with more CAs than RNICs, is refused. CAs of hosts not in the cluster
/// carry no probe.
pub fn cabled(
    name: &str,
    hosts: Vec<ClusterHost>,
    fabric: CabledFabric,
) -> Result<Cluster, PlanError> {
    place(name, hosts, fabric, &|_, h, mut devices| {
        if devices.len() > h.rnics.len() {
            return Err(format!(
                "host `{}` has {} CAs on the fabric but its model has {} RNICs",
                h.name,
                devices.len(),
                h.rnics.len()
            ));
        }
        devices.sort_by_key(|(device, _)| natural_key(device));
        Ok(devices
            .into_iter()
            .enumerate()
            .map(|(rnic, (_, node))| (rnic, node))
            .collect())
    })
}

/// Real hosts on a real fabric, each given as its name and its RNICs' ids with their device
/// names (a collector's registered agents): the CA `HOST DEVICE` is that host's RNIC of that
/// device. A device not on the fabric, or a host's CA whose device is not given, is refused,
/// naming it. The hosts have no model: they are paired and routed, never simulated.
pub fn cabled_by_device(
    name: &str,
    hosts: &[(String, Vec<(String, String)>)],
    fabric: CabledFabric,
) -> Result<Cluster, PlanError> {
    let cluster_hosts = hosts
        .iter()
        .map(|(host, rnics)| ClusterHost {
            name: host.clone(),
            model: None,
            rnics: rnics.iter().map(|(id, _)| ComponentId::new(id)).collect(),
        })
        .collect();
    place(name, cluster_hosts, fabric, &|host, h, on_fabric| {
        let given = &hosts[host].1;
        if let Some((id, device)) = given
            .iter()
            .find(|(_, device)| !on_fabric.iter().any(|(d, _)| d == device))
        {
            return Err(format!(
                "`{}/{id}` (device {device}) is not on the fabric: no CA is described `{} {device}`",
                h.name, h.name
            ));
        }
        on_fabric
            .into_iter()
            .map(|(device, node)| {
                let rnic = given.iter().position(|(_, d)| d == device);
                rnic.map(|rnic| (rnic, node)).ok_or_else(|| {
                    let names: Vec<&str> = given.iter().map(|(_, d)| d.as_str()).collect();
                    format!(
                        "the CA `{} {device}` is on the fabric but host `{}` has no device {device} (it has {})",
                        h.name,
                        h.name,
                        if names.is_empty() { "none".to_string() } else { names.join(", ") }
                    )
                })
            })
            .collect()
    })
}

/// Which RNIC of a host is on which node: the host's index, the host, and its CAs on the
/// fabric (device, node); the RNIC index of each, or why the host does not fit.
type Placement<'a> =
    dyn Fn(usize, &ClusterHost, Vec<(&str, NodeId)>) -> Result<Vec<(usize, NodeId)>, String> + 'a;

/// Cables `hosts` to a real fabric by their CAs (`HOST DEVICE`), `rnics_of` saying which
/// RNIC each CA is. A host with no CA is refused.
fn place(
    name: &str,
    hosts: Vec<ClusterHost>,
    fabric: CabledFabric,
    rnics_of: &Placement,
) -> Result<Cluster, PlanError> {
    let unfit = |reason: String| PlanError::Fabric(format!("cluster `{name}`: {reason}"));
    let mut cas: HashMap<&str, Vec<(&str, NodeId)>> = HashMap::new();
    for (node, ca) in fabric.node_cas.iter().enumerate() {
        if let Some(ca) = ca {
            let (host, device) = ca.split_once(' ').unwrap_or((ca.as_str(), ""));
            cas.entry(host)
                .or_default()
                .push((device, NodeId(node as u32)));
        }
    }
    let mut attached = vec![None; fabric.topology.num_nodes() as usize];
    let mut node_of = HashMap::new();
    for (host, h) in hosts.iter().enumerate() {
        let devices = cas.remove(h.name.as_str()).ok_or_else(|| {
            unfit(format!(
                "host `{}` has no CA on the fabric (a CA's description starts with its host's name)",
                h.name
            ))
        })?;
        for (rnic, node) in rnics_of(host, h, devices).map_err(unfit)? {
            attached[node.0 as usize] = Some(RnicPort { host, rnic });
            node_of.insert(RnicPort { host, rnic }, node);
        }
    }
    Ok(Cluster {
        name: name.to_string(),
        hosts,
        fabric: Fabric {
            topology: fabric.topology,
            switch_names: fabric.switch_names,
            attached,
            node_of,
            link_gbps: fabric.link_gbps,
            port_numbers: Some(fabric.port_numbers),
        },
    })
}

/// `HCA-11` after `HCA-2`: runs of digits compare as numbers.
fn natural_key(text: &str) -> Vec<(String, u64)> {
    let mut key = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let word_end = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (word, tail) = rest.split_at(word_end);
        let digits_end = tail
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(tail.len());
        let (digits, tail) = tail.split_at(digits_end);
        key.push((word.to_string(), digits.parse().unwrap_or(0)));
        rest = tail;
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod() -> Cluster {
        Cluster::builtin("pod-32").unwrap().unwrap()
    }

    #[test]
    fn pod_32_is_cabled_as_design_4_6_says() {
        let pod = pod();
        assert_eq!(pod.hosts.len(), 32);
        assert_eq!(pod.fabric.switch_names.len(), 24);
        // rnic r of node n on leaf(4r + (n-1) div 8 + 1), port (n-1) mod 8 + 1.
        for port in pod.rnic_ports() {
            let n = port.host + 1;
            let leaf = 4 * port.rnic + (n - 1) / 8 + 1;
            let label = format!("leaf{leaf}/{}", (n - 1) % 8 + 1);
            let at = pod.fabric.topology.node_port(pod.node_of(port));
            assert_eq!(pod.port_label(at), label, "{}", pod.rnic_label(port));
            assert_eq!(pod.parse_port(&pod.rnic_label(port)), Ok(at));
            assert_eq!(pod.parse_port(&label), Ok(at));
        }
        // Leaf port 8+s goes up to spine s, and spine port l down to leaf l.
        let up = pod.parse_port("leaf3/13").unwrap();
        match pod.fabric.topology.peer(up) {
            Peer::Switch { switch, port } => {
                assert_eq!(pod.port_label(PortRef { switch, port }), "spine5/3")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            pod.cable_at(up),
            pod.cable_at(pod.parse_port("spine5/3").unwrap())
        );
    }

    #[test]
    fn the_design_example_route() {
        let pod = pod();
        let a = RnicPort { host: 0, rnic: 0 };
        let b = RnicPort { host: 8, rnic: 0 };
        assert_eq!(
            pod.route_labels(&pod.fabric.topology, a, b),
            ["leaf1/1", "leaf1/9", "spine1/1", "spine1/2", "leaf2/9", "leaf2/1"]
        );
        let same = RnicPort { host: 1, rnic: 0 };
        assert!(pod.same_leaf(a, same));
        assert_eq!(
            pod.route_labels(&pod.fabric.topology, a, same),
            ["leaf1/1", "leaf1/2"]
        );
        assert_eq!(pod.cables_between(a, b).len(), 4);
    }

    #[test]
    fn bad_port_names_are_refused_with_what_exists() {
        let pod = pod();
        for (label, says) in [
            ("leaf17/1", "neither a switch nor a host"),
            ("leaf2/17", "ports 1..16"),
            ("leaf2/0", "ports 1..16"),
            ("leaf2/x", "ports 1..16"),
            ("node007/rnic9", "has no RNIC `rnic9`"),
            ("leaf2", "not `<switch>/<port>`"),
        ] {
            let err = pod.parse_port(label).unwrap_err().to_string();
            assert!(err.contains(says), "{label}: {err}");
        }
        // The switches and hosts listed in hostlist syntax, each series on its own.
        assert_eq!(
            pod.parse_port("leafx/1").unwrap_err().to_string(),
            "`leafx` is neither a switch nor a host of cluster `pod-32` (switches \
             leaf[1-16],spine[1-8], hosts node[001-032])"
        );
    }

    /// Two leaves of two nodes; the CAs described as given, by node.
    fn small_fabric(cas: [Option<&str>; 4]) -> CabledFabric {
        let topology = Topology::new(FatTreeParams {
            name: "small".to_string(),
            radix: 4,
            nodes_per_leaf: 2,
            leaves: 2,
            leaves_per_pod: 2,
            aggs_per_pod: 2,
        })
        .unwrap();
        assert_eq!(topology.num_nodes(), 4);
        CabledFabric {
            port_numbers: (0..topology.num_ports() as u32)
                .map(|i| topology.port_ref(i).port + 1)
                .collect(),
            switch_names: (0..topology.num_switches())
                .map(|s| format!("sw{s}"))
                .collect(),
            node_cas: cas.iter().map(|c| c.map(str::to_string)).collect(),
            link_gbps: 100.0,
            topology,
        }
    }

    fn registered(spec: &[(&str, &[(&str, &str)])]) -> Vec<(String, Vec<(String, String)>)> {
        spec.iter()
            .map(|(host, rnics)| {
                let rnics = rnics
                    .iter()
                    .map(|(id, device)| (id.to_string(), device.to_string()))
                    .collect();
                (host.to_string(), rnics)
            })
            .collect()
    }

    #[test]
    fn registered_rnics_are_found_on_the_fabric_by_their_device_names() {
        let fabric = small_fabric([Some("a mlx5_0"), Some("b mlx5_0"), Some("a mlx5_1"), None]);
        // a's rnic0 is its mlx5_1, whatever the names' order.
        let hosts = registered(&[
            ("a", &[("rnic0", "mlx5_1"), ("rnic1", "mlx5_0")]),
            ("b", &[("rnic0", "mlx5_0")]),
        ]);
        let cluster = cabled_by_device("lab", &hosts, fabric.clone()).unwrap();
        let node = |host, rnic| cluster.node_of(RnicPort { host, rnic }).0;
        assert_eq!((node(0, 0), node(0, 1), node(1, 0)), (2, 0, 1));
        assert_eq!(cluster.rnic_label(RnicPort { host: 0, rnic: 0 }), "a/rnic0");
        assert_eq!(cluster.rnic_ports().count(), 3);
        // The two RNICs of `a` on leaf 0 and leaf 1, `b` beside a's mlx5_0.
        assert!(cluster.same_leaf(RnicPort { host: 0, rnic: 1 }, RnicPort { host: 1, rnic: 0 }));

        for (spec, says) in [
            (
                registered(&[("a", &[("rnic0", "mlx5_0"), ("rnic1", "mlx5_1"), ("rnic2", "mlx5_2")]), ("b", &[("rnic0", "mlx5_0")])]),
                "`a/rnic2` (device mlx5_2) is not on the fabric: no CA is described `a mlx5_2`",
            ),
            (
                registered(&[("a", &[("rnic0", "mlx5_0")]), ("b", &[("rnic0", "mlx5_0")])]),
                "the CA `a mlx5_1` is on the fabric but host `a` has no device mlx5_1 (it has mlx5_0)",
            ),
            (
                registered(&[("a", &[("rnic0", "mlx5_0"), ("rnic1", "mlx5_1")]), ("c", &[("rnic0", "mlx5_0")])]),
                "host `c` has no CA on the fabric",
            ),
        ] {
            let err = cabled_by_device("lab", &spec, fabric.clone())
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("cluster `lab`: "), "{err}");
            assert!(err.contains(says), "{says}: {err}");
        }
    }

    #[test]
    fn full_891_fills_the_full_tree_rail_major() {
        let full = Cluster::builtin("full-891").unwrap().unwrap();
        assert_eq!(full.hosts.len(), 891);
        assert_eq!(full.rnic_ports().count(), 3564);
        assert_eq!(full.fabric.topology.compute_nodes().len(), 3564);
        assert_eq!(full.fabric.switch_names.len(), 504);
        let names = &full.fabric.switch_names;
        assert_eq!(
            [
                &names[0],
                &names[197],
                &names[198],
                &names[395],
                &names[396],
                &names[503]
            ],
            ["leaf1", "leaf198", "spine1", "spine198", "core1", "core108"]
        );
        // node001's rail 0 on leaf1 port 1; node019 on leaf2; rail 1 starts at node 891,
        // leaf50 port 10 (891 = 49 x 18 + 9).
        for (label, port) in [
            ("node001/rnic0", "leaf1/1"),
            ("node019/rnic0", "leaf2/1"),
            ("node891/rnic0", "leaf50/9"),
            ("node001/rnic1", "leaf50/10"),
            ("node891/rnic3", "leaf198/18"),
        ] {
            let at = full.parse_port(label).unwrap();
            assert_eq!(full.port_label(at), port, "{label}");
        }
        // Three levels: a route across pods climbs to a core.
        let a = RnicPort { host: 0, rnic: 0 };
        let b = RnicPort { host: 0, rnic: 3 };
        let route = full.route_labels(&full.fabric.topology, a, b);
        assert!(route.iter().any(|p| p.starts_with("core")), "{route:?}");
    }

    #[test]
    fn a_tree_too_small_for_its_hosts_is_refused() {
        let model = model::builtin::load("dgx-a100").unwrap().unwrap();
        let hosts: Vec<_> = (0..40)
            .map(|n| ClusterHost::new(format!("h{n}"), model.clone()))
            .collect();
        let err = rail_optimised("big", hosts, 16, 200.0)
            .unwrap_err()
            .to_string();
        assert!(err.contains("at most 32 hosts"), "{err}");
    }
}
