//! Alerts through Alertmanager's v2 API (`POST /api/v2/alerts`): one alert a culprit,
//! labelled as DESIGN 4.9 says (`alertname="HostpingCulprit"`, `host`, `component`,
//! `cause`, `layer`, `job`), its why and what it wins back as annotations. An alert without
//! `endsAt` fires until Alertmanager's `resolve_timeout` (5 minutes by default) passes
//! without it being sent again, so the collector sends its open alerts again every
//! [`super::RESEND`]; resolving is the same labels with `endsAt` now.

use std::time::{Duration, SystemTime};

use model::action::Action;
use serde_json::{json, Value};

/// The longest Alertmanager may take to answer.
const WAIT: Duration = Duration::from_secs(10);

/// Why Alertmanager did not take an alert.
#[derive(Debug, thiserror::Error)]
pub enum AlertError {
    /// No answer (refused, timed out).
    #[error("alertmanager {url}: {reason}")]
    Send {
        /// The URL posted to.
        url: String,
        /// Why.
        reason: String,
    },
    /// An answer other than 200.
    #[error("alertmanager {url} answered {status}: {body}")]
    Refused {
        /// The URL posted to.
        url: String,
        /// The status.
        status: u16,
        /// Its words.
        body: String,
    },
}

/// The labels of `action`'s alert (empty strings for what it lacks: Alertmanager drops
/// empty labels, and the same action always gives the same set).
pub fn labels(action: &Action) -> Value {
    json!({
        "alertname": "HostpingCulprit",
        "host": action.host.clone().unwrap_or_default(),
        "component": action.component.clone().unwrap_or_default(),
        "cause": action.cause,
        "layer": crate::verdicts::word(&action.layer),
        "job": action.job.clone().unwrap_or_default(),
    })
}

/// The alert of `action`: firing (`ends` `None`) or resolved at `ends`.
pub fn alert(action: &Action, starts: SystemTime, ends: Option<SystemTime>) -> Value {
    let mut annotations = json!({
        "summary": action.reason,
        "why": action.why,
    });
    if let Some(w) = action.wins_back {
        annotations["wins_back"] = json!(verdict::actions::wins_back::in_words(&w));
    }
    if !action.ends.is_empty() {
        annotations["ends"] = json!(action.ends.join(" - "));
    }
    if !action.hosts.is_empty() {
        annotations["hosts"] = json!(action.hosts.join(", "));
    }
    let mut alert = json!({
        "labels": labels(action),
        "annotations": annotations,
        "startsAt": humantime::format_rfc3339_millis(starts).to_string(),
    });
    if let Some(ends) = ends {
        alert["endsAt"] = json!(humantime::format_rfc3339_millis(ends).to_string());
    }
    alert
}

/// Posts `alerts` to Alertmanager at `base` (`http://host:9093`). Blocking: call it off
/// the runtime's threads.
pub fn post(base: &str, alerts: &[Value]) -> Result<(), AlertError> {
    let url = format!("{}/api/v2/alerts", base.trim_end_matches('/'));
    let client = fleet_api::post::client(ureq::tls::TlsConfig::default());
    let body = serde_json::to_vec(alerts).unwrap_or_default();
    let mut answer = client
        .post(&url)
        .config()
        .timeout_global(Some(WAIT))
        .build()
        .header("Content-Type", "application/json")
        .send(&body[..])
        .map_err(|e| AlertError::Send {
            url: url.clone(),
            reason: e.to_string(),
        })?;
    let status = answer.status().as_u16();
    if status != 200 {
        let body = answer
            .body_mut()
            .with_config()
            .limit(1 << 14)
            .read_to_string()
            .unwrap_or_default();
        return Err(AlertError::Refused {
            url,
            status,
            body: body.trim().to_string(),
        });
    }
    Ok(())
}
