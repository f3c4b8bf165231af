//! What the flapping rules share (the rules across runs in `flapping` and
//! [`crate::flap_cover`], the rule within a run in [`crate::flap_within`]), and the history
//! sizes itself by: the window they read, how their evidence numbers runs, and the
//! `link_flapping` diagnosis they make. Below them all, so that each rule and the history
//! use it and `flapping`, which calls the rules, stays on top.

use crate::evidence;
use model::{Cause, Diagnosis, LinkId, Thresholds};

/// A `link_flapping` diagnosis of `links` with its evidence `words`, and the diagnoses it
/// withdrew (as the flap explains them), if any.
pub(crate) fn diagnosis(links: Vec<LinkId>, mut words: String, withdrawn: &[String]) -> Diagnosis {
    if !withdrawn.is_empty() {
        words += &format!(
            "; withdrawn, as explained by the flap: {}",
            evidence::list(withdrawn)
        );
    }
    Diagnosis {
        cause: Cause::LinkFlapping,
        links,
        rnic: None,
        setting: None,
        evidence: words,
    }
}

/// A run as evidence names it: counted from 1, as the report's header counts runs
/// (`Report::run` is an index from 0), so that "run 2" means the same run in both.
pub(crate) fn run_number(run: u32) -> u32 {
    run + 1
}

/// How many runs, this one included, the flapping rules read: the alternation rule's window,
/// twice `flapping_runs` (the documentation of `flapping` says why).
pub(crate) fn window(th: &Thresholds) -> usize {
    2 * th.flapping_runs.max(1) as usize
}
