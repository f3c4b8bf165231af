//! Mappings: which node each rank runs on (thesis 4.2). The methods, as `--mapping` spells
//! them:
//!
//! - `row-major`: rank i on the i-th node of the job (the scheduler's default, 4.2);
//! - `random`: a seeded random choice of nodes (Table 4.1's baseline);
//! - `rcm`: reverse Cuthill-McKee order of the communication graph (4.2.1);
//! - `partition`: METIS recursive bisection with one part per leaf (4.2.2);
//! - `incremental`: Kernighan-Lin swaps between leaves, starting from row-major (4.2.2);
//! - `tiling[:WxH]`: one W x H tile of a 2-D grid pattern per leaf (4.2.3; 8x4 for 32 nodes
//!   per leaf);
//! - a file of `rank node` lines ([`MappingFile`]).
//!
//! A job runs on a pool of nodes (the whole tree less a real fabric's free leaf ports, or its
//! side of the 4.4 split). Row-major
//! fills the pool's first nodes in order; partition and incremental keep exactly the leaves
//! and the number of ranks per leaf that row-major uses, and only choose which ranks share a
//! leaf.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::graph::CommGraph;
use super::incremental::kernighan_lin;
use super::mapping_file::MappingFile;
use super::matrix::CommMatrix;
use super::partition::metis_parts;
use super::rcm::rcm_order;
use super::tiling::{tiled_order, Grid, Tile};
use super::TrafficError;
use crate::topology::{NodeId, Topology};

/// A `--mapping` argument: which node each rank runs on (see the module doc for the methods).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MappingSpec {
    /// Rank i on the i-th node of the job.
    RowMajor,
    /// A seeded random choice of nodes (Table 4.1's baseline).
    Random,
    /// Reverse Cuthill-McKee order of the communication graph (4.2.1).
    Rcm,
    /// METIS recursive bisection, one part per leaf (4.2.2).
    Partition,
    /// Kernighan-Lin swaps between leaves from row-major (4.2.2).
    Incremental,
    /// The tile, or `None` for the squarest one that fits (8x4 on `tapered`).
    Tiling(Option<Tile>),
    /// A file of `rank node` lines.
    File(PathBuf),
}

impl MappingSpec {
    /// The forms `--mapping` accepts, for help and error messages.
    pub const FORMS: &'static str =
        "row-major, random, rcm, partition, incremental, tiling[:WxH] or a mapping file";

    /// Whether the method looks at the communication pattern.
    pub fn needs_matrix(&self) -> bool {
        matches!(
            self,
            MappingSpec::Rcm
                | MappingSpec::Partition
                | MappingSpec::Incremental
                | MappingSpec::Tiling(_)
        )
    }
}

impl FromStr for MappingSpec {
    type Err = TrafficError;

    fn from_str(text: &str) -> Result<Self, TrafficError> {
        let text = text.trim();
        Ok(match text {
            "row-major" => MappingSpec::RowMajor,
            "random" => MappingSpec::Random,
            "rcm" => MappingSpec::Rcm,
            "partition" => MappingSpec::Partition,
            "incremental" => MappingSpec::Incremental,
            "tiling" => MappingSpec::Tiling(None),
            _ => match text.strip_prefix("tiling:") {
                Some(tile) => MappingSpec::Tiling(Some(tile.parse()?)),
                None if Path::new(text).is_file() => MappingSpec::File(PathBuf::from(text)),
                None => {
                    return Err(TrafficError::Spec(format!(
                        "unknown mapping '{text}' (and no such file): expected {}",
                        Self::FORMS
                    )))
                }
            },
        })
    }
}

impl fmt::Display for MappingSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MappingSpec::RowMajor => f.write_str("row-major"),
            MappingSpec::Random => f.write_str("random"),
            MappingSpec::Rcm => f.write_str("rcm"),
            MappingSpec::Partition => f.write_str("partition"),
            MappingSpec::Incremental => f.write_str("incremental"),
            MappingSpec::Tiling(None) => f.write_str("tiling"),
            MappingSpec::Tiling(Some(tile)) => write!(f, "tiling:{tile}"),
            MappingSpec::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// Places `ranks` ranks on `pool` (distinct nodes of `topology` in ascending order):
