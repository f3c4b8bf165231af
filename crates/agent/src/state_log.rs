//! What the agent logs about its host: each symptom and each verdict once, when it appears,
//! when it changes and when it clears, not on every run. A storm of pauses probes every few
//! seconds for hours; the same line thousands of times would hide the one that changed.
//! Every run is still stored, counted in `/metrics` and listed by `/api/runs`.

use analyze::Symptom;
use model::Report;
use std::collections::BTreeMap;

/// What the agent last said.
#[derive(Debug, Default)]
pub struct StateLog {
    /// The symptoms present at the last reading, by what they are (`pfc rnic0`), with their
    /// words at their appearance.
    symptoms: BTreeMap<String, String>,
    /// The verdict last said, per trigger.
    verdicts: BTreeMap<String, String>,
}

/// A symptom's identity: its kind and RNIC, not its values (a pause ratio moving from 0.18
/// to 0.19 is the same symptom).
fn identity(symptom: &Symptom) -> String {
    let rnic = match symptom {
        Symptom::Pause { rnic, .. }
        | Symptom::Drops { rnic, .. }
        | Symptom::Transport { rnic, .. } => rnic,
    };
    format!("{} {rnic}", symptom.trigger())
}

impl StateLog {
    /// The lines to log for the symptoms of this reading: each one that appeared, and each
    /// one that cleared; none when they are the same as at the last reading.
    pub fn symptoms(&mut self, found: &[Symptom]) -> Vec<String> {
        let mut now = BTreeMap::new();
        for s in found {
            let detail = self
                .symptoms
                .get(&identity(s))
                .cloned()
                .unwrap_or_else(|| s.detail());
            now.insert(identity(s), detail);
        }
        let appeared = now
            .iter()
            .filter(|(id, _)| !self.symptoms.contains_key(*id))
            .map(|(_, detail)| format!("symptom: {detail}"));
        let cleared = self
            .symptoms
            .iter()
            .filter(|(id, _)| !now.contains_key(*id))
            .map(|(id, detail)| format!("symptom cleared: {id} (appeared as: {detail})"));
        let lines = appeared.chain(cleared).collect();
        self.symptoms = now;
        lines
    }

    /// Whether a run of `trigger` with this verdict is news: the first of its trigger, or a
    /// verdict other than the last one said for it.
    pub fn verdict_is_news(&mut self, trigger: &str, verdict: &str) -> bool {
        let previous = self.verdicts.insert(trigger.to_owned(), verdict.to_owned());
        previous.as_deref() != Some(verdict)
    }
}

/// A report's verdict in words: "healthy" only when it was judged healthy; an inconclusive
/// run says what was not judged and why; the diagnoses with their links.
pub fn verdict(report: &Report) -> String {
    let mut parts: Vec<String> = report
        .diagnoses
        .iter()
        .map(|d| {
            let links: Vec<&str> = d.links.iter().map(|l| l.as_str()).collect();
            format!("{} {}", d.cause.as_str(), links.join(","))
        })
        .collect();
    if report.inconclusive {
        let why: Vec<String> = report
            .not_judged
            .iter()
            .map(|n| format!("{} ({} paths)", n.reason.as_str(), n.paths.len()))
            .collect();
        parts.push(format!("inconclusive: not judged: {}", why.join(", ")));
    }
    if parts.is_empty() {
        if report.healthy {
            "healthy".to_owned()
        } else {
            // Not healthy, yet nothing found nor left unjudged: say so rather than guess.
            "not healthy (no diagnosis)".to_owned()
        }
    } else {
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::{ComponentId, NotJudged, NotJudgedReason};

    fn pause(rnic: &str, ratio: f64) -> Symptom {
        Symptom::Pause {
            rnic: ComponentId::from(rnic),
            ratio,
            limit: 0.03,
        }
    }

    #[test]
    fn a_symptom_is_said_when_it_appears_changes_and_clears_not_while_it_lasts() {
        let mut log = StateLog::default();
        assert!(log.symptoms(&[]).is_empty());
        assert_eq!(
            log.symptoms(&[pause("rnic0", 0.18)]),
            ["symptom: rnic0 tx pause ratio 0.180 > PFC_high 0.03"]
        );
        // The same symptom with another value, reading after reading: nothing.
        for ratio in [0.19, 0.2, 0.17] {
            assert!(log.symptoms(&[pause("rnic0", ratio)]).is_empty());
        }
        // It moves to another RNIC: one appears, the other clears.
        assert_eq!(
            log.symptoms(&[pause("rnic1", 0.5)]),
            [
                "symptom: rnic1 tx pause ratio 0.500 > PFC_high 0.03",
                "symptom cleared: pfc rnic0 (appeared as: rnic0 tx pause ratio 0.180 > PFC_high 0.03)"
            ]
        );
        let drops = Symptom::Drops {
            rnic: ComponentId::from("rnic1"),
            count: 7,
        };
        assert_eq!(
            log.symptoms(&[pause("rnic1", 0.5), drops.clone()]),
            ["symptom: rnic1 dropped 7 packets"]
        );
        assert_eq!(log.symptoms(&[]).len(), 2, "both clear");
        assert!(log.symptoms(&[]).is_empty());
    }

    #[test]
    fn a_verdict_is_news_once_per_trigger_until_it_changes() {
        let mut log = StateLog::default();
        assert!(log.verdict_is_news("pfc", "healthy"));
        assert!(!log.verdict_is_news("pfc", "healthy"));
        assert!(log.verdict_is_news("idle", "healthy"), "another trigger");
        assert!(log.verdict_is_news("pfc", "link_overloaded rnic0--lsw0"));
        assert!(!log.verdict_is_news("pfc", "link_overloaded rnic0--lsw0"));
        assert!(log.verdict_is_news("pfc", "healthy"), "it cleared");
    }

    #[test]
    fn an_inconclusive_run_is_never_called_healthy() {
        let mut report: Report = serde_json::from_value(serde_json::json!({
            "host": "dgx-a100", "mode": "idle", "healthy": true, "provenance": "simulated",
            "run": 0, "paths": [], "links": [], "diagnoses": []
        }))
        .unwrap();
        assert_eq!(verdict(&report), "healthy");
        report.healthy = false;
        report.inconclusive = true;
        report.not_judged = vec![NotJudged {
            reason: NotJudgedReason::NoBaseline,
            paths: vec!["rnic0->gpu0".into(), "rnic0->gpu1".into()],
            links: vec![],
            detail: "the baseline has no entry for these paths".into(),
        }];
        assert_eq!(
            verdict(&report),
            "inconclusive: not judged: no_baseline (2 paths)"
        );
        // Even a report that says both is not called healthy.
        report.healthy = true;
        assert!(
            !verdict(&report).contains("healthy"),
            "{}",
            verdict(&report)
        );
    }
}
