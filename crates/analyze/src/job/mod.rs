//! The job verdict (DESIGN 4.7, issue 28): "my job is slow: is it a host or the network, and
//! which part?", judged from a [`JobEvidence`] with no I/O.
//!
//! 1. The hosts ([`hosts`]): each host's own check says which of the job's paths (RNIC to
//!    the endpoint its data lives in) are abnormal and why; a diagnosis on a path the job
//!    does not cross is a fault, but not the job's.
//! 2. One tomography ([`paths`]) over the hosts' paths and the pairs' network parts names the
//!    elements that explain every abnormal observation: a host's path or a cable. A network
//!    part measured beside an abnormal or unjudged host part, or from a host whose own check
//!    found a job path abnormal, is set aside (host noise makes a probe look like the
//!    network's fault: R-Pingmesh's stated weakness), unless the pair lost packets. Where a
//!    group of cables cannot be split, a real pair's RNIC counters may say which way it lost
//!    packets ([`direction`]): the sending end's cable is named first.
//! 3. The switch ports ([`ports`]): errors and link downs on the job's routes name their
//!    cable on their own; waits far above the same ports before the window and the ports off
//!    the routes on many ports are other jobs' traffic, not a fault.
//! 4. The what-if ([`what_if`]), when given, says whether the job's own pattern or mapping explains a
//!    healthy infrastructure's time; a time it finds slow and no measured state explains is
//!    not judged.
//! 5. The verdict ([`culprits`]): host, network, both; neither only when every host and
//!    every cable of the job's routes was judged; inconclusive otherwise. How small a loss
//!    each layer could have seen ([`sensitivity`]) goes with it: `neither` says it.
//! 6. The job's own collectives (DESIGN 4.8, [`crate::collectives`]), when read: the
//!    report's `symptom`; each rank that arrives late again and again names its host a
//!    culprit (`straggler`), whatever its own check says (the evidence says what it found).
//!    With the collectives alone (no host check, pair or port), the infrastructure is not
//!    judged: a straggler makes the verdict `host`, no straggler `inconclusive`.
//!
//! Each kind of evidence is a source ([`source::Source`], one module each under [`source`],
//! registered in [`SOURCES`]): the host checks ([`hosts`]), the switch ports ([`ports`]), the
//! pairs ([`paths`]), the what-if ([`what_if`]) and the job's collectives. [`judge`] has
//! each read its part, runs the one tomography, has each rank its culprits in its phase
//! ([`source::Phase`]: the fabric findings, the ports' counters and other jobs' traffic, the
//! hosts and the stragglers, the what-if's support) into one [`source::Ranking`], sorts
//! them by score, and has each list what it could not judge and write its part of the
//! report.

mod culprits;
pub mod direction;
pub mod hosts;
pub mod paths;
pub mod ports;
pub mod reading;
pub mod sensitivity;
pub mod source;
pub mod what_if;

pub use culprits::listed;
use model::job::{JobEvidence, JobReport};
use reading::Reading;
use source::switch_ports::SwitchPorts;
use source::{collectives::Collectives, host_checks::HostChecks, pairs::Pairs};
use source::{what_if::WhatIfSource, Ranking, Source};

pub use culprits::{Judged, BACKGROUND_MIN_PORTS, SCORE_CANDIDATES, SCORE_COUNTERS, SCORE_PROVEN};

/// Every evidence source, in the order the verdict reads them, lists what they could not
/// judge, and writes their parts of the report. The host checks come first: the
/// tomography's host paths and the report's first unjudged items are theirs; the switch
/// ports before the pairs, whose tomography takes the cables the ports accuse. The job's
/// collectives come last: they read nothing into the tomography, and what they leave
/// unjudged (the infrastructure, when they are all there is) follows the others' items.
pub static SOURCES: [&dyn Source; 5] = [
    &HostChecks,
    &SwitchPorts,
    &Pairs,
    &WhatIfSource,
    &Collectives,
];

/// [`SOURCES`] in the order they rank: by [`source::Phase`], one phase's sources in
/// [`SOURCES`]' order (the sort is stable).
fn rank_order() -> Vec<&'static dyn Source> {
    let mut order = SOURCES.to_vec();
    order.sort_by_key(|s| s.phase());
    order
}

