//! The agent's configuration file (TOML). Every key is optional; the defaults are Hostping
//! Section 5's cadences and thresholds. `packaging/hostping-agent.toml` is a commented copy.
//!
//! ```toml
//! [agent]
//! database = "/var/lib/hostping/runs.db"
//! listen = "127.0.0.1:9469"
//! # baseline = "/etc/hostping/baseline.json"
//! # rack = "r12"             # sent to the fleet collector with each run
//! # probe_tokens = "/etc/hostping/probe.tokens"  # "NAME TOKEN" lines: POST /api/probe
//! keep = "7d"                # runs older than this leave the database
//! keep_runs = 3000           # and at most this many stay (about 90 MB at 30 KB a run)
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
//!
//! [fabric]                   # optional: this node also samples switch ports (docs/agent.md)
//! topology = "/etc/hostping/fabric.topo"  # ibnetdiscover file: names, uplinks, ports
//! ports = "/etc/hostping/sampler.ports"   # LDMS lidfile of `fabric delegate`: this node's share
//! every = "10s"
//! keep = "1d"                # sweeps older than this leave the database
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
    /// Switch-port sampling, on a sampler node; absent, the agent samples nothing.
    pub fabric: Option<FabricConfig>,
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
    /// The rack the host stands in, sent with each run to the fleet collector (`--rack`
    /// overrides it).
    pub rack: Option<String>,
    /// "NAME TOKEN" lines of those who may ask for a probe (`POST /api/probe`;
    /// `--probe-tokens` overrides it). Absent: probing on request is off.
    pub probe_tokens: Option<PathBuf>,
    /// Runs that started longer ago than this leave the database (a week by default: an
    /// idle host stores 288 runs a day, about 8.6 MB).
    #[serde(with = "humantime_serde")]
    pub keep: Duration,
    /// At most this many runs stay, the newest. A run of a full mesh weighs about 30 KB, so
    /// the default 3,000 bounds the database at about 90 MB whatever the rate of runs (a
    /// storm of symptoms probing every 5 s reaches it in about 4 hours; idle, the week of
    /// `keep` is 2,016 runs, about 60 MB). The flapping rules read the last few runs only.
    pub keep_runs: u32,
}

/// The most runs `agent.keep_runs` may keep: about 30 GB of a full mesh's runs.
pub const MAX_KEEP_RUNS: u32 = 1_000_000;

