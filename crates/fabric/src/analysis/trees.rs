//! Congestion trees (thesis 4.1): when a link is oversubscribed, queues fill at its source,
//! the links feeding that source slow down and congest in turn, and congestion spreads
//! upstream in a tree whose root is where it starts. A root is a congested link whose far end
//! forwards the traffic onwards without (comparable) congestion: a compute node (endpoint
//! congestion), or a switch none of whose onward ports is comparably congested.
//!
//! Traffic in a fat tree goes up, then down (up*/down* routing): what arrives at a switch over
//! a down link can only leave by a down port, and what arrives over an up link from switch `u`
//! can leave by any port except those back to `u`. The same rule, read backwards, says which
//! links feed a tree link.

use std::collections::VecDeque;

use super::view::LinkView;
use crate::topology::{Peer, PortIndex, PortRef, Topology};

/// One congestion tree: its root link and every congested link that drains into it.
#[derive(Clone, Debug, PartialEq)]
pub struct CongestionTree {
    pub root: PortIndex,
    /// The root first, then the others by distance from it.
    pub links: Vec<PortIndex>,
    /// Sum of the congested weighted counts of the tree's links: how much congestion it holds.
    pub congested_count: f64,
}

/// Whether traffic that crossed `into` (arriving at `onward.switch`) may leave through
/// `onward` under up*/down* routing.
pub(super) fn may_continue(topology: &Topology, into: PortRef, onward: PortRef) -> bool {
    if !topology.is_up(into) {
        return !topology.is_up(onward);
    }
    match topology.peer(onward) {
        Peer::Switch { switch, .. } => switch != into.switch,
        Peer::Node(_) => true,
    }
}

/// The ports of the switch at the far end of `port` (none for a compute node).
pub(super) fn far_end_ports(topology: &Topology, port: PortRef) -> Vec<PortRef> {
    match topology.peer(port) {
        Peer::Node(_) => Vec::new(),
        Peer::Switch { switch, .. } => (0..topology.ports(switch))
            .map(|p| PortRef { switch, port: p })
            .collect(),
    }
}

/// The links arriving at the switch `port` leaves from that may feed it.
pub(super) fn feeders(topology: &Topology, port: PortRef) -> impl Iterator<Item = PortRef> + '_ {
    (0..topology.ports(port.switch)).filter_map(move |p| {
        match topology.peer(PortRef {
            switch: port.switch,
            port: p,
        }) {
            Peer::Switch { switch, port: back } => {
                let into = PortRef { switch, port: back };
                may_continue(topology, into, port).then_some(into)
            }
            Peer::Node(_) => None,
        }
    })
}

