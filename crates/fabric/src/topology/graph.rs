//! A fabric simulated as it is cabled, when it is no fat tree (a ring, a mesh, switches of
//! several radixes, a director's internal stages): any switches, any cables, hosts on any
//! switch, routed deterministically as a subnet manager routes it ([`Engine`], or its own
//! tables through [`Topology::with_forwarding`]).
//!
//! The graph answers the same questions the simulator and the analyses ask a fat tree
//! (ports of a switch, the peer of a port, the port towards a destination, path lengths) from
//! explicit tables, so that the trees' own code and hot path stay as they are. Its numbering
//! follows the trees' conventions where they carry meaning: switches with hosts come first
//! and are the leaves, every leaf has the same number of node slots (the most hosts any
//! switch has; the slots without a host are free nodes, as a tree's free leaf ports are), and
//! each switch's ports are its node slots, then its down links, then its up links (up: towards
//! the roots of opensm's up/down ranking, [`engines`]). A graph has one pod and no cores.

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;

use super::engines::{Links, UNREACHED};
use super::{FatTreeParams, NodeId, Peer, PortIndex, PortRef, SwitchId, Topology, TopologyError};
use crate::limits;

/// A deterministic routing engine of opensm's.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Engine {
    /// `minhop`: a shortest path to every destination.
    MinHop,
    /// `updn`: up then down from roots found as opensm finds them.
    UpDown,
}

impl FromStr for Engine {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "minhop" => Ok(Engine::MinHop),
            "updn" => Ok(Engine::UpDown),
            _ => Err(format!("'{s}' is no routing engine: minhop or updn")),
        }
    }
}

/// How a graph is routed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GraphRouting {
    /// opensm's min-hop engine, as asked.
    MinHop,
    /// opensm's up/down engine from these roots.
    UpDown {
        /// The switches of rank 0.
        roots: Vec<SwitchId>,
    },
    /// Up/down was asked for, but no switch qualifies as a root; opensm then disables
    /// up/down and routes min-hop, and so does the simulator.
    MinHopWithoutRoots,
    /// A subnet manager's own tables ([`Topology::with_forwarding`]).
    Tables,
}

impl fmt::Display for GraphRouting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GraphRouting::MinHop => f.write_str("routed minhop"),
            GraphRouting::UpDown { roots } => write!(
                f,
                "routed updn from {} root{}",
                roots.len(),
                if roots.len() == 1 { "" } else { "s" }
            ),
            GraphRouting::MinHopWithoutRoots => f.write_str(
                "routed minhop: updn found no root (no switch has 90 % of the hosts at one \
                 distance), and opensm then routes minhop",
            ),
            GraphRouting::Tables => f.write_str("routed by the subnet manager's tables"),
        }
    }
}

/// A switch of a [`GraphSpec`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphSwitch {
    /// Its name, for messages.
    pub name: String,
    /// Its GUID (any distinct number for a fabric without them): up/down orders switches of
    /// equal rank by it, as opensm does.
    pub id: u64,
}

/// A cabled fabric: switches, the switch port each host is cabled to, and the cables
/// between switch ports (ports numbered as the fabric numbers them, from 1).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GraphSpec {
    /// A name for reports.
    pub name: String,
    /// The switches; the other fields index this list.
    pub switches: Vec<GraphSwitch>,
    /// Each host's end: (switch, port).
    pub hosts: Vec<(usize, u16)>,
    /// Each cable between two switches: both ends, (switch, port).
    pub links: Vec<[(usize, u16); 2]>,
}

/// Where each part of a graph topology is in its [`GraphSpec`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphLayout {
    /// The spec's switch of each [`SwitchId`].
    pub switches: Vec<usize>,
    /// The spec's host on each node ([`GraphSpec::hosts`] index); `None` on a free slot.
    pub node_hosts: Vec<Option<usize>>,
    /// The fabric port of each switch output port, by [`PortIndex`] (0 on a free slot).
    pub fabric_ports: Vec<u16>,
}

/// A subnet manager's tables that do not route a graph; each names the switch (by its
/// description) and the destination node.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GraphTablesError {
    /// An entry out of a port the switch lacks.
    #[error("switch '{switch}' sends node {node} out of port {port}, which has no link")]
    NoLink {
        /// The switch.
        switch: String,
        /// The destination.
        node: u32,
        /// The port.
        port: u16,
    },
    /// A route meets a switch without an entry for its destination.
    #[error("switch '{switch}' has no entry for node {node} on the way from '{from}'")]
    NoEntry {
        /// The switch without the entry.
        switch: String,
        /// The destination.
        node: u32,
        /// The leaf the route started at.
        from: String,
    },
    /// A route goes down to another node.
    #[error("switch '{switch}' sends node {node} down to node {reached}")]
    OtherNode {
        /// The switch.
        switch: String,
        /// The destination.
        node: u32,
        /// The node it reaches instead.
        reached: u32,
    },
    /// A route never reaches a node.
    #[error("from switch '{from}' the route to node {node} loops")]
    Loop {
        /// The leaf the route started at.
        from: String,
        /// The destination.
        node: u32,
    },
}

