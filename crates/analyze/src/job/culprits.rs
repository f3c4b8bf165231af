//! What the culprits are drawn from ([`Judged`]), the scores and words the sources' rankings
//! share, and the verdict from the ranked culprits (DESIGN 4.7). Each source ranks its own
//! culprits ([`super::source::Source::rank`]); [`super::judge`] sorts them.

use model::inspector::Symptom;
use model::job::{Culprit, JobEvidence, Layer, NotJudgedItem, Sensitivity, Verdict};

use crate::job::hosts::Hosts;
use crate::job::paths::Tomography;
use crate::job::ports::JudgedPort;
use crate::job::reading::Reading;
use crate::job::sensitivity::percent;

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
/// Why a one-host job's network is not judged.
pub const ONE_HOST: &str = "one host: no pair between hosts to probe; the network was not judged";
/// Most ports or pairs an evidence text lists by name.
pub(super) const LISTED: usize = 3;

/// Everything the culprits are drawn from.
pub struct Judged<'a> {
    evidence: &'a JobEvidence,
    reading: &'a Reading<'a>,
    tomography: &'a Tomography,
}

impl<'a> Judged<'a> {
    /// Gathers the parts: what the sources read, and the tomography over it.
    pub fn new(
        evidence: &'a JobEvidence,
        reading: &'a Reading<'a>,
        tomography: &'a Tomography,
    ) -> Self {
        Judged {
            evidence,
            reading,
            tomography,
        }
    }

    /// The evidence judged.
    pub fn evidence(&self) -> &'a JobEvidence {
        self.evidence
    }

    /// What the hosts' own checks say.
    pub fn hosts(&self) -> &Hosts<'a> {
        &self.reading.hosts
    }

    /// The tomography over the hosts' paths and the pairs' network parts.
    pub fn tomography(&self) -> &Tomography {
        self.tomography
    }

    /// The switch ports, judged.
    pub fn ports(&self) -> &[JudgedPort<'a>] {
        &self.reading.ports
    }

    /// The job's own collectives judged, when any were read.
    pub fn symptom(&self) -> Option<&'a Symptom> {
        self.reading.symptom.as_ref()
    }

    /// The cables of the job's routes that no judged observation crossed; on one host,
    /// the network as a whole (DESIGN 4.7 rule 7: no pair probed, so the network layer
    /// was never judged, whatever the host's own check says).
    pub fn unjudged_cables(&self) -> Vec<NotJudgedItem> {
        if self.evidence.nodes.len() == 1 && self.evidence.pairs.is_empty() {
            return vec![NotJudgedItem {
                what: "the network".to_string(),
                why: ONE_HOST.to_string(),
            }];
        }
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

/// The verdict in one sentence; `neither` says the losses its measurements could not have
/// seen ([`Sensitivity`]), so that nothing under them is called healthy unsaid.
pub fn summary(
    verdict: Verdict,
    culprits: &[Culprit],
    not_judged: &[NotJudgedItem],
    sensitivity: &Sensitivity,
) -> String {
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
        Verdict::Inconclusive => match not_judged {
            [only] => format!(
                "inconclusive ({}): {}; nothing judged is faulty",
                only.what, only.why
            ),
            _ => format!(
                "inconclusive: {} part(s) of the job were not judged, and nothing judged is \
                 faulty",
                not_judged.len()
            ),
        },
        Verdict::Neither => {
            let mut out = match culprits.first() {
                Some(c) => format!(
                    "neither: the hosts and the fabric on the job's routes are healthy; the \
                     job's own {} slows it",
                    c.cause
                ),
                None => {
                    "neither: the hosts and the fabric on the job's routes are healthy".to_string()
                }
            };
            out.push_str(&unseen(sensitivity));
            out
        }
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

/// `; losses of up to 20 % of a job path's bandwidth on the hosts and up to 20 % of a
/// pair's rate on the fabric would not show`; empty when neither layer was measured.
fn unseen(sensitivity: &Sensitivity) -> String {
    let parts: Vec<String> = [
        (
            sensitivity.host.min_visible_loss,
            "of a job path's bandwidth on the hosts",
        ),
        (
            sensitivity.network.min_visible_loss,
            "of a pair's rate on the fabric",
        ),
    ]
    .into_iter()
    .filter_map(|(loss, what)| loss.map(|l| format!("up to {} {what}", percent(l))))
    .collect();
    if parts.is_empty() {
        return String::new();
    }
    format!("; losses of {} would not show", parts.join(" and "))
}

/// What to do about a fabric culprit: the cable at `port`, or the candidates.
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

/// The first few names, and how many more (the job's words in the CLI list hosts so too).
pub fn listed(names: impl Iterator<Item = impl AsRef<str>>) -> String {
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
