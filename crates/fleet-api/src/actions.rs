//! `GET /api/actions/{id}` (DESIGN 4.9): one action the collector proposed, took or refused,
//! with the verdict that caused it.

use model::action::Action;
use model::job::JobReport;
use serde::{Deserialize, Serialize};

/// One action and the verdict that caused it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ActionRecord {
    /// The action, with its `id`, `at_unix_ms`, `state` and `outcome` as stored now.
    pub action: Action,
    /// The verdict that caused it.
    pub verdict: JobReport,
}
