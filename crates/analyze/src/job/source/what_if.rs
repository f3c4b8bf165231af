//! The what-if as an evidence source ([`super::super::what_if`] weighs its word).

use model::job::{JobReport, NotJudgedItem};

use super::{Phase, Ranking, Source};
use crate::job::culprits::Judged;
use crate::job::what_if::{apply, unexplained_time};

/// The what-if, registered in [`crate::job::SOURCES`].
pub struct WhatIfSource;

impl Source for WhatIfSource {
    fn name(&self) -> &'static str {
        "what-if"
    }

    fn phase(&self) -> Phase {
        Phase::Support
    }

    fn rank<'a>(&self, judged: &Judged<'a>, ranking: &mut Ranking<'a>) {
        apply(judged.evidence(), &mut ranking.culprits);
    }

    fn not_judged(&self, judged: &Judged<'_>) -> Vec<NotJudgedItem> {
        unexplained_time(judged.evidence()).into_iter().collect()
    }

    fn report(&self, judged: &Judged<'_>, report: &mut JobReport) {
        report.what_if = judged.evidence().what_if.clone();
    }
}

#[cfg(test)]
mod tests {
    use model::job::{Layer, WhatIf};
    use model::pair::PartStatus;
    use model::PathStatus;

    use super::WhatIfSource;
    use crate::job::tests::{evidence, host, pair, ranked, report};

    #[test]
    fn the_jobs_own_pattern_is_the_culprit_of_a_healthy_infrastructure() {
        let mut e = evidence(
            vec![
                host("n1", Some(report("n1", PathStatus::Normal))),
                host("n2", Some(report("n2", PathStatus::Normal))),
            ],
            vec![pair(PartStatus::Normal)],
        );
        e.what_if = Some(WhatIf {
            traffic: "all-to-all of 64 MiB over 2 ranks".into(),
            scenarios: Vec::new(),
            explains: "pattern".into(),
            element: None,
            suggested_mapping: Vec::new(),
            evidence: "the healthy replay is as slow as the job".into(),
            simulated: true,
        });
        let (culprits, _, _) = ranked(&e, &[&WhatIfSource]);
        assert_eq!(culprits.len(), 1, "{culprits:?}");
        assert_eq!(culprits[0].layer, Layer::Job);
        assert_eq!(culprits[0].cause, "pattern");
    }
}
