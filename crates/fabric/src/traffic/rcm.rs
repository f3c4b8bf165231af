//! Reverse Cuthill-McKee (thesis 4.2.1, George and Liu [71] 4.5): renumber the ranks so that
//! communicating ranks get close numbers, i.e. the non-zeros of the adjacency matrix gather
//! near the diagonal. Placing rank number k on the k-th node then keeps partners close in
//! node numbers; but it ignores volumes and the leaf boundaries, which is why it does worse
//! than row-major on the stencil (Table 4.1).

use std::collections::VecDeque;

use super::graph::CommGraph;
use super::matrix::CommMatrix;

/// The ranks in reverse Cuthill-McKee order: `order[k]` is the rank that gets position k.
/// Each connected component starts at a pseudo-peripheral rank (George-Liu), components in
/// order of their lowest rank; ranks without traffic are components of their own.
pub fn reverse_cuthill_mckee(matrix: &CommMatrix) -> Vec<u32> {
    rcm_order(&CommGraph::from_matrix(matrix))
}

pub(crate) fn rcm_order(graph: &CommGraph) -> Vec<u32> {
    let n = graph.vertices();
    let mut placed = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let mut levels = LevelStructures::new(n);
    for seed in 0..n as u32 {
        if placed[seed as usize] {
            continue;
        }
        let start = levels.pseudo_peripheral(graph, seed);
        cuthill_mckee_from(graph, start, &mut placed, &mut order);
    }
    order.reverse();
    order
}

/// Breadth-first from `start`, visiting each rank's unplaced neighbours by increasing degree
/// (then number): the Cuthill-McKee order of one component, appended to `order`.
fn cuthill_mckee_from(graph: &CommGraph, start: u32, placed: &mut [bool], order: &mut Vec<u32>) {
    let mut queue = VecDeque::from([start]);
    placed[start as usize] = true;
    let mut next = Vec::new();
    while let Some(v) = queue.pop_front() {
        order.push(v);
        next.clear();
        next.extend(graph.neighbours(v).iter().filter(|&&u| !placed[u as usize]));
        next.sort_by_key(|&u| (graph.degree(u), u));
        for &u in &next {
            placed[u as usize] = true;
            queue.push_back(u);
        }
    }
}

/// Breadth-first level structures, sharing one visit mark array between searches (a
/// generation number per search) so that many small components stay linear in time.
struct LevelStructures {
    mark: Vec<u32>,
    generation: u32,
}

impl LevelStructures {
    fn new(vertices: usize) -> Self {
        LevelStructures {
            mark: vec![0; vertices],
            generation: 0,
        }
    }

    /// George-Liu: move to a least-degree rank of the last BFS level while that lengthens
    /// the level structure; the end is a rank of (nearly) maximal eccentricity.
    fn pseudo_peripheral(&mut self, graph: &CommGraph, seed: u32) -> u32 {
        let mut root = seed;
        let (mut depth, mut last_level) = self.structure(graph, root);
        loop {
            let candidate = *last_level
                .iter()
                .min_by_key(|&&u| (graph.degree(u), u))
                .expect("the last level is never empty");
            let (candidate_depth, candidate_last) = self.structure(graph, candidate);
            if candidate_depth <= depth {
                return root;
            }
            (root, depth, last_level) = (candidate, candidate_depth, candidate_last);
        }
    }

    /// Number of BFS levels from `root`, and the ranks of the last one.
    fn structure(&mut self, graph: &CommGraph, root: u32) -> (usize, Vec<u32>) {
        self.generation += 1;
        let generation = self.generation;
        self.mark[root as usize] = generation;
        let mut level = vec![root];
        let mut depth = 1;
        loop {
            let mut next = Vec::new();
            for &v in &level {
                for &u in graph.neighbours(v) {
                    if self.mark[u as usize] != generation {
                        self.mark[u as usize] = generation;
                        next.push(u);
                    }
                }
            }
            if next.is_empty() {
                return (depth, level);
            }
            level = next;
            depth += 1;
        }
    }
}
