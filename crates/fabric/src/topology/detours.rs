//! A fat tree with some of its switch-to-switch cables missing, as a real fabric runs with a
//! cable unplugged or failed. Routing stays up/down (thesis 3.5) over the cables that are
//! there: a packet goes up only to a switch from which its destination leaf can still be
//! reached, and a switch on the way down picks, among the links the complete tree would
//! choose from, the first present one that leads on to the destination. Paths keep their
//! length (1, 3 or 5 hops); a fabric in which some pair of leaves could only be joined by a
//! longer path is refused ([`super::TopologyError::Cut`]).

use super::{Level, NodeId, Peer, PortIndex, PortRef, SwitchId, Topology, TopologyError};

/// The missing links of a tree and what they leave reachable.
#[derive(Clone, Debug)]
pub(super) struct Detours {
    /// Per output port ([`PortIndex`]): the link is absent. Both directions of a missing
    /// cable are.
    absent: Vec<bool>,
    /// Per (switch, leaf), at `switch * leaves + leaf`: a packet at this aggregation or core
    /// switch reaches the leaf by up/down routing from here (down only within the leaf's pod;
    /// up to a core and down again from an aggregation switch of another pod).
    reaches: Vec<bool>,
}

impl Topology {
    /// The tree with the links at `missing` (switch output ports, one end of each missing
    /// cable) and their reverse directions absent. Refuses a port that leads to a node (a
    /// leaf port without a host is a free node, not a missing cable) and a tree in which some
    /// pair of leaves is no longer joined by an up/down path of the usual length.
    pub fn without_links(mut self, missing: &[PortRef]) -> Result<Topology, TopologyError> {
        if missing.is_empty() {
            return Ok(self);
        }
        let mut absent = vec![false; self.num_ports()];
        for &port in missing {
            match self.peer(port) {
                Peer::Switch { switch, port: back } => {
                    absent[self.port_index(port) as usize] = true;
                    absent[self.port_index(PortRef { switch, port: back }) as usize] = true;
                }
                Peer::Node(node) => {
                    return Err(TopologyError::NodeLinkMissing {
                        tree: self.params.name.clone(),
                        node: node.0,
                    })
                }
            }
        }
        self.detours = Some(Box::new(Detours {
            absent,
            reaches: Vec::new(),
        }));
        let reaches = self.reachability();
        self.detours.as_mut().expect("set above").reaches = reaches;
        for from in 0..self.num_leaves() {
            for to in (0..self.num_leaves()).filter(|&to| to != from) {
                if self.up_towards_leaf(SwitchId(from), to).next().is_none() {
                    return Err(TopologyError::Cut {
                        tree: self.params.name.clone(),
                        from: SwitchId(from),
                        to: SwitchId(to),
                    });
                }
            }
        }
        Ok(self)
    }

    /// Whether every link of the tree is there (no [`Topology::without_links`]).
    pub fn is_complete(&self) -> bool {
        self.detours.is_none()
    }

    /// Whether the link out of `port` is absent (a missing cable of a real fabric).
    pub fn is_absent(&self, port: PortRef) -> bool {
        self.detours
            .as_ref()
            .is_some_and(|d| d.absent[self.port_index(port) as usize])
    }

    /// The absent links, one [`PortIndex`] per direction, ascending.
    pub fn absent_links(&self) -> Vec<PortIndex> {
        self.detours.as_ref().map_or_else(Vec::new, |d| {
            (0..d.absent.len() as PortIndex)
                .filter(|&i| d.absent[i as usize])
                .collect()
        })
    }