/// The explicit tables of a graph topology.
#[derive(Clone, Debug)]
pub(super) struct Graph {
    names: Vec<String>,
    ports: Vec<u16>,
    /// Where each output port leads, by [`PortIndex`].
    peers: Vec<Peer>,
    /// Each switch's first up port; its up ports run to its last port.
    up_start: Vec<u16>,
    /// At `switch * nodes + dst`: the output port towards `dst`, [`super::NO_ENTRY`] where
    /// none (a free slot the subnet manager's tables do not address).
    table: Vec<u16>,
    /// At `leaf * nodes + dst`: hops from the leaf to `dst` along the table (0 without a
    /// route).
    leaf_hops: Vec<u16>,
    diameter: u32,
    routing: GraphRouting,
}

impl Topology {
    /// The cabled fabric `spec` as a topology, routed by `engine`, and where its parts are in
    /// the spec. Refuses a fabric without hosts, a port with two cables, a cable from a
    /// switch to itself, a fabric in pieces, and sizes above [`crate::limits`], naming the
    /// switch and port.
    pub fn graph(
        spec: &GraphSpec,
        engine: Engine,
    ) -> Result<(Topology, GraphLayout), TopologyError> {
        let refuse = |reason: String| TopologyError::Graph {
            tree: spec.name.clone(),
            reason,
        };
        let named = |s: usize| spec.switches[s].name.as_str();
        let count = spec.switches.len();
        let ends = spec.hosts.iter().chain(spec.links.iter().flatten());
        let mut used = HashSet::new();
        for &(s, port) in ends {
            if s >= count {
                return Err(refuse(format!("switch {s} of {count} switches")));
            }
            if !used.insert((s, port)) {
                return Err(refuse(format!("'{}' port {port} has two cables", named(s))));
            }
        }
        if let Some([a, b]) = spec.links.iter().find(|[a, b]| a.0 == b.0) {
            return Err(refuse(format!(
                "'{}' has a cable from its port {} to its own port {}",
                named(a.0),
                a.1,
                b.1
            )));
        }
        // Hosts per switch, by port; switches with hosts first.
        let mut hosts_on: Vec<Vec<(u16, usize)>> = vec![Vec::new(); count];
        for (h, &(s, port)) in spec.hosts.iter().enumerate() {
            hosts_on[s].push((port, h));
        }
        hosts_on.iter_mut().for_each(|h| h.sort_unstable());
        let order: Vec<usize> = (0..count)
            .filter(|&s| !hosts_on[s].is_empty())
            .chain((0..count).filter(|&s| hosts_on[s].is_empty()))
            .collect();
        let leaves = hosts_on.iter().filter(|h| !h.is_empty()).count() as u32;
        if leaves == 0 {
            return Err(refuse("no switch has a host cabled to it".into()));
        }
        let mut new_of = vec![0u32; count];
        for (new, &s) in order.iter().enumerate() {
            new_of[s] = new as u32;
        }
        let slots = hosts_on.iter().map(Vec::len).max().unwrap_or(0) as u32;
        let nodes = u64::from(leaves) * u64::from(slots);
        if nodes > u64::from(limits::MAX_NODES) {
            return Err(refuse(limits::above_cap(
                "the fabric's node count",
                nodes,
                limits::MAX_NODES,
                "nodes",
            )));
        }
        let nodes = nodes as u32;
        if count as u64 > u64::from(limits::MAX_GRAPH_SWITCHES) {
            return Err(refuse(limits::above_cap(
                "the fabric's switch count",
                count,
                limits::MAX_GRAPH_SWITCHES,
                "switches",
            )));
        }
        let entries = count as u64 * u64::from(nodes);
        if entries > limits::MAX_ROUTE_ENTRIES {
            return Err(refuse(limits::above_cap(
                "the forwarding tables' size (switches x nodes)",
                entries,
                limits::MAX_ROUTE_ENTRIES,
                "entries",
            )));
        }
        // Each switch's cables to other switches, by its port: (port, far switch, cable).
        let mut cables: Vec<Vec<(u16, u32, usize)>> = vec![Vec::new(); count];
        for (c, [a, b]) in spec.links.iter().enumerate() {
            cables[new_of[a.0] as usize].push((a.1, new_of[b.0], c));
            cables[new_of[b.0] as usize].push((b.1, new_of[a.0], c));
        }
        cables.iter_mut().for_each(|c| c.sort_unstable());
        let links = Links {
            far: cables
                .iter()
                .map(|c| c.iter().map(|&(_, far, _)| far).collect())
                .collect(),
            hosts: order.iter().map(|&s| hosts_on[s].len() as u32).collect(),
            ids: order.iter().map(|&s| spec.switches[s].id).collect(),
        };
        let dist = links.distances();
        if let Some(i) = dist.iter().position(|&d| d == UNREACHED) {
            return Err(refuse(format!(
                "'{}' cannot reach '{}': the fabric is in pieces",
                named(order[i / count]),
                named(order[i % count])
            )));
        }
        let roots = links.roots(&dist);
        let rank = links.ranks(&roots, &dist);
        let updn = engine == Engine::UpDown && !roots.is_empty();
        // Up and down are the up/down engine's. A graph routed otherwise has neither: every
        // cable counts as up both ways (opensm's rule between roots), so that the analyses'
        // up*/down* rule allows every turn its routes may take.
        let label = if updn { rank.clone() } else { vec![0; count] };
        // Ports: node slots, down links, up links; each list by fabric port.
        let mut ports = Vec::with_capacity(count);
        let mut up_start = Vec::with_capacity(count);
        let mut fabric_ports = Vec::new();
        // Per switch, the local port of each of its cables (as listed in `cables`).
        let mut local: Vec<Vec<u16>> = Vec::with_capacity(count);
        for (s, list) in cables.iter().enumerate() {
            let s = s as u32;
            let first = if s < leaves { slots } else { 0 };
            let hosts = &hosts_on[order[s as usize]];
            fabric_ports.extend((0..first as usize).map(|i| hosts.get(i).map_or(0, |h| h.0)));
            let up = |k: &usize| links.goes_up(&label, s, list[*k].1);
            let (ups, downs): (Vec<usize>, Vec<usize>) = (0..list.len()).partition(up);
            let mut ports_of = vec![0u16; list.len()];
            for (i, &k) in downs.iter().chain(&ups).enumerate() {
                ports_of[k] = (first as usize + i) as u16;
                fabric_ports.push(list[k].0);
            }
            let total = first as usize + list.len();
            if total > limits::MAX_RADIX as usize {
                return Err(refuse(limits::above_cap(
                    &format!("'{}' port count", named(order[s as usize])),
                    total,
                    limits::MAX_RADIX,
                    "ports",
                )));
            }
            ports.push(total as u16);
            up_start.push((first as usize + downs.len()) as u16);
            local.push(ports_of);
        }
        let total_ports: u64 = ports.iter().map(|&p| u64::from(p)).sum();
        if total_ports > limits::MAX_SWITCH_PORTS {
            return Err(refuse(limits::above_cap(
                "the fabric's switch port count",
                total_ports,
                limits::MAX_SWITCH_PORTS,
                "ports",
            )));
        }
        // The local port at each end of each cable.
        let mut cable_ends = vec![[(0u32, 0u16); 2]; spec.links.len()];
        for (s, list) in cables.iter().enumerate() {
            for (k, &(_, _, c)) in list.iter().enumerate() {
                let side = usize::from(spec.links[c][0].0 != order[s]);
                cable_ends[c][side] = (s as u32, local[s][k]);
            }
        }
        let mut peers = Vec::with_capacity(total_ports as usize);
        for (s, list) in cables.iter().enumerate() {
            let first = if (s as u32) < leaves { slots } else { 0 };
            peers.extend((0..first).map(|i| Peer::Node(NodeId(s as u32 * slots + i))));
            let mut by_port = vec![Peer::Node(NodeId(0)); list.len()];
            for (k, &(_, _, c)) in list.iter().enumerate() {
                let [a, b] = cable_ends[c];
                let (switch, port) = if a == (s as u32, local[s][k]) { b } else { a };
                by_port[usize::from(local[s][k]) - first as usize] = Peer::Switch {
                    switch: SwitchId(switch),
                    port,
                };
            }
            peers.extend(by_port);
        }
        let (routing, candidates) = match (engine, updn) {
            (_, true) => (
                GraphRouting::UpDown {
                    roots: roots.iter().map(|&r| SwitchId(r)).collect(),
                },
                Some(&rank),
            ),
            (Engine::MinHop, false) => (GraphRouting::MinHop, None),
            (Engine::UpDown, false) => (GraphRouting::MinHopWithoutRoots, None),
        };
        // Balance as opensm does (`osm_switch_recommend_path`): of the ports that lead on,
        // the one with the fewest routes to hosts so far, then the lowest port number.
        let mut table = vec![super::NO_ENTRY; count * nodes as usize];
        let mut routes_through: Vec<Vec<u32>> = local.iter().map(|l| vec![0; l.len()]).collect();
        for dst_switch in 0..leaves {
            let leads_on = match candidates {
                None => links.minhop(&dist, dst_switch),
                Some(rank) => links.updn(rank, dst_switch).map_err(|s| {
                    refuse(format!(
                        "'{}' has no up/down path to '{}'",
                        named(order[s as usize]),
                        named(order[dst_switch as usize])
                    ))
                })?,
            };
            for slot in 0..slots {
                let dst = dst_switch * slots + slot;
                let host = (slot as usize) < hosts_on[order[dst_switch as usize]].len();
                for s in 0..count {
                    let port = if s as u32 == dst_switch {
                        slot as u16
                    } else {
                        let k = *leads_on[s]
                            .iter()
                            .min_by_key(|&&k| (routes_through[s][k], cables[s][k].0))
                            .expect("a connected graph leads on from every switch");
                        routes_through[s][k] += u32::from(host);
                        local[s][k]
                    };
                    table[s * nodes as usize + dst as usize] = port;
                }
            }
        }
        let node_hosts = (0..leaves)
            .flat_map(|l| {
                let hosts = &hosts_on[order[l as usize]];
                (0..slots as usize).map(move |i| hosts.get(i).map(|h| h.1))
            })
            .collect::<Vec<_>>();
        let free: Vec<u32> = (0..nodes)
            .filter(|&n| node_hosts[n as usize].is_none())
            .collect();
        let params = FatTreeParams {
            name: spec.name.clone(),
            radix: ports.iter().copied().max().unwrap_or(0),
            nodes_per_leaf: slots as u16,
            leaves,
            leaves_per_pod: leaves,
            aggs_per_pod: count as u32 - leaves,
        };
        let graph = Graph {
            names: order
                .iter()
                .map(|&s| spec.switches[s].name.clone())
                .collect(),
            ports,
            peers,
            up_start,
            table,
            leaf_hops: Vec::new(),
            diameter: 0,
            routing,
        };
        let mut topology = Topology {
            params,
            leaf_up: 0,
            links_per_pair: 0,
            agg_down: 0,
            agg_up: 0,
            pods: 1,
            aggs_per_core_per_pod: 1,
            cores: 0,
            port_base: Vec::new(),
            detours: None,
            link_gbps: None,
            free_nodes: Vec::new(),
            forwarding: None,
            graph: Some(Box::new(graph)),
        };
        topology.number_ports();
        topology
            .measure_routes()
            .map_err(|e| refuse(e.to_string()))?;
        let layout = GraphLayout {
            switches: order,
            node_hosts,
            fabric_ports,
        };
        Ok((topology.with_free_nodes(free), layout))
    }

