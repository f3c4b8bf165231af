//! From the command line's `--workload` and `--mapping` to the jobs the simulator runs.

use super::file::WorkloadFile;
use super::mapping::{place, MappingSpec};
use super::matrix::CommMatrix;
use super::ring::Ring;
use super::spec::WorkloadSpec;
use super::split::node_split;
use super::stencil::Stencil;
use super::uniform::Uniform;
use super::units::transfer_ps;
use super::workload::Workload;
use super::{Job, TrafficError};
use crate::topology::{NodeId, Topology};

/// What building jobs needs from the simulation's configuration.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct JobSettings {
    /// Seeds the random mapping and METIS (the traffic itself draws from the engine's rng).
    pub seed: u64,
    /// Uniform traffic's load is a fraction of this.
    pub link_gbps: f64,
    /// Packets of the communication matrix, which pattern-aware mappings weigh edges by.
    pub packet_bytes: u32,
    /// Uniform traffic without a message count stops here.
    pub end_ps: Option<u64>,
}

/// A job before it runs: its traffic and where its ranks go.
#[derive(Clone, Debug, PartialEq)]
pub struct JobPlan {
    /// The job's name.
    pub name: String,
    /// The traffic its ranks make.
    pub workload: Workload,
    /// How its ranks were placed.
    pub mapping: MappingSpec,
    /// `placement[rank]` is the node of `rank`.
    pub placement: Vec<NodeId>,
}

impl JobPlan {
    /// The job's communication matrix, packets of `packet_bytes`.
    pub fn matrix(&self, packet_bytes: u32) -> Result<CommMatrix, TrafficError> {
        self.workload.matrix(packet_bytes)
    }

    /// The job, ready for the simulator.
    pub fn into_job(self) -> Job {
        Job {
            program: self.workload.program(),
            name: self.name,
            placement: self.placement,
        }
    }
}

/// The jobs of a workload spec, mapped by `mapping`: one job on the whole tree, or for
/// `ring+background` the ring on the primary nodes of the 4.4 split (mapped by `mapping`)
/// and the background on the others (row-major: uniform traffic has no pattern to map).
pub fn plan_jobs(
    workload: &WorkloadSpec,
    mapping: &MappingSpec,
    topology: &Topology,
    settings: &JobSettings,
) -> Result<Vec<JobPlan>, TrafficError> {
    shares(workload, topology, settings)?
        .into_iter()
        .map(|share| {
            let mapping = share.mapping.unwrap_or(mapping);
            plan_job(share.workload, mapping, &share.pool, topology, settings)
        })
        .collect()
}

/// [`plan_jobs`], ready to run.
pub fn build_jobs(
    workload: &WorkloadSpec,
    mapping: &MappingSpec,
    topology: &Topology,
    settings: &JobSettings,
) -> Result<Vec<Job>, TrafficError> {
    Ok(plan_jobs(workload, mapping, topology, settings)?
        .into_iter()
        .map(JobPlan::into_job)
        .collect())
}

/// The communication matrix of a spec's first job (the ring of `ring+background`), without
/// placing anything: what `suggest_mapping` and mapping comparisons start from.
pub fn workload_matrix(
    workload: &WorkloadSpec,
    topology: &Topology,
    settings: &JobSettings,
) -> Result<CommMatrix, TrafficError> {
    let first = shares(workload, topology, settings)?.swap_remove(0);
    first.workload.matrix(settings.packet_bytes)
}

/// One job's traffic and the nodes it may use, before mapping.
struct Share {
    workload: Workload,
    pool: Vec<NodeId>,
    /// A fixed mapping, or `None` for the one asked for.
    mapping: Option<&'static MappingSpec>,
}

fn shares(
    spec: &WorkloadSpec,
    topology: &Topology,
    settings: &JobSettings,
) -> Result<Vec<Share>, TrafficError> {
    let everywhere = topology.compute_nodes();
    let all = everywhere.len() as u32;
    let alone = |workload| {
        Ok(vec![Share {
            workload,
            pool: everywhere.clone(),
            mapping: None,
        }])
    };
    match spec {
        WorkloadSpec::Stencil(stencil) => alone(Workload::Stencil(Stencil {
            // A stencil phase: one message at line rate.
            phase_ps: transfer_ps(stencil.bytes as f64, settings.link_gbps).round() as u64,
            ..*stencil
        })),
        WorkloadSpec::Reduction(reduction) => alone(Workload::Reduction(*reduction)),
        WorkloadSpec::Ring {
            ranks,
            bytes,
            rounds,
        } => alone(Workload::Ring(Ring {
            ranks: ranks.unwrap_or(all),
            bytes: *bytes,
            rounds: *rounds,
        })),
        WorkloadSpec::Uniform {
            ranks,
            bytes,
            load,
            messages,
        } => {
            if messages.is_none() && settings.end_ps.is_none() {
                return Err(TrafficError::Spec(format!(
                    "workload '{spec}' would never stop: give messages=N or an end time"
                )));
            }
            alone(Workload::Uniform(Uniform {
                ranks: ranks.unwrap_or(all),
                bytes: *bytes,
                load: *load,
                link_gbps: settings.link_gbps,
                end_ps: settings.end_ps,
                messages: *messages,
            }))
        }
        WorkloadSpec::File(path) => alone(Workload::File(WorkloadFile::load(path)?)),
        WorkloadSpec::RingWithBackground {
            bytes,
            rounds,
            load,
            messages,
        } => {
            let (primary, background) = node_split(topology);
            let ring = Workload::Ring(Ring {
                ranks: primary.len() as u32,
                bytes: *bytes,
                rounds: *rounds,
            });
            let uniform = Workload::Uniform(Uniform {
                ranks: background.len() as u32,
                bytes: *bytes,
                load: *load,
                link_gbps: settings.link_gbps,
                end_ps: settings.end_ps,
                messages: Some(*messages),
            });
            Ok(vec![
                Share {
                    workload: ring,
                    pool: primary,
                    mapping: None,
                },
                Share {
                    workload: uniform,
                    pool: background,
                    mapping: Some(&MappingSpec::RowMajor),
                },
            ])
        }
    }
}

fn plan_job(
    workload: Workload,
    mapping: &MappingSpec,
    pool: &[NodeId],
    topology: &Topology,
    settings: &JobSettings,
) -> Result<JobPlan, TrafficError> {
    let name = workload.name();
    let ranks = workload.ranks();
    if matches!(workload, Workload::Ring(_) | Workload::Uniform(_)) && ranks < 2 {
        return Err(TrafficError::Unfit(format!(
            "{name} needs at least 2 ranks (each sends to another), and has {ranks}"
        )));
    }
    if ranks as usize > pool.len() {
        return Err(TrafficError::Unfit(format!(
            "{name} has {ranks} ranks, but {} offers it {} nodes",
            topology.name(),
            pool.len()
        )));
    }
    let matrix = match mapping.needs_matrix() {
        true => Some(workload.matrix(settings.packet_bytes).map_err(|e| {
            TrafficError::Unfit(format!(
                "mapping '{mapping}' cannot be used for {name}: {e}"
            ))
        })?),
        false => None,
    };
    let placement = place(
        mapping,
        ranks,
        matrix.as_ref(),
        pool,
        topology,
        settings.seed,
    )?;
    Ok(JobPlan {
        name,
        workload,
        mapping: mapping.clone(),
        placement,
    })
}
