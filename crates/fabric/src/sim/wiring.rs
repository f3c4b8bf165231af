//! The tree flattened into the tables the hot path reads: where every link arrives, and the
//! routing of [`Topology::down_port`] / [`Topology::up_ports`] as per-switch and
//! per-destination lookups (no divisions, no branching on the tree's shape per packet).
//!
//! Links are numbered like ports: `0..num_ports` are the switch output ports
//! ([`PortIndex`]), and `num_ports + n` is the injection link of node `n` into its leaf.
//!
//! A tree with missing links ([`Topology::without_links`]) routes some (switch, destination)
//! pairs otherwise; those are kept apart as detours, looked up only at the switches that
//! have any, so that a complete tree's hot path is unchanged. A graph ([`Topology::graph`])
//! is routed that way at every switch, and its path lengths come from a table of its own.

use std::collections::HashMap;

use crate::topology::{dmodk, Level, NodeId, Peer, PortIndex, PortRef, SwitchId, Topology};

/// What is at the receiving end of a link.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum FarEnd {
    /// An input buffer of this switch.
    Switch(u32),
    /// A compute node (the last link of every path).
    Node(u32),
}

#[derive(Copy, Clone, Debug)]
struct SwitchRoute {
    level: Level,
    /// The leaf's own number for a leaf, the pod for an aggregation switch.
    region: u32,
    base: PortIndex,
    up_start: PortIndex,
    up_count: u32,
    /// The base of the switch's D-mod-K digit ([`Topology::up_digit_divisor`]).
    up_divisor: u32,
    /// Some destinations are routed otherwise from here ([`Wiring::detours`]).
    detoured: bool,
}

/// Where a destination is, and the down port every switch on its way down uses (the
/// topology's down routing depends on the level and the destination only).
#[derive(Copy, Clone, Debug)]
struct DestRoute {
    leaf: u32,
    pod: u32,
    leaf_port: u16,
    agg_port: u16,
    core_port: u16,
}

pub(crate) struct Wiring {
    pub num_ports: u32,
    far: Vec<FarEnd>,
    /// The link arriving at each switch port's input (the peer port's link, or the node's
    /// injection link), whose far-end buffer counts what the port receives.
    inbound: Vec<u32>,
    /// The leaf port each node is cabled to.
    node_ports: Vec<PortIndex>,
    switches: Vec<SwitchRoute>,
    dests: Vec<DestRoute>,
    port_refs: Vec<PortRef>,
    /// Routes around missing links, by `(switch, destination)`, where they differ from the
    /// tables above.
    detours: HashMap<(u32, u32), Route>,
    /// The up ports of [`Route::UpAmong`] routes, back to back.
    up_lists: Vec<PortIndex>,
    /// A graph's path lengths, at `leaf * nodes + dst` ([`Topology::hops`]); empty for a
    /// tree, whose lengths follow from leaves and pods.
    graph_hops: Vec<u16>,
}

/// The next hop out of a switch towards a destination.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    Down(PortIndex),
    /// Any of `start..start + count` leads there.
    Up {
        start: PortIndex,
        count: u32,
    },
    /// Any of the `count` ports listed from `at` on ([`Wiring::up_among`]) leads there: the
    /// up ports left where links are missing.
    UpAmong {
        at: u32,
        count: u32,
    },
}

impl Wiring {
    /// The wiring of `topology` with its routes towards every node.
    #[cfg(test)]
    pub fn new(topology: &Topology) -> Self {
        let all: Vec<NodeId> = (0..topology.num_nodes()).map(NodeId).collect();
        Self::towards(topology, &all)
    }

