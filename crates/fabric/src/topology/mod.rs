//! Three-level fat trees (thesis 2.3 and Table 3.1): compute nodes under leaf switches,
//! leaves and aggregation switches grouped into pods, core switches joining the pods.
//!
//! One parameter set describes every tree the simulator runs: the two networks of Table 3.1
//! (`full`, `tapered`), the radix-8 tree of the peer benchmark (`radix8`), and any size a user
//! or a test gives in a TOML file. The wiring rule:
//!
//! - a leaf has `nodes_per_leaf` down ports and `radix - nodes_per_leaf` up ports, spread
//!   evenly over the `aggs_per_pod` aggregation switches of its pod (parallel links when there
//!   are more up ports than aggregation switches);
//! - an aggregation switch has one down port per link from a leaf of its pod and uses the rest
//!   of its radix as up ports;
//! - aggregation switches are split into groups of `m` (the largest divisor of `aggs_per_pod`
//!   with `pods * m <= radix`); every aggregation switch of group `g` has one link to each of
//!   the group's cores, so a core has `m` links into every pod.
//!
//! A tree with `aggs_per_pod = 0` has no level above its leaves: one leaf switch with its
//! nodes on up to `radix` ports (a lab fabric of one switch), a one-level tree.
//!
//! `full` (radix 36, 18 nodes per leaf, 11 pods) gives 198 + 198 + 108 = 504 switches, as
//! CODES builds it (`../shared/reference/codes-peer.md`, workload C); `tapered` (radix 48, 32
//! nodes and 16 up links per leaf, pods of 24 leaves and 16 aggregation switches) gives
//! 144 + 96 + 48 = 288 switches with the 2:1 taper at the leaves.
//!
//! Ports are numbered per switch, down ports first then up ports. Every switch output port is
//! one directed link; [`PortIndex`] numbers them densely across the tree for arrays.
//!
//! Routing (thesis 3.5, codes-peer.md): adaptive on the way up (any up port of a leaf or an
//! aggregation switch leads to the destination; the simulator picks the least loaded),
//! deterministic on the way down (a core picks the aggregation switch `dst % m` of its group in
//! the destination pod; parallel leaf links are picked by `dst % links`). Without adaptive
//! routing the way up is deterministic too: D-mod-K (`route`).

mod detours;
mod engines;
mod forwarding;
pub(crate) mod graph;
mod route;

pub use forwarding::NO_ENTRY;
pub use graph::{Engine, GraphLayout, GraphRouting, GraphSpec, GraphSwitch, GraphTablesError};
pub(crate) use route::dmodk;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::input::InputError;
use crate::limits;

