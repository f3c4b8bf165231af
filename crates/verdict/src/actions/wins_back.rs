//! What an action wins back: the job's time as observed against its time with the culprit
//! out of the way. Never invented: absent when neither the what-if nor the job's own
//! collectives put the time on this culprit.
//!
//! - The what-if, first ([`WinsBackSource::WhatIf`]):
//!   - a cable the what-if names as what explains the time (`explains = "element"`,
//!     `element` the culprit's cable): the fabric with only the other jobs' traffic
//!     (`background_only`, the cable's state removed), else `healthy`;
//!   - a host's or an RNIC's culprit, when the fabric's measured states explain none of the
//!     excess (`explains = "unexplained"`, what the what-if says a host is): `healthy`.
//! - Else, for a host's or an RNIC's culprit, the job's own collectives
//!   ([`WinsBackSource::Collectives`]): the communicator on the culprit's host that slowed
//!   most, its collective's time during the slowdown against its time at the level it held
//!   before the onset (DESIGN 4.8: each communicator is judged against its own earlier
//!   collectives). The what-if replays the fabric only, so this is what a host's drain has.

use model::action::{WinsBack, WinsBackSource};
use model::inspector::{CommunicatorSymptom, Symptom};
use model::job::{Culprit, JobReport, Layer, WhatIf};

/// The time `culprit`'s removal wins back, as `report`'s what-if or symptom says.
pub fn wins_back(report: &JobReport, culprit: &Culprit) -> Option<WinsBack> {
    from_what_if(report.what_if.as_ref(), culprit).or_else(|| match culprit.layer {
        Layer::Host | Layer::Rnic => from_collectives(report.symptom.as_ref()?, culprit),
        _ => None,
    })
}

fn from_what_if(what_if: Option<&WhatIf>, culprit: &Culprit) -> Option<WinsBack> {
    let w = what_if?;
    let time = |name: &str| {
        w.scenarios
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.time_us)
    };
    let from_us = time("observed")?;
    let to_us = match culprit.layer {
        Layer::Fabric
            if w.explains == "element" && w.element.is_some() && w.element == culprit.component =>
        {
            time("background_only").or_else(|| time("healthy"))?
        }
        Layer::Host | Layer::Rnic if w.explains == "unexplained" => time("healthy")?,
        _ => return None,
    };
    (to_us < from_us).then_some(WinsBack {
        from_us,
        to_us,
        source: WinsBackSource::WhatIf,
    })
}

/// The slow communicator on the culprit's host that lost the most time a collective.
fn from_collectives(symptom: &Symptom, culprit: &Culprit) -> Option<WinsBack> {
    let host = culprit.host.as_deref()?;
    symptom
        .communicators
        .iter()
        .filter(|c| c.slow && c.hosts.iter().any(|h| h == host))
        .filter_map(|c| {
            let before = level_before(c)?;
            let from_us = collective_us(c, c.busbw_gbs)?;
            let to_us = collective_us(c, before)?;
            (to_us < from_us).then_some(WinsBack {
                from_us,
                to_us,
                source: WinsBackSource::Collectives,
            })
        })
        .max_by(|a, b| (a.from_us - a.to_us).total_cmp(&(b.from_us - b.to_us)))
}

/// The communicator's bus bandwidth before its onset: the median of its points then.
fn level_before(c: &CommunicatorSymptom) -> Option<f64> {
    let since = c.since?;
    let mut before: Vec<f64> = c
        .series
        .iter()
        .filter(|(t, bw)| *t < since && bw.is_finite() && *bw > 0.0)
        .map(|(_, bw)| *bw)
        .collect();
    before.sort_by(f64::total_cmp);
    before.get(before.len() / 2).copied()
}

/// One collective's time, us, at bus bandwidth `busbw_gbs`: NCCL's bus bandwidth is the
/// algorithm bandwidth (bytes over time) times the collective's factor (NCCL's
/// PERFORMANCE.md: 2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter and
/// all-to-all, 1 for the rest), so the time is bytes x factor / busbw.
fn collective_us(c: &CommunicatorSymptom, busbw_gbs: f64) -> Option<f64> {
    let n = f64::from(c.ranks);
    let factor = match c.collective.as_str() {
        "AllReduce" => 2.0 * (n - 1.0) / n,
        "AllGather" | "ReduceScatter" | "AlltoAll" => (n - 1.0) / n,
        _ => 1.0,
    };
    let us = c.bytes as f64 * factor / (busbw_gbs * 1e3);
    (c.ranks > 1 && c.bytes > 0 && busbw_gbs > 0.0 && us.is_finite()).then_some(us)
}

/// `1.5 ms from 2.7 ms (the what-if, simulated)`: the times and who says so.
pub fn in_words(w: &WinsBack) -> String {
    let said_by = match w.source {
        WinsBackSource::WhatIf => "the what-if, simulated",
        WinsBackSource::Collectives => "the job's own collectives, their level before the onset",
    };
    format!("{} from {} ({said_by})", words(w.to_us), words(w.from_us))
}

/// `2.7 ms`, `850 us`.
fn words(us: f64) -> String {
    if us >= 1000.0 {
        format!("{:.1} ms", us / 1000.0)
    } else {
        format!("{us:.0} us")
    }
}
