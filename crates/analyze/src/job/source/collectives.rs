//! The job's own collectives as an evidence source (DESIGN 4.8; [`crate::collectives`]
//! judges them): the symptom goes in the report, and each straggler's host is a culprit
//! whatever its intra-host network shows, the evidence saying what its own check found.

use std::collections::BTreeSet;

use model::inspector::{CommunicatorSymptom, Straggler, Symptom};
use model::job::{Culprit, JobEvidence, JobReport, Layer, NotJudgedItem};
use model::PathStatus;

use super::{Phase, Ranking, Source};
use crate::collectives::symptom;
use crate::job::culprits::Judged;

/// Score of a straggler's host: the job's own timing shows the rank late again and again
/// (DESIGN 4.8), more directly than one host's counters ([`crate::job::SCORE_COUNTERS`],
/// 0.75); but it names the host, not the part of it (compute, data loading, the GPU, its
/// paths), as a proven element does ([`crate::job::SCORE_PROVEN`], 0.9).
pub const SCORE_STRAGGLER: f64 = 0.8;
/// What a culprit gains when a communicator that slowed without a straggler runs over it:
/// the job's own timing agrees with the measurement that named it (DESIGN 4.8: such a
/// communicator narrows the other evidence to its ranks' paths and cables). Small: it
/// orders culprits the measurements already named, and never names one itself.
pub const SCORE_SUPPORT: f64 = 0.05;
/// A straggler's cause (DESIGN 4.8).
pub const STRAGGLER: &str = "straggler";
/// Why the infrastructure is not judged when only the collectives were read.
pub const NOT_MEASURED: &str = "only the job's collectives were read: no host's own check, \
                                pair or switch port was measured, so neither the hosts' \
                                intra-host networks nor the fabric were judged";

/// The job's collectives, registered in [`crate::job::SOURCES`]. It ranks with the hosts'
/// own checks ([`Phase::Hosts`]), after them: a straggler names a host, as they do.
pub struct Collectives;

impl Source for Collectives {
    fn name(&self) -> &'static str {
        "collectives"
    }

    fn phase(&self) -> Phase {
        Phase::Hosts
    }

    /// Each straggler's host: the job's culprit when the job runs there (or its nodes are
    /// not known), not the job's otherwise; once per host and GPU or rank.
    fn rank<'a>(&self, judged: &Judged<'a>, ranking: &mut Ranking<'a>) {
        let evidence = judged.evidence();
        let Some(collectives) = &evidence.collectives else {
            return;
        };
        let symptom = symptom(collectives);
        for s in &symptom.stragglers {
            let culprit = culprit(judged, s);
            if !evidence.nodes.is_empty() && !evidence.nodes.contains(&s.host) {
                ranking.not_the_jobs.push(culprit);
            } else if !ranking.culprits.iter().any(|c| {
                c.cause == STRAGGLER && c.host == culprit.host && c.component == culprit.component
            }) {
                ranking.culprits.push(culprit);
            }
        }
        support(&symptom, evidence, &mut ranking.culprits);
    }

    /// With the collectives alone, the infrastructure: a slow job is then never `neither`.
    fn not_judged(&self, judged: &Judged<'_>) -> Vec<NotJudgedItem> {
        let e = judged.evidence();
        let alone = e.collectives.is_some()
            && e.hosts.is_empty()
            && e.pairs.is_empty()
            && e.ports.is_empty();
        if !alone {
            return Vec::new();
        }
        vec![NotJudgedItem {
            what: "the infrastructure".to_string(),
            why: NOT_MEASURED.to_string(),
        }]
    }

    fn report(&self, judged: &Judged<'_>, report: &mut JobReport) {
        report.symptom = judged.evidence().collectives.as_ref().map(symptom);
    }
}

/// Each communicator that slowed with no straggler in it (the transfer itself is slow:
/// reference/nccl-inspector.md) supports the culprits on its ranks' hosts and, across
/// hosts, on the cables of the pairs between them ([`SCORE_SUPPORT`]), saying so in their
/// evidence.
fn support(symptom: &Symptom, evidence: &JobEvidence, culprits: &mut [Culprit]) {
    let late: BTreeSet<&str> = symptom
        .stragglers
        .iter()
        .map(|s| s.communicator.as_str())
        .collect();
    for comm in symptom
        .communicators
        .iter()
        .filter(|c| c.slow && !late.contains(c.id.as_str()))
    {
        let hosts: BTreeSet<&str> = comm.hosts.iter().map(String::as_str).collect();
        let cables: BTreeSet<&str> = if comm.nnodes > 1 {
            evidence
                .pairs
                .iter()
                .filter(|p| {
                    hosts.contains(p.parts.a.host.as_str())
                        && hosts.contains(p.parts.b.host.as_str())
                })
                .flat_map(|p| p.cables.iter().map(String::as_str))
                .collect()
        } else {
            BTreeSet::new()
        };
        let words = agreement(comm);
        for c in culprits.iter_mut().filter(|c| c.cause != STRAGGLER) {
            let on_it = match c.layer {
                Layer::Host | Layer::Rnic => c.host.as_deref().is_some_and(|h| hosts.contains(h)),
                Layer::Fabric => std::iter::once(c.component.as_deref())
                    .flatten()
                    .chain(c.candidates.iter().map(String::as_str))
                    .any(|cable| cables.contains(cable)),
                Layer::Job => false,
            };
            if on_it && !c.evidence.contains(&words) {
                c.score = (c.score + SCORE_SUPPORT).min(1.0);
                c.evidence.push_str("; ");
                c.evidence.push_str(&words);
            }
        }
    }
}

