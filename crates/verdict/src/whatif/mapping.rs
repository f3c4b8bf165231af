//! The mapping to compare a job's placement with: the same hosts, in the order the
//! thesis's mapping methods give on them (4.2.4, as `fabric suggest-mapping` chooses):
//! graph partitioning with one part per leaf (METIS, 4.2.2) when it shortens the traffic's
//! paths, rack order (row-major on the job's hosts) otherwise.

use fabric::traffic::{place, CommMatrix, MappingSpec};

use super::replay::Replay;
use crate::PlanError;

/// A better order for the job's hosts.
pub(crate) struct Suggested {
    /// Host indices in rank order.
    pub order: Vec<usize>,
    /// `rack` or `partition`.
    pub method: &'static str,
}

/// The suggested order of `placement`'s hosts, or `None` when it is the placement itself.
/// Rails are cabled alike, so the order is chosen on the first rail's leaves.
pub(crate) fn suggest(
    replay: &Replay,
    placement: &[usize],
    matrix: &CommMatrix,
) -> Result<Option<Suggested>, PlanError> {
    let cluster = replay.cluster;
    let topology = &cluster.fabric.topology;
    let mut pool = replay.nodes(placement, replay.rails[0]);
    pool.sort_unstable();
    let ranks = placement.len() as u32;
    let unfit = |e: fabric::traffic::TrafficError| {
        PlanError::Fabric(format!("what-if: no mapping to compare with: {e}"))
    };
    let rack = place(
        &MappingSpec::RowMajor,
        ranks,
        None,
        &pool,
        topology,
        replay.seed,
    )
    .map_err(unfit)?;
    let partition = place(
        &MappingSpec::Partition,
        ranks,
        Some(matrix),
        &pool,
        topology,
        replay.seed,
    )
    .map_err(unfit)?;
    let hops = |nodes: &[_]| matrix.quality(nodes, topology).average_path_length;
    let (nodes, method) = if hops(&partition) < hops(&rack) {
        (partition, "partition")
    } else {
        (rack, "rack")
    };
    let order: Vec<usize> = nodes
        .iter()
        .map(|&node| {
            cluster
                .rnic_at(node)
                .expect("the pool holds the job's RNICs")
                .host
        })
        .collect();
    Ok((order != placement).then_some(Suggested { order, method }))
}
