//! The RNIC pairs as an evidence source ([`super::super::paths`] runs their tomography).

use std::collections::BTreeSet;

use model::job::{Culprit, JobPair, JobReport, Layer, NotJudgedItem, ProbeCount, ProbePhase};
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
        report.probed = probe_count(&report.pairs);
    }
}

/// The pair's two ends, the same whichever end probed: a pair probed in several rounds
/// (or again as a follow-up) is one pair.
fn ends(p: &JobPair) -> [(&str, &str); 2] {
    let a = (p.parts.a.host.as_str(), p.parts.a.rnic.as_str());
    let b = (p.parts.b.host.as_str(), p.parts.b.rnic.as_str());
    if a <= b {
        [a, b]
    } else {
        [b, a]
    }
}

/// Distinct pairs, probes and rounds of each phase.
fn probe_count(pairs: &[JobPair]) -> ProbeCount {
    let rounds = |phase: ProbePhase| {
        let of_phase = pairs
            .iter()
            .filter_map(|p| p.round)
            .filter(|r| r.phase == phase);
        of_phase.map(|r| r.rounds).max().unwrap_or(0)
    };
    let follow_up_probes = pairs
        .iter()
        .filter(|p| p.round.is_some_and(|r| r.phase == ProbePhase::FollowUp))
        .count();
    ProbeCount {
        pairs: pairs.iter().map(ends).collect::<BTreeSet<_>>().len(),
        probes: pairs.len(),
        mesh_rounds: rounds(ProbePhase::Mesh),
        follow_up_probes,
        follow_up_rounds: rounds(ProbePhase::FollowUp),
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
    let pairs: Vec<&JobPair> = finding
        .explains
        .iter()
        .filter_map(|&i| judged.tomography().observations[i].pair)
        .map(|p| &judged.evidence().pairs[p])
        .collect();
    // A pair probed in several rounds is named once, with its first abnormal probe's words.
    let mut seen = BTreeSet::new();
    let distinct: Vec<&JobPair> = pairs
        .iter()
        .copied()
        .filter(|p| seen.insert(ends(p)))
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
    let probes = if pairs.len() > distinct.len() {
        format!(", in {} probes", pairs.len())
    } else {
        String::new()
    };
    let mut evidence = format!(
        "{} pair(s) crossing {} are abnormal in their network part ({}){probes}",
        distinct.len(),
        match proven {
            Some(c) => c.clone(),
            None => format!("one of {}", finding.elements.join(", ")),
        },
        listed(distinct.iter().map(|p| pair_words(p)))
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
    let follow_ups = follow_ups_on(judged, &finding.elements);
    // Whether the follow-ups saw it again; `None` when they did not cross every member.
    let seen_again = follow_ups.map(|f| f.abnormal > 0);
    let score = match (proven, likeliest) {
        // The follow-ups crossed each member alone and every one of their rounds was
        // normal: what the first probes saw is no longer there (DESIGN 4.7 rule 8).
        _ if seen_again == Some(false) => SCORE_CLEARED,
        // A flapping member that no counter and no follow-up caught degraded is a
        // candidate, not proven; once a follow-up pair crossing it alone catches it, the
        // probes prove it (the next arm).
        (Some(_), _) if finding.gray && !corroborated && seen_again.is_none() => {
            SCORE_CANDIDATES + 0.1
        }
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
    if let Some(f) = follow_ups {
        evidence.push_str("; ");
        evidence.push_str(&f.words());
    }
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

/// Score of a finding whose every member the follow-up probes (`--probe`) crossed and found
/// normal in every round: the first probes' slowness was not seen again, so it is kept
/// (it may flap more slowly than the follow-ups' rounds) but ranked below any group the
/// evidence still points at.
pub const SCORE_CLEARED: f64 = 0.3;

/// What the follow-up pairs found on a finding's members.
#[derive(Clone, Copy)]
struct FollowUpsOn {
    /// Follow-up probes that crossed a member.
    probes: usize,
    /// Of those, probes whose network part was abnormal (or failed).
    abnormal: usize,
    /// Rounds of the follow-ups.
    rounds: u32,
}

impl FollowUpsOn {
    fn words(&self) -> String {
        if self.abnormal == 0 {
            format!(
                "the follow-up probes cleared it: {} follow-up probe(s) crossing its \
                 member(s), in {} round(s), were all normal",
                self.probes, self.rounds
            )
        } else {
            format!(
                "{} of {} follow-up probe(s) crossing it, in {} round(s), were abnormal",
                self.abnormal, self.probes, self.rounds
            )
        }
    }
}

/// The follow-up pairs (`--probe`) that crossed `members`, when every member was crossed by
/// one; `None` when none ran or one member was not crossed.
fn follow_ups_on(judged: &Judged<'_>, members: &[String]) -> Option<FollowUpsOn> {
    let follow_ups: Vec<&JobPair> = judged
        .evidence()
        .pairs
        .iter()
        .filter(|p| p.round.is_some_and(|r| r.phase == ProbePhase::FollowUp))
        .filter(|p| p.parts.network_status != PartStatus::Uncertain)
        .collect();
    let crossing = |m: &String| follow_ups.iter().any(|p| p.cables.contains(m));
    if members.is_empty() || !members.iter().all(crossing) {
        return None;
    }
    let on: Vec<&&JobPair> = follow_ups
        .iter()
        .filter(|p| members.iter().any(|m| p.cables.contains(m)))
        .collect();
    Some(FollowUpsOn {
        probes: on.len(),
        abnormal: on
            .iter()
            .filter(|p| p.parts.network_status != PartStatus::Normal)
            .count(),
        rounds: on
            .iter()
            .filter_map(|p| p.round)
            .map(|r| r.rounds)
            .max()
            .unwrap_or(1),
    })
}

/// A pair by name, with why it is abnormal.
fn pair_words(p: &JobPair) -> String {
    let name = crate::job::paths::pair_name(p);
    match &p.reason {
        Some(r) => format!("{name}: {r}"),
        None => name,
    }
}

#[cfg(test)]
mod tests {
    use model::job::{JobEvidence, JobPair, ProbeCount, ProbePhase, ProbeRound};
    use model::pair::PartStatus;
    use model::PathStatus;

    use super::{Pairs, SCORE_CLEARED};
    use crate::job::culprits::{SCORE_CANDIDATES, SCORE_PROVEN};
    use crate::job::judge;
    use crate::job::tests::{error_port, evidence, host, pair, ranked, report};

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

    /// A pair between `a` and `b` over `cables`, probed in `round` of two of `phase`.
    fn probe(
        (a, b): (&str, &str),
        cables: &[&str],
        network: PartStatus,
        phase: ProbePhase,
        round: u32,
    ) -> JobPair {
        let mut p = pair(network);
        p.parts.a.host = a.into();
        p.parts.b.host = b.into();
        p.cables = cables.iter().map(|c| c.to_string()).collect();
        p.round = Some(ProbeRound {
            phase,
            round,
            rounds: 2,
        });
        p
    }

    /// Four healthy hosts, `pairs` between them, every cable named the job's.
    fn four_hosts(pairs: Vec<JobPair>) -> JobEvidence {
        let hosts = ["n1", "n2", "n3", "n4"]
            .iter()
            .map(|h| host(h, Some(report(h, PathStatus::Normal))))
            .collect();
        let mut e = evidence(hosts, pairs);
        e.job_cables = ["c1", "c2", "c3", "c4"].map(String::from).to_vec();
        e
    }

    /// n1-n2 over c1 and c2 slow in the mesh's first round only, n2-n4 over c2 and c4
    /// normal in both: a flapping group whose likeliest member is c1; then `follow_ups`.
    fn flapping_group(follow_ups: [PartStatus; 2]) -> JobEvidence {
        use PartStatus::*;
        use ProbePhase::*;
        let mut pairs = vec![
            probe(("n1", "n2"), &["c1", "c2"], Abnormal, Mesh, 1),
            probe(("n2", "n4"), &["c2", "c4"], Normal, Mesh, 1),
            probe(("n1", "n2"), &["c1", "c2"], Normal, Mesh, 2),
            probe(("n2", "n4"), &["c2", "c4"], Normal, Mesh, 2),
        ];
        // The follow-ups: one pair crossing each member alone, in both rounds.
        for (round, c1) in [(1, follow_ups[0]), (2, follow_ups[1])] {
            pairs.push(probe(("n1", "n3"), &["c1", "c3"], c1, FollowUp, round));
            pairs.push(probe(("n2", "n4"), &["c2", "c4"], Normal, FollowUp, round));
        }
        four_hosts(pairs)
    }

    #[test]
    fn a_flapping_group_the_follow_ups_clear_loses_its_score_and_says_so() {
        use PartStatus::*;
        // Before the follow-ups: the group, its likeliest member first, at 0.6.
        let mut before = flapping_group([Normal, Normal]);
        before
            .pairs
            .retain(|p| p.round.is_some_and(|r| r.phase == ProbePhase::Mesh));
        let r = judge(&before);
        assert_eq!(r.culprits[0].score, SCORE_CANDIDATES + 0.1, "{r:?}");
        assert_eq!(r.culprits[0].candidates, ["c1", "c2"]);
        // Every follow-up crossing c1 alone and c2 alone normal in both rounds.
        let r = judge(&flapping_group([Normal, Normal]));
        let top = &r.culprits[0];
        assert_eq!(top.score, SCORE_CLEARED, "{top:?}");
        assert!(
            top.evidence.contains("the follow-up probes cleared it"),
            "{}",
            top.evidence
        );
        // The pair crossing c1 alone caught it degraded in one round: proven.
        let r = judge(&flapping_group([Abnormal, Normal]));
        let top = &r.culprits[0];
        assert_eq!(top.component.as_deref(), Some("c1"), "{top:?}");
        assert!(top.candidates.is_empty(), "{top:?}");
        assert_eq!(top.score, SCORE_PROVEN, "{top:?}");
        assert!(
            top.evidence.contains("1 of 2 follow-up probe(s)"),
            "{}",
            top.evidence
        );
    }

    #[test]
    fn a_pair_probed_in_two_rounds_counts_once_and_is_named_once() {
        use PartStatus::*;
        let mut slow = probe(("n1", "n2"), &["c1", "c2"], Abnormal, ProbePhase::Mesh, 1);
        slow.retransmitted_packets = 7;
        let mut again = slow.clone();
        again.round = Some(ProbeRound {
            phase: ProbePhase::Mesh,
            round: 2,
            rounds: 2,
        });
        // The same two RNICs, the other way round.
        std::mem::swap(&mut again.parts.a, &mut again.parts.b);
        let r = judge(&four_hosts(vec![slow, again]));
        assert_eq!(
            r.probed,
            ProbeCount {
                pairs: 1,
                probes: 2,
                mesh_rounds: 2,
                follow_up_probes: 0,
                follow_up_rounds: 0,
            }
        );
        let evidence = &r.culprits[0].evidence;
        assert!(
            evidence.starts_with("1 pair(s) crossing one of c1, c2 are abnormal in their network part (n1/rnic0<->n2/rnic0), in 2 probes"),
            "{evidence}"
        );
        assert_eq!(
            evidence.matches("n1/rnic0<->n2/rnic0").count(),
            1,
            "{evidence}"
        );
    }

    #[test]
    fn a_down_cable_off_the_jobs_routes_is_listed_once_for_both_its_ends() {
        let down = |port: &str| {
            let mut p = error_port(port, false);
            p.cable = "leaf7/9".into();
            p.during.symbol_errors = 0;
            p.during.link_downed = 1;
            p
        };
        let mut e = four_hosts(vec![pair(PartStatus::Normal)]);
        e.job_cables = vec!["leaf1/1".into(), "leaf1/2".into()];
        e.ports = vec![down("leaf7/9"), down("spine1/7")];
        let r = judge(&e);
        assert_eq!(r.not_the_jobs.len(), 1, "{:?}", r.not_the_jobs);
        assert_eq!(r.not_the_jobs[0].cause, "link_down");
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
