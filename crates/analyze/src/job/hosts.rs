//! The job's hosts as their own checks judged them: each job path's status (what the
//! tomography sees of the host), and each diagnosis either on the job's paths (a culprit
//! candidate) or off them (a fault that is not the job's).

use model::job::{JobHost, JobPath, NotJudgedItem};
use model::{Cause, Diagnosis, PathStatus, Report};

/// A job path on one host and its status in the host's check.
#[derive(Clone, Debug)]
pub struct Segment<'a> {
    /// The host.
    pub host: &'a str,
    /// The path.
    pub path: &'a JobPath,
    /// Its status (uncertain when the host has no run or the path was not judged).
    pub status: PathStatus,
}

impl Segment<'_> {
    /// The segment's element id in the job's tomography (`node001:rnic0->gpu0`).
    pub fn element(&self) -> String {
        segment_element(self.host, &self.path.rnic, &self.path.endpoint)
    }
}

/// A segment's element id.
pub fn segment_element(host: &str, rnic: &str, endpoint: &str) -> String {
    format!("{host}:{rnic}->{endpoint}")
}

/// A diagnosis of a host's check, and whether the job's traffic crosses what it names.
#[derive(Clone, Debug)]
pub struct HostFinding<'a> {
    /// The host.
    pub host: &'a str,
    /// The diagnosis.
    pub diagnosis: &'a Diagnosis,
    /// The job paths it touches (`rnic0->gpu0`); empty: not the job's.
    pub job_paths: Vec<&'a JobPath>,
}

/// What the hosts say.
#[derive(Debug, Default)]
pub struct Hosts<'a> {
    /// Every job path of every host.
    pub segments: Vec<Segment<'a>>,
    /// Every diagnosis of every host.
    pub findings: Vec<HostFinding<'a>>,
    /// Hosts and paths not judged.
    pub not_judged: Vec<NotJudgedItem>,
}

impl Hosts<'_> {
    /// The tomography's element of every job path (`node001:rnic0->gpu0`): what a finding
    /// made only of them is the hosts' own, judged by their checks.
    pub fn segment_elements(&self) -> std::collections::BTreeSet<String> {
        self.segments.iter().map(|s| s.element()).collect()
    }
}

/// Reads every host's check.
pub fn read(hosts: &[JobHost]) -> Hosts<'_> {
    let mut out = Hosts::default();
    for host in hosts {
        let Some(report) = &host.report else {
            out.not_judged.push(NotJudgedItem {
                what: host.host.clone(),
                why: "no run of its own check in the window: its paths were not judged".to_string(),
            });
            for path in &host.job_paths {
                out.segments.push(Segment {
                    host: &host.host,
                    path,
                    status: PathStatus::Uncertain,
                });
            }
            continue;
        };
        let mut unjudged: Vec<String> = Vec::new();
        for path in &host.job_paths {
            let against_fleet = host
                .fleet_abnormal
                .iter()
                .any(|f| f.rnic == path.rnic && f.endpoint == path.endpoint);
            let status = report
                .paths
                .iter()
                .find(|p| p.rnic.as_str() == path.rnic && p.endpoint.as_str() == path.endpoint)
                .map_or(PathStatus::Uncertain, |p| p.status);
            let status = if against_fleet {
                PathStatus::Abnormal
            } else {
                status
            };
            if status == PathStatus::Uncertain {
                unjudged.push(format!("{}->{}", path.rnic, path.endpoint));
            }
            out.segments.push(Segment {
                host: &host.host,
                path,
                status,
            });
        }
        if !unjudged.is_empty() {
            // A busy host's check judges its paths only against each other (Hostping 4.3):
            // say what kept it busy, which is often the answer the reader came for.
            let busy = if report.busy.is_empty() {
                String::new()
            } else {
                format!(", as the host was busy: {}", report.busy.join("; "))
            };
            out.not_judged.push(NotJudgedItem {
                what: host.host.clone(),
                why: format!(
                    "its check did not judge the job's path{} {}{busy}",
                    if unjudged.len() > 1 { "s" } else { "" },
                    unjudged.join(", ")
                ),
            });
        }
        for diagnosis in &report.diagnoses {
            out.findings.push(HostFinding {
                host: &host.host,
                diagnosis,
                job_paths: touched(report, diagnosis, &host.job_paths),
            });
        }
    }
    out
}

