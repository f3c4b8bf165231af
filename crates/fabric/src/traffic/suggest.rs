//! Suggesting a better mapping from a communication matrix (thesis 4.2.4): the congestion
//! that a mapping can fix comes from traffic leaving the leaves, so pick the method that
//! keeps the most traffic inside them. For a 2-D grid pattern that is geometric tiling
//! (4.2.3, tied best in Table 4.1); for any other pattern, graph partitioning (4.2.2); and
//! never anything worse than the row-major default.

use super::mapping::{place, MappingSpec};
use super::matrix::{CommMatrix, MappingQuality};
use super::tiling::{Grid, Tile};
use super::TrafficError;
use crate::topology::{NodeId, Topology};

/// A busiest receiver this many times above the mean is an endpoint hotspot.
const HOTSPOT_FACTOR: f64 = 32.0;

/// A mapping suggested for a pattern (thesis 4.2.4), with what it changes against row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct Suggestion {
    /// The method chosen.
    pub mapping: MappingSpec,
    /// `placement[rank]`: the suggested node of each rank (on nodes 0.., as row-major).
    pub placement: Vec<NodeId>,
    /// Average path length and leaf edge cut of row-major, the default.
    pub row_major: MappingQuality,
    /// The same figures with the suggested placement.
    pub suggested: MappingQuality,
    /// Why this method, and what it changes, in a few sentences.
    pub explanation: String,
}

/// The mapping to use for `matrix` on the whole of `topology`; `seed` drives METIS.
pub fn suggest_mapping(
    matrix: &CommMatrix,
    topology: &Topology,
    seed: u64,
) -> Result<Suggestion, TrafficError> {
    let ranks = matrix.ranks();
    let pool = topology.compute_nodes();
    let map = |spec: &MappingSpec| place(spec, ranks, Some(matrix), &pool, topology, seed);
    let row_major_placement = map(&MappingSpec::RowMajor)?;
    let row_major = matrix.quality(&row_major_placement, topology);
    let tile =
        Grid::detect(matrix).map(|grid| (grid, Tile::choose(grid, topology.nodes_per_leaf())));
    let (mapping, reason) = match tile {
        Some((grid, Some(tile))) => (
            MappingSpec::Tiling(Some(tile)),
            format!(
                "the pattern is a {grid} 2-D grid, so one {tile} tile of ranks per leaf keeps \
                 the most traffic inside the leaves (thesis 4.2.3)"
            ),
        ),
        Some((grid, _)) => (
            MappingSpec::Partition,
            format!(
                "the pattern is a {grid} 2-D grid, but no tile of {} ranks fills whole leaves \
                 of it, so graph partitioning with one part per leaf (thesis 4.2.2)",
                topology.nodes_per_leaf()
            ),
        ),
        None => (
            MappingSpec::Partition,
            "the pattern is not a 2-D grid, so graph partitioning (METIS) with one part per leaf \
             keeps the most traffic inside the leaves (thesis 4.2.2)"
                .to_string(),
        ),
    };
    let placement = map(&mapping)?;
    let quality = matrix.quality(&placement, topology);
    let mut suggestion = if quality.average_path_length < row_major.average_path_length {
        Suggestion {
            explanation: format!(
                "{reason}: average path length {} -> {} hops, leaf-level edge cut {} -> {} \
                 (row-major -> {mapping})",
                hops(row_major),
                hops(quality),
                cut(row_major),
                cut(quality)
            ),
            mapping,
            placement,
            row_major,
            suggested: quality,
        }
    } else {
        Suggestion {
            explanation: format!(
                "{reason}; but {mapping} (average path length {}, leaf-level edge cut {}) does \
                 not beat row-major ({}, {}), so keep row-major",
                hops(quality),
                cut(quality),
                hops(row_major),
                cut(row_major)
            ),
            mapping: MappingSpec::RowMajor,
            placement: row_major_placement,
            row_major,
            suggested: row_major,
        }
    };
    if let Some(note) = hotspot_note(matrix) {
        suggestion.explanation.push_str(". ");
        suggestion.explanation.push_str(&note);
    }
    Ok(suggestion)
}

fn hops(quality: MappingQuality) -> String {
    format!("{:.3}", quality.average_path_length)
}

fn cut(quality: MappingQuality) -> String {
    format!("{:.2}", quality.leaf_edge_cut)
}

/// Theorem 4.1: when one rank receives far more than the others, its link is the bottleneck
/// wherever it is placed; only a different pattern helps.
fn hotspot_note(matrix: &CommMatrix) -> Option<String> {
    let received = matrix.received_packets();
    let (rank, &most) = received
        .iter()
        .enumerate()
        .max_by_key(|&(r, &p)| (p, std::cmp::Reverse(r)))?;
    let mean = matrix.total_packets() as f64 / f64::from(matrix.ranks());
    (most as f64 >= HOTSPOT_FACTOR * mean).then(|| {
        format!(
            "Rank {rank} receives {:.0}% of all packets ({:.0} times the mean): endpoint \
             congestion that no mapping removes (Theorem 4.1); change the pattern instead, \
             e.g. a tree reduction (thesis 4.3)",
            100.0 * most as f64 / matrix.total_packets() as f64,
            most as f64 / mean
        )
    })
}
