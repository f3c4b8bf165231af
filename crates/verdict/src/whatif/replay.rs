//! One scenario of a what-if: the job's traffic on the cluster's fabric, one job per rail,
//! with given link states and hosts in a given rank order, on the packet simulator.

use std::collections::HashSet;

use fabric::sim::{SimConfig, Simulation};
use fabric::telemetry::{TelemetryConfig, TelemetryKind};
use fabric::topology::{NodeId, Peer, Topology};
use fabric::traffic::{Job, Uniform, Workload};

use super::states::LinkStates;
use super::traffic::{JobTraffic, RailShare};
use crate::links;
use crate::spec::{Cable, Cluster, RnicPort};
use crate::PlanError;

/// Other jobs' traffic runs this long before the job starts, so the job meets it in a
/// steady state (as the mesh's probes do).
pub const BACKGROUND_WARMUP_PS: u64 = 10_000_000;
/// Other jobs send for this many times the job's healthy time; a job slowed more than that
/// meets no other traffic in its tail (docs/cluster.md).
pub const BACKGROUND_SPAN: u64 = 2;
/// Other jobs' messages, bytes (the mesh's background sends the same).
const BACKGROUND_MESSAGE_BYTES: u64 = 65536;

/// The job, ready to replay.
pub(crate) struct Replay<'a> {
    pub cluster: &'a Cluster,
    pub traffic: &'a JobTraffic,
    /// The RNIC indices every host of the job has on the fabric.
    pub rails: Vec<usize>,
    pub seed: u64,
}

/// What one replay gave.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) enum Outcome {
    /// The job's time (its slowest rail's), us, and the packets the simulator moved.
    Ran { time_us: f64, packets: u64 },
    /// A cable of one of the job's RNICs is down: the job cannot run as placed.
    CannotRun(Cable),
}

impl Replay<'_> {
    /// The simulator's settings: the cluster's link rate, the subnet manager's deterministic
    /// routes, no in-packet telemetry; the rest the simulator's defaults.
    pub fn config(&self) -> SimConfig {
        SimConfig {
            link_gbps: self.cluster.fabric.link_gbps,
            adaptive: false,
            seed: self.seed,
            telemetry: TelemetryConfig {
                kind: TelemetryKind::Off,
                ..TelemetryConfig::default()
            },
            ..SimConfig::default()
        }
    }

    /// The tree node of each rank's RNIC on `rail`, for hosts in rank order `order`.
    pub fn nodes(&self, order: &[usize], rail: usize) -> Vec<NodeId> {
        order
            .iter()
            .map(|&host| self.cluster.node_of(RnicPort { host, rnic: rail }))
            .collect()
    }

    /// Replays the job with hosts in rank order `order` under `states`. Other jobs'
    /// traffic, when `states` has it, runs for [`BACKGROUND_SPAN`] x `healthy_ps`.
    pub fn run(
        &self,
        order: &[usize],
        states: &LinkStates,
        message_packets: u64,
        healthy_ps: u64,
    ) -> Result<Outcome, PlanError> {
        let config = self.config();
        let rails: Vec<Vec<NodeId>> = self.rails.iter().map(|&r| self.nodes(order, r)).collect();
        let topology = &self.cluster.fabric.topology;
        // A job's RNIC whose own cable is down has no way onto the fabric.
        let used: HashSet<NodeId> = rails.iter().flatten().copied().collect();
        if let Some(&down) = states.down.iter().find(|cable| {
            matches!(topology.peer(topology.port_ref(cable.0)), Peer::Node(n) if used.contains(&n))
        }) {
            return Ok(Outcome::CannotRun(down));
        }
        let faults = states.as_faults(config.link_gbps, config.packet_bytes, message_packets);
        let topology = &links::phases(self.cluster, &faults)?.healthy;
        let start_ps = if states.background.is_some() {
            BACKGROUND_WARMUP_PS
        } else {
            0
        };
        let ranks = order.len() as u32;
        let mut jobs: Vec<Job> = rails
            .iter()
            .zip(&self.rails)
            .map(|(nodes, rail)| Job {
                name: format!("rail{rail}"),
                placement: nodes.clone(),
                program: Box::new(RailShare {
                    inner: self.traffic.program(ranks),
                    rails: self.rails.len() as u64,
                    start_ps,
                }),
            })
            .collect();
        if let Some(load) = states.background {
            let others = background_nodes(topology, &used);
            if others.len() > 1 {
                let background = Uniform {
                    ranks: others.len() as u32,
                    bytes: BACKGROUND_MESSAGE_BYTES,
                    load,
                    link_gbps: config.link_gbps,
                    end_ps: Some(start_ps + BACKGROUND_SPAN * healthy_ps.max(1)),
                    messages: None,
                };
                jobs.push(Job {
                    name: "background".to_string(),
                    placement: others,
                    program: Workload::Uniform(background).program(),
                });
            }
        }
        let result = Simulation::new(topology, config, jobs)
            .map_err(|e| PlanError::Fabric(format!("what-if: {e}")))?
            .run(&mut |_| {});
        let mut end_ps = 0;
        for job in result.jobs.iter().take(rails.len()) {
            if !job.finished {
                return Err(PlanError::Fabric(format!(
                    "what-if: the job's {} did not finish: its traffic waits for messages no \
                     rank sends",
                    job.name
                )));
            }
            end_ps = end_ps.max(job.completion_ps);
        }
        Ok(Outcome::Ran {
            time_us: end_ps.saturating_sub(start_ps) as f64 / 1e6,
            packets: result.packets_delivered,
        })
    }
}

/// Other jobs' nodes: every node of the tree the job does not use, on the leaves of the pods
/// it uses (traffic of pods it does not touch crosses none of its links but the cores').
fn background_nodes(topology: &Topology, used: &HashSet<NodeId>) -> Vec<NodeId> {
    let pod = |node: NodeId| topology.pod_of(topology.leaf_of(node));
    let pods: HashSet<Option<u32>> = used.iter().map(|&n| pod(n)).collect();
    topology
        .compute_nodes()
        .into_iter()
        .filter(|n| !used.contains(n) && pods.contains(&pod(*n)))
        .collect()
}
