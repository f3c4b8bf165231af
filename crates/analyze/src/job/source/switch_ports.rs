//! The switch ports' counters as an evidence source ([`super::super::ports`] judges them).

use std::collections::BTreeSet;

use model::job::{Culprit, JobEvidence, JobReport, Layer};

use super::{Phase, Ranking, Source};
use crate::job::culprits::{
    fabric_action, listed, Judged, BACKGROUND_MIN_FINDINGS, BACKGROUND_MIN_PORTS, SCORE_CANDIDATES,
    SCORE_COUNTERS,
};
use crate::job::ports::{judge, JudgedPort, PortState};
use crate::job::reading::Reading;

/// The switch ports' counters, registered in [`crate::job::SOURCES`]: a port's errors or
/// link downs accuse its cable on their own, before the tomography; waits far above their
/// references are other jobs' traffic.
pub struct SwitchPorts;

impl Source for SwitchPorts {
    fn name(&self) -> &'static str {
        "switch ports"
    }

    fn read<'a>(&self, evidence: &'a JobEvidence, reading: &mut Reading<'a>) {
        reading.ports = judge(&evidence.ports);
        reading.accused.extend(
            reading
                .ports
                .iter()
                .filter(|p| matches!(p.state, PortState::Errors | PortState::Down))
                .map(|p| p.port.cable.clone()),
        );
    }

    fn phase(&self) -> Phase {
        Phase::Counters
    }

    /// The ports' errors and link downs on cables no fabric finding named: the job's
    /// culprits on its routes, not the job's off them. Then other jobs' traffic, here
    /// because it is first the ports' reading (waits far above their references) and it
    /// needs the ports' step done: it takes the pairs' uncorroborated findings the fabric
    /// phase left in the ranking, as its second reading, or else names them one by one.
    fn rank<'a>(&self, judged: &Judged<'a>, ranking: &mut Ranking<'a>) {
        for port in judged.ports() {
            if !matches!(port.state, PortState::Errors | PortState::Down) {
                continue;
            }
            if ranking.named_cables.contains(&port.port.cable) {
                continue;
            }
            let culprit = counters_culprit(port);
            // A cable is named once, by the first of its two ends that counted.
            ranking.named_cables.insert(port.port.cable.clone());
            if port.port.on_job_route {
                ranking.culprits.push(culprit);
            } else {
                ranking.not_the_jobs.push(culprit);
            }
        }
        let uncorroborated = std::mem::take(&mut ranking.uncorroborated);
        match background(judged, &uncorroborated, &ranking.queued_behind) {
            // Slowed pairs spread over many cables, or waits all over the fabric: one cause,
            // other jobs' traffic, rather than as many faults at once.
            Some(background) => ranking.culprits.push(background),
            None => ranking
                .culprits
                .extend(uncorroborated.into_iter().map(|(c, _)| c)),
        }
    }

    fn report(&self, judged: &Judged<'_>, report: &mut JobReport) {
        report.ports = judged
            .ports()
            .iter()
            .filter(|p| p.port.on_job_route || p.state != PortState::Normal)
            .map(|p| p.summary())
            .collect();
    }
}

/// A port's own counters name its cable.
fn counters_culprit(port: &JudgedPort) -> Culprit {
    let cause = if port.state == PortState::Down {
        "link_down"
    } else {
        "link_errors"
    };
    let mut evidence = port.words();
    if !port.port.on_job_route {
        evidence.push_str("; the job's routes do not cross it");
    }
    Culprit {
        layer: Layer::Fabric,
        host: None,
        component: Some(port.port.cable.clone()),
        cause: cause.to_string(),
        score: SCORE_COUNTERS,
        evidence,
        candidates: Vec::new(),
        action: fabric_action(cause, Some(&port.port.cable)),
    }
}