/// The job paths a diagnosis touches. One that names links touches the paths crossing one
/// of them, whatever RNIC it names: an RNIC's IOTLB misses at its root port slow its DMA
/// into memory, not its peer-to-peer writes into GPU memory that cross no root port
/// (HotNets'22 3.1), so a GPU job's paths from that RNIC are not its. One that names only an
/// RNIC (a setting, a stall) touches every path from it. Where a path's links are unknown
/// (a host model the producer could not load), a diagnosis touches the paths of its RNIC,
/// or every path when it names no RNIC and its links are on the report's abnormal paths of
/// that RNIC.
fn touched<'a>(report: &Report, diagnosis: &Diagnosis, paths: &'a [JobPath]) -> Vec<&'a JobPath> {
    let rnic = diagnosis.rnic.as_ref().map(|r| r.as_str());
    paths
        .iter()
        .filter(|path| {
            if !path.links.is_empty() && !diagnosis.links.is_empty() {
                return diagnosis.links.iter().any(|l| path.links.contains(l));
            }
            if rnic == Some(path.rnic.as_str()) {
                return true;
            }
            if !path.links.is_empty() {
                return false;
            }
            rnic.is_none()
                && report.paths.iter().any(|p| {
                    p.rnic.as_str() == path.rnic
                        && p.endpoint.as_str() == path.endpoint
                        && p.status == PathStatus::Abnormal
                })
        })
        .collect()
}

/// A host cause's layer: the RNIC's own settings and stalls are the RNIC's.
pub fn is_rnic_cause(cause: Cause) -> bool {
    matches!(cause, Cause::RnicMisconfiguration | Cause::OdpStall)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report_with(diagnoses: Vec<Diagnosis>) -> Report {
        Report {
            host: "node001".into(),
            mode: model::Mode::Idle,
            busy: Vec::new(),
            healthy: diagnoses.is_empty(),
            inconclusive: false,
            not_judged: Vec::new(),
            provenance: model::Provenance::Simulated,
            run: 0,
            paths: vec![],
            links: vec![],
            diagnoses,
            baseline: None,
            thresholds: None,
        }
    }

    fn path(rnic: &str, endpoint: &str, links: &[&str]) -> JobPath {
        JobPath {
            rnic: rnic.into(),
            endpoint: endpoint.into(),
            links: links.iter().map(|l| (*l).into()).collect(),
        }
    }

    fn diagnosis(cause: Cause, links: &[&str], rnic: Option<&str>) -> Diagnosis {
        Diagnosis {
            cause,
            links: links.iter().map(|l| (*l).into()).collect(),
            rnic: rnic.map(Into::into),
            setting: None,
            evidence: String::new(),
        }
    }

    #[test]
    fn a_diagnosis_off_the_jobs_paths_touches_none() {
        let paths = [path("rnic0", "gpu0", &["rnic0--lsw0", "gpu0--lsw0"])];
        let report = report_with(vec![]);
        let on = diagnosis(Cause::LinkFailure, &["gpu0--lsw0"], None);
        let off = diagnosis(Cause::MemoryBusCongestion, &["mem0--cpu0"], None);
        let rnic = diagnosis(Cause::RnicMisconfiguration, &[], Some("rnic0"));
        assert_eq!(touched(&report, &on, &paths).len(), 1);
        assert!(touched(&report, &off, &paths).is_empty());
        assert_eq!(touched(&report, &rnic, &paths).len(), 1);
        // IOTLB misses at rnic0's root port: its GPU path crosses no root port.
        let iommu = diagnosis(Cause::IommuCongestion, &["usw0--cpu0"], Some("rnic0"));
        assert!(touched(&report, &iommu, &paths).is_empty());
    }

    #[test]
    fn a_host_without_a_run_is_not_judged() {
        let hosts = [JobHost {
            host: "node001".into(),
            report: None,
            job_paths: vec![path("rnic0", "gpu0", &[])],
            fleet_abnormal: Vec::new(),
        }];
        let read = read(&hosts);
        assert_eq!(read.not_judged.len(), 1);
        assert_eq!(read.segments[0].status, PathStatus::Uncertain);
        assert_eq!(read.segments[0].element(), "node001:rnic0->gpu0");
    }
}
