//! Never healthy unless judged (DESIGN 4.3, exit status 3): which links Algorithm 1 left
//! uncertain, and why the paths that cross them did not judge them.
//!
//! Algorithm 1 (Hostping 4.3) marks a link normal only when a normal path crosses it, and
//! abnormal only when an abnormal path does; every other link stays "uncertain". A host
//! whose links are not all judged cannot be called healthy: a degraded link there would
//! have gone unseen. So the report is `inconclusive`, and `not_judged` names, per reason,
//! the paths that did not judge and the links left uncertain:
//!
//! - `no_baseline`: measured, but the baseline has no entry to compare it with (a stale,
//!   truncated or hand-edited file);
//! - `not_probed`: the plan left the path out (busy mode probes affinitive paths only), the
//!   engine cannot probe it by design, or the host model has no path at all;
//! - `probe_failed`: the probe failed on the host;
//! - `not_measurable`: probed and compared, but it could not have shown a degraded link: a
//!   latency-bound GDR path "as expected" says nothing about links above its rate
//!   (Hostping 4.3, 3.2.2), and a busy RNIC's paths are only compared with each other ("we
//!   have no idea whether other paths are normal", Hostping 4.3, busy mode).
//!
//! Paths without a baseline or whose probe failed are always named, even when other paths
//! judged their links; a path left out by design (busy mode's plan) or that could not show
//! a degraded link is named only where it leaves a link uncertain (on a healthy idle host
//! the latency-bound paths are uncertain, and their links judged by affinitive ones, or,
//! where no path of the model reaches them at line rate, down to a bound: module `bound`).

use crate::facts::Facts;
use crate::status::{PathVerdict, Reference};
use model::{LinkId, LinkStatus, NotJudged, NotJudgedReason, Path, PathStatus};
use std::collections::BTreeMap;

/// What was not judged, one entry per reason (in the order of [`NotJudgedReason`]), and
/// whether that leaves the host inconclusive (a link uncertain, or no path at all). `busy`
/// says what made the run busy ([`crate::mode::busy_because`]): the paths busy mode left
/// out or could not judge are worded with it.
pub(crate) fn not_judged(f: &Facts<'_>, busy: &[String]) -> (bool, Vec<NotJudged>) {
    let uncertain: Vec<&LinkId> = f
        .links
        .iter()
        .filter(|l| l.status == LinkStatus::Uncertain)
        .map(|l| &l.id)
        .collect();
    if f.host.paths().is_empty() {
        let entry = NotJudged {
            reason: NotJudgedReason::NotProbed,
            paths: Vec::new(),
            links: uncertain.into_iter().cloned().collect(),
            detail: format!(
                "host model {} has no path: no memory node and no GPU for its RNICs to probe, \
                 so nothing was judged; describe its memory nodes and GPUs in the model",
                f.host.name
            ),
        };
        return (true, vec![entry]);
    }

    let mut by_reason: BTreeMap<NotJudgedReason, (Vec<String>, Vec<LinkId>)> = BTreeMap::new();
    let mut covered: Vec<&LinkId> = Vec::new();
    for path in f.host.paths() {
        covered.extend(&path.links);
        let Some(reason) = reason(path, verdict_of(f, path)) else {
            continue;
        };
        let left: Vec<&LinkId> = path
            .links
            .iter()
            .filter(|l| uncertain.contains(l))
            .collect();
        if !always_named(reason) && left.is_empty() {
            continue;
        }
        let (paths, links) = by_reason.entry(reason).or_default();
        paths.push(format!("{}->{}", path.rnic, path.endpoint));
        links.extend(left.into_iter().cloned());
    }
    // A link no path of the model crosses is judged by nothing.
    let orphans: Vec<LinkId> = uncertain
        .iter()
        .filter(|l| !covered.contains(l))
        .map(|l| (*l).clone())
        .collect();
    if !orphans.is_empty() {
        by_reason
            .entry(NotJudgedReason::NotProbed)
            .or_default()
            .1
            .extend(orphans);
    }

    let entries = by_reason
        .into_iter()
        .map(|(reason, (paths, links))| {
            let links = in_host_order(f, links);
            let mut detail = detail(reason, paths.len(), links.len());
            if matches!(
                reason,
                NotJudgedReason::NotProbed | NotJudgedReason::NotMeasurable
            ) && !busy.is_empty()
            {
                detail.push_str(&format!("; the host is busy: {}", busy.join("; ")));
            }
            NotJudged {
                reason,
                detail,
                paths,
                links,
            }
        })
        .collect();
    (!uncertain.is_empty(), entries)
}

