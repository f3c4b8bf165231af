//! The checks [`super::Simulation::new`] runs before anything is built, each failing with a
//! [`SimError`] that names the setting or the job and node at fault.

use super::{SamplerSpec, SimConfig};
use crate::telemetry::TelemetryConfigError;
use crate::topology::Topology;
use crate::traffic::Job;

/// Inputs a simulation cannot run with.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    /// The link rate, Gb/s, is not a positive number.
    #[error("link bandwidth must be a positive number of Gb/s, not {0}")]
    LinkBandwidth(f64),
    /// A latency, ns, is negative or not a number.
    #[error("{what} must be zero or more nanoseconds, not {ns}")]
    Latency {
        /// Which latency (`link latency`, `switch latency`).
        what: &'static str,
        /// The value given, ns.
        ns: f64,
    },
    /// Packets of 0 bytes.
    #[error("packet size must be at least 1 byte")]
    EmptyPacket,
    /// A flow-control unit (the credit granularity, thesis 3.5) of 0 bytes.
    #[error("flow-control unit must be at least 1 byte")]
    EmptyFlowUnit,
    /// A flow-control unit larger than a switch buffer: no credit could ever be granted.
    #[error("flow-control unit ({unit} B) is larger than a buffer ({buffer} B)")]
    FlowUnitOverBuffer {
        /// Flow-control unit, bytes.
        unit: u32,
        /// Buffer size, bytes.
        buffer: u32,
    },
    /// A packet does not fit in a switch buffer, so it could never be forwarded.
    #[error("a {packet} B packet ({packet_units} flow units of {unit} B) does not fit in a {buffer} B buffer ({buffer_units} units)")]
    PacketOverBuffer {
        /// Packet size, bytes.
        packet: u32,
        /// Flow-control units one packet takes.
        packet_units: u32,
        /// Flow-control unit, bytes.
        unit: u32,
        /// Buffer size, bytes.
        buffer: u32,
        /// Flow-control units a buffer holds.
        buffer_units: u32,
    },
    /// A run end time above [`crate::limits::MAX_END_PS`].
    #[error("{}", crate::limits::above_cap("end time", format!("{} us", *.0 as f64 / 1e6), format!("{} us", crate::limits::MAX_END_PS / 1_000_000), "of simulated time"))]
    EndAboveCap(u64),
    /// A telemetry window of 0 ps.
    #[error("telemetry window must be longer than 0 ps")]
    EmptyWindow,
    /// A switch-counter snapshot interval of 0 ps.
    #[error("counter snapshot interval must be longer than 0 ps")]
    EmptyCounterInterval,
    /// The time a switch takes to answer a MAD, ns, is negative or not a number.
    #[error("MAD service time must be zero or more nanoseconds, not {0}")]
    MadService(f64),
    /// Port-counter samplers are configured but the run has no end time, so it would never end.
    #[error("samplers never stop: give the run an end time")]
    SamplersNeedAnEnd,
    /// One sampler's settings are wrong.
    #[error("sampler {sampler} (node {node}): {problem}")]
    Sampler {
        /// The sampler's position in the list.
        sampler: usize,
        /// The node it runs on.
        node: u32,
        /// What is wrong, in words.
        problem: String,
    },
    /// The telemetry settings are wrong.
    #[error(transparent)]
    Telemetry(#[from] TelemetryConfigError),
    /// More jobs than the job ids packets carry can tell apart (the ids above are the samplers'
    /// MADs).
    #[error("{jobs} jobs, more than the {max} the simulator can tell apart")]
    TooManyJobs {
        /// Jobs given.
        jobs: usize,
        /// Jobs the simulator can tell apart.
        max: usize,
    },
    /// A job with no ranks.
    #[error("job '{job}' has no ranks")]
    NoRanks {
        /// The job's name.
        job: String,
    },
    /// A job places a rank on a node the tree does not have.
    #[error("job '{job}' places rank {rank} on node {node}, but the tree '{tree}' has nodes 0 to {last}")]
    NodeOutsideTree {
        /// The job's name.
        job: String,
        /// The rank placed outside the tree.
        rank: usize,
        /// The node it was placed on.
        node: u32,
        /// The tree's name.
        tree: String,
        /// The tree's last node number.
        last: u32,
    },
    /// Two ranks are placed on one node.
    #[error("node {node} is given to rank {first_rank} of job '{first_job}' and to rank {rank} of job '{job}': one rank per node")]
    NodeShared {
        /// The node given to both ranks.
        node: u32,
        /// The job of the first rank placed there.
        first_job: String,
        /// That rank.
        first_rank: usize,
        /// The job of the second rank.
        job: String,
        /// That rank.
        rank: usize,
    },
}

