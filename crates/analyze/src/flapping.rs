//! Flapping links, from this run and the history (Hostping 4.3, 6 #6).
//!
//! Gray rule (Hostping 4.3): a link gray in this run and in each of the previous
//! `flapping_runs - 1` runs is flapping. A gray path makes *every* link on it gray, so the
//! links that merely share a path with the flapping one are gray too; among the candidates,
//! a link whose gray paths over the window are a strict subset of another candidate's is
//! dropped (it was gray only because of that path), and candidates with identical gray
//! paths are named together.
//!
//! Alternation rule (beyond the paper): a link that Algorithm 1 judged abnormal in some of
//! the recent runs and normal in others, changing at least twice (abnormal -> normal ->
//! abnormal, or normal -> abnormal -> normal), switches between healthy and degraded across
//! runs, as the memory channel of 6 #6 did. The gray rule cannot see this on a link that lies
//! on a single judged path (a GPU's PCIe link: only its affinitive RNIC judges it), because
//! such a link is never gray: it is abnormal or normal, run by run. The window is
//! [`window`] runs, this one included: twice the gray rule's `flapping_runs` (6 by default,
//! 30 minutes at the Hostping 5 cadence of 5 minutes). Two changes need at least three judged
//! runs, the gray rule's own window; doubling it leaves room for runs that did not judge
//! the link (busy, uncertain) and for a flap met in the same phase a few runs in a row,
//! while a failure or repair more than half an hour old has left the window. Runs where
//! the link was overloaded or misconfigured do not count: traffic comes and goes, and
//! their cause is already named.
//!
//! Within-run rule (beyond the paper, [`crate::flap_within`]): a path re-probed within the
//! run that changed level names the link that flaps, in that run and the later runs of the
//! window.

use crate::evidence;
use crate::flap_common::{run_number, window};
use crate::flap_cover;
use crate::flap_within;
use crate::history::{History, RunRecord};
use model::{
    Cause, ComponentId, Diagnosis, HostTopology, LinkId, LinkStatus, PathStatus, Thresholds,
};
use std::collections::{BTreeMap, BTreeSet};

/// Adds gray-rule, cover-rule or alternation-rule diagnoses, then the flaps seen within a
/// run by its re-probes ([`flap_within`]); failures those explain become flapping.
pub(crate) fn diagnose(
    host: &HostTopology,
    th: &Thresholds,
    history: &History,
    current: &RunRecord,
    diagnoses: &mut Vec<Diagnosis>,
) {
    let n = th.flapping_runs.max(1) as usize;
    gray_rule(host, n, history, current, diagnoses);
    let mut runs = history.last_of(&current.host, window(th) - 1);
    runs.push(current);
    if !flap_cover::diagnose(host, n, &runs, diagnoses) {
        alternation_rule(window(th), history, current, diagnoses);
    }
    flap_within::diagnose(host, &runs, diagnoses);
    withdraw_failures_a_flap_explains(host, current, diagnoses);
}

/// Withdraws a failure whose every abnormal path of this run also crosses a link named
/// flapping: one flap explains all that was seen, and a path probed while the flapping link
/// was degraded says nothing about its other links, however the probes of the flapping
/// link itself happened to fall (a non-affinitive path over a flapping GPU link, probed in
/// the degraded phase while the affinitive one met the healthy phase, would otherwise
/// blame the inter-socket link it also crosses). A failure with one abnormal path off the
/// flapping links stays.
fn withdraw_failures_a_flap_explains(
    host: &HostTopology,
    current: &RunRecord,
    diagnoses: &mut Vec<Diagnosis>,
) {
    let flapping: BTreeSet<LinkId> = diagnoses
        .iter()
        .filter(|d| d.cause == Cause::LinkFlapping)
        .flat_map(|d| d.links.iter().cloned())
        .collect();
    if flapping.is_empty() {
        return;
    }
    let abnormal: Vec<&[LinkId]> = current
        .paths
        .iter()
        .filter(|p| p.status == PathStatus::Abnormal)
        .filter_map(|p| host.path(&p.rnic, &p.endpoint))
        .map(|p| p.links.as_slice())
        .collect();
    let explained = |d: &Diagnosis| {
        let mut over = abnormal
            .iter()
            .filter(|links| links.iter().any(|l| d.links.contains(l)))
            .peekable();
        d.cause == Cause::LinkFailure
            && !d.links.iter().any(|l| flapping.contains(l))
            && over.peek().is_some()
            && over.all(|links| links.iter().any(|l| flapping.contains(l)))
    };
    let withdrawn: Vec<String> = diagnoses
        .iter()
        .filter(|d| explained(d))
        .map(|d| format!("link_failure on {}", evidence::list(&d.links)))
        .collect();
    if withdrawn.is_empty() {
        return;
    }
    diagnoses.retain(|d| !explained(d));
    if let Some(flap) = diagnoses
        .iter_mut()
        .find(|d| d.cause == Cause::LinkFlapping)
    {
        flap.evidence += &format!(
            "; withdrawn, as every abnormal path behind it crosses the flapping link: {}",
            evidence::list(&withdrawn)
        );
    }
}

