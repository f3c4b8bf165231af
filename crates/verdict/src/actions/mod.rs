//! Acting on a verdict (DESIGN 4.9, issue 40): confirm, then act. Given the policy
//! ([`Policy`], its TOML file), a verdict and what was done before ([`History`]),
//! [`decide`] says which actions to take, propose or refuse, each with why and what it
//! wins back. No I/O: the collector reads the history, takes the actions (Slurm,
//! Alertmanager) and keeps them; `hostping job --actions FILE` only shows them.
//!
//! - [`policy`]: the file, checked field by field.
//! - [`confirm`]: whether follow-up probes confirmed a culprit, cleared it, or said nothing.
//! - [`wins_back`]: the time the what-if or the job's own collectives say an action wins
//!   back.
//! - [`cable`]: a cable's two ends and the hosts whose jobs cross it.
//!
//! A culprit acts only when all of these hold: its layer and cause are the policy's, its
//! score is at least `min_score`, follow-ups confirmed it (and none cleared it), and it was
//! confirmed in `confirm` verdicts, this one included. Then, per kind (`drain` for a host's
//! or an RNIC's culprit, never a cable's; `alert` for any): not again while the same
//! action is in force; refused, naming the limit, past `limits.per_hour` or when the drain
//! would leave more than `limits.drained_share` of a Slurm partition's nodes drained, or
//! when the node is drained already by someone else.

pub mod cable;
pub mod confirm;
pub mod policy;
pub mod wins_back;

use std::collections::BTreeSet;

use model::action::{Action, ActionKind, ActionState, CulpritKey};
use model::job::{Culprit, JobReport, Layer};

pub use confirm::{confirmation, Confirmation};
pub use policy::{Mode, Policy, PolicyError};

/// A Slurm partition as the share limit needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    /// Its name.
    pub name: String,
    /// Its nodes.
    pub nodes: Vec<String>,
    /// Those drained now (`DRAIN`, `DRAINING`, `DRAINED`), by anyone.
    pub drained: Vec<String>,
}

/// What was done and seen before this verdict.
#[derive(Clone, Debug, Default)]
pub struct History<'a> {
    /// The culprits follow-ups confirmed in earlier verdicts, a set per verdict.
    pub earlier: &'a [BTreeSet<CulpritKey>],
    /// Actions that count against `limits.per_hour`: those taken (proposed, in a dry run)
    /// in the last hour.
    pub last_hour: usize,
    /// Actions in force (taken or proposed, not ended): the same one is not repeated.
    pub in_force: &'a [Action],
    /// Slurm's partitions; `None` when Slurm was not asked (`hostping job`): the share
    /// limit is then not checked, and said so in `why`.
    pub partitions: Option<&'a [Partition]>,
}

/// The culprits of `report` that follow-ups confirmed (for the history of later ones).
pub fn confirmed(report: &JobReport) -> BTreeSet<CulpritKey> {
    report
        .culprits
        .iter()
        .filter(|c| matches!(confirmation(report, c), Confirmation::Confirmed(_)))
        .map(CulpritKey::of)
        .collect()
}

/// The actions `policy` takes (state `taken`; `proposed` in a dry run) or refuses on
/// `report`'s culprits, best culprit first.
pub fn decide(policy: &Policy, report: &JobReport, history: &History) -> Vec<Action> {
    let mut actions: Vec<Action> = Vec::new();
    let mut counted = history.last_hour;
    let mut drained_now: Vec<String> = Vec::new();
    for culprit in &report.culprits {
        if !policy.layers.contains(&culprit.layer)
            || policy
                .causes
                .as_ref()
                .is_some_and(|c| !c.contains(&culprit.cause))
            || culprit.score < policy.min_score
        {
            continue;
        }
        let Confirmation::Confirmed(by) = confirmation(report, culprit) else {
            continue;
        };
        let key = CulpritKey::of(culprit);
        let windows = 1 + history.earlier.iter().filter(|s| s.contains(&key)).count();
        if windows < policy.confirm as usize {
            continue;
        }
        for kind in kinds(policy, culprit) {
            if in_force(history.in_force, kind, &key) || in_force(&actions, kind, &key) {
                continue;
            }
            let mut action = action(report, culprit, kind, &by, windows, history);
            let refused = match kind {
                ActionKind::Drain => drain_refused(policy, history, &drained_now, &key),
                ActionKind::Alert => None,
            }
            .or_else(|| {
                (counted >= policy.limits.per_hour as usize).then(|| {
                    format!(
                        "limits.per_hour: {counted} actions in the last hour, the most the \
                         policy allows is {}",
                        policy.limits.per_hour
                    )
                })
            });
            match refused {
                Some(limit) => {
                    action.state = ActionState::Refused;
                    action.refused_by = Some(limit);
                }
                None => {
                    counted += 1;
                    if kind == ActionKind::Drain {
                        drained_now.extend(key.host.clone());
                    }
                    action.state = match policy.mode {
                        Mode::DryRun => ActionState::Proposed,
                        Mode::Act => ActionState::Taken,
                    };
                }
            }
            actions.push(action);
        }
    }
    actions
}