/// Every congested link belongs to exactly one tree. Congestion spreads upstream from a link
/// only to the congested links feeding it that are at most `1 / upstream_ratio` times as
/// congested: a link held up by a blocked link after it can be congested only while that
/// link's queue is full, so one far more congested than every congested link after it is
/// oversubscribed in its own right, and a tree starts there (thesis 4.1: the root is the
/// oversubscribed link). Each tree grows from its root upstream, breadth first from all roots
/// at once, so that a link two trees could claim goes to the nearer root (ties to the root
/// holding more congestion). Trees are returned largest `congested_count` first.
pub fn congestion_trees(
    topology: &Topology,
    view: &LinkView,
    is_congested: impl Fn(PortIndex) -> bool,
    upstream_ratio: f64,
) -> Vec<CongestionTree> {
    let fraction = |e: PortIndex| view.link(e).congested_fraction;
    // Whether congestion at `onward` explains congestion at `into`, which feeds it.
    let spreads = |into: PortIndex, onward: PortIndex| {
        is_congested(onward) && fraction(onward) >= upstream_ratio * fraction(into)
    };
    let ports = topology.num_ports();
    let mut roots: Vec<PortIndex> = (0..ports as PortIndex)
        .filter(|&e| is_congested(e))
        .filter(|&e| {
            let port = topology.port_ref(e);
            !far_end_ports(topology, port).into_iter().any(|onward| {
                may_continue(topology, port, onward) && spreads(e, topology.port_index(onward))
            })
        })
        .collect();
    roots.sort_by(|&a, &b| view.link(b).congested.total_cmp(&view.link(a).congested));
    let mut owner: Vec<Option<usize>> = vec![None; ports];
    let mut queue = VecDeque::new();
    for (tree, &root) in roots.iter().enumerate() {
        owner[root as usize] = Some(tree);
        queue.push_back(root);
    }
    let mut trees: Vec<CongestionTree> = roots
        .iter()
        .map(|&root| CongestionTree {
            root,
            links: Vec::new(),
            congested_count: 0.0,
        })
        .collect();
    while let Some(e) = queue.pop_front() {
        let tree = owner[e as usize].expect("queued links have an owner");
        trees[tree].links.push(e);
        trees[tree].congested_count += view.link(e).congested;
        for feeder in feeders(topology, topology.port_ref(e)) {
            let f = topology.port_index(feeder);
            if owner[f as usize].is_none() && is_congested(f) && spreads(f, e) {
                owner[f as usize] = Some(tree);
                queue.push_back(f);
            }
        }
    }
    trees.sort_by(|a, b| b.congested_count.total_cmp(&a.congested_count));
    trees
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::view::{Direction, LinkStats, SampleSet, Source, TimeBase};
    use crate::topology::{FatTreeParams, Level, SwitchId};

    fn radix8() -> Topology {
        Topology::new(FatTreeParams::radix8()).unwrap()
    }

    #[test]
    fn down_traffic_stays_down_and_up_traffic_never_returns() {
        let t = radix8();
        let leaf = SwitchId(0);
        let up = PortRef {
            switch: leaf,
            port: 4,
        };
        let Peer::Switch { switch: agg, .. } = t.peer(up) else {
            panic!("leaf up port reaches a switch")
        };
        assert_eq!(t.level(agg), Level::Aggregation);
        for p in 0..t.ports(agg) {
            let onward = PortRef {
                switch: agg,
                port: p,
            };
            let back_to_leaf = t.peer(onward)
                == Peer::Switch {
                    switch: leaf,
                    port: 4,
                };
            assert_eq!(may_continue(&t, up, onward), !back_to_leaf);
        }
        // Arriving at a leaf from above: only the node ports.
        let down = PortRef {
            switch: agg,
            port: 0,
        };
        let Peer::Switch { switch: leaf0, .. } = t.peer(down) else {
            panic!()
        };
        let onward: Vec<_> = far_end_ports(&t, down)
            .into_iter()
            .filter(|&p| may_continue(&t, down, p))
            .collect();
        assert_eq!(onward.len(), t.nodes_per_leaf() as usize);
        assert!(onward.iter().all(|p| p.switch == leaf0 && !t.is_up(*p)));
    }

    /// A view of the radix-8 tree where every port carries 100 packets and `congested` gives
    /// the congested fraction of some.
    fn view_with(t: &Topology, congested: &[(PortRef, f64)]) -> LinkView {
        let links = (0..t.num_ports() as PortIndex)
            .map(|index| {
                let port = t.port_ref(index);
                let f = congested
                    .iter()
                    .find(|(p, _)| *p == port)
                    .map_or(0.0, |&(_, f)| f);
                LinkStats {
                    port,
                    index,
                    level: t.level(port.switch),
                    direction: if t.is_up(port) {
                        Direction::Up
                    } else {
                        Direction::Down
                    },
                    endpoint: None,
                    count: 100.0,
                    count_sd: 0.0,
                    tagged_count: 100.0,
                    congested: 100.0 * f,
                    congested_sd: 0.0,
                    congested_fraction: f,
                    congested_fraction_sd: 0.0,
                    gbps: 0.0,
                }
            })
            .collect();
        LinkView {
            samples: SampleSet {
                source: Source::GroundTruth,
                telemetry: None,
                jobs: Vec::new(),
                all_jobs: true,
                window: None,
                time_base: TimeBase::WindowWidth,
                span_ps: 1,
            },
            total_jobs: 1,
            link_gbps: 100.0,
            links,
        }
    }

    /// Leaf 1 sends up to aggregation 32, which sends down to leaf 0 and on to node 0.
    #[test]
    fn congestion_spreads_only_from_a_comparably_congested_link() {
        let t = radix8();
        let (up, down, node) = (
            PortRef {
                switch: SwitchId(1),
                port: 4,
            },
            PortRef {
                switch: SwitchId(32),
                port: 0,
            },
            t.node_port(crate::topology::NodeId(0)),
        );
        let trees = |fractions: &[(PortRef, f64)]| {
            let view = view_with(&t, fractions);
            congestion_trees(&t, &view, |e| view.link(e).congested_fraction >= 0.25, 0.5)
                .into_iter()
                .map(|tree| {
                    tree.links
                        .iter()
                        .map(|&e| t.port_ref(e))
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
        };
        // A tree rooted at the node, spreading up as far as the leaf's up link.
        assert_eq!(
            trees(&[(node, 0.99), (down, 0.9), (up, 0.6)]),
            vec![vec![node, down, up]]
        );
        // The up link is far more congested than anything after it: a root of its own.
        assert_eq!(
            trees(&[(node, 0.3), (down, 0.3), (up, 0.8)]),
            vec![vec![up], vec![node, down]]
        );
    }

    #[test]
    fn feeders_of_a_node_port_are_every_link_into_the_leaf() {
        let t = radix8();
        let node_port = t.node_port(crate::topology::NodeId(0));
        let feeders: Vec<_> = feeders(&t, node_port).collect();
        // The leaf's 4 up links, seen from the aggregation switches' down ports.
        assert_eq!(feeders.len(), 4);
        assert!(feeders
            .iter()
            .all(|f| t.level(f.switch) == Level::Aggregation && !t.is_up(*f)));
    }
}
