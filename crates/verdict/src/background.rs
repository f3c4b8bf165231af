//! Other jobs' traffic (`fabric:background:<load>`), one model for every simulation that
//! meets it: the mesh's probes between the job's hosts and the what-if's replay of the job.
//! The two once placed it apart (the mesh on every node but the probed pair, the job's own
//! hosts included; the what-if off the job's hosts), so the mesh blamed traffic that the
//! what-if of the same report said crossed none of the job's links (issue 38).
//!
//! Other jobs run on the tree's nodes that none of the job's hosts is cabled to, on the
//! leaves of the pods the job uses (the traffic of a pod it does not touch crosses none of
//! its links but the cores'), as uniform random traffic at `load` of line rate: from
//! [`WARMUP_PS`] before the job's own traffic starts, so that it meets a steady state, to
//! [`SPAN`] times the job's healthy time (a job slowed more meets none in its tail;
//! docs/cluster.md).

use std::collections::HashSet;

use fabric::topology::{NodeId, Topology};
use fabric::traffic::{Job, Uniform, Workload};

use crate::spec::{Cluster, RnicPort};

/// Other jobs' traffic runs this long before the job's starts.
pub const WARMUP_PS: u64 = 10_000_000;
/// Other jobs send for this many times the job's healthy time.
pub const SPAN: u64 = 2;
/// Other jobs' messages, bytes (`ib_write_bw`'s default, as the mesh's stream sends).
const MESSAGE_BYTES: u64 = 65536;

/// The tree nodes of every RNIC of the job's `hosts`: no other job runs there.
pub fn job_nodes(cluster: &Cluster, hosts: &[usize]) -> HashSet<NodeId> {
    cluster
        .rnic_ports()
        .filter(|port: &RnicPort| hosts.contains(&port.host))
        .map(|port| cluster.node_of(port))
        .collect()
}

/// Other jobs at `load` beside a job on the nodes `used`, whose own traffic starts at
/// [`WARMUP_PS`] and takes `healthy_ps` on a healthy fabric; `None` when fewer than two
/// nodes are left for them.
pub fn other_jobs(
    topology: &Topology,
    used: &HashSet<NodeId>,
    load: f64,
    link_gbps: f64,
    healthy_ps: u64,
) -> Option<Job> {
    let others = nodes(topology, used);
    (others.len() > 1).then(|| Job {
        name: "background".to_string(),
        program: Workload::Uniform(Uniform {
            ranks: others.len() as u32,
            bytes: MESSAGE_BYTES,
            load,
            link_gbps,
            end_ps: Some(WARMUP_PS + SPAN * healthy_ps.max(1)),
            messages: None,
        })
        .program(),
        placement: others,
    })
}

/// Other jobs' nodes: every node of the tree the job does not use, on the leaves of the pods
/// it uses.
fn nodes(topology: &Topology, used: &HashSet<NodeId>) -> Vec<NodeId> {
    let pod = |node: NodeId| topology.pod_of(topology.leaf_of(node));
    let pods: HashSet<Option<u32>> = used.iter().map(|&n| pod(n)).collect();
    topology
        .compute_nodes()
        .into_iter()
        .filter(|n| !used.contains(n) && pods.contains(&pod(*n)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_jobs_run_off_the_jobs_hosts_on_its_pods() {
        let pod = Cluster::builtin("pod-32").unwrap().unwrap();
        let used = job_nodes(&pod, &[0, 1, 2, 3]);
        assert_eq!(used.len(), 4 * pod.hosts[0].rnics.len());
        let job = other_jobs(&pod.fabric.topology, &used, 0.5, 200.0, 1000).unwrap();
        assert!(job.placement.iter().all(|n| !used.contains(n)));
        // pod-32 is one pod: every other host's RNICs carry other jobs.
        assert_eq!(
            job.placement.len(),
            pod.rnic_ports().count() - used.len(),
            "{:?}",
            job.placement
        );
        // Every RNIC is the job's: nobody is left to send.
        let all = job_nodes(&pod, &(0..pod.hosts.len()).collect::<Vec<_>>());
        assert!(other_jobs(&pod.fabric.topology, &all, 0.5, 200.0, 1000).is_none());
    }
}
