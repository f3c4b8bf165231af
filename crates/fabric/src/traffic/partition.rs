//! Graph partitioning with METIS (thesis 4.2.2): vertices are ranks, edge weights the
//! traffic between them, parts the leaves. METIS' multilevel recursive bisection balances
//! parts only approximately (the thesis saw 14 leaves get 33 ranks), while a leaf has a fixed
//! number of nodes, so a post-processing step moves ranks out of over-full parts, as the
//! thesis did.

use metis::{Graph, Idx};

use super::graph::CommGraph;
use super::TrafficError;

/// METIS sums edge weights in `Idx` (32 bits); weights are scaled down to keep the total
/// well inside it.
const WEIGHT_BUDGET: u64 = 1 << 30;

/// Partitions `graph` into `capacities.len()` parts of exactly those sizes (which sum to the
/// number of vertices): the part of each rank.
pub(crate) fn metis_parts(
    graph: &CommGraph,
    capacities: &[usize],
    seed: u64,
) -> Result<Vec<u32>, TrafficError> {
    let metis_failed =
        |e: &dyn std::fmt::Display| TrafficError::Unfit(format!("METIS failed: {e}"));
    let to_idx = |x: usize| Idx::try_from(x).map_err(|_| metis_failed(&"graph too large"));
    let xadj = graph
        .offsets()
        .iter()
        .map(|&o| to_idx(o))
        .collect::<Result<Vec<_>, _>>()?;
    let adjncy: Vec<Idx> = graph.targets().iter().map(|&t| t as Idx).collect();
    let total: u64 = graph.weights().iter().sum();
    let scale = total.div_ceil(WEIGHT_BUDGET).max(1);
    let adjwgt: Vec<Idx> = graph
        .weights()
        .iter()
        .map(|&w| (w / scale).max(1) as Idx)
        .collect();
    let vertices: usize = capacities.iter().sum();
    // Target part weights in proportion to the leaves' capacities, when they differ.
    let targets: Vec<f32> = capacities
        .iter()
        .map(|&c| c as f32 / vertices as f32)
        .collect();
    let uneven = capacities.windows(2).any(|w| w[0] != w[1]);
    let mut parts: Vec<Idx> = vec![0; graph.vertices()];
    let nparts = to_idx(capacities.len())?;
    let mut metis = Graph::new(1, nparts, &xadj, &adjncy)
        .map_err(|e| metis_failed(&e))?
        .set_adjwgt(&adjwgt)
        .set_option(metis::option::Seed((seed % i32::MAX as u64) as Idx));
    if uneven {
        metis = metis.set_tpwgts(&targets);
    }
    metis
        .part_recursive(&mut parts)
        .map_err(|e| metis_failed(&e))?;
    let mut parts: Vec<u32> = parts.into_iter().map(|p| p as u32).collect();
    empty_overfull_parts(graph, &mut parts, capacities);
    Ok(parts)
}

/// While a part holds more ranks than its leaf has nodes, moves the rank and the under-full
/// destination that lose the least traffic to other parts (gain = traffic to the new part
/// minus traffic to the old one).
fn empty_overfull_parts(graph: &CommGraph, parts: &mut [u32], capacities: &[usize]) {
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); capacities.len()];
    for (v, &p) in parts.iter().enumerate() {
        members[p as usize].push(v as u32);
    }
    while let Some(over) = (0..members.len()).find(|&p| members[p].len() > capacities[p]) {
        let under = |p: usize| members[p].len() < capacities[p];
        let fallback = (0..members.len())
            .find(|&p| under(p))
            .expect("sizes sum to capacity");
        let mut best: Option<(i128, u32, usize)> = None;
        for &v in &members[over] {
            let weight_to = |part: usize| -> u64 {
                graph
                    .edges(v)
                    .filter(|&(u, _)| parts[u as usize] as usize == part)
                    .map(|(_, w)| w)
                    .sum()
            };
            let home = weight_to(over) as i128;
            let candidates = graph
                .edges(v)
                .map(|(u, _)| parts[u as usize] as usize)
                .filter(|&p| under(p))
                .chain([fallback]);
            for target in candidates {
                let gain = weight_to(target) as i128 - home;
                if best.map_or(true, |(g, _, _)| gain > g) {
                    best = Some((gain, v, target));
                }
            }
        }
        let (_, v, target) = best.expect("an over-full part has members");
        members[over].retain(|&u| u != v);
        members[target].push(v);
        parts[v as usize] = target as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::{CommMatrix, Stencil, Workload};

    fn sizes(parts: &[u32], nparts: usize) -> Vec<usize> {
        let mut sizes = vec![0; nparts];
        for &p in parts {
            sizes[p as usize] += 1;
        }
        sizes
    }

    #[test]
    fn an_overfull_part_gives_away_its_rank_closest_to_an_underfull_one() {
        // The path 0-1-2-3-4-5 split 4 + 2 into two parts of 3: rank 3 moves.
        let path = CommMatrix::from_messages(6, (0..5).map(|i| (i, i + 1, 1)), 1);
        let mut parts = vec![0, 0, 0, 0, 1, 1];
        empty_overfull_parts(&CommGraph::from_matrix(&path), &mut parts, &[3, 3]);
        assert_eq!(parts, vec![0, 0, 0, 1, 1, 1]);
    }

    #[test]
    fn parts_hold_exactly_their_capacity() {
        let stencil = Workload::Stencil(Stencil {
            width: 64,
            height: 72,
            bytes: 4096,
            rounds: 1,
            phase_ps: 0,
        });
        let graph = CommGraph::from_matrix(&stencil.matrix(4096).unwrap());
        let leaves = metis_parts(&graph, &[32; 144], 1).unwrap();
        assert_eq!(sizes(&leaves, 144), vec![32; 144]);
        // Uneven leaves, as a job on part of the tree has.
        let uneven: Vec<usize> = (0..96).map(|i| if i % 2 == 0 { 16 } else { 80 }).collect();
        let parts = metis_parts(&graph, &uneven, 1).unwrap();
        assert_eq!(sizes(&parts, 96), uneven);
    }
}
