//! Acting on a verdict (DESIGN 4.9): what the policy does, or would do, with a confirmed
//! culprit. `verdict::actions` decides (no I/O); the collector takes the actions and keeps
//! them; `hostping job --actions FILE` shows what the policy would do. These are the JSON
//! objects of the report's `actions` and of `GET /api/actions`.

use serde::{Deserialize, Serialize};

use crate::layer::Layer;

/// What an action does.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    /// Take a host out of Slurm's service (`scontrol update State=DRAIN`).
    Drain,
    /// Tell people through Alertmanager.
    Alert,
}

impl ActionKind {
    /// The name in JSON and words.
    pub fn as_str(self) -> &'static str {
        match self {
            ActionKind::Drain => "drain",
            ActionKind::Alert => "alert",
        }
    }
}

/// Where an action stands (DESIGN 4.9's four, and what became of a taken one after).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionState {
    /// The policy would take it (dry-run): recorded, nothing done.
    Proposed,
    /// Done: the node drained, the alert sent.
    Taken,
    /// A limit of the policy refused it (`refused_by` names it).
    Refused,
    /// Undone by hand (`POST /api/actions/{id}/undo`).
    Undone,
    /// Tried, and Slurm or Alertmanager failed (`error` says how).
    Failed,
    /// A drain resumed by hostping after `resume_after` healthy checks of the host.
    Resumed,
    /// An alert resolved when its culprit cleared.
    Resolved,
}

impl ActionState {
    /// The name in JSON and words.
    pub fn as_str(self) -> &'static str {
        match self {
            ActionState::Proposed => "proposed",
            ActionState::Taken => "taken",
            ActionState::Refused => "refused",
            ActionState::Undone => "undone",
            ActionState::Failed => "failed",
            ActionState::Resumed => "resumed",
            ActionState::Resolved => "resolved",
        }
    }

    /// The state named `word` (as [`ActionState::as_str`] writes it).
    pub fn parse(word: &str) -> Option<ActionState> {
        [
            ActionState::Proposed,
            ActionState::Taken,
            ActionState::Refused,
            ActionState::Undone,
            ActionState::Failed,
            ActionState::Resumed,
            ActionState::Resolved,
        ]
        .into_iter()
        .find(|s| s.as_str() == word)
    }
}

/// What the action wins back: the job's time as observed, and with the culprit's element
/// healthy (DESIGN 4.9's `wins_back`), as the what-if or the job's own collectives say.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct WinsBack {
    /// The job's time as observed, us (the what-if's `observed` scenario, or the slow
    /// collective's time during the slowdown).
    pub from_us: f64,
    /// Its time with the element healthy, us.
    pub to_us: f64,
    /// Where the estimate comes from (an addition to DESIGN 4.9).
    #[serde(default)]
    pub source: WinsBackSource,
}

/// Where an estimate of the time won back comes from.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WinsBackSource {
    /// The simulator's what-if: the job's collectives replayed with the element healthy.
    #[default]
    WhatIf,
    /// The job's own collectives (NCCL Inspector): a slow collective on the culprit's host
    /// at its communicator's level before the onset.
    Collectives,
}

/// One action, proposed, taken or refused (DESIGN 4.9's `actions[]`; fields after
/// `wins_back` are additions).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Action {
    /// Drain or alert.
    pub kind: ActionKind,
    /// The culprit's host (for a cable: `None`; `hosts` lists those whose jobs cross it).
    pub host: Option<String>,
    /// The culprit's element: a host's link or RNIC, a cable by one end.
    pub component: Option<String>,
    /// The culprit's cause.
    pub cause: String,
    /// The reason given to Slurm (`hostping: <cause> <component> job <job>`), or the
    /// alert's summary.
    pub reason: String,
    /// Where it stands.
    pub state: ActionState,
    /// Why: the culprit's evidence and the follow-ups that confirmed it.
    pub why: String,
    /// The time the what-if says it wins back; absent when no what-if ran.
    pub wins_back: Option<WinsBack>,
    /// The culprit's layer.
    pub layer: Layer,
    /// The job whose verdict named the culprit.
    pub job: Option<String>,
    /// The culprit's score.
    pub score: f64,
    /// The limit of the policy that refused it (`limits.per_hour: ...`), when refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused_by: Option<String>,
    /// For a cable: both its ends (a switch port, or a host's RNIC), where known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ends: Vec<String>,
    /// For a cable: the hosts whose job traffic crosses it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// What ended the action (healthy checks, an undo) or kept it in force (a drain not
    /// hostping's any more), or what Slurm or Alertmanager said when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// The collector's id of the action (`GET /api/actions`); absent in a job's report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    /// When the collector recorded it, Unix ms; absent in a job's report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_unix_ms: Option<i64>,
}

impl Action {
    /// The culprit the action is about, as [`CulpritKey`].
    pub fn key(&self) -> CulpritKey {
        CulpritKey {
            layer: self.layer,
            host: self.host.clone(),
            component: self.component.clone(),
            cause: self.cause.clone(),
        }
    }
}

/// What makes two culprits of different windows the same one: its layer, host, component
/// and cause (not its score or evidence, which vary).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CulpritKey {
    /// Its layer.
    pub layer: Layer,
    /// Its host.
    pub host: Option<String>,
    /// Its element.
    pub component: Option<String>,
    /// Its cause.
    pub cause: String,
}
