//! The what-if as an evidence source (issue 28 section 3): a simulated replay of the job's
//! traffic says whether its own pattern or mapping explains a healthy infrastructure's time,
//! supports an element or other jobs' traffic already named, or finds the time slow with no
//! measured state to explain it (then the time is not judged, never `neither`).

use model::job::{Culprit, JobEvidence, Layer, NotJudgedItem};

use super::culprits::{fabric_action, SCORE_CANDIDATES, SCORE_CORROBORATED, SCORE_COUNTERS};

/// A what-if that finds the job slower than its healthy replay and no measured state
/// reproducing it leaves the job's time unexplained: the slowness is real and nothing
/// judged accounts for it (a host's state its check did not see, a fabric state not
/// measured), so it is something not judged, never `neither`.
pub(crate) fn unexplained_time(evidence: &JobEvidence) -> Option<NotJudgedItem> {
    let w = evidence.what_if.as_ref()?;
    (w.explains == "unexplained").then(|| NotJudgedItem {
        what: "the job's time".to_string(),
        why: format!("what-if: {}", w.evidence),
    })
}

/// The what-if's word: the job's own pattern or mapping on a healthy infrastructure, or
/// support for an element or for other jobs' traffic already named.
pub(crate) fn apply(evidence: &JobEvidence, culprits: &mut Vec<Culprit>) {
    let Some(w) = &evidence.what_if else {
        return;
    };
    match w.explains.as_str() {
        "pattern" | "mapping" if culprits.is_empty() => {
            let action = if w.explains == "mapping" {
                format!(
                    "change the mapping: place the ranks on {}",
                    w.suggested_mapping.join(", ")
                )
            } else {
                "change the communication pattern (a ring or tree collective in place \
                 of the one that congests), or spread the ranks it funnels into"
                    .to_string()
            };
            culprits.push(Culprit {
                layer: Layer::Job,
                host: None,
                component: None,
                cause: w.explains.clone(),
                score: SCORE_COUNTERS,
                evidence: format!("simulated what-if: {}", w.evidence),
                candidates: Vec::new(),
                action,
            });
        }
        "background_traffic" => {
            let infrastructure = culprits.iter().any(|c| c.layer != Layer::Job);
            match culprits
                .iter_mut()
                .find(|c| c.cause == "background_traffic")
            {
                Some(c) => {
                    c.score = (c.score + SCORE_CORROBORATED).min(1.0);
                    c.evidence
                        .push_str(&format!("; simulated what-if: {}", w.evidence));
                }
                None if !infrastructure => {
                    culprits.push(Culprit {
                        layer: Layer::Fabric,
                        host: None,
                        component: None,
                        cause: "background_traffic".to_string(),
                        score: SCORE_CANDIDATES,
                        evidence: format!("simulated what-if: {}", w.evidence),
                        candidates: Vec::new(),
                        action: fabric_action("background_traffic", None),
                    });
                }
                None => {}
            }
        }
        "element" => {
            if let Some(c) = culprits
                .iter_mut()
                .find(|c| c.component.is_some() && c.component == w.element)
            {
                c.score = (c.score + SCORE_CORROBORATED).min(1.0);
                c.evidence
                    .push_str(&format!("; simulated what-if: {}", w.evidence));
            }
        }
        _ => {}
    }
}
