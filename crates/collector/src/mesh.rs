//! `POST /api/mesh {"nodes": [..][, "duration_s", "rate", "rate_same_leaf", "bw_iterations",
//! "depth", "record_baseline"]}`: a real `hostping mesh` (DESIGN 4.6), for holders of a probe token (`--probe-tokens FILE`, the
//! agents' file format; without one the endpoint answers 403, mesh is off).
//!
//! The collector picks the pairs, asks the initiating agent of each to run it
//! (`POST /api/pair/probe` at its registered URL, [`crate::agents`], forwarding the caller's
//! token) one pair after the other, paced by the probe budget, and answers DESIGN 4.6's JSON
//! with `"simulated": false`. A host without a registered agent, an agent that cannot be
//! reached, or a peer that vanishes mid-probe is reported on its pairs (`unreachable` or
//! `failed`, with the error); the pairs already measured are kept.
//!
//! Each measured pair is judged against its recorded baseline, or stored as it with
//! `record_baseline` ([`crate::pair_baselines`]); without one it stays `uncertain`.
//!
//! # Which pairs, from the cabling
//! With `--fabric FILE` (an ibnetdiscover file whose CAs are described `HOST DEVICE`) the
//! collector finds each node's RNICs on the fabric by the device names its agent registered
//! and picks the pairs as the simulated mesh does ([`verdict::pairs::select`]): a ring on
//! every leaf, then cross-leaf pairs until every cable between the nodes is crossed and a
//! single bad cable is identifiable (deTector, NetBouncer); `coverage` says what is not.
//! Each pair carries its `route` and `route_back` ([`verdict::Cluster::route_labels`]): from
//! the subnet manager's tables with `--routes` (`route_source: "tables"`), else the
//! simulator's deterministic routing of the cabling, a reconstruction
//! (`route_source: "cabling"`).
//!
//! # Which pairs, without the cabling
//! Without `--fabric` the collector knows no fabric for these hosts, so it pairs the same RNIC index across
//! hosts (the rail: in a rail-optimised fabric RNIC r of every host sits on rail r's
//! leaves): per rail, a ring over the hosts that have that RNIC, in the order given, plus
//! chords across it (host i with host i + n/2) for four hosts or more, so that a pair
//! crosses the rail's spine level as well as its leaves. Never two RNICs of one host (that
//! hairpins through one leaf and says nothing about the network; issue 27). Without the
//! cabling the cover is per rail only: which cable a pair crosses, and whether a single bad
//! cable is identifiable (deTector, NetBouncer), is not known; the answer says so in
//! `cover`.
//!
//! # The budget
//! R-Pingmesh's open re-implementation sends 10 probes/s to a same-leaf target and 1/s to a
//! cross-leaf one (reference/job-verdict-anchors.md): a pair gets `rate_same_leaf` (10/s)
//! or `rate` (the cross-leaf rate, 1/s) times `duration_s` (10 s) latency probes; with no
//! fabric no leaf is known and every target is taken as cross-leaf. The pairs start
//! `duration_s / pairs` apart.

use crate::agents::{self, bearer, refuse};
use crate::pair_baselines::{self, BaselineError, End};
use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use deadpool_postgres::{Pool, PoolError};
use fleet_api::mesh::{Budget, Coverage, MeshAnswer, MeshNode as Node, MeshPair, NotRun};
use fleet_api::pair::{PairReport, PairStatus, ProbeRequest, RouteSource};
use fleet_api::tokens::Tokens;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};
use verdict::spec::CabledFabric;

use fleet_api::mesh::MAX_NODES;
/// The longest one pair may take, from the request to its initiator to its report (the
/// responder's loopback, the probe, the bandwidth phase under emulation).
pub const PAIR_WAIT: Duration = Duration::from_secs(300);
/// Why a real pair has no route.
pub const ROUTE_REASON: &str = "not traced: the collector knows no fabric for these hosts, and on RoCE there are no InfiniBand switch tables to read";
/// What a route from the cabling is.
pub const ROUTE_RECONSTRUCTED: &str = "reconstructed from the cabling: the simulator's deterministic routing of the fabric, as a subnet manager routes it; the tables programmed may differ (start the collector with --routes, a `fabric route --dump`)";
/// What the pairs cover, without the cabling.
pub const COVER: &str = "per rail only: without the cabling the collector pairs the same RNIC index across hosts (a ring per rail, plus chords for 4 hosts or more); which cables are crossed, and whether a bad one is identifiable, is not known";

/// The fabric the collector was started with (`--fabric FILE [--routes FILE]`).
#[derive(Clone, Debug)]
pub struct MeshFabric {
    /// The ibnetdiscover file, as given (it names the fabric in errors).
    pub file: String,
    /// Its cabling, CAs described `HOST DEVICE`.
    pub cabling: CabledFabric,
    /// Whether it is routed by the subnet manager's dumped tables (`--routes`) rather than
    /// by the simulator's deterministic routing of the cabling.
    pub from_tables: bool,
}