/// The words a supported culprit's evidence gains from `comm`.
fn agreement(comm: &CommunicatorSymptom) -> String {
    format!(
        "the job's own collectives agree: communicator {} ({} over {} host(s)) slowed to \
         {:.1} GB/s with no rank late",
        comm.id, comm.collective, comm.nnodes, comm.busbw_gbs
    )
}

/// A straggler's host as a culprit.
fn culprit(judged: &Judged<'_>, s: &Straggler) -> Culprit {
    let component = s.gpu.clone().unwrap_or_else(|| format!("rank{}", s.rank));
    Culprit {
        layer: Layer::Host,
        host: Some(s.host.clone()),
        component: Some(component.clone()),
        cause: STRAGGLER.to_string(),
        score: SCORE_STRAGGLER,
        evidence: format!(
            "rank {} of communicator {} starts its collectives {:.1} ms late, typically, in \
             {} collectives, while the others wait; {}",
            s.rank,
            s.communicator,
            s.late_us / 1e3,
            s.collectives,
            own_check(judged, &s.host)
        ),
        candidates: Vec::new(),
        action: format!(
            "on {}: look at {component}'s process (its compute, data loading, the GPU's \
             clocks and throttling, CPU contention); drain the host if it stays late",
            s.host
        ),
    }
}

/// What `host`'s own check says of the job's paths there.
fn own_check(judged: &Judged<'_>, host: &str) -> String {
    let has_run = judged
        .evidence()
        .hosts
        .iter()
        .any(|h| h.host == host && h.report.is_some());
    if !has_run {
        return format!("{host} has no check of its own in the window");
    }
    let causes: Vec<String> = judged
        .hosts()
        .findings
        .iter()
        .filter(|f| f.host == host && !f.job_paths.is_empty())
        .map(|f| match f.diagnosis.links.first() {
            Some(link) => format!("{} on {link}", f.diagnosis.cause.as_str()),
            None => f.diagnosis.cause.as_str().to_string(),
        })
        .collect();
    if !causes.is_empty() {
        return format!(
            "{host}'s own check finds {} on the job's paths",
            causes.join(", ")
        );
    }
    let statuses: Vec<PathStatus> = judged
        .hosts()
        .segments
        .iter()
        .filter(|seg| seg.host == host)
        .map(|seg| seg.status)
        .collect();
    if statuses.contains(&PathStatus::Abnormal) {
        format!("{host}'s own check finds the job's paths abnormal without naming a cause")
    } else if !statuses.is_empty() && statuses.iter().all(|s| *s == PathStatus::Normal) {
        format!(
            "{host}'s own check finds its intra-host network healthy on the job's paths: this \
             points at compute, data loading or the GPU"
        )
    } else {
        format!("{host}'s own check did not judge all of the job's paths")
    }
}

#[cfg(test)]
mod tests {
    use model::job::{JobEvidence, JobReport, Layer, Verdict};
    use model::pair::PartStatus;
    use model::PathStatus;

    use super::*;
    use crate::collectives::tests::{evidence as collectives, job, straggler_job, EXEC};
    use crate::job::judge;
    use crate::job::tests::{evidence, host, pair, report};

    fn nodes() -> Vec<String> {
        (1..=8).map(|n| format!("node{n:03}")).collect()
    }

    #[test]
    fn a_straggler_alone_names_its_host_and_gpu() {
        let e = JobEvidence {
            nodes: nodes(),
            collectives: Some(collectives(&straggler_job())),
            ..JobEvidence::default()
        };
        let r = judge(&e);
        assert_eq!(r.verdict, Verdict::Host, "{}", r.summary);
        let c = &r.culprits[0];
        assert_eq!((c.layer, c.cause.as_str()), (Layer::Host, STRAGGLER));
        assert_eq!(c.host.as_deref(), Some("node007"));
        assert_eq!(c.component.as_deref(), Some("gpu0"));
        assert_eq!(c.score, SCORE_STRAGGLER);
        assert!(c.evidence.contains("ms late"), "{}", c.evidence);
        assert!(c.evidence.contains("in 120 collectives"), "{}", c.evidence);
        assert!(c.evidence.contains("no check of its own"), "{}", c.evidence);
        let symptom = r.symptom.expect("the symptom is reported");
        assert_eq!(symptom.stragglers.len(), 1);
        assert!(r.not_judged.iter().any(|n| n.what == "the infrastructure"));
    }