/// Fat-tree parameters that cannot build a tree; each names the tree.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    /// A leaf must keep at least one port up and have at least one node (a one-switch tree
    /// may use every port for nodes).
    #[error("tree '{tree}': nodes_per_leaf must be between 1 and radix - 1, or up to radix for a one-switch tree (radix {radix}, nodes_per_leaf {nodes_per_leaf})")]
    NodesPerLeaf {
        /// The tree's name.
        tree: String,
        /// Ports per switch.
        radix: u32,
        /// Down ports of a leaf, one per compute node.
        nodes_per_leaf: u32,
    },
    /// A count of switches is zero.
    #[error("tree '{tree}': leaves and leaves_per_pod must be positive, and aggs_per_pod too unless the tree is one switch (leaves = 1)")]
    ZeroCount {
        /// The tree's name.
        tree: String,
    },
    /// The leaves do not divide into whole pods.
    #[error(
        "tree '{tree}': leaves ({leaves}) is not a multiple of leaves_per_pod ({leaves_per_pod})"
    )]
    LeavesPerPod {
        /// The tree's name.
        tree: String,
        /// Leaf switches in the tree.
        leaves: u32,
        /// Leaf switches per pod.
        leaves_per_pod: u32,
    },
    /// A leaf's up ports cannot go to every aggregation switch of its pod equally often.
    #[error("tree '{tree}': a leaf's {leaf_up} up ports cannot be spread evenly over {aggs_per_pod} aggregation switches")]
    UnevenLeafUplinks {
        /// The tree's name.
        tree: String,
        /// Up ports of a leaf (`radix - nodes_per_leaf`).
        leaf_up: u32,
        /// Aggregation switches per pod.
        aggs_per_pod: u32,
    },
    /// An aggregation switch would need more ports for the links from its pod's leaves than the
    /// radix gives.
    #[error("tree '{tree}': an aggregation switch would need {agg_down} down ports, more than radix {radix}")]
    AggregationDownPorts {
        /// The tree's name.
        tree: String,
        /// Down ports an aggregation switch needs (leaf links of its pod).
        agg_down: u32,
        /// Ports per switch.
        radix: u32,
    },
    /// More than one pod needs cores, but the aggregation switches have no ports left for them.
    #[error(
        "tree '{tree}': {pods} pods need cores, but aggregation switches have no up ports left"
    )]
    NoCorePorts {
        /// The tree's name.
        tree: String,
        /// Pods in the tree.
        pods: u32,
    },
    /// A size above its cap in [`crate::limits`] (radix, nodes, switch ports).
    #[error("tree '{tree}': {reason}")]
    AboveCap {
        /// The tree's name.
        tree: String,
        /// Which size, its value and the cap ([`crate::limits::above_cap`]).
        reason: String,
    },
    /// With some links missing, a leaf cannot reach another by an up/down path of the
    /// complete tree's length ([`Topology::without_links`]).
    #[error("tree '{tree}': without the missing links, leaf switch {} cannot reach leaf switch {} by an up/down path", .from.0, .to.0)]
    Cut {
        /// The tree's name.
        tree: String,
        /// The leaf with no way up towards `to`.
        from: SwitchId,
        /// The leaf it cannot reach.
        to: SwitchId,
    },
    /// Forwarding tables that do not route the tree ([`Topology::with_forwarding`]).
    #[error("tree '{tree}': forwarding tables: {reason}")]
    Forwarding {
        /// The tree's name.
        tree: String,
        /// What is wrong, naming the switch and destination.
        reason: String,
    },
    /// A subnet manager's tables that do not route a graph ([`Topology::with_forwarding`]).
    #[error("tree '{tree}': forwarding tables: {source}")]
    GraphTables {
        /// The fabric's name.
        tree: String,
        /// What is wrong, naming the switch and destination.
        source: GraphTablesError,
    },
    /// Per-link rates that do not fit the tree.
    #[error("tree '{tree}': link rates: {reason}")]
    LinkRates {
        /// The tree's name.
        tree: String,
        /// What is wrong, in words.
        reason: String,
    },
    /// A link to a node was given as missing: a leaf port without a host is a free node.
    #[error("tree '{tree}': the link down to node {node} is not a cable between switches")]
    NodeLinkMissing {
        /// The tree's name.
        tree: String,
        /// The node at the far end.
        node: u32,
    },
    /// A cabled fabric that cannot be simulated as a graph ([`Topology::graph`]).
    #[error("fabric '{tree}': {reason}")]
    Graph {
        /// The fabric's name.
        tree: String,
        /// What is wrong, naming the switch and port.
        reason: String,
    },
    /// A core has one port per pod at least: more pods than the radix cannot all be reached.
    #[error("tree '{tree}': {pods} pods exceed radix {radix}: a core cannot reach them all")]
    TooManyPods {
        /// The tree's name.
        tree: String,
        /// Pods in the tree.
        pods: u32,
        /// Ports per switch.
        radix: u32,
    },
}

/// A compute node, numbered 0.. left to right under the leaves (thesis 3.4).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct NodeId(pub u32);

/// A switch: leaves first, then aggregation switches (pod by pod), then cores.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SwitchId(pub u32);

/// One output port of one switch: a directed link, the unit telemetry samples (thesis 3.2:
/// hops are recorded as (switch ID, output port)).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PortRef {
    /// The switch the port belongs to.
    pub switch: SwitchId,
    /// The output port on it, from 0 (down ports first, then up ports).
    pub port: u16,
}

/// Dense index of a switch output port, `0..Topology::num_ports()`.
pub type PortIndex = u32;

/// The three levels of a fat tree (thesis 2.3).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Switches with compute nodes below them.
    Leaf,
    /// Switches between the leaves of a pod and the cores.
    Aggregation,
    /// Switches joining the pods.
    Core,
}

/// What is at the far end of an output port.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Peer {
    /// A compute node (the link goes down from its leaf).
    Node(NodeId),
    /// The switch and the port on it that the link arrives at (its input port).
    Switch {
        /// The switch the link arrives at.
        switch: SwitchId,
        /// Its input port.
        port: u16,
    },
}

/// The parameters of a three-level fat tree; the TOML topology file is exactly this.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FatTreeParams {
    /// A name for reports and file names (`custom` when a TOML file gives none).
    #[serde(default = "custom_name")]
    pub name: String,
    /// Ports per switch, the same at every level.
    pub radix: u16,
    /// Compute nodes under each leaf; the rest of a leaf's ports go up.
    pub nodes_per_leaf: u16,
    /// Leaf switches in the tree.
    pub leaves: u32,
    /// Leaf switches per pod.
    pub leaves_per_pod: u32,
    /// Aggregation switches per pod; 0 for a one-switch tree (one leaf, no level above).
    pub aggs_per_pod: u32,
}

fn custom_name() -> String {
    "custom".to_string()
}

impl FatTreeParams {
    /// Table 3.1 `Full`: 3564 nodes, radix 36, 18 nodes per leaf, 504 switches.
    pub fn full() -> Self {
        Self::named("full", 36, 18, 198, 18, 18)
    }

