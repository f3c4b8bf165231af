//! Re-probes, within an idle run, of the paths that alone judge a link (beyond the paper).
//!
//! Algorithm 1 (Hostping 4.3) cross-checks a link through every judged path over it: a link
//! that flaps during a run is abnormal on some of its paths and normal on others, and turns
//! gray. A link that only one judged path crosses has no such cross-check (a GPU's PCIe link:
//! only its affinitive RNIC judges it; the other RNICs reach the GPU through a root complex,
//! latency-bound, uncertain). One probe of that path meets the flap in one phase, so a run
//! alone sees the link failed or healthy by chance. So an idle run probes such a path again
//! `Thresholds::reprobe_rounds` times (10 by default), each round after [`GAP_NS`] of idle time, and with it a few *witnesses*
//! per other link of the path: the shortest paths judged normal over that link and not over
//! the lone ones. The witnesses tell a flap of the lone link (the path changes level, its
//! witnesses stay normal) from a flap further up (the witnesses change level too);
//! [`crate::flap_within`] reads the statuses.
//!
//! Spacing: [`GAP_NS`] (100 ms) is ten times one probe (a 1000-iteration latency test takes
//! about 10 ms), so the re-probes are separate looks at the link, not one long probe; the
//! rounds spread over about a second, so a link that flaps with a period of up to a few
//! hundred ms shows both levels within the run, and a slower flap shows across runs (the
//! history rules of [`crate::flapping`]). Cost: `rounds x (paths + witnesses)` latency tests
//! per idle run (dgx-a100: its 16 affinitive paths, 160 tests beside the full mesh's 40,
//! about 2.6 s of a 5-minute cadence). Ten rounds give eleven looks at each path: enough for a
//! witness that stays normal throughout to clear its link beyond luck ([`crate::flap_within`]).
//! Busy runs re-probe nothing: service traffic changes a busy RNIC's paths by itself.

use crate::facts::Facts;
use crate::follow_up::FollowUp;
use crate::status;
use model::{LinkId, Mode, PathStatus};
use std::collections::BTreeSet;

/// Idle time before each round, ns: ten 10 ms probes (see the module documentation).
pub(crate) const GAP_NS: u64 = 100_000_000;

/// Re-probes the lone paths and their witnesses; returns, per verdict (run order), the
/// statuses of its re-probes (empty for a path not re-probed).
pub(crate) fn run(f: &Facts, follow_up: &mut dyn FollowUp) -> Vec<Vec<PathStatus>> {
    let mut statuses = vec![Vec::new(); f.verdicts.len()];
    if f.mode != Mode::Idle {
        return statuses;
    }
    let chosen = choose(f);
    for round in 0..f.th.reprobe_rounds as usize {
        let mut any = false;
        // Each round starts one path further on, so that every path is probed at a
        // different delay after the gap: a flap in step with the rounds cannot hide from a
        // path by meeting it at the same moment of every round.
        let order = chosen.iter().cycle().skip(round % chosen.len().max(1));
        for (k, &j) in order.take(chosen.len()).enumerate() {
            let v = f.verdict(j);
            let (Some(path), Some(base)) = (v.path, v.baseline_bandwidth_gbps) else {
                continue;
            };
            let idle = if k == 0 { GAP_NS } else { 0 };
            let Some(m) = follow_up.latency(path, idle) else {
                continue;
            };
            any = true;
            let s = status::against_baseline(m.bandwidth_gbps, base, v.affinitive(), f.th);
            statuses[f.observed_verdict[j]].push(s);
        }
        if !any {
            // No engine behind the follow-up: nothing to wait for.
            break;
        }
    }
    statuses
}

/// Witnesses per other link of a re-probed path: each is a separate chance to see the link
/// degraded, so together they can clear it beyond luck ([`crate::flap_within`]).
const WITNESSES: usize = 3;

/// The observed paths to re-probe, in run order: every affinitive path that alone judges a
/// link, and for each of its other links up to [`WITNESSES`] witnesses.
fn choose(f: &Facts) -> Vec<usize> {
    let judged = |j: usize| {
        matches!(
            f.observed[j].status,
            PathStatus::Normal | PathStatus::Abnormal
        )
    };
    let mut chosen: BTreeSet<usize> = BTreeSet::new();
    for (j, p) in f.observed.iter().enumerate() {
        if !judged(j) || !f.verdict(j).affinitive() {
            continue;
        }
        let lone = lone_links(&p.links, j, f.observed.len(), |k, l| {
            judged(k) && f.observed[k].links.contains(l)
        });
        if lone.is_empty() {
            continue;
        }
        chosen.insert(j);
        for l in p.links.iter().filter(|l| !lone.contains(l)) {
            let mut witnesses: Vec<usize> = (0..f.observed.len())
                .filter(|&k| k != j && f.observed[k].status == PathStatus::Normal)
                .filter(|&k| f.observed[k].links.contains(l))
                .filter(|&k| !f.observed[k].links.iter().any(|x| lone.contains(x)))
                .collect();
            witnesses.sort_by_key(|&k| (f.observed[k].links.len(), k));
            chosen.extend(witnesses.into_iter().take(WITNESSES));
        }
    }
    chosen.into_iter().collect()
}

/// The links of path `j` that no other of the `n` paths judges (`judges(k, link)`).
pub(crate) fn lone_links(
    links: &[LinkId],
    j: usize,
    n: usize,
    judges: impl Fn(usize, &LinkId) -> bool,
) -> Vec<LinkId> {
    links
        .iter()
        .filter(|l| !(0..n).any(|k| k != j && judges(k, l)))
        .cloned()
        .collect()
}