    #[test]
    fn a_stragglers_evidence_says_what_its_hosts_own_check_found() {
        let mut healthy: Vec<_> = nodes()
            .iter()
            .map(|n| host(n, Some(report(n, PathStatus::Normal))))
            .collect();
        let mut e = evidence(healthy.clone(), vec![pair(PartStatus::Normal)]);
        e.collectives = Some(collectives(&straggler_job()));
        let r = judge(&e);
        assert_eq!(r.verdict, Verdict::Host, "{}", r.summary);
        let c = r.culprits.iter().find(|c| c.cause == STRAGGLER).unwrap();
        assert!(
            c.evidence
                .contains("points at compute, data loading or the GPU"),
            "{}",
            c.evidence
        );
        healthy[6] = host("node007", Some(report("node007", PathStatus::Abnormal)));
        e.hosts = healthy;
        let r = judge(&e);
        let c = r.culprits.iter().find(|c| c.cause == STRAGGLER).unwrap();
        assert!(c.evidence.contains("abnormal"), "{}", c.evidence);
    }

    #[test]
    fn a_straggler_on_a_host_the_job_does_not_use_is_not_its_culprit() {
        let mut nodes = nodes();
        nodes.retain(|n| n != "node007");
        let e = JobEvidence {
            nodes,
            collectives: Some(collectives(&straggler_job())),
            ..JobEvidence::default()
        };
        let r = judge(&e);
        assert!(r.culprits.is_empty(), "{:?}", r.culprits);
        assert_eq!(r.not_the_jobs.len(), 1);
        assert_eq!(r.not_the_jobs[0].host.as_deref(), Some("node007"));
        assert_eq!(r.verdict, Verdict::Inconclusive, "{}", r.summary);
    }

    #[test]
    fn collectives_alone_without_a_straggler_are_never_neither() {
        let e = JobEvidence {
            collectives: Some(collectives(&job(|_, _, _| EXEC))),
            ..JobEvidence::default()
        };
        let r = judge(&e);
        assert_eq!(r.verdict, Verdict::Inconclusive, "{}", r.summary);
        assert_eq!(r.not_judged.len(), 1, "{:?}", r.not_judged);
        assert_eq!(r.not_judged[0].why, NOT_MEASURED);
        assert!(r.symptom.is_some_and(|s| !s.slow));
    }

    /// An abnormal pair between node001 and node002, crossing leaf1/1 and leaf1/2.
    fn abnormal_pair(a: &str, b: &str) -> model::job::JobPair {
        let mut p = pair(PartStatus::Abnormal);
        p.parts.a.host = a.into();
        p.parts.b.host = b.into();
        p
    }

    /// Communicator `0xb` (all 8 hosts) runs at half speed from second 30, no rank late.
    fn slow_rail() -> model::job::CollectiveEvidence {
        collectives(&job(|id, _, t| {
            if id == "0xb" && t >= 30.0 {
                2.0 * EXEC
            } else {
                EXEC
            }
        }))
    }

    #[test]
    fn a_slow_communicator_supports_the_culprits_on_its_hosts_and_cables() {
        let hosts: Vec<_> = ["node001", "node002"]
            .iter()
            .map(|n| host(n, Some(report(n, PathStatus::Normal))))
            .collect();
        let mut e = evidence(hosts.clone(), vec![abnormal_pair("node001", "node002")]);
        e.nodes = nodes();
        let before = judge(&e);
        let fabric = |r: &JobReport| {
            r.culprits
                .iter()
                .find(|c| c.layer == Layer::Fabric)
                .cloned()
                .unwrap_or_else(|| panic!("{:?}", r.culprits))
        };
        e.collectives = Some(slow_rail());
        let after = judge(&e);
        assert!(after
            .symptom
            .as_ref()
            .is_some_and(|s| s.slow && s.stragglers.is_empty()));
        let (was, now) = (fabric(&before), fabric(&after));
        assert!(
            (now.score - was.score - SCORE_SUPPORT).abs() < 1e-9,
            "{was:?} {now:?}"
        );
        assert!(
            now.evidence.contains("the job's own collectives agree"),
            "{}",
            now.evidence
        );
        assert!(now.evidence.contains("0xb"), "{}", now.evidence);
        assert_eq!(after.verdict, before.verdict);

        // A pair between hosts the slow communicator does not run on: no support.
        let mut e = evidence(hosts, vec![abnormal_pair("node101", "node102")]);
        e.nodes = nodes();
        let before = judge(&e);
        e.collectives = Some(slow_rail());
        let after = judge(&e);
        assert_eq!(fabric(&after).score, fabric(&before).score);
        assert!(!fabric(&after).evidence.contains("agree"));
    }

    #[test]
    fn healthy_collectives_leave_a_healthy_infrastructures_verdict_alone() {
        let mut e = evidence(
            vec![
                host("n1", Some(report("n1", PathStatus::Normal))),
                host("n2", Some(report("n2", PathStatus::Normal))),
            ],
            vec![pair(PartStatus::Normal)],
        );
        e.collectives = Some(collectives(&job(|_, _, _| EXEC)));
        let r = judge(&e);
        assert_eq!(r.verdict, Verdict::Neither, "{}", r.summary);
        assert!(r.symptom.is_some());
    }
}
