//! From what the hosts, the tomography, the ports and the what-if found to ranked culprits and
//! the verdict (DESIGN 4.7).

use std::collections::{BTreeMap, BTreeSet};

use model::job::{Culprit, JobEvidence, Layer, NotJudgedItem, Verdict};
use model::pair::PartStatus;
use model::{Cause, LinkStatus};

use crate::job::direction;
use crate::job::hosts::{self, HostFinding, Hosts};
use crate::job::paths::{Finding, Tomography};
use crate::job::ports::{JudgedPort, PortState};

/// Score of an element the tomography alone proves: it explains abnormal observations and
/// every other element on them is normal on some other observation.
pub const SCORE_PROVEN: f64 = 0.9;
/// Score of an element named by its own counters (or its host's own check) with no probe
/// of the job's paths to confirm it.
pub const SCORE_COUNTERS: f64 = 0.75;
/// Score of a group the evidence cannot split: the culprit is one of the candidates.
pub const SCORE_CANDIDATES: f64 = 0.5;
/// Added when two independent sources (probes and counters) name the same element.
pub(super) const SCORE_CORROBORATED: f64 = 0.05;
/// Ports on the job's routes that must wait far more than their references, outside any
/// faulty element, before the waits are called other jobs' traffic (thesis 4.4: background
/// traffic congests many links at once, a fault one).
pub const BACKGROUND_MIN_PORTS: usize = 3;
/// Cables that pairs call slow, with no counter to accuse any, before the slowness is called
/// other jobs' traffic rather than as many faults at once.
pub const BACKGROUND_MIN_FINDINGS: usize = 3;
/// Most ports or pairs an evidence text lists by name.
const LISTED: usize = 3;

/// Everything the culprits are drawn from.
pub struct Judged<'a> {
    evidence: &'a JobEvidence,
    hosts: &'a Hosts<'a>,
    tomography: &'a Tomography,
    ports: &'a [JudgedPort<'a>],
}

