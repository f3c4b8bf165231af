//! One scenario of a what-if: the job's traffic on the cluster's fabric, one job per rail,
//! with given link states and hosts in a given rank order, on the packet simulator.

use std::collections::HashSet;

use fabric::sim::{SimConfig, Simulation};
use fabric::telemetry::{TelemetryConfig, TelemetryKind};
use fabric::topology::{NodeId, Peer};
use fabric::traffic::Job;

use super::states::LinkStates;
use super::traffic::{JobTraffic, RailShare};
use crate::spec::{Cable, Cluster, RnicPort};
use crate::PlanError;
use crate::{background, links};

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
    /// Packets of one rank's message on each rail: the message is split evenly over the
    /// job's rails, each part in whole packets.
    pub fn message_packets(&self, ranks: u32) -> u64 {
        (self
            .traffic
            .message_bytes(ranks)
            .div_ceil(self.rails.len() as u64))
        .div_ceil(u64::from(self.config().packet_bytes))
    }

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
    /// traffic, when `states` has it, is [`background::other_jobs`] beside a job of `healthy_ps`.
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
            background::WARMUP_PS
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
            let used = background::job_nodes(self.cluster, order);
            jobs.extend(background::other_jobs(
                topology,
                &used,
                load,
                config.link_gbps,
                healthy_ps,
            ));
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