    /// Whether the topology is a cabled graph ([`Topology::graph`]) rather than a fat tree.
    pub fn is_graph(&self) -> bool {
        self.graph.is_some()
    }

    /// How a graph topology is routed; `None` for a fat tree.
    pub fn graph_routing(&self) -> Option<&GraphRouting> {
        self.graph.as_ref().map(|g| &g.routing)
    }

    pub(super) fn graph_ports(&self, switch: SwitchId) -> Option<u16> {
        Some(self.graph.as_ref()?.ports[switch.0 as usize])
    }

    pub(super) fn graph_up_ports(&self, switch: SwitchId) -> Option<std::ops::Range<u16>> {
        let g = self.graph.as_ref()?;
        Some(g.up_start[switch.0 as usize]..g.ports[switch.0 as usize])
    }

    pub(super) fn graph_peer(&self, port: PortRef) -> Option<Peer> {
        Some(self.graph.as_ref()?.peers[self.port_index(port) as usize])
    }

    /// A graph's port towards `dst`: `Some(None)` where its table has none.
    pub(super) fn graph_port(&self, switch: SwitchId, dst: NodeId) -> Option<Option<u16>> {
        let g = self.graph.as_ref()?;
        let port = g.table[(switch.0 * self.num_nodes() + dst.0) as usize];
        Some((port != super::NO_ENTRY).then_some(port))
    }