/// One gray path: window position, RNIC, endpoint.
type GrayPath = (usize, ComponentId, ComponentId);

fn gray_rule(
    host: &HostTopology,
    n: usize,
    history: &History,
    current: &RunRecord,
    diagnoses: &mut Vec<Diagnosis>,
) {
    let mut window = history.last_of(&current.host, n - 1);
    if window.len() < n - 1 {
        return;
    }
    window.push(current);
    let candidates: Vec<&LinkId> = host
        .links()
        .iter()
        .map(|l| &l.id)
        .filter(|l| {
            window
                .iter()
                .all(|r| r.link_status(l) == Some(LinkStatus::Gray))
        })
        .collect();
    let gray: Vec<BTreeSet<GrayPath>> = candidates
        .iter()
        .map(|l| {
            window
                .iter()
                .enumerate()
                .flat_map(|(k, r)| {
                    gray_paths(host, r, l)
                        .into_iter()
                        .map(move |(a, b)| (k, a, b))
                })
                .collect()
        })
        .collect();
    // Drop strict subsets; group identical sets (by first occurrence, host order).
    let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for i in 0..candidates.len() {
        if (0..candidates.len())
            .any(|k| gray[i].is_subset(&gray[k]) && gray[i].len() < gray[k].len())
        {
            continue;
        }
        let first = (0..=i).find(|&k| gray[k] == gray[i]).unwrap_or(i);
        groups.entry(first).or_default().push(i);
    }
    for (first, members) in groups {
        let links: Vec<&LinkId> = members.iter().map(|&i| candidates[i]).collect();
        let mut per_run: Vec<String> = Vec::new();
        for (k, r) in window.iter().enumerate() {
            let here: Vec<String> = gray[first]
                .iter()
                .filter(|(w, _, _)| *w == k)
                .map(|(_, a, b)| format!("{a}->{b}"))
                .collect();
            if !here.is_empty() {
                per_run.push(format!(
                    "{} in run {}",
                    evidence::list(&here),
                    run_number(r.run)
                ));
            }
        }
        let runs: Vec<String> = window
            .iter()
            .map(|r| run_number(r.run).to_string())
            .collect();
        let mut words =
            format!(
            "{} {} gray in each of the last {n} runs ({}): {} on paths that were normal, yet {} \
             {} abnormal with every link on them normal on other paths; a link that switches \
             between healthy and degraded looks like this (Hostping 4.3, 6 #6)",
            evidence::list(&links),
            if links.len() == 1 { "was" } else { "were" },
            evidence::list(&runs),
            if links.len() == 1 { "it lies" } else { "they lie" },
            evidence::list(&per_run),
            if per_run.len() == 1 { "was" } else { "were" },
        );
        if links.len() > 1 {
            words += &format!(
                "; {} lie on exactly the same gray paths, so these runs cannot tell them apart",
                evidence::list(&links)
            );
        }
        diagnoses.push(Diagnosis {
            cause: Cause::LinkFlapping,
            links: links
                .into_iter()
                .cloned()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
            rnic: None,
            setting: None,
            evidence: words,
        });
    }
}

/// Abnormal paths of run `r` that cross `link` and cross no abnormal link: the paths that
/// made their links gray.
fn gray_paths(
    host: &HostTopology,
    r: &RunRecord,
    link: &LinkId,
) -> Vec<(ComponentId, ComponentId)> {
    r.paths
        .iter()
        .filter(|p| p.status == PathStatus::Abnormal)
        .filter_map(|p| host.path(&p.rnic, &p.endpoint))
        .filter(|p| p.links.contains(link))
        .filter(|p| {
            p.links
                .iter()
                .all(|l| r.link_status(l) != Some(LinkStatus::Abnormal))
        })
        .map(|p| (p.rnic.clone(), p.endpoint.clone()))
        .collect()
}

