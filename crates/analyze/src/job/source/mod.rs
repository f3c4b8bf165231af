//! The job verdict's evidence sources as plug-ins (issue 37). Each source is one module that
//! owns its part of a [`JobEvidence`]: what it reads into the one tomography (host paths,
//! pairs' network parts, cables its own counters accuse), how it moves the culprits'
//! ranking, what of it could not be judged, and its part of the [`JobReport`]. [`judge`]
//! iterates [`SOURCES`] at each of those steps, in their order here, so a new source (the
//! job's NCCL collectives, next) is one module here and one line in [`SOURCES`].
//!
//! [`judge`]: super::judge
//! [`SOURCES`]: super::SOURCES

use std::collections::BTreeSet;

use model::job::{Culprit, JobEvidence, JobReport, NotJudgedItem};

use super::culprits::Judged;
use super::hosts::Hosts;
use super::ports::JudgedPort;

pub mod host_checks;
pub mod pairs;
pub mod switch_ports;
pub mod what_if;

/// One kind of evidence the verdict is drawn from.
pub trait Source: Sync {
    /// Its name in words (`host checks`).
    fn name(&self) -> &'static str;

    /// Reads its part of `evidence` into `reading`, before the tomography runs.
    fn read<'a>(&self, _evidence: &'a JobEvidence, _reading: &mut Reading<'a>) {}

    /// Moves the ranking: culprits it adds, supports or weakens, once every finding of the
    /// tomography, the ports and the hosts is a culprit, before they are sorted by score.
    fn rank(&self, _judged: &Judged<'_>, _culprits: &mut Vec<Culprit>) {}

    /// What of its part could not be judged, in the order the report lists it.
    fn not_judged(&self, _judged: &Judged<'_>) -> Vec<NotJudgedItem> {
        Vec::new()
    }

    /// Writes its part of the report.
    fn report(&self, judged: &Judged<'_>, report: &mut JobReport);
}

/// What the sources read, for the tomography and the ranking.
#[derive(Default)]
pub struct Reading<'a> {
    /// The hosts' own checks: the job's paths on each and their diagnoses.
    pub hosts: Hosts<'a>,
    /// The switch ports, judged by their counters.
    pub ports: Vec<JudgedPort<'a>>,
    /// Cables a source accuses on its own (a port's errors or link downs): the tomography
    /// names them before any cable it cannot tell from them.
    pub accused: BTreeSet<String>,
}