    pub(super) fn graph_hops(&self, src: NodeId, dst: NodeId) -> Option<u32> {
        let g = self.graph.as_ref()?;
        Some(u32::from(
            g.leaf_hops[(self.leaf_of(src).0 * self.num_nodes() + dst.0) as usize],
        ))
    }

    pub(super) fn graph_diameter(&self) -> Option<u32> {
        Some(self.graph.as_ref()?.diameter)
    }

    /// A graph routed by a subnet manager's `ports` (at `switch * num_nodes + dst`), in place
    /// of its engine's: refuses a port the switch lacks, and any route that loops, reaches
    /// another node, or meets a switch without an entry, naming switch and destination.
    pub(super) fn graph_with_tables(
        mut self,
        ports: Vec<u16>,
    ) -> Result<Topology, GraphTablesError> {
        for (i, &port) in ports.iter().enumerate() {
            let switch = SwitchId((i / self.num_nodes() as usize) as u32);
            if port != super::NO_ENTRY && port >= self.ports(switch) {
                return Err(GraphTablesError::NoLink {
                    switch: self.switch_name(switch).to_owned(),
                    node: (i % self.num_nodes() as usize) as u32,
                    port,
                });
            }
        }
        let leaves = self.num_leaves();
        let slots = self.nodes_per_leaf() as u16;
        let g = self.graph.as_mut().expect("a graph");
        g.table = ports;
        g.routing = GraphRouting::Tables;
        // Tables may route any way: every cable counts as up, as under min-hop.
        for (s, up) in g.up_start.iter_mut().enumerate() {
            *up = if (s as u32) < leaves { slots } else { 0 };
        }
        self.measure_routes()?;
        Ok(self)
    }

    fn switch_name(&self, switch: SwitchId) -> &str {
        self.graph
            .as_ref()
            .map_or("?", |g| g.names[switch.0 as usize].as_str())
    }

