//! A real `hostping mesh` through the collector (DESIGN 4.6): `POST /api/mesh`'s request,
//! its budget (asked, checked, spent, and recorded with a pair baseline), and its answer, as
//! the CLI, the collector and the job verdict exchange them.

use crate::pair::{End, MeshNotes, PairReport, PairStatus, RouteSource};
use serde::{Deserialize, Serialize};

/// The most nodes one mesh (or one job verdict) may name.
pub const MAX_NODES: usize = 4096;

/// `POST /api/mesh`'s body. Unset budget fields take [`MeshRequest::budget`]'s defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeshRequest {
    /// The hosts, two or more, each once.
    pub nodes: Vec<String>,
    /// Seconds the pairs are spread over (10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// Latency probes a second per cross-leaf target (1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Latency probes a second per same-leaf target (10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_same_leaf: Option<f64>,
    /// Messages of each pair's bandwidth phase (1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bw_iterations: Option<u64>,
    /// Messages outstanding in it (the agent's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    /// Store each measured pair as its ends' baseline instead of judging it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_baseline: Option<bool>,
}

/// A budget as a request asks for it (the fields of [`MeshRequest`] but `nodes`): what a
/// recorded pair baseline keeps, so that later probes of the pair are like it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetAsked {
    /// Messages of each pair's bandwidth phase.
    pub bw_iterations: u64,
    /// Messages outstanding in it.
    pub depth: Option<u32>,
    /// Seconds the pairs are spread over.
    pub duration_s: f64,
    /// Latency probes a second per cross-leaf target.
    pub rate: f64,
    /// Latency probes a second per same-leaf target.
    pub rate_same_leaf: f64,
}

impl MeshRequest {
    /// A mesh of `nodes` on the default budget.
    pub fn of_nodes(nodes: Vec<String>) -> MeshRequest {
        MeshRequest {
            nodes,
            ..MeshRequest::default()
        }
    }

    /// A mesh of `nodes` on the budget `recorded` with a pair baseline ([`BudgetAsked`]'s
    /// JSON, as stored), or why it does not read as one.
    pub fn with_budget(
        nodes: Vec<String>,
        recorded: &str,
    ) -> Result<MeshRequest, serde_json::Error> {
        let budget: BudgetAsked = serde_json::from_str(recorded)?;
        Ok(MeshRequest {
            nodes,
            duration_s: Some(budget.duration_s),
            rate: Some(budget.rate),
            rate_same_leaf: Some(budget.rate_same_leaf),
            bw_iterations: Some(budget.bw_iterations),
            depth: budget.depth,
            record_baseline: None,
        })
    }

    /// The budget, defaults filled in (R-Pingmesh's 1/s across leaves and 10/s within one,
    /// over 10 s; 1000 bandwidth messages), or why the request is outside the contract.
    pub fn budget(&self) -> Result<Budget, BudgetError> {
        let duration_s = self.duration_s.unwrap_or(10.0);
        let rate = self.rate.unwrap_or(1.0);
        let rate_same_leaf = self.rate_same_leaf.unwrap_or(10.0);
        if !(duration_s > 0.0 && duration_s <= 86_400.0) {
            return Err(BudgetError::Duration(duration_s));
        }
        for (name, rate) in [("rate", rate), ("rate_same_leaf", rate_same_leaf)] {
            if !(rate > 0.0 && rate <= 10_000.0) {
                return Err(BudgetError::Rate { name, rate });
            }
        }
        let bw_iterations = self.bw_iterations.unwrap_or(1000);
        if bw_iterations > model::limits::ITERATIONS {
            return Err(BudgetError::BwIterations(bw_iterations));
        }
        let probes = |name: &'static str, rate: f64| {
            let probes = (rate * duration_s).round().max(1.0);
            if probes > model::limits::ITERATIONS as f64 {
                return Err(BudgetError::Probes { name, probes });
            }
            Ok(probes as u32)
        };
        Ok(Budget {
            duration_s,
            rate,
            rate_same_leaf,
            latency_probes_per_pair: probes("rate", rate)?,
            latency_probes_same_leaf_pair: probes("rate_same_leaf", rate_same_leaf)?,
            latency_probes: 0,
            bw_iterations,
            depth: self.depth,
        })
    }
}

