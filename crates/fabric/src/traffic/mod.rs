//! Workloads and mappings (thesis chapter 4): what each rank sends, and where ranks run.
//!
//! CONTRACT (fixed by the integrator): the simulator runs [`Job`]s. A job's ranks are placed
//! on nodes by its `placement` (rank -> node, one rank per node), and its [`Program`] tells
//! the simulator, rank by rank, the next operation once the previous one is done.
//!
//! What is here, by job:
//!
//! - workloads (each a [`Program`] over logical ranks): [`Stencil`] (4.2), [`Reduction`]
//!   naive and tree (4.3), [`Ring`] and [`Uniform`] (4.4), [`WorkloadFile`]; the enum
//!   [`Workload`] over them, and [`WorkloadSpec`], the command-line form;
//! - mappings (rank -> node, 4.2): [`MappingSpec`] and [`place`]: row-major, random, reverse
//!   Cuthill-McKee (`rcm`), METIS graph partitioning (`partition`), incremental Kernighan-Lin
//!   partitioning (`incremental`), geometric tiling (`tiling`), a [`MappingFile`]; the node
//!   split of 4.4 ([`node_split`]);
//! - [`CommMatrix`]: bytes and packets between rank pairs, and what a mapping makes of them
//!   ([`MappingQuality`]: average path length as in Table 4.1, leaf-level edge cut);
//! - [`suggest_mapping`]: tiling for a 2-D grid pattern, graph partitioning otherwise;
//! - [`plan_jobs`] / [`build_jobs`]: a workload spec and a mapping spec to the jobs to run.

mod file;
mod graph;
mod incremental;
mod lines;
mod mapping;
mod mapping_file;
mod matrix;
mod partition;
mod plan;
mod rcm;
mod reduction;
mod ring;
mod script;
mod spec;
mod split;
mod stencil;
mod suggest;
mod tiling;
mod uniform;
pub mod units;
mod workload;

use rand::RngCore;

use crate::input::InputError;
use crate::topology::NodeId;

pub use file::WorkloadFile;
pub use mapping::{place, MappingSpec};
pub use mapping_file::MappingFile;
pub use matrix::{CommMatrix, Flow, MappingQuality};
pub use plan::{build_jobs, plan_jobs, workload_matrix, JobPlan, JobSettings};
pub use rcm::reverse_cuthill_mckee;
pub use reduction::{Reduction, ReductionKind};
pub use ring::Ring;
pub use spec::WorkloadSpec;
pub use split::node_split;
pub use stencil::Stencil;
pub use suggest::{suggest_mapping, Suggestion};
pub use tiling::{Grid, Tile};
pub use uniform::Uniform;
pub use workload::Workload;

/// Why a workload or a mapping cannot be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TrafficError {
    /// A bad `--workload` or `--mapping` argument; the message lists the valid forms.
    #[error("{0}")]
    Spec(String),
    /// A bad workload, mapping or matrix file.
    #[error(transparent)]
    Input(#[from] InputError),
    /// A well-formed request that this topology or pattern cannot satisfy (more ranks than
    /// nodes, tiling a pattern that is not a grid, a matrix of random traffic, ...).
    #[error("{0}")]
    Unfit(String),
}

/// What a rank does next.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Send `bytes` to rank `dst` of the same job, not before `not_before_ps`. The simulator
    /// asks for the next op when the message's last packet has left the NIC.
    Send {
        /// The receiving rank.
        dst: u32,
        /// Bytes of the message.
        bytes: u64,
        /// Earliest time it may leave, ps.
        not_before_ps: u64,
    },
    /// Wait until this rank has received `total` messages since the start (then ask again).
    AwaitReceived {
        /// Messages received since the start to wait for.
        total: u64,
    },
}

/// The per-rank programs of one job.
pub trait Program: Send {
    /// The next operation of `rank`, or `None` when the rank has finished.
    fn next_op(&mut self, rank: u32, rng: &mut dyn RngCore) -> Option<Op>;
}

/// One application on the fabric.
pub struct Job {
    /// The job's name, as reports show it.
    pub name: String,
    /// `placement[rank]` is the node rank `rank` runs on.
    pub placement: Vec<NodeId>,
    /// What each rank does, op by op.
    pub program: Box<dyn Program>,
}
