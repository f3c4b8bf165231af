//! What the evidence sources read before the tomography runs ([`super::source::Source::read`]),
//! kept apart from the sources so that the culprits' judgement (`culprits::Judged`) reads it
//! without depending on the sources that rank through that judgement.

use std::collections::BTreeSet;

use model::inspector::Symptom;

use super::hosts::Hosts;
use super::ports::JudgedPort;

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
    /// The job's own collectives judged (DESIGN 4.8), each rank placed on its GPU's RNIC:
    /// judged once, for the ranking and the report.
    pub symptom: Option<Symptom>,
}
