//! What `hostping counters` reports: every counter source of a host with how it fared, the
//! monitors' view and the configuration in model ids. The real backend (`rdma::monitor`)
//! and the virtual host both produce it; a source the host lacks is `unavailable` with the
//! reason, and a source that failed is `error` while the others are still read.

use crate::config::HostConfig;
use crate::measure::Provenance;
use crate::snapshot::HostSnapshot;
use serde::{Deserialize, Serialize};

/// How a source fared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceStatus {
    /// Read.
    Ok,
    /// Not on this host (no RDMA device, no NVIDIA driver, no uncore PMUs).
    Unavailable,
    /// Present but failed (permission denied, malformed file): the detail names it.
    Error,
}

/// One source's readings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceReport {
    /// `rnic`, `ethtool`, `pcie`, `gpu`, `uncore`, `memory`, `virtual host`.
    pub source: String,
    /// How it fared.
    pub status: SourceStatus,
    /// Why it is unavailable or failed, or what is worth knowing.
    pub detail: Option<String>,
    /// The readings, as the source module types them.
    pub readings: serde_json::Value,
}

impl SourceReport {
    /// A source that was read.
    pub fn ok(source: &str, readings: impl Serialize) -> SourceReport {
        SourceReport {
            source: source.to_string(),
            status: SourceStatus::Ok,
            detail: None,
            // Readings are plain data (numbers, strings, maps with string keys).
            readings: serde_json::to_value(readings).unwrap_or(serde_json::Value::Null),
        }
    }

    /// A source this host does not have.
    pub fn unavailable(source: &str, why: impl Into<String>) -> SourceReport {
        SourceReport {
            source: source.to_string(),
            status: SourceStatus::Unavailable,
            detail: Some(why.into()),
            readings: serde_json::Value::Null,
        }
    }

    /// The same readings, marked failed for `why` (what was read is kept).
    pub fn failed(mut self, why: impl Into<String>) -> SourceReport {
        self.status = SourceStatus::Error;
        self.detail = Some(why.into());
        self
    }

    /// Whether the source was read.
    pub fn is_ok(&self) -> bool {
        self.status == SourceStatus::Ok
    }
}

/// One snapshot of every source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterReport {
    /// The host model, when there is one (an RDMA device to build it around).
    pub host: Option<String>,
    /// Read on this host, or produced by the virtual host.
    pub provenance: Provenance,
    /// Wall clock, ms since the epoch, as the caller passed it.
    pub at_unix_ms: i64,
    /// The monitors' view in model ids.
    pub monitor: HostSnapshot,
    /// The static configuration in model ids.
    pub config: HostConfig,
    /// Every source.
    pub sources: Vec<SourceReport>,
}

impl CounterReport {
    /// The failed sources in one line, if any.
    pub fn failed_sources(&self) -> Option<String> {
        let failed: Vec<String> = self
            .sources
            .iter()
            .filter(|s| s.status == SourceStatus::Error)
            .map(|s| format!("{}: {}", s.source, s.detail.as_deref().unwrap_or("failed")))
            .collect();
        (!failed.is_empty()).then(|| failed.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_sources_name_each_failure_and_ignore_the_rest() {
        let report = CounterReport {
            host: None,
            provenance: Provenance::Measured,
            at_unix_ms: 0,
            monitor: HostSnapshot::default(),
            config: HostConfig::default(),
            sources: vec![
                SourceReport::ok("rnic", [1, 2]),
                SourceReport::unavailable("gpu", "no NVML"),
                SourceReport::ok("pcie", ()).failed("config: permission denied"),
            ],
        };
        assert_eq!(
            report.failed_sources().as_deref(),
            Some("pcie: config: permission denied")
        );
        assert!(report.sources[0].is_ok());
        assert_eq!(report.sources[0].readings, serde_json::json!([1, 2]));
    }
}
