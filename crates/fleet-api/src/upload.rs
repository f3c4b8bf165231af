//! The body of `POST /api/runs` (DESIGN 4.5): an agent's run, the 4.3 report inside, as the
//! agent's sender writes it and the collector checks it against the contract.

use model::Report;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The body of `POST /api/runs`: the agent's run, with the 4.3 report inside.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunUpload {
    /// The host's name in the fleet (the token must belong to it).
    pub host: String,
    /// The agent's run id (its SQLite `runs.id`): with `host` and `instance`, what makes a
    /// resend a no-op.
    pub id: i64,
    /// The agent database's instance id (store schema v5), made once per database: the
    /// runs of a wiped database, numbered from 1 again, are new runs. Empty when the agent
    /// sends none (older agents).
    #[serde(default)]
    pub instance: String,
    /// The rack the host stands in, when the agent was told (`--rack`).
    #[serde(default)]
    pub rack: Option<String>,
    /// What started the run: `idle`, `pfc`, `drops`, `manual`, ...
    pub trigger: String,
    /// Wall clock at the start of the run, ms since the Unix epoch.
    pub started_unix_ms: i64,
    /// The report (DESIGN 4.3); its `host` is the host's kind (model name). Kept as the
    /// agent's text, which PostgreSQL stores as it came (a `json` column), and parsed once
    /// into a [`Report`] for the tables.
    pub report: Box<RawValue>,
}

/// The collector's answer to `POST /api/runs` (201 new, 200 a resend), its fields in the
/// order it has always written them (alphabetical: it was a `serde_json::Value`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunStored {
    /// Whether it was stored before (a resend).
    pub duplicate: bool,
    /// The host.
    pub host: String,
    /// The agent's run id, as sent.
    pub id: i64,
    /// The run's id in the collector.
    pub stored: i64,
}

/// A body outside the contract, in words that name the field.
#[derive(Debug, thiserror::Error)]
pub enum ContractError {
    /// Not JSON, or a field of the wrong type or missing.
    #[error("{0}")]
    Json(String),
    /// A field that parses but cannot be right.
    #[error("{field}: {reason}")]
    Field {
        /// The field.
        field: &'static str,
        /// Why.
        reason: &'static str,
    },
}

/// Parses and checks a body; the report is returned typed for the tables.
pub fn parse(body: &[u8]) -> Result<(RunUpload, Report), ContractError> {
    // Plain serde first: tracking the path of every field costs about as much again as the
    // parse, and only a refused body needs it, for its message.
    let upload: RunUpload = match serde_json::from_slice(body) {
        Ok(upload) => upload,
        Err(_) => return Err(explain(body)),
    };
    let report: Report = match serde_json::from_str(upload.report.get()) {
        Ok(report) => report,
        Err(_) => return Err(explain(body)),
    };
    let field = |field, reason| Err(ContractError::Field { field, reason });
    if upload.host.is_empty() || upload.host.len() > 253 {
        return field("host", "must be 1 to 253 characters");
    }
    if upload.instance.len() > 64 {
        return field("instance", "must be at most 64 characters");
    }
    if upload
        .rack
        .as_ref()
        .is_some_and(|r| r.is_empty() || r.len() > 253)
    {
        return field("rack", "must be 1 to 253 characters, or null");
    }
    if upload.trigger.is_empty() {
        return field("trigger", "must not be empty");
    }
    if upload.started_unix_ms < 0 {
        return field("started_unix_ms", "must not be negative");
    }
    if report.host.is_empty() {
        return field("report.host", "must name the host's kind");
    }
    if report.healthy && report.inconclusive {
        // DESIGN 4.3: a host with links not judged cannot be called healthy.
        return field(
            "report.healthy",
            "must be false when report.inconclusive is true (some link was not judged)",
        );
    }
    Ok((upload, report))
}

/// Why a body that plain serde refused is out of the contract, naming the field: parsed
/// again with its path tracked.
fn explain(body: &[u8]) -> ContractError {
    let mut de = serde_json::Deserializer::from_slice(body);
    let upload: RunUpload = match serde_path_to_error::deserialize(&mut de) {
        Ok(upload) => upload,
        Err(e) => return ContractError::Json(format!("{}: {}", e.path(), e.inner())),
    };
    if let Err(e) = de.end() {
        return ContractError::Json(format!("after the run: {e}"));
    }
    let mut report_de = serde_json::Deserializer::from_str(upload.report.get());
    match serde_path_to_error::deserialize::<_, Report>(&mut report_de) {
        Ok(_) => ContractError::Json("the body is not valid JSON".into()),
        Err(e) => ContractError::Json(format!("report.{}: {}", e.path(), e.inner())),
    }
}