    /// Table 3.1 `Tapered`: 4608 nodes, radix 48, 32 nodes per leaf, 2:1 taper, 288 switches.
    pub fn tapered() -> Self {
        Self::named("tapered", 48, 32, 144, 24, 16)
    }

    /// The peer benchmark's small tree (codes-peer.md A/B): radix 8, 128 nodes, 80 switches.
    pub fn radix8() -> Self {
        Self::named("radix8", 8, 4, 32, 4, 4)
    }

    fn named(
        name: &str,
        radix: u16,
        nodes_per_leaf: u16,
        leaves: u32,
        leaves_per_pod: u32,
        aggs_per_pod: u32,
    ) -> Self {
        FatTreeParams {
            name: name.to_string(),
            radix,
            nodes_per_leaf,
            leaves,
            leaves_per_pod,
            aggs_per_pod,
        }
    }

    /// The built-in trees by name.
    pub fn builtin(name: &str) -> Option<Self> {
        match name {
            "full" => Some(Self::full()),
            "tapered" => Some(Self::tapered()),
            "radix8" => Some(Self::radix8()),
            _ => None,
        }
    }

    /// The names [`FatTreeParams::builtin`] knows.
    pub const BUILTIN_NAMES: [&'static str; 3] = ["full", "tapered", "radix8"];
}

/// A built fat tree: the parameters plus the derived shape, with O(1) wiring and routing.
#[derive(Clone, Debug)]
pub struct Topology {
    params: FatTreeParams,
    leaf_up: u32,
    /// Parallel links between one leaf and one aggregation switch of its pod.
    links_per_pair: u32,
    agg_down: u32,
    agg_up: u32,
    pods: u32,
    /// Aggregation switches of one pod joined to the same core group (`m` above).
    aggs_per_core_per_pod: u32,
    cores: u32,
    /// First [`PortIndex`] of each switch; one more entry at the end.
    port_base: Vec<PortIndex>,
    /// The links a real fabric lacks and the routes around them ([`Topology::without_links`]);
    /// `None` for a complete tree.
    detours: Option<Box<detours::Detours>>,
    /// Each output port's link rate, Gb/s, where a real fabric's links run at rates of their
    /// own ([`Topology::with_link_rates`]); `None`: every link at the run's one rate.
    link_gbps: Option<Vec<f64>>,
    /// Nodes with no host cabled in the real fabric the tree stands for (free leaf ports),
    /// ascending ([`Topology::with_free_nodes`]).
    free_nodes: Vec<u32>,
    /// A subnet manager's forwarding tables, where they route the tree
    /// ([`Topology::with_forwarding`]); `None`: the simulator's own routing.
    forwarding: Option<Box<forwarding::Forwarding>>,
    /// A fabric that is no fat tree, as cabled, with its routing ([`Topology::graph`]); the
    /// tree's fields then describe it as one pod of leaves (the switches with hosts) and
    /// other switches.
    graph: Option<Box<graph::Graph>>,
}

impl Topology {
    /// Table 3.1's `Full` tree, built.
    pub fn full() -> Self {
        Self::new(FatTreeParams::full()).expect("built-in tree is valid")
    }

    /// Table 3.1's `Tapered` tree, built.
    pub fn tapered() -> Self {
        Self::new(FatTreeParams::tapered()).expect("built-in tree is valid")
    }

    /// A built-in name (`full`, `tapered`, `radix8`) or a TOML file of [`FatTreeParams`].
    pub fn resolve(name_or_file: &str) -> Result<Self, InputError> {
        match FatTreeParams::builtin(name_or_file) {
            Some(params) => Ok(Self::new(params).expect("built-in tree is valid")),
            None => Self::load(Path::new(name_or_file)),
        }
    }

    /// Reads a topology file; errors name the file and the line.
    pub fn load(file: &Path) -> Result<Self, InputError> {
        Self::parse(file, &InputError::read(file)?)
    }

    /// A topology file's text, read from `file` (named in the errors).
    pub fn parse(file: &Path, text: &str) -> Result<Self, InputError> {
        let params: FatTreeParams =
            toml::from_str(text).map_err(|e| InputError::from_toml(file, text, &e))?;
        Self::new(params).map_err(|e| InputError::whole_file(file, e.to_string()))
    }

