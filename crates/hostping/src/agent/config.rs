//! The agent's configuration file (TOML). Every key is optional; the defaults are Hostping
//! Section 5's cadences and thresholds. `packaging/hostping-agent.toml` is a commented copy.
//!
//! ```toml
//! [agent]
//! database = "/var/lib/hostping/runs.db"
//! listen = "127.0.0.1:9469"
//! # baseline = "/etc/hostping/baseline.json"
//!
//! [triggers]
//! host_status_every = "5m"   # idle check -> full mesh (Hostping 5)
//! symptoms_every = "1s"      # pause ratio and drops -> affinitive-only probe (Hostping 5)
//! max_duty_cycle = 0.05      # share of time the agent may spend probing, over the long run
//! burst = "2s"               # probing it may do at once before the duty cycle applies
//!
//! [thresholds]               # analyzer thresholds (model::Thresholds)
//! pfc_high = 0.03
//!
//! [probe]
//! iterations = 1000
//! op = "write"
//! timeout_ms = 2000
//! ```

use model::Thresholds;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The whole file.
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// Where results go and where the HTTP endpoint listens.
    pub agent: AgentSection,
    /// When to probe.
    pub triggers: TriggerConfig,
    /// Analyzer thresholds.
    pub thresholds: Thresholds,
    /// The loopback test.
    pub probe: ProbeConfig,
}

/// `[agent]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentSection {
    /// The SQLite database of runs.
    pub database: PathBuf,
    /// Address of `/metrics` and the JSON API. Loopback by default: the API is not
    /// authenticated.
    pub listen: SocketAddr,
    /// A recorded baseline; without one a real host is judged against line rate and like
    /// paths in the same run, a virtual one against a simulated baseline.
    pub baseline: Option<PathBuf>,
}

impl Default for AgentSection {
    fn default() -> Self {
        AgentSection {
            database: PathBuf::from("/var/lib/hostping/runs.db"),
            listen: SocketAddr::from(([127, 0, 0, 1], 9469)),
            baseline: None,
        }
    }
}

/// `[triggers]`: the hardware monitor's cadences and the rate limit on probing.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TriggerConfig {
    /// How often the host status is checked; an idle host gets a full-mesh probe
    /// (Hostping 5: every five minutes).
    #[serde(with = "humantime_serde")]
    pub host_status_every: Duration,
    /// How often abnormal metrics (Tx pause ratio, drops) are read; a symptom starts an
    /// affinitive-only probe (Hostping 5: every second).
    #[serde(with = "humantime_serde")]
    pub symptoms_every: Duration,
    /// Over the long run, at most this share of time is spent probing, however many
    /// symptoms arrive: a storm of pauses must not make the agent hammer a busy host.
    pub max_duty_cycle: f64,
    /// Probing allowed at once before the duty cycle applies (so the first symptom is
    /// probed at once).
    #[serde(with = "humantime_serde")]
    pub burst: Duration,
}

impl Default for TriggerConfig {
    fn default() -> Self {
        TriggerConfig {
            host_status_every: Duration::from_secs(300),
            symptoms_every: Duration::from_secs(1),
            max_duty_cycle: 0.05,
            burst: Duration::from_secs(2),
        }
    }
}

/// `[probe]`: the loopback test of each run.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProbeConfig {
    /// Timed iterations per message size.
    pub iterations: u32,
    /// `write` or `read`.
    pub op: model::Op,
    /// Limit on every verbs wait, ms.
    pub timeout_ms: u64,
}

impl Default for ProbeConfig {
    fn default() -> Self {
        ProbeConfig {
            iterations: 1000,
            op: model::Op::Write,
            timeout_ms: 2000,
        }
    }
}

/// Why the configuration cannot be used. One line naming the file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("cannot read agent configuration `{path}`: {reason}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        reason: String,
    },
    /// The file is not valid TOML or has unknown keys or bad values.
    #[error("agent configuration `{path}`: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the key.
        reason: InvalidConfig,
    },
}

