//! The one route a packet takes without adaptive routing: what a subnet manager's
//! destination-based tables give (opensm's min-hop and up/down engines on a fat tree spread
//! destinations over the up ports, `dst mod up ports`), and what the simulator does with
//! `SimConfig::adaptive` off; under a subnet manager's own tables
//! ([`Topology::with_forwarding`]), the tables' route. Probes between hosts report it, and the cables it crosses tell
//! which pairs a bad cable can reach.

use super::{NodeId, Peer, PortRef, Topology};

impl Topology {
    /// The switch output ports a packet from `src` to `dst` leaves through, in order, under
    /// deterministic routing: down where the switch has a down port towards `dst`, otherwise
    /// up port `dst mod n` of the `n` up ports that lead on (every up port in a complete tree;
    /// those around missing links otherwise). Empty when `src == dst`.
    pub fn deterministic_route(&self, src: NodeId, dst: NodeId) -> Vec<PortRef> {
        let mut route = Vec::new();
        if src == dst {
            return route;
        }
        let mut switch = self.leaf_of(src);
        let mut ups = Vec::new();
        // An up/down route crosses at most one switch per level each way.
        for _ in 0..=2 * self.diameter() {
            let port = match self.down_port(switch, dst) {
                Some(port) => port,
                None => {
                    ups.clear();
                    ups.extend(self.up_ports_towards(switch, dst));
                    assert!(
                        !ups.is_empty(),
                        "a routable tree has an up port towards every node"
                    );
                    ups[dst.0 as usize % ups.len()]
                }
            };
            let here = PortRef { switch, port };
            route.push(here);
            match self.peer(here) {
                Peer::Node(node) => {
                    debug_assert_eq!(node, dst);
                    return route;
                }
                Peer::Switch { switch: next, .. } => switch = next,
            }
        }
        unreachable!("an up/down route is never longer than twice the tree's height")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{SimConfig, Simulation};
    use crate::telemetry::{TelemetryConfig, TelemetryKind};
    use crate::topology::FatTreeParams;
    use crate::traffic::{Job, Op, Program};

    /// One message from rank 0 to rank 1.
    struct OneMessage(bool);

    impl Program for OneMessage {
        fn next_op(&mut self, rank: u32, _: &mut dyn rand::RngCore) -> Option<Op> {
            if rank != 0 || self.0 {
                return None;
            }
            self.0 = true;
            Some(Op::Send {
                dst: 1,
                bytes: 9000,
                not_before_ps: 0,
            })
        }
    }

    /// The ports the simulator's packets left through, without adaptive routing.
    fn simulated_ports(topology: &Topology, src: NodeId, dst: NodeId) -> Vec<u32> {
        let config = SimConfig {
            adaptive: false,
            telemetry: TelemetryConfig {
                kind: TelemetryKind::Off,
                ..Default::default()
            },
            ..SimConfig::default()
        };
        let job = Job {
            name: "one".into(),
            placement: vec![src, dst],
            program: Box::new(OneMessage(false)),
        };
        let result = Simulation::new(topology, config, vec![job])
            .unwrap()
            .run(&mut |_| {});
        let packets = &result.ground_truth.packets[0];
        (0..packets.len() as u32)
            .filter(|&p| packets[p as usize] > 0)
            .collect()
    }

    fn check_every_pair(topology: &Topology) {
        let nodes = topology.num_nodes();
        for src in (0..nodes).step_by(3) {
            for dst in (0..nodes).step_by(5).filter(|&d| d != src) {
                let (src, dst) = (NodeId(src), NodeId(dst));
                let route = topology.deterministic_route(src, dst);
                assert_eq!(
                    route.len() as u32,
                    topology.hops(src, dst),
                    "{src:?} -> {dst:?}"
                );
                let mut ports: Vec<u32> = route.iter().map(|&p| topology.port_index(p)).collect();
                ports.sort_unstable();
                assert_eq!(
                    ports,
                    simulated_ports(topology, src, dst),
                    "{src:?} -> {dst:?}"
                );
            }
        }
    }

    #[test]
    fn the_route_is_where_the_simulator_sends_the_packets() {
        check_every_pair(&Topology::new(FatTreeParams::radix8()).unwrap());
        let two_level = FatTreeParams {
            name: "two-level".into(),
            radix: 8,
            nodes_per_leaf: 4,
            leaves: 8,
            leaves_per_pod: 8,
            aggs_per_pod: 4,
        };
        check_every_pair(&Topology::new(two_level).unwrap());
    }

    #[test]
    fn the_route_follows_forwarding_tables_as_the_simulator_does() {
        let tree = Topology::new(FatTreeParams::radix8()).unwrap();
        // Tables that go up port `dst + 1 mod n`, not the simulator's `dst mod n`.
        let nodes = tree.num_nodes();
        let mut tables = Vec::new();
        for s in 0..tree.num_switches() {
            for d in 0..nodes {
                let (switch, dst) = (crate::topology::SwitchId(s), NodeId(d));
                let ups: Vec<u16> = tree.up_ports_towards(switch, dst).collect();
                let port = tree
                    .down_port(switch, dst)
                    .unwrap_or_else(|| ups[(d as usize + 1) % ups.len()]);
                tables.push(port);
            }
        }
        let routed = tree.clone().with_forwarding(tables).unwrap();
        check_every_pair(&routed);
        let (src, dst) = (NodeId(0), NodeId(127));
        assert_ne!(
            routed.deterministic_route(src, dst),
            tree.deterministic_route(src, dst)
        );
    }

    #[test]
    fn the_route_goes_around_a_missing_link_as_the_simulator_does() {
        let tree = Topology::new(FatTreeParams::radix8()).unwrap();
        // Leaf 0's first up link and one aggregation-to-core link are missing.
        let leaf_up = PortRef {
            switch: crate::topology::SwitchId(0),
            port: 4,
        };
        let agg = crate::topology::SwitchId(tree.num_leaves());
        let agg_up = PortRef {
            switch: agg,
            port: tree.up_ports(agg).start,
        };
        let cut = tree.without_links(&[leaf_up, agg_up]).unwrap();
        check_every_pair(&cut);
        for dst in 4..cut.num_nodes() {
            let route = cut.deterministic_route(NodeId(0), NodeId(dst));
            assert!(
                !route.contains(&leaf_up) && !route.contains(&agg_up),
                "{route:?}"
            );
        }
    }
}
