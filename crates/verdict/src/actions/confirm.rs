//! Whether follow-up probes confirmed a culprit, cleared it, or said nothing of it. Only a
//! culprit a measurement aimed at it found bad again may act; one a measurement found
//! good never acts, whatever else points at it.
//!
//! - A host's or an RNIC's culprit: its host checked again after the verdict raised it
//!   (`kind = "recheck"`, `target = "<host> loopback"`, [`crate::recheck`]). The fresh check
//!   naming the culprit's cause confirms it; one that found the host healthy, or found it
//!   without that cause, clears it. The check that raised the suspicion (the host's own in
//!   the window, or one the collector asked of a host without one) never confirms it: a
//!   measurement cannot second itself.
//! - A cable: a follow-up pair planned to cross it and none of the other candidates
//!   (`why = "crosses <cable> and not ..."`, `verdict::follow_up::plan`), or, for a cable a
//!   culprit names alone, a pair planned to measure it again (`why = "crosses <cable>:
//!   measured again ..."`); its network part abnormal or the pair failed confirms it,
//!   normal clears it. A pair not run says nothing.
//! - A job's own pattern or mapping: never (no probe measures it).
//!
//! A flapping link (host or cable) has healthy phases: a measurement that found it healthy
//! or normal says nothing of it; one that met its degraded phase confirms it.

use crate::{follow_up, recheck};
use model::job::{Culprit, FollowUp, JobReport, Layer};
use model::Cause;

/// What the follow-ups said of one culprit.
#[derive(Clone, Debug, PartialEq)]
pub enum Confirmation {
    /// A measurement aimed at it found it bad: the follow-ups (or the host's own check)
    /// that did, in words.
    Confirmed(Vec<String>),
    /// A measurement aimed at it found it good: in words. It never acts.
    Cleared(Vec<String>),
    /// Nothing aimed at it ran.
    Unconfirmed,
}

/// What the follow-ups of `report` said of `culprit`. A clearing outcome wins over a
/// confirming one: two measurements that disagree are no certainty.
pub fn confirmation(report: &JobReport, culprit: &Culprit) -> Confirmation {
    let (confirmed, cleared) = match culprit.layer {
        Layer::Host | Layer::Rnic => host_outcomes(report, culprit),
        Layer::Fabric => cable_outcomes(&report.follow_ups, culprit),
        Layer::Job => (Vec::new(), Vec::new()),
    };
    if !cleared.is_empty() {
        Confirmation::Cleared(cleared)
    } else if !confirmed.is_empty() {
        Confirmation::Confirmed(confirmed)
    } else {
        Confirmation::Unconfirmed
    }
}

fn said(f: &FollowUp) -> String {
    format!("{} {}: {}", f.kind, f.target, f.outcome)
}

fn host_outcomes(report: &JobReport, culprit: &Culprit) -> (Vec<String>, Vec<String>) {
    let mut confirmed = Vec::new();
    let mut cleared = Vec::new();
    let Some(host) = culprit.host.as_deref() else {
        return (confirmed, cleared);
    };
    let target = recheck::target(host);
    for f in report
        .follow_ups
        .iter()
        .filter(|f| f.kind == recheck::KIND && f.target == target)
    {
        match recheck::found(&f.outcome) {
            Some(causes) if causes.contains(&culprit.cause.as_str()) => confirmed.push(said(f)),
            // A flapping link checked in its degraded phase reads as failed.
            Some(causes) if flapping(culprit) && causes.contains(&Cause::LinkFailure.as_str()) => {
                confirmed.push(said(f))
            }
            // A flapping link has healthy phases: one found healthy is no clearance.
            Some(_) if flapping(culprit) => {}
            Some(_) => cleared.push(said(f)),
            None => {}
        }
    }
    (confirmed, cleared)
}

/// Whether `culprit` is a link that flaps (Hostping 4.1.2: marked abnormal in some loopback
/// rounds and normal in others), which a measurement in its healthy phase cannot clear.
fn flapping(culprit: &Culprit) -> bool {
    culprit.cause == Cause::LinkFlapping.as_str()
}

fn cable_outcomes(follow_ups: &[FollowUp], culprit: &Culprit) -> (Vec<String>, Vec<String>) {
    let mut confirmed = Vec::new();
    let mut cleared = Vec::new();
    let Some(cable) = culprit.component.as_deref() else {
        return (confirmed, cleared);
    };
    let aimed = format!("crosses {cable} and not ");
    let again = format!("crosses {cable}{}", follow_up::RECHECK_SUFFIX);
    for f in follow_ups
        .iter()
        .filter(|f| f.kind == "pair" && (f.why.starts_with(&aimed) || f.why == again))
    {
        // verdict::follow_up::outcome's words.
        if f.outcome == "network part normal" {
            // A flapping cable has healthy phases: one found normal is no clearance.
            if !flapping(culprit) {
                cleared.push(said(f));
            }
        } else if f.outcome.starts_with("network part abnormal") || f.outcome.starts_with("failed")
        {
            confirmed.push(said(f));
        }
    }
    (confirmed, cleared)
}