/// Who may ask for a mesh, where the agents are, and the fabric if one was given (the job
/// verdict's probes and routes use them too: crate::job).
#[derive(Clone)]
pub struct Access {
    pub(crate) pool: Pool,
    /// The probe tokens; `None`: mesh is off.
    probe_tokens: Option<Arc<Tokens>>,
    pub(crate) fabric: Option<Arc<MeshFabric>>,
}

/// A request refused: its status and why, for [`refuse`].
pub(crate) type Refusal = (StatusCode, String);

impl Access {
    /// Over the database, the probe tokens (`None`: mesh is off) and the fabric (`None`:
    /// pairs per rail).
    pub fn new(pool: Pool, probe_tokens: Option<Tokens>, fabric: Option<MeshFabric>) -> Access {
        Access {
            pool,
            probe_tokens: probe_tokens.map(Arc::new),
            fabric: fabric.map(Arc::new),
        }
    }

    /// The caller's probe token, or the refusal: 403 when mesh is off, 401 without a token
    /// of the probe-tokens file.
    pub(crate) fn authorize(&self, headers: &HeaderMap) -> Result<String, Refusal> {
        let Some(tokens) = &self.probe_tokens else {
            return Err((
                StatusCode::FORBIDDEN,
                "mesh is off: start the collector with --probe-tokens FILE".into(),
            ));
        };
        match bearer(headers).filter(|t| tokens.host_of(t).is_some()) {
            Some(token) => Ok(token.to_string()),
            None => Err((
                StatusCode::UNAUTHORIZED,
                "a mesh needs Authorization: Bearer TOKEN with a token of the collector's probe-tokens file".into(),
            )),
        }
    }

    /// Runs the mesh `request` asks for with `token`, or the refusal: 400 a request outside
    /// the contract or nodes the fabric cannot place, 404 unknown nodes, 503 the database.
    pub(crate) async fn measure(
        &self,
        request: &MeshRequest,
        token: String,
    ) -> Result<MeshAnswer, Refusal> {
        let budget = check_nodes(&request.nodes)
            .and_then(|()| request.budget().map_err(|why| why.to_string()))
            .map_err(|why| (StatusCode::BAD_REQUEST, why))?;
        let nodes = self.nodes(&request.nodes).await?;
        let plan = match &self.fabric {
            Some(fabric) => plan_on_fabric(fabric, &nodes)
                .map_err(|why| (StatusCode::BAD_REQUEST, why.to_string()))?,
            None => plan_per_rail(&nodes),
        };
        let mut answer = run(nodes, plan, budget, token).await;
        if request.record_baseline == Some(true) {
            let budget = answer.budget.asked();
            let now = model::time::unix_ms(std::time::SystemTime::now());
            let stored = pair_baselines::record(&self.pool, &mut answer.pairs, &budget, now)
                .await
                .map_err(database)?;
            answer.baselines_recorded = Some(stored);
        } else {
            self.judge_recorded(&request.nodes, &mut answer)
                .await
                .map_err(database)?;
        }
        Ok(answer)
    }

    /// The nodes named, as [`find_nodes`] finds them; or the refusal: 404 the nodes the
    /// collector does not know, 503 the database.
    async fn nodes(&self, names: &[String]) -> Result<Vec<Node>, Refusal> {
        match find_nodes(&self.pool, names).await {
            Ok(Ok(nodes)) => Ok(nodes),
            Ok(Err(unknown)) => Err(agents::unknown_refusal(&unknown)),
            Err(e) => Err(database(e)),
        }
    }

    /// Judges each pair of `answer` against its recorded baseline (`crate::pair_baselines`)
    /// at the Abnormal_th of its hosts' agents; a pair without one says how to record one.
    async fn judge_recorded(
        &self,
        nodes: &[String],
        answer: &mut MeshAnswer,
    ) -> Result<(), BaselineError> {
        let keys: Vec<pair_baselines::Key> = answer
            .pairs
            .iter()
            .filter_map(pair_baselines::key)
            .collect();
        let baselines = pair_baselines::load(&self.pool, &keys).await?;
        let by_host = pair_baselines::abnormal_th(&self.pool, nodes).await?;
        for pair in &mut answer.pairs {
            match pair_baselines::key(pair).map(|k| (baselines.get(&k), k)) {
                Some((Some(baseline), (a, b))) => {
                    let th = analyze::pair::pair_th(&by_host, &a.host, &b.host);
                    pair_baselines::judge(pair, baseline, th);
                }
                _ => pair_baselines::not_judged(pair),
            }
        }
        Ok(())
    }

