//! What an action wins back, from the what-if: the job's time as observed against its time
//! with the culprit's element out of the way. Never invented: absent when no what-if ran
//! or when the what-if did not put the time on this culprit.
//!
//! - A cable the what-if names as what explains the time (`explains = "element"`,
//!   `element` the culprit's cable): the fabric with only the other jobs' traffic
//!   (`background_only`, the cable's state removed), else `healthy`.
//! - A host's or an RNIC's culprit, when the fabric's measured states explain none of the
//!   excess (`explains = "unexplained"`, what the what-if says a host is): `healthy`.

use model::action::WinsBack;
use model::job::{Culprit, Layer, WhatIf};

/// The time `culprit`'s removal wins back, as the what-if says.
pub fn wins_back(what_if: Option<&WhatIf>, culprit: &Culprit) -> Option<WinsBack> {
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
    (to_us < from_us).then_some(WinsBack { from_us, to_us })
}

/// `2.7 ms`, `850 us`.
pub fn words(us: f64) -> String {
    if us >= 1000.0 {
        format!("{:.1} ms", us / 1000.0)
    } else {
        format!("{us:.0} us")
    }
}