    /// Builds the tree, or says which parameter makes it impossible.
    pub fn new(params: FatTreeParams) -> Result<Self, TopologyError> {
        let tree = || params.name.clone();
        let radix = u32::from(params.radix);
        let down = u32::from(params.nodes_per_leaf);
        let above_cap = |what, value: u64, cap: u64, unit| TopologyError::AboveCap {
            tree: tree(),
            reason: limits::above_cap(what, value, cap, unit),
        };
        if radix > limits::MAX_RADIX {
            return Err(above_cap(
                "radix",
                radix.into(),
                limits::MAX_RADIX.into(),
                "ports",
            ));
        }
        let nodes = u64::from(params.leaves) * u64::from(down);
        if nodes > u64::from(limits::MAX_NODES) {
            return Err(above_cap(
                "the tree's node count",
                nodes,
                limits::MAX_NODES.into(),
                "nodes",
            ));
        }
        let one_switch = params.aggs_per_pod == 0;
        if params.leaves == 0
            || params.leaves_per_pod == 0
            || (one_switch && (params.leaves != 1 || params.leaves_per_pod != 1))
        {
            return Err(TopologyError::ZeroCount { tree: tree() });
        }
        let most_nodes = if one_switch { radix } else { radix - 1 };
        if radix < 2 || down == 0 || down > most_nodes {
            return Err(TopologyError::NodesPerLeaf {
                tree: tree(),
                radix,
                nodes_per_leaf: down,
            });
        }
        if params.leaves % params.leaves_per_pod != 0 {
            return Err(TopologyError::LeavesPerPod {
                tree: tree(),
                leaves: params.leaves,
                leaves_per_pod: params.leaves_per_pod,
            });
        }
        // A one-switch tree's leaf has no up ports: every port it uses leads to a node.
        let leaf_up = if one_switch { 0 } else { radix - down };
        if !one_switch && leaf_up % params.aggs_per_pod != 0 {
            return Err(TopologyError::UnevenLeafUplinks {
                tree: tree(),
                leaf_up,
                aggs_per_pod: params.aggs_per_pod,
            });
        }
        let links_per_pair = leaf_up.checked_div(params.aggs_per_pod).unwrap_or(0);
        let agg_down = params.leaves_per_pod * links_per_pair;
        if agg_down > radix {
            return Err(TopologyError::AggregationDownPorts {
                tree: tree(),
                agg_down,
                radix,
            });
        }
        let pods = params.leaves / params.leaves_per_pod;
        let (agg_up, aggs_per_core_per_pod, cores) = if pods == 1 {
            (0, 1, 0)
        } else {
            let agg_up = radix - agg_down;
            if agg_up == 0 {
                return Err(TopologyError::NoCorePorts { tree: tree(), pods });
            }
            if pods > radix {
                return Err(TopologyError::TooManyPods {
                    tree: tree(),
                    pods,
                    radix,
                });
            }
            let m = (1..=params.aggs_per_pod.min(radix / pods))
                .rev()
                .find(|m| params.aggs_per_pod % m == 0)
                .unwrap_or(1);
            let groups = params.aggs_per_pod / m;
            (agg_up, m, groups * agg_up)
        };
        let mut topology = Topology {
            params,
            leaf_up,
            links_per_pair,
            agg_down,
            agg_up,
            pods,
            aggs_per_core_per_pod,
            cores,
            port_base: Vec::new(),
            detours: None,
            link_gbps: None,
            free_nodes: Vec::new(),
            forwarding: None,
            graph: None,
        };
        // Every count is bounded by the radix and node caps above, so the sum cannot
        // overflow; the port tables are only allocated once it is known to fit.
        let ports: u64 = (0..topology.num_switches())
            .map(|s| u64::from(topology.ports(SwitchId(s))))
            .sum();
        if ports > limits::MAX_SWITCH_PORTS {
            return Err(TopologyError::AboveCap {
                tree: topology.params.name.clone(),
                reason: limits::above_cap(
                    "the tree's switch port count",
                    ports,
                    limits::MAX_SWITCH_PORTS,
                    "ports",
                ),
            });
        }
        topology.number_ports();
        Ok(topology)
    }

    /// The parameters the tree was built from.
    pub fn params(&self) -> &FatTreeParams {
        &self.params
    }

    /// The tree's name ([`FatTreeParams::name`]).
    pub fn name(&self) -> &str {
        &self.params.name
    }

    /// Compute nodes in the tree.
    pub fn num_nodes(&self) -> u32 {
        self.params.leaves * u32::from(self.params.nodes_per_leaf)
    }

    /// Leaf switches.
    pub fn num_leaves(&self) -> u32 {
        self.params.leaves
    }

    /// Aggregation switches, all pods.
    pub fn num_aggs(&self) -> u32 {
        self.pods * self.params.aggs_per_pod
    }

    /// Core switches (0 for a tree of one pod, which has two levels).
    pub fn num_cores(&self) -> u32 {
        self.cores
    }

    /// Pods: groups of leaves and aggregation switches under the cores.
    pub fn num_pods(&self) -> u32 {
        self.pods
    }

    /// Switches at every level.
    pub fn num_switches(&self) -> u32 {
        self.num_leaves() + self.num_aggs() + self.num_cores()
    }

    /// Compute nodes under each leaf.
    pub fn nodes_per_leaf(&self) -> u32 {
        u32::from(self.params.nodes_per_leaf)
    }

