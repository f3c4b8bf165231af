//! The set D of algorithm 7 line 2 for each delivered packet: the ports a packet from `src` to
//! `dst` may have crossed (thesis 5.2, 5.5: updating only those is what makes the 1-bit
//! estimates usable), from [`Topology::candidate_ports`], cached.
//!
//! Fat-tree routes go up, then down. The up ports of D depend on the source only through its
//! leaf, the down ports only on the destination, once it is known whether the two share a leaf,
//! a pod or neither. So D is cached as two halves, per (source leaf, reach) and per
//! (destination, reach): a few MiB on the largest trees, whatever the traffic pattern, where
//! whole sets per (leaf, destination) pair would take gigabytes for an all-to-all.
//!
//! Where routes depend on the destination itself (a graph simulated as cabled, a subnet
//! manager's tables, a tree with missing cables), the halves would mix the paths of
//! different destinations: D is then cached whole per (source leaf, destination) pair that
//! occurs, the one path its routing gives.

use std::collections::HashMap;

use super::hash::port_key;
use crate::topology::{NodeId, PortIndex, Topology};

/// A candidate port with its hash key `d` (thesis 5.4), so the receiver's vote loop reads one
/// table.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub(crate) index: PortIndex,
    pub(crate) key: u32,
}

/// How far apart source and destination are; D's shape depends on it.
#[derive(Copy, Clone)]
enum Reach {
    SameLeaf,
    SamePod,
    OtherPod,
}

const REACHES: usize = 3;

pub(crate) struct CandidateSets {
    /// Up half by `source leaf * REACHES + reach`.
    up: Vec<Option<Box<[Candidate]>>>,
    /// Down half by `destination * REACHES + reach`.
    down: Vec<Option<Box<[Candidate]>>>,
    scratch: Vec<PortIndex>,
    /// Whole sets by (source leaf, destination), with the index where the down half starts,
    /// where routes depend on the destination; `None` on a tree routed by its own rules.
    exact: Option<HashMap<(u32, u32), SplitSet>>,
}

/// A whole candidate set, and the index where its down half starts.
type SplitSet = (Box<[Candidate]>, usize);

impl CandidateSets {
    pub(crate) fn new(topology: &Topology) -> Self {
        CandidateSets {
            up: vec![None; topology.num_leaves() as usize * REACHES],
            down: vec![None; topology.num_nodes() as usize * REACHES],
            scratch: Vec::new(),
            exact: (topology.is_graph() || topology.has_forwarding() || !topology.is_complete())
                .then(HashMap::new),
        }
    }

    /// The ports of `scratch` as candidates, and where the down half starts (the first port
    /// that does not lead up).
    fn split(topology: &Topology, scratch: &[PortIndex]) -> SplitSet {
        let set = scratch
            .iter()
            .map(|&index| Candidate {
                index,
                key: port_key(topology.port_ref(index)),
            })
            .collect();
        let split = scratch
            .iter()
            .position(|&index| !topology.is_up(topology.port_ref(index)))
            .unwrap_or(scratch.len());
        (set, split)
    }

    /// D for a packet from `src` to `dst`, as its up half and its down half (path order).
    pub(crate) fn get(
        &mut self,
        topology: &Topology,
        src: NodeId,
        dst: NodeId,
    ) -> (&[Candidate], &[Candidate]) {
        let (src_leaf, dst_leaf) = (topology.leaf_of(src), topology.leaf_of(dst));
        if let Some(exact) = &mut self.exact {
            let scratch = &mut self.scratch;
            let (set, split) = exact.entry((src_leaf.0, dst.0)).or_insert_with(|| {
                scratch.clear();
                topology.candidate_ports(src, dst, scratch);
                Self::split(topology, scratch)
            });
            return (&set[..*split], &set[*split..]);
        }
        let reach = if src_leaf == dst_leaf {
            Reach::SameLeaf
        } else if topology.pod_of(src_leaf) == topology.pod_of(dst_leaf) {
            Reach::SamePod
        } else {
            Reach::OtherPod
        };
        let up = src_leaf.0 as usize * REACHES + reach as usize;
        let down = dst.0 as usize * REACHES + reach as usize;
        if self.up[up].is_none() || self.down[down].is_none() {
            self.scratch.clear();
            topology.candidate_ports(src, dst, &mut self.scratch);
            let (set, split) = Self::split(topology, &self.scratch);
            self.up[up] = Some(set[..split].into());
            self.down[down] = Some(set[split..].into());
        }
        let up = self.up[up].as_deref().expect("filled above");
        let down = self.down[down].as_deref().expect("filled above");
        (up, down)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::FatTreeParams;

    /// The halves, filled by whichever pair came first, always rebuild the exact set D of the
    /// pair asked for: every pair of the radix-8 tree, of the tree without two of its cables,
    /// and of a ring simulated as cabled (whose D, one path, depends on the destination), and
    /// a sample of the big trees.
    #[test]
    fn halves_rebuild_every_candidate_set() {
        let small = Topology::new(FatTreeParams::radix8()).unwrap();
        let pairs_of = |t: &Topology| {
            let nodes = t.num_nodes();
            (0..nodes)
                .flat_map(|s| (0..nodes).map(move |d| (s, d)))
                .collect::<Vec<_>>()
        };
        let all_pairs = pairs_of(&small);
        let agg = crate::topology::SwitchId(small.num_leaves());
        let missing = [
            crate::topology::PortRef {
                switch: crate::topology::SwitchId(0),
                port: 4,
            },
            crate::topology::PortRef {
                switch: agg,
                port: small.up_ports(agg).start,
            },
        ];
        let cut = small.clone().without_links(&missing).unwrap();
        let ring = crate::topology::graph::tests::ring(5, 2);
        let (ring, _) = Topology::graph(&ring, crate::topology::Engine::MinHop).unwrap();
        let (cut_pairs, ring_pairs) = (pairs_of(&cut), pairs_of(&ring));
        let full = Topology::full();
        let sample = (0..4000u32)
            .map(|i| ((i * 7919) % 3564, (i * 104_729 + 13) % 3564))
            .collect::<Vec<_>>();
        for (topology, pairs) in [
            (&small, all_pairs),
            (&cut, cut_pairs),
            (&ring, ring_pairs),
            (&full, sample),
        ] {
            let mut sets = CandidateSets::new(topology);
            let mut expected = Vec::new();
            for (src, dst) in pairs {
                let (src, dst) = (NodeId(src), NodeId(dst));
                expected.clear();
                topology.candidate_ports(src, dst, &mut expected);
                let (up, down) = sets.get(topology, src, dst);
                let got: Vec<PortIndex> = up.iter().chain(down).map(|c| c.index).collect();
                assert_eq!(got, expected, "{src:?} -> {dst:?}");
                for c in up.iter().chain(down) {
                    assert_eq!(c.key, port_key(topology.port_ref(c.index)));
                }
            }
        }
    }
}
