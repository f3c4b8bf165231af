//! Incremental graph partitioning (thesis 4.2.2): a Kernighan-Lin variant for any number of
//! parts that improves an existing mapping (here row-major; in practice the mapping of a
//! previous run) by swapping ranks between two leaves, so every leaf keeps its number of
//! ranks and a valid mapping stays valid.
//!
//! For each part p1, take the part p2 it exchanges the most traffic with and run one
//! Kernighan-Lin pass on the pair [73]: repeatedly swap the unlocked pair (a in p1, b in p2)
//! of largest gain `D(a) + D(b) - 2 w(a, b)` (D(x): x's traffic to the other part minus to
//! its own), even a negative one, and lock both; then keep the prefix of swaps with the best
//! total gain, if positive. Taking negative steps is what lets it escape row-major, where no
//! single swap helps (turning two half-row leaves into two 16 x 2 blocks takes many swaps).
//! Rounds over all parts repeat until none improves: every kept prefix lowers the cut, so
//! this ends.

use super::graph::CommGraph;

/// Improves `parts` (part of each rank, `0..nparts`) in place.
pub(crate) fn kernighan_lin(graph: &CommGraph, parts: &mut [u32], nparts: usize) {
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); nparts];
    for (v, &p) in parts.iter().enumerate() {
        members[p as usize].push(v as u32);
    }
    let mut pass = Pass::new(graph.vertices());
    loop {
        let mut improved = false;
        for p1 in 0..nparts {
            let Some(p2) = busiest_partner(graph, parts, &members[p1], p1, &mut pass.scratch)
            else {
                continue;
            };
            let kept = pass.run(graph, parts, &members[p1], &members[p2]);
            for &(a, b) in &kept {
                parts[a as usize] = p2 as u32;
                parts[b as usize] = p1 as u32;
            }
            if !kept.is_empty() {
                for p in [p1, p2] {
                    members[p].retain(|&v| parts[v as usize] as usize == p);
                }
                members[p1].extend(kept.iter().map(|&(_, b)| b));
                members[p2].extend(kept.iter().map(|&(a, _)| a));
                improved = true;
            }
        }
        if !improved {
            return;
        }
    }
}

/// The other part that `p1`'s members exchange the most traffic with (lowest number on a
/// tie); `traffic` is a zeroed scratch array of at least `nparts` entries, left zeroed.
fn busiest_partner(
    graph: &CommGraph,
    parts: &[u32],
    p1_members: &[u32],
    p1: usize,
    traffic: &mut [i128],
) -> Option<usize> {
    let mut touched = Vec::new();
    for &v in p1_members {
        for (u, w) in graph.edges(v) {
            let p = parts[u as usize] as usize;
            if p != p1 {
                if traffic[p] == 0 {
                    touched.push(p);
                }
                traffic[p] += i128::from(w);
            }
        }
    }
    let best = touched
        .iter()
        .copied()
        .max_by_key(|&p| (traffic[p], std::cmp::Reverse(p)));
    for p in touched {
        traffic[p] = 0;
    }
    best
}

/// State of one two-way Kernighan-Lin pass, kept between passes to avoid reallocating.
struct Pass {
    /// D(x) of the ranks of the two parts; also scratch for [`busiest_partner`].
    scratch: Vec<i128>,
    locked: Vec<bool>,
}

impl Pass {
    fn new(vertices: usize) -> Self {
        Pass {
            scratch: vec![0; vertices],
            locked: vec![false; vertices],
        }
    }