/// Judges a job: each evidence source reads its part ([`SOURCES`]), one tomography
/// runs over what they read, each source ranks its culprits (by phase), and each source
/// lists what it could not judge and writes its part of the report.
pub fn judge(evidence: &JobEvidence) -> JobReport {
    let mut reading = Reading::default();
    for source in SOURCES.iter() {
        source.read(evidence, &mut reading);
    }
    let tomography = paths::run(&reading.hosts.segments, &evidence.pairs, &reading.accused);
    let judged = culprits::Judged::new(evidence, &reading, &tomography);
    let mut ranking = Ranking::default();
    for source in rank_order() {
        source.rank(&judged, &mut ranking);
    }
    let Ranking {
        mut culprits,
        mut not_the_jobs,
        ..
    } = ranking;
    culprits.sort_by(|a, b| b.score.total_cmp(&a.score));
    once_each(&mut not_the_jobs);
    let mut not_judged = evidence.not_judged.clone();
    for source in SOURCES.iter() {
        not_judged.extend(source.not_judged(&judged));
    }
    let verdict = culprits::verdict(&culprits, &not_judged);
    let sensitivity = sensitivity::of(evidence, &reading.hosts);
    let mut report = JobReport {
        job: evidence.job.clone(),
        nodes: evidence.nodes.clone(),
        verdict,
        summary: culprits::summary(verdict, &culprits, &not_judged, &sensitivity),
        culprits,
        pairs: Vec::new(),
        not_judged,
        // A simulated number is always labelled: simulated runs, pairs or records.
        simulated: evidence.simulated || evidence.collectives.as_ref().is_some_and(|c| c.simulated),
        not_the_jobs,
        hosts: Vec::new(),
        ports: Vec::new(),
        what_if: None,
        follow_ups: Vec::new(),
        sensitivity,
        probed: model::job::ProbeCount::default(),
        symptom: None,
        actions: Vec::new(),
    };
    for source in SOURCES.iter() {
        source.report(&judged, &mut report);
    }
    report
}