    /// Ports per switch.
    pub fn radix(&self) -> u32 {
        u32::from(self.params.radix)
    }

    /// Number of switch output ports (directed links out of switches) in the tree.
    pub fn num_ports(&self) -> usize {
        *self.port_base.last().expect("built") as usize
    }

    /// The longest path in hops (thesis 3.3 footnote: the node-to-leaf link is not counted).
    pub fn diameter(&self) -> u32 {
        if let Some(d) = self.graph_diameter() {
            return d;
        }
        match (self.pods, self.params.leaves) {
            (_, 1) => 1,
            (1, _) => 3,
            _ => 5,
        }
    }

    /// Down-link to up-link bandwidth ratio at the leaves (2.0 for `tapered`'s 2:1 taper; 1.0
    /// for a one-switch tree, whose leaf has nothing above it to taper to).
    pub fn leaf_taper(&self) -> f64 {
        if self.leaf_up == 0 {
            return 1.0;
        }
        f64::from(self.nodes_per_leaf()) / f64::from(self.leaf_up)
    }

    /// The level of a switch, by its number (leaves first, then aggregation switches, then
    /// cores).
    pub fn level(&self, switch: SwitchId) -> Level {
        let s = switch.0;
        if s < self.num_leaves() {
            Level::Leaf
        } else if s < self.num_leaves() + self.num_aggs() {
            Level::Aggregation
        } else {
            Level::Core
        }
    }

    /// The switch numbers at a level, a contiguous range.
    pub fn switches_at(&self, level: Level) -> std::ops::Range<u32> {
        let (l, a) = (self.num_leaves(), self.num_aggs());
        match level {
            Level::Leaf => 0..l,
            Level::Aggregation => l..l + a,
            Level::Core => l + a..l + a + self.cores,
        }
    }

    /// The leaf a node hangs from, and the leaf port that leads down to it.
    pub fn leaf_of(&self, node: NodeId) -> SwitchId {
        SwitchId(node.0 / self.nodes_per_leaf())
    }

    /// The leaf output port that leads down to `node`.
    pub fn node_port(&self, node: NodeId) -> PortRef {
        PortRef {
            switch: self.leaf_of(node),
            port: (node.0 % self.nodes_per_leaf()) as u16,
        }
    }

    /// Pod of a leaf or an aggregation switch (`None` for a core).
    pub fn pod_of(&self, switch: SwitchId) -> Option<u32> {
        match self.level(switch) {
            Level::Leaf => Some(switch.0 / self.params.leaves_per_pod),
            Level::Aggregation => Some((switch.0 - self.num_leaves()) / self.params.aggs_per_pod),
            Level::Core => None,
        }
    }

    fn node_pod(&self, node: NodeId) -> u32 {
        self.leaf_of(node).0 / self.params.leaves_per_pod
    }

    /// Ports in use on a switch (down then up).
    pub fn ports(&self, switch: SwitchId) -> u16 {
        if let Some(ports) = self.graph_ports(switch) {
            return ports;
        }
        let n = match self.level(switch) {
            Level::Leaf => self.nodes_per_leaf() + self.leaf_up,
            Level::Aggregation => self.agg_down + self.agg_up,
            Level::Core => self.pods * self.aggs_per_core_per_pod,
        };
        n as u16
    }

    /// The up ports of a switch (empty for a core, or for aggregation switches of a one-pod tree).
    pub fn up_ports(&self, switch: SwitchId) -> std::ops::Range<u16> {
        if let Some(up) = self.graph_up_ports(switch) {
            return up;
        }
        match self.level(switch) {
            Level::Leaf => {
                self.params.nodes_per_leaf..self.params.nodes_per_leaf + self.leaf_up as u16
            }
            Level::Aggregation => self.agg_down as u16..(self.agg_down + self.agg_up) as u16,
            Level::Core => 0..0,
        }
    }

    /// The tree with each output port's link at its own rate (Gb/s, by [`PortIndex`]; a
    /// node's link into its leaf runs at the rate of the leaf's port down to it). Refuses a
    /// list of another length or a rate that is not a positive number.
    pub fn with_link_rates(mut self, gbps: Vec<f64>) -> Result<Topology, TopologyError> {
        if gbps.len() != self.num_ports() {
            return Err(TopologyError::LinkRates {
                tree: self.params.name.clone(),
                reason: format!("{} rates for {} ports", gbps.len(), self.num_ports()),
            });
        }
        if let Some(i) = gbps.iter().position(|r| !(r.is_finite() && *r > 0.0)) {
            return Err(TopologyError::LinkRates {
                tree: self.params.name.clone(),
                reason: format!("port {i} has rate {} Gb/s", gbps[i]),
            });
        }
        self.link_gbps = Some(gbps);
        Ok(self)
    }

