//! Acting on the collector's own verdicts (DESIGN 4.9, issue 40): confirm, then act. With
//! `--actions FILE` (the policy, `verdict::actions::Policy`), each verdict the slow-job
//! watch stores (crate::slow_jobs) is handed to [`Actions::on_verdict`], which reads what
//! was done before (the last hour's actions, those in force, earlier verdicts' confirmed
//! culprits, Slurm's partitions), lets `verdict::actions::decide` choose, takes what it
//! chose (Slurm's `scontrol`, Alertmanager's API) and stores every action with the verdict
//! that caused it. Every [`TICK`] ([`Actions::tick`]), a drained host that checked healthy
//! `resume_after` times since is resumed (only when its reason is still hostping's), a
//! host culprit's alert resolved, and the open alerts sent again. Without the policy file
//! nothing acts; the actions stored are still served.
//!
//! | path | what |
//! |---|---|
//! | `GET /api/actions?limit=N` | every action proposed, taken or refused, newest first (DESIGN 4.9's `actions[]`, with `id` and `at_unix_ms`) |
//! | `GET /api/actions/{id}` | one action and the verdict that caused it: `{"action", "verdict"}` |
//! | `POST /api/actions/{id}/undo` | with an action token (`--action-tokens FILE`): resumes what a drain drained (409 when the node is no longer drained by hostping), resolves an alert |
//!
//! A failure of Slurm or Alertmanager is recorded on the action (`state = "failed"`,
//! `error`) and logged; it never stops the collector.

pub mod alertmanager;
pub mod api;
pub mod store;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use deadpool_postgres::Pool;
use fleet_api::tokens::Tokens;
use model::action::{Action, ActionKind, ActionState, CulpritKey};
use model::job::JobReport;
use verdict::actions::{confirmation, decide, Confirmation, History, Mode, Partition, Policy};

/// How often drained hosts' checks are read and open alerts looked after.
pub const TICK: Duration = Duration::from_secs(5);
/// How often an open alert is sent again (under Alertmanager's default resolve_timeout of
/// five minutes, after which an alert not sent again resolves by itself).
pub const RESEND: Duration = Duration::from_secs(60);
/// How far back earlier verdicts count towards `confirm`, seconds.
pub const HISTORY_S: f64 = 86_400.0;
/// Earlier verdicts read at most.
pub const HISTORY_VERDICTS: i64 = 500;