    /// The wiring of `topology` whose detours hold the routes towards `destinations` only:
    /// a run sends to its jobs' nodes and its samplers alone, and on a large fabric with a
    /// missing link the detours towards every node cost more than a short run itself
    /// (every switch times every node: 1.4 million on full-891, for each pair of a mesh).
    pub fn towards(topology: &Topology, destinations: &[NodeId]) -> Self {
        let num_ports = topology.num_ports() as u32;
        let mut far = Vec::with_capacity(num_ports as usize + topology.num_nodes() as usize);
        let mut port_refs = Vec::with_capacity(num_ports as usize);
        let mut inbound = Vec::with_capacity(num_ports as usize);
        let mut node_ports = vec![PortIndex::MAX; topology.num_nodes() as usize];
        for index in 0..num_ports {
            let port = topology.port_ref(index);
            port_refs.push(port);
            match topology.peer(port) {
                Peer::Node(n) => {
                    far.push(FarEnd::Node(n.0));
                    inbound.push(num_ports + n.0);
                    node_ports[n.0 as usize] = index;
                }
                Peer::Switch { switch, port } => {
                    far.push(FarEnd::Switch(switch.0));
                    inbound.push(topology.port_index(PortRef { switch, port }));
                }
            }
        }
        for n in 0..topology.num_nodes() {
            far.push(FarEnd::Switch(topology.leaf_of(NodeId(n)).0));
        }
        let switches = (0..topology.num_switches())
            .map(|s| {
                let switch = SwitchId(s);
                let level = topology.level(switch);
                let base = topology.port_base(switch);
                let up = topology.up_ports(switch);
                SwitchRoute {
                    level,
                    region: match level {
                        Level::Leaf => s,
                        Level::Aggregation => topology.pod_of(switch).expect("aggregation pod"),
                        Level::Core => 0,
                    },
                    base,
                    up_start: base + PortIndex::from(up.start),
                    up_count: u32::from(up.end - up.start),
                    up_divisor: topology.up_digit_divisor(switch),
                    detoured: false,
                }
            })
            .collect();
        let mut wiring = Wiring {
            num_ports,
            far,
            inbound,
            node_ports,
            switches,
            dests: Self::dest_routes(topology),
            port_refs,
            detours: HashMap::new(),
            up_lists: Vec::new(),
            graph_hops: Vec::new(),
        };
        wiring.route_towards(topology, destinations);
        if topology.is_graph() {
            let nodes = topology.num_nodes();
            wiring.graph_hops = (0..topology.num_leaves())
                .flat_map(|leaf| {
                    let src = NodeId(leaf * topology.nodes_per_leaf());
                    (0..nodes).map(move |d| topology.hops(src, NodeId(d)) as u16)
                })
                .collect();
        }
        wiring
    }

    /// Keeps the detours towards `destinations` only, in place of those kept so far (the
    /// wiring of [`Wiring::towards`] with these destinations): a prepared simulator's next
    /// run sends elsewhere. Nothing to do on a complete tree, which has none.
    pub fn route_towards(&mut self, topology: &Topology, destinations: &[NodeId]) {
        let routed_otherwise =
            !topology.is_complete() || topology.has_forwarding() || topology.is_graph();
        if !routed_otherwise {
            return;
        }
        self.detours.clear();
        self.up_lists.clear();
        for switch in &mut self.switches {
            switch.detoured = false;
        }
        self.add_detours(topology, destinations);
    }

    /// Records every route of `topology` that the per-level tables do not give: down ports
    /// that avoid a missing link, and up port lists without the links that are missing or
    /// lead nowhere. Up lists depend on the destination's leaf only and are shared; under a
    /// subnet manager's forwarding tables, on the destination itself.
    fn add_detours(&mut self, topology: &Topology, destinations: &[NodeId]) {
        let mut lists: HashMap<(u32, u32), Route> = HashMap::new();
        let per_destination = topology.has_forwarding();
        for s in 0..topology.num_switches() {
            let switch = SwitchId(s);
            let base = topology.port_base(switch);
            for &dst in destinations {
                let d = dst.0;
                let route = match topology.down_port(switch, dst) {
                    Some(port) => Route::Down(base + PortIndex::from(port)),
                    None => *lists
                        .entry((
                            s,
                            if per_destination {
                                d
                            } else {
                                topology.leaf_of(dst).0
                            },
                        ))
                        .or_insert_with(|| {
                            let ports: Vec<PortIndex> = topology
                                .up_ports_towards(switch, dst)
                                .map(|p| base + PortIndex::from(p))
                                .collect();
                            let all = self.switches[s as usize].up_count as usize;
                            if ports.len() == all {
                                let start = self.switches[s as usize].up_start;
                                return Route::Up {
                                    start,
                                    count: all as u32,
                                };
                            }
                            let at = self.up_lists.len() as u32;
                            self.up_lists.extend(&ports);
                            Route::UpAmong {
                                at,
                                count: ports.len() as u32,
                            }
                        }),
                };
                if route != self.table_route(s, d) {
                    self.detours.insert((s, d), route);
                    self.switches[s as usize].detoured = true;
                }
            }
        }
    }