    /// The tree with `free` nodes marked as having no host (a real fabric's free leaf
    /// ports): workloads place no rank there ([`Topology::compute_nodes`]). Node numbers
    /// beyond the tree are ignored.
    pub fn with_free_nodes(mut self, mut free: Vec<u32>) -> Topology {
        free.retain(|&n| n < self.num_nodes());
        free.sort_unstable();
        free.dedup();
        self.free_nodes = free;
        self
    }

    /// The nodes ranks may run on, ascending: every node, less a real fabric's free ones.
    pub fn compute_nodes(&self) -> Vec<NodeId> {
        (0..self.num_nodes())
            .filter(|n| self.free_nodes.binary_search(n).is_err())
            .map(NodeId)
            .collect()
    }

    /// Each output port's link rate, Gb/s, by [`PortIndex`], where the tree has rates per
    /// link ([`Topology::with_link_rates`]).
    pub fn link_rates(&self) -> Option<&[f64]> {
        self.link_gbps.as_deref()
    }

    /// The rate of the link out of port `index`, Gb/s: its own where the tree has rates per
    /// link, `default_gbps` (the run's one rate) otherwise.
    pub fn link_rate_or(&self, index: PortIndex, default_gbps: f64) -> f64 {
        self.link_rates()
            .map_or(default_gbps, |rates| rates[index as usize])
    }

    /// The nodes with no host cabled ([`Topology::with_free_nodes`]), ascending.
    pub fn free_nodes(&self) -> &[u32] {
        &self.free_nodes
    }

    /// Whether an output port leads up, towards the cores.
    pub fn is_up(&self, port: PortRef) -> bool {
        self.up_ports(port.switch).contains(&port.port)
    }

    /// The dense index of an output port, for arrays over every port.
    pub fn port_index(&self, port: PortRef) -> PortIndex {
        self.port_base[port.switch.0 as usize] + PortIndex::from(port.port)
    }

    /// The output port a dense index stands for (the inverse of [`Topology::port_index`]).
    pub fn port_ref(&self, index: PortIndex) -> PortRef {
        let s = self.port_base.partition_point(|&base| base <= index) - 1;
        PortRef {
            switch: SwitchId(s as u32),
            port: (index - self.port_base[s]) as u16,
        }
    }

    /// First port index of a switch (its ports are `base..base + ports`).
    pub fn port_base(&self, switch: SwitchId) -> PortIndex {
        self.port_base[switch.0 as usize]
    }

    /// Where an output port's link arrives.
    pub fn peer(&self, port: PortRef) -> Peer {
        if let Some(peer) = self.graph_peer(port) {
            return peer;
        }
        let s = port.switch.0;
        let p = u32::from(port.port);
        let lpp = self.params.leaves_per_pod;
        let app = self.params.aggs_per_pod;
        let m = self.aggs_per_core_per_pod;
        match self.level(port.switch) {
            Level::Leaf => {
                if p < self.nodes_per_leaf() {
                    Peer::Node(NodeId(s * self.nodes_per_leaf() + p))
                } else {
                    let u = p - self.nodes_per_leaf();
                    let (agg, k) = (u / self.links_per_pair, u % self.links_per_pair);
                    let pod = s / lpp;
                    let agg_switch = self.num_leaves() + pod * app + agg;
                    Peer::Switch {
                        switch: SwitchId(agg_switch),
                        port: ((s % lpp) * self.links_per_pair + k) as u16,
                    }
                }
            }
            Level::Aggregation => {
                let local = s - self.num_leaves();
                let (pod, agg) = (local / app, local % app);
                if p < self.agg_down {
                    let (leaf, k) = (p / self.links_per_pair, p % self.links_per_pair);
                    let leaf_switch = pod * lpp + leaf;
                    Peer::Switch {
                        switch: SwitchId(leaf_switch),
                        port: (self.nodes_per_leaf() + agg * self.links_per_pair + k) as u16,
                    }
                } else {
                    let c = p - self.agg_down;
                    let group = agg / m;
                    let core = self.num_leaves() + self.num_aggs() + group * self.agg_up + c;
                    Peer::Switch {
                        switch: SwitchId(core),
                        port: (pod * m + agg % m) as u16,
                    }
                }
            }
            Level::Core => {
                let local = s - self.num_leaves() - self.num_aggs();
                let (group, c) = (local / self.agg_up, local % self.agg_up);
                let (pod, offset) = (p / m, p % m);
                let agg = self.num_leaves() + pod * app + group * m + offset;
                Peer::Switch {
                    switch: SwitchId(agg),
                    port: (self.agg_down + c) as u16,
                }
            }
        }
    }