    /// The up ports of `switch` that lead towards `dst`: every up port in a complete tree;
    /// without the absent links and those whose far switch no longer reaches `dst`'s leaf;
    /// the one the forwarding tables name, where they route the tree.
    pub fn up_ports_towards(
        &self,
        switch: SwitchId,
        dst: NodeId,
    ) -> impl Iterator<Item = u16> + '_ {
        let forwarded = self.forwarded(switch, dst);
        // A graph's routing gives one port ([`Topology::down_port`]), never a choice up.
        let by_rule = forwarded.is_none() && !self.is_graph();
        forwarded
            .filter(|&port| self.is_up(PortRef { switch, port }))
            .into_iter()
            .chain(
                self.up_towards_leaf(switch, self.leaf_of(dst).0)
                    .filter(move |_| by_rule),
            )
    }

    fn up_towards_leaf(&self, switch: SwitchId, leaf: u32) -> impl Iterator<Item = u16> + '_ {
        self.up_ports(switch).filter(move |&port| {
            let here = PortRef { switch, port };
            match (&self.detours, self.peer(here)) {
                (None, _) => true,
                (Some(d), Peer::Switch { switch: far, .. }) => {
                    !d.absent[self.port_index(here) as usize]
                        && d.reaches[(far.0 * self.num_leaves() + leaf) as usize]
                }
                (Some(_), Peer::Node(_)) => false,
            }
        })
    }

    /// The down port towards `dst` once links are missing: the complete tree's own choice
    /// when it is present and leads on; otherwise one of the other ports the complete tree
    /// chooses among (parallel links to the leaf, the aggregation switches of a core's group
    /// in the destination pod) that do, by the destination's next digit. The destinations of
    /// a missing link are so spread over the links left, as a subnet manager balances the
    /// routes it assigns (opensm gives each LID the least used of the equal ports); all of
    /// them on the next link would load it twice as much as the others (a healthy fabric
    /// with one missing cable congested at 0.3 uniform load). `None` when no port leads on
    /// (no route uses this switch then).
    pub(super) fn detour_down(&self, switch: SwitchId, dst: NodeId, chosen: u16) -> Option<u16> {
        let d = self.detours.as_ref()?;
        let (first, count) = match self.level(switch) {
            Level::Leaf => return Some(chosen),
            Level::Aggregation => {
                let links = self.links_per_pair as u16;
                (chosen - chosen % links, links)
            }
            Level::Core => {
                let m = self.aggs_per_core_per_pod as u16;
                (chosen - chosen % m, m)
            }
        };
        let leaf = self.leaf_of(dst).0;
        let leads_on = |port: u16| {
            let here = PortRef { switch, port };
            !d.absent[self.port_index(here) as usize]
                && match self.peer(here) {
                    Peer::Switch { switch: far, .. } => {
                        self.level(far) == Level::Leaf && far.0 == leaf
                            || d.reaches[(far.0 * self.num_leaves() + leaf) as usize]
                    }
                    Peer::Node(_) => true,
                }
        };
        if leads_on(chosen) {
            return Some(chosen);
        }
        // The complete tree chose by `dst mod count`; the digit above it spreads the
        // destinations of the missing port over those left.
        let left: Vec<u16> = (first..first + count).filter(|&p| leads_on(p)).collect();
        let digit = (dst.0 / u32::from(count)) as usize;
        (!left.is_empty()).then(|| left[digit % left.len()])
    }

    /// Per (switch, leaf): reached by up/down routing from that aggregation or core switch
    /// over the links that are present. Aggregation switches of the leaf's pod reach it down
    /// one of their links to it; a core through an aggregation switch of its group there;
    /// an aggregation switch of another pod up through such a core.
    fn reachability(&self) -> Vec<bool> {
        let leaves = self.num_leaves();
        let mut reaches = vec![false; (self.num_switches() * leaves) as usize];
        let present = |switch: SwitchId, port: u16| !self.is_absent(PortRef { switch, port });
        let far = |switch: SwitchId, port: u16| match self.peer(PortRef { switch, port }) {
            Peer::Switch { switch, .. } => switch,
            Peer::Node(_) => unreachable!("aggregation and core ports lead to switches"),
        };
        let lpp = self.params.leaves_per_pod;
        for a in self.switches_at(Level::Aggregation) {
            let agg = SwitchId(a);
            let pod = self.pod_of(agg).expect("aggregation pod");
            for leaf in pod * lpp..(pod + 1) * lpp {
                let first = ((leaf % lpp) * self.links_per_pair) as u16;
                reaches[(a * leaves + leaf) as usize] =
                    (first..first + self.links_per_pair as u16).any(|port| present(agg, port));
            }
        }
        let m = self.aggs_per_core_per_pod as u16;
        for c in self.switches_at(Level::Core) {
            let core = SwitchId(c);
            for leaf in 0..leaves {
                let pod = (leaf / lpp) as u16;
                reaches[(c * leaves + leaf) as usize] = (pod * m..(pod + 1) * m).any(|port| {
                    present(core, port) && reaches[(far(core, port).0 * leaves + leaf) as usize]
                });
            }
        }
        for a in self.switches_at(Level::Aggregation) {
            let agg = SwitchId(a);
            let pod = self.pod_of(agg).expect("aggregation pod");
            for leaf in (0..leaves).filter(|&leaf| leaf / lpp != pod) {
                reaches[(a * leaves + leaf) as usize] = self.up_ports(agg).any(|port| {
                    present(agg, port) && reaches[(far(agg, port).0 * leaves + leaf) as usize]
                });
            }
        }
        reaches
    }

    /// [`Topology::candidate_ports`] once links are missing: the ports routing can use from
    /// `src` to `dst`, level by level from the source leaf.
    pub(super) fn routed_ports(&self, src: NodeId, dst: NodeId, out: &mut Vec<PortIndex>) {
        let mut at = vec![self.leaf_of(src)];
        let mut next = Vec::new();
        while !at.is_empty() {
            for &switch in &at {
                let ports: Vec<u16> = match self.down_port(switch, dst) {
                    Some(port) => vec![port],
                    None => self.up_ports_towards(switch, dst).collect(),
                };
                for port in ports {
                    let here = PortRef { switch, port };
                    out.push(self.port_index(here));
                    if let Peer::Switch { switch: far, .. } = self.peer(here) {
                        next.push(far);
                    }
                }
            }
            next.sort_unstable();
            next.dedup();
            std::mem::swap(&mut at, &mut next);
            next.clear();
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::topology::FatTreeParams;

    fn port(switch: u32, port: u16) -> PortRef {
        PortRef {
            switch: SwitchId(switch),
            port,
        }
    }

    /// Follows routing from `src` to `dst`, taking the `pick`-th usable up port each time,
    /// and returns the hops, asserting every link used is present and a candidate.
    pub(in crate::topology) fn walk(t: &Topology, src: u32, dst: u32, pick: usize) -> u32 {
        let (src, dst) = (NodeId(src), NodeId(dst));
        let mut candidates = Vec::new();
        t.candidate_ports(src, dst, &mut candidates);
        let mut switch = t.leaf_of(src);
        let mut hops = 0;
        loop {
            let port = match t.down_port(switch, dst) {
                Some(p) => p,
                None => {
                    let up: Vec<u16> = t.up_ports_towards(switch, dst).collect();
                    assert!(!up.is_empty(), "{src:?} -> {dst:?} stuck at {switch:?}");
                    up[pick % up.len()]
                }
            };
            let here = PortRef { switch, port };
            assert!(
                !t.is_absent(here),
                "{src:?} -> {dst:?} crosses absent {here:?}"
            );
            assert!(candidates.contains(&t.port_index(here)));
            hops += 1;
            match t.peer(here) {
                Peer::Node(n) => {
                    assert_eq!(n, dst);
                    return hops;
                }
                Peer::Switch { switch: far, .. } => switch = far,
            }
        }
    }

    /// Every pair still reaches its destination in the complete tree's number of hops, over
    /// present links only, whichever up port is taken, with one cable missing at each level.
    #[test]
    fn routing_goes_around_a_missing_cable_at_every_level() {
        let complete = Topology::new(FatTreeParams::radix8()).unwrap();
        let leaf_up = port(0, 4);
        let first_agg = complete.switches_at(Level::Aggregation).start;
        let agg_up = port(first_agg, 2);
        for missing in [vec![leaf_up], vec![agg_up], vec![leaf_up, agg_up]] {
            let t = complete.clone().without_links(&missing).unwrap();
            assert_eq!(t.absent_links().len(), 2 * missing.len());
            for src in 0..t.num_nodes() {
                for dst in 0..t.num_nodes() {
                    for pick in 0..3 {
                        let hops = walk(&t, src, dst, pick);
                        assert_eq!(hops, t.hops(NodeId(src), NodeId(dst)));
                    }
                }
            }
        }
    }

    /// The complete tree's candidate sets are what routing can use: the general walk of
    /// `routed_ports` lists the same ports.
    #[test]
    fn the_candidate_formula_agrees_with_the_routing_walk() {
        let t = Topology::new(FatTreeParams::radix8()).unwrap();
        let (mut formula, mut walked) = (Vec::new(), Vec::new());
        for (src, dst) in [(0, 127), (0, 5), (0, 1), (17, 90)] {
            formula.clear();
            walked.clear();
            t.candidate_ports(NodeId(src), NodeId(dst), &mut formula);
            t.routed_ports(NodeId(src), NodeId(dst), &mut walked);
            formula.sort_unstable();
            walked.sort_unstable();
            assert_eq!(formula, walked, "{src} -> {dst}");
        }
    }

    /// The destinations of a missing link between an aggregation switch and a leaf are
    /// spread over the parallel links left: 6 nodes a leaf over 3 links, one missing, are 3
    /// and 3, where taking the next link gave it 4 and the other 2.
    #[test]
    fn a_missing_parallel_links_destinations_spread_over_those_left() {
        let complete = Topology::new(FatTreeParams {
            name: "lpp3".into(),
            radix: 12,
            nodes_per_leaf: 6,
            leaves: 4,
            leaves_per_pod: 4,
            aggs_per_pod: 2,
        })
        .unwrap();
        let agg = complete.switches_at(Level::Aggregation).start;
        // Aggregation ports 0..3 lead to leaf 0; port 2 is missing.
        let t = complete.without_links(&[port(agg, 2)]).unwrap();
        let mut per_port = [0; 3];
        for dst in 0..6 {
            let p = t.down_port(SwitchId(agg), NodeId(dst)).unwrap();
            per_port[usize::from(p)] += 1;
        }
        assert_eq!(per_port, [3, 3, 0]);
        for src in 6..t.num_nodes() {
            for dst in 0..6 {
                assert_eq!(walk(&t, src, dst, 0), 3);
            }
        }
    }

    /// A leaf whose only cables up are gone cannot be reached by an up/down path: refused,
    /// naming the leaves; a cable to a node is not a missing cable.
    #[test]
    fn a_cut_off_leaf_is_refused() {
        let t = Topology::new(FatTreeParams::radix8()).unwrap();
        let all_up: Vec<PortRef> = (4..8).map(|p| port(0, p)).collect();
        let e = t.clone().without_links(&all_up).unwrap_err();
        assert!(
            matches!(e, TopologyError::Cut { from, .. } if from == SwitchId(0)),
            "{e}"
        );
        let e = t.without_links(&[port(0, 0)]).unwrap_err();
        assert!(
            matches!(e, TopologyError::NodeLinkMissing { node: 0, .. }),
            "{e}"
        );
    }
}