    /// Follows the table from every leaf to every destination it has an entry for: records
    /// the hops and the diameter, or says where a route goes wrong.
    fn measure_routes(&mut self) -> Result<(), GraphTablesError> {
        let nodes = self.num_nodes();
        let mut hops = vec![0u16; (self.num_leaves() * nodes) as usize];
        let mut diameter = 0;
        for leaf in 0..self.num_leaves() {
            for dst in (0..nodes).map(NodeId) {
                if self.graph_port(SwitchId(leaf), dst) == Some(None) {
                    continue;
                }
                let length = self.follow(SwitchId(leaf), dst)?;
                hops[(leaf * nodes + dst.0) as usize] = length;
                diameter = diameter.max(u32::from(length));
            }
        }
        let g = self.graph.as_mut().expect("a graph");
        g.leaf_hops = hops;
        g.diameter = diameter.max(1);
        Ok(())
    }

    /// Hops from `switch` to `dst` along the table.
    fn follow(&self, from: SwitchId, dst: NodeId) -> Result<u16, GraphTablesError> {
        let mut switch = from;
        for hop in 1..=self.num_switches() + 1 {
            let Some(Some(port)) = self.graph_port(switch, dst) else {
                return Err(GraphTablesError::NoEntry {
                    switch: self.switch_name(switch).to_owned(),
                    node: dst.0,
                    from: self.switch_name(from).to_owned(),
                });
            };
            match self.peer(PortRef { switch, port }) {
                Peer::Node(node) if node == dst => return Ok(hop as u16),
                Peer::Node(node) => {
                    return Err(GraphTablesError::OtherNode {
                        switch: self.switch_name(switch).to_owned(),
                        node: dst.0,
                        reached: node.0,
                    })
                }
                Peer::Switch { switch: next, .. } => switch = next,
            }
        }
        Err(GraphTablesError::Loop {
            from: self.switch_name(from).to_owned(),
            node: dst.0,
        })
    }

