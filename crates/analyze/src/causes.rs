//! Root causes that hang on an RNIC, and the overloaded-or-failed decision for a link.
//!
//! - [`link_cause`]: a memory channel whose node's bus the cores take is memory-bus
//!   congestion ([`crate::membus`], HotNets'22 3.2); otherwise a link with utilisation above `util_high` is overloaded, otherwise
//!   it has failed (Hostping 4.1.2, 4.3; `util_high` 90 %, Hostping 5). An RNIC's own PCIe
//!   link is also overloaded when the RNIC's service throughput is at or above `util_high`
//!   of its line rate: the RNIC, not the bus, is the narrowest point of that link, so the
//!   bus monitor can read the link below Util_high while the RNIC is saturated by traffic
//!   (an RNIC that pauses its sender because it cannot absorb more has not failed).
//! - [`rnic_rule`] (rule 6a): "If the path status between an RNIC and all its affinitive
//!   endpoints is abnormal, the RNIC PCIe link may be failed" (Hostping 4.3). Hostping 6 #9
//!   and #10 found that slow start and a small Tx window look the same from one run, so in
//!   idle mode the analyzer asks for two follow-up streams before it blames the link:
//!   a long one-QP stream at the baseline means slow start; an eight-QP stream at the
//!   baseline means a Tx window. Beyond that rule, eight QPs moving more than
//!   `1 + abnormal_th` times what one QP moves also means a Tx window (one so small that
//!   even eight QPs stay below the baseline): a failed link caps the QPs together.
//! - [`busy_rnic_link`]: in busy mode, "if no abnormal link could be found, the RNIC PCIe
//!   link may be the bottleneck, and the analyzer will further check if it is overloaded"
//!   (Hostping 4.3, last paragraph).
//! - [`saturated_rnic_links`]: an RNIC whose service traffic fills its line rate has its own
//!   link overloaded, whether or not it pauses (DESIGN 4.2; Hostping 4.3, busy mode).

use crate::evidence;
use crate::facts::Facts;
use crate::follow_up::{FollowUp, FollowUpTest};
use model::{Cause, ComponentId, Diagnosis, LinkId, LinkStatus, Mode, Setting, StreamResult};
use std::collections::BTreeSet;

/// Overloaded if the bus monitor reads any of `links` above `util_high`, else failed; with
/// the sentence that says so.
pub(crate) fn link_cause(f: &Facts<'_>, links: &[LinkId]) -> (Cause, String) {
    let high = f.th.util_high;
    if let Some(words) = crate::membus::congested(f, links) {
        return (Cause::MemoryBusCongestion, words);
    }
    if let Some(words) = saturated_rnic(f, links) {
        return (Cause::LinkOverloaded, words);
    }
    match f.max_utilisation(links) {
        Some((l, u)) if u > high => (
            Cause::LinkOverloaded,
            format!(
                "the bus monitor reads {l} at {} utilisation, above Util_high {} (Hostping 4.1.2), \
                 so traffic contention, not a failure, is to blame",
                evidence::percent(u),
                evidence::percent(high)
            ),
        ),
        Some((l, u)) => (
            Cause::LinkFailure,
            format!(
                "the bus monitor reads at most {} utilisation ({l}), below Util_high {}, so the \
                 link is not overloaded: it has lost bandwidth (Hostping 4.1.2)",
                evidence::percent(u),
                evidence::percent(high)
            ),
        ),
        None => (
            Cause::LinkFailure,
            "no utilisation was read for it, so contention cannot be shown: a link failure is \
             the likelier cause (Hostping 4.1.2)"
                .to_string(),
        ),
    }
}