impl Default for AgentSection {
    fn default() -> Self {
        AgentSection {
            database: PathBuf::from("/var/lib/hostping/runs.db"),
            listen: SocketAddr::from(([127, 0, 0, 1], 9469)),
            baseline: None,
            rack: None,
            probe_tokens: None,
            keep: Duration::from_secs(7 * 86_400),
            keep_runs: 3_000,
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

/// The most timed iterations per message size: a million already makes a full mesh take
/// minutes of probing, which the duty cycle then makes the host wait for.
pub const MAX_PROBE_ITERATIONS: u32 = 1_000_000;

/// `[fabric]`: sweeps of switch-port counters through a umad port (`hostping fabric sample`
/// inside the agent), served on `/metrics` and stored in the database.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FabricConfig {
    /// The subnet as an ibnetdiscover topology file: the switches' names and links (for
    /// `infiniband_switch_info` and `infiniband_switch_uplink_info`), and, without `ports`,
    /// the ports to sample (every linked switch port). Without it nor `ports` the agent
    /// discovers the subnet itself.
    pub topology: Option<PathBuf>,
    /// This sampler's share of the ports, an LDMS lidfile as `hostping fabric delegate`
    /// writes it.
    pub ports: Option<PathBuf>,
    /// How often to sweep.
    #[serde(with = "humantime_serde")]
    pub every: Duration,
    /// Channel adapter to send from (default: the first one with an active port).
    pub ca: Option<String>,
    /// Its port (0: the first active one).
    pub port: u8,
    /// Deadline of one MAD, ms.
    pub timeout_ms: u64,
    /// Tries after the first, per MAD.
    pub retries: u32,
    /// MADs in flight at once.
    pub window: usize,
    /// Sweeps older than this are dropped from the database as new ones are stored.
    #[serde(with = "humantime_serde")]
    pub keep: Duration,
    /// The `sampler` column of the stored sweeps (default: this machine's host name).
    pub sampler: Option<String>,
}

impl Default for FabricConfig {
    fn default() -> Self {
        FabricConfig {
            topology: None,
            ports: None,
            // Prometheus' usual scrape interval; a sweep of a 100-switch fabric takes
            // milliseconds (BENCHMARKS.md), so this costs the fabric nothing.
            every: Duration::from_secs(10),
            ca: None,
            port: 0,
            // As `hostping fabric sample`.
            timeout_ms: 100,
            retries: 2,
            window: 16,
            // A day of 10 s sweeps of 3,600 ports is 31 M rows (a few GB): bound it.
            keep: Duration::from_secs(86_400),
            sampler: None,
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
    /// An analyzer threshold out of its range.
    #[error(transparent)]
    Threshold(#[from] model::thresholds::ThresholdError),
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
        self.thresholds.check()?;
        let a = &self.agent;
        if a.keep.is_zero() {
            return invalid("agent.keep", "0s: must be longer than zero".into());
        }
        if !(1..=MAX_KEEP_RUNS).contains(&a.keep_runs) {
            return invalid(
                "agent.keep_runs",
                format!("{} is outside 1..={MAX_KEEP_RUNS}", a.keep_runs),
            );
        }
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
        let p = &self.probe;
        if !(1..=MAX_PROBE_ITERATIONS).contains(&p.iterations) {
            return invalid(
                "probe.iterations",
                format!("{} is outside 1..={MAX_PROBE_ITERATIONS}", p.iterations),
            );
        }
        if !(1..=60_000).contains(&p.timeout_ms) {
            return invalid(
                "probe.timeout_ms",
                format!("{} is outside 1..=60000", p.timeout_ms),
            );
        }
        if let Some(f) = &self.fabric {
            if f.every.is_zero() {
                return invalid("fabric.every", "must be longer than zero".into());
            }
            if f.keep.is_zero() {
                return invalid("fabric.keep", "must be longer than zero".into());
            }
            if !(1..=60_000).contains(&f.timeout_ms) {
                return invalid(
                    "fabric.timeout_ms",
                    format!("{} is outside 1..=60000", f.timeout_ms),
                );
            }
            if f.retries > 20 {
                return invalid("fabric.retries", format!("{} is above 20", f.retries));
            }
            if !(1..=1024).contains(&f.window) {
                return invalid("fabric.window", format!("{} is outside 1..=1024", f.window));
            }
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
        let text = include_str!("../../../packaging/hostping-agent.toml");
        assert_eq!(AgentConfig::parse(text).unwrap(), AgentConfig::default());
    }

    #[test]
    fn the_rack_is_read() {
        let c = AgentConfig::parse("[agent]\nrack = \"r7\"\n").unwrap();
        assert_eq!(c.agent.rack.as_deref(), Some("r7"));
        assert_eq!(AgentConfig::default().agent.rack, None);
    }

    #[test]
    fn probing_on_request_is_off_unless_a_tokens_file_is_named() {
        let c =
            AgentConfig::parse("[agent]\nprobe_tokens = \"/etc/hostping/probe.tokens\"\n").unwrap();
        assert_eq!(
            c.agent.probe_tokens.as_deref(),
            Some(Path::new("/etc/hostping/probe.tokens"))
        );
        assert_eq!(AgentConfig::default().agent.probe_tokens, None);
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
    fn fabric_is_off_unless_its_table_is_there() {
        assert_eq!(AgentConfig::parse("").unwrap().fabric, None);
        let c = AgentConfig::parse("[fabric]\n").unwrap();
        assert_eq!(c.fabric, Some(FabricConfig::default()));
        let c = AgentConfig::parse(
            "[fabric]\nports = \"/etc/hostping/host-1.ports\"\nevery = \"250ms\"\n\
             ca = \"mlx5_0\"\nport = 1\nkeep = \"2h\"\nsampler = \"host-1\"\n",
        )
        .unwrap();
        let f = c.fabric.unwrap();
        assert_eq!(f.ports, Some(PathBuf::from("/etc/hostping/host-1.ports")));
        assert_eq!(f.topology, None);
        assert_eq!(f.every, Duration::from_millis(250));
        assert_eq!((f.ca.as_deref(), f.port), (Some("mlx5_0"), 1));
        assert_eq!(f.keep, Duration::from_secs(7200));
        assert_eq!(f.sampler.as_deref(), Some("host-1"));
        assert_eq!((f.timeout_ms, f.retries, f.window), (100, 2, 16));
    }

    #[test]
    fn fabric_mistakes_are_named() {
        for (text, key) in [
            ("[fabric]\nevery = \"0s\"\n", "fabric.every"),
            ("[fabric]\nkeep = \"0s\"\n", "fabric.keep"),
            ("[fabric]\ntimeout_ms = 0\n", "fabric.timeout_ms"),
            ("[fabric]\nwindow = 0\n", "fabric.window"),
            ("[fabric]\nretries = 21\n", "fabric.retries"),
            ("[fabric]\nport_list = \"x\"\n", "port_list"),
        ] {
            let e = AgentConfig::parse(text).unwrap_err().to_string();
            assert!(e.contains(key), "{text:?}: {e}");
        }
    }

    #[test]
    fn runs_are_kept_a_week_and_at_most_3000_by_default() {
        let a = AgentConfig::parse("").unwrap().agent;
        assert_eq!(
            (a.keep, a.keep_runs),
            (Duration::from_secs(7 * 86_400), 3_000)
        );
        let a = AgentConfig::parse("[agent]\nkeep = \"2d\"\nkeep_runs = 500\n")
            .unwrap()
            .agent;
        assert_eq!(
            (a.keep, a.keep_runs),
            (Duration::from_secs(2 * 86_400), 500)
        );
    }

    #[test]
    fn meaningless_settings_are_refused_with_the_value_and_the_range() {
        for (text, said) in [
            (
                "[thresholds]\nabnormal_th = 5\n",
                "thresholds.abnormal_th = 5 is outside (0, 1)",
            ),
            (
                "[thresholds]\npfc_high = -0.5\n",
                "thresholds.pfc_high = -0.5 is outside (0, 1)",
            ),
            (
                "[thresholds]\nflapping_runs = 0\n",
                "thresholds.flapping_runs = 0",
            ),
            (
                "[agent]\nkeep_runs = 0\n",
                "agent.keep_runs: 0 is outside 1..=1000000",
            ),
            ("[agent]\nkeep = \"0s\"\n", "agent.keep"),
            (
                "[probe]\niterations = 4000000000\n",
                "probe.iterations: 4000000000 is outside 1..=1000000",
            ),
            (
                "[probe]\ntimeout_ms = 0\n",
                "probe.timeout_ms: 0 is outside 1..=60000",
            ),
        ] {
            let e = AgentConfig::parse(text).unwrap_err().to_string();
            assert!(e.contains(said), "{text:?}: {e}");
        }
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
