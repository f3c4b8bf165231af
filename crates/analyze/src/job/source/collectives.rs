//! The job's own collectives as an evidence source (DESIGN 4.8; [`crate::collectives`]
//! judges them): the symptom goes in the report, and each straggler's host is a culprit
//! whatever its intra-host network shows, the evidence saying what its own check found.

use std::collections::{BTreeMap, BTreeSet};

use model::inspector::{CommunicatorSymptom, Straggler, Symptom};
use model::job::{Culprit, JobEvidence, JobPath, JobReport, Layer, NotJudgedItem};
use model::PathStatus;

use super::{Phase, Ranking, Source};
use crate::collectives::symptom;
use crate::job::culprits::Judged;
use crate::job::reading::Reading;

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

    /// The symptom, judged once here for the ranking and the report.
    fn read<'a>(&self, evidence: &'a JobEvidence, reading: &mut Reading<'a>) {
        reading.symptom = placed_symptom(evidence);
    }

    fn phase(&self) -> Phase {
        Phase::Hosts
    }

    /// Each straggler's host: the job's culprit when the job runs there (or its nodes are
    /// not known), not the job's otherwise; once per host and GPU or rank.
    fn rank<'a>(&self, judged: &Judged<'a>, ranking: &mut Ranking<'a>) {
        let evidence = judged.evidence();
        let Some(symptom) = judged.symptom() else {
            return;
        };
        let whole = whole_hosts(symptom, evidence);
        let mut named_hosts: BTreeSet<(&str, &str)> = BTreeSet::new();
        for s in &symptom.stragglers {
            let key = (s.communicator.as_str(), s.host.as_str());
            let culprit = match whole.get(&key) {
                Some(&ranks) if named_hosts.insert(key) => host_culprit(judged, s, ranks),
                Some(_) => continue,
                None => culprit(judged, s),
            };
            if !evidence.nodes.is_empty() && !evidence.nodes.contains(&s.host) {
                ranking.not_the_jobs.push(culprit);
            } else if !ranking.culprits.iter().any(|c| {
                c.cause == STRAGGLER && c.host == culprit.host && c.component == culprit.component
            }) {
                ranking.culprits.push(culprit);
            }
        }
        support(symptom, evidence, &mut ranking.culprits);
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
        report.symptom = judged.symptom().cloned();
    }
}

/// The job's symptom, each rank's place given the RNIC its host's job paths send to its GPU
/// (the path to `gpuN`: an RNIC's traffic goes to its nearest GPU, `verdict::job`'s rule).
fn placed_symptom(evidence: &JobEvidence) -> Option<Symptom> {
    let mut symptom = symptom(evidence.collectives.as_ref()?);
    for place in symptom
        .communicators
        .iter_mut()
        .flat_map(|c| c.places.iter_mut())
    {
        place.rnic = gpu_path(evidence, &place.host, place.gpu).map(|p| p.rnic.clone());
    }
    Some(symptom)
}

/// The job path on `host` that ends at GPU `gpu`.
fn gpu_path<'a>(evidence: &'a JobEvidence, host: &str, gpu: u32) -> Option<&'a JobPath> {
    let endpoint = format!("gpu{gpu}");
    evidence
        .hosts
        .iter()
        .filter(|h| h.host == host)
        .flat_map(|h| &h.job_paths)
        .find(|p| p.endpoint == endpoint)
}

/// A communicator's ranks' paths, when each of its hosts has a placed rank and every placed
/// rank's RNIC is known: (host, its job path to the rank's GPU). `None` when they are not
/// all known: the communicator then narrows to its hosts only.
fn rank_paths<'a>(
    comm: &'a CommunicatorSymptom,
    evidence: &'a JobEvidence,
) -> Option<Vec<(&'a str, &'a JobPath)>> {
    if !comm.fully_placed() {
        return None;
    }
    comm.places
        .iter()
        .map(|p| Some((p.host.as_str(), gpu_path(evidence, &p.host, p.gpu)?)))
        .collect()
}

/// Whether a host-side culprit lies on one of `paths` (its host's): it names the path's
/// RNIC or GPU or one of its links, or says too little to tell (no component, or a path
/// whose links are not known).
fn on_paths(c: &Culprit, paths: &[(&str, &JobPath)]) -> bool {
    let Some(component) = c.component.as_deref() else {
        return true;
    };
    let names = |p: &JobPath| {
        p.links.is_empty()
            || p.rnic == component
            || p.endpoint == component
            || p.links
                .iter()
                .any(|l| l.as_str() == component || c.candidates.iter().any(|x| x == l.as_str()))
    };
    paths
        .iter()
        .any(|(host, p)| c.host.as_deref() == Some(*host) && names(p))
}

