//! A tree routed by a subnet manager's own tables: the linear forwarding tables read from
//! the switches (`hostping fabric route --dump`), one output port per (switch, destination),
//! instead of the simulator's rules. Routing is then deterministic, as the fabric's is.
//!
//! The tables must route as a fat tree's analyses assume (thesis 3.5): along present links,
//! up then down, over the tree's shortest paths (1, 3 or 5 hops). opensm's min-hop and
//! up/down engines do on a fat tree; tables that do not (a loop, a detour longer than the
//! tree's paths, a port that leads nowhere) are refused, naming the switch and destination.
//! A graph ([`Topology::graph`]) takes any tables whose routes reach their destinations:
//! only a loop, a missing entry on the way or a port that leads nowhere is refused.

use super::{NodeId, Peer, PortRef, SwitchId, Topology, TopologyError};

/// The output port of every switch towards every destination node.
#[derive(Clone, Debug)]
pub(super) struct Forwarding {
    /// At `switch * nodes + dst`: the port, or [`NONE`] where the tables have no entry (a
    /// free leaf port has no address); those destinations keep the tree's own routing.
    ports: Vec<u16>,
}

/// No entry.
pub const NO_ENTRY: u16 = u16::MAX;
use NO_ENTRY as NONE;

impl Topology {
    /// The tree routed by `ports` (at `switch * num_nodes + dst`: the output port, or
    /// [`NO_ENTRY`] for a destination the tables do not address). Refuses tables of another
    /// size, a port the switch lacks or whose link is absent, and any route from a leaf
    /// that does not reach its destination over the tree's shortest path (on a graph: that
    /// does not reach it at all).
    pub fn with_forwarding(mut self, ports: Vec<u16>) -> Result<Topology, TopologyError> {
        let nodes = self.num_nodes() as usize;
        let refuse = |reason: String| TopologyError::Forwarding {
            tree: self.params.name.clone(),
            reason,
        };
        if ports.len() != self.num_switches() as usize * nodes {
            return Err(refuse(format!(
                "{} entries for {} switches x {nodes} nodes",
                ports.len(),
                self.num_switches()
            )));
        }
        if self.is_graph() {
            let tree = self.params.name.clone();
            return self
                .graph_with_tables(ports)
                .map_err(|source| TopologyError::GraphTables { tree, source });
        }
        for (i, &port) in ports.iter().enumerate().filter(|(_, &p)| p != NONE) {
            let switch = SwitchId((i / nodes) as u32);
            if port >= self.ports(switch) || self.is_absent(PortRef { switch, port }) {
                return Err(refuse(format!(
                    "switch {} sends node {} out of port {port}, which has no link",
                    switch.0,
                    i % nodes
                )));
            }
        }
        self.forwarding = Some(Box::new(Forwarding { ports }));
        for leaf in 0..self.num_leaves() {
            let src = NodeId(leaf * self.nodes_per_leaf());
            for dst in (0..self.num_nodes()).map(NodeId) {
                if self.forwarded(self.leaf_of(src), dst).is_none() {
                    continue;
                }
                self.check_route(src, dst).map_err(&refuse)?;
            }
        }
        Ok(self)
    }

    /// Whether the tree is routed by a subnet manager's tables.
    pub fn has_forwarding(&self) -> bool {
        self.forwarding.is_some()
    }

    /// The tables' port at `switch` towards `dst`, where they have one.
    pub(super) fn forwarded(&self, switch: SwitchId, dst: NodeId) -> Option<u16> {
        let f = self.forwarding.as_ref()?;
        let port = f.ports[(switch.0 * self.num_nodes() + dst.0) as usize];
        (port != NONE).then_some(port)
    }

