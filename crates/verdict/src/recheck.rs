//! Checking a suspected host again before anything acts on it (DESIGN 4.9: "an action is
//! proposed only for a culprit that follow-up probes confirmed").
//!
//! A host's or an RNIC's culprit is raised by that host's own check in the window (or by the
//! check the collector asked of a host without one): the check that raised the suspicion
//! cannot also confirm it. So, with follow-ups on, each suspected host is checked again now,
//! a loopback run of its own: the fresh check finds the culprit's cause again (it confirms,
//! `actions::confirm`) or does not (it clears). azurehpc-health-checks likewise repeats its
//! tests before it drains, because operators will not forgive a healthy node drained
//! (issue 40). A straggler is left out: a loopback measures the host's network, never its
//! compute, so it can neither confirm nor clear one.

use model::job::{FollowUp, JobReport, Layer};
use model::Report;

/// The follow-ups' `kind`.
pub const KIND: &str = "recheck";

/// The cause a straggler culprit carries (DESIGN 4.8), which no loopback measures.
const STRAGGLER: &str = "straggler";

/// A host to check again, and why, in words.
#[derive(Clone, Debug, PartialEq)]
pub struct Suspect {
    /// The host.
    pub host: String,
    /// `suspected of pcie_downgraded at gpu4--lsw4: ...`.
    pub why: String,
}

/// The hosts of `report`'s host-side culprits, best culprit first, each once.
pub fn suspects(report: &JobReport) -> Vec<Suspect> {
    let mut out: Vec<Suspect> = Vec::new();
    for c in &report.culprits {
        let Some(host) = c.host.as_deref() else {
            continue;
        };
        if !matches!(c.layer, Layer::Host | Layer::Rnic) || c.cause == STRAGGLER {
            continue;
        }
        let what = match c.component.as_deref() {
            Some(component) => format!("{} at {component}", c.cause),
            None => c.cause.clone(),
        };
        match out.iter_mut().find(|s| s.host == host) {
            Some(s) => s.why.push_str(&format!(", {what}")),
            None => out.push(Suspect {
                host: host.to_string(),
                why: format!(
                    "checked again before any action, as the check that raised it cannot \
                     confirm it: suspected of {what}"
                ),
            }),
        }
    }
    out
}

/// The follow-up of `suspect` with what its check found (`outcome`, [`checked`]'s words or
/// `not run: <why>`).
pub fn follow_up(suspect: &Suspect, outcome: String) -> FollowUp {
    FollowUp {
        kind: KIND.to_string(),
        target: target(&suspect.host),
        why: suspect.why.clone(),
        outcome,
        round: None,
    }
}

/// A recheck's `target`: the host's loopbacks, as the collector's other checks of a host.
pub fn target(host: &str) -> String {
    format!("{host} loopback")
}

/// What a check found, in words: `checked (<label>): healthy`, `checked (<label>):
/// pcie_downgraded at gpu4--lsw4, ...`, or that it does not read as a report. `label` says
/// which check (`run 12`, `simulated`).
pub fn checked(label: &str, report: Option<&Report>) -> String {
    match report {
        Some(r) if r.diagnoses.is_empty() => format!(
            "checked ({label}): {}",
            if r.healthy { "healthy" } else { "not healthy" }
        ),
        Some(r) => format!(
            "checked ({label}): {}",
            r.diagnoses
                .iter()
                .map(|d| {
                    let at: Vec<&str> = d.links.iter().map(|l| l.as_str()).collect();
                    match at.is_empty() {
                        true => d.cause.as_str().to_string(),
                        false => format!("{} at {}", d.cause.as_str(), at.join(", ")),
                    }
                })
                .collect::<Vec<_>>()
                .join("; ")
        ),
        None => format!("checked ({label}), but the run does not read as a report"),
    }
}

/// What [`checked`]'s words say was found: `Some(causes)` (none: healthy), or `None` when
/// the check did not run, did not read, or found the host not healthy without a diagnosis.
pub fn found(outcome: &str) -> Option<Vec<&str>> {
    let (_, found) = outcome.strip_prefix("checked (")?.split_once("): ")?;
    match found {
        "healthy" => Some(Vec::new()),
        "not healthy" => None,
        found => Some(
            found
                .split("; ")
                .filter_map(|d| d.split(' ').next())
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::job::Culprit;

    fn culprit(layer: Layer, host: &str, component: &str, cause: &str) -> Culprit {
        Culprit {
            layer,
            host: Some(host.to_string()),
            component: Some(component.to_string()),
            cause: cause.to_string(),
            score: 0.9,
            evidence: String::new(),
            candidates: Vec::new(),
            action: String::new(),
        }
    }

    fn report(culprits: Vec<Culprit>) -> JobReport {
        let mut r: JobReport = serde_json::from_value(serde_json::json!({
            "job": "77", "nodes": ["node005"], "verdict": "host", "culprits": [],
            "pairs": [], "not_judged": [], "simulated": true, "summary": "",
            "not_the_jobs": [], "hosts": [], "ports": [], "what_if": null, "follow_ups": []}))
        .unwrap();
        r.culprits = culprits;
        r
    }

    #[test]
    fn each_suspected_host_is_checked_once_and_a_straggler_or_a_cable_never() {
        let r = report(vec![
            culprit(Layer::Host, "node005", "gpu4--lsw4", "pcie_downgraded"),
            culprit(Layer::Fabric, "node005", "leaf1/3", "link_failure"),
            culprit(Layer::Host, "node006", "rank3", "straggler"),
            culprit(Layer::Rnic, "node005", "rnic4", "rnic_slow_start"),
        ]);
        let s = suspects(&r);
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!(s[0].host, "node005");
        assert!(
            s[0].why
                .ends_with("pcie_downgraded at gpu4--lsw4, rnic_slow_start at rnic4"),
            "{}",
            s[0].why
        );
    }

    /// A check's report of `diagnoses` (cause, links).
    fn check(healthy: bool, diagnoses: &[(&str, &[&str])]) -> Report {
        let diagnoses: Vec<serde_json::Value> = diagnoses
            .iter()
            .map(|(cause, links)| {
                serde_json::json!({"cause": cause, "links": links, "rnic": null, "evidence": ""})
            })
            .collect();
        serde_json::from_value(serde_json::json!({
            "host": "dgx-a100", "mode": "idle", "healthy": healthy, "provenance": "simulated",
            "run": 0, "paths": [], "links": [], "diagnoses": diagnoses}))
        .unwrap()
    }

    #[test]
    fn the_words_of_a_check_read_back_as_what_it_found() {
        assert_eq!(
            found(&checked("run 3", Some(&check(true, &[])))),
            Some(vec![])
        );
        let two = check(
            false,
            &[
                ("link_failure", &["gpu0--lsw0", "lsw0--rnic0"]),
                ("rnic_misconfiguration", &[]),
            ],
        );
        let words = checked("simulated", Some(&two));
        assert_eq!(
            words,
            "checked (simulated): link_failure at gpu0--lsw0, lsw0--rnic0; rnic_misconfiguration"
        );
        assert_eq!(
            found(&words),
            Some(vec!["link_failure", "rnic_misconfiguration"])
        );
        assert_eq!(found(&checked("run 4", Some(&check(false, &[])))), None);
        assert_eq!(found(&checked("run 4", None)), None);
        assert_eq!(found("not run: no agent registered it"), None);
    }
}