/// Each communicator that slowed with no straggler in it (the transfer itself is slow:
/// reference/nccl-inspector.md) supports the culprits on its ranks' paths and, across
/// hosts, on the cables of the pairs between its ranks' RNICs ([`SCORE_SUPPORT`]), saying
/// so in their evidence. Where its ranks' GPUs and RNICs are not all known, that is every
/// path of its hosts and every pair between them.
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
        let paths = rank_paths(comm, evidence);
        let rnics: Option<BTreeSet<(&str, &str)>> = paths
            .as_ref()
            .map(|ps| ps.iter().map(|(h, p)| (*h, p.rnic.as_str())).collect());
        let between = |a: (&str, &str), b: (&str, &str)| match &rnics {
            Some(rnics) => rnics.contains(&a) && rnics.contains(&b),
            None => hosts.contains(a.0) && hosts.contains(b.0),
        };
        let cables: BTreeSet<&str> = if comm.nnodes > 1 {
            evidence
                .pairs
                .iter()
                .filter(|p| {
                    let (a, b) = (&p.parts.a, &p.parts.b);
                    between((&a.host, &a.rnic), (&b.host, &b.rnic))
                })
                .flat_map(|p| p.cables.iter().map(String::as_str))
                .collect()
        } else {
            BTreeSet::new()
        };
        let words = agreement(comm);
        for c in culprits.iter_mut().filter(|c| c.cause != STRAGGLER) {
            let on_it = match c.layer {
                Layer::Host | Layer::Rnic => {
                    c.host.as_deref().is_some_and(|h| hosts.contains(h))
                        && paths.as_ref().is_none_or(|ps| on_paths(c, ps))
                }
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
    let rail = comm.rail_route().map_or(String::new(), |(gpu, route)| {
        format!(", rail {gpu}: {route} on each")
    });
    format!(
        "the job's own collectives agree: communicator {} ({} over {} host(s){rail}) slowed \
         to {:.1} GB/s with no rank late",
        comm.id, comm.collective, comm.nnodes, comm.busbw_gbs
    )
}

/// The hosts every one of whose ranks in a communicator (two or more) straggles there, by
/// (communicator, host), with that number of ranks: what is late is what those ranks share,
/// not one GPU.
fn whole_hosts<'a>(
    symptom: &'a Symptom,
    evidence: &JobEvidence,
) -> BTreeMap<(&'a str, &'a str), usize> {
    let mut late: BTreeMap<(&str, &str), BTreeSet<u32>> = BTreeMap::new();
    for s in &symptom.stragglers {
        late.entry((s.communicator.as_str(), s.host.as_str()))
            .or_default()
            .insert(s.rank);
    }
    let Some(collectives) = &evidence.collectives else {
        return BTreeMap::new();
    };
    let mut ranks: BTreeMap<(&str, &str), BTreeSet<u32>> = BTreeMap::new();
    for r in &collectives.summaries {
        let key = (r.communicator.as_str(), r.hostname.as_str());
        if late.contains_key(&key) {
            ranks.entry(key).or_default().insert(r.rank);
        }
    }
    late.into_iter()
        .filter(|(key, late)| late.len() >= 2 && ranks.get(key) == Some(late))
        .map(|(key, late)| (key, late.len()))
        .collect()
}