/// Keeps the first of the faults that name the same component for the same cause (a
/// cable both of whose ends counted, a fault two sources found): each is listed once.
fn once_each(found: &mut Vec<model::job::Culprit>) {
    let mut seen = std::collections::HashSet::new();
    found.retain(|c| {
        c.component.is_none()
            || seen.insert((
                c.layer,
                c.host.clone(),
                c.component.clone(),
                c.cause.clone(),
            ))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_source_is_registered_once_by_its_name() {
        let names: Vec<&str> = SOURCES.iter().map(|s| s.name()).collect();
        assert_eq!(
            names,
            [
                "host checks",
                "switch ports",
                "pairs",
                "what-if",
                "collectives"
            ]
        );
    }

    #[test]
    fn the_sources_rank_fabric_findings_first_and_the_what_if_last() {
        let names: Vec<&str> = rank_order().iter().map(|s| s.name()).collect();
        assert_eq!(
            names,
            [
                "pairs",
                "switch ports",
                "host checks",
                "collectives",
                "what-if"
            ]
        );
    }

    /// What `sources` alone rank of `e`, in their order, after every source read it: the
    /// culprits, the faults not the job's, and the fabric findings left uncorroborated.
    pub(super) fn ranked(
        e: &JobEvidence,
        sources: &[&dyn Source],
    ) -> (Vec<Culprit>, Vec<Culprit>, Vec<Culprit>) {
        let mut reading = Reading::default();
        for source in SOURCES.iter() {
            source.read(e, &mut reading);
        }
        let tomography = paths::run(&reading.hosts.segments, &e.pairs, &reading.accused);
        let judged = Judged::new(e, &reading, &tomography);
        let mut ranking = Ranking::default();
        for source in sources {
            source.rank(&judged, &mut ranking);
        }
        let uncorroborated = ranking.uncorroborated.into_iter().map(|(c, _)| c);
        (
            ranking.culprits,
            ranking.not_the_jobs,
            uncorroborated.collect(),
        )
    }
    use model::job::{Culprit, JobHost, JobPair, JobPath, JobPort, PairParts, Verdict};
    use model::pair::PairEnd;
    use model::pair::PartStatus;
    use model::switch_port::SwitchPortCounters;
    use model::{PathReport, PathStatus, Report};

    pub(super) fn report(host: &str, status: PathStatus) -> Report {
        Report {
            host: host.into(),
            mode: model::Mode::Idle,
            busy: Vec::new(),
            healthy: status == PathStatus::Normal,
            inconclusive: false,
            not_judged: Vec::new(),
            provenance: model::Provenance::Simulated,
            run: 0,
            paths: vec![PathReport {
                rnic: "rnic0".into(),
                endpoint: "gpu0".into(),
                latency_us: Some(2.5),
                bandwidth_gbps: Some(200.0),
                baseline_latency_us: Some(2.5),
                baseline_bandwidth_gbps: Some(200.0),
                status,
                latency_abnormal: false,
                affinitive: true,
                error: None,
                unavailable: false,
                stream: None,
                verified_bytes: None,
                reprobes: Vec::new(),
            }],
            links: vec![],
            diagnoses: vec![],
            baseline: None,
            thresholds: None,
        }
    }

    pub(super) fn host(name: &str, report: Option<Report>) -> JobHost {
        JobHost {
            host: name.into(),
            report,
            job_paths: vec![JobPath {
                rnic: "rnic0".into(),
                endpoint: "gpu0".into(),
                links: vec![],
            }],
            fleet_abnormal: Vec::new(),
        }
    }

    pub(super) fn pair(network: PartStatus) -> JobPair {
        JobPair {
            parts: PairParts {
                a: PairEnd {
                    host: "n1".into(),
                    rnic: "rnic0".into(),
                    device: None,
                },
                b: PairEnd {
                    host: "n2".into(),
                    rnic: "rnic0".into(),
                    device: None,
                },
                latency_us: Some(3.0),
                bandwidth_gbps: Some(190.0),
                host_a_us: Some(1.25),
                host_b_us: Some(1.25),
                network_us: Some(0.5),
                route: vec![],
                status: network,
                host_a_status: PartStatus::Normal,
                host_b_status: PartStatus::Normal,
                network_status: network,
                endpoint_a: "gpu0".into(),
                endpoint_b: "gpu0".into(),
            },
            cables: vec!["leaf1/1".into(), "leaf1/2".into()],
            retransmitted_packets: 0,
            reason: None,
            counters_a: None,
            round: None,
        }
    }

    pub(super) fn evidence(hosts: Vec<JobHost>, pairs: Vec<JobPair>) -> JobEvidence {
        JobEvidence {
            nodes: hosts.iter().map(|h| h.host.clone()).collect(),
            hosts,
            pairs,
            job_cables: vec!["leaf1/1".into(), "leaf1/2".into()],
            ..JobEvidence::default()
        }
    }

    /// A port whose cable corrupts: 500 symbol errors in the window, none before.
    pub(super) fn error_port(name: &str, on: bool) -> JobPort {
        JobPort {
            port: name.into(),
            cable: name.into(),
            on_job_route: on,
            during: SwitchPortCounters {
                symbol_errors: 500,
                ..Default::default()
            },
            during_s: 60.0,
            before: Some(SwitchPortCounters::default()),
            before_s: 60.0,
            read_now_s: 0.0,
        }
    }

    #[test]
    fn healthy_hosts_and_pairs_are_neither() {
        let e = evidence(
            vec![
                host("n1", Some(report("n1", PathStatus::Normal))),
                host("n2", Some(report("n2", PathStatus::Normal))),
            ],
            vec![pair(PartStatus::Normal)],
        );
        let r = judge(&e);
        assert_eq!(r.verdict, Verdict::Neither, "{}", r.summary);
        assert_eq!(r.verdict.exit_code(), 0);
    }

    #[test]
    fn what_was_not_measured_is_never_called_healthy() {
        // No pair probed: the cables were not judged.
        let no_pairs = evidence(
            vec![
                host("n1", Some(report("n1", PathStatus::Normal))),
                host("n2", Some(report("n2", PathStatus::Normal))),
            ],
            vec![],
        );
        let r = judge(&no_pairs);
        assert_eq!(r.verdict, Verdict::Inconclusive, "{}", r.summary);
        assert_eq!(r.verdict.exit_code(), 3);
        // A host without a run in the window.
        let no_run = evidence(
            vec![
                host("n1", Some(report("n1", PathStatus::Normal))),
                host("n2", None),
            ],
            vec![pair(PartStatus::Normal)],
        );
        let r = judge(&no_run);
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert_eq!(r.not_judged[0].what, "n2");
    }

    #[test]
    fn what_the_producer_could_not_find_out_keeps_a_job_from_neither() {
        let mut e = evidence(
            vec![
                host("n1", Some(report("n1", PathStatus::Normal))),
                host("n2", Some(report("n2", PathStatus::Normal))),
            ],
            vec![pair(PartStatus::Normal)],
        );
        assert_eq!(judge(&e).verdict, Verdict::Neither);
        e.not_judged.push(model::job::NotJudgedItem {
            what: "the job's routes".into(),
            why: "the collector knows no fabric".into(),
        });
        let r = judge(&e);
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert_eq!(r.not_judged[0].why, "the collector knows no fabric");
    }

    #[test]
    fn a_job_on_one_host_leaves_the_network_unjudged_and_its_host_judged() {
        // Issue 38: with no pair between hosts the network was never judged (DESIGN 4.7
        // rule 7); this asserted `neither` before.
        let mut e = evidence(
            vec![host("n1", Some(report("n1", PathStatus::Normal)))],
            vec![],
        );
        e.job_cables.clear();
        let r = judge(&e);
        assert_eq!(r.verdict, Verdict::Inconclusive, "{}", r.summary);
        assert_eq!(r.verdict.exit_code(), 3);
        assert_eq!(r.not_judged.len(), 1, "{:?}", r.not_judged);
        assert_eq!(r.not_judged[0].what, "the network");
        assert_eq!(r.not_judged[0].why, culprits::ONE_HOST);
        assert!(r.summary.contains("one host: no pair"), "{}", r.summary);
        let abnormal = evidence(
            vec![host("n1", Some(report("n1", PathStatus::Abnormal)))],
            vec![],
        );
        let r = judge(&abnormal);
        assert_eq!(r.verdict, Verdict::Host, "{}", r.summary);
        assert_eq!(r.culprits[0].host.as_deref(), Some("n1"));
    }

    #[test]
    fn a_single_pairs_rnic_counters_name_the_cable_at_the_sending_end_first() {
        let hosts = || {
            vec![
                host("n1", Some(report("n1", PathStatus::Normal))),
                host("n2", Some(report("n2", PathStatus::Normal))),
            ]
        };
        // Without a fabric: the two RNICs' own cables, crossed by the one observation.
        let mut lossy = pair(PartStatus::Abnormal);
        lossy.cables = vec!["n1/rxe_a".into(), "n2/rxe_b".into()];
        let mut e = evidence(hosts(), vec![lossy.clone()]);
        e.job_cables = lossy.cables.clone();
        let r = judge(&e);
        assert_eq!(r.verdict, Verdict::Network, "{}", r.summary);
        assert_eq!(r.culprits[0].component, None, "both are candidates");
        assert_eq!(r.culprits[0].candidates, ["n1/rxe_a", "n2/rxe_b"]);
        // n1's RNIC counted out-of-sequence requests: n2's packets to n1 were lost.
        lossy.counters_a = Some(model::odp_bench::TransportDelta {
            packet_seq_err: Some(0),
            out_of_sequence: Some(9),
            duplicate_request: Some(0),
            local_ack_timeout_err: None,
        });
        e.pairs = vec![lossy];
        let r = judge(&e);
        let top = &r.culprits[0];
        assert_eq!(r.verdict, Verdict::Network, "{}", r.summary);
        assert_eq!(
            top.component.as_deref(),
            Some("n2/rxe_b"),
            "{}",
            top.evidence
        );
        assert_eq!(top.candidates, ["n2/rxe_b", "n1/rxe_a"]);
        assert_eq!(top.cause, "link_errors");
        assert!(
            top.evidence.contains("9 out-of-sequence"),
            "{}",
            top.evidence
        );
    }

    #[test]
    fn counters_alone_name_a_corrupting_port_on_the_jobs_routes_only() {
        let port = error_port;
        let mut e = evidence(
            vec![
                host("n1", Some(report("n1", PathStatus::Normal))),
                host("n2", Some(report("n2", PathStatus::Normal))),
            ],
            vec![pair(PartStatus::Normal)],
        );
        e.ports = vec![port("leaf1/2", true), port("leaf7/3", false)];
        let r = judge(&e);
        assert_eq!(r.verdict, Verdict::Network, "{}", r.summary);
        assert_eq!(r.culprits.len(), 1);
        assert_eq!(r.culprits[0].component.as_deref(), Some("leaf1/2"));
        assert_eq!(r.culprits[0].cause, "link_errors");
        assert_eq!(r.not_the_jobs[0].component.as_deref(), Some("leaf7/3"));
    }

    #[test]
    fn a_slow_time_no_measured_state_explains_is_never_neither() {
        let what_if = |explains: &str| model::job::WhatIf {
            traffic: "ring all-reduce of 64 MiB over 2 ranks, 1 rail per host".into(),
            scenarios: Vec::new(),
            explains: explains.into(),
            element: None,
            suggested_mapping: Vec::new(),
            evidence: "observed 300.0 us against 100.0 us on the healthy fabric (+200 %)".into(),
            simulated: true,
        };
        let mut e = evidence(
            vec![
                host("n1", Some(report("n1", PathStatus::Normal))),
                host("n2", Some(report("n2", PathStatus::Normal))),
            ],
            vec![pair(PartStatus::Normal)],
        );
        e.what_if = Some(what_if("none"));
        let r = judge(&e);
        assert_eq!(r.verdict, Verdict::Neither, "{}", r.summary);
        // Everything judged healthy, yet the job is three times its healthy replay: the
        // time is what was not judged.
        e.what_if = Some(what_if("unexplained"));
        let r = judge(&e);
        assert_eq!(r.verdict, Verdict::Inconclusive, "{}", r.summary);
        assert_eq!(r.verdict.exit_code(), 3);
        let item = r.not_judged.iter().find(|n| n.what == "the job's time");
        assert!(
            item.is_some_and(|n| n.why.contains("+200 %")),
            "{:?}",
            r.not_judged
        );
    }
}