impl<'a> Judged<'a> {
    /// Gathers the parts.
    pub fn new(
        evidence: &'a JobEvidence,
        hosts: &'a Hosts<'a>,
        tomography: &'a Tomography,
        ports: &'a [JudgedPort<'a>],
    ) -> Self {
        Judged {
            evidence,
            hosts,
            tomography,
            ports,
        }
    }

    /// The evidence judged.
    pub fn evidence(&self) -> &'a JobEvidence {
        self.evidence
    }

    /// What the hosts' own checks say.
    pub fn hosts(&self) -> &Hosts<'a> {
        self.hosts
    }

    /// The tomography over the hosts' paths and the pairs' network parts.
    pub fn tomography(&self) -> &Tomography {
        self.tomography
    }

    /// The switch ports, judged.
    pub fn ports(&self) -> &[JudgedPort<'a>] {
        self.ports
    }

    /// The job's culprits from the tomography, the ports and the hosts, not yet ranked (the
    /// sources move the ranking, then [`super::judge`] sorts them), and the faults found that
    /// are not the job's.
    pub fn culprits(&self) -> (Vec<Culprit>, Vec<Culprit>) {
        let mut culprits = Vec::new();
        let mut not_the_jobs = Vec::new();
        let segments: BTreeSet<String> = self.hosts.segments.iter().map(|s| s.element()).collect();
        let mut named_cables: BTreeSet<String> = BTreeSet::new();
        let mut uncorroborated: Vec<(Culprit, usize)> = Vec::new();
        // The cables on the ways of the pairs an uncorroborated finding explains: those pairs
        // queue behind the slow cable, and waits there are its back-pressure, not other
        // jobs' traffic.
        let mut queued_behind: BTreeSet<&str> = BTreeSet::new();
        for finding in &self.tomography.findings {
            if finding.elements.iter().all(|e| segments.contains(e)) {
                continue; // hosts' findings come from their own checks, below
            }
            let (culprit, corroborated) = self.fabric_culprit(finding);
            named_cables.extend(finding.elements.iter().cloned());
            if corroborated {
                culprits.push(culprit);
            } else {
                queued_behind.extend(
                    finding
                        .explains
                        .iter()
                        .filter_map(|&o| self.tomography.observations[o].pair)
                        .flat_map(|p| self.evidence.pairs[p].cables.iter().map(String::as_str)),
                );
                uncorroborated.push((culprit, finding.explains.len()));
            }
        }
        for port in self.ports {
            if !matches!(port.state, PortState::Errors | PortState::Down) {
                continue;
            }
            if named_cables.contains(&port.port.cable) {
                continue;
            }
            let culprit = counters_culprit(port);
            if port.port.on_job_route {
                named_cables.insert(port.port.cable.clone());
                culprits.push(culprit);
            } else {
                not_the_jobs.push(culprit);
            }
        }
        match self.background(&uncorroborated, &queued_behind) {
            // Slowed pairs spread over many cables, or waits all over the fabric: one cause,
            // other jobs' traffic, rather than as many faults at once.
            Some(background) => culprits.push(background),
            None => culprits.extend(uncorroborated.into_iter().map(|(c, _)| c)),
        }
        let abnormal_segments: BTreeSet<String> = self
            .tomography
            .findings
            .iter()
            .flat_map(|f| f.elements.iter())
            .filter(|e| segments.contains(*e))
            .cloned()
            .collect();
        for finding in &self.hosts.findings {
            let culprit = self.host_culprit(finding, &abnormal_segments);
            if finding.job_paths.is_empty() {
                not_the_jobs.push(culprit);
            } else if !culprits.contains(&culprit) {
                culprits.push(culprit);
            }
        }
        culprits.extend(self.unexplained_segments(&abnormal_segments));
        (culprits, not_the_jobs)
    }

    /// The cables of the job's routes that no judged observation crossed.
    pub fn unjudged_cables(&self) -> Vec<NotJudgedItem> {
        // A job on one host crosses no cable.
        if self.evidence.nodes.len() < 2 {
            return Vec::new();
        }
        if self.evidence.pairs.is_empty() {
            return vec![NotJudgedItem {
                what: "the job's cables".to_string(),
                why: "no RNIC-to-RNIC pair was probed between the job's hosts, so no cable \
                      of its routes was judged (probe them: --probe)"
                    .to_string(),
            }];
        }
        let missing: Vec<&String> = self
            .evidence
            .job_cables
            .iter()
            .filter(|c| !self.tomography.judged.contains(*c))
            .collect();
        if missing.is_empty() {
            return Vec::new();
        }
        vec![NotJudgedItem {
            what: format!("{} cable(s) of the job's routes", missing.len()),
            why: format!(
                "no judged pair crossed {}",
                listed(missing.iter().map(|s| s.as_str()))
            ),
        }]
    }

    /// Other jobs' traffic (thesis 4.4: it congests many links at once, a fault one): the
    /// job's pairs slowed across at least [`BACKGROUND_MIN_FINDINGS`] cables that no port
    /// counter accuses (`spread`, the tomography's uncorroborated findings), or at least
    /// [`BACKGROUND_MIN_PORTS`] ports on the job's routes waiting far above their reference
    /// while ports off its routes wait too (traffic there is not the job's own); a port on the
    /// way of a pair a slow cable explains (`queued_behind`) waits behind that cable and
    /// counts for neither.
    fn background(
        &self,
        spread: &[(Culprit, usize)],
        queued_behind: &BTreeSet<&str>,
    ) -> Option<Culprit> {
        let faulty: BTreeSet<&str> = self
            .ports
            .iter()
            .filter(|p| matches!(p.state, PortState::Errors | PortState::Down))
            .map(|p| p.port.cable.as_str())
            .collect();
        let mut congested: Vec<&JudgedPort> = self
            .ports
            .iter()
            .filter(|p| p.port.on_job_route && p.state == PortState::Congested)
            .filter(|p| !faulty.contains(p.port.cable.as_str()))
            .filter(|p| !queued_behind.contains(p.port.cable.as_str()))
            .collect();
        congested.sort_by(|a, b| b.wait_per_s.total_cmp(&a.wait_per_s));
        let off_route_waits = self.ports.iter().any(|p| {
            !p.port.on_job_route
                && p.state == PortState::Congested
                && !queued_behind.contains(p.port.cable.as_str())
        });
        let waits = congested.len() >= BACKGROUND_MIN_PORTS && off_route_waits;
        let spread_out = spread.len() >= BACKGROUND_MIN_FINDINGS;
        if !waits && !spread_out {
            return None;
        }
        let on_route = self.ports.iter().filter(|p| p.port.on_job_route).count();
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

    /// A culprit for a group of cables the tomography found.
    fn fabric_culprit(&self, finding: &Finding) -> (Culprit, bool) {
        let ports_of = |cable: &str| -> Vec<&JudgedPort> {
            self.ports
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
        let flagged_members: Vec<&String> =
            finding.elements.iter().filter(|e| flagged(e)).collect();
        let proven: Option<&String> = match (finding.elements.as_slice(), &flagged_members[..]) {
            ([only], _) => Some(only),
            (_, [one]) => Some(*one),
            _ => None,
        };
        let pairs: Vec<&model::job::JobPair> = finding
            .explains
            .iter()
            .filter_map(|&i| self.tomography.observations[i].pair)
            .map(|p| &self.evidence.pairs[p])
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
            || pairs.iter().any(|p| p.network_status == PartStatus::Failed);
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
            evidence
                .push_str("; the pairs that cross it at other times are normal: it comes and goes");
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

    /// A culprit for a host's diagnosis.
    fn host_culprit(&self, finding: &HostFinding, abnormal: &BTreeSet<String>) -> Culprit {
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
        let host_parts = self
            .evidence
            .pairs
            .iter()
            .filter(|p| {
                (p.a.host == finding.host && p.host_a_status == PartStatus::Abnormal)
                    || (p.b.host == finding.host && p.host_b_status == PartStatus::Abnormal)
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
    fn unexplained_segments(&self, abnormal: &BTreeSet<String>) -> Vec<Culprit> {
        let explained: BTreeSet<String> = self
            .hosts
            .findings
            .iter()
            .flat_map(|f| {
                f.job_paths
                    .iter()
                    .map(|p| hosts::segment_element(f.host, &p.rnic, &p.endpoint))
            })
            .collect();
        let mut by_host: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for s in &self.hosts.segments {
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
                let links: Vec<String> = self
                    .evidence
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
                let fleet: Vec<&str> = self
                    .evidence
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

/// The verdict from the culprits: host, network or both when any is the infrastructure's;
/// else inconclusive when anything was not judged, neither otherwise.
pub fn verdict(culprits: &[Culprit], not_judged: &[NotJudgedItem]) -> Verdict {
    let host = culprits
        .iter()
        .any(|c| matches!(c.layer, Layer::Host | Layer::Rnic));
    let network = culprits.iter().any(|c| c.layer == Layer::Fabric);
    match (host, network) {
        (true, true) => Verdict::Both,
        (true, false) => Verdict::Host,
        (false, true) => Verdict::Network,
        (false, false) if !not_judged.is_empty() => Verdict::Inconclusive,
        (false, false) => Verdict::Neither,
    }
}

/// The verdict in one sentence.
pub fn summary(verdict: Verdict, culprits: &[Culprit], not_judged: &[NotJudgedItem]) -> String {
    let name = |c: &Culprit| {
        let what = match (&c.host, &c.component) {
            (Some(h), Some(x)) => format!("{x} on {h}"),
            (Some(h), None) => h.clone(),
            (None, Some(x)) => x.clone(),
            (None, None) if !c.candidates.is_empty() => {
                format!("one of {}", listed(c.candidates.iter().map(|s| s.as_str())))
            }
            (None, None) => "the fabric".to_string(),
        };
        format!("{} ({what})", c.cause)
    };
    match verdict {
        Verdict::Inconclusive => format!(
            "inconclusive: {} part(s) of the job were not judged, and nothing judged is faulty",
            not_judged.len()
        ),
        Verdict::Neither => match culprits.first() {
            Some(c) => format!(
                "neither: the hosts and the fabric on the job's routes are healthy; the job's \
                 own {} slows it",
                c.cause
            ),
            None => "neither: the hosts and the fabric on the job's routes are healthy".to_string(),
        },
        _ => format!(
            "{}: {}",
            verdict.as_str(),
            culprits
                .iter()
                .filter(|c| c.layer != Layer::Job)
                .take(LISTED)
                .map(name)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

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

pub(super) fn fabric_action(cause: &str, port: Option<&str>) -> String {
    let at = port.map_or("the candidates".to_string(), |p| {
        format!("the cable at {p}")
    });
    match cause {
        "link_errors" => {
            format!("replace {at} or its transceiver; check the switch port's error counters after")
        }
        "link_down" => format!("reseat or replace {at}; check the switch port"),
        "link_flapping" => format!("reseat or replace {at}; watch its LinkDownedCounter"),
        "background_traffic" => "other jobs share the job's links: place it where the fabric \
                                 is less loaded, or separate the jobs"
            .to_string(),
        _ => format!("check {at}: its width and speed (ibportstate), then reseat or replace it"),
    }
}

fn pair_words(p: &model::job::JobPair) -> String {
    let name = crate::job::paths::pair_name(p);
    match &p.reason {
        Some(r) => format!("{name}: {r}"),
        None => name,
    }
}

/// The first few names, and how many more.
fn listed(names: impl Iterator<Item = impl AsRef<str>>) -> String {
    let names: Vec<String> = names.map(|n| n.as_ref().to_string()).collect();
    let mut out = names
        .iter()
        .take(LISTED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > LISTED {
        out.push_str(&format!(" and {} more", names.len() - LISTED));
    }
    out
}
