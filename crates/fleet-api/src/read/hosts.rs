//! The answers of the endpoints that the agent and the collector both serve:
//! `GET /api/hosts`, `GET /api/hosts/{host}/runs` and `GET /api/hosts/{host}/timeline`.
//!
//! Where the collector knows more than an agent (a host's rack, whether its kind is a known
//! model), the field is the collector's only: an agent's answer leaves it out rather than
//! guessing, which is why those fields are `Option`s that are skipped when `None`.

use analyze::fleet::Health;
use model::Report;
use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One host of `GET /api/hosts` (DESIGN 4.5): its latest run's verdict and causes, and how
/// many runs are stored. An agent lists its own host only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostSummary {
    /// Where its agent's API listens, as the agent registered it (collector only, for pair
    /// probes; absent when no agent registered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_url: Option<String>,
    /// The causes of its latest run, each once, sorted by name.
    pub causes: Vec<String>,
    /// Its health in one word (`analyze::fleet::health`): `healthy`, `unhealthy`,
    /// `inconclusive` or `stale`; absent before any run, and from servers older than the
    /// field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<Health>,
    /// Its latest run's verdict; `null` before any run. `false` for an inconclusive run too:
    /// [`HostSummary::inconclusive`] tells the two apart.
    pub healthy: Option<bool>,
    /// Its name in the fleet (the agent's `--name`).
    pub host: String,
    /// Whether its latest run could not judge every link (DESIGN 4.3); absent before any
    /// run, and from servers older than the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inconclusive: Option<bool>,
    /// Its kind: the model name its reports carry (an agent without runs: its model).
    pub kind: String,
    /// Whether `kind` is a model this hostping knows (collector only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind_known: Option<bool>,
    /// When its latest run started, ms since the Unix epoch; `null` before any run.
    pub last_run_unix_ms: Option<i64>,
    /// The rack its latest run named (collector only: `Some(None)`, JSON `null`, when it
    /// named none; `None` leaves the field out).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub rack: Option<Option<String>>,
    /// Runs stored.
    pub runs: i64,
}

/// A field that is there, `null` or not: `Some` of its value (serde's own `Option<Option>`
/// reads `null` as absent).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// The fields `GET /api/hosts/{host}/runs` adds to each run's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEnvelope {
    /// The agent's run id (its SQLite `runs.id`): `run_id` in the timeline.
    pub id: i64,
    /// Whether the report's kind is a model this hostping knows (collector only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind_known: Option<bool>,
    /// Wall clock at the start of the run, ms since the Unix epoch.
    pub started_unix_ms: i64,
    /// What started the run: `idle`, `pfc`, `drops`, `manual`, ...
    pub trigger: String,
}

/// One run of `GET /api/hosts/{host}/runs`: the 4.3 report with the [`RunEnvelope`]'s fields
/// beside its own, in one object.
///
/// `R` is the report as the server holds it: the agent a [`Report`], the collector the JSON
/// object the agent sent (checked against [`Report`] on the way in), so that a field of a
/// newer agent's report survives the collector; readers take a [`Report`].
///
/// Serialised as the report's JSON object with the envelope's fields added, keys sorted as
/// they always were (see [`super::order`]): not derived, since serde's `flatten` would put
/// the envelope's fields first.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct HostRun<R = Report> {
    /// The fields the read API adds.
    #[serde(flatten)]
    pub envelope: RunEnvelope,
    /// The report.
    #[serde(flatten)]
    pub report: R,
}

impl<R: Serialize> Serialize for HostRun<R> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut run = serde_json::to_value(&self.report).map_err(S::Error::custom)?;
        let envelope = serde_json::to_value(&self.envelope).map_err(S::Error::custom)?;
        match (&mut run, envelope) {
            (serde_json::Value::Object(run), serde_json::Value::Object(envelope)) => {
                run.extend(envelope)
            }
            _ => return Err(S::Error::custom("a report is a JSON object")),
        }
        run.serialize(s)
    }
}

/// `GET /api/hosts/{host}/timeline`: one path of one host over its runs, oldest first, as
/// Hostping Fig. 9 plots it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    /// The path's endpoint (`gpu4`, `mem0`, ...).
    pub endpoint: String,
    /// The host.
    pub host: String,
    /// Its measurements, oldest first.
    pub points: Vec<TimelinePoint>,
    /// The path's RNIC.
    pub rnic: String,
}

/// One run's measurement of the timeline's path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelinePoint {
    /// Bandwidth, Gb/s; `null` when the probe did not measure it.
    pub bandwidth_gbps: Option<f64>,
    /// Latency, us; `null` when the probe did not measure it.
    pub latency_us: Option<f64>,
    /// The agent's run id (`id` in the runs).
    pub run_id: i64,
    /// Wall clock at the start of the run, ms since the Unix epoch.
    pub started_unix_ms: i64,
    /// `normal` / `abnormal` / `uncertain`, as the analyzer said.
    pub status: String,
}
