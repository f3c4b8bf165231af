//! The hosts' own checks as an evidence source ([`super::super::hosts`] judges them).

use std::collections::{BTreeMap, BTreeSet};

use model::job::{Culprit, JobEvidence, JobHost, JobHostSummary, JobReport, Layer, NotJudgedItem};
use model::pair::PartStatus;
use model::{Cause, LinkStatus, PathStatus};

use super::{Phase, Ranking, Source};
use crate::job::culprits::{
    listed, Judged, SCORE_CANDIDATES, SCORE_CORROBORATED, SCORE_COUNTERS, SCORE_PROVEN,
};
use crate::job::hosts::{self, read, HostFinding};
use crate::job::reading::Reading;

/// The hosts' own checks, registered in [`crate::job::SOURCES`]: the job's paths on each
/// host are the tomography's host elements, and each diagnosis on them a culprit.
pub struct HostChecks;

impl Source for HostChecks {
    fn name(&self) -> &'static str {
        "host checks"
    }

    fn read<'a>(&self, evidence: &'a JobEvidence, reading: &mut Reading<'a>) {
        reading.hosts = read(&evidence.hosts);
    }

    fn phase(&self) -> Phase {
        Phase::Hosts
    }

    /// Each diagnosis: the job's culprit when it is on the job's paths (once, though several
    /// name it), not the job's otherwise; then the abnormal job paths no diagnosis explains.
    fn rank<'a>(&self, judged: &Judged<'a>, ranking: &mut Ranking<'a>) {
        let segments = judged.hosts().segment_elements();
        let abnormal_segments: BTreeSet<String> = judged
            .tomography()
            .findings
            .iter()
            .flat_map(|f| f.elements.iter())
            .filter(|e| segments.contains(*e))
            .cloned()
            .collect();
        for finding in &judged.hosts().findings {
            let culprit = host_culprit(judged, finding, &abnormal_segments);
            if finding.job_paths.is_empty() {
                ranking.not_the_jobs.push(culprit);
            } else if !ranking.culprits.contains(&culprit) {
                ranking.culprits.push(culprit);
            }
        }
        ranking
            .culprits
            .extend(unexplained_segments(judged, &abnormal_segments));
    }

    fn not_judged(&self, judged: &Judged<'_>) -> Vec<NotJudgedItem> {
        judged.hosts().not_judged.clone()
    }

    fn report(&self, judged: &Judged<'_>, report: &mut JobReport) {
        report.hosts = judged
            .evidence()
            .hosts
            .iter()
            .map(|h| host_summary(judged, h))
            .collect();
    }
}

/// A host in the report: its check's verdict, and what the job's verdict judged of it (the
/// job's paths), so that a host is never called healthy for links no job path crosses.
fn host_summary(judged: &Judged<'_>, h: &JobHost) -> JobHostSummary {
    let Some(report) = &h.report else {
        return JobHostSummary {
            host: h.host.clone(),
            healthy: None,
            causes: Vec::new(),
            job_paths_healthy: None,
            unjudged_links: Vec::new(),
            judged: "not judged: no run of its own check in the window".to_string(),
        };
    };
    let segments: Vec<_> = judged
        .hosts()
        .segments
        .iter()
        .filter(|s| s.host == h.host)
        .collect();
    let on_job_paths = judged
        .hosts()
        .findings
        .iter()
        .any(|f| f.host == h.host && !f.job_paths.is_empty());
    let job_paths_healthy =
        if on_job_paths || segments.iter().any(|s| s.status == PathStatus::Abnormal) {
            Some(false)
        } else if segments.iter().all(|s| s.status == PathStatus::Normal) {
            Some(true)
        } else {
            None
        };
    let links_known = h.job_paths.iter().all(|p| !p.links.is_empty());
    // (links no job path crosses, links on them its check left uncertain)
    let (mut off_paths, mut uncertain) = (Vec::new(), Vec::new());
    for l in report.links.iter().filter(|_| links_known) {
        if !h.job_paths.iter().any(|p| p.links.contains(&l.id)) {
            off_paths.push(l.id.to_string());
        } else if l.status == LinkStatus::Uncertain {
            uncertain.push(l.id.to_string());
        }
    }
    let mut words = match job_paths_healthy {
        Some(true) => "the job's paths are healthy".to_string(),
        Some(false) => "the job's paths are not healthy".to_string(),
        None => "the job's paths were not all judged".to_string(),
    };
    if !links_known {
        words.push_str("; which links they cross is unknown, so no other link was judged");
    } else if off_paths.is_empty() {
        words.push_str("; they cross every link of the host");
    } else {
        words.push_str(&format!(
            "; links not on them were not judged: {}",
            off_paths.join(", ")
        ));
    }
    if !uncertain.is_empty() {
        words.push_str(&format!(
            "; its check left {} on them uncertain",
            uncertain.join(", ")
        ));
    }
    let mut unjudged_links = off_paths;
    unjudged_links.extend(uncertain);
    JobHostSummary {
        host: h.host.clone(),
        healthy: Some(report.healthy),
        causes: report
            .diagnoses
            .iter()
            .map(|d| d.cause.as_str().to_string())
            .collect(),
        job_paths_healthy,
        unjudged_links,
        judged: words,
    }
}