    /// The deterministic down port towards `dst`, or `None` when the packet must go up (then
    /// any port of [`Self::up_ports_towards`] leads there: every up port of a complete tree).
    /// On a graph, the one port its routing gives, up or down (`None` without one).
    pub fn down_port(&self, switch: SwitchId, dst: NodeId) -> Option<u16> {
        if let Some(port) = self.graph_port(switch, dst) {
            return port;
        }
        if let Some(port) = self.forwarded(switch, dst) {
            return (!self.is_up(PortRef { switch, port })).then_some(port);
        }
        let chosen = self.complete_down_port(switch, dst)?;
        match self.detours {
            None => Some(chosen),
            Some(_) => self.detour_down(switch, dst, chosen),
        }
    }

    /// [`Topology::down_port`] of the complete tree.
    pub(crate) fn complete_down_port(&self, switch: SwitchId, dst: NodeId) -> Option<u16> {
        if let Some(port) = self.graph_port(switch, dst) {
            return port;
        }
        let s = switch.0;
        match self.level(switch) {
            Level::Leaf => {
                (self.leaf_of(dst) == switch).then(|| (dst.0 % self.nodes_per_leaf()) as u16)
            }
            Level::Aggregation => {
                let pod = (s - self.num_leaves()) / self.params.aggs_per_pod;
                (self.node_pod(dst) == pod).then(|| {
                    let leaf = self.leaf_of(dst).0 % self.params.leaves_per_pod;
                    (leaf * self.links_per_pair + dst.0 % self.links_per_pair) as u16
                })
            }
            Level::Core => {
                let m = self.aggs_per_core_per_pod;
                Some((self.node_pod(dst) * m + dst.0 % m) as u16)
            }
        }
    }

    /// Path length in hops between two nodes, counting the last switch-to-node link but not
    /// the first node-to-switch link (thesis 3.3 footnote).
    pub fn hops(&self, src: NodeId, dst: NodeId) -> u32 {
        if let Some(hops) = self.graph_hops(src, dst) {
            return hops;
        }
        if self.leaf_of(src) == self.leaf_of(dst) {
            1
        } else if self.node_pod(src) == self.node_pod(dst) {
            3
        } else {
            5
        }
    }