/// Why a mesh request's budget is outside the contract (a 400).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BudgetError {
    /// The seconds the pairs are spread over.
    #[error("duration_s {0} is not in (0, 86400]")]
    Duration(f64),
    /// A probe rate.
    #[error("{name} {rate} is not in (0, 10000]")]
    Rate {
        /// `rate` or `rate_same_leaf`.
        name: &'static str,
        /// As asked.
        rate: f64,
    },
    /// The bandwidth phase's messages.
    #[error("bw_iterations {0} is above {max}", max = model::limits::ITERATIONS)]
    BwIterations(u64),
    /// A rate over the duration.
    #[error("{name} x duration_s is {probes} probes a pair, above {max}", max = model::limits::ITERATIONS)]
    Probes {
        /// `rate` or `rate_same_leaf`.
        name: &'static str,
        /// The probes a pair it asks for.
        probes: f64,
    },
}

/// The budget, as asked and as spent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// Seconds the pairs are spread over.
    pub duration_s: f64,
    /// Latency probes a second per cross-leaf target (every target without a fabric).
    pub rate: f64,
    /// Latency probes a second per same-leaf target.
    pub rate_same_leaf: f64,
    /// Latency probes a cross-leaf pair sends (every pair without a fabric).
    pub latency_probes_per_pair: u32,
    /// Latency probes a same-leaf pair sends.
    pub latency_probes_same_leaf_pair: u32,
    /// Latency probes over the mesh, all pairs.
    pub latency_probes: u64,
    /// Messages of each pair's bandwidth phase.
    pub bw_iterations: u64,
    /// Messages outstanding in it (the agent's default when not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
}

impl Budget {
    /// The budget as a request asks for it.
    pub fn asked(&self) -> BudgetAsked {
        BudgetAsked {
            bw_iterations: self.bw_iterations,
            depth: self.depth,
            duration_s: self.duration_s,
            rate: self.rate,
            rate_same_leaf: self.rate_same_leaf,
        }
    }
}

/// One node as the mesh found it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeshNode {
    /// The host.
    pub host: String,
    /// Its agent's API; `None`: no agent registered.
    pub agent_url: Option<String>,
    /// Its RNIC ids: the agent's, or those of its latest run without one.
    pub rnics: Vec<String>,
    /// Their devices, as its agent registered them (none without an agent).
    pub devices: Vec<String>,
    /// Why its pairs could not run, when they could not.
    pub error: Option<String>,
}

/// With the fabric: the cables between the nodes and the groups of cables crossed by the
/// same pairs (a bad one among them cannot be named), as the simulated mesh reports them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Coverage {
    /// Cables between the probed hosts.
    pub cables: usize,
    /// Groups of cables crossed by the same pairs.
    pub not_identifiable: Vec<Vec<String>>,
}

/// A pair that did not run (its node unreachable, or its agent answered no report).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotRun {
    /// The initiator.
    pub a: End,
    /// The responder.
    pub b: End,
    /// Never measured: `null`, as the pair object of DESIGN 4.6 has it.
    pub latency_us: Option<f64>,
    /// See `latency_us`.
    pub bandwidth_gbps: Option<f64>,
    /// See `latency_us`.
    pub host_a_us: Option<f64>,
    /// See `latency_us`.
    pub host_b_us: Option<f64>,
    /// See `latency_us`.
    pub network_us: Option<f64>,
    /// The route, with the fabric.
    pub route: Option<Vec<String>>,
    /// Where `route` comes from, with the fabric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_source: Option<RouteSource>,
    /// `unreachable` or `failed`.
    pub status: PairStatus,
    /// Why, in words.
    pub reason: String,
    /// The same words.
    pub error: String,
    /// Always false.
    pub simulated: bool,
    /// What the mesh adds.
    #[serde(flatten)]
    pub mesh: MeshNotes,
}

impl NotRun {
    /// The pair `a`-`b` that did not run, `status` for `why`.
    pub fn new(a: End, b: End, status: PairStatus, why: String) -> NotRun {
        NotRun {
            a,
            b,
            latency_us: None,
            bandwidth_gbps: None,
            host_a_us: None,
            host_b_us: None,
            network_us: None,
            route: None,
            route_source: None,
            status,
            reason: why.clone(),
            error: why,
            simulated: false,
            mesh: MeshNotes::default(),
        }
    }
}

/// One pair of the answer: an agent's report, or a pair that did not run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum MeshPair {
    /// Did not run.
    NotRun(Box<NotRun>),
    /// The initiating agent's report.
    Ran(Box<PairReport>),
}