/// `placement[rank]` is its node. The pattern methods need `matrix` (over the same ranks);
/// `seed` drives the random mapping and METIS.
pub fn place(
    spec: &MappingSpec,
    ranks: u32,
    matrix: Option<&CommMatrix>,
    pool: &[NodeId],
    topology: &Topology,
    seed: u64,
) -> Result<Vec<NodeId>, TrafficError> {
    if ranks as usize > pool.len() {
        return Err(TrafficError::Unfit(format!(
            "{ranks} ranks do not fit on {} nodes",
            pool.len()
        )));
    }
    let matrix = || {
        matrix.filter(|m| m.ranks() == ranks).ok_or_else(|| {
            TrafficError::Unfit(format!(
                "mapping '{spec}' needs the communication matrix of the {ranks} ranks"
            ))
        })
    };
    let leaves = LeafParts::new(&pool[..ranks as usize], topology);
    Ok(match spec {
        MappingSpec::RowMajor => leaves.nodes.to_vec(),
        MappingSpec::Random => {
            let mut nodes = pool.to_vec();
            nodes.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
            nodes.truncate(ranks as usize);
            nodes
        }
        MappingSpec::Rcm => leaves.place_in_order(&rcm_order(&CommGraph::from_matrix(matrix()?))),
        MappingSpec::Partition => {
            let graph = CommGraph::from_matrix(matrix()?);
            leaves.place_parts(&metis_parts(&graph, &leaves.capacities(), seed)?)
        }
        MappingSpec::Incremental => {
            let graph = CommGraph::from_matrix(matrix()?);
            let mut parts = leaves.row_major_parts();
            kernighan_lin(&graph, &mut parts, leaves.count());
            leaves.place_parts(&parts)
        }
        MappingSpec::Tiling(tile) => {
            let grid = Grid::detect(matrix()?).ok_or_else(not_a_grid)?;
            let leaf = topology.nodes_per_leaf();
            let tile = tile
                .or_else(|| Tile::choose(grid, leaf))
                .ok_or_else(|| no_tile_fits(grid, leaf))?;
            leaves.check_tiles(grid, tile)?;
            leaves.place_in_order(&tiled_order(grid, tile))
        }
        MappingSpec::File(path) => {
            MappingFile::load(path, topology)?.placement_within(ranks, pool)?
        }
    })
}

/// The nodes row-major uses, cut where the leaf changes: the parts that partitioning
/// balances against (each leaf keeps its number of ranks).
pub(crate) struct LeafParts<'a> {
    nodes: &'a [NodeId],
    /// Start of each part in `nodes`, and `nodes.len()` at the end.
    bounds: Vec<usize>,
}

impl<'a> LeafParts<'a> {
    pub fn new(nodes: &'a [NodeId], topology: &Topology) -> Self {
        let mut bounds: Vec<usize> = (0..nodes.len())
            .filter(|&i| i == 0 || topology.leaf_of(nodes[i]) != topology.leaf_of(nodes[i - 1]))
            .collect();
        bounds.push(nodes.len());
        LeafParts { nodes, bounds }
    }

    pub fn count(&self) -> usize {
        self.bounds.len() - 1
    }

    pub fn capacities(&self) -> Vec<usize> {
        self.bounds.windows(2).map(|w| w[1] - w[0]).collect()
    }

    /// Row-major's part of each rank.
    pub fn row_major_parts(&self) -> Vec<u32> {
        let mut parts = vec![0; self.nodes.len()];
        for (part, w) in self.bounds.windows(2).enumerate() {
            parts[w[0]..w[1]].fill(part as u32);
        }
        parts
    }

    /// Each part's ranks, in increasing order, on its leaf's nodes in order. The parts must
    /// hold exactly the capacities.
    pub fn place_parts(&self, parts: &[u32]) -> Vec<NodeId> {
        let mut next: Vec<usize> = self.bounds[..self.count()].to_vec();
        parts
            .iter()
            .map(|&part| {
                let slot = &mut next[part as usize];
                assert!(
                    *slot < self.bounds[part as usize + 1],
                    "part {part} over capacity"
                );
                *slot += 1;
                self.nodes[*slot - 1]
            })
            .collect()
    }

    /// The k-th rank of `order` on the k-th node.
    pub fn place_in_order(&self, order: &[u32]) -> Vec<NodeId> {
        let mut placement = vec![NodeId(0); order.len()];
        for (&rank, &node) in order.iter().zip(self.nodes) {
            placement[rank as usize] = node;
        }
        placement
    }

    /// Tiles map to leaves only when every leaf holds exactly one tile.
    fn check_tiles(&self, grid: Grid, tile: Tile) -> Result<(), TrafficError> {
        if !tile.divides(grid) {
            return Err(TrafficError::Unfit(format!(
                "the {tile} tile does not divide the {grid} grid"
            )));
        }
        let capacities = self.capacities();
        if capacities.iter().any(|&c| c != tile.area() as usize) {
            return Err(TrafficError::Unfit(format!(
                "tiling:{tile} needs {} ranks on every leaf, but this job's nodes fill its \
                 leaves with {}",
                tile.area(),
                describe_capacities(&capacities)
            )));
        }
        Ok(())
    }
}

fn not_a_grid() -> TrafficError {
    TrafficError::Unfit(
        "tiling needs a 2-D grid pattern (like stencil:WxH), and this one is not: try partition"
            .to_string(),
    )
}

fn no_tile_fits(grid: Grid, leaf: u32) -> TrafficError {
    TrafficError::Unfit(format!(
        "no tile of {leaf} ranks (one leaf) divides the {grid} grid: give one as tiling:WxH \
         or try partition"
    ))
}

/// "32" or "between 5 and 32".
fn describe_capacities(capacities: &[usize]) -> String {
    let min = capacities.iter().min().copied().unwrap_or(0);
    let max = capacities.iter().max().copied().unwrap_or(0);
    if min == max {
        min.to_string()
    } else {
        format!("between {min} and {max}")
    }
}