pub(crate) fn check_config(config: &SimConfig) -> Result<(), SimError> {
    if !(config.link_gbps.is_finite() && config.link_gbps > 0.0) {
        return Err(SimError::LinkBandwidth(config.link_gbps));
    }
    for (what, ns) in [
        ("link latency", config.link_latency_ns),
        ("switch latency", config.switch_latency_ns),
    ] {
        if !(ns.is_finite() && ns >= 0.0) {
            return Err(SimError::Latency { what, ns });
        }
    }
    if config.packet_bytes == 0 {
        return Err(SimError::EmptyPacket);
    }
    if config.flow_unit_bytes == 0 {
        return Err(SimError::EmptyFlowUnit);
    }
    if config.flow_unit_bytes > config.buffer_bytes {
        return Err(SimError::FlowUnitOverBuffer {
            unit: config.flow_unit_bytes,
            buffer: config.buffer_bytes,
        });
    }
    let buffer_units = config.buffer_bytes / config.flow_unit_bytes;
    let packet_units = config.packet_bytes.div_ceil(config.flow_unit_bytes);
    if config.packet_bytes > config.buffer_bytes || packet_units > buffer_units {
        return Err(SimError::PacketOverBuffer {
            packet: config.packet_bytes,
            packet_units,
            unit: config.flow_unit_bytes,
            buffer: config.buffer_bytes,
            buffer_units,
        });
    }
    if let Some(end_ps) = config.end_ps.filter(|&end| end > crate::limits::MAX_END_PS) {
        return Err(SimError::EndAboveCap(end_ps));
    }
    if config.window_ps == Some(0) {
        return Err(SimError::EmptyWindow);
    }
    if config.counter_interval_ps == Some(0) {
        return Err(SimError::EmptyCounterInterval);
    }
    if !(config.mads.service_ns.is_finite() && config.mads.service_ns >= 0.0) {
        return Err(SimError::MadService(config.mads.service_ns));
    }
    Ok(config.telemetry.validate()?)
}

/// Every rank on a node of the tree, one rank per node over all jobs.
pub(crate) fn check_jobs(topology: &Topology, jobs: &[Job]) -> Result<(), SimError> {
    // The highest job numbers mark MADs (`mads`).
    let max = usize::from(super::mads::FIRST_MAD_JOB);
    if jobs.len() > max {
        return Err(SimError::TooManyJobs {
            jobs: jobs.len(),
            max,
        });
    }
    let nodes = topology.num_nodes();
    let mut occupant: Vec<Option<(usize, usize)>> = vec![None; nodes as usize];
    for (j, job) in jobs.iter().enumerate() {
        if job.placement.is_empty() {
            return Err(SimError::NoRanks {
                job: job.name.clone(),
            });
        }
        for (rank, node) in job.placement.iter().enumerate() {
            if node.0 >= nodes {
                return Err(SimError::NodeOutsideTree {
                    job: job.name.clone(),
                    rank,
                    node: node.0,
                    tree: topology.name().to_string(),
                    last: nodes - 1,
                });
            }
            if let Some((other_job, other_rank)) = occupant[node.0 as usize] {
                return Err(SimError::NodeShared {
                    node: node.0,
                    first_job: jobs[other_job].name.clone(),
                    first_rank: other_rank,
                    job: job.name.clone(),
                    rank,
                });
            }
            occupant[node.0 as usize] = Some((j, rank));
        }
    }
    Ok(())
}

/// Every sampler on a node of the tree, reading ports of its switches, with a period; and an
/// end to the run.
pub(crate) fn check_samplers(
    topology: &Topology,
    config: &SimConfig,
    samplers: &[SamplerSpec],
) -> Result<(), SimError> {
    if samplers.is_empty() {
        return Ok(());
    }
    if config.end_ps.is_none() {
        return Err(SimError::SamplersNeedAnEnd);
    }
    for (i, s) in samplers.iter().enumerate() {
        let fail = |problem: String| SimError::Sampler {
            sampler: i,
            node: s.node.0,
            problem,
        };
        if s.node.0 >= topology.num_nodes() {
            return Err(fail(format!(
                "the tree '{}' has nodes 0 to {}",
                topology.name(),
                topology.num_nodes() - 1
            )));
        }
        if s.ports.is_empty() {
            return Err(fail("no ports to read".to_string()));
        }
        if s.period_ps == 0 {
            return Err(fail("a period of 0 ps".to_string()));
        }
        if config.mads.mad_bytes == 0 {
            return Err(fail("MADs of 0 bytes".to_string()));
        }
        for p in &s.ports {
            if p.switch.0 >= topology.num_switches() {
                return Err(fail(format!(
                    "switch {} is not in the tree (it has {})",
                    p.switch.0,
                    topology.num_switches()
                )));
            }
            if u32::from(p.port) >= topology.radix() {
                return Err(fail(format!(
                    "port {} of switch {}: a switch of radix {} has ports 0 to {}",
                    p.port,
                    p.switch.0,
                    topology.radix(),
                    topology.radix() - 1
                )));
            }
        }
    }
    Ok(())
}