/// A host every rank of which, `ranks` of them, straggles in `s`'s communicator.
fn host_culprit(judged: &Judged<'_>, s: &Straggler, ranks: usize) -> Culprit {
    Culprit {
        layer: Layer::Host,
        host: Some(s.host.clone()),
        component: None,
        cause: STRAGGLER.to_string(),
        score: SCORE_STRAGGLER,
        evidence: format!(
            "all {ranks} of its ranks in communicator {} start their collectives late, \
             {:.1} ms typically (rank {}), while the other hosts' wait: what they share is \
             late (the host's CPUs, memory or data loading), not one GPU; {}",
            s.communicator,
            s.late_us / 1e3,
            s.rank,
            own_check(judged, &s.host)
        ),
        candidates: Vec::new(),
        action: format!(
            "on {}: look at what its processes share (CPU load and clocks, memory pressure, \
             the data loader's storage and network); drain the host if it stays late",
            s.host
        ),
    }
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
        supported(&was, &now, "the job's own collectives agree");
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

    /// `now` is `was` supported by a slowed communicator: [`SCORE_SUPPORT`] more, and
    /// `words` in its evidence.
    fn supported(was: &Culprit, now: &Culprit, words: &str) {
        assert!(
            (now.score - was.score - SCORE_SUPPORT).abs() < 1e-9,
            "{was:?} {now:?}"
        );
        assert!(now.evidence.contains(words), "{}", now.evidence);
    }

    /// node001..node004, each with two job paths: rnic0 -> gpu0 and rnic1 -> gpu1 (links
    /// not known).
    fn two_rail_hosts() -> Vec<model::job::JobHost> {
        (1..=4)
            .map(|n| {
                let name = format!("node{n:03}");
                let mut h = host(&name, Some(report(&name, PathStatus::Normal)));
                h.job_paths.push(JobPath {
                    rnic: "rnic1".into(),
                    endpoint: "gpu1".into(),
                    links: vec![],
                });
                h
            })
            .collect()
    }

    /// An abnormal pair between `a` and `b`'s RNIC `rnic`, crossing `cables`.
    fn abnormal_rail_pair(a: &str, b: &str, rnic: &str, cables: [&str; 2]) -> model::job::JobPair {
        let mut p = abnormal_pair(a, b);
        p.parts.a.rnic = rnic.into();
        p.parts.b.rnic = rnic.into();
        p.cables = cables.iter().map(|c| c.to_string()).collect();
        p
    }

    #[test]
    fn a_slow_rail_supports_the_cables_between_its_rnics_only() {
        let pairs = vec![
            abnormal_rail_pair("node001", "node002", "rnic1", ["leaf2/1", "leaf2/2"]),
            abnormal_rail_pair("node003", "node004", "rnic0", ["leaf1/3", "leaf1/4"]),
        ];
        let mut e = evidence(two_rail_hosts(), pairs);
        e.job_cables = ["leaf1/3", "leaf1/4", "leaf2/1", "leaf2/2"]
            .map(String::from)
            .to_vec();
        let before = judge(&e);
        e.collectives = Some(collectives(&crate::collectives::tests::rail_job(1)));
        let after = judge(&e);
        // The report's symptom places rail 1's ranks on gpu1 through rnic1.
        let symptom = after.symptom.as_ref().expect("a symptom");
        let rail = symptom
            .communicators
            .iter()
            .find(|c| c.id == "0xr1")
            .unwrap();
        assert!(rail.slow && rail.rail == Some(1), "{rail:?}");
        assert!(
            rail.places
                .iter()
                .all(|p| p.rnic.as_deref() == Some("rnic1")),
            "{:?}",
            rail.places
        );
        let on = |r: &JobReport, cable: &str| {
            r.culprits
                .iter()
                .find(|c| {
                    c.layer == Layer::Fabric
                        && (c.component.as_deref() == Some(cable)
                            || c.candidates.iter().any(|x| x == cable))
                })
                .cloned()
                .unwrap_or_else(|| panic!("no culprit on {cable}: {:?}", r.culprits))
        };
        // Rail 1's cables gain the support, with the rail in the words; rail 0's do not,
        // though their pair runs between the same communicator's hosts.
        let (was, now) = (on(&before, "leaf2/1"), on(&after, "leaf2/1"));
        supported(&was, &now, "rail 1: gpu1 through rnic1 on each");
        let (was, now) = (on(&before, "leaf1/3"), on(&after, "leaf1/3"));
        assert_eq!(now.score, was.score, "{now:?}");
        assert!(!now.evidence.contains("agree"), "{}", now.evidence);
    }

    #[test]
    fn a_host_culprit_is_on_a_rails_paths_only_through_its_rnic_gpu_or_links() {
        let link = model::LinkId::new("gpu1--sw1");
        let rail_path = JobPath {
            rnic: "rnic1".into(),
            endpoint: "gpu1".into(),
            links: vec![link],
        };
        let paths = [("node002", &rail_path)];
        let culprit = |component: Option<&str>| Culprit {
            layer: Layer::Host,
            host: Some("node002".into()),
            component: component.map(String::from),
            cause: "link_failure".into(),
            score: 0.9,
            evidence: String::new(),
            candidates: Vec::new(),
            action: String::new(),
        };
        assert!(on_paths(&culprit(Some("gpu1--sw1")), &paths));
        assert!(on_paths(&culprit(Some("rnic1")), &paths));
        assert!(on_paths(&culprit(None), &paths));
        // Another GPU's link on the same host is not the rail's.
        assert!(!on_paths(&culprit(Some("gpu0--sw0")), &paths));
        // Another host's: not either.
        let mut elsewhere = culprit(Some("gpu1--sw1"));
        elsewhere.host = Some("node003".into());
        assert!(!on_paths(&elsewhere, &paths));
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