    /// The best prefix of tentative swaps between parts `a_side` and `b_side` (a goes to
    /// b's part and b to a's), empty when no prefix gains.
    fn run(
        &mut self,
        graph: &CommGraph,
        parts: &[u32],
        a_side: &[u32],
        b_side: &[u32],
    ) -> Vec<(u32, u32)> {
        let (pa, pb) = (parts[a_side[0] as usize], parts[b_side[0] as usize]);
        let d = &mut self.scratch;
        for &x in a_side.iter().chain(b_side) {
            let own = parts[x as usize];
            let other = if own == pa { pb } else { pa };
            d[x as usize] = graph
                .edges(x)
                .map(|(u, w)| match parts[u as usize] {
                    p if p == other => i128::from(w),
                    p if p == own => -i128::from(w),
                    _ => 0,
                })
                .sum();
        }
        let mut sequence = Vec::new();
        let (mut total, mut best_total, mut best_len) = (0i128, 0i128, 0usize);
        while let Some((gain, a, b)) = best_pair(graph, d, &self.locked, a_side, b_side) {
            self.locked[a as usize] = true;
            self.locked[b as usize] = true;
            // a leaves its side for b's, and b the other way: the unlocked neighbours of each
            // gain or lose an inside edge.
            for (moved, from) in [(a, pa), (b, pb)] {
                for (x, w) in graph.edges(moved) {
                    let side = parts[x as usize];
                    if self.locked[x as usize] || (side != pa && side != pb) {
                        continue;
                    }
                    let w = 2 * i128::from(w);
                    d[x as usize] += if side == from { w } else { -w };
                }
            }
            sequence.push((a, b));
            total += gain;
            if total > best_total {
                (best_total, best_len) = (total, sequence.len());
            }
        }
        for &x in a_side.iter().chain(b_side) {
            self.locked[x as usize] = false;
            d[x as usize] = 0;
        }
        sequence.truncate(best_len);
        sequence
    }
}

/// The unlocked pair of largest gain (possibly negative), or `None` when a side is spent.
fn best_pair(
    graph: &CommGraph,
    d: &[i128],
    locked: &[bool],
    a_side: &[u32],
    b_side: &[u32],
) -> Option<(i128, u32, u32)> {
    let by_d = |side: &[u32]| {
        let mut free: Vec<(i128, u32)> = side
            .iter()
            .filter(|&&x| !locked[x as usize])
            .map(|&x| (d[x as usize], x))
            .collect();
        free.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)));
        free
    };
    let (a_free, b_free) = (by_d(a_side), by_d(b_side));
    let top_b = b_free.first()?.0;
    let mut best: Option<(i128, u32, u32)> = None;
    for &(da, a) in &a_free {
        // w(a, b) >= 0: once D(a) + the best D(b) cannot beat the best gain, nothing can.
        if best.is_some_and(|(g, _, _)| da + top_b <= g) {
            break;
        }
        for &(db, b) in &b_free {
            if best.is_some_and(|(g, _, _)| da + db <= g) {
                break;
            }
            let gain = da + db - 2 * i128::from(graph.weight(a, b));
            if best.map_or(true, |(g, _, _)| gain > g) {
                best = Some((gain, a, b));
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::{CommMatrix, Stencil, Workload};

    fn cut(graph: &CommGraph, parts: &[u32]) -> u64 {
        (0..parts.len() as u32)
            .flat_map(|v| graph.edges(v).map(move |(u, w)| (v, u, w)))
            .filter(|&(v, u, _)| parts[v as usize] != parts[u as usize])
            .map(|(_, _, w)| w)
            .sum()
    }

    #[test]
    fn swaps_lower_the_cut_and_keep_every_part_size() {
        // A 16 x 8 stencil in parts of 8 consecutive ranks: half rows, as row-major on
        // leaves of 8, where no single swap helps.
        let stencil = Workload::Stencil(Stencil {
            width: 16,
            height: 8,
            bytes: 1,
            rounds: 1,
            phase_ps: 0,
        });
        let graph = CommGraph::from_matrix(&stencil.matrix(1).unwrap());
        let mut parts: Vec<u32> = (0..128).map(|r| r / 8).collect();
        let before = cut(&graph, &parts);
        kernighan_lin(&graph, &mut parts, 16);
        assert!(
            cut(&graph, &parts) < before * 3 / 4,
            "{} vs {before}",
            cut(&graph, &parts)
        );
        for p in 0..16 {
            assert_eq!(parts.iter().filter(|&&q| q == p).count(), 8);
        }
    }

    #[test]
    fn a_partition_without_cut_is_left_alone() {
        // Two cliques of 4, each already in a part of its own.
        let messages = (0..8u32).flat_map(|a| {
            (0..8)
                .filter(move |&b| a != b && a / 4 == b / 4)
                .map(move |b| (a, b, 1))
        });
        let graph = CommGraph::from_matrix(&CommMatrix::from_messages(8, messages, 1));
        let mut parts = vec![0, 0, 0, 0, 1, 1, 1, 1];
        kernighan_lin(&graph, &mut parts, 2);
        assert_eq!(parts, vec![0, 0, 0, 0, 1, 1, 1, 1]);
    }
}
