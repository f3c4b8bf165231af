//! `GET /api/actions`, `GET /api/actions/{id}` and `POST /api/actions/{id}/undo` (the
//! table in the module's doc, crate::actions).

use std::time::SystemTime;

use axum::extract::{Path as UrlPath, Query, State};
use axum::http::HeaderMap;
use axum::routing::{get, post};
use axum::{Json, Router};
use deadpool_postgres::Pool;
use model::action::{Action, ActionKind, ActionState};
use serde::Deserialize;

use fleet_api::actions::ActionRecord;

use super::{store, ActionTokens, Actions};
use crate::agents::bearer;
use crate::api::ApiError;

/// Most actions one `GET /api/actions` lists.
pub const MAX_LIMIT: i64 = 1000;

#[derive(Clone)]
struct Served {
    pool: Pool,
    tokens: ActionTokens,
    actions: Option<Actions>,
}

/// The routes: the list and one action over `pool`, undo with `tokens` through `actions`
/// (the policy at work, whose Alertmanager resolves an alert undone).
pub fn routes(pool: Pool, tokens: ActionTokens, actions: Option<Actions>) -> Router {
    Router::new()
        .route("/api/actions", get(list))
        .route("/api/actions/{id}", get(one))
        .route("/api/actions/{id}/undo", post(undo))
        .with_state(Served {
            pool,
            tokens,
            actions,
        })
}

#[derive(Deserialize)]
struct ListQuery {
    limit: Option<i64>,
}

async fn list(
    State(s): State<Served>,
    Query(q): Query<ListQuery>,
) -> Result<Json<Vec<Action>>, ApiError> {
    let limit = q.limit.unwrap_or(200);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::BadRequest(format!(
            "limit={limit}: must be within 1 and {MAX_LIMIT}"
        )));
    }
    let client = s.pool.get().await?;
    let stored = store::list(&client, limit).await?;
    Ok(Json(stored.into_iter().map(|s| s.action).collect()))
}

async fn one(
    State(s): State<Served>,
    UrlPath(id): UrlPath<i64>,
) -> Result<Json<ActionRecord>, ApiError> {
    let client = s.pool.get().await?;
    let Some((stored, verdict)) = store::one(&client, id).await? else {
        return Err(ApiError::NotFound(format!("no action {id}")));
    };
    Ok(Json(ActionRecord {
        action: stored.action,
        verdict,
    }))
}

async fn undo(
    State(s): State<Served>,
    UrlPath(id): UrlPath<i64>,
    headers: HeaderMap,
) -> Result<Json<Action>, ApiError> {
    let allowed = match (&s.tokens, bearer(&headers)) {
        (Some(tokens), Some(token)) => tokens.host_of(token).is_some(),
        _ => false,
    };
    if !allowed {
        return Err(ApiError::Unauthorized);
    }
    let client = s.pool.get().await?;
    let Some((stored, _)) = store::one(&client, id).await? else {
        return Err(ApiError::NotFound(format!("no action {id}")));
    };
    let mut action = stored.action;
    if action.state != ActionState::Taken || stored.ended {
        return Err(ApiError::Conflict(format!(
            "action {id} is {}{}: nothing to undo",
            action.state.as_str(),
            if stored.ended { " and ended" } else { "" }
        )));
    }
    let why = "undone by hand (POST /api/actions/{id}/undo)".replace("{id}", &id.to_string());
    match action.kind {
        ActionKind::Drain => {
            let host = action.host.clone().unwrap_or_default();
            let resumed = tokio::task::spawn_blocking(move || slurm::node::resume_if_ours(&host))
                .await
                .map_err(|e| ApiError::Database(e.to_string()))?;
            match resumed {
                Ok(()) => {}
                Err(e @ slurm::NodeError::NotOurs { .. }) => {
                    return Err(ApiError::Conflict(format!("action {id}: {e}")))
                }
                Err(e) => return Err(ApiError::Refused(format!("action {id}: {e}"))),
            }
        }
        ActionKind::Alert => {
            let Some(actions) = &s.actions else {
                return Err(ApiError::Conflict(format!(
                    "action {id}: the collector runs without --actions: no Alertmanager to resolve the alert at"
                )));
            };
            actions
                .send(&action, Some(SystemTime::now()))
                .await
                .map_err(|e| ApiError::Refused(format!("action {id}: {e}")))?;
        }
    }
    store::update(&client, id, ActionState::Undone, Some(&why), true).await?;
    action.state = ActionState::Undone;
    action.outcome = Some(why);
    Ok(Json(action))
}
