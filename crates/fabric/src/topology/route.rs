//! The one route a packet takes without adaptive routing: what a subnet manager's
//! destination-based tables give, and what the simulator does with `SimConfig::adaptive` off;
//! under a subnet manager's own tables ([`Topology::with_forwarding`]), the tables' route.
//! Probes between hosts report it, and the cables it crosses tell which pairs a bad cable can
//! reach.
//!
//! Up ports are chosen by D-mod-K (Zahavi, "D-Mod-K Routing Providing Non-Blocking Traffic
//! for Shift Permutations on Real Life Fat Trees", 2010; what opensm's ftree engine does): the
//! `k`-th up hop takes digit `k` of the destination, `(dst div (n_0 ... n_(k-1))) mod n_k` of
//! its `n_k` up ports. A leaf takes `dst mod n_0`, an aggregation switch `(dst div n_0) mod
//! n_1`. One digit at every level would send all of an aggregation switch's cross-pod traffic
//! up one port (the leaf already chose the switch by that digit); another digit spreads it over
//! all of them. A two-level tree has one up hop, digit 0.

use super::{Level, NodeId, Peer, PortRef, SwitchId, Topology};

/// D-mod-K's choice among `count` up ports at a switch whose levels below offer `divisor`
/// combinations of up ports ([`Topology::up_digit_divisor`]): the destination's digit there.
/// The simulator's switches call this too, so that packets follow the reported routes.
#[inline]
pub(crate) fn dmodk(dst: u32, divisor: u32, count: u32) -> u32 {
    (dst / divisor) % count
}

impl Topology {
    /// The product of the up port counts of the levels below `switch` in the complete tree,
    /// the base of its D-mod-K digit: 1 at a leaf, a leaf's up ports at an aggregation switch
    /// (and at a core, which never goes up).
    pub(crate) fn up_digit_divisor(&self, switch: SwitchId) -> u32 {
        match self.level(switch) {
            Level::Leaf => 1,
            Level::Aggregation | Level::Core => self.leaf_up.max(1),
        }
    }

    /// The output port a packet for `dst` leaves `switch` by under deterministic routing:
    /// down where the switch has a down port towards `dst`, otherwise the D-mod-K choice among
    /// the up ports that lead on (every up port in a complete tree; those around missing links
    /// otherwise). `None` where no port leads to `dst`.
    pub fn deterministic_port(&self, switch: SwitchId, dst: NodeId) -> Option<u16> {
        if let Some(port) = self.down_port(switch, dst) {
            return Some(port);
        }
        let count = self.up_ports_towards(switch, dst).count() as u32;
        if count == 0 {
            return None;
        }
        let k = dmodk(dst.0, self.up_digit_divisor(switch), count);
        self.up_ports_towards(switch, dst).nth(k as usize)
    }

    /// The switch output ports a packet from `src` to `dst` leaves through, in order, under
    /// deterministic routing ([`Topology::deterministic_port`] at each switch). Empty when
    /// `src == dst`.
    pub fn deterministic_route(&self, src: NodeId, dst: NodeId) -> Vec<PortRef> {
        let mut route = Vec::new();
        if src == dst {
            return route;
        }
        let mut switch = self.leaf_of(src);
        // An up/down route crosses at most one switch per level each way.
        for _ in 0..=2 * self.diameter() {
            let port = self
                .deterministic_port(switch, dst)
                .expect("a routable tree has an up port towards every node");
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
    use std::collections::HashMap;

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
        let pairs = (0..nodes)
            .step_by(3)
            .flat_map(|src| (0..nodes).step_by(5).map(move |dst| (src, dst)));
        check_pairs(topology, pairs);
    }

    /// Every pair's deterministic route has the tree's length and is where the simulator's
    /// packets go.
    fn check_pairs(topology: &Topology, pairs: impl Iterator<Item = (u32, u32)>) {
        for (src, dst) in pairs.filter(|(s, d)| s != d) {
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
        // Table 3.1's `full` tree, where D-mod-K takes another digit at the aggregation
        // switches: pairs within a leaf, within a pod and across pods, whose destinations
        // differ in both digits (`dst mod 18`, `dst div 18 mod 18`).
        let sources = [0, 17, 400, 1800, 3563];
        let destinations = [1, 19, 350, 700, 2000, 2345, 3563];
        check_pairs(
            &Topology::full(),
            sources
                .into_iter()
                .flat_map(|s| destinations.map(move |d| (s, d))),
        );
    }

    /// On Table 3.1's `full` tree, the routes from every node of pod 0 to every node of pod
    /// 5 cross each of pod 0's 324 aggregation up ports equally often. Choosing `dst mod 18`
    /// at the aggregation switch as at the leaf crossed 18 of them: the leaf had already
    /// picked aggregation switch `a = dst mod 18`, whose choice was then always port `a`.
    #[test]
    fn cross_pod_routes_spread_over_every_aggregation_up_port() {
        let full = Topology::full();
        let pod_size = 18 * full.nodes_per_leaf();
        let pod = |p: u32| (p * pod_size..(p + 1) * pod_size).map(NodeId);
        let mut crossings: HashMap<PortRef, u32> = HashMap::new();
        for src in pod(0) {
            for dst in pod(5) {
                let route = full.deterministic_route(src, dst);
                assert_eq!(route.len(), 5, "{src:?} -> {dst:?}");
                let agg_up = route[1];
                assert_eq!(full.level(agg_up.switch), Level::Aggregation);
                assert_eq!(full.pod_of(agg_up.switch), Some(0));
                assert!(full.is_up(agg_up));
                *crossings.entry(agg_up).or_default() += 1;
            }
        }
        let pod_0_agg_ups: usize = full
            .switches_at(Level::Aggregation)
            .map(SwitchId)
            .filter(|&a| full.pod_of(a) == Some(0))
            .map(|a| full.up_ports(a).len())
            .sum();
        assert_eq!(pod_0_agg_ups, 324);
        assert_eq!(crossings.len(), pod_0_agg_ups);
        assert!(crossings.values().all(|&n| n == pod_size), "{crossings:?}");
    }

    /// A tree of one pod has one up hop, at the leaf, and takes digit 0 there: the
    /// aggregation switch a route turns at is `dst mod n` of the leaf's `n` up ports, as
    /// before D-mod-K.
    #[test]
    fn a_two_level_tree_goes_up_by_the_last_digit() {
        let two_level = Topology::new(FatTreeParams {
            name: "two-level".into(),
            radix: 16,
            nodes_per_leaf: 8,
            leaves: 16,
            leaves_per_pod: 16,
            aggs_per_pod: 8,
        })
        .unwrap();
        for src in (0..128).step_by(7).map(NodeId) {
            for dst in (0..128).filter(|d| d / 8 != src.0 / 8).map(NodeId) {
                let route = two_level.deterministic_route(src, dst);
                assert_eq!(route.len(), 3);
                assert_eq!(
                    u32::from(route[0].port),
                    8 + dst.0 % 8,
                    "{src:?} -> {dst:?}"
                );
            }
        }
    }

    #[test]
    fn the_route_follows_forwarding_tables_as_the_simulator_does() {
        let tree = Topology::new(FatTreeParams::radix8()).unwrap();
        // Tables that go up port `dst + 1 mod n` at every level, not D-mod-K's digits.
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
