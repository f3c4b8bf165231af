//! The communication graph: the matrix made undirected, as reverse Cuthill-McKee (its
//! adjacency, 4.2.1) and graph partitioning (edge weights = traffic volume, 4.2.2) see it.

use std::collections::BTreeMap;

use super::matrix::CommMatrix;

/// Undirected, weighted, in compressed rows: the neighbours of `v` are
/// `targets[offsets[v]..offsets[v + 1]]`, in increasing order.
pub(crate) struct CommGraph {
    offsets: Vec<usize>,
    targets: Vec<u32>,
    /// Packets both ways between the two ranks.
    weights: Vec<u64>,
}

impl CommGraph {
    pub fn from_matrix(matrix: &CommMatrix) -> Self {
        let mut edges: BTreeMap<(u32, u32), u64> = BTreeMap::new();
        for flow in matrix.flows() {
            *edges.entry((flow.src, flow.dst)).or_default() += flow.packets;
            *edges.entry((flow.dst, flow.src)).or_default() += flow.packets;
        }
        let mut offsets = vec![0; matrix.ranks() as usize + 1];
        for &(v, _) in edges.keys() {
            offsets[v as usize + 1] += 1;
        }
        for v in 0..matrix.ranks() as usize {
            offsets[v + 1] += offsets[v];
        }
        // BTreeMap order is by (v, neighbour), exactly the compressed-row order.
        let (targets, weights) = edges.into_iter().map(|((_, u), w)| (u, w)).unzip();
        CommGraph {
            offsets,
            targets,
            weights,
        }
    }

    pub fn vertices(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn degree(&self, v: u32) -> usize {
        self.offsets[v as usize + 1] - self.offsets[v as usize]
    }

    /// (neighbour, weight) of every edge at `v`.
    pub fn edges(&self, v: u32) -> impl Iterator<Item = (u32, u64)> + '_ {
        let range = self.offsets[v as usize]..self.offsets[v as usize + 1];
        self.targets[range.clone()]
            .iter()
            .copied()
            .zip(self.weights[range].iter().copied())
    }

    /// Weight of the edge between `a` and `b`, 0 when they do not communicate.
    pub fn weight(&self, a: u32, b: u32) -> u64 {
        let start = self.offsets[a as usize];
        self.neighbours(a)
            .binary_search(&b)
            .map_or(0, |i| self.weights[start + i])
    }

    pub fn neighbours(&self, v: u32) -> &[u32] {
        &self.targets[self.offsets[v as usize]..self.offsets[v as usize + 1]]
    }

    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }

    pub fn targets(&self) -> &[u32] {
        &self.targets
    }

    pub fn weights(&self) -> &[u64] {
        &self.weights
    }
}
