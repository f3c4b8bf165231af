//! The node allocation of thesis 4.4, which mimics the scatter a batch scheduler leaves
//! behind: node i goes to the primary application when (i + 1)^2 has an even number of 1
//! bits in binary, to the background application otherwise.
//!
//! The text extracted from the thesis reads "(i + 1)2", a lost superscript: squaring gives
//! the 2172 primary nodes of 4608 the thesis reports on `tapered`, while the plain binary
//! reading of i + 1 would give 2304.

use crate::topology::{NodeId, Topology};

/// (primary nodes, background nodes), each ascending, of the nodes ranks may run on
/// ([`Topology::compute_nodes`]).
pub fn node_split(topology: &Topology) -> (Vec<NodeId>, Vec<NodeId>) {
    topology
        .compute_nodes()
        .into_iter()
        .partition(|node| is_primary(node.0))
}

fn is_primary(node: u32) -> bool {
    let next = u64::from(node) + 1;
    (next * next).count_ones() % 2 == 0
}
