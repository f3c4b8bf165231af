//! Flapping links, from this run and the history (Hostping 4.3, 6 #6).
//!
//! Gray rule (Hostping 4.3): a link gray in this run and in each of the previous
//! `flapping_runs - 1` runs is flapping. A gray path makes *every* link on it gray, so the
//! links that merely share a path with the flapping one are gray too; among the candidates,
//! a link whose gray paths over the window are a strict subset of another candidate's is
//! dropped (it was gray only because of that path), and candidates with identical gray
//! paths are named together.
//!
//! Status rule (beyond the paper): a link that a failure diagnosis names now and that was
//! abnormal, then normal, in the `flapping_runs` runs before this one (abnormal -> normal ->
//! abnormal, which `normal -> abnormal -> normal -> abnormal` contains) switches between
//! healthy and degraded across runs, as the memory channel of 6 #6 did. That diagnosis is
//! turned into `link_flapping` rather than reported as a failure. An overloaded link is
//! left alone: traffic comes and goes, and its utilisation already names the cause.

use crate::evidence;
use crate::history::{History, RunRecord};
use model::{
    Cause, ComponentId, Diagnosis, HostTopology, LinkId, LinkStatus, PathStatus, Thresholds,
};
use std::collections::{BTreeMap, BTreeSet};

/// Adds gray-rule diagnoses and turns failures of status-flapping links into flapping.
pub(crate) fn diagnose(
    host: &HostTopology,
    th: &Thresholds,
    history: &History,
    current: &RunRecord,
    diagnoses: &mut Vec<Diagnosis>,
) {
    let n = th.flapping_runs.max(1) as usize;
    gray_rule(host, n, history, current, diagnoses);
    status_rule(n, history, current, diagnoses);
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
                per_run.push(format!("{} in run {}", evidence::list(&here), r.run));
            }
        }
        let runs: Vec<String> = window.iter().map(|r| r.run.to_string()).collect();
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

fn status_rule(n: usize, history: &History, current: &RunRecord, diagnoses: &mut [Diagnosis]) {
    let window = history.last_of(&current.host, n);
    for d in diagnoses
        .iter_mut()
        .filter(|d| d.cause == Cause::LinkFailure)
    {
        let flapping = d.links.iter().find_map(|l| {
            if current.link_status(l) != Some(LinkStatus::Abnormal) {
                return None;
            }
            let was_abnormal = window
                .iter()
                .position(|r| r.link_status(l) == Some(LinkStatus::Abnormal))?;
            let was_normal = window[was_abnormal..]
                .iter()
                .find(|r| r.link_status(l) == Some(LinkStatus::Normal))?;
            Some((l.clone(), window[was_abnormal].run, was_normal.run))
        });
        if let Some((l, abnormal_run, normal_run)) = flapping {
            d.cause = Cause::LinkFlapping;
            d.evidence = format!(
                "{l} was abnormal in run {abnormal_run}, normal in run {normal_run} and is abnormal \
                 again in run {}: it switches between healthy and degraded across runs (Hostping \
                 6 #6) rather than having failed for good; this run: {}",
                current.run, d.evidence
            );
        }
    }
}