/// The RNIC counters' sentence when one of `links` is the PCIe link of an RNIC whose service
/// throughput is at or above `util_high` of its line rate (Hostping 4.3: "links with
/// utilization higher than Util_high will be diagnosed as overloaded links"; the RNIC's
/// throughput is that link's utilisation as far as the RNIC can take it).
fn saturated_rnic(f: &Facts<'_>, links: &[LinkId]) -> Option<String> {
    let high = f.th.util_high;
    f.rnics.iter().find_map(|r| {
        let throughput = r.throughput_gbps?;
        if r.line_rate_gbps <= 0.0 || throughput < high * r.line_rate_gbps {
            return None;
        }
        let link = f.host.links_to_cpu(&r.id).into_iter().next()?;
        if !links.contains(&link) {
            return None;
        }
        Some(format!(
            "the RNIC counters of {} read {} of service traffic, {} of its {} line rate, at or \
             above Util_high {} ({}), so {link} is saturated by traffic, not failed (Hostping \
             4.3, 5)",
            r.id,
            evidence::gbps(throughput),
            evidence::percent(throughput / r.line_rate_gbps),
            evidence::gbps(r.line_rate_gbps),
            evidence::percent(high),
            r.symptoms(),
        ))
    })
}

/// Rule 6a: RNICs abnormal to all of their (at least two) probed affinitive endpoints.
/// Removes the paths each diagnosis explains from `remaining`.
pub(crate) fn rnic_rule(
    f: &Facts<'_>,
    follow_up: &mut dyn FollowUp,
    remaining: &mut BTreeSet<usize>,
) -> Vec<Diagnosis> {
    let mut out = Vec::new();
    for rnic in f.host.rnics() {
        let affinitive: Vec<usize> = (0..f.observed.len())
            .filter(|&j| {
                let v = f.verdict(j);
                v.rnic == rnic.id && v.affinitive() && v.error.is_none()
            })
            .collect();
        if affinitive.len() < 2 || !affinitive.iter().all(|j| remaining.contains(j)) {
            continue;
        }
        let Some(rnic_link) = f.host.links_to_cpu(&rnic.id).into_iter().next() else {
            continue;
        };
        let g = f.group_of[&rnic_link];
        let group = f.groups[g].links.clone();

        let measured: Vec<f64> = affinitive
            .iter()
            .filter_map(|&j| f.verdict(j).bandwidth_gbps)
            .collect();
        let baselines: Vec<f64> = affinitive
            .iter()
            .filter_map(|&j| f.verdict(j).baseline_bandwidth_gbps)
            .collect();
        let mut words = format!(
            "{} reaches all {} of its affinitive endpoints at {}",
            rnic.id,
            affinitive.len(),
            evidence::gbps_range(&measured)
        );
        if !baselines.is_empty() {
            words += &format!(
                " vs a baseline of {} ({})",
                evidence::gbps_range(&baselines),
                evidence::change(mean(&measured), mean(&baselines))
            );
        }
        words += " (Hostping 4.3: an RNIC abnormal to all its affinitive endpoints)";

        let setting = if f.mode == Mode::Idle {
            let (setting, said) = follow_ups(f, follow_up, &rnic.id, &affinitive);
            words += &format!("; {said}");
            setting
        } else {
            words += "; the host is busy, so no follow-up stream was run and slow start or a Tx \
                      window (Hostping 6 #9, #10) is not ruled out";
            None
        };

        if let Some(setting) = setting {
            remaining.retain(|&j| f.observed[j].rnic != rnic.id);
            out.push(Diagnosis {
                cause: Cause::RnicMisconfiguration,
                links: Vec::new(),
                rnic: Some(rnic.id.clone()),
                setting: Some(setting),
                evidence: words,
            });
            continue;
        }
        let on_all = if group.len() == 1 {
            format!("{} is the only link on every {} path", group[0], rnic.id)
        } else {
            f.group_phrase(g).unwrap_or_default()
        };
        let (cause, util) = link_cause(f, &group);
        remaining.retain(|&j| !f.observed[j].links.iter().any(|l| group.contains(l)));
        out.push(Diagnosis {
            cause,
            links: Facts::sorted(group),
            rnic: None,
            setting: None,
            evidence: format!("{words}; {on_all}; {util}"),
        });
    }
    out
}

