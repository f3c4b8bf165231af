//! `POST /api/mesh {"nodes": [..][, "duration_s", "rate", "bw_iterations"]}`: a real
//! `hostping mesh` (DESIGN 4.6), for holders of a probe token (`--probe-tokens FILE`, the
//! agents' file format; without one the endpoint answers 403, mesh is off).
//!
//! The collector picks the pairs, asks the initiating agent of each to run it
//! (`POST /api/pair/probe` at its registered URL, [`crate::agents`], forwarding the caller's
//! token) one pair after the other, paced by the probe budget, and answers DESIGN 4.6's JSON
//! with `"simulated": false`. A host without a registered agent, an agent that cannot be
//! reached, or a peer that vanishes mid-probe is reported on its pairs (`unreachable` or
//! `failed`, with the error); the pairs already measured are kept.
//!
//! # Which pairs, without the cabling
//! The collector knows no fabric for these hosts, so it pairs the same RNIC index across
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
//! cross-leaf one (reference/job-verdict-anchors.md); with no leaves known every target is
//! taken as cross-leaf: `rate` (1/s) over `duration_s` (10 s) gives each pair
//! `rate x duration_s` latency probes, and the pairs start `duration_s / pairs` apart.

use crate::agents::{self, bearer, refuse};
use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use deadpool_postgres::Pool;
use fleet_api::tokens::Tokens;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The most nodes one mesh may name.
pub const MAX_NODES: usize = 4096;
/// The longest one pair may take, from the request to its initiator to its report (the
/// responder's loopback, the probe, the bandwidth phase under emulation).
const PAIR_WAIT: Duration = Duration::from_secs(300);
/// Why a real pair has no route.
pub const ROUTE_REASON: &str = "not traced: the collector knows no fabric for these hosts, and on RoCE there are no InfiniBand switch tables to read";
/// What the pairs cover, without the cabling.
pub const COVER: &str = "per rail only: without the cabling the collector pairs the same RNIC index across hosts (a ring per rail, plus chords for 4 hosts or more); which cables are crossed, and whether a bad one is identifiable, is not known";

/// Who may ask for a mesh, and where the agents are.
#[derive(Clone)]
struct Access {
    pool: Pool,
    /// The probe tokens; `None`: mesh is off.
    probe_tokens: Option<Arc<Tokens>>,
}

/// The route, over the database and the probe tokens (`None`: mesh is off).
pub fn routes(pool: Pool, probe_tokens: Option<Tokens>) -> Router {
    Router::new()
        .route("/api/mesh", post(mesh))
        .with_state(Access {
            pool,
            probe_tokens: probe_tokens.map(Arc::new),
        })
}

/// `POST /api/mesh`'s body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MeshRequest {
    nodes: Vec<String>,
    duration_s: Option<f64>,
    rate: Option<f64>,
    bw_iterations: Option<u64>,
    depth: Option<u32>,
}

/// The budget, as asked and as spent.
#[derive(Debug, Clone, Serialize)]
struct Budget {
    /// Seconds the pairs are spread over.
    duration_s: f64,
    /// Latency probes a second per target (every target taken as cross-leaf).
    rate: f64,
    /// Latency probes each pair sends.
    latency_probes_per_pair: u32,
    /// Messages of each pair's bandwidth phase.
    bw_iterations: u64,
    /// Messages outstanding in it (the agent's default when not given).
    #[serde(skip_serializing_if = "Option::is_none")]
    depth: Option<u32>,
}

impl MeshRequest {
    /// The budget, or why the request is outside the contract.
    fn budget(&self) -> Result<Budget, String> {
        let duration_s = self.duration_s.unwrap_or(10.0);
        let rate = self.rate.unwrap_or(1.0);
        if !(duration_s > 0.0 && duration_s <= 86_400.0) {
            return Err(format!("duration_s {duration_s} is not in (0, 86400]"));
        }
        if !(rate > 0.0 && rate <= 10_000.0) {
            return Err(format!("rate {rate} is not in (0, 10000]"));
        }
        let bw_iterations = self.bw_iterations.unwrap_or(1000);
        if bw_iterations > model::limits::ITERATIONS {
            return Err(format!(
                "bw_iterations {bw_iterations} is above {}",
                model::limits::ITERATIONS
            ));
        }
        let probes = (rate * duration_s).round().max(1.0);
        if probes > model::limits::ITERATIONS as f64 {
            return Err(format!(
                "rate x duration_s is {probes} probes a pair, above {}",
                model::limits::ITERATIONS
            ));
        }
        Ok(Budget {
            duration_s,
            rate,
            latency_probes_per_pair: probes as u32,
            bw_iterations,
            depth: self.depth,
        })
    }
}

