//! The checks [`super::Simulation::new`] runs before anything is built, each failing with a
//! [`SimError`] that names the setting or the job and node at fault.

use super::SimConfig;
use crate::telemetry::TelemetryConfigError;
use crate::topology::Topology;
use crate::traffic::Job;

/// Inputs a simulation cannot run with.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    #[error("link bandwidth must be a positive number of Gb/s, not {0}")]
    LinkBandwidth(f64),
    #[error("{what} must be zero or more nanoseconds, not {ns}")]
    Latency { what: &'static str, ns: f64 },
    #[error("packet size must be at least 1 byte")]
    EmptyPacket,
    #[error("flow-control unit must be at least 1 byte")]
    EmptyFlowUnit,
    #[error("flow-control unit ({unit} B) is larger than a buffer ({buffer} B)")]
    FlowUnitOverBuffer { unit: u32, buffer: u32 },
    #[error("a {packet} B packet ({packet_units} flow units of {unit} B) does not fit in a {buffer} B buffer ({buffer_units} units)")]
    PacketOverBuffer {
        packet: u32,
        packet_units: u32,
        unit: u32,
        buffer: u32,
        buffer_units: u32,
    },
    #[error("telemetry window must be longer than 0 ps")]
    EmptyWindow,
    #[error(transparent)]
    Telemetry(#[from] TelemetryConfigError),
    #[error("{jobs} jobs, more than the {max} the simulator can tell apart")]
    TooManyJobs { jobs: usize, max: usize },
    #[error("job '{job}' has no ranks")]
    NoRanks { job: String },
    #[error("job '{job}' places rank {rank} on node {node}, but the tree '{tree}' has nodes 0 to {last}")]
    NodeOutsideTree {
        job: String,
        rank: usize,
        node: u32,
        tree: String,
        last: u32,
    },
    #[error("node {node} is given to rank {first_rank} of job '{first_job}' and to rank {rank} of job '{job}': one rank per node")]
    NodeShared {
        node: u32,
        first_job: String,
        first_rank: usize,
        job: String,
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
    if config.window_ps == Some(0) {
        return Err(SimError::EmptyWindow);
    }
    Ok(config.telemetry.validate()?)
}

/// Every rank on a node of the tree, one rank per node over all jobs.
pub(crate) fn check_jobs(topology: &Topology, jobs: &[Job]) -> Result<(), SimError> {
    let max = usize::from(u16::MAX) + 1;
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