/// What one run said about a link, for the alternation rule.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    /// Normal: on a normal path.
    Healthy,
    /// Abnormal, and no cause other than a failure named it (an overloaded or misconfigured
    /// link is slow for a reason that comes and goes by itself).
    Degraded,
}

/// The link's level in run `r`, or `None` when the run did not judge it either way (uncertain,
/// gray: the gray rule's business, or explained by another cause).
fn level(r: &RunRecord, link: &LinkId) -> Option<Level> {
    if r.explained.contains(link) {
        return None;
    }
    match r.link_status(link)? {
        LinkStatus::Normal => Some(Level::Healthy),
        LinkStatus::Abnormal => Some(Level::Degraded),
        LinkStatus::Uncertain | LinkStatus::Gray => None,
    }
}

/// One link's judged runs in the window: (run, level), oldest first.
type Trace = Vec<(u32, Level)>;

/// How often a trace changes level.
fn changes(trace: &Trace) -> usize {
    trace.windows(2).filter(|w| w[0].1 != w[1].1).count()
}

/// Alternation rule: links judged degraded and healthy by turns, with at least two changes
/// of level in the window. One change is not enough: normal then abnormal is a link that has
/// just failed, abnormal then normal one that was repaired; a second change is what a
/// failure or a repair does not do. A failure diagnosis on such a link becomes
/// `link_flapping`; a flapping link that this run saw healthy gets its own diagnosis, so the
/// flap is reported in the runs where it hides too (Hostping 6 #6: "no performance issues
/// could be discovered in subsequent manual testing").
fn alternation_rule(
    window: usize,
    history: &History,
    current: &RunRecord,
    diagnoses: &mut Vec<Diagnosis>,
) {
    let mut runs = history.last_of(&current.host, window.saturating_sub(1));
    runs.push(current);
    let mut flapping: BTreeMap<LinkId, Trace> = current
        .links
        .iter()
        .map(|l| {
            let trace: Trace = runs
                .iter()
                .filter_map(|r| level(r, &l.id).map(|v| (r.run, v)))
                .collect();
            (l.id.clone(), trace)
        })
        .filter(|(_, t)| changes(t) >= 2)
        .collect();
    if flapping.is_empty() {
        return;
    }
    for d in diagnoses.iter_mut() {
        let named: Vec<&LinkId> = d
            .links
            .iter()
            .filter(|l| flapping.contains_key(*l))
            .collect();
        if named.is_empty() {
            continue;
        }
        if d.cause == Cause::LinkFailure {
            let said = said_of(&flapping[named[0]], named[0], runs.len());
            d.cause = Cause::LinkFlapping;
            d.evidence = format!("{said}; this run: {}", d.evidence);
        }
        // Named by this run, as a failure (now flapping) or another cause: said once.
        for l in d.links.iter() {
            flapping.remove(l);
        }
    }
    // Links this run did not diagnose: group those with the same trace (they lie on the same
    // judged paths, so the runs cannot tell them apart).
    let mut groups: Vec<(Trace, Vec<LinkId>)> = Vec::new();
    for (l, t) in flapping {
        match groups.iter_mut().find(|(g, _)| *g == t) {
            Some((_, links)) => links.push(l),
            None => groups.push((t, vec![l])),
        }
    }
    for (trace, links) in groups {
        let mut said = said_of(&trace, &links[0], runs.len());
        if links.len() > 1 {
            said = format!(
                "{}; {} were judged alike in every run, so these runs cannot tell them apart",
                said.replacen(links[0].as_str(), &evidence::list(&links), 1),
                evidence::list(&links)
            );
        }
        diagnoses.push(Diagnosis {
            cause: Cause::LinkFlapping,
            links,
            rnic: None,
            setting: None,
            evidence: said,
        });
    }
}

/// `gpu6--lsw6 was abnormal in runs 1 and 3 and normal in runs 2 and 4 of the last 4: ...`.
fn said_of(trace: &Trace, link: &LinkId, window: usize) -> String {
    let runs_at = |want: Level| -> String {
        let runs: Vec<String> = trace
            .iter()
            .filter(|(_, v)| *v == want)
            .map(|(r, _)| run_number(*r).to_string())
            .collect();
        format!(
            "run{} {}",
            if runs.len() == 1 { "" } else { "s" },
            evidence::list(&runs)
        )
    };
    format!(
        "{link} was abnormal in {} and normal in {} of the last {window} runs, changing {} times: \
         it switches between healthy and degraded across runs (Hostping 6 #6) rather than \
         having failed for good or been repaired",
        runs_at(Level::Degraded),
        runs_at(Level::Healthy),
        changes(trace),
    )
}
