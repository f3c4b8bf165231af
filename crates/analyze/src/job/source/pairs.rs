//! The RNIC pairs as an evidence source ([`super::super::paths`] runs their tomography).

use model::job::{Culprit, JobReport, Layer, NotJudgedItem};
use model::pair::PartStatus;

use super::{Phase, Ranking, Source};
use crate::job::culprits::{
    fabric_action, listed, Judged, LISTED, SCORE_CANDIDATES, SCORE_CORROBORATED, SCORE_PROVEN,
};
use crate::job::direction;
use crate::job::paths::Finding;
use crate::job::ports::{JudgedPort, PortState};

/// The RNIC pairs probed between the job's hosts, registered in
/// [`crate::job::SOURCES`]: each pair's network part is an observation of the one
/// tomography ([`run`]), and the job's cables no judged observation crossed are not judged.
pub struct Pairs;

impl Source for Pairs {
    fn name(&self) -> &'static str {
        "pairs"
    }

    fn phase(&self) -> Phase {
        Phase::Fabric
    }

    /// The tomography's fabric findings: corroborated ones are culprits; the others wait in
    /// the ranking for the switch ports' step, which tells other jobs' traffic from them.
    fn rank<'a>(&self, judged: &Judged<'a>, ranking: &mut Ranking<'a>) {
        let segments = judged.hosts().segment_elements();
        let tomography = judged.tomography();
        for finding in &tomography.findings {
            if finding.elements.iter().all(|e| segments.contains(e)) {
                continue; // hosts' findings come from their own checks
            }
            let (culprit, corroborated) = fabric_culprit(judged, finding);
            ranking
                .named_cables
                .extend(finding.elements.iter().cloned());
            if off_the_jobs_routes(judged, &culprit) {
                // Pairs chosen for coverage cross cables the job's own traffic never does
                // (a cross-rail pair of a job with one leaf per rail): what they find there
                // is not the job's (DESIGN 4.7).
                ranking.not_the_jobs.push(culprit);
            } else if corroborated {
                ranking.culprits.push(culprit);
            } else {
                ranking.queued_behind.extend(
                    finding
                        .explains
                        .iter()
                        .filter_map(|&o| tomography.observations[o].pair)
                        .flat_map(|p| judged.evidence().pairs[p].cables.iter().map(String::as_str)),
                );
                ranking
                    .uncorroborated
                    .push((culprit, finding.explains.len()));
            }
        }
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

/// Whether the cable `culprit` names (proven, or the likeliest of a group) is off the job's
/// routes, or, where it names none, every cable of its group. With the job's cables unknown
/// (an empty list), none is.
fn off_the_jobs_routes(judged: &Judged<'_>, culprit: &Culprit) -> bool {
    let job_cables = &judged.evidence().job_cables;
    let off = |cable: &String| !job_cables.contains(cable);
    !job_cables.is_empty()
        && match &culprit.component {
            Some(named) => off(named),
            None => culprit.candidates.iter().all(off),
        }
}