/// A culprit for a host's diagnosis.
fn host_culprit(
    judged: &Judged<'_>,
    finding: &HostFinding,
    abnormal: &BTreeSet<String>,
) -> Culprit {
    let d = finding.diagnosis;
    let layer = if hosts::is_rnic_cause(d.cause) {
        Layer::Rnic
    } else {
        Layer::Host
    };
    let component = match (layer, d.rnic.as_ref(), d.links.first()) {
        (Layer::Rnic, Some(rnic), _) => Some(rnic.to_string()),
        (_, _, Some(link)) => Some(link.to_string()),
        (_, rnic, None) => rnic.map(|r| r.to_string()),
    };
    let seen: Vec<String> = finding
        .job_paths
        .iter()
        .map(|p| hosts::segment_element(finding.host, &p.rnic, &p.endpoint))
        .filter(|e| abnormal.contains(e))
        .collect();
    let host_parts = judged
        .evidence()
        .pairs
        .iter()
        .filter(|p| {
            (p.parts.a.host == finding.host && p.parts.host_a_status == PartStatus::Abnormal)
                || (p.parts.b.host == finding.host && p.parts.host_b_status == PartStatus::Abnormal)
        })
        .count();
    let mut evidence = format!("{}'s own check: {}", finding.host, d.evidence);
    if finding.job_paths.is_empty() {
        evidence.push_str("; the job's paths do not cross it");
    } else if !seen.is_empty() {
        evidence.push_str(&format!(
            "; the job's path{} {} abnormal",
            if seen.len() > 1 { "s" } else { "" },
            listed(seen.iter().map(|s| s.as_str()))
        ));
    }
    if host_parts > 0 {
        evidence.push_str(&format!(
            "; {host_parts} pair(s) from it are abnormal in its part"
        ));
    }
    Culprit {
        layer,
        host: Some(finding.host.to_string()),
        component,
        cause: d.cause.as_str().to_string(),
        score: if seen.is_empty() {
            SCORE_COUNTERS
        } else {
            SCORE_PROVEN
                + if host_parts > 0 {
                    SCORE_CORROBORATED
                } else {
                    0.0
                }
        },
        evidence,
        candidates: if d.links.len() > 1 {
            d.links.iter().map(|l| l.to_string()).collect()
        } else {
            Vec::new()
        },
        action: host_action(d.cause, finding.host),
    }
}

/// Abnormal job paths that no diagnosis of their host explains (a report without its
/// rules' conclusion): the host is named, its abnormal links are the candidates.
fn unexplained_segments(judged: &Judged<'_>, abnormal: &BTreeSet<String>) -> Vec<Culprit> {
    let explained: BTreeSet<String> = judged
        .hosts()
        .findings
        .iter()
        .flat_map(|f| {
            f.job_paths
                .iter()
                .map(|p| hosts::segment_element(f.host, &p.rnic, &p.endpoint))
        })
        .collect();
    let mut by_host: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for s in &judged.hosts().segments {
        let e = s.element();
        if abnormal.contains(&e) && !explained.contains(&e) {
            by_host
                .entry(s.host)
                .or_default()
                .push(format!("{}->{}", s.path.rnic, s.path.endpoint));
        }
    }
    by_host
        .into_iter()
        .map(|(host, paths)| {
            let links: Vec<String> = judged
                .evidence()
                .hosts
                .iter()
                .find(|h| h.host == host)
                .and_then(|h| h.report.as_ref())
                .map_or(Vec::new(), |r| {
                    r.links
                        .iter()
                        .filter(|l| l.status == LinkStatus::Abnormal)
                        .map(|l| l.id.to_string())
                        .collect()
                });
            // Paths only the kind's fleet baseline finds abnormal say so with figures.
            let fleet: Vec<&str> = judged
                .evidence()
                .hosts
                .iter()
                .filter(|h| h.host == host)
                .flat_map(|h| &h.fleet_abnormal)
                .filter(|f| paths.contains(&format!("{}->{}", f.rnic, f.endpoint)))
                .map(|f| f.evidence.as_str())
                .collect();
            let evidence = if fleet.len() == paths.len() {
                format!(
                    "{host}'s own check passed the job's path(s), its kind's fleet baseline \
                     does not: {}",
                    fleet.join("; ")
                )
            } else {
                format!(
                    "{host}'s own check found the job's path(s) {} abnormal without naming \
                     a cause",
                    paths.join(", ")
                )
            };
            Culprit {
                layer: Layer::Host,
                host: Some(host.to_string()),
                component: None,
                cause: Cause::LinkFailure.as_str().to_string(),
                score: SCORE_CANDIDATES,
                evidence,
                candidates: links,
                action: host_action(Cause::LinkFailure, host),
            }
        })
        .collect()
}

