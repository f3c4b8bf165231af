//! Follow-up probes of a job's verdict (issue 28 section 2): when the evidence
//! leaves a group of cables it cannot split, probe, for each member, a pair whose route
//! crosses it and no other member, and judge again. A member the new pairs find abnormal is
//! the culprit; one they find normal is cleared. A flapping group's pairs are probed in both
//! phases of the flap, as the job's own rounds were. This module plans the pairs and words
//! their outcomes; the pipeline ([`crate::pipeline::run`]) has them measured by the
//! simulated cluster or by the collector.
//!
//! On real hosts the collector also reads switch ports now ([`plan_port_reads`] chooses
//! them): the ends of such a group's cables, and of the job's route cables no sampler's
//! counters covered in the window.

use model::job::{FollowUp, JobEvidence, JobReport, Layer};
use model::pair::PartStatus;
use std::collections::BTreeMap;

use crate::spec::{Cable, Cluster, RnicPort};

/// Most groups followed up in one verdict: each costs a mesh of a few pairs.
pub const MAX_GROUPS: usize = 8;

/// The pairs that separate the candidates of a verdict's culprits, and the members no pair
/// could separate.
#[derive(Debug, Default)]
pub struct Plan {
    /// Each pair to probe, with the hypotheses it separates in words.
    pub pairs: Vec<(RnicPort, RnicPort, String)>,
    /// The members for which no pair was found, said as follow-ups not run.
    pub not_planned: Vec<FollowUp>,
}

/// For each culprit of `report` whose candidates are cables (at most [`MAX_GROUPS`]), and
/// for each member, a pair whose route crosses it and none of the others, one end on a host
/// of `nodes` (the job's); then, for each cable a culprit names alone, a pair crossing it,
/// to measure it again before anything acts on it. Where the job's own collectives slowed
/// (DESIGN 4.8: a slow communicator without stragglers narrows the evidence to its ranks'
/// paths), the pair is chosen with as many ends as can be on that communicator's ranks'
/// RNICs (its hosts', where its ranks' RNICs are not known): the probe then measures the
/// paths the job's slow traffic took. The simulated job and the collector plan alike.
pub fn plan(cluster: &Cluster, report: &JobReport, nodes: &[String]) -> Plan {
    let slow = slow_ends(report);
    let groups: Vec<&Vec<String>> = report
        .culprits
        .iter()
        .filter(|c| c.candidates.len() > 1)
        .map(|c| &c.candidates)
        .take(MAX_GROUPS)
        .collect();
    let mut plan = Plan::default();
    for group in groups {
        let members: Vec<Cable> = group
            .iter()
            .filter_map(|label| cluster.parse_port(label).ok())
            .map(|p| cluster.cable_at(p))
            .collect();
        for (i, &member) in members.iter().enumerate() {
            let others: Vec<Cable> = members
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, &c)| c)
                .collect();
            let why = format!(
                "crosses {} and not {}",
                group[i],
                others
                    .iter()
                    .map(|&c| cluster.cable_label(c))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            match separating_pair(cluster, member, &others, nodes, &slow) {
                Some((a, b)) => plan.pairs.push((a, b, why)),
                None => plan.not_planned.push(FollowUp {
                    kind: "pair".to_string(),
                    target: group[i].clone(),
                    why: format!("to tell {} from the others", group[i]),
                    outcome: "no pair examined crosses it without the others".to_string(),
                    round: None,
                }),
            }
        }
    }
    plan.recheck_cables(cluster, report, nodes, &slow);
    plan
}