/// The kinds that act on `culprit`: a drain for a host's or an RNIC's (never a cable's:
/// draining one of its hosts would not mend it), an alert for any.
fn kinds(policy: &Policy, culprit: &Culprit) -> Vec<ActionKind> {
    let mut kinds = Vec::new();
    let host_side = matches!(culprit.layer, Layer::Host | Layer::Rnic) && culprit.host.is_some();
    if host_side && policy.acts(ActionKind::Drain) {
        kinds.push(ActionKind::Drain);
    }
    if policy.acts(ActionKind::Alert) {
        kinds.push(ActionKind::Alert);
    }
    kinds
}

/// Whether an action of `kind` on the same target is among `actions` and in force: a
/// drain of the same host, an alert of the same culprit.
fn in_force(actions: &[Action], kind: ActionKind, key: &CulpritKey) -> bool {
    actions.iter().any(|a| {
        a.kind == kind
            && matches!(a.state, ActionState::Taken | ActionState::Proposed)
            && match kind {
                ActionKind::Drain => a.host == key.host,
                ActionKind::Alert => &a.key() == key,
            }
    })
}

/// Why a drain of `key`'s host is refused, if it is: the host drained already by someone
/// else, in no partition, or a partition's share of drained nodes passed.
fn drain_refused(
    policy: &Policy,
    history: &History,
    drained_now: &[String],
    key: &CulpritKey,
) -> Option<String> {
    let host = key.host.as_deref()?;
    let partitions = history.partitions?;
    let mine: Vec<&Partition> = partitions
        .iter()
        .filter(|p| p.nodes.iter().any(|n| n == host))
        .collect();
    if mine.is_empty() {
        return Some(format!(
            "slurm: {host} is no node of a Slurm partition: nothing to drain"
        ));
    }
    if mine.iter().any(|p| p.drained.iter().any(|n| n == host)) {
        return Some(format!(
            "slurm: {host} is drained already, not by hostping: left as it is"
        ));
    }
    for p in mine {
        let mut drained: BTreeSet<&str> = p.drained.iter().map(String::as_str).collect();
        drained.extend(
            drained_now
                .iter()
                .filter(|n| p.nodes.contains(n))
                .map(String::as_str),
        );
        drained.insert(host);
        let share = drained.len() as f64 / p.nodes.len() as f64;
        if share > policy.limits.drained_share {
            return Some(format!(
                "limits.drained_share: draining {host} would leave {} of the {} nodes of \
                 partition {} drained ({share:.2}), over {}",
                drained.len(),
                p.nodes.len(),
                p.name,
                policy.limits.drained_share
            ));
        }
    }
    None
}

/// The action of `kind` on `culprit`, its state left to the caller.
fn action(
    report: &JobReport,
    culprit: &Culprit,
    kind: ActionKind,
    confirmed_by: &[String],
    windows: usize,
    history: &History,
) -> Action {
    let component = culprit.component.as_deref().unwrap_or("-");
    let job = report.job.as_deref().unwrap_or("-");
    let reason = format!("hostping: {} {component} job {job}", culprit.cause);
    let wins_back = wins_back::wins_back(report, culprit);
    let (ends, hosts) = match culprit.layer {
        Layer::Fabric => (
            culprit
                .component
                .as_deref()
                .map(|c| cable::ends(&report.pairs, c))
                .unwrap_or_default(),
            culprit
                .component
                .as_deref()
                .map(|c| cable::hosts(&report.pairs, c))
                .unwrap_or_default(),
        ),
        _ => (Vec::new(), Vec::new()),
    };
    let mut why = format!(
        "{}; confirmed by {}; confirmed in {windows} verdict{}",
        culprit.evidence,
        confirmed_by.join("; "),
        if windows == 1 { "" } else { "s" }
    );
    if let Some(w) = wins_back {
        let target = match (kind, &culprit.host) {
            (ActionKind::Drain, Some(host)) => format!("draining {host}"),
            _ => format!("mending {component}"),
        };
        why.push_str(&format!(
            "; {target} returns the job to {}",
            wins_back::in_words(&w)
        ));
    }
    if kind == ActionKind::Drain && history.partitions.is_none() {
        why.push_str("; Slurm's partitions not asked: limits.drained_share not checked");
    }
    if !ends.is_empty() {
        why.push_str(&format!("; the cable's ends: {}", ends.join(" - ")));
    }
    if !hosts.is_empty() {
        why.push_str(&format!(
            "; hosts whose jobs cross it: {}",
            hosts.join(", ")
        ));
    }
    Action {
        kind,
        host: culprit.host.clone(),
        component: culprit.component.clone(),
        cause: culprit.cause.clone(),
        reason,
        state: ActionState::Proposed,
        why,
        wins_back,
        layer: culprit.layer,
        job: report.job.clone(),
        score: culprit.score,
        refused_by: None,
        ends,
        hosts,
        outcome: None,
        id: None,
        at_unix_ms: None,
    }
}

#[cfg(test)]
mod tests;
