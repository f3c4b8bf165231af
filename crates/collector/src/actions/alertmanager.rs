//! Alerts through Alertmanager's v2 API (`POST /api/v2/alerts`): one alert a culprit,
//! labelled as DESIGN 4.9 says (`alertname="HostpingCulprit"`, `host`, `component`,
//! `cause`, `layer`, `job`), its why and what it wins back as annotations. An alert without
//! `endsAt` fires until Alertmanager's `resolve_timeout` (5 minutes by default) passes
//! without it being sent again, so the collector sends its open alerts again every
//! [`super::RESEND`]; resolving is the same labels with `endsAt` now.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use model::action::Action;
use serde::Serialize;

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

/// One alert as Alertmanager's v2 API takes it (its `postableAlert`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Alert {
    /// What the alert is: DESIGN 4.9's labels.
    pub labels: BTreeMap<&'static str, String>,
    /// What it says: `summary`, `why`, and where known `wins_back`, `ends`, `hosts`.
    pub annotations: BTreeMap<&'static str, String>,
    /// RFC 3339.
    #[serde(rename = "startsAt")]
    pub starts_at: String,
    /// RFC 3339: a resolved alert's end; absent while it fires.
    #[serde(rename = "endsAt", skip_serializing_if = "Option::is_none")]
    pub ends_at: Option<String>,
}

/// The labels of `action`'s alert (empty strings for what it lacks: Alertmanager drops
/// empty labels, and the same action always gives the same set).
pub fn labels(action: &Action) -> BTreeMap<&'static str, String> {
    BTreeMap::from([
        ("alertname", "HostpingCulprit".to_string()),
        ("host", action.host.clone().unwrap_or_default()),
        ("component", action.component.clone().unwrap_or_default()),
        ("cause", action.cause.clone()),
        ("layer", crate::verdicts::word(&action.layer)),
        ("job", action.job.clone().unwrap_or_default()),
    ])
}

/// The alert of `action`: firing (`ends` `None`) or resolved at `ends`.
pub fn alert(action: &Action, starts: SystemTime, ends: Option<SystemTime>) -> Alert {
    let mut annotations = BTreeMap::from([
        ("summary", action.reason.clone()),
        ("why", action.why.clone()),
    ]);
    if let Some(w) = action.wins_back {
        annotations.insert("wins_back", verdict::actions::wins_back::in_words(&w));
    }
    if !action.ends.is_empty() {
        annotations.insert("ends", action.ends.join(" - "));
    }
    if !action.hosts.is_empty() {
        annotations.insert("hosts", action.hosts.join(", "));
    }
    let rfc3339 = |t: SystemTime| humantime::format_rfc3339_millis(t).to_string();
    Alert {
        labels: labels(action),
        annotations,
        starts_at: rfc3339(starts),
        ends_at: ends.map(rfc3339),
    }
}

/// Posts `alerts` to Alertmanager at `base` (`http://host:9093`). Blocking: call it off
/// the runtime's threads.
pub fn post(base: &str, alerts: &[Alert]) -> Result<(), AlertError> {
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