impl Plan {
    /// A pair crossing each cable a culprit names alone (at most [`MAX_GROUPS`]): the pairs
    /// that named it cannot also confirm it, so it is measured again before anything acts
    /// on it (DESIGN 4.9; a host's culprit is checked again the same way, `crate::recheck`).
    fn recheck_cables(
        &mut self,
        cluster: &Cluster,
        report: &JobReport,
        nodes: &[String],
        slow: &[SlowEnd],
    ) {
        let named = report
            .culprits
            .iter()
            .filter(|c| c.layer == Layer::Fabric && c.candidates.len() <= 1)
            .filter_map(|c| c.component.as_deref())
            .take(MAX_GROUPS);
        for label in named {
            let Ok(port) = cluster.parse_port(label) else {
                continue;
            };
            let why = format!("crosses {label}{RECHECK_SUFFIX}");
            match separating_pair(cluster, cluster.cable_at(port), &[], nodes, slow) {
                Some((a, b)) => self.pairs.push((a, b, why)),
                None => self.not_planned.push(FollowUp {
                    kind: "pair".to_string(),
                    target: label.to_string(),
                    why,
                    outcome: "no pair examined crosses it".to_string(),
                    round: None,
                }),
            }
        }
    }
}

/// How a pair measuring a named cable again says why, after `crosses <cable>`
/// (`actions::confirm` reads it).
pub const RECHECK_SUFFIX: &str =
    ": measured again before any action, as the pairs that named it cannot confirm it";

/// Most switch ports read now in one verdict: both ends of four candidate cables in each
/// of [`MAX_GROUPS`] groups (a cross-leaf route on a two-level tree crosses four cables, the
/// largest group one pair leaves), so every group followed up can have its ports read. A
/// sampler reads them with their MADs in flight at once (rdma::subnet::sample), a few
/// milliseconds even through a slow subnet.
pub const MAX_PORT_READS: usize = 64;

/// The switch ports to read now, a cable at a time.
#[derive(Debug, Default, PartialEq)]
pub struct PortReads {
    /// Each cable's switch ports (one for a host's cable, both ends of a switch-to-switch
    /// one), with the hypotheses its reading separates in words.
    pub reads: Vec<PortRead>,
    /// The cables left out past [`MAX_PORT_READS`], said as follow-ups not run.
    pub not_planned: Vec<FollowUp>,
}

/// One cable's switch ports to read.
#[derive(Debug, Clone, PartialEq)]
pub struct PortRead {
    /// The cable, by its lower end (`leaf2/9`).
    pub cable: String,
    /// Its switch ports (`leaf2/9`, `spine1/2`).
    pub ports: Vec<String>,
    /// Why it is read.
    pub why: String,
}

/// The switch ports of `report`'s undecided groups of cables (each culprit whose candidates
/// are several cables, at most [`MAX_GROUPS`], what the pairs could not split) and of the
/// cables of the job's routes (`evidence.job_cables`) none of whose switch ports has
/// counters in the window (`evidence.ports`): those first, at most [`MAX_PORT_READS`]
/// ports. A label the fabric does not know is left out.
pub fn plan_port_reads(cluster: &Cluster, report: &JobReport, evidence: &JobEvidence) -> PortReads {
    let mut wanted: BTreeMap<Cable, String> = BTreeMap::new();
    let mut order: Vec<Cable> = Vec::new();
    let mut want = |cable: Cable, why: String| {
        if let std::collections::btree_map::Entry::Vacant(e) = wanted.entry(cable) {
            order.push(cable);
            e.insert(why);
        }
    };
    let cable = |label: &str| cluster.parse_port(label).ok().map(|p| cluster.cable_at(p));
    let groups = report
        .culprits
        .iter()
        .filter(|c| c.candidates.len() > 1)
        .take(MAX_GROUPS);
    for culprit in groups {
        for label in &culprit.candidates {
            if let Some(c) = cable(label) {
                want(
                    c,
                    format!(
                        "one of {}, which the pairs could not tell apart: the counters of \
                         {label}'s switch ports read now can name it or clear it",
                        culprit.candidates.join(", ")
                    ),
                );
            }
        }
    }
    let counted: Vec<&str> = evidence.ports.iter().map(|p| p.cable.as_str()).collect();
    for label in &evidence.job_cables {
        if counted.contains(&label.as_str()) {
            continue;
        }
        if let Some(c) = cable(label) {
            want(
                c,
                format!(
                    "the job's routes cross {label}, and no sampler's counters of its switch \
                     ports fall in the window: not judged by them"
                ),
            );
        }
    }
    let mut plan = PortReads::default();
    let mut planned = 0;
    for c in order {
        let ports: Vec<String> = cluster
            .cable_ports(c)
            .into_iter()
            .map(|i| cluster.port_label(cluster.fabric.topology.port_ref(i)))
            .collect();
        let why = wanted.remove(&c).expect("each cable once");
        if planned + ports.len() > MAX_PORT_READS {
            plan.not_planned.push(FollowUp {
                kind: "ports".to_string(),
                target: ports.join(", "),
                why,
                outcome: format!("not run: past the {MAX_PORT_READS} ports one verdict reads"),
                round: None,
            });
            continue;
        }
        planned += ports.len();
        plan.reads.push(PortRead {
            cable: cluster.cable_label(c),
            ports,
            why,
        });
    }
    plan
}

