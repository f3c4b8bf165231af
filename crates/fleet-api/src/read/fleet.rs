//! The answers of the collector's fleet endpoints: a host judged against its baseline, a
//! kind's fleet baseline, the fleet's status and its causes. The slow hosts are
//! `analyze`'s [`SlowHost`](analyze::fleet::slow::SlowHost)s, served as they are.

use super::order::via_value;
use analyze::fleet::judge::JudgedPath;
use model::{BaselineKind, Mode};
use serde::{Deserialize, Serialize};

/// `GET /api/hosts/{host}/baseline`: each path of the host's latest run against its own
/// baseline or its kind's fleet baseline, with a verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostBaseline {
    /// The host.
    pub host: String,
    /// Its kind.
    pub kind: String,
    /// The paths of its latest run, judged, in the report's order.
    #[serde(serialize_with = "via_value")]
    pub paths: Vec<JudgedPath>,
    /// Its rack, when its latest run named one.
    pub rack: Option<String>,
    /// The run judged; `null` before any run.
    pub run: Option<BaselineRun>,
}

/// The run a [`HostBaseline`] judges.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineRun {
    /// What its report judged it against (the report's `baseline`): `null` for none.
    pub baseline: Option<BaselineKind>,
    /// The agent's run id.
    pub id: i64,
    /// `idle` or `busy`.
    pub mode: Mode,
    /// Wall clock at the start of the run, ms since the Unix epoch.
    pub started_unix_ms: i64,
}

/// `GET /api/kinds/{kind}/baseline`: the kind's fleet baseline per path, and the batch of
/// hosts it is computed over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KindBaseline {
    /// Hosts in one batch at most (`analyze::fleet::baseline::BATCH_HOSTS`).
    pub batch_hosts: i64,
    /// Runs of a host a baseline takes at most (`analyze::fleet::baseline::HOST_RUNS`).
    pub host_runs: i64,
    /// The hosts of the batch, by name.
    pub hosts: Vec<String>,
    /// Hosts of this kind in the fleet.
    pub hosts_of_kind: i64,
    /// The kind.
    pub kind: String,
    /// Hosts a path needs for a fleet baseline (`analyze::fleet::baseline::MIN_FLEET_HOSTS`).
    pub min_hosts: usize,
    /// The baseline of each path that has one, by RNIC and endpoint.
    pub paths: Vec<KindBaselinePath>,
    /// When it was last computed, ms since the Unix epoch; `null` when it never was.
    pub refreshed_unix_ms: Option<i64>,
}

/// One path of a [`KindBaseline`]: the median and MAD over the batch's hosts (each host's
/// value the median of its recent runs), and the run-to-run spread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KindBaselinePath {
    /// Bandwidth, Gb/s: the median over hosts.
    pub bandwidth_gbps: f64,
    /// The MAD of bandwidth over hosts, Gb/s.
    pub bandwidth_mad_gbps: f64,
    /// The median of each host's MAD of bandwidth over its runs, Gb/s.
    pub bandwidth_run_mad_gbps: f64,
    /// The endpoint.
    pub endpoint: String,
    /// Hosts it is computed over.
    pub hosts: usize,
    /// The MAD of latency over hosts, us.
    pub latency_mad_us: f64,
    /// The median of each host's MAD of latency over its runs, us.
    pub latency_run_mad_us: f64,
    /// Latency, us: the median over hosts.
    pub latency_us: f64,
    /// The RNIC.
    pub rnic: String,
    /// Runs behind the hosts' values, in all.
    pub runs: usize,
}

/// `GET /api/fleet/status`: host counts, kinds, causes, runs stored and the last ingest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetStatus {
    /// Each cause of a latest run, with the hosts whose latest run has it: most hosts first.
    pub causes: Vec<CauseCount>,
    /// Hosts whose latest run is healthy.
    pub healthy: i64,
    /// Hosts.
    pub hosts: i64,
    /// Hosts whose latest run could not judge every link (neither healthy nor unhealthy);
    /// absent from collectors older than the field, whose `unhealthy` counts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inconclusive: Option<i64>,
    /// Per kind: most hosts first.
    pub kinds: Vec<KindStatus>,
    /// When the collector last received a run, ms since the Unix epoch.
    pub last_ingest_unix_ms: Option<i64>,
    /// The start of the newest latest run, ms since the Unix epoch.
    pub last_run_unix_ms: Option<i64>,
    /// The collector's clock when it answered, ms since the Unix epoch.
    pub now_unix_ms: i64,
    /// Runs stored.
    pub runs: i64,
    /// Hosts whose latest run started more than `stale_after_ms` ago.
    pub stale: i64,
    /// How old a latest run makes its host stale (`analyze::fleet::STALE_AFTER_MS`).
    pub stale_after_ms: i64,
    /// Hosts whose latest run found a bottleneck (not the inconclusive ones).
    pub unhealthy: i64,
}

/// One kind of a [`FleetStatus`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KindStatus {
    /// Hosts of the kind.
    pub hosts: i64,
    /// Of its hosts, those whose latest run is inconclusive (absent from older collectors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inconclusive: Option<i64>,
    /// The kind.
    pub kind: String,
    /// Whether it is a model this hostping knows.
    pub kind_known: bool,
    /// Of its hosts, the stale ones.
    pub stale: i64,
    /// Of its hosts, those whose latest run found a bottleneck.
    pub unhealthy: i64,
}

/// One cause of a [`FleetStatus`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CauseCount {
    /// The cause (`link_failure`, ...).
    pub cause: String,
    /// Hosts whose latest run has it.
    pub hosts: i64,
}

/// One cause of `GET /api/fleet/causes`, with the hosts whose latest run has it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CauseHosts {
    /// The cause.
    pub cause: String,
    /// How many hosts (`hosts`' length).
    pub count: usize,
    /// The hosts, by name.
    pub hosts: Vec<CauseHost>,
}

/// A host of a [`CauseHosts`], with its latest run's diagnoses of that cause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CauseHost {
    /// The diagnoses, in the report's order.
    pub diagnoses: Vec<CauseDiagnosis>,
    /// The host.
    pub host: String,
    /// Its kind.
    pub kind: String,
    /// When its latest run started, ms since the Unix epoch.
    pub last_run_unix_ms: Option<i64>,
    /// Its rack, when its latest run named one.
    pub rack: Option<String>,
}

/// One diagnosis of a [`CauseHost`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CauseDiagnosis {
    /// The analyzer's words.
    pub evidence: String,
    /// The links it implicates.
    pub links: Vec<String>,
    /// The RNIC, for a cause in its settings.
    pub rnic: Option<String>,
}