/// A culprit for a group of cables the tomography found, and whether counters or
/// retransmissions corroborate it.
fn fabric_culprit(judged: &Judged<'_>, finding: &Finding) -> (Culprit, bool) {
    let ports_of = |cable: &str| -> Vec<&JudgedPort> {
        judged
            .ports()
            .iter()
            .filter(|p| p.port.cable == cable)
            .collect()
    };
    let flagged = |cable: &str| {
        ports_of(cable)
            .iter()
            .any(|p| matches!(p.state, PortState::Errors | PortState::Down))
    };
    // Counters may single out one member of a group the probes cannot split.
    let flagged_members: Vec<&String> = finding.elements.iter().filter(|e| flagged(e)).collect();
    let proven: Option<&String> = match (finding.elements.as_slice(), &flagged_members[..]) {
        ([only], _) => Some(only),
        (_, [one]) => Some(*one),
        _ => None,
    };
    let pairs: Vec<&model::job::JobPair> = finding
        .explains
        .iter()
        .filter_map(|&i| judged.tomography().observations[i].pair)
        .map(|p| &judged.evidence().pairs[p])
        .collect();
    // The pairs' RNIC counters may say which way packets were lost: the sending end's
    // cable, when every pair that says one says the same member of the group.
    let directed: Vec<(&str, String)> = pairs
        .iter()
        .filter_map(|p| direction::lossy_from(p))
        .filter(|(cable, _)| finding.elements.iter().any(|e| e == cable))
        .collect();
    let sending = match directed.as_slice() {
        [(first, _), rest @ ..] if rest.iter().all(|(c, _)| c == first) => {
            finding.elements.iter().find(|e| e == first)
        }
        _ => None,
    };
    // Else a gray group's likeliest member is named; the group stays the candidates.
    let likeliest = match (proven, sending, finding.likeliest.as_slice()) {
        (None, Some(cable), _) => Some(cable),
        (None, None, [one]) => Some(one),
        _ => None,
    };
    let counters: Vec<&JudgedPort> = match proven {
        Some(cable) => ports_of(cable),
        None => finding.elements.iter().flat_map(|e| ports_of(e)).collect(),
    }
    .into_iter()
    .filter(|p| p.state != PortState::Normal)
    .collect();
    let down = counters.iter().any(|p| p.state == PortState::Down)
        || pairs
            .iter()
            .any(|p| p.parts.network_status == PartStatus::Failed);
    let errors = counters.iter().any(|p| p.state == PortState::Errors)
        || pairs.iter().any(|p| p.retransmitted_packets > 0)
        || !directed.is_empty();
    let cause = if down {
        "link_down"
    } else if errors {
        "link_errors"
    } else if finding.gray {
        "link_flapping"
    } else {
        "link_degraded"
    };
    // Counters or retransmissions on the pairs say the cable itself corrupts or drops.
    let corroborated = down || errors;
    let mut evidence = format!(
        "{} pair(s) crossing {} are abnormal in their network part ({})",
        pairs.len(),
        match proven {
            Some(c) => c.clone(),
            None => format!("one of {}", finding.elements.join(", ")),
        },
        listed(pairs.iter().map(|p| pair_words(p)))
    );
    if finding.gray {
        evidence.push_str("; the pairs that cross it at other times are normal: it comes and goes");
    } else if proven.is_some() && finding.elements.len() == 1 {
        evidence.push_str("; every other cable on those pairs is normal on another pair");
    }
    for p in counters.iter().take(LISTED) {
        evidence.push_str("; ");
        evidence.push_str(&p.words());
    }
    match (likeliest, directed.first()) {
        (Some(one), Some((_, words))) if sending == Some(one) => {
            evidence.push_str("; ");
            evidence.push_str(words);
        }
        (Some(one), _) => evidence.push_str(&format!(
            "; {one} is the likeliest: the fewest normal pairs cross it"
        )),
        (None, _) => {}
    }
    let score = match (proven, likeliest) {
        (Some(_), _) if finding.gray && !corroborated => SCORE_CANDIDATES + 0.1,
        (Some(_), _) => {
            SCORE_PROVEN
                + if corroborated {
                    SCORE_CORROBORATED
                } else {
                    0.0
                }
        }
        (None, Some(_)) => SCORE_CANDIDATES + 0.1,
        (None, None) => SCORE_CANDIDATES,
    };
    let culprit = Culprit {
        layer: Layer::Fabric,
        host: None,
        component: proven.or(likeliest).cloned(),
        cause: cause.to_string(),
        score,
        evidence,
        candidates: match (proven, likeliest) {
            (Some(_), _) => Vec::new(),
            // The likeliest first, the others after it.
            (None, Some(one)) => std::iter::once(one)
                .chain(finding.elements.iter().filter(|e| *e != one))
                .cloned()
                .collect(),
            (None, None) => finding.elements.clone(),
        },
        action: fabric_action(cause, proven.or(likeliest).map(String::as_str)),
    };
    (culprit, corroborated)
}

/// A pair by name, with why it is abnormal.
fn pair_words(p: &model::job::JobPair) -> String {
    let name = crate::job::paths::pair_name(p);
    match &p.reason {
        Some(r) => format!("{name}: {r}"),
        None => name,
    }
}

#[cfg(test)]
mod tests {
    use model::job::JobEvidence;
    use model::pair::PartStatus;
    use model::PathStatus;

    use super::Pairs;
    use crate::job::tests::{evidence, host, pair, ranked, report};

    fn slow_pair(retransmitted_packets: u64) -> JobEvidence {
        let mut slow = pair(PartStatus::Abnormal);
        slow.retransmitted_packets = retransmitted_packets;
        evidence(
            vec![
                host("n1", Some(report("n1", PathStatus::Normal))),
                host("n2", Some(report("n2", PathStatus::Normal))),
            ],
            vec![slow],
        )
    }

    #[test]
    fn a_finding_retransmissions_corroborate_is_a_culprit_and_one_alone_waits_aside() {
        let (culprits, _, aside) = ranked(&slow_pair(7), &[&Pairs]);
        assert_eq!(culprits.len(), 1, "{culprits:?}");
        assert_eq!(culprits[0].cause, "link_errors");
        assert_eq!(culprits[0].candidates, ["leaf1/1", "leaf1/2"]);
        assert!(aside.is_empty(), "{aside:?}");
        let (culprits, _, aside) = ranked(&slow_pair(0), &[&Pairs]);
        assert!(culprits.is_empty(), "{culprits:?}");
        assert_eq!(aside.len(), 1, "{aside:?}");
        assert_eq!(aside[0].candidates, ["leaf1/1", "leaf1/2"]);
    }

    #[test]
    fn a_finding_off_the_jobs_routes_is_not_the_jobs() {
        // A coverage pair crossing two uplinks the job's traffic never takes: its errors
        // are found and listed, never the job's culprit.
        let mut e = slow_pair(7);
        e.pairs[0].cables = vec!["leaf1/9".into(), "leaf5/9".into()];
        let (culprits, not_the_jobs, aside) = ranked(&e, &[&Pairs]);
        assert!(culprits.is_empty(), "{culprits:?}");
        assert!(aside.is_empty(), "{aside:?}");
        assert_eq!(not_the_jobs.len(), 1, "{not_the_jobs:?}");
        assert_eq!(not_the_jobs[0].candidates, ["leaf1/9", "leaf5/9"]);
        // With the job's cables unknown, nothing is known to be off its routes.
        e.job_cables.clear();
        let (culprits, not_the_jobs, _) = ranked(&e, &[&Pairs]);
        assert_eq!(culprits.len(), 1, "{culprits:?}");
        assert!(not_the_jobs.is_empty(), "{not_the_jobs:?}");
    }
}