/// Why the actions' bookkeeping failed (the database); retried at the next verdict or tick.
#[derive(Debug, thiserror::Error)]
pub enum ActionsError {
    /// No connection from the pool.
    #[error("database: {0}")]
    Pool(#[from] deadpool_postgres::PoolError),
    /// A query failed.
    #[error("database: {}", crate::server_words(.0))]
    Query(#[from] tokio_postgres::Error),
}

/// The policy at work over the collector's database.
#[derive(Clone)]
pub struct Actions {
    pool: Pool,
    policy: Arc<Policy>,
    last_resend: Arc<Mutex<Option<Instant>>>,
}

impl Actions {
    /// `policy` acting over `pool`'s database.
    pub fn new(pool: Pool, policy: Policy) -> Actions {
        Actions {
            pool,
            policy: Arc::new(policy),
            last_resend: Arc::new(Mutex::new(None)),
        }
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Decides on `report` (the verdict on `job`'s slowdown from `onset_s`, stored in
    /// `job_verdicts`), takes what the policy allows and stores every action; the actions,
    /// with their ids. Open alerts of culprits this verdict's follow-ups cleared are
    /// resolved.
    pub async fn on_verdict(
        &self,
        job: &str,
        onset_s: f64,
        report: &JobReport,
        log: &impl Fn(String),
    ) -> Result<Vec<Action>, ActionsError> {
        let client = self.pool.get().await?;
        let earlier = store::earlier_confirmed(&client, job, onset_s).await?;
        let last_hour = store::last_hour(&client).await?;
        let open: Vec<Action> = store::open(&client)
            .await?
            .into_iter()
            .map(|s| s.action)
            .collect();
        self.resolve_cleared(&client, report, &open, log).await?;
        let (partitions, slurm_error) = self.partitions().await;
        let history = History {
            earlier: &earlier,
            last_hour,
            in_force: &open,
            partitions: partitions.as_deref(),
        };
        let mut actions = decide(&self.policy, report, &history);
        for action in &mut actions {
            if let (Some(why), ActionKind::Drain, Some(by)) =
                (&slurm_error, action.kind, &action.refused_by)
            {
                if by.contains("is no node of a Slurm partition") {
                    action.refused_by = Some(format!("slurm: {why}"));
                }
            }
            if action.state == ActionState::Taken {
                if let Err(why) = self.take(action).await {
                    action.state = ActionState::Failed;
                    action.outcome = Some(why);
                }
            }
            let id = store::insert(&client, action, report).await?;
            action.id = Some(id);
            log(format!(
                "actions: {} {} {} ({}): {}{}",
                action.state.as_str(),
                action.kind.as_str(),
                action
                    .host
                    .as_deref()
                    .or(action.component.as_deref())
                    .unwrap_or("-"),
                action.reason,
                action.refused_by.as_deref().unwrap_or(""),
                action.outcome.as_deref().unwrap_or("")
            ));
        }
        Ok(actions)
    }

    /// Slurm's partitions for the share limit: `None` in a dry run without Slurm (nothing
    /// would be drained), else the partitions, empty with the error when scontrol failed
    /// (every drain then refused, saying why).
    async fn partitions(&self) -> (Option<Vec<Partition>>, Option<String>) {
        if !self.policy.acts(ActionKind::Drain) {
            return (None, None);
        }
        let nodes = tokio::task::spawn_blocking(slurm::node::nodes).await;
        match nodes {
            Ok(Ok(nodes)) => (Some(partitions(&nodes)), None),
            Ok(Err(slurm::NodeError::Run(slurm::RunError::NotInstalled { .. })))
                if self.policy.mode == Mode::DryRun =>
            {
                (None, None)
            }
            Ok(Err(e)) => (
                Some(Vec::new()),
                Some(format!("the nodes could not be read: {e}")),
            ),
            Err(e) => (Some(Vec::new()), Some(format!("scontrol: {e}"))),
        }
    }

    /// Takes `action`: drains its host or sends its alert; why not, in words.
    async fn take(&self, action: &Action) -> Result<(), String> {
        match action.kind {
            ActionKind::Drain => {
                let host = action.host.clone().unwrap_or_default();
                let reason = action.reason.clone();
                tokio::task::spawn_blocking(move || slurm::node::drain(&host, &reason))
                    .await
                    .map_err(|e| e.to_string())?
                    .map_err(|e| e.to_string())
            }
            ActionKind::Alert => self.send(action, None).await,
        }
    }

    /// Sends `action`'s alert, firing or resolved at `ends`.
    async fn send(&self, action: &Action, ends: Option<SystemTime>) -> Result<(), String> {
        let Some(base) = self.policy.alertmanager.clone() else {
            return Err("no alertmanager in the policy".into());
        };
        let starts = action
            .at_unix_ms
            .map(|ms| SystemTime::UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64))
            .unwrap_or_else(SystemTime::now);
        let alert = alertmanager::alert(action, starts, ends);
        tokio::task::spawn_blocking(move || alertmanager::post(&base, &[alert]))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())
    }

    /// Resolves the open alerts whose culprit `report`'s follow-ups cleared.
    async fn resolve_cleared(
        &self,
        client: &tokio_postgres::Client,
        report: &JobReport,
        open: &[Action],
        log: &impl Fn(String),
    ) -> Result<(), ActionsError> {
        for culprit in &report.culprits {
            let Confirmation::Cleared(by) = confirmation(report, culprit) else {
                continue;
            };
            let key = CulpritKey::of(culprit);
            for alert in open.iter().filter(|a| {
                a.kind == ActionKind::Alert && a.state == ActionState::Taken && a.key() == key
            }) {
                let Some(id) = alert.id else { continue };
                let why = format!("cleared by {}", by.join("; "));
                self.resolve(client, id, alert, &why, log).await?;
            }
        }
        Ok(())
    }

    /// Sends `alert`'s resolution and records it (or the failure, to try again).
    async fn resolve(
        &self,
        client: &tokio_postgres::Client,
        id: i64,
        alert: &Action,
        why: &str,
        log: &impl Fn(String),
    ) -> Result<(), ActionsError> {
        match self.send(alert, Some(SystemTime::now())).await {
            Ok(()) => {
                store::update(client, id, ActionState::Resolved, Some(why), true).await?;
                log(format!(
                    "actions: resolved alert {id} ({}): {why}",
                    alert.reason
                ));
            }
            Err(e) => {
                let error = format!("resolving: {e}");
                store::update(client, id, ActionState::Taken, Some(&error), false).await?;
                log(format!("actions: alert {id}: {error} (tried again)"));
            }
        }
        Ok(())
    }

    /// One round of upkeep: each open action on a host whose `resume_after` newest checks
    /// since the action are all healthy ends (a drain resumed, if the node is still
    /// hostping's; an alert resolved; a proposal closed); open alerts are sent again every
    /// [`RESEND`].
    pub async fn tick(&self, log: &impl Fn(String)) -> Result<(), ActionsError> {
        let client = self.pool.get().await?;
        let open = store::open(&client).await?;
        let n = i64::from(self.policy.resume_after);
        for stored in &open {
            let a = &stored.action;
            let (Some(id), Some(host), Some(at)) = (a.id, a.host.as_deref(), a.at_unix_ms) else {
                continue;
            };
            let checks = store::checks_after(&client, host, at, n).await?;
            if checks.len() < n as usize || checks.iter().any(|h| !h) {
                continue;
            }
            let why = format!("{host} checked healthy {n} times since");
            match (a.kind, a.state) {
                (ActionKind::Drain, ActionState::Taken) => {
                    let name = host.to_string();
                    let resumed =
                        tokio::task::spawn_blocking(move || slurm::node::resume_if_ours(&name))
                            .await;
                    match resumed {
                        Ok(Ok(())) => {
                            store::update(&client, id, ActionState::Resumed, Some(&why), true)
                                .await?;
                            log(format!("actions: resumed {host} (drain {id}): {why}"));
                        }
                        Ok(Err(e @ slurm::NodeError::NotOurs { .. })) => {
                            let error = format!("not resumed: {e}");
                            store::update(&client, id, ActionState::Taken, Some(&error), true)
                                .await?;
                            log(format!("actions: drain {id}: {error}"));
                        }
                        Ok(Err(e)) => {
                            let error = format!("resuming: {e}");
                            store::update(&client, id, ActionState::Taken, Some(&error), false)
                                .await?;
                            log(format!("actions: drain {id}: {error} (tried again)"));
                        }
                        Err(e) => log(format!("actions: drain {id}: resuming: {e}")),
                    }
                }
                (ActionKind::Alert, ActionState::Taken) => {
                    self.resolve(&client, id, a, &why, log).await?;
                }
                (_, ActionState::Proposed) => {
                    let why = format!("no longer proposed: {why}");
                    store::update(&client, id, ActionState::Proposed, Some(&why), true).await?;
                }
                _ => {}
            }
        }
        self.resend(&open, log).await;
        Ok(())
    }

    /// Sends the open alerts again, once a [`RESEND`].
    async fn resend(&self, open: &[store::Stored], log: &impl Fn(String)) {
        let due = {
            let mut last = self.last_resend.lock().unwrap_or_else(|e| e.into_inner());
            let due = last.is_none_or(|t| t.elapsed() >= RESEND);
            if due {
                *last = Some(Instant::now());
            }
            due
        };
        if !due {
            return;
        }
        for s in open.iter().filter(|s| {
            !s.ended && s.action.kind == ActionKind::Alert && s.action.state == ActionState::Taken
        }) {
            if let Err(e) = self.send(&s.action, None).await {
                log(format!(
                    "actions: alert {}: sending again: {e}",
                    s.action.id.unwrap_or_default()
                ));
            }
        }
    }

    /// Runs [`Actions::tick`] every [`TICK`] until the process stops; failures go to `log`.
    pub async fn tick_loop(self, log: impl Fn(String)) {
        let mut timer = tokio::time::interval(TICK);
        timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            timer.tick().await;
            if let Err(e) = self.tick(&log).await {
                log(format!("actions: {e} (tried again at the next tick)"));
            }
        }
    }
}

/// Slurm's nodes grouped by partition, with those drained.
fn partitions(nodes: &[slurm::SlurmNode]) -> Vec<Partition> {
    let mut by: BTreeMap<&str, Partition> = BTreeMap::new();
    for n in nodes {
        for p in &n.partitions {
            let part = by.entry(p).or_insert_with(|| Partition {
                name: p.clone(),
                nodes: Vec::new(),
                drained: Vec::new(),
            });
            part.nodes.push(n.name.clone());
            if n.drained() {
                part.drained.push(n.name.clone());
            }
        }
    }
    by.into_values().collect()
}

/// The tokens that may undo an action (`--action-tokens FILE`, the probe-tokens format).
pub type ActionTokens = Option<Arc<Tokens>>;