/// Other jobs' traffic (thesis 4.4: it congests many links at once, a fault one): the
/// job's pairs slowed across at least [`BACKGROUND_MIN_FINDINGS`] cables that no port
/// counter accuses (`spread`, the tomography's uncorroborated findings), or at least
/// [`BACKGROUND_MIN_PORTS`] ports on the job's routes waiting far above their reference
/// while ports off its routes wait too (traffic there is not the job's own); a port on the
/// way of a pair a slow cable explains (`queued_behind`) waits behind that cable and
/// counts for neither.
fn background(
    judged: &Judged<'_>,
    spread: &[(Culprit, usize)],
    queued_behind: &BTreeSet<&str>,
) -> Option<Culprit> {
    let faulty: BTreeSet<&str> = judged
        .ports()
        .iter()
        .filter(|p| matches!(p.state, PortState::Errors | PortState::Down))
        .map(|p| p.port.cable.as_str())
        .collect();
    let mut congested: Vec<&JudgedPort> = judged
        .ports()
        .iter()
        .filter(|p| p.port.on_job_route && p.state == PortState::Congested)
        .filter(|p| !faulty.contains(p.port.cable.as_str()))
        .filter(|p| !queued_behind.contains(p.port.cable.as_str()))
        .collect();
    congested.sort_by(|a, b| b.wait_per_s.total_cmp(&a.wait_per_s));
    let off_route_waits = judged.ports().iter().any(|p| {
        !p.port.on_job_route
            && p.state == PortState::Congested
            && !queued_behind.contains(p.port.cable.as_str())
    });
    let waits = congested.len() >= BACKGROUND_MIN_PORTS && off_route_waits;
    let spread_out = spread.len() >= BACKGROUND_MIN_FINDINGS;
    if !waits && !spread_out {
        return None;
    }
    let on_route = judged
        .ports()
        .iter()
        .filter(|p| p.port.on_job_route)
        .count();
    let mut evidence = Vec::new();
    if spread_out {
        let pairs: usize = spread.iter().map(|(_, explained)| explained).sum();
        evidence.push(format!(
            "{pairs} pairs are slow in their network part across {} cables ({}) that \
             no error counter accuses, where one faulty cable would slow the pairs of one",
            spread.len(),
            listed(spread.iter().filter_map(|(c, _)| c.component.as_deref()))
        ));
    }
    if !congested.is_empty() {
        evidence.push(format!(
            "{} of the {on_route} ports on the job's routes waited for credits far more than \
             their reference (most: {}){}",
            congested.len(),
            listed(congested.iter().map(|p| p.port.port.as_str())),
            if off_route_waits {
                ", and ports off its routes waited too"
            } else {
                ""
            }
        ));
    }
    let score =
        SCORE_CANDIDATES + if waits { 0.2 } else { 0.0 } + if spread_out { 0.2 } else { 0.0 };
    Some(Culprit {
        layer: Layer::Fabric,
        host: None,
        component: None,
        cause: "background_traffic".to_string(),
        score,
        evidence: format!("{}: other jobs' traffic", evidence.join("; ")),
        candidates: Vec::new(),
        action: fabric_action("background_traffic", None),
    })
}

#[cfg(test)]
mod tests {
    use model::pair::PartStatus;
    use model::PathStatus;

    use super::SwitchPorts;
    use crate::job::source::pairs::Pairs;
    use crate::job::tests::{error_port, evidence, host, pair, ranked, report};

    fn hosts() -> Vec<model::job::JobHost> {
        vec![
            host("n1", Some(report("n1", PathStatus::Normal))),
            host("n2", Some(report("n2", PathStatus::Normal))),
        ]
    }

    #[test]
    fn a_corrupting_port_is_the_jobs_culprit_on_its_routes_only() {
        let mut e = evidence(hosts(), vec![pair(PartStatus::Normal)]);
        e.ports = vec![error_port("leaf1/2", true), error_port("leaf7/3", false)];
        let (culprits, not_the_jobs, _) = ranked(&e, &[&SwitchPorts]);
        assert_eq!(culprits.len(), 1, "{culprits:?}");
        assert_eq!(culprits[0].component.as_deref(), Some("leaf1/2"));
        assert_eq!(culprits[0].cause, "link_errors");
        assert_eq!(not_the_jobs.len(), 1, "{not_the_jobs:?}");
        assert_eq!(not_the_jobs[0].component.as_deref(), Some("leaf7/3"));
    }

    #[test]
    fn one_uncorroborated_finding_and_no_waits_is_named_not_background() {
        let e = evidence(hosts(), vec![pair(PartStatus::Abnormal)]);
        let (culprits, _, aside) = ranked(&e, &[&Pairs, &SwitchPorts]);
        assert!(aside.is_empty(), "{aside:?}");
        assert_eq!(culprits.len(), 1, "{culprits:?}");
        assert_ne!(culprits[0].cause, "background_traffic");
        assert_eq!(culprits[0].candidates, ["leaf1/1", "leaf1/2"]);
    }
}
