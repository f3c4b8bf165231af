//! The job verdict's evidence sources as plug-ins (issue 37). Each source is one module that
//! owns its part of a [`JobEvidence`]: what it reads into the one tomography (host paths,
//! pairs' network parts, cables its own counters accuse), its culprits and how it moves
//! the others' ranking ([`Ranking`]), what of it could not be judged, and its part of the
//! [`JobReport`]. [`judge`] iterates [`SOURCES`] at each of those steps, in their order
//! there, except the ranking, which goes by each source's [`Phase`]; so a new source is one
//! module here and one line in [`SOURCES`] (as the job's NCCL collectives were:
//! [`collectives`]).
//!
//! [`judge`]: super::judge
//! [`SOURCES`]: super::SOURCES

use std::collections::BTreeSet;

use model::job::{Culprit, JobEvidence, JobReport, NotJudgedItem};

use super::culprits::Judged;
use super::reading::Reading;

pub mod collectives;
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

    /// When it ranks, against the other sources.
    fn phase(&self) -> Phase;

    /// Its part of the ranking: the culprits it names, the faults it finds that are not the
    /// job's, and the others' culprits it supports or weakens, before they are sorted by
    /// score (a stable sort: the order they are pushed in breaks ties).
    fn rank<'a>(&self, _judged: &Judged<'a>, _ranking: &mut Ranking<'a>) {}

    /// What of its part could not be judged, in the order the report lists it.
    fn not_judged(&self, _judged: &Judged<'_>) -> Vec<NotJudgedItem> {
        Vec::new()
    }

    /// Writes its part of the report.
    fn report(&self, judged: &Judged<'_>, report: &mut JobReport);
}

/// The order the sources rank in, which is not [`super::SOURCES`]' order (that one orders
/// the report's unjudged items and its JSON): a source's culprits go after those of the
/// earlier phases, and it sees what they named. Sources of one phase rank in
/// [`super::SOURCES`]' order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// The tomography's fabric findings: the first culprits, and the cables they name that
    /// no counter need name again.
    Fabric,
    /// The switch ports' counters, on the cables the fabric findings did not name, and
    /// then other jobs' traffic, which needs both the ports and the pairs' findings.
    Counters,
    /// The hosts' own checks, then the job's stragglers.
    Hosts,
    /// Words on the culprits every other phase named (the what-if's).
    Support,
}

/// The culprits as the sources rank them, phase by phase ([`Phase`]).
#[derive(Default)]
pub struct Ranking<'a> {
    /// The job's culprits, in the order they were named (ties keep it).
    pub culprits: Vec<Culprit>,
    /// Faults found that are not the job's.
    pub not_the_jobs: Vec<Culprit>,
    /// Cables a culprit already names (or that a finding named): no other source names
    /// them again.
    pub named_cables: BTreeSet<String>,
    /// Fabric findings that no counter or retransmission corroborates, each with how many
    /// observations it explains: slowness spread over many cables is other jobs' traffic
    /// rather than as many faults, which the [`Phase::Counters`] step decides.
    pub uncorroborated: Vec<(Culprit, usize)>,
    /// The cables on the ways of the pairs an uncorroborated finding explains: those pairs
    /// queue behind the slow cable, and waits there are its back-pressure, not other jobs'
    /// traffic.
    pub queued_behind: BTreeSet<&'a str>,
}