impl<'de> Deserialize<'de> for MeshPair {
    /// An agent's report always says where its network part comes from (`network_from`); a
    /// pair that did not run has no part. Both read leniently otherwise, so the key decides.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<MeshPair, D::Error> {
        let value = serde_json::Value::deserialize(d)?;
        let ran = value.get("network_from").is_some();
        let pair = if ran {
            serde_json::from_value(value).map(|p| MeshPair::Ran(Box::new(p)))
        } else {
            serde_json::from_value(value).map(|p| MeshPair::NotRun(Box::new(p)))
        };
        pair.map_err(serde::de::Error::custom)
    }
}

impl MeshPair {
    /// The initiator.
    pub fn a(&self) -> &End {
        match self {
            MeshPair::NotRun(p) => &p.a,
            MeshPair::Ran(p) => &p.a,
        }
    }

    /// The responder.
    pub fn b(&self) -> &End {
        match self {
            MeshPair::NotRun(p) => &p.b,
            MeshPair::Ran(p) => &p.b,
        }
    }

    /// Whether its figures came from a simulated host (an agent run with `--sim`); a pair
    /// that did not run has none.
    pub fn simulated(&self) -> bool {
        matches!(self, MeshPair::Ran(r) if r.simulated)
    }

    /// The pair's status.
    pub fn status(&self) -> PairStatus {
        match self {
            MeshPair::NotRun(p) => p.status,
            MeshPair::Ran(p) => p.status,
        }
    }

    /// Its figures: the parts measured, none for a pair that did not run.
    pub fn figures(&self) -> model::pair::PairFigures {
        match self {
            MeshPair::NotRun(p) => model::pair::PairFigures {
                a: p.a.clone(),
                b: p.b.clone(),
                latency_us: p.latency_us,
                host_a_us: p.host_a_us,
                host_b_us: p.host_b_us,
                network_us: p.network_us,
                network_noise_us: None,
                bandwidth_gbps: p.bandwidth_gbps,
                latency: None,
            },
            MeshPair::Ran(p) => p.figures(),
        }
    }

    /// Why it came to its status, in words: where a probe stopped, else its reason.
    pub fn why(&self) -> &str {
        match self {
            MeshPair::NotRun(p) => &p.error,
            MeshPair::Ran(p) => p.error.as_deref().unwrap_or(&p.reason),
        }
    }

    /// What the mesh adds to it.
    pub fn notes_mut(&mut self) -> &mut MeshNotes {
        match self {
            MeshPair::NotRun(p) => &mut p.mesh,
            MeshPair::Ran(p) => &mut p.mesh,
        }
    }

    /// Sets its route and where it comes from (`None`: not traced).
    pub fn set_route(&mut self, route: Option<Vec<String>>, source: Option<RouteSource>) {
        match self {
            MeshPair::NotRun(p) => {
                p.route = route;
                if source.is_some() {
                    p.route_source = source;
                }
            }
            MeshPair::Ran(p) => {
                p.route = route;
                if let Some(source) = source {
                    p.route_source = source;
                }
            }
        }
    }

    /// The agent's report, when the pair ran.
    pub fn report(&self) -> Option<&PairReport> {
        match self {
            MeshPair::NotRun(_) => None,
            MeshPair::Ran(p) => Some(p),
        }
    }

    /// The same, to judge it.
    pub fn report_mut(&mut self) -> Option<&mut PairReport> {
        match self {
            MeshPair::NotRun(_) => None,
            MeshPair::Ran(p) => Some(p),
        }
    }
}

/// `POST /api/mesh`'s answer (DESIGN 4.6, with fields added after its own).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeshAnswer {
    /// The pairs, each written with its keys in alphabetical order (the collector held them
    /// as JSON values before they were typed, and its answer keeps those bytes).
    #[serde(serialize_with = "sorted_keys")]
    pub pairs: Vec<MeshPair>,
    /// Always false.
    pub simulated: bool,
    /// The nodes.
    pub nodes: Vec<MeshNode>,
    /// What the pairs cover, in words.
    pub cover: String,
    /// With a fabric: what the pairs cover, cable by cable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<Coverage>,
    /// The budget.
    pub budget: Budget,
    /// Seconds the mesh took.
    pub elapsed_s: f64,
    /// With `record_baseline`: how many pairs were stored as their ends' baselines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baselines_recorded: Option<usize>,
}

/// Writes `pairs` through `serde_json::Value`, whose objects keep their keys sorted.
fn sorted_keys<S: serde::Serializer>(pairs: &[MeshPair], s: S) -> Result<S::Ok, S::Error> {
    serde_json::to_value(pairs)
        .map_err(serde::ser::Error::custom)?
        .serialize(s)
}