    /// The dense port numbering ([`Topology::port_base`]) from each switch's port count.
    pub(super) fn number_ports(&mut self) {
        let mut base: PortIndex = 0;
        self.port_base.clear();
        for s in 0..self.num_switches() {
            self.port_base.push(base);
            base += PortIndex::from(self.ports(SwitchId(s)));
        }
        self.port_base.push(base);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cabling::{Cable, CableEnd, Cabling, Device};
    use crate::topology::Level;
    use proptest::prelude::*;

    /// A spec from switch-to-switch cables (ports numbered in cable order) and hosts per
    /// switch; switch `s` has GUID `s + 1`.
    pub(crate) fn spec(name: &str, hosts: &[u32], cables: &[(usize, usize)]) -> GraphSpec {
        let mut next_port = vec![1u16; hosts.len()];
        let mut port = |s: usize| {
            next_port[s] += 1;
            next_port[s] - 1
        };
        let mut spec = GraphSpec {
            name: name.into(),
            switches: (0..hosts.len())
                .map(|s| GraphSwitch {
                    name: format!("sw{s}"),
                    id: s as u64 + 1,
                })
                .collect(),
            ..GraphSpec::default()
        };
        for (s, &h) in hosts.iter().enumerate() {
            for _ in 0..h {
                spec.hosts.push((s, port(s)));
            }
        }
        for &(a, b) in cables {
            spec.links.push([(a, port(a)), (b, port(b))]);
        }
        spec
    }

    /// A ring of `n` switches with `hosts` hosts each.
    pub(crate) fn ring(n: usize, hosts: u32) -> GraphSpec {
        let cables: Vec<(usize, usize)> = (0..n).map(|s| (s, (s + 1) % n)).collect();
        spec(&format!("ring{n}"), &vec![hosts; n], &cables)
    }

    /// Hops between switches by breadth-first search, to check routes against.
    fn switch_distance(t: &Topology, a: SwitchId, b: SwitchId) -> u32 {
        let mut seen = vec![u32::MAX; t.num_switches() as usize];
        seen[a.0 as usize] = 0;
        let mut queue = std::collections::VecDeque::from([a]);
        while let Some(s) = queue.pop_front() {
            for port in 0..t.ports(s) {
                if let Peer::Switch { switch, .. } = t.peer(PortRef { switch: s, port }) {
                    if seen[switch.0 as usize] == u32::MAX {
                        seen[switch.0 as usize] = seen[s.0 as usize] + 1;
                        queue.push_back(switch);
                    }
                }
            }
        }
        seen[b.0 as usize]
    }

    /// Every route between two hosts reaches its destination without a loop; min-hop routes
    /// are shortest; up/down routes never turn from down to up. Returns the routes' lengths.
    fn check_routes(t: &Topology) -> Vec<u32> {
        let hosts = t.compute_nodes();
        let shortest = t.graph_routing() != Some(&GraphRouting::Tables)
            && !matches!(t.graph_routing(), Some(GraphRouting::UpDown { .. }));
        let updn = matches!(t.graph_routing(), Some(GraphRouting::UpDown { .. }));
        let mut lengths = Vec::new();
        for &src in &hosts {
            for &dst in hosts.iter().filter(|&&d| d != src) {
                let route = t.deterministic_route(src, dst);
                assert_eq!(route.len() as u32, t.hops(src, dst), "{src:?} -> {dst:?}");
                assert_eq!(*route.last().unwrap(), t.node_port(dst));
                let mut switches: Vec<SwitchId> = route.iter().map(|p| p.switch).collect();
                switches.sort_unstable();
                switches.dedup();
                assert_eq!(switches.len(), route.len(), "a loop: {route:?}");
                let between = switch_distance(t, t.leaf_of(src), t.leaf_of(dst));
                if shortest {
                    assert_eq!(route.len() as u32, between + 1, "{src:?} -> {dst:?}");
                }
                assert!(route.len() as u32 > between);
                if updn {
                    let ups: Vec<bool> = route.iter().map(|&p| t.is_up(p)).collect();
                    assert!(
                        !ups.windows(2).any(|w| !w[0] && w[1]),
                        "down then up: {route:?}"
                    );
                }
                let mut candidates = Vec::new();
                t.candidate_ports(src, dst, &mut candidates);
                let ours: Vec<PortIndex> = route.iter().map(|&p| t.port_index(p)).collect();
                assert_eq!(candidates, ours, "one deterministic path");
                lengths.push(route.len() as u32);
            }
        }
        lengths
    }

    /// The wiring is symmetric: the peer of a port's peer is the port.
    fn check_wiring(t: &Topology) {
        for index in 0..t.num_ports() as PortIndex {
            let port = t.port_ref(index);
            match t.peer(port) {
                Peer::Node(n) => assert_eq!(t.node_port(n), port),
                Peer::Switch { switch, port: back } => {
                    let there = PortRef { switch, port: back };
                    assert_eq!(
                        t.peer(there),
                        Peer::Switch {
                            switch: port.switch,
                            port: port.port
                        }
                    );
                }
            }
        }
    }

    #[test]
    fn a_ring_routes_minhop_and_updn_finds_no_roots_as_opensm_does() {
        let (t, layout) = Topology::graph(&ring(4, 2), Engine::MinHop).unwrap();
        assert_eq!((t.num_switches(), t.num_nodes(), t.num_leaves()), (4, 8, 4));
        check_wiring(&t);
        let lengths = check_routes(&t);
        // From a switch of a ring of 4: 1 neighbour's hosts at 2 hops, 2 at 3... per host
        // pair: same switch 1, neighbours 2, opposite 3.
        assert_eq!(t.diameter(), 3);
        assert_eq!(lengths.iter().filter(|&&l| l == 3).count(), 8 * 2);
        assert_eq!(layout.node_hosts.iter().flatten().count(), 8);
        let (t, _) = Topology::graph(&ring(4, 2), Engine::UpDown).unwrap();
        assert_eq!(t.graph_routing(), Some(&GraphRouting::MinHopWithoutRoots));
        check_routes(&t);
    }

    /// Switch 0 of the ring routes its neighbour's hosts (nodes 2, 3) one way; the opposite
    /// switch's (4, 5), two hops either way, go out of the port with fewer routes so far.
    #[test]
    fn equal_ways_are_balanced_as_opensm_balances() {
        let (t, _) = Topology::graph(&ring(4, 2), Engine::MinHop).unwrap();
        let port = |d: u32| t.down_port(SwitchId(0), NodeId(d)).unwrap();
        assert_eq!(port(2), port(3));
        assert_eq!(port(4), port(5));
        assert_ne!(port(2), port(4));
        assert_eq!(port(4), port(6));
    }

    /// A director: leaf ASICs with the hosts, two spine ASICs, two cables from every leaf to
    /// every spine. up/down finds the spines as roots and routes over 3 hops at most.
    #[test]
    fn a_two_stage_director_routes_updn_from_its_spines() {
        let mut cables = Vec::new();
        for leaf in 0..4 {
            for spine in 4..6 {
                cables.extend([(leaf, spine), (leaf, spine)]);
            }
        }
        let spec = spec("director", &[3, 3, 3, 3, 0, 0], &cables);
        let (t, _) = Topology::graph(&spec, Engine::UpDown).unwrap();
        assert_eq!(
            t.graph_routing(),
            Some(&GraphRouting::UpDown {
                roots: vec![SwitchId(4), SwitchId(5)]
            })
        );
        check_wiring(&t);
        assert!(check_routes(&t).iter().all(|&l| l == 1 || l == 3));
        assert_eq!(t.up_ports(SwitchId(0)), 3..7);
        assert!(t.up_ports(SwitchId(4)).is_empty());
        // Leaf 0's 4 up ports carry its routes to the 9 other hosts evenly.
        let mut uses = [0; 7];
        for d in 3..12 {
            uses[usize::from(t.down_port(SwitchId(0), NodeId(d)).unwrap())] += 1;
        }
        assert_eq!(&uses[3..], &[3, 2, 2, 2]);
    }

    /// A fat tree routed as a graph by up/down takes its roots at the cores and the tree's
    /// own path lengths.
    #[test]
    fn a_fat_tree_as_a_graph_routes_updn_over_the_trees_paths() {
        let tree = Topology::new(FatTreeParams::radix8()).unwrap();
        let cabling = Cabling::of_tree(&tree);
        let ids: Vec<u64> = (1..=cabling.switches.len() as u64).collect();
        let (spec, _) = cabling.graph_spec("radix8", &ids).unwrap();
        let (t, layout) = Topology::graph(&spec, Engine::UpDown).unwrap();
        let Some(GraphRouting::UpDown { roots }) = t.graph_routing() else {
            panic!("{:?}", t.graph_routing());
        };
        assert_eq!(roots.len() as u32, tree.num_cores());
        assert!(roots
            .iter()
            .all(|r| tree.level(SwitchId(layout.switches[r.0 as usize] as u32)) == Level::Core));
        for (s, d) in [(0, 1), (0, 5), (0, 127), (64, 3)] {
            let host = |n: u32| {
                let i = (0..t.num_nodes())
                    .find(|&m| layout.node_hosts[m as usize] == Some(n as usize))
                    .unwrap();
                NodeId(i)
            };
            assert_eq!(
                t.hops(host(s), host(d)),
                tree.hops(NodeId(s), NodeId(d)),
                "{s} -> {d}"
            );
        }
    }

    /// A fat tree of 22 pods, with a management switch (two hosts) cabled into its cores:
    /// each pod holds under 5 % of the hosts, so opensm's test passes its aggregation
    /// switches and leaves too (they see the other pods' hosts, over 90 %, at one distance),
    /// and the management switch as well. The roots are the top rank, the cores alone, and
    /// up/down routes the tree over its own paths.
    #[test]
    fn a_fat_tree_of_many_pods_is_rooted_at_its_cores_alone() {
        let tree = Topology::new(FatTreeParams {
            name: "pods22".into(),
            radix: 24,
            nodes_per_leaf: 4,
            leaves: 44,
            leaves_per_pod: 2,
            aggs_per_pod: 2,
        })
        .unwrap();
        let mut cabling = Cabling::of_tree(&tree);
        let cores: Vec<usize> = (0..cabling.switches.len())
            .filter(|&s| tree.level(SwitchId(s as u32)) == Level::Core)
            .collect();
        let mgmt = cabling.switches.len();
        cabling.switches.push("mgmt".into());
        let end = |device, port| CableEnd { device, port };
        for h in 0..2 {
            cabling.hosts.push(format!("ufm-{h}"));
            cabling.cables.push(Cable {
                a: end(Device::Switch(mgmt), h as u16 + 1),
                b: end(Device::Host(cabling.hosts.len() - 1), 1),
            });
        }
        for (k, &core) in cores.iter().enumerate() {
            cabling.cables.push(Cable {
                a: end(Device::Switch(mgmt), k as u16 + 3),
                b: end(Device::Switch(core), 24),
            });
        }
        let ids: Vec<u64> = (1..=cabling.switches.len() as u64).collect();
        let (spec, _) = cabling.graph_spec("pods22", &ids).unwrap();
        let (t, layout) = Topology::graph(&spec, Engine::UpDown).unwrap();
        let Some(GraphRouting::UpDown { roots }) = t.graph_routing() else {
            panic!("{:?}", t.graph_routing());
        };
        let mut found: Vec<usize> = roots
            .iter()
            .map(|r| layout.switches[r.0 as usize])
            .collect();
        found.sort_unstable();
        assert_eq!(found, cores);
        assert_eq!(t.diameter(), tree.diameter());
    }

    /// A tree's cables as a graph number switches, nodes and ports as the tree does, and
    /// take tables that route the long way round, which the tree refuses.
    #[test]
    fn a_trees_cables_as_a_graph_keep_its_numbering_and_take_any_loop_free_tables() {
        let tree = Topology::new(FatTreeParams::radix8()).unwrap();
        let cabling = Cabling::of_tree(&tree);
        let ids: Vec<u64> = (1..=cabling.switches.len() as u64).collect();
        let (spec, _) = cabling.graph_spec("radix8", &ids).unwrap();
        let (graph, _) = Topology::graph(&spec, Engine::MinHop).unwrap();
        assert_eq!(graph.num_ports(), tree.num_ports());
        for index in 0..tree.num_ports() as PortIndex {
            let port = tree.port_ref(index);
            assert_eq!(graph.port_ref(index), port);
            assert_eq!(graph.peer(port), tree.peer(port), "{port:?}");
        }
        let nodes = tree.num_nodes();
        let mut tables: Vec<u16> = (0..tree.num_switches())
            .flat_map(|s| (0..nodes).map(move |d| (SwitchId(s), NodeId(d))))
            .map(|(s, d)| tree.deterministic_port(s, d).expect("a tree routes"))
            .collect();
        // Leaf 0 sends node 5 (on leaf 1) to the pod's first aggregation switch, which sends
        // it down to leaf 2, which sends it up to the second, which takes it to leaf 1.
        let first_agg = tree.num_leaves();
        tables[5] = tree.up_ports(SwitchId(0)).start;
        tables[(first_agg * nodes + 5) as usize] = 2;
        let err = tree.clone().with_forwarding(tables.clone()).unwrap_err();
        assert!(err.to_string().contains("shortest"), "{err}");
        let routed = graph.with_forwarding(tables).unwrap();
        assert_eq!(routed.hops(NodeId(0), NodeId(5)), 5);
        check_routes(&routed);
    }

    #[test]
    fn fabrics_that_cannot_be_routed_are_refused_with_the_reason() {
        let refused = |spec: &GraphSpec| {
            Topology::graph(spec, Engine::MinHop)
                .unwrap_err()
                .to_string()
        };
        let mut twice = ring(3, 1);
        twice.hosts.push(twice.links[0][0]);
        assert!(refused(&twice).contains("'sw0' port 2 has two cables"));
        let pieces = spec("pieces", &[1, 1, 1, 1], &[(0, 1), (2, 3)]);
        assert!(
            refused(&pieces).contains("cannot reach"),
            "{}",
            refused(&pieces)
        );
        let no_hosts = spec("bare", &[0, 0], &[(0, 1)]);
        assert!(refused(&no_hosts).contains("no switch has a host"));
        let big = spec("big", &[1; 9000], &[]);
        assert!(refused(&big).contains("switch count 9000 is above the cap of 8192 switches"));
        let mut looped = ring(3, 1);
        looped.links.push([(1, 9), (1, 10)]);
        assert!(refused(&looped).contains("'sw1' has a cable from its port 9 to its own port 10"));
    }

    /// Tables that loop are refused; tables that route the long way round are followed.
    #[test]
    fn a_subnet_managers_tables_route_a_graph_unless_they_loop() {
        let (t, _) = Topology::graph(&ring(4, 1), Engine::MinHop).unwrap();
        let nodes = t.num_nodes() as usize;
        let own: Vec<u16> = (0..t.num_switches())
            .flat_map(|s| (0..t.num_nodes()).map(move |d| (s, d)))
            .map(|(s, d)| t.down_port(SwitchId(s), NodeId(d)).unwrap())
            .collect();
        // Switch 0 sends node 1 (its neighbour's) the other way round: 4 hops.
        let mut long = own.clone();
        let direct = own[1];
        let other = (1..3).find(|&p| p != direct).unwrap();
        long[1] = other;
        let routed = t.clone().with_forwarding(long).unwrap();
        assert_eq!(routed.graph_routing(), Some(&GraphRouting::Tables));
        assert_eq!(routed.hops(NodeId(0), NodeId(1)), 4);
        check_routes(&routed);
        // ... and the switch it reaches sends it back: a loop.
        let far = match t.peer(PortRef {
            switch: SwitchId(0),
            port: other,
        }) {
            Peer::Switch { switch, port } => (switch, port),
            Peer::Node(_) => unreachable!(),
        };
        let mut looped = own.clone();
        looped[1] = other;
        looped[far.0 .0 as usize * nodes + 1] = far.1;
        let err = t.clone().with_forwarding(looped).unwrap_err().to_string();
        assert!(err.contains("loops"), "{err}");
    }

    /// A connected graph: a random spanning tree plus extra cables, hosts on some switches.
    fn connected_graph() -> impl Strategy<Value = GraphSpec> {
        (2usize..9)
            .prop_flat_map(|n| {
                (
                    proptest::collection::vec(0usize..1000, n - 1),
                    proptest::collection::vec((0..n, 0..n), 0..2 * n),
                    proptest::collection::vec(0u32..3, n),
                    Just(n),
                )
            })
            .prop_map(|(parents, extra, mut hosts, n)| {
                let mut cables: Vec<(usize, usize)> = parents
                    .iter()
                    .enumerate()
                    .map(|(i, &p)| (i + 1, p % (i + 1)))
                    .collect();
                cables.extend(extra.into_iter().filter(|(a, b)| a != b));
                if hosts.iter().all(|&h| h == 0) {
                    hosts[n - 1] = 1;
                }
                spec("random", &hosts, &cables)
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn minhop_routes_are_shortest_and_reach_their_destinations(spec in connected_graph()) {
            let (t, _) = Topology::graph(&spec, Engine::MinHop).unwrap();
            check_wiring(&t);
            check_routes(&t);
        }

        #[test]
        fn updn_routes_never_turn_from_down_to_up(spec in connected_graph()) {
            match Topology::graph(&spec, Engine::UpDown) {
                Ok((t, _)) => {
                    check_wiring(&t);
                    check_routes(&t);
                }
                // Roots found by opensm's rule need not reach every switch up then down.
                Err(e) => prop_assert!(e.to_string().contains("no up/down path"), "{}", e),
            }
        }
    }
}