    /// Follows the tables from `src`'s leaf: they must reach `dst` in the tree's hops.
    fn check_route(&self, src: NodeId, dst: NodeId) -> Result<(), String> {
        let mut switch = self.leaf_of(src);
        let want = self.hops(src, dst);
        for _ in 0..want {
            let port = self.forwarded(switch, dst).ok_or_else(|| {
                format!(
                    "switch {} has no entry for node {} on its way",
                    switch.0, dst.0
                )
            })?;
            match self.peer(PortRef { switch, port }) {
                Peer::Node(node) if node == dst => return Ok(()),
                Peer::Node(node) => {
                    return Err(format!(
                        "switch {} sends node {} down to node {}",
                        switch.0, dst.0, node.0
                    ))
                }
                Peer::Switch { switch: next, .. } => switch = next,
            }
        }
        Err(format!(
            "from leaf {} the tables do not reach node {} in {want} hops, the tree's shortest \
             path (a loop, or a longer way round)",
            self.leaf_of(src).0,
            dst.0
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::FatTreeParams;

    /// The tables of the tree's own deterministic routing.
    fn own_tables(t: &Topology) -> Vec<u16> {
        let mut ports = vec![NONE; (t.num_switches() * t.num_nodes()) as usize];
        for s in 0..t.num_switches() {
            for d in 0..t.num_nodes() {
                let (switch, dst) = (SwitchId(s), NodeId(d));
                ports[(s * t.num_nodes() + d) as usize] =
                    t.deterministic_port(switch, dst).expect("a tree routes");
            }
        }
        ports
    }

    #[test]
    fn the_trees_own_tables_route_as_it_does_and_others_are_followed() {
        let tree = Topology::new(FatTreeParams::radix8()).unwrap();
        let mut tables = own_tables(&tree);
        let routed = tree.clone().with_forwarding(tables.clone()).unwrap();
        for (s, d) in [(0, 5), (0, 127), (40, 3), (70, 64)] {
            let (src, dst) = (NodeId(s), NodeId(d));
            assert_eq!(
                routed.deterministic_route(src, dst),
                tree.deterministic_route(src, dst)
            );
        }
        // Leaf 0 sends node 127 up its other port: the route follows the table.
        let first = tree.deterministic_route(NodeId(0), NodeId(127))[0];
        let other = tree
            .up_ports(SwitchId(0))
            .find(|&p| p != first.port)
            .unwrap();
        tables[127] = other;
        let routed = tree.clone().with_forwarding(tables.clone()).unwrap();
        let route = routed.deterministic_route(NodeId(0), NodeId(127));
        assert_eq!(
            route[0],
            PortRef {
                switch: SwitchId(0),
                port: other
            }
        );
        assert_eq!(route.len(), 5);
    }

    #[test]
    fn tables_that_loop_or_lead_nowhere_are_refused() {
        let tree = Topology::new(FatTreeParams::radix8()).unwrap();
        let nodes = tree.num_nodes() as usize;
        // Leaf 0 sends node 5 (on leaf 1) down to its own node 2.
        let mut tables = own_tables(&tree);
        tables[5] = 2;
        let err = tree
            .clone()
            .with_forwarding(tables)
            .unwrap_err()
            .to_string();
        assert!(err.contains("sends node 5 down to node 2"), "{err}");
        // A port the switch does not have.
        let mut tables = own_tables(&tree);
        tables[nodes + 9] = 8;
        let err = tree
            .clone()
            .with_forwarding(tables)
            .unwrap_err()
            .to_string();
        assert!(err.contains("port 8, which has no link"), "{err}");
        // The aggregation switch above leaf 0 sends node 127 back down to leaf 0: a loop.
        let mut tables = own_tables(&tree);
        let up = tree.deterministic_route(NodeId(0), NodeId(127))[1].switch.0 as usize;
        tables[up * nodes + 127] = 0;
        let err = tree
            .clone()
            .with_forwarding(tables)
            .unwrap_err()
            .to_string();
        assert!(err.contains("shortest") || err.contains("down to"), "{err}");
        // Too few entries.
        let err = tree
            .clone()
            .with_forwarding(vec![0; 3])
            .unwrap_err()
            .to_string();
        assert!(err.contains("3 entries"), "{err}");
    }
}
