//! Switch-port sampling on the simulator: the LDMS ibfabric study
//! (`../shared/papers/004_ec259f6a0c4ca99b.txt`, "the paper") replayed with the MAD service
//! model of `sim` (samplers, VL15, one management processor per switch).
//!
//! - [`testbed`]: the paper's fabric (section IV, Figure 2) as a fat tree: two leaf switches
//!   of 36 ports joined by two links each to one core, so a sampler's own leaf is local, the
//!   core one hop away and the other leaf two.
//! - [`delegate`]: the Delegator's non-redundant split, the rule of hostping's
//!   `rdma::subnet::delegate` on the simulator's tree (the fabric crate does not depend on
//!   rdma).
//! - [`study`]: the spread and application-bandwidth experiments, as data; `hostping fabric
//!   bench sampling` prints them.

pub mod study;

use std::collections::VecDeque;

use crate::topology::{FatTreeParams, NodeId, Peer, PortRef, SwitchId, Topology};

/// The paper's testbed (section IV, Figure 2): a core switch and two leaf switches of 36
/// ports, each leaf joined to the core by 2 links. The simulator's trees use every port, so
/// each leaf has 34 nodes (the testbed had 8 compute nodes per leaf: samplers and
/// applications use 8 of each leaf's nodes, [`testbed_nodes`]) and the core 4 linked ports;
/// a sampler reads all 36 port numbers of every switch, as the paper's did, linked or not.
pub fn testbed() -> Topology {
    Topology::new(FatTreeParams {
        name: "ldms-testbed".to_string(),
        radix: 36,
        nodes_per_leaf: 34,
        leaves: 2,
        leaves_per_pod: 2,
        aggs_per_pod: 1,
    })
    .expect("the testbed tree is valid")
}

/// The testbed's 16 compute nodes: the first 8 under each leaf.
pub fn testbed_nodes(topology: &Topology) -> Vec<NodeId> {
    let per_leaf = topology.nodes_per_leaf();
    (0..topology.num_leaves())
        .flat_map(|leaf| (0..8.min(per_leaf)).map(move |i| NodeId(leaf * per_leaf + i)))
        .collect()
}

/// Every port number of a switch, `0..radix`, in order: what a sampler reads from it.
pub fn switch_ports(topology: &Topology, switch: SwitchId) -> Vec<PortRef> {
    (0..topology.radix() as u16)
        .map(|port| PortRef { switch, port })
        .collect()
}

/// Switch hops from a node to every switch: 0 for its leaf, then one per switch-to-switch
/// link (breadth-first over the tree's links).
pub fn switch_hops(topology: &Topology, node: NodeId) -> Vec<u32> {
    let mut hops = vec![u32::MAX; topology.num_switches() as usize];
    let leaf = topology.leaf_of(node);
    hops[leaf.0 as usize] = 0;
    let mut frontier = VecDeque::from([leaf]);
    while let Some(at) = frontier.pop_front() {
        for port in 0..topology.ports(at) {
            if let Peer::Switch { switch, .. } = topology.peer(PortRef { switch: at, port }) {
                if hops[switch.0 as usize] == u32::MAX {
                    hops[switch.0 as usize] = hops[at.0 as usize] + 1;
                    frontier.push_back(switch);
                }
            }
        }
    }
    hops
}

/// The Delegator's split (hostping's `rdma::subnet::delegate`, after the paper's Port
/// Delegator): every switch's ports go to one sampler, none twice and none left out; a
/// switch is never split (its ports share one management processor); each switch goes to
/// the nearest sampler that still has room under the fair share (total ports / samplers,
/// or the largest switch if that is more), the least loaded among equally near ones;
/// switches with the fewest nearest samplers are placed first. Returns each sampler's
/// ports, in `samplers`' order.
pub fn delegate(
    topology: &Topology,
    samplers: &[NodeId],
    switches: &[SwitchId],
) -> Vec<Vec<PortRef>> {
    let hops: Vec<Vec<u32>> = samplers.iter().map(|&n| switch_hops(topology, n)).collect();
    let ports = |s: SwitchId| switch_ports(topology, s);
    let total: usize = switches.iter().map(|&s| ports(s).len()).sum();
    let largest = switches.iter().map(|&s| ports(s).len()).max().unwrap_or(0);
    let cap = total.div_ceil(samplers.len().max(1)).max(largest);
    let mut order: Vec<SwitchId> = switches.to_vec();
    order.sort_by_key(|&sw| {
        let nearest = hops.iter().map(|h| h[sw.0 as usize]).min().unwrap_or(0);
        let choices = hops.iter().filter(|h| h[sw.0 as usize] == nearest).count();
        (choices, std::cmp::Reverse(ports(sw).len()), sw)
    });
    let mut out: Vec<Vec<PortRef>> = vec![Vec::new(); samplers.len()];
    for sw in order {
        let mut by_distance: Vec<usize> = (0..samplers.len()).collect();
        by_distance.sort_by_key(|&s| (hops[s][sw.0 as usize], out[s].len()));
        let list = ports(sw);
        let chosen = by_distance
            .iter()
            .copied()
            .find(|&s| out[s].len() + list.len() <= cap)
            .or_else(|| by_distance.iter().copied().min_by_key(|&s| out[s].len()));
        if let Some(s) = chosen {
            out[s].extend(list);
        }
    }
    out
}

/// The testbed's switches, nearest to `node` first: its leaf, the core, the other leaf.
pub fn switches_by_distance(topology: &Topology, node: NodeId) -> Vec<SwitchId> {
    let hops = switch_hops(topology, node);
    let mut switches: Vec<SwitchId> = (0..topology.num_switches()).map(SwitchId).collect();
    switches.sort_by_key(|s| (hops[s.0 as usize], s.0));
    switches
}

/// The switch of the testbed that is `hops` switch hops from `node`'s leaf (0: the leaf,
/// 1: the core, 2: the other leaf).
pub fn switch_at_hops(topology: &Topology, node: NodeId, hops: u32) -> Option<SwitchId> {
    let distance = switch_hops(topology, node);
    (0..topology.num_switches())
        .map(SwitchId)
        .find(|s| distance[s.0 as usize] == hops)
}