    /// Every output port a packet from `src` to `dst` may cross under adaptive routing, in
    /// path order; the set `D` that the 1-bit receiver (thesis algorithm 7 line 2, 5.2)
    /// restricts its updates to. Appended to `out`.
    pub fn candidate_ports(&self, src: NodeId, dst: NodeId, out: &mut Vec<PortIndex>) {
        if self.detours.is_some() || self.forwarding.is_some() || self.graph.is_some() {
            return self.routed_ports(src, dst, out);
        }
        let src_leaf = self.leaf_of(src);
        let dst_leaf = self.leaf_of(dst);
        let last = self.port_index(self.node_port(dst));
        if src_leaf == dst_leaf {
            out.push(last);
            return;
        }
        let up = |sw: SwitchId, out: &mut Vec<PortIndex>| {
            let base = self.port_base(sw);
            out.extend(self.up_ports(sw).map(|p| base + PortIndex::from(p)));
        };
        up(src_leaf, out);
        let app = self.params.aggs_per_pod;
        let src_pod = self.node_pod(src);
        let dst_pod = self.node_pod(dst);
        let aggs_of = |pod: u32| (0..app).map(move |a| SwitchId(self.num_leaves() + pod * app + a));
        if src_pod != dst_pod {
            for agg in aggs_of(src_pod) {
                up(agg, out);
            }
            for core in self.switches_at(Level::Core) {
                let core = SwitchId(core);
                let port = self.down_port(core, dst).expect("cores always route down");
                out.push(self.port_index(PortRef { switch: core, port }));
            }
        }
        for agg in aggs_of(dst_pod) {
            // Only the aggregation switches that a core sends this destination to (or all of
            // them inside one pod) carry it down.
            if src_pod != dst_pod {
                let a = (agg.0 - self.num_leaves()) % app;
                if a % self.aggs_per_core_per_pod != dst.0 % self.aggs_per_core_per_pod {
                    continue;
                }
            }
            let port = self
                .down_port(agg, dst)
                .expect("aggregation switch of the destination pod");
            out.push(self.port_index(PortRef { switch: agg, port }));
        }
        out.push(last);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_3_1_sizes() {
        let full = Topology::full();
        assert_eq!((full.num_nodes(), full.num_switches()), (3564, 504));
        assert_eq!(
            (full.num_leaves(), full.num_aggs(), full.num_cores()),
            (198, 198, 108)
        );
        assert_eq!(full.leaf_taper(), 1.0);
        let tapered = Topology::tapered();
        assert_eq!((tapered.num_nodes(), tapered.num_switches()), (4608, 288));
        assert_eq!(tapered.leaf_taper(), 2.0);
        let small = Topology::new(FatTreeParams::radix8()).unwrap();
        assert_eq!((small.num_nodes(), small.num_switches()), (128, 80));
    }

    /// Every link is wired both ways: the peer of the peer is the port itself.
    #[test]
    fn wiring_is_symmetric_and_ports_are_used_once() {
        for params in [
            FatTreeParams::full(),
            FatTreeParams::tapered(),
            FatTreeParams::radix8(),
        ] {
            let t = Topology::new(params).unwrap();
            let mut seen_nodes = vec![false; t.num_nodes() as usize];
            for index in 0..t.num_ports() as PortIndex {
                let port = t.port_ref(index);
                assert_eq!(t.port_index(port), index);
                match t.peer(port) {
                    Peer::Node(n) => {
                        assert!(!seen_nodes[n.0 as usize]);
                        seen_nodes[n.0 as usize] = true;
                        assert_eq!(t.node_port(n), port);
                    }
                    Peer::Switch { switch, port: back } => {
                        assert!(back < t.ports(switch), "{port:?} -> {switch:?}:{back}");
                        assert_eq!(
                            t.peer(PortRef { switch, port: back }),
                            Peer::Switch {
                                switch: port.switch,
                                port: port.port
                            }
                        );
                        assert_ne!(t.is_up(port), t.is_up(PortRef { switch, port: back }));
                    }
                }
            }
            assert!(seen_nodes.iter().all(|&s| s));
        }
    }

    /// Following the routing from any source reaches the destination in `hops` hops, through
    /// ports that `candidate_ports` lists, whatever up port is chosen.
    #[test]
    fn routing_reaches_every_destination() {
        let t = Topology::new(FatTreeParams::radix8()).unwrap();
        for src in 0..t.num_nodes() {
            for dst in 0..t.num_nodes() {
                for pick in 0..4 {
                    let hops = super::detours::tests::walk(&t, src, dst, pick);
                    assert_eq!(hops, t.hops(NodeId(src), NodeId(dst)));
                }
            }
        }
    }

    #[test]
    fn candidate_set_size_matches_thesis_example() {
        // Thesis 5.3: a 5-hop path has 1 + (leaf up) + (agg ups) + ... candidate links.
        let t = Topology::tapered();
        let mut c = Vec::new();
        t.candidate_ports(NodeId(0), NodeId(4607), &mut c);
        let leaf_up = 16;
        let agg_ups = 16 * 24;
        // 48 cores each with one port towards the destination pod; 2 of its 16 aggregation
        // switches are the ones cores send `dst` to; 1 leaf port to the node.
        assert_eq!(c.len(), leaf_up + agg_ups + 48 + 2 + 1);
    }

    /// One switch with every port a node port: all traffic turns at the leaf.
    #[test]
    fn a_one_switch_tree_routes_every_pair_through_its_switch() {
        let t = Topology::new(FatTreeParams::named("lab", 8, 8, 1, 1, 0)).unwrap();
        assert_eq!((t.num_nodes(), t.num_switches(), t.num_ports()), (8, 1, 8));
        assert_eq!((t.diameter(), t.leaf_taper()), (1, 1.0));
        assert!(t.up_ports(SwitchId(0)).is_empty());
        let mut c = Vec::new();
        t.candidate_ports(NodeId(0), NodeId(7), &mut c);
        assert_eq!(c, [7]);
        assert_eq!(t.down_port(SwitchId(0), NodeId(5)), Some(5));
        // A tree of several leaves needs a level above them.
        let e = Topology::new(FatTreeParams::named("x", 8, 8, 2, 2, 0)).unwrap_err();
        assert!(matches!(e, TopologyError::ZeroCount { .. }), "{e}");
        let e = Topology::new(FatTreeParams::named("x", 8, 9, 1, 1, 0)).unwrap_err();
        assert!(matches!(e, TopologyError::NodesPerLeaf { .. }), "{e}");
    }

    /// A real fabric's free leaf ports are nodes of the tree but not where ranks run.
    #[test]
    fn free_nodes_are_left_out_of_the_compute_nodes() {
        let t = Topology::new(FatTreeParams::radix8()).unwrap();
        assert_eq!(t.compute_nodes().len(), 128);
        let t = t.with_free_nodes(vec![5, 0, 5, 500]);
        let nodes = t.compute_nodes();
        assert_eq!(nodes.len(), 126);
        assert_eq!(&nodes[..2], &[NodeId(1), NodeId(2)]);
        assert!(!nodes.contains(&NodeId(5)));
        assert_eq!(t.num_nodes(), 128);
    }

    #[test]
    fn bad_parameters_are_explained() {
        let mut p = FatTreeParams::radix8();
        p.leaves = 30;
        let error = Topology::new(p).unwrap_err().to_string();
        assert!(
            error.contains("leaves_per_pod") && error.contains("'radix8'"),
            "{error}"
        );
        let mut p = FatTreeParams::radix8();
        p.nodes_per_leaf = 8;
        assert!(matches!(
            Topology::new(p),
            Err(TopologyError::NodesPerLeaf {
                radix: 8,
                nodes_per_leaf: 8,
                ..
            })
        ));
    }
}