/// Streams on the RNIC's best affinitive path (highest baseline bandwidth; the first in run
/// order on a tie): slow start, Tx window, or neither.
fn follow_ups(
    f: &Facts<'_>,
    follow_up: &mut dyn FollowUp,
    rnic: &ComponentId,
    affinitive: &[usize],
) -> (Option<Setting>, String) {
    let best = affinitive.iter().copied().fold(None::<usize>, |acc, j| {
        let b = f.verdict(j).baseline_bandwidth_gbps.unwrap_or(0.0);
        match acc {
            Some(a) if f.verdict(a).baseline_bandwidth_gbps.unwrap_or(0.0) >= b => acc,
            _ => Some(j),
        }
    });
    let Some(best) = best else {
        return (None, "no affinitive path to stream on".to_string());
    };
    let v = f.verdict(best);
    let (Some(path), Some(target)) = (v.path, v.baseline_bandwidth_gbps) else {
        return (
            None,
            format!(
                "{} has no baseline, so no follow-up stream could be judged",
                v.label()
            ),
        );
    };
    let reach = (1.0 - f.th.abnormal_th) * target;
    let reached = |r: &Option<StreamResult>| r.as_ref().is_some_and(|r| r.bandwidth_gbps >= reach);
    let said = |t: &FollowUpTest, r: &Option<StreamResult>| match r {
        Some(r) => format!(
            "a {} stream on {} QP{} reached {}",
            evidence::duration(t.duration_us),
            t.qps,
            if t.qps == 1 { "" } else { "s" },
            evidence::gbps(r.bandwidth_gbps)
        ),
        None => format!(
            "a {} stream on {} QP{} could not run",
            evidence::duration(t.duration_us),
            t.qps,
            if t.qps == 1 { "" } else { "s" }
        ),
    };
    let long = follow_up.stream(path, &FollowUpTest::LONG_ONE_QP);
    if reached(&long) {
        return (
            Some(Setting::SlowStart),
            format!(
                "on {}, {} (baseline {}): once the rate has ramped up the RNIC is fast, so \"slow \
                 start\" is enabled on {rnic} (Hostping 6 #9); the PCIe link is not at fault",
                v.label(),
                said(&FollowUpTest::LONG_ONE_QP, &long),
                evidence::gbps(target)
            ),
        );
    }
    let many = follow_up.stream(path, &FollowUpTest::MANY_QPS);
    // A failed link caps all QPs together; a per-QP window caps each. So eight QPs that
    // move clearly more than one (by more than Abnormal_th) also point at the window, even
    // when the window is so small that eight do not reach the baseline.
    let scale = match (&long, &many) {
        (Some(l), Some(m)) if l.bandwidth_gbps > 0.0 => Some(m.bandwidth_gbps / l.bandwidth_gbps),
        _ => None,
    };
    let scaled = scale.is_some_and(|x| x > 1.0 + f.th.abnormal_th);
    if reached(&many) || scaled {
        let mut words = format!(
            "on {}, {} but {} (baseline {}): ",
            v.label(),
            said(&FollowUpTest::LONG_ONE_QP, &long),
            said(&FollowUpTest::MANY_QPS, &many),
            evidence::gbps(target)
        );
        if !reached(&many) {
            words += &format!(
                "8 QPs move {:.1}x what one does, though still below the baseline; ",
                scale.unwrap_or(0.0)
            );
        }
        words += &format!(
            "each QP is capped, not the link (a failed link would cap them together), so the \
             Tx window of {rnic} is too small (Hostping 6 #10); the PCIe link is not at fault"
        );
        return (Some(Setting::TxWindow), words);
    }
    let verdict = if long.is_none() || many.is_none() {
        "so slow start and a Tx window (Hostping 6 #9, #10) could not be ruled out by a follow-up \
         test"
    } else {
        "so it is not slow start or a Tx window (Hostping 6 #9, #10)"
    };
    (
        None,
        format!(
            "on {}, {} and {}, {verdict}",
            v.label(),
            said(&FollowUpTest::LONG_ONE_QP, &long),
            said(&FollowUpTest::MANY_QPS, &many)
        ),
    )
}

