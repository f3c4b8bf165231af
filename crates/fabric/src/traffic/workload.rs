//! One job's traffic, whichever kind: its size, its program and its communication matrix.

use super::file::WorkloadFile;
use super::matrix::CommMatrix;
use super::reduction::{Reduction, ReductionKind};
use super::ring::Ring;
use super::script::{sends, Script, Scripted};
use super::stencil::Stencil;
use super::uniform::Uniform;
use super::{Program, TrafficError};

/// One job's traffic, its options resolved against the tree (ranks filled in).
#[derive(Clone, Debug, PartialEq)]
pub enum Workload {
    /// The 2-D stencil (thesis 4.2).
    Stencil(Stencil),
    /// The reduction (thesis 4.3).
    Reduction(Reduction),
    /// The ring exchange (thesis 4.4).
    Ring(Ring),
    /// Uniform random traffic (thesis 4.4's background).
    Uniform(Uniform),
    /// Messages read from a workload file.
    File(WorkloadFile),
}

impl Workload {
    /// Ranks of the job.
    pub fn ranks(&self) -> u32 {
        match self {
            Workload::Stencil(s) => s.ranks(),
            Workload::Reduction(r) => r.ranks,
            Workload::Ring(r) => r.ranks,
            Workload::Uniform(u) => u.ranks,
            Workload::File(f) => f.ranks(),
        }
    }

    /// A short name for reports: `stencil 64x72`, `reduction tree`, `ring`, ...
    pub fn name(&self) -> String {
        match self {
            Workload::Stencil(s) => format!("stencil {}x{}", s.width, s.height),
            Workload::Reduction(r) => match r.kind {
                ReductionKind::Naive => "reduction naive".to_string(),
                ReductionKind::Tree => "reduction tree".to_string(),
            },
            Workload::Ring(_) => "ring".to_string(),
            Workload::Uniform(_) => "uniform".to_string(),
            Workload::File(f) => f.path.display().to_string(),
        }
    }

    /// A fresh program playing this workload from the start.
    pub fn program(&self) -> Box<dyn Program> {
        match self {
            Workload::Stencil(s) => Box::new(Scripted::new(*s)),
            Workload::Reduction(r) => Box::new(Scripted::new(*r)),
            Workload::Ring(r) => Box::new(Scripted::new(*r)),
            Workload::Uniform(u) => Box::new(u.program()),
            Workload::File(f) => Box::new(Scripted::new(f.clone())),
        }
    }

    /// Bytes and packets between every pair of ranks over the whole run. Uniform random
    /// traffic has none to give: its destinations are drawn while it runs, and in
    /// expectation every pair is alike, so no mapping beats another.
    pub fn matrix(&self, packet_bytes: u32) -> Result<CommMatrix, TrafficError> {
        let script = self.script().ok_or_else(|| {
            TrafficError::Unfit(
                "uniform random traffic has no fixed communication matrix (every pair is alike); \
                 map it row-major, at random or from a file"
                    .to_string(),
            )
        })?;
        Ok(CommMatrix::from_messages(
            script.ranks(),
            sends(script),
            packet_bytes,
        ))
    }

    fn script(&self) -> Option<&dyn Script> {
        match self {
            Workload::Stencil(s) => Some(s),
            Workload::Reduction(r) => Some(r),
            Workload::Ring(r) => Some(r),
            Workload::Uniform(_) => None,
            Workload::File(f) => Some(f),
        }
    }
}