    fn dest_routes(topology: &Topology) -> Vec<DestRoute> {
        let aggs = topology.switches_at(Level::Aggregation);
        let mut first_agg_of_pod = vec![None; topology.num_pods() as usize];
        for a in aggs.rev() {
            let pod = topology.pod_of(SwitchId(a)).expect("aggregation pod");
            first_agg_of_pod[pod as usize] = Some(SwitchId(a));
        }
        let a_core = topology.switches_at(Level::Core).next().map(SwitchId);
        (0..topology.num_nodes())
            .map(|n| {
                let dst = NodeId(n);
                let leaf = topology.leaf_of(dst);
                let pod = topology.pod_of(leaf).expect("leaf pod");
                // A graph's free slot may have no entry: no packet goes there, and a graph
                // routes every switch by its detours anyway.
                let down = |switch: Option<SwitchId>| {
                    switch.map_or(0, |s| {
                        topology.complete_down_port(s, dst).unwrap_or_else(|| {
                            assert!(topology.is_graph(), "a tree routes down");
                            0
                        })
                    })
                };
                DestRoute {
                    leaf: leaf.0,
                    pod,
                    leaf_port: down(Some(leaf)),
                    agg_port: down(first_agg_of_pod[pod as usize]),
                    core_port: down(a_core),
                }
            })
            .collect()
    }

    /// Number of links (switch ports and node injection links).
    pub fn num_links(&self) -> usize {
        self.far.len()
    }

    #[inline]
    pub fn far_end(&self, link: u32) -> FarEnd {
        self.far[link as usize]
    }

    /// The link whose far end is `port`'s input.
    #[inline]
    pub fn inbound(&self, port: u32) -> u32 {
        self.inbound[port as usize]
    }

    /// The switch port whose input `link` arrives at (its PortRcv counters count what the
    /// link carries); `None` for a link into a node.
    pub fn receiving_port(&self, link: u32) -> Option<PortIndex> {
        match self.far[link as usize] {
            FarEnd::Node(_) => None,
            // A switch port's link arrives at its peer, the port `inbound` names for it.
            _ if link < self.num_ports => Some(self.inbound[link as usize]),
            // An injection link arrives at its node's leaf port, whose peer is the node.
            _ => Some(self.node_ports[(link - self.num_ports) as usize]),
        }
    }

    /// The injection link of a node.
    #[inline]
    pub fn nic_link(&self, node: u32) -> u32 {
        self.num_ports + node
    }

    pub fn port_ref(&self, port: PortIndex) -> PortRef {
        self.port_refs[port as usize]
    }

    /// [`Topology::hops`] from the table (no divisions).
    #[inline]
    pub fn hops(&self, src: u32, dst: u32) -> u32 {
        let (s, d) = (self.dests[src as usize], self.dests[dst as usize]);
        if !self.graph_hops.is_empty() {
            let nodes = self.dests.len() as u32;
            return u32::from(self.graph_hops[(s.leaf * nodes + dst) as usize]);
        }
        if s.leaf == d.leaf {
            1
        } else if s.pod == d.pod {
            3
        } else {
            5
        }
    }

    #[inline]
    pub fn route(&self, switch: u32, dst: u32) -> Route {
        if self.switches[switch as usize].detoured {
            return self.detour(switch, dst);
        }
        self.table_route(switch, dst)
    }

    /// The route at a switch that some missing link makes route otherwise: kept out of line,
    /// so that [`Wiring::route`] stays small enough to inline into the hot path.
    #[cold]
    #[inline(never)]
    fn detour(&self, switch: u32, dst: u32) -> Route {
        match self.detours.get(&(switch, dst)) {
            Some(&route) => route,
            None => self.table_route(switch, dst),
        }
    }

    /// Which of the `count` up ports of a [`Route::Up`] or [`Route::UpAmong`] at `switch`
    /// deterministic routing takes towards `dst` (D-mod-K, as [`Topology::deterministic_port`]).
    #[inline]
    pub fn deterministic_up(&self, switch: u32, dst: u32, count: u32) -> u32 {
        dmodk(dst, self.switches[switch as usize].up_divisor, count)
    }

