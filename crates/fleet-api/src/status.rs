//! The short answers of the servers' own endpoints: the collector's readiness probe and an
//! agent's answer to a probe asked of it.

use serde::{Deserialize, Serialize};

/// `GET /api/health` of the collector: its database answered (fields alphabetical, as the
/// `serde_json::Value` it was wrote them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    /// `ok`.
    pub database: String,
    /// The newest migration applied.
    pub schema_version: Option<i32>,
}

/// An agent's answer to `POST /api/probe` (202), its fields in the order it has always
/// written them (alphabetical: it was a `serde_json::Value`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeQueued {
    /// Who asked: the probe token's holder.
    pub by: String,
    /// It joins the request already pending (absent when it was queued).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<bool>,
    /// A run was queued for this request.
    pub queued: bool,
}
