//! The checks [`super::Simulation::new`] runs before anything is built, each failing with a
//! plain reason a user can act on.

use super::SimConfig;
use crate::topology::Topology;
use crate::traffic::Job;

pub(crate) fn check_config(config: &SimConfig) -> Result<(), String> {
    if !(config.link_gbps.is_finite() && config.link_gbps > 0.0) {
        return Err(format!(
            "link bandwidth must be a positive number of Gb/s, not {}",
            config.link_gbps
        ));
    }
    for (what, ns) in [
        ("link latency", config.link_latency_ns),
        ("switch latency", config.switch_latency_ns),
    ] {
        if !(ns.is_finite() && ns >= 0.0) {
            return Err(format!("{what} must be zero or more nanoseconds, not {ns}"));
        }
    }
    if config.packet_bytes == 0 {
        return Err("packet size must be at least 1 byte".to_string());
    }
    if config.flow_unit_bytes == 0 {
        return Err("flow-control unit must be at least 1 byte".to_string());
    }
    if config.flow_unit_bytes > config.buffer_bytes {
        return Err(format!(
            "flow-control unit ({} B) is larger than a buffer ({} B)",
            config.flow_unit_bytes, config.buffer_bytes
        ));
    }
    let buffer_units = config.buffer_bytes / config.flow_unit_bytes;
    let packet_units = config.packet_bytes.div_ceil(config.flow_unit_bytes);
    if config.packet_bytes > config.buffer_bytes || packet_units > buffer_units {
        return Err(format!(
            "a {} B packet ({packet_units} flow units of {} B) does not fit in a {} B buffer ({buffer_units} units)",
            config.packet_bytes, config.flow_unit_bytes, config.buffer_bytes
        ));
    }
    if config.window_ps == Some(0) {
        return Err("telemetry window must be longer than 0 ps".to_string());
    }
    config.telemetry.validate()
}

/// Every rank on a node of the tree, one rank per node over all jobs.
pub(crate) fn check_jobs(topology: &Topology, jobs: &[Job]) -> Result<(), String> {
    if jobs.len() > usize::from(u16::MAX) + 1 {
        return Err(format!(
            "{} jobs, more than the {} the simulator can tell apart",
            jobs.len(),
            usize::from(u16::MAX) + 1
        ));
    }
    let nodes = topology.num_nodes();
    let mut occupant: Vec<Option<(usize, usize)>> = vec![None; nodes as usize];
    for (j, job) in jobs.iter().enumerate() {
        if job.placement.is_empty() {
            return Err(format!("job '{}' has no ranks", job.name));
        }
        for (rank, node) in job.placement.iter().enumerate() {
            if node.0 >= nodes {
                return Err(format!(
                    "job '{}' places rank {rank} on node {}, but the tree '{}' has nodes 0 to {}",
                    job.name,
                    node.0,
                    topology.name(),
                    nodes - 1
                ));
            }
            if let Some((other_job, other_rank)) = occupant[node.0 as usize] {
                return Err(format!(
                    "node {} is given to rank {other_rank} of job '{}' and to rank {rank} of job '{}': one rank per node",
                    node.0, jobs[other_job].name, job.name
                ));
            }
            occupant[node.0 as usize] = Some((j, rank));
        }
    }
    Ok(())
}