    /// Runs the chosen `pairs` of nodes placed on the collector's fabric (`placed`, a job
    /// verdict's follow-up pairs: [`verdict::follow_up::plan`]) on the default budget, with
    /// `token`; or the refusal, as [`Access::measure`].
    pub(crate) async fn measure_pairs(
        &self,
        placed: &verdict::Cluster,
        pairs: &[(verdict::RnicPort, verdict::RnicPort)],
        token: String,
    ) -> Result<MeshAnswer, Refusal> {
        let mut names: Vec<String> = Vec::new();
        for &(a, b) in pairs {
            for p in [a, b] {
                let name = &placed.hosts[p.host].name;
                if !names.contains(name) {
                    names.push(name.clone());
                }
            }
        }
        let budget = MeshRequest::of_nodes(names.clone())
            .budget()
            .map_err(|why| (StatusCode::BAD_REQUEST, why.to_string()))?;
        let nodes = self.nodes(&names).await?;
        let from_tables = self.fabric.as_ref().is_some_and(|f| f.from_tables);
        let plan = Plan {
            pairs: pairs
                .iter()
                .map(|&(a, b)| planned_on(placed, a, b))
                .collect(),
            cover: "follow-up pairs: each crosses one candidate cable and not the others".into(),
            coverage: None,
            route_source: Some(if from_tables {
                RouteSource::Tables
            } else {
                RouteSource::Cabling
            }),
        };
        let mut answer = run(nodes, plan, budget, token).await;
        self.judge_recorded(&names, &mut answer)
            .await
            .map_err(database)?;
        Ok(answer)
    }
}

/// The database did not answer: 503.
fn database(why: impl std::fmt::Display) -> Refusal {
    (StatusCode::SERVICE_UNAVAILABLE, format!("database: {why}"))
}

