//! The RNIC pairs as an evidence source ([`super::super::paths`] runs their tomography).

use model::job::{JobReport, NotJudgedItem};

use super::Source;
use crate::job::culprits::Judged;

/// The RNIC pairs probed between the job's hosts, registered in
/// [`crate::job::SOURCES`]: each pair's network part is an observation of the one
/// tomography ([`run`]), and the job's cables no judged observation crossed are not judged.
pub struct Pairs;

impl Source for Pairs {
    fn name(&self) -> &'static str {
        "pairs"
    }

    fn not_judged(&self, judged: &Judged<'_>) -> Vec<NotJudgedItem> {
        let mut items = judged.tomography().not_judged.clone();
        items.extend(judged.unjudged_cables());
        items
    }

    fn report(&self, judged: &Judged<'_>, report: &mut JobReport) {
        report.pairs = judged.evidence().pairs.clone();
    }
}
