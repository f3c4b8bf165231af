//! The mapping file: one `rank node` pair per line, any order, `#` comments.
//!
//! ```text
//! # rank node
//! 0 0
//! 1 32
//! 2 1
//! ```
//!
//! Every rank from 0 to the largest one needs exactly one node, no node may be given twice,
//! and every node must exist in the tree (and, when the job runs on part of the tree, be one
//! of its nodes).

use std::path::{Path, PathBuf};

use super::lines::{data_lines, parse_index};
use crate::input::InputError;
use crate::topology::{NodeId, Topology};

/// A mapping file, read and checked against the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MappingFile {
    /// The file it was read from.
    pub path: PathBuf,
    /// Per rank: its node and the line that gave it.
    entries: Vec<(NodeId, usize)>,
}

const FORM: &str = "'rank node'";

impl MappingFile {
    /// Reads a mapping file and checks every node against `topology`; an error names the file
    /// and the line.
    pub fn load(path: &Path, topology: &Topology) -> Result<Self, InputError> {
        let text = InputError::read(path)?;
        Self::parse(path, &text, topology)
    }

    /// Parses the text of `path` (named in errors) for `topology`.
    pub fn parse(path: &Path, text: &str, topology: &Topology) -> Result<Self, InputError> {
        let nodes = topology.num_nodes();
        let mut by_rank: Vec<Option<(NodeId, usize)>> = Vec::new();
        let mut node_line: Vec<Option<(u32, usize)>> = vec![None; nodes as usize];
        for (line, fields) in data_lines(text) {
            let at = |reason: String| InputError::at_line(path, line, reason);
            let &[rank, node] = fields.as_slice() else {
                return Err(at(format!(
                    "expected 2 fields {FORM}, found {}",
                    fields.len()
                )));
            };
            let rank = parse_index(rank, "rank").map_err(|e| at(e.to_string()))?;
            let node = parse_index(node, "node").map_err(|e| at(e.to_string()))?;
            // One node per rank: a rank number beyond the node count leaves gaps for sure.
            if rank >= nodes {
                return Err(at(format!(
                    "rank {rank} cannot be placed: {} has {nodes} nodes, so ranks 0 to {}",
                    topology.name(),
                    nodes - 1
                )));
            }
            if node >= nodes {
                return Err(at(format!(
                    "node {node} is not in the tree ({} has nodes 0 to {})",
                    topology.name(),
                    nodes - 1
                )));
            }
            if let Some((other, first)) = node_line[node as usize] {
                return Err(at(format!(
                    "node {node} is given twice (to rank {other} on line {first})"
                )));
            }
            if rank as usize >= by_rank.len() {
                by_rank.resize(rank as usize + 1, None);
            }
            if let Some((_, first)) = by_rank[rank as usize] {
                return Err(at(format!(
                    "rank {rank} is placed twice (first on line {first})"
                )));
            }
            by_rank[rank as usize] = Some((NodeId(node), line));
            node_line[node as usize] = Some((rank, line));
        }
        if by_rank.is_empty() {
            return Err(InputError::whole_file(
                path,
                format!("no ranks: expected lines {FORM}"),
            ));
        }
        let missing: Vec<String> = (0..by_rank.len())
            .filter(|&r| by_rank[r].is_none())
            .map(|r| r.to_string())
            .collect();
        if !missing.is_empty() {
            return Err(InputError::whole_file(
                path,
                format!(
                    "ranks 0 to {} need a node each; {} missing: {}",
                    by_rank.len() - 1,
                    missing.len(),
                    abbreviate(&missing)
                ),
            ));
        }
        Ok(MappingFile {
            path: path.to_path_buf(),
            entries: by_rank.into_iter().flatten().collect(),
        })
    }

    /// Ranks the file places.
    pub fn ranks(&self) -> u32 {
        self.entries.len() as u32
    }

    /// Node of each rank.
    pub fn placement(&self) -> Vec<NodeId> {
        self.entries.iter().map(|&(node, _)| node).collect()
    }

    /// The placement of a job of `ranks` ranks running on `pool` (ascending).
    pub fn placement_within(&self, ranks: u32, pool: &[NodeId]) -> Result<Vec<NodeId>, InputError> {
        if self.ranks() != ranks {
            return Err(InputError::whole_file(
                &self.path,
                format!(
                    "places {} ranks, but the workload has {ranks}",
                    self.ranks()
                ),
            ));
        }
        for &(node, line) in &self.entries {
            if pool.binary_search(&node).is_err() {
                return Err(InputError::at_line(
                    &self.path,
                    line,
                    format!("node {} is not one of the nodes this job runs on", node.0),
                ));
            }
        }
        Ok(self.placement())
    }
}

/// The first few items, then how many more.
fn abbreviate(items: &[String]) -> String {
    const SHOWN: usize = 8;
    let head = items[..items.len().min(SHOWN)].join(", ");
    match items.len().saturating_sub(SHOWN) {
        0 => head,
        more => format!("{head} and {more} more"),
    }
}