/// Why the nodes of a mesh could not be found or placed on the fabric, or a recorded
/// budget read.
#[derive(Debug, thiserror::Error)]
pub enum MeshError {
    /// The agents' registrations could not be read.
    #[error(transparent)]
    Agents(#[from] crate::agents::LoadError),
    /// No connection from the pool (the database is down, or every connection busy).
    #[error("{0}")]
    Pool(#[from] PoolError),
    /// A statement failed or the connection broke.
    #[error("{}", crate::server_words(.0))]
    Database(#[from] tokio_postgres::Error),
    /// On the fabric a node's RNICs are found by the devices its agent registered: it has
    /// no agent.
    #[error("{host} registered no agent: on the fabric its RNICs are found by the devices its agent registers")]
    NoAgent {
        /// The node.
        host: String,
    },
    /// Its agent registered no device names.
    #[error("{host}'s agent registered no device names (a simulated host has none): on the fabric an RNIC is found by its device")]
    NoDevices {
        /// The node.
        host: String,
    },
    /// The fabric does not have the nodes' devices.
    #[error("{0}")]
    Fabric(#[from] verdict::PlanError),
}

/// The route, over [`Access`].
pub fn routes(access: Access) -> Router {
    Router::new()
        .route("/api/mesh", post(mesh))
        .with_state(access)
}

/// `POST /api/mesh`'s body: the contract's.
pub(crate) use fleet_api::mesh::MeshRequest;

/// The pairs for hosts with their RNIC ids, hosts in the order given: per rail (RNIC id), a
/// ring over the hosts that have it, plus chords (i, i + n/2) for n >= 4; each unordered pair
/// once, `a` the earlier host in the ring. Never two RNICs of one host.
pub fn choose_pairs(hosts: &[(String, Vec<String>)]) -> Vec<(End, End)> {
    let mut rails: BTreeMap<(u32, String), Vec<&str>> = BTreeMap::new();
    for (host, rnics) in hosts {
        for rnic in rnics {
            let index = rnic
                .strip_prefix("rnic")
                .and_then(|n| n.parse().ok())
                .unwrap_or(u32::MAX);
            let members = rails.entry((index, rnic.clone())).or_default();
            if !members.contains(&host.as_str()) {
                members.push(host.as_str());
            }
        }
    }
    let mut pairs = Vec::new();
    for ((_, rnic), members) in rails {
        let n = members.len();
        let mut seen = BTreeSet::new();
        let ring = (0..n).map(|i| (i, (i + 1) % n));
        let chords = (0..n).filter(|_| n >= 4).map(|i| (i, (i + n / 2) % n));
        for (i, j) in ring.chain(chords) {
            if i == j || !seen.insert((i.min(j), i.max(j))) {
                continue;
            }
            let end = |k: usize| End {
                host: members[k].to_string(),
                rnic: rnic.clone(),
            };
            pairs.push((end(i), end(j)));
        }
    }
    pairs
}

/// An RNIC's own cable, named by its host end (`node01/rxe_a`; DESIGN 4.6: a cable is named
/// by either end): by its device where its agent registered one, else by its RNIC id.
/// Without a fabric nothing else of a pair's way is known, but each RNIC still has its
/// cable, which every pair from that RNIC crosses.
pub fn rnic_cable(host: &str, device: &str) -> String {
    format!("{host}/{device}")
}

/// A node's RNICs' own cables, each named by its host end ([`rnic_cable`]): by device
/// where its agent registered them.
pub(crate) fn node_cables(node: &Node) -> Vec<String> {
    node.rnics
        .iter()
        .enumerate()
        .map(|(i, rnic)| {
            let name = node.devices.get(i).unwrap_or(rnic);
            rnic_cable(&node.host, name)
        })
        .collect()
}

async fn mesh(
    State(access): State<Access>,
    headers: HeaderMap,
    request: Result<Json<MeshRequest>, JsonRejection>,
) -> Response {
    let token = match access.authorize(&headers) {
        Ok(token) => token,
        Err((code, why)) => return refuse(code, why),
    };
    let request = match request {
        Ok(Json(r)) => r,
        Err(e) => return refuse(StatusCode::BAD_REQUEST, e.body_text()),
    };
    match access.measure(&request, token).await {
        Ok(answer) => Json(answer).into_response(),
        Err((code, why)) => refuse(code, why),
    }
}

/// One pair to probe, with what the fabric says of it.
#[derive(Debug, Clone, PartialEq)]
struct Planned {
    a: End,
    b: End,
    /// Whether both ends hang off one leaf; `None` without a fabric.
    same_leaf: Option<bool>,
    /// Its route and route back, DESIGN 4.6's labels; `None` without a fabric.
    routes: Option<(Vec<String>, Vec<String>)>,
}

/// The pairs and what they cover.
#[derive(Debug)]
struct Plan {
    pairs: Vec<Planned>,
    cover: String,
    coverage: Option<Coverage>,
    /// Where the routes come from (`tables`, `cabling`); `None` without a fabric.
    route_source: Option<RouteSource>,
}

impl Planned {
    /// Its latency probes: the same-leaf rate's where both ends share a leaf, else the
    /// cross-leaf rate's (R-Pingmesh).
    fn probes(&self, budget: &Budget) -> u32 {
        match self.same_leaf {
            Some(true) => budget.latency_probes_same_leaf_pair,
            _ => budget.latency_probes_per_pair,
        }
    }
}

/// Without a fabric: per rail ([`choose_pairs`]), no route.
fn plan_per_rail(nodes: &[Node]) -> Plan {
    let members: Vec<(String, Vec<String>)> = nodes
        .iter()
        .map(|n| (n.host.clone(), n.rnics.clone()))
        .collect();
    Plan {
        pairs: choose_pairs(&members)
            .into_iter()
            .map(|(a, b)| Planned {
                a,
                b,
                same_leaf: None,
                routes: None,
            })
            .collect(),
        cover: COVER.to_string(),
        coverage: None,
        route_source: None,
    }
}

/// The nodes placed on the fabric, each node's RNICs found by the devices its agent
/// registered; or why they cannot be (a node without an agent or device names, a node or
/// device not on it).
pub(crate) fn place_on_fabric(
    fabric: &MeshFabric,
    nodes: &[Node],
) -> Result<verdict::Cluster, MeshError> {
    let mut hosts = Vec::with_capacity(nodes.len());
    for node in nodes {
        if node.agent_url.is_none() {
            return Err(MeshError::NoAgent {
                host: node.host.clone(),
            });
        }
        if node.devices.len() != node.rnics.len() || node.devices.is_empty() {
            return Err(MeshError::NoDevices {
                host: node.host.clone(),
            });
        }
        let rnics = node.rnics.iter().cloned().zip(node.devices.iter().cloned());
        hosts.push((node.host.clone(), rnics.collect()));
    }
    Ok(verdict::spec::cabled_by_device(
        &fabric.file,
        &hosts,
        fabric.cabling.clone(),
    )?)
}

/// On the fabric: the nodes placed ([`place_on_fabric`]), the pairs chosen as the simulated
/// mesh chooses them ([`verdict::pairs::select`]).
fn plan_on_fabric(fabric: &MeshFabric, nodes: &[Node]) -> Result<Plan, MeshError> {
    let placed = place_on_fabric(fabric, nodes)?;
    let all: Vec<usize> = (0..placed.hosts.len()).collect();
    let selection = verdict::pairs::select(&placed, &all);
    let pairs = selection
        .pairs
        .iter()
        .map(|&(a, b)| planned_on(&placed, a, b))
        .collect();
    let groups = selection.not_identifiable.len();
    let cover = format!(
        "every cable between the nodes on {}: {} cables crossed; {}",
        fabric.file,
        selection.cables,
        if groups == 0 {
            "a single bad cable is identifiable".to_string()
        } else {
            format!("{groups} groups of cables crossed by the same pairs, a bad one among them not identifiable (coverage)")
        }
    );
    Ok(Plan {
        pairs,
        cover,
        coverage: Some(Coverage {
            cables: selection.cables,
            not_identifiable: selection
                .not_identifiable
                .iter()
                .map(|g| g.iter().map(|&c| placed.cable_label(c)).collect())
                .collect(),
        }),
        route_source: Some(if fabric.from_tables {
            RouteSource::Tables
        } else {
            RouteSource::Cabling
        }),
    })
}

/// The pair `a`-`b` of the nodes placed on the fabric, with its routes both ways.
fn planned_on(placed: &verdict::Cluster, a: verdict::RnicPort, b: verdict::RnicPort) -> Planned {
    let topology = &placed.fabric.topology;
    let end = |p: verdict::RnicPort| End {
        host: placed.hosts[p.host].name.clone(),
        rnic: placed.hosts[p.host].rnics[p.rnic].to_string(),
    };
    Planned {
        a: end(a),
        b: end(b),
        same_leaf: Some(placed.same_leaf(a, b)),
        routes: Some((
            placed.route_labels(topology, a, b),
            placed.route_labels(topology, b, a),
        )),
    }
}

/// Sets what the plan knows of a pair on its report: its route (or why it has none), and
/// with a fabric whether it is same-leaf; and the latency probes it was given.
fn annotate(pair: &mut MeshPair, planned: &Planned, plan: &Plan, probes: u32) {
    match (&planned.routes, plan.route_source) {
        (Some((there, back)), Some(source)) => {
            pair.set_route(Some(there.clone()), Some(source));
            pair.notes_mut().route_back = Some(back.clone());
            if source == RouteSource::Cabling {
                pair.notes_mut().route_reason = Some(ROUTE_RECONSTRUCTED.to_string());
            }
        }
        _ => {
            pair.set_route(None, None);
            pair.notes_mut().route_reason = Some(ROUTE_REASON.to_string());
        }
    }
    let notes = pair.notes_mut();
    if let Some(same_leaf) = planned.same_leaf {
        notes.same_leaf = Some(same_leaf);
    }
    notes.probes = Some(probes);
}

/// The nodes: at least two, each once, at most [`MAX_NODES`].
fn check_nodes(nodes: &[String]) -> Result<(), String> {
    if nodes.len() < 2 {
        return Err("nodes: a mesh needs two nodes or more".into());
    }
    if nodes.len() > MAX_NODES {
        return Err(format!("nodes: {} is more than {MAX_NODES}", nodes.len()));
    }
    let mut seen = BTreeSet::new();
    match nodes.iter().find(|n| !seen.insert(n.as_str())) {
        Some(twice) => Err(format!("nodes: {twice} is given twice")),
        None => Ok(()),
    }
}

/// Each node's agent, or for a host without one the RNICs of its latest run; `Err` of the
/// nodes the collector does not know at all.
pub(crate) async fn find_nodes(
    pool: &Pool,
    names: &[String],
) -> Result<Result<Vec<Node>, Vec<String>>, MeshError> {
    let registered = agents::load(pool, Some(names)).await?;
    let client = pool.get().await?;
    let mut nodes = Vec::new();
    let mut unknown = Vec::new();
    for name in names {
        if let Some(agent) = registered.iter().find(|a| &a.host == name) {
            nodes.push(Node {
                host: name.clone(),
                agent_url: Some(agent.agent_url.clone()),
                rnics: agent.rnics.clone(),
                devices: agent.devices.clone(),
                error: None,
            });
            continue;
        }
        let row = client
            .query_opt(
                "SELECT ARRAY(SELECT DISTINCT r FROM run_paths p, unnest(p.rnic) r
                              WHERE p.run_id = h.latest_run_id ORDER BY r)
                 FROM hosts h WHERE h.name = $1",
                &[name],
            )
            .await?;
        match row {
            Some(row) => nodes.push(Node {
                host: name.clone(),
                agent_url: None,
                rnics: row.get(0),
                devices: Vec::new(),
                error: Some(format!(
                    "{name} registered no agent URL (start its agent with --collector and --probe-tokens)"
                )),
            }),
            None => unknown.push(name.clone()),
        }
    }
    Ok(if unknown.is_empty() {
        Ok(nodes)
    } else {
        Err(unknown)
    })
}

/// How long the collector waits for an agent to answer `GET /api/status` before the pairs.
const REACH_WAIT: Duration = Duration::from_secs(5);

/// Marks each node whose agent does not answer `GET /api/status` within [`REACH_WAIT`], so
/// that its pairs are reported `unreachable` at once rather than after its peer has
/// measured its own part.
async fn reach(nodes: &mut [Node]) {
    for node in nodes.iter_mut().filter(|n| n.error.is_none()) {
        let Some(url) = node.agent_url.clone() else {
            continue;
        };
        let status_url = format!("{}/api/status", url.trim_end_matches('/'));
        let answered = tokio::task::spawn_blocking(move || {
            let client = fleet_api::post::client(ureq::tls::TlsConfig::default());
            client
                .get(&status_url)
                .config()
                .timeout_global(Some(REACH_WAIT))
                .build()
                .call()
                .map_err(|e| format!("{status_url}: {e}"))
                .and_then(|r| match r.status().as_u16() {
                    200 => Ok(()),
                    code => Err(format!("{status_url}: {code}")),
                })
        })
        .await
        .unwrap_or_else(|e| Err(e.to_string()));
        if let Err(why) = answered {
            node.error = Some(format!("{}'s agent is unreachable: {why}", node.host));
        }
    }
}

/// Runs the pairs one after the other, paced, and gathers the answer.
async fn run(mut nodes: Vec<Node>, plan: Plan, mut budget: Budget, token: String) -> MeshAnswer {
    let started = Instant::now();
    budget.latency_probes = plan
        .pairs
        .iter()
        .map(|p| u64::from(p.probes(&budget)))
        .sum();
    reach(&mut nodes).await;
    let spacing = Duration::from_secs_f64(budget.duration_s / plan.pairs.len().max(1) as f64);
    let mut answers = Vec::with_capacity(plan.pairs.len());
    for (i, planned) in plan.pairs.iter().enumerate() {
        let (a, b) = (&planned.a, &planned.b);
        let probes = planned.probes(&budget);
        tokio::time::sleep_until((started + spacing * i as u32).into()).await;
        let node = |host: &str| nodes.iter().position(|n| n.host == host).expect("a node");
        let (ia, ib) = (node(&a.host), node(&b.host));
        let down = [ia, ib]
            .iter()
            .find_map(|&k| nodes[k].error.clone().map(|why| (k, why)));
        let urls = (nodes[ia].agent_url.clone(), nodes[ib].agent_url.clone());
        let mut answer = match (down, urls) {
            (None, (Some(url_a), Some(url_b))) => {
                match ask(&url_a, &url_b, a, b, probes, &budget, &token).await {
                    Ok(report) => report,
                    Err((end, why)) => {
                        nodes[if end == 0 { ia } else { ib }].error = Some(why.clone());
                        not_run(a, b, PairStatus::Unreachable, why)
                    }
                }
            }
            (down, _) => {
                let why = down.map_or_else(|| "no agent URL".to_string(), |(_, why)| why);
                not_run(a, b, PairStatus::Unreachable, why)
            }
        };
        annotate(&mut answer, planned, &plan, probes);
        answers.push(answer);
    }
    MeshAnswer {
        pairs: answers,
        simulated: false,
        nodes,
        cover: plan.cover,
        coverage: plan.coverage,
        budget,
        elapsed_s: started.elapsed().as_secs_f64(),
        baselines_recorded: None,
    }
}

/// A pair that did not run.
fn not_run(a: &End, b: &End, status: PairStatus, why: String) -> MeshPair {
    let end = |e: &End| fleet_api::pair::End {
        host: e.host.clone(),
        rnic: e.rnic.clone(),
        device: None,
    };
    MeshPair::NotRun(Box::new(NotRun::new(end(a), end(b), status, why)))
}

/// Asks `a`'s agent to probe `b`: the pair's report, or which end (0 `a`, 1 `b`) could not
/// be reached and why. An answer other than a report is a `failed` pair.
async fn ask(
    url_a: &str,
    url_b: &str,
    a: &End,
    b: &End,
    probes: u32,
    budget: &Budget,
    token: &str,
) -> Result<MeshPair, (usize, String)> {
    let probe_url = format!("{}/api/pair/probe", url_a.trim_end_matches('/'));
    let body = ProbeRequest {
        rnic: a.rnic.clone(),
        peer: url_b.to_string(),
        peer_rnic: b.rnic.clone(),
        iterations: Some(probes),
        size: None,
        bw_iterations: Some(budget.bw_iterations),
        bw_size: None,
        depth: budget.depth,
        timeout_ms: None,
    };
    let token = token.to_string();
    let url = probe_url.clone();
    let posted = tokio::task::spawn_blocking(move || {
        let client = fleet_api::post::client(ureq::tls::TlsConfig::default());
        fleet_api::post::ask(&client, &url, &token, &body, PAIR_WAIT, 4 << 20)
            .map_err(|e| e.to_string())
    })
    .await
    .unwrap_or_else(|e| Err(format!("the request failed: {e}")));
    let (status, text) = posted.map_err(|e| (0, format!("{}'s agent: {e}", a.host)))?;
    match (status, serde_json::from_str::<PairReport>(&text)) {
        (200, Ok(report)) => {
            if report.status == PairStatus::Unreachable {
                let why = report.error.as_deref().unwrap_or("unreachable");
                return Err((1, format!("{}'s agent at {url_b}: {why}", b.host)));
            }
            Ok(MeshPair::Ran(Box::new(report)))
        }
        (status, _) => {
            let words = fleet_api::post::error_words(&text);
            Ok(not_run(
                a,
                b,
                PairStatus::Failed,
                format!("{status} from {probe_url}: {words}"),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;

    fn hosts(spec: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
        spec.iter()
            .map(|(h, r)| (h.to_string(), r.iter().map(|s| s.to_string()).collect()))
            .collect()
    }

    fn names(pairs: &[(End, End)]) -> Vec<String> {
        pairs
            .iter()
            .map(|(a, b)| format!("{}/{}-{}/{}", a.host, a.rnic, b.host, b.rnic))
            .collect()
    }

    #[test]
    fn two_hosts_of_one_rnic_make_one_pair_and_three_make_a_ring() {
        let two = choose_pairs(&hosts(&[("node01", &["rnic0"]), ("node02", &["rnic0"])]));
        assert_eq!(names(&two), ["node01/rnic0-node02/rnic0"]);
        let three = choose_pairs(&hosts(&[
            ("node01", &["rnic0"]),
            ("node02", &["rnic0"]),
            ("node03", &["rnic0", "rnic1"]),
        ]));
        // rnic1 is node03's alone: no pair (never two RNICs of one host).
        assert_eq!(
            names(&three),
            [
                "node01/rnic0-node02/rnic0",
                "node02/rnic0-node03/rnic0",
                "node03/rnic0-node01/rnic0"
            ]
        );
    }

    #[test]
    fn every_rail_is_probed_and_four_hosts_get_chords() {
        let four: Vec<(&str, &[&str])> = ["a", "b", "c", "d"]
            .iter()
            .map(|h| (*h, &["rnic0", "rnic1"][..]))
            .collect();
        let pairs = choose_pairs(&hosts(&four));
        // Per rail: 4 ring pairs and 2 chords (a-c, b-d).
        assert_eq!(pairs.len(), 12);
        assert!(names(&pairs).contains(&"a/rnic1-c/rnic1".to_string()));
        assert!(names(&pairs).contains(&"b/rnic0-d/rnic0".to_string()));
        // rnic10 sorts after rnic2 (by index, not as text).
        let rails = choose_pairs(&hosts(&[
            ("a", &["rnic10", "rnic2"]),
            ("b", &["rnic2", "rnic10"]),
        ]));
        assert_eq!(names(&rails), ["a/rnic2-b/rnic2", "a/rnic10-b/rnic10"]);
    }

    #[test]
    fn without_a_fabric_each_rnic_is_its_own_cable_named_by_its_host_end() {
        let node = |devices: &[&str]| Node {
            host: "node01".into(),
            agent_url: None,
            rnics: vec!["rnic0".into(), "rnic1".into()],
            devices: devices.iter().map(|d| d.to_string()).collect(),
            error: None,
        };
        assert_eq!(
            node_cables(&node(&["rxe_a", "rxe_b"])),
            ["node01/rxe_a", "node01/rxe_b"]
        );
        // No device registered (a simulated host, a host without an agent): its RNIC id.
        assert_eq!(node_cables(&node(&[])), ["node01/rnic0", "node01/rnic1"]);
    }

    #[test]
    fn nodes_must_be_two_or_more_each_once() {
        let list = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(check_nodes(&list(&["a", "b"])).is_ok());
        assert_eq!(
            check_nodes(&list(&["a"])).unwrap_err(),
            "nodes: a mesh needs two nodes or more"
        );
        assert_eq!(
            check_nodes(&list(&["a", "b", "a"])).unwrap_err(),
            "nodes: a is given twice"
        );
    }

    #[test]
    fn the_budget_gives_each_pair_rate_times_duration_probes() {
        let request = |d: Option<f64>, r: Option<f64>| MeshRequest {
            nodes: vec![],
            duration_s: d,
            rate: r,
            rate_same_leaf: None,
            bw_iterations: None,
            depth: None,
            record_baseline: None,
        };
        let b = request(None, None).budget().unwrap();
        assert_eq!((b.latency_probes_per_pair, b.bw_iterations), (10, 1000));
        assert_eq!(
            request(Some(10.0), Some(100.0))
                .budget()
                .unwrap()
                .latency_probes_per_pair,
            1000
        );
        assert!(request(Some(0.0), None)
            .budget()
            .unwrap_err()
            .to_string()
            .starts_with("duration_s 0"));
        assert!(request(None, Some(f64::NAN))
            .budget()
            .unwrap_err()
            .to_string()
            .starts_with("rate NaN"));
    }

    #[test]
    fn a_pair_says_where_its_route_comes_from_and_gets_its_leafs_probes() {
        let end = |host: &str| End {
            host: host.into(),
            rnic: "rnic0".into(),
        };
        let planned = |same_leaf, routes| Planned {
            a: end("a"),
            b: end("b"),
            same_leaf,
            routes,
        };
        let plan = |route_source: Option<&str>| Plan {
            pairs: vec![],
            cover: String::new(),
            coverage: None,
            route_source: route_source.map(|s| match s {
                "tables" => RouteSource::Tables,
                _ => RouteSource::Cabling,
            }),
        };
        // A pair as it starts, its JSON once annotated.
        let bare = |route: Option<Vec<String>>| {
            let mut pair = not_run(&end("a"), &end("b"), PairStatus::Failed, String::new());
            pair.set_route(route, None);
            pair
        };
        let json = |pair: &MeshPair| serde_json::to_value(pair).unwrap();
        let route = (
            vec!["L1/1".to_string(), "L1/2".to_string()],
            vec!["L1/2".to_string(), "L1/1".to_string()],
        );
        let budget = MeshRequest {
            duration_s: Some(2.0),
            ..MeshRequest::of_nodes(vec![])
        }
        .budget()
        .unwrap();
        // R-Pingmesh: 10/s to a same-leaf target, 1/s across; no leaf known: across.
        let near = planned(Some(true), Some(route.clone()));
        let far = planned(Some(false), Some(route.clone()));
        let unknown = planned(None, None);
        assert_eq!(
            [
                near.probes(&budget),
                far.probes(&budget),
                unknown.probes(&budget)
            ],
            [20, 2, 2]
        );

        let mut pair = bare(None);
        annotate(&mut pair, &near, &plan(Some("tables")), 20);
        let report = json(&pair);
        assert_eq!(report["route"], Value::from(vec!["L1/1", "L1/2"]));
        assert_eq!(report["route_back"], Value::from(vec!["L1/2", "L1/1"]));
        assert_eq!(report["route_source"], "tables");
        assert!(report.get("route_reason").is_none(), "{report}");
        assert_eq!(
            (report["same_leaf"].clone(), report["probes"].clone()),
            (Value::from(true), Value::from(20))
        );

        let mut pair = bare(None);
        annotate(&mut pair, &far, &plan(Some("cabling")), 2);
        let report = json(&pair);
        assert_eq!(report["route_source"], "cabling");
        assert_eq!(report["route_reason"], ROUTE_RECONSTRUCTED);

        let mut pair = bare(Some(vec!["kept?".to_string()]));
        annotate(&mut pair, &unknown, &plan(None), 2);
        let report = json(&pair);
        assert_eq!(report["route"], Value::Null);
        assert_eq!(report["route_reason"], ROUTE_REASON);
        assert!(report.get("same_leaf").is_none() && report.get("route_source").is_none());
    }

    proptest! {
        #[test]
        fn pairs_join_two_hosts_on_one_rail_and_cover_every_host_of_a_shared_rail(
            rails in proptest::collection::vec(proptest::collection::btree_set(0u32..4, 0..4), 0..12)
        ) {
            let spec: Vec<(String, Vec<String>)> = rails
                .iter()
                .enumerate()
                .map(|(i, r)| (format!("h{i}"), r.iter().map(|k| format!("rnic{k}")).collect()))
                .collect();
            let pairs = choose_pairs(&spec);
            let mut seen = BTreeSet::new();
            for (a, b) in &pairs {
                prop_assert_ne!(&a.host, &b.host);
                prop_assert_eq!(&a.rnic, &b.rnic);
                let key = (a.rnic.clone(), a.host.clone().min(b.host.clone()), a.host.clone().max(b.host.clone()));
                prop_assert!(seen.insert(key), "a pair twice");
            }
            // Every RNIC whose rail another host shares is in some pair.
            for (host, rnics) in &spec {
                for rnic in rnics {
                    let shared = spec.iter().any(|(h, r)| h != host && r.contains(rnic));
                    let probed = pairs.iter().any(|(a, b)| &a.rnic == rnic && (&a.host == host || &b.host == host));
                    prop_assert_eq!(shared, probed, "{}/{}", host, rnic);
                }
            }
        }
    }
}
