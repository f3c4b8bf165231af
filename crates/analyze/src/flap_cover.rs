//! Cover rule (beyond the paper): one link behind every abnormal path of the recent runs.
//!
//! Algorithm 1 judges each run alone. When a link flaps during a run, some paths through it
//! are fast and mark it normal, so a slow path through it blames the one uncertain link it
//! also crosses (an RNIC link that flaps makes its GPU links look failed, a different one in
//! each run), or turns gray. Across the flapping rules' window
//! ([`crate::flap_common::window`]) the flapping link is the one every abnormal path crosses.
//! It is named `link_flapping` when:
//! - at least two runs of the window had abnormal paths, and every abnormal path of the
//!   window (leaving out paths over a link another cause explained in that run) crosses it;
//! - it changed level at least twice over the window, where a run counts as degraded when
//!   Algorithm 1 found it abnormal, healthy when normal, and as one change of its own when
//!   gray (abnormal on one path, normal on another within the run, Hostping 4.3), in at
//!   least `flapping_runs` judged runs (so gray alone still takes the paper's 3 runs);
//! - among such links, those Algorithm 1 marked abnormal or gray in every degraded run are
//!   preferred (a GPU link behind its RNIC's link, which the RNIC's other paths clear).
//!
//! The failures this run blamed on other links lie on paths the flapping link explains, so
//! they are withdrawn, and so is a slow-start or Tx-window finding on the RNIC whose own
//! link flaps (its follow-up streams met the flap, not a setting).

use crate::evidence;
use crate::flap_common;
use crate::history::RunRecord;
use model::{Cause, Diagnosis, HostTopology, LinkId, LinkStatus, PathStatus};
use std::collections::BTreeSet;

/// What one run said about a candidate link.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Seen {
    Degraded,
    Healthy,
    /// Gray: both within the run.
    Both,
}

/// Applies the rule to `runs` (oldest first, the current run last). Returns true when it
/// named a flap: the alternation rule then has nothing left to explain.
pub(crate) fn diagnose(
    host: &HostTopology,
    min_runs: usize,
    runs: &[&RunRecord],
    diagnoses: &mut Vec<Diagnosis>,
) -> bool {
    // (run position, path) of every abnormal path not explained by another cause.
    let mut abnormal: Vec<(usize, &model::Path)> = Vec::new();
    for (k, r) in runs.iter().enumerate() {
        for p in r.paths.iter().filter(|p| p.status == PathStatus::Abnormal) {
            let Some(path) = host.path(&p.rnic, &p.endpoint) else {
                continue;
            };
            if path.links.iter().any(|l| r.explained.contains(l)) {
                continue;
            }
            abnormal.push((k, path));
        }
    }
    let degraded_runs: BTreeSet<usize> = abnormal.iter().map(|(k, _)| *k).collect();
    if degraded_runs.len() < 2 {
        return false;
    }
    let mut common: BTreeSet<&LinkId> = abnormal[0].1.links.iter().collect();
    for (_, p) in &abnormal[1..] {
        common.retain(|l| p.links.contains(l));
    }
    let seen = |l: &LinkId, k: usize| -> Option<Seen> {
        match runs[k].link_status(l)? {
            LinkStatus::Normal => Some(Seen::Healthy),
            LinkStatus::Gray => Some(Seen::Both),
            LinkStatus::Abnormal => Some(Seen::Degraded),
            LinkStatus::Uncertain => degraded_runs.contains(&k).then_some(Seen::Degraded),
        }
    };
    let changes = |l: &LinkId| -> usize {
        let mut n = 0;
        let mut last = None;
        for k in 0..runs.len() {
            match seen(l, k) {
                Some(Seen::Both) => {
                    n += 1;
                    last = None;
                }
                Some(s) => {
                    if last.is_some_and(|x| x != s) {
                        n += 1;
                    }
                    last = Some(s);
                }
                None => {}
            }
        }
        n
    };
    let judged = |l: &LinkId| (0..runs.len()).filter(|&k| seen(l, k).is_some()).count();
    let candidates: Vec<&LinkId> = common
        .into_iter()
        .filter(|l| changes(l) >= 2 && judged(l) >= min_runs)
        .collect();
    let blamed: Vec<&LinkId> = candidates
        .iter()
        .copied()
        .filter(|l| {
            degraded_runs
                .iter()
                .all(|&k| matches!(seen(l, k), Some(Seen::Degraded | Seen::Both)))
        })
        .collect();
    let links: Vec<LinkId> = if blamed.is_empty() {
        candidates
    } else {
        blamed
    }
    .into_iter()
    .cloned()
    .collect();
    if links.is_empty() {
        return false;
    }

    let flapping_rnics: BTreeSet<&model::ComponentId> = host
        .rnics()
        .filter(|r| {
            host.links_to_cpu(&r.id)
                .first()
                .is_some_and(|l| links.contains(l))
        })
        .map(|r| &r.id)
        .collect();
    // A failure of the flapping link itself is not withdrawn but renamed: left unsaid.
    let withdrawn: Vec<String> = diagnoses
        .iter()
        .filter(|d| withdraws(d, &flapping_rnics))
        .filter(|d| d.rnic.is_some() || !d.links.iter().all(|l| links.contains(l)))
        .map(|d| match &d.rnic {
            Some(r) => format!("{} on {r}", d.cause.as_str()),
            None => format!("{} on {}", d.cause.as_str(), evidence::list(&d.links)),
        })
        .collect();
    diagnoses.retain(|d| !withdraws(d, &flapping_rnics));
    if diagnoses
        .iter()
        .any(|d| d.cause == Cause::LinkFlapping && links.iter().all(|l| d.links.contains(l)))
    {
        return true;
    }

    let per_run: Vec<String> = degraded_runs
        .iter()
        .map(|&k| {
            let paths: Vec<String> = abnormal
                .iter()
                .filter(|(j, _)| *j == k)
                .map(|(_, p)| format!("{}->{}", p.rnic, p.endpoint))
                .collect();
            format!(
                "{} in run {}",
                evidence::list_capped(&paths, 4),
                flap_common::run_number(runs[k].run)
            )
        })
        .collect();
    let quiet: Vec<String> = (0..runs.len())
        .filter(|k| !degraded_runs.contains(k))
        .map(|k| flap_common::run_number(runs[k].run).to_string())
        .collect();
    let words = format!(
        "every abnormal path of the last {} runs crosses {} ({}){}; {} was judged healthy and \
         degraded by turns, changing {} times: it switches between healthy and degraded \
         (Hostping 6 #6), and the links Algorithm 1 blamed in single runs only lay on its paths",
        runs.len(),
        evidence::list(&links),
        evidence::list(&per_run),
        if quiet.is_empty() {
            String::new()
        } else {
            format!(
                ", and none in run{} {}",
                if quiet.len() == 1 { "" } else { "s" },
                evidence::list(&quiet)
            )
        },
        if links.len() == 1 { "it" } else { "each" },
        changes(&links[0]),
    );
    diagnoses.push(flap_common::diagnosis(links, words, &withdrawn));
    true
}

/// Failures (every abnormal path crosses the flapping link, so they are explained), and an
/// RNIC setting found on an RNIC whose own link flaps.
fn withdraws(d: &Diagnosis, flapping_rnics: &BTreeSet<&model::ComponentId>) -> bool {
    match d.cause {
        Cause::LinkFailure => true,
        Cause::RnicMisconfiguration => d.rnic.as_ref().is_some_and(|r| flapping_rnics.contains(r)),
        _ => false,
    }
}