/// What is wrong in configuration text. One line naming the key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InvalidConfig {
    /// Not TOML, or a key or value the configuration does not have.
    #[error("{message}{}", at_byte.map(|b| format!(" (at byte {b})")).unwrap_or_default())]
    Syntax {
        /// The TOML parser's message, on one line.
        message: String,
        /// Where in the text.
        at_byte: Option<usize>,
    },
    /// A value out of its range.
    #[error("{setting}: {problem}")]
    Setting {
        /// The key, like `triggers.max_duty_cycle`.
        setting: &'static str,
        /// What is wrong with its value.
        problem: String,
    },
}

impl AgentConfig {
    /// Reads and checks a configuration file.
    pub fn load(path: &Path) -> Result<AgentConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Unreadable {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        AgentConfig::parse(&text).map_err(|reason| ConfigError::Invalid {
            path: path.to_path_buf(),
            reason,
        })
    }

    /// Parses and checks configuration text.
    pub fn parse(text: &str) -> Result<AgentConfig, InvalidConfig> {
        let config: AgentConfig = toml::from_str(text).map_err(|e| InvalidConfig::Syntax {
            // One line: toml's message spans several with a source excerpt.
            message: e
                .to_string()
                .lines()
                .last()
                .unwrap_or_default()
                .trim()
                .to_string(),
            at_byte: e.span().map(|s| s.start),
        })?;
        config.check()?;
        Ok(config)
    }

    fn check(&self) -> Result<(), InvalidConfig> {
        let invalid = |setting, problem: String| Err(InvalidConfig::Setting { setting, problem });
        let t = &self.triggers;
        if !(t.max_duty_cycle > 0.0 && t.max_duty_cycle <= 1.0) {
            return invalid(
                "triggers.max_duty_cycle",
                format!("{} is outside (0, 1]", t.max_duty_cycle),
            );
        }
        if t.symptoms_every.is_zero() {
            return invalid("triggers.symptoms_every", "must be longer than zero".into());
        }
        if t.host_status_every.is_zero() {
            return invalid(
                "triggers.host_status_every",
                "must be longer than zero".into(),
            );
        }
        if self.probe.iterations == 0 {
            return invalid("probe.iterations", "must be at least 1".into());
        }
        if self.probe.timeout_ms == 0 {
            return invalid("probe.timeout_ms", "must be at least 1".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_file_gives_the_papers_defaults() {
        let c = AgentConfig::parse("").unwrap();
        assert_eq!(c.triggers.host_status_every, Duration::from_secs(300));
        assert_eq!(c.triggers.symptoms_every, Duration::from_secs(1));
        assert_eq!(c.thresholds, Thresholds::default());
        assert_eq!(c.agent.listen.to_string(), "127.0.0.1:9469");
    }

    #[test]
    fn the_packaged_example_holds_the_defaults() {
        let text = include_str!("../../../../packaging/hostping-agent.toml");
        assert_eq!(AgentConfig::parse(text).unwrap(), AgentConfig::default());
    }

    #[test]
    fn durations_and_thresholds_are_read() {
        let c = AgentConfig::parse(
            "[triggers]\nhost_status_every = \"10m\"\nsymptoms_every = \"500ms\"\n\
             max_duty_cycle = 0.1\n[thresholds]\npfc_high = 0.05\n[probe]\nop = \"read\"\n",
        )
        .unwrap();
        assert_eq!(c.triggers.host_status_every, Duration::from_secs(600));
        assert_eq!(c.triggers.symptoms_every, Duration::from_millis(500));
        assert_eq!(c.thresholds.pfc_high, 0.05);
        assert_eq!(c.thresholds.thp_low, Thresholds::default().thp_low);
        assert_eq!(c.probe.op, model::Op::Read);
    }

    #[test]
    fn mistakes_are_named() {
        let e = AgentConfig::parse("[triggers]\nsymptom_every = \"1s\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("symptom_every"), "{e}");
        let e = AgentConfig::parse("[triggers]\nmax_duty_cycle = 2.0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("max_duty_cycle"), "{e}");
        let e = AgentConfig::parse("[triggers]\nburst = \"soon\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("soon") || e.contains("burst") || e.contains("unit"),
            "{e}"
        );
        let e = AgentConfig::load(Path::new("/nonexistent/agent.toml")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/agent.toml"), "{e}");
    }
}