    /// The `k`-th port of an [`Route::UpAmong`] list starting `at`.
    #[inline]
    pub fn up_among(&self, at: u32, k: u32) -> PortIndex {
        self.up_lists[(at + k) as usize]
    }

    /// The up ports of an [`Route::UpAmong`] list.
    pub fn up_list(&self, at: u32, count: u32) -> &[PortIndex] {
        &self.up_lists[at as usize..(at + count) as usize]
    }

    /// The route the per-level tables give (a complete tree's).
    #[inline]
    fn table_route(&self, switch: u32, dst: u32) -> Route {
        let s = self.switches[switch as usize];
        let d = self.dests[dst as usize];
        let down = match s.level {
            Level::Leaf => (d.leaf == s.region).then_some(d.leaf_port),
            Level::Aggregation => (d.pod == s.region).then_some(d.agg_port),
            Level::Core => Some(d.core_port),
        };
        match down {
            Some(port) => Route::Down(s.base + PortIndex::from(port)),
            None => Route::Up {
                start: s.up_start,
                count: s.up_count,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::FatTreeParams;

    /// The flattened tables agree with the topology's own routing at every switch, for every
    /// destination, and with its path lengths, on trees with one and with several links per
    /// leaf-aggregation pair and with one pod.
    #[test]
    fn routes_match_the_topology() {
        let parallel = FatTreeParams {
            name: "parallel".into(),
            radix: 8,
            nodes_per_leaf: 4,
            leaves: 8,
            leaves_per_pod: 2,
            aggs_per_pod: 2,
        };
        let one_pod = FatTreeParams {
            name: "one-pod".into(),
            radix: 6,
            nodes_per_leaf: 3,
            leaves: 3,
            leaves_per_pod: 3,
            aggs_per_pod: 3,
        };
        let radix8 = Topology::new(FatTreeParams::radix8()).unwrap();
        // One leaf uplink and one aggregation uplink missing.
        let agg = radix8.switches_at(Level::Aggregation).start;
        let missing = [(0, 4), (agg, 2)].map(|(s, port)| PortRef {
            switch: SwitchId(s),
            port,
        });
        let detoured = radix8.clone().without_links(&missing).unwrap();
        let trees = [parallel, one_pod].map(|p| Topology::new(p).unwrap());
        for t in trees.into_iter().chain([radix8, detoured]) {
            let w = Wiring::new(&t);
            for s in 0..t.num_switches() {
                let switch = SwitchId(s);
                let base = t.port_base(switch);
                for d in 0..t.num_nodes() {
                    let expected: Vec<PortIndex> = match t.down_port(switch, NodeId(d)) {
                        Some(p) => vec![base + PortIndex::from(p)],
                        None => t
                            .up_ports_towards(switch, NodeId(d))
                            .map(|p| base + PortIndex::from(p))
                            .collect(),
                    };
                    let routed = match w.route(s, d) {
                        Route::Down(port) => vec![port],
                        Route::Up { start, count } => (start..start + count).collect(),
                        Route::UpAmong { at, count } => w.up_list(at, count).to_vec(),
                    };
                    assert_eq!(routed, expected, "{} switch {s} dst {d}", t.name());
                }
            }
            for src in 0..t.num_nodes() {
                for dst in 0..t.num_nodes() {
                    assert_eq!(w.hops(src, dst), t.hops(NodeId(src), NodeId(dst)));
                }
            }
        }
    }

    #[test]
    fn links_arrive_where_the_topology_says() {
        let t = Topology::new(FatTreeParams::radix8()).unwrap();
        let w = Wiring::new(&t);
        assert_eq!(w.num_links(), t.num_ports() + 128);
        let to_node_5 = t.port_index(t.node_port(NodeId(5)));
        assert_eq!(w.far_end(to_node_5), FarEnd::Node(5));
        assert_eq!(w.far_end(w.nic_link(5)), FarEnd::Switch(1));
        let leaf_up = t.port_index(PortRef {
            switch: SwitchId(0),
            port: 4,
        });
        assert_eq!(
            w.far_end(leaf_up),
            FarEnd::Switch(t.switches_at(Level::Aggregation).start)
        );
    }
}