/// Whether a path not judged for `reason` is named even where other paths judged its links:
/// a missing baseline entry and a failed probe are worth fixing; a path the plan leaves out
/// by design (busy mode) or that could not show a degraded link is named only where it
/// leaves a link unjudged.
fn always_named(reason: NotJudgedReason) -> bool {
    matches!(
        reason,
        NotJudgedReason::NoBaseline | NotJudgedReason::ProbeFailed
    )
}

/// The run's verdict on a path of the model, if the run probed it.
fn verdict_of<'f, 'a>(f: &'f Facts<'a>, path: &Path) -> Option<&'f PathVerdict<'a>> {
    f.verdicts
        .iter()
        .find(|v| v.rnic == path.rnic && v.endpoint == path.endpoint)
}

/// Why a path of the model did not judge its links; `None` when it did (normal or
/// abnormal).
fn reason(path: &Path, verdict: Option<&PathVerdict<'_>>) -> Option<NotJudgedReason> {
    let Some(v) = verdict else {
        return Some(NotJudgedReason::NotProbed);
    };
    debug_assert!(v.rnic == path.rnic && v.endpoint == path.endpoint);
    if v.unavailable {
        return Some(NotJudgedReason::NotProbed);
    }
    if v.error.is_some() {
        return Some(NotJudgedReason::ProbeFailed);
    }
    if v.status != PathStatus::Uncertain {
        return None;
    }
    if v.reference == Reference::Nothing && v.baseline_bandwidth_gbps.is_none() {
        Some(NotJudgedReason::NoBaseline)
    } else {
        Some(NotJudgedReason::NotMeasurable)
    }
}

/// `links` without repeats, in the host's link order.
fn in_host_order(f: &Facts<'_>, links: Vec<LinkId>) -> Vec<LinkId> {
    let mut links: Vec<(usize, LinkId)> = links
        .into_iter()
        .map(|l| (f.link_index.get(&l).copied().unwrap_or(usize::MAX), l))
        .collect();
    links.sort();
    links.dedup();
    links.into_iter().map(|(_, l)| l).collect()
}

/// What, why, and what to do, for people.
fn detail(reason: NotJudgedReason, paths: usize, links: usize) -> String {
    let what = match (paths, links) {
        (0, l) => format!("{l} link(s) on no path of the host model"),
        (p, 0) => format!("{p} path(s)"),
        (p, l) => format!("{p} path(s), leaving {l} link(s) unjudged"),
    };
    let why = match reason {
        NotJudgedReason::NoBaseline => {
            "no entry in the baseline (a stale, truncated or hand-edited file), so nothing to \
             compare them with; record a baseline of this host model with `hostping baseline` \
             on a healthy idle host and check with it"
        }
        NotJudgedReason::NotProbed => {
            "not probed (busy mode probes affinitive paths only, or the engine cannot probe \
             them); check again when the host is idle, or with --mode idle"
        }
        NotJudgedReason::ProbeFailed => {
            "the probe failed (each path's error says why); fix that and check again"
        }
        NotJudgedReason::NotMeasurable => {
            "probed, but they could not have shown a degraded link: a latency-bound GDR path \
             stays below line rate (Hostping 3.2.2) and a busy RNIC's paths are only compared \
             with each other (Hostping 4.3); check again when the RNIC is idle"
        }
    };
    format!("{what}: {why}")
}