/// A follow-up pair's outcome in words, from its network part's status and reason.
pub fn outcome(network: PartStatus, reason: Option<&str>) -> String {
    match (network, reason) {
        (PartStatus::Normal, _) => "network part normal".to_string(),
        (status, Some(reason)) => format!("{}: {reason}", status_word(status)),
        (status, None) => status_word(status).to_string(),
    }
}

fn status_word(status: PartStatus) -> &'static str {
    match status {
        PartStatus::Normal => "normal",
        PartStatus::Abnormal => "network part abnormal",
        PartStatus::Uncertain => "not judged",
        PartStatus::Failed => "failed",
    }
}

/// Most candidate pairs examined for one member: on a 3,564-port fabric every pair from a
/// job's RNICs would be a million routes; past this many, each job RNIC is paired with
/// every k-th RNIC of the cluster (all of them on pod-32).
pub const MAX_EXAMINED: usize = 20_000;

/// An RNIC a slowed communicator's ranks use: a host and, when the verdict placed its ranks
/// there, the RNIC (any of the host's otherwise).
type SlowEnd = (String, Option<String>);

/// The ends of the job's communicators that slowed with no rank of theirs late (a
/// straggler's communicator is slow because of its compute, not its paths): each placed
/// rank's host and RNIC where every host of the communicator has one, else its hosts.
fn slow_ends(report: &JobReport) -> Vec<SlowEnd> {
    let Some(symptom) = &report.symptom else {
        return Vec::new();
    };
    let late: Vec<&str> = symptom
        .stragglers
        .iter()
        .map(|s| s.communicator.as_str())
        .collect();
    let mut ends: Vec<SlowEnd> = Vec::new();
    for c in symptom
        .communicators
        .iter()
        .filter(|c| c.slow && !late.contains(&c.id.as_str()))
    {
        if c.fully_placed() {
            ends.extend(c.places.iter().map(|p| (p.host.clone(), p.rnic.clone())));
        } else {
            ends.extend(c.hosts.iter().map(|h| (h.clone(), None)));
        }
    }
    ends.sort();
    ends.dedup();
    ends
}

