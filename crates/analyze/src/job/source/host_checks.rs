//! The hosts' own checks as an evidence source ([`super::super::hosts`] judges them).

use model::job::{JobEvidence, JobHostSummary, JobReport, NotJudgedItem};

use super::{Reading, Source};
use crate::job::culprits::Judged;
use crate::job::hosts::read;

/// The hosts' own checks, registered in [`crate::job::SOURCES`]: the job's paths on each
/// host are the tomography's host elements, and each diagnosis on them a culprit.
pub struct HostChecks;

impl Source for HostChecks {
    fn name(&self) -> &'static str {
        "host checks"
    }

    fn read<'a>(&self, evidence: &'a JobEvidence, reading: &mut Reading<'a>) {
        reading.hosts = read(&evidence.hosts);
    }

    fn not_judged(&self, judged: &Judged<'_>) -> Vec<NotJudgedItem> {
        judged.hosts().not_judged.clone()
    }

    fn report(&self, judged: &Judged<'_>, report: &mut JobReport) {
        report.hosts = judged
            .evidence()
            .hosts
            .iter()
            .map(|h| JobHostSummary {
                host: h.host.clone(),
                healthy: h.report.as_ref().map(|r| r.healthy),
                causes: h.report.as_ref().map_or(Vec::new(), |r| {
                    r.diagnoses
                        .iter()
                        .map(|d| d.cause.as_str().to_string())
                        .collect()
                }),
            })
            .collect();
    }
}