/// What to do about a host's diagnosis.
fn host_action(cause: Cause, host: &str) -> String {
    match cause {
        Cause::LinkFailure | Cause::LinkFlapping => format!(
            "drain {host}; check the link's width, speed and AER errors (lspci -vv) and \
             reseat or replace the card or riser"
        ),
        Cause::LinkOverloaded => {
            format!("find what else loads that link on {host} (service traffic, another job)")
        }
        Cause::PcieMisconfiguration => format!(
            "fix the PCIe settings on {host} (ACS redirect off / ATS on for GPUDirect), then \
             check again"
        ),
        Cause::RnicMisconfiguration => {
            format!("fix the RNIC setting on {host} (slow start off, Tx window), then check again")
        }
        Cause::IommuCongestion => format!(
            "on {host}: use the IOMMU in pass-through or larger pages for the RNIC's buffers"
        ),
        Cause::MemoryBusCongestion => {
            format!("on {host}: find the memory-bound processes beside the job, or move them")
        }
        Cause::OdpStall => {
            format!("on {host}: pin (register) the job's buffers instead of on-demand paging")
        }
    }
}

#[cfg(test)]
mod tests {
    use model::job::Layer;
    use model::PathStatus;

    use super::HostChecks;
    use crate::job::culprits::SCORE_CANDIDATES;
    use crate::job::tests::{evidence, host, ranked, report};

    /// Issue 38 section 5: a host's entry says it was judged on the job's paths, and names
    /// the links no job path crosses, which its `healthy` does not vouch for.
    #[test]
    fn a_hosts_entry_says_what_the_jobs_paths_left_unjudged() {
        let link = |id: &str, status| model::LinkReport {
            id: id.into(),
            kind: model::LinkKind::GpuPcie,
            status,
            abnormal_cnt: 0,
            utilisation: None,
            bound: None,
        };
        let mut checked = report("n1", PathStatus::Normal);
        checked.links = vec![
            link("rnic0--lsw0", model::LinkStatus::Normal),
            link("gpu0--lsw0", model::LinkStatus::Normal),
            link("mem0--cpu0", model::LinkStatus::Normal),
        ];
        let mut n1 = host("n1", Some(checked));
        n1.job_paths[0].links = vec!["rnic0--lsw0".into(), "gpu0--lsw0".into()];
        let r = crate::job::judge(&evidence(vec![n1, host("n2", None)], vec![]));
        let n1 = &r.hosts[0];
        assert_eq!(n1.healthy, Some(true));
        assert_eq!(n1.job_paths_healthy, Some(true));
        assert_eq!(n1.unjudged_links, ["mem0--cpu0"]);
        assert_eq!(
            n1.judged,
            "the job's paths are healthy; links not on them were not judged: mem0--cpu0"
        );
        let n2 = &r.hosts[1];
        assert_eq!((n2.healthy, n2.job_paths_healthy), (None, None));
        assert!(n2.judged.starts_with("not judged"), "{}", n2.judged);
    }

    #[test]
    fn an_abnormal_job_path_no_diagnosis_explains_names_its_host() {
        let e = evidence(
            vec![host("n1", Some(report("n1", PathStatus::Abnormal)))],
            vec![],
        );
        let (culprits, not_the_jobs, _) = ranked(&e, &[&HostChecks]);
        assert_eq!(culprits.len(), 1, "{culprits:?}");
        assert_eq!(culprits[0].layer, Layer::Host);
        assert_eq!(culprits[0].host.as_deref(), Some("n1"));
        assert_eq!(culprits[0].score, SCORE_CANDIDATES);
        assert!(not_the_jobs.is_empty(), "{not_the_jobs:?}");
    }
}
