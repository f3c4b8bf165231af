//! The what-if as an evidence source ([`super::super::what_if`] weighs its word).

use model::job::{Culprit, JobReport, NotJudgedItem};

use super::Source;
use crate::job::culprits::Judged;
use crate::job::what_if::{apply, unexplained_time};

/// The what-if, registered in [`crate::job::SOURCES`].
pub struct WhatIfSource;

impl Source for WhatIfSource {
    fn name(&self) -> &'static str {
        "what-if"
    }

    fn rank(&self, judged: &Judged<'_>, culprits: &mut Vec<Culprit>) {
        apply(judged.evidence(), culprits);
    }

    fn not_judged(&self, judged: &Judged<'_>) -> Vec<NotJudgedItem> {
        unexplained_time(judged.evidence()).into_iter().collect()
    }

    fn report(&self, judged: &Judged<'_>, report: &mut JobReport) {
        report.what_if = judged.evidence().what_if.clone();
    }
}
