//! The `actions` table (schema version 13): every action proposed, taken or refused, with
//! the verdict that caused it, and what became of it.

use std::collections::BTreeSet;

use model::action::{Action, ActionState, CulpritKey};
use model::job::JobReport;
use tokio_postgres::Client;

/// The table. `state` and `outcome` are the action's, kept as columns so that they change
/// without rewriting the JSON; `ended_at` closes an action (resumed, resolved, undone, or
/// a proposal whose host checked healthy again): an action without it is in force.
pub const MIGRATION: &str = "CREATE TABLE actions (
        id BIGSERIAL PRIMARY KEY,
        at TIMESTAMPTZ NOT NULL DEFAULT now(),
        kind TEXT NOT NULL,
        state TEXT NOT NULL,
        host TEXT,
        outcome TEXT,
        ended_at TIMESTAMPTZ,
        action JSONB NOT NULL,
        verdict JSONB NOT NULL
    );
    -- newest first, the last hour's count, and retention
    CREATE INDEX actions_at ON actions (at DESC);
    -- those in force
    CREATE INDEX actions_open ON actions (id) WHERE ended_at IS NULL;";

/// A stored action, read back.
#[derive(Debug, Clone)]
pub struct Stored {
    /// The action, its `id`, `at_unix_ms`, `state` and `outcome` from the row.
    pub action: Action,
    /// Whether it ended.
    pub ended: bool,
}

const COLUMNS: &str = "id, (extract(epoch FROM at) * 1000)::int8, state, outcome, action::text, \
                       ended_at IS NOT NULL";

fn read_row(row: &tokio_postgres::Row) -> Option<Stored> {
    let mut action: Action = serde_json::from_str(row.get::<_, &str>(4)).ok()?;
    action.id = Some(row.get(0));
    action.at_unix_ms = Some(row.get(1));
    action.state = ActionState::parse(row.get(2))?;
    action.outcome = row.get(3);
    Some(Stored {
        action,
        ended: row.get(5),
    })
}

/// Stores `action`, caused by `verdict`; its id. A refused or failed action is ended at
/// once: nothing of it is in force.
pub async fn insert(
    client: &Client,
    action: &Action,
    verdict: &JobReport,
) -> Result<i64, tokio_postgres::Error> {
    let text = serde_json::to_string(action).unwrap_or_default();
    let verdict = serde_json::to_string(verdict).unwrap_or_default();
    let row = client
        .query_one(
            "INSERT INTO actions (kind, state, host, outcome, action, verdict, ended_at)
             VALUES ($1, $2, $3, $4, $5::text::jsonb, $6::text::jsonb,
                     CASE WHEN $2 IN ('refused', 'failed') THEN now() END) RETURNING id",
            &[
                &action.kind.as_str(),
                &action.state.as_str(),
                &action.host,
                &action.outcome,
                &text,
                &verdict,
            ],
        )
        .await?;
    Ok(row.get(0))
}

/// Sets the state and outcome of action `id`, and ends it when `end`.
pub async fn update(
    client: &Client,
    id: i64,
    state: ActionState,
    outcome: Option<&str>,
    end: bool,
) -> Result<(), tokio_postgres::Error> {
    client
        .execute(
            "UPDATE actions SET state = $2, outcome = coalesce($3, outcome),
                 ended_at = CASE WHEN $4 THEN coalesce(ended_at, now()) ELSE ended_at END
             WHERE id = $1",
            &[&id, &state.as_str(), &outcome, &end],
        )
        .await?;
    Ok(())
}

/// The newest `limit` actions, newest first.
pub async fn list(client: &Client, limit: i64) -> Result<Vec<Stored>, tokio_postgres::Error> {
    let rows = client
        .query(
            &format!("SELECT {COLUMNS} FROM actions ORDER BY at DESC, id DESC LIMIT $1"),
            &[&limit],
        )
        .await?;
    Ok(rows.iter().filter_map(read_row).collect())
}

/// Action `id` and the verdict that caused it.
pub async fn one(
    client: &Client,
    id: i64,
) -> Result<Option<(Stored, JobReport)>, tokio_postgres::Error> {
    let row = client
        .query_opt(
            &format!("SELECT {COLUMNS}, verdict::text FROM actions WHERE id = $1"),
            &[&id],
        )
        .await?;
    Ok(row.and_then(|r| {
        let verdict = serde_json::from_str(r.get::<_, &str>(6)).ok()?;
        Some((read_row(&r)?, verdict))
    }))
}

/// The actions in force (not ended), oldest first.
pub async fn open(client: &Client) -> Result<Vec<Stored>, tokio_postgres::Error> {
    let rows = client
        .query(
            &format!("SELECT {COLUMNS} FROM actions WHERE ended_at IS NULL ORDER BY id"),
            &[],
        )
        .await?;
    Ok(rows.iter().filter_map(read_row).collect())
}

/// Actions taken or proposed (not refused) in the last hour: what `limits.per_hour`
/// counts.
pub async fn last_hour(client: &Client) -> Result<usize, tokio_postgres::Error> {
    let row = client
        .query_one(
            "SELECT count(*) FROM actions
             WHERE at > now() - interval '1 hour' AND state <> 'refused'",
            &[],
        )
        .await?;
    Ok(row.get::<_, i64>(0) as usize)
}

/// The verdicts the collector reached in the last [`super::HISTORY_S`] but `(job, onset)`,
/// most [`super::HISTORY_VERDICTS`], as the culprits follow-ups confirmed in each.
pub async fn earlier_confirmed(
    client: &Client,
    job: &str,
    onset_s: f64,
) -> Result<Vec<BTreeSet<CulpritKey>>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT report::text FROM job_verdicts
             WHERE judged_at > now() - make_interval(secs => $3)
               AND NOT (job = $1 AND onset_s = $2)
             ORDER BY judged_at DESC LIMIT $4",
            &[&job, &onset_s, &super::HISTORY_S, &super::HISTORY_VERDICTS],
        )
        .await?;
    Ok(rows
        .iter()
        .filter_map(|r| serde_json::from_str::<JobReport>(r.get::<_, &str>(0)).ok())
        .map(|r| verdict::actions::confirmed(&r))
        .collect())
}

/// The newest `n` checks of `host` started after `after_ms`: each healthy or not, newest
/// first.
pub async fn checks_after(
    client: &Client,
    host: &str,
    after_ms: i64,
    n: i64,
) -> Result<Vec<bool>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT r.healthy FROM runs r JOIN hosts h ON h.id = r.host_id
             WHERE h.name = $1 AND r.started_unix_ms > $2
             ORDER BY r.started_unix_ms DESC, r.id DESC LIMIT $3",
            &[&host, &after_ms, &n],
        )
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}