/// A pair whose route (both ways) crosses `member` and none of `others`, one end a job
/// host's RNIC: the one with the most ends on `slow` hosts (the slow communicators'), then
/// the fewest cables (the fewest other hypotheses it tests at once).
fn separating_pair(
    cluster: &Cluster,
    member: Cable,
    others: &[Cable],
    job: &[String],
    slow: &[SlowEnd],
) -> Option<(RnicPort, RnicPort)> {
    let ports: Vec<RnicPort> = cluster.rnic_ports().collect();
    let job_ports: Vec<RnicPort> = ports
        .iter()
        .copied()
        .filter(|p| job.contains(&cluster.hosts[p.host].name))
        .collect();
    let on_slow = |p: RnicPort| {
        let host = &cluster.hosts[p.host];
        usize::from(slow.iter().any(|(h, rnic)| {
            *h == host.name
                && rnic
                    .as_deref()
                    .is_none_or(|r| host.rnics[p.rnic].as_str() == r)
        }))
    };
    let mut best: Option<((usize, usize), (RnicPort, RnicPort))> = None;
    // Every job RNIC against every k-th RNIC of the cluster, k set to stay within the bound;
    // the job's own RNICs always among them, so a pair of two slow hosts is examined.
    let stride = (job_ports.len() * ports.len())
        .div_ceil(MAX_EXAMINED)
        .max(1);
    let mut others_side: Vec<RnicPort> = ports.iter().step_by(stride).copied().collect();
    let missing: Vec<RnicPort> = job_ports
        .iter()
        .copied()
        .filter(|p| !others_side.contains(p))
        .collect();
    others_side.extend(missing);
    let candidates = job_ports
        .iter()
        .flat_map(|&a| others_side.iter().map(move |&b| (a, b)))
        .filter(|(a, b)| a.host != b.host);
    for (a, b) in candidates {
        let mut cables = cluster.cables_between(a, b);
        cables.extend(cluster.cables_between(b, a));
        if !cables.contains(&member) || others.iter().any(|o| cables.contains(o)) {
            continue;
        }
        // Smaller is better: ends off the slow hosts, then cables.
        let rank = (2 - on_slow(a) - on_slow(b), cables.len());
        if best.is_none_or(|(r, _)| rank < r) {
            best = Some((rank, (a, b)));
        }
    }
    best.map(|(_, pair)| pair)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A verdict whose one culprit is a group of cables the job's pairs could not split.
    fn report_with_candidates(nodes: &[String], candidates: &[String]) -> JobReport {
        serde_json::from_value(serde_json::json!({
            "job": null, "nodes": nodes, "verdict": "network", "pairs": [], "not_judged": [],
            "simulated": true, "summary": "", "not_the_jobs": [], "hosts": [], "ports": [],
            "what_if": null, "follow_ups": [],
            "culprits": [{"layer": "fabric", "host": null, "component": null,
                          "cause": "link_degraded", "score": 0.5, "evidence": "",
                          "candidates": candidates, "action": ""}]}))
        .unwrap()
    }

    /// pod-32 and the cables of the route node001 -> node009 (across two leaves).
    fn cross_leaf() -> (Cluster, Vec<String>, Vec<String>) {
        let pod = Cluster::builtin("pod-32").unwrap().unwrap();
        let nodes: Vec<String> = model::hostlist::expand("node[001,009]").unwrap();
        let port = |host: &str| RnicPort {
            host: pod.host_index(host).unwrap(),
            rnic: 0,
        };
        let cables = pod.cables_between(port("node001"), port("node009"));
        let labels = cables.iter().map(|&c| pod.cable_label(c)).collect();
        (pod, nodes, labels)
    }

    fn job_port(pod: &Cluster, label: &str) -> model::job::JobPort {
        model::job::JobPort {
            port: label.to_string(),
            cable: pod.cable_label(pod.cable_at(pod.parse_port(label).unwrap())),
            on_job_route: true,
            during: Default::default(),
            during_s: 10.0,
            before: None,
            before_s: 0.0,
            read_now_s: 0.0,
        }
    }

    #[test]
    fn the_ends_of_undecided_cables_and_of_unread_route_cables_are_read() {
        let (pod, nodes, route) = cross_leaf();
        assert!(route.len() >= 3, "{route:?}");
        // The pairs left the route's last two cables undecided; its first cable's leaf port
        // has counters in the window, the others none.
        let undecided = &route[route.len() - 2..];
        let report = report_with_candidates(&nodes, undecided);
        let evidence = JobEvidence {
            nodes: nodes.clone(),
            job_cables: route.clone(),
            ports: vec![job_port(&pod, &route[0])],
            ..Default::default()
        };
        let plan = plan_port_reads(&pod, &report, &evidence);
        assert!(plan.not_planned.is_empty(), "{:?}", plan.not_planned);
        let cables: Vec<&str> = plan.reads.iter().map(|r| r.cable.as_str()).collect();
        // The undecided first, then the unread, each once; the read one is left out.
        let mut expected: Vec<&str> = undecided.iter().map(String::as_str).collect();
        expected.extend(route[1..route.len() - 2].iter().map(String::as_str));
        assert_eq!(cables, expected, "{plan:?}");
        for read in &plan.reads {
            let cable = pod.cable_at(pod.parse_port(&read.cable).unwrap());
            // Every switch end of the cable: two between switches, one at a host's.
            assert_eq!(read.ports.len(), pod.cable_ports(cable).len(), "{read:?}");
            for port in &read.ports {
                let at = pod.cable_at(pod.parse_port(port).unwrap());
                assert_eq!(at, cable, "{port} is not on {}", read.cable);
            }
        }
        let up = plan.reads.iter().find(|r| r.ports.len() == 2);
        assert!(up.is_some(), "no switch-to-switch cable read: {plan:?}");
        assert!(
            plan.reads[0]
                .why
                .starts_with(&format!("one of {}", undecided.join(", "))),
            "{:?}",
            plan.reads[0]
        );
        assert!(plan.reads[plan.reads.len() - 1]
            .why
            .contains("no sampler's counters"));
    }

    #[test]
    fn past_the_bound_the_cables_are_said_not_read() {
        let pod = Cluster::builtin("pod-32").unwrap().unwrap();
        let nodes: Vec<String> = pod.hosts.iter().map(|h| h.name.clone()).collect();
        // Every RNIC's own cable, none with counters: one switch port each.
        let job_cables: Vec<String> = pod
            .rnic_ports()
            .map(|r| pod.parse_port(&pod.rnic_label(r)).unwrap())
            .map(|p| pod.cable_label(pod.cable_at(p)))
            .collect();
        assert!(job_cables.len() > MAX_PORT_READS, "{}", job_cables.len());
        let evidence = JobEvidence {
            nodes: nodes.clone(),
            job_cables: job_cables.clone(),
            ..Default::default()
        };
        let plan = plan_port_reads(&pod, &report_with_candidates(&nodes, &[]), &evidence);
        let read: usize = plan.reads.iter().map(|r| r.ports.len()).sum();
        assert_eq!(read, MAX_PORT_READS);
        assert_eq!(
            plan.reads.len() + plan.not_planned.len(),
            job_cables.len(),
            "every cable read or said"
        );
        for f in &plan.not_planned {
            assert_eq!(f.kind, "ports");
            assert!(f.outcome.starts_with("not run: past the 64 ports"), "{f:?}");
        }
    }

    #[test]
    fn each_member_of_a_group_gets_a_pair_that_crosses_it_and_no_other() {
        let pod = Cluster::builtin("pod-32").unwrap().unwrap();
        let nodes: Vec<String> = model::hostlist::expand("node[001-016]").unwrap();
        let port = |host: &str, rnic: usize| RnicPort {
            host: pod.host_index(host).unwrap(),
            rnic,
        };
        // The cables of one cross-leaf route: the two hosts' own and the leaves' up links.
        let group: Vec<Cable> = pod.cables_between(port("node001", 0), port("node009", 0));
        assert!(group.len() >= 3, "{group:?}");
        let labels: Vec<String> = group.iter().map(|&c| pod.cable_label(c)).collect();
        let plan = plan(&pod, &report_with_candidates(&nodes, &labels), &nodes);
        assert!(plan.not_planned.is_empty(), "{:?}", plan.not_planned);
        assert_eq!(plan.pairs.len(), group.len());
        for (member, (a, b, why)) in group.iter().zip(&plan.pairs) {
            let mut crossed = pod.cables_between(*a, *b);
            crossed.extend(pod.cables_between(*b, *a));
            assert!(crossed.contains(member), "{why}");
            let others = group.iter().filter(|c| *c != member);
            assert!(others.into_iter().all(|o| !crossed.contains(o)), "{why}");
            let job_end = [a, b]
                .iter()
                .any(|p| nodes.contains(&pod.hosts[p.host].name));
            assert!(job_end, "{why}");
            assert!(why.starts_with(&format!("crosses {} and not ", pod.cable_label(*member))));
        }
    }

    /// A symptom whose one communicator, over `hosts`, slowed; `straggler` a rank of it late.
    fn slowed_over(hosts: &[&str], straggler: bool) -> model::inspector::Symptom {
        let stragglers = if straggler {
            serde_json::json!([{"rank": 1, "communicator": "0x1", "host": hosts[0],
                                "gpu": null, "late_us": 40000.0, "collectives": 20}])
        } else {
            serde_json::json!([])
        };
        serde_json::from_value(serde_json::json!({
            "source": "nccl_inspector", "records": 100, "slow": true, "since": 10.0,
            "busbw_gbs": {"before": 20.0, "during": 10.0, "expected": null},
            "communicators": [{"id": "0x1", "collective": "AllReduce", "bytes": 1024,
                               "ranks": hosts.len(), "nnodes": hosts.len(), "hosts": hosts,
                               "slow": true, "busbw_gbs": 10.0, "since": 10.0,
                               "series": []}],
            "stragglers": stragglers,
            "skipped": {"unknown_records": 0, "bad_records": 0}}))
        .unwrap()
    }

    #[test]
    fn a_slow_rails_placed_ranks_are_its_ends_and_its_hosts_otherwise() {
        let mut report = report_with_candidates(&[], &[]);
        let mut symptom = slowed_over(&["node001", "node002"], false);
        let place = |host: &str, rnic: Option<&str>| model::inspector::RankPlace {
            host: host.into(),
            gpu: 1,
            rnic: rnic.map(String::from),
        };
        symptom.communicators[0].places = vec![
            place("node001", Some("rnic1")),
            place("node002", Some("rnic1")),
        ];
        report.symptom = Some(symptom.clone());
        let end = |h: &str, r: Option<&str>| (h.to_string(), r.map(String::from));
        assert_eq!(
            slow_ends(&report),
            [end("node001", Some("rnic1")), end("node002", Some("rnic1"))]
        );
        // One rank's RNIC not known: the communicator's hosts, any of their RNICs.
        symptom.communicators[0].places[1].rnic = None;
        report.symptom = Some(symptom);
        assert_eq!(
            slow_ends(&report),
            [end("node001", None), end("node002", None)]
        );
        // A straggler's communicator steers nothing.
        report.symptom = Some(slowed_over(&["node001", "node002"], true));
        assert!(slow_ends(&report).is_empty());
    }

    #[test]
    fn a_slow_rails_rnics_are_the_ends_of_the_pair_that_measures_a_cable_again() {
        let pod = Cluster::builtin("pod-32").unwrap().unwrap();
        let nodes: Vec<String> = model::hostlist::expand("node[001-032]").unwrap();
        let port = |host: &str, rnic: usize| RnicPort {
            host: pod.host_index(host).unwrap(),
            rnic,
        };
        let (a, b) = (port("node001", 1), port("node009", 1));
        let rail: Vec<SlowEnd> = [a, b]
            .iter()
            .map(|p| {
                let h = &pod.hosts[p.host];
                (h.name.clone(), Some(h.rnics[p.rnic].to_string()))
            })
            .collect();
        let hosts: Vec<SlowEnd> = rail.iter().map(|(h, _)| (h.clone(), None)).collect();
        // Each cable the rail's own pair crosses, measured again (no other member).
        let mut cables = pod.cables_between(a, b);
        cables.extend(pod.cables_between(b, a));
        let rail_ends =
            |(x, y): (RnicPort, RnicPort)| [x, y].iter().filter(|p| [a, b].contains(p)).count();
        let mut steered_by_rnic = 0;
        for &cable in &cables {
            let by_rnic = separating_pair(&pod, cable, &[], &nodes, &rail).unwrap();
            let by_host = separating_pair(&pod, cable, &[], &nodes, &hosts).unwrap();
            // The rail's own RNICs at both ends: the slow traffic's paths.
            assert_eq!(rail_ends(by_rnic), 2, "{}", pod.cable_label(cable));
            if rail_ends(by_host) < 2 {
                steered_by_rnic += 1;
            }
        }
        // pod-32 routes across rails: by host alone, the same hosts' other RNICs would do
        // for some cable.
        assert!(steered_by_rnic > 0, "{} cables", cables.len());
    }

    #[test]
    fn a_slow_communicators_hosts_are_the_pairs_ends_where_a_pair_of_them_separates() {
        let pod = Cluster::builtin("pod-32").unwrap().unwrap();
        let nodes: Vec<String> = model::hostlist::expand("node[001-032]").unwrap();
        let port = |host: &str| RnicPort {
            host: pod.host_index(host).unwrap(),
            rnic: 0,
        };
        let group: Vec<Cable> = pod.cables_between(port("node001"), port("node009"));
        let labels: Vec<String> = group.iter().map(|&c| pod.cable_label(c)).collect();
        let unsteered = plan_pairs(&pod, &report_with_candidates(&nodes, &labels), &nodes);
        let separates = |member: Cable, x: RnicPort, y: RnicPort| {
            let mut crossed = pod.cables_between(x, y);
            crossed.extend(pod.cables_between(y, x));
            crossed.contains(&member) && group.iter().all(|o| *o == member || !crossed.contains(o))
        };
        // For some member, two job hosts other than those the plan picks unsteered whose
        // pair separates it: they make the slow communicator.
        let job_ports: Vec<RnicPort> = pod
            .rnic_ports()
            .filter(|p| nodes.contains(&pod.hosts[p.host].name))
            .collect();
        let (i, slow) = group
            .iter()
            .enumerate()
            .find_map(|(i, &member)| {
                let (ua, ub) = unsteered[i];
                let picked = [ua.host, ub.host];
                job_ports.iter().find_map(|&x| {
                    job_ports
                        .iter()
                        .find(|&&y| {
                            x.host < y.host
                                && !(picked.contains(&x.host) && picked.contains(&y.host))
                                && separates(member, x, y)
                        })
                        .map(|&y| (i, [x.host, y.host]))
                })
            })
            .expect("another pair separates a member");
        let slow_names: Vec<&str> = slow.iter().map(|&h| pod.hosts[h].name.as_str()).collect();
        let mut report = report_with_candidates(&nodes, &labels);
        report.symptom = Some(slowed_over(&slow_names, false));
        let steered = plan_pairs(&pod, &report, &nodes);
        let (a, b) = steered[i];
        assert!(separates(group[i], a, b), "{a:?} {b:?}");
        assert!(
            slow.contains(&a.host) && slow.contains(&b.host),
            "{}: {a:?} {b:?} not on {slow_names:?}",
            labels[i]
        );
        assert_ne!(steered[i], unsteered[i]);

        // A straggler's communicator is slow for its compute: it does not steer the pairs.
        let mut straggling = report_with_candidates(&nodes, &labels);
        straggling.symptom = Some(slowed_over(&slow_names, true));
        assert_eq!(plan_pairs(&pod, &straggling, &nodes), unsteered);
    }

    fn plan_pairs(
        pod: &Cluster,
        report: &JobReport,
        nodes: &[String],
    ) -> Vec<(RnicPort, RnicPort)> {
        plan(pod, report, nodes)
            .pairs
            .into_iter()
            .map(|(a, b, _)| (a, b))
            .collect()
    }

    #[test]
    fn a_cable_named_alone_is_measured_again_by_a_pair_crossing_it() {
        let (pod, nodes, route) = cross_leaf();
        let mut report = report_with_candidates(&nodes, &[]);
        report.culprits[0].component = Some(route[1].clone());
        let plan = plan(&pod, &report, &nodes);
        assert_eq!(plan.pairs.len(), 1, "{:?}", plan.not_planned);
        let (a, b, why) = &plan.pairs[0];
        let mut crossed = pod.cables_between(*a, *b);
        crossed.extend(pod.cables_between(*b, *a));
        let cable = pod.cable_at(pod.parse_port(&route[1]).unwrap());
        assert!(crossed.contains(&cable), "{why}");
        assert_eq!(why, &format!("crosses {}{RECHECK_SUFFIX}", route[1]));
        // A host's culprit is not a cable: the host is checked again instead (crate::recheck).
        report.culprits[0].layer = Layer::Host;
        assert!(super::plan(&pod, &report, &nodes).pairs.is_empty());
    }
}