/// Busy mode: an abnormal RNIC (pausing or dropping) none of whose probed paths crosses an
/// abnormal link points at its own PCIe link, unless a probe showed that link normal.
pub(crate) fn busy_rnic_link(f: &Facts<'_>) -> Vec<Diagnosis> {
    let mut out = Vec::new();
    if f.mode != Mode::Busy {
        return out;
    }
    for r in f.rnics.iter().filter(|r| r.abnormal) {
        let Some(rnic_link) = f.host.links_to_cpu(&r.id).into_iter().next() else {
            continue;
        };
        let mine: Vec<usize> = (0..f.observed.len())
            .filter(|&j| f.observed[j].rnic == r.id)
            .collect();
        let any_abnormal = mine.iter().any(|&j| {
            f.observed[j]
                .links
                .iter()
                .any(|l| f.link(l).is_some_and(|v| v.status == LinkStatus::Abnormal))
        });
        let link_status = f
            .link(&rnic_link)
            .map_or(LinkStatus::Uncertain, |v| v.status);
        if any_abnormal || link_status == LinkStatus::Normal {
            continue;
        }
        let (cause, util) = link_cause(f, std::slice::from_ref(&rnic_link));
        out.push(Diagnosis {
            cause,
            links: vec![rnic_link.clone()],
            rnic: None,
            setting: None,
            evidence: format!(
                "{} is abnormal ({}) but none of its {} probed paths crosses an abnormal link, so \
                 its PCIe link {rnic_link} is the suspect (Hostping 4.3); {util}",
                r.id,
                r.symptoms(),
                mine.len()
            ),
        });
    }
    out
}

/// An RNIC whose service traffic fills its line rate (at or above `util_high` of it) has
/// overloaded its own PCIe link, whether or not it pauses its sender (DESIGN 4.2, last
/// line). Hostping 4.3 (busy mode): "links with utilization higher than Util_high will be
/// diagnosed as overloaded links", and "if no abnormal link could be found, the RNIC PCIe
/// link may be the bottleneck, and the analyzer will further check if it is overloaded".
/// The RNIC's throughput is that link's utilisation as far as the RNIC can take it, and its
/// loopback probes cannot show it (a saturated RNIC's paths are slow together, so none is
/// abnormal among its siblings). Links that an earlier rule already named are left alone.
pub(crate) fn saturated_rnic_links(f: &Facts<'_>, found: &[Diagnosis]) -> Vec<Diagnosis> {
    let mut out = Vec::new();
    for r in &f.rnics {
        let Some(rnic_link) = f.host.links_to_cpu(&r.id).into_iter().next() else {
            continue;
        };
        let named = found.iter().any(|d| d.links.contains(&rnic_link));
        let judged_normal = f
            .link(&rnic_link)
            .is_some_and(|v| v.status == LinkStatus::Normal);
        if named || judged_normal {
            continue;
        }
        let Some(saturated) = saturated_rnic(f, std::slice::from_ref(&rnic_link)) else {
            continue;
        };
        let probed: Vec<f64> = (0..f.observed.len())
            .filter(|&j| f.observed[j].rnic == r.id)
            .filter_map(|j| f.verdict(j).bandwidth_gbps)
            .collect();
        let probes = if probed.is_empty() {
            String::new()
        } else {
            format!(
                "; its {} probed paths read {}, slowed together by that traffic",
                probed.len(),
                evidence::gbps_range(&probed)
            )
        };
        out.push(Diagnosis {
            cause: Cause::LinkOverloaded,
            links: vec![rnic_link],
            rnic: None,
            setting: None,
            evidence: format!("{saturated}{probes}"),
        });
    }
    out
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}