/// One end of a pair.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct End {
    /// The host's fleet name.
    pub host: String,
    /// Its RNIC id.
    pub rnic: String,
}

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

/// One node as the mesh found it.
#[derive(Debug, Clone, Serialize)]
struct Node {
    host: String,
    /// Its agent's API; `None`: no agent registered.
    agent_url: Option<String>,
    /// Its RNIC ids: the agent's, or those of its latest run without one.
    rnics: Vec<String>,
    /// Why its pairs could not run, when they could not.
    error: Option<String>,
}

/// The answer (DESIGN 4.6, with fields added after its own).
#[derive(Debug, Serialize)]
struct MeshAnswer {
    pairs: Vec<Value>,
    simulated: bool,
    nodes: Vec<Node>,
    cover: &'static str,
    budget: Budget,
    /// Seconds the mesh took.
    elapsed_s: f64,
}

async fn mesh(
    State(access): State<Access>,
    headers: HeaderMap,
    request: Result<Json<MeshRequest>, JsonRejection>,
) -> Response {
    let Some(tokens) = &access.probe_tokens else {
        return refuse(
            StatusCode::FORBIDDEN,
            "mesh is off: start the collector with --probe-tokens FILE".into(),
        );
    };
    let Some(token) = bearer(&headers).filter(|t| tokens.host_of(t).is_some()) else {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "a mesh needs Authorization: Bearer TOKEN with a token of the collector's probe-tokens file".into(),
        );
    };
    let token = token.to_string();
    let request = match request {
        Ok(Json(r)) => r,
        Err(e) => return refuse(StatusCode::BAD_REQUEST, e.body_text()),
    };
    let budget = match check_nodes(&request.nodes).and_then(|()| request.budget()) {
        Ok(b) => b,
        Err(why) => return refuse(StatusCode::BAD_REQUEST, why),
    };
    let nodes = match find_nodes(&access.pool, &request.nodes).await {
        Ok(Ok(nodes)) => nodes,
        Ok(Err(unknown)) => {
            return refuse(
                StatusCode::NOT_FOUND,
                format!(
                    "unknown node{}: {} (no agent registered it and it sent no run)",
                    if unknown.len() > 1 { "s" } else { "" },
                    unknown.join(", ")
                ),
            )
        }
        Err(e) => return refuse(StatusCode::SERVICE_UNAVAILABLE, format!("database: {e}")),
    };
    Json(run(nodes, budget, token).await).into_response()
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
async fn find_nodes(
    pool: &Pool,
    names: &[String],
) -> Result<Result<Vec<Node>, Vec<String>>, String> {
    let registered = agents::load(pool, Some(names)).await?;
    let client = pool.get().await.map_err(|e| e.to_string())?;
    let mut nodes = Vec::new();
    let mut unknown = Vec::new();
    for name in names {
        if let Some(agent) = registered.iter().find(|a| &a.host == name) {
            nodes.push(Node {
                host: name.clone(),
                agent_url: Some(agent.agent_url.clone()),
                rnics: agent.rnics.clone(),
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
            .await
            .map_err(|e| crate::server_words(&e))?;
        match row {
            Some(row) => nodes.push(Node {
                host: name.clone(),
                agent_url: None,
                rnics: row.get(0),
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
async fn run(mut nodes: Vec<Node>, budget: Budget, token: String) -> MeshAnswer {
    let started = Instant::now();
    reach(&mut nodes).await;
    let members: Vec<(String, Vec<String>)> = nodes
        .iter()
        .map(|n| (n.host.clone(), n.rnics.clone()))
        .collect();
    let pairs = choose_pairs(&members);
    let spacing = Duration::from_secs_f64(budget.duration_s / pairs.len().max(1) as f64);
    let mut answers = Vec::with_capacity(pairs.len());
    for (i, (a, b)) in pairs.iter().enumerate() {
        tokio::time::sleep_until((started + spacing * i as u32).into()).await;
        let node = |host: &str| nodes.iter().position(|n| n.host == host).expect("a node");
        let (ia, ib) = (node(&a.host), node(&b.host));
        let down = [ia, ib]
            .iter()
            .find_map(|&k| nodes[k].error.clone().map(|why| (k, why)));
        let urls = (nodes[ia].agent_url.clone(), nodes[ib].agent_url.clone());
        let answer = match (down, urls) {
            (None, (Some(url_a), Some(url_b))) => {
                match ask(&url_a, &url_b, a, b, &budget, &token).await {
                    Ok(report) => report,
                    Err((end, why)) => {
                        nodes[if end == 0 { ia } else { ib }].error = Some(why.clone());
                        not_run(a, b, "unreachable", why)
                    }
                }
            }
            (down, _) => {
                let why = down.map_or_else(|| "no agent URL".to_string(), |(_, why)| why);
                not_run(a, b, "unreachable", why)
            }
        };
        answers.push(answer);
    }
    MeshAnswer {
        pairs: answers,
        simulated: false,
        nodes,
        cover: COVER,
        budget,
        elapsed_s: started.elapsed().as_secs_f64(),
    }
}

/// A pair that did not run, in the pair object's shape.
fn not_run(a: &End, b: &End, status: &str, why: String) -> Value {
    json!({"a": a, "b": b, "latency_us": null, "bandwidth_gbps": null, "host_a_us": null,
           "host_b_us": null, "network_us": null, "route": null, "route_reason": ROUTE_REASON,
           "status": status, "reason": why, "error": why, "simulated": false})
}

/// Asks `a`'s agent to probe `b`: the pair's report, or which end (0 `a`, 1 `b`) could not
/// be reached and why. An answer other than a report is a `failed` pair.
async fn ask(
    url_a: &str,
    url_b: &str,
    a: &End,
    b: &End,
    budget: &Budget,
    token: &str,
) -> Result<Value, (usize, String)> {
    let probe_url = format!("{}/api/pair/probe", url_a.trim_end_matches('/'));
    let body = json!({"rnic": a.rnic, "peer": url_b, "peer_rnic": b.rnic,
                      "iterations": budget.latency_probes_per_pair,
                      "bw_iterations": budget.bw_iterations, "depth": budget.depth});
    let token = token.to_string();
    let url = probe_url.clone();
    let posted = tokio::task::spawn_blocking(move || {
        let client = fleet_api::post::client(ureq::tls::TlsConfig::default());
        fleet_api::post::ask(&client, &url, &token, &body, PAIR_WAIT, 4 << 20)
    })
    .await
    .unwrap_or_else(|e| Err(format!("the request failed: {e}")));
    let (status, text) = posted.map_err(|e| (0, format!("{}'s agent: {e}", a.host)))?;
    let parsed: Option<Value> = serde_json::from_str(&text).ok();
    match (status, parsed) {
        (200, Some(mut report)) if report.is_object() => {
            if report["status"] == "unreachable" {
                let why = report["error"]
                    .as_str()
                    .unwrap_or("unreachable")
                    .to_string();
                return Err((1, format!("{}'s agent at {url_b}: {why}", b.host)));
            }
            report["route"] = Value::Null;
            report["route_reason"] = json!(ROUTE_REASON);
            Ok(report)
        }
        (status, parsed) => {
            let words = parsed
                .as_ref()
                .and_then(|v| v.get("error")?.as_str().map(str::to_owned))
                .unwrap_or_else(|| text.trim().to_string());
            Ok(not_run(
                a,
                b,
                "failed",
                format!("{status} from {probe_url}: {words}"),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
            bw_iterations: None,
            depth: None,
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
            .starts_with("duration_s 0"));
        assert!(request(None, Some(f64::NAN))
            .budget()
            .unwrap_err()
            .starts_with("rate NaN"));
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
