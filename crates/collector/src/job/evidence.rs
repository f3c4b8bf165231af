//! The verdict's evidence from what the collector holds: the hosts' runs in the window,
//! the job's collectives when its agents sent them (with `job`), the switch ports' counters
//! in it and before it, the job's routes on the fabric (without
//! one, each RNIC's own cable), and, with `probe`, a check of each host without one
//! (`follow_up`) and the pairs a real mesh measures through the agents, each judged against
//! its recorded baseline.

use super::follow_up::check_unjudged;
use super::hosts::{expected_busbw, hosts};
use super::pairs::job_pair;
use super::ports::ports;
use super::query::VerdictQuery;
use super::routes::{job_routes, rnic_cables, JobRoutes};
use crate::collectives::{read_job, SYMPTOM_LOOKBACK_S};
use crate::mesh::{Access, MeshRequest, Refusal};
use crate::pair_baselines;
use axum::http::StatusCode;
use fleet_api::mesh::MeshPair;
use model::job::{CollectiveEvidence, FollowUp, JobEvidence, NotJudgedItem};
use model::Provenance;
use std::time::Duration;

/// The longest the reads of the database may take together: past it the request is
/// answered 503 rather than left hanging. The pair probes (`probe`) have their own
/// deadlines ([`crate::mesh`]).
pub const READ_WAIT: Duration = Duration::from_secs(30);

/// What [`gather`] found.
pub struct Gathered {
    /// The evidence.
    pub evidence: JobEvidence,
    /// The checks asked of hosts without one, and what came of them.
    pub follow_ups: Vec<FollowUp>,
    /// The job's routes, when the fabric placed it.
    pub routes: Option<JobRoutes>,
}

/// Gathers the evidence of `query` (what the collector could not find out in its
/// `not_judged`), probing with `probe_token` when given, with the follow-ups run; or the
/// refusal (503 the database, or the mesh's own refusals).
pub async fn gather(
    access: &Access,
    query: &VerdictQuery,
    probe_token: Option<String>,
) -> Result<Gathered, Refusal> {
    let mut not_judged = Vec::new();
    let reads = async {
        let routes = job_routes(access, &query.nodes).await;
        let mut client = access.pool.get().await.map_err(|e| e.to_string())?;
        let hosts = hosts(&mut client, &query.nodes, query.window, &mut not_judged)
            .await
            .map_err(|e| e.to_string())?;
        // Without the routes no port can be said to be on them or off them: none is read.
        let ports = match &routes {
            Ok(routes) => ports(&**client, query.window, routes)
                .await
                .map_err(|e| crate::server_words(&e))?,
            Err(_) => Vec::new(),
        };
        // The job's own collectives (DESIGN 4.8): as the caller posted them, else as its
        // agents sent them, read over the hour before the window's end too, as the
        // symptom's earlier level lies before its onset.
        let collectives = match (&query.collectives, &query.job) {
            (Some(posted), _) => Some(CollectiveEvidence {
                expected_busbw_gbs: expected_busbw(&client, &query.nodes)
                    .await
                    .map_err(|e| crate::server_words(&e))?,
                ..posted.clone()
            }),
            (None, Some(job)) => {
                let since = (query.window.since_s as f64)
                    .min(query.window.until_s as f64 - SYMPTOM_LOOKBACK_S);
                read_job(&client, job, since)
                    .await
                    .map_err(|e| crate::server_words(&e))?
                    .map(|read| read.evidence)
            }
            (None, None) => None,
        };
        Ok::<_, String>((routes, hosts, ports, collectives))
    };
    let (routes, mut hosts, ports, collectives) = match tokio::time::timeout(READ_WAIT, reads).await
    {
        Ok(Ok(read)) => read,
        Ok(Err(why)) => return Err(unavailable(format!("database: {why}"))),
        Err(_) => {
            return Err(unavailable(format!(
                "database: the job's runs and ports were not read within {} s",
                READ_WAIT.as_secs()
            )))
        }
    };
    let routes = match routes {
        Ok(routes) => Some(routes),
        // Without a fabric the pairs cross their RNICs' own cables and nothing known
        // between: no switch port is on a known route, and none is left unjudged.
        Err(_) if access.fabric.is_none() => None,
        Err(why) => {
            not_judged.push(NotJudgedItem {
                what: "the job's routes".to_string(),
                why: format!(
                    "{why}: which switch ports and cables the job uses is not known, so no switch port's counters were judged"
                ),
            });
            None
        }
    };
    let follow_ups = match &probe_token {
        Some(token) => check_unjudged(access, &mut hosts, token, &mut not_judged).await,
        None => Vec::new(),
    };
    let mut simulated_pairs = false;
    let pairs = match probe_token {
        // A one-node job has no pair to probe.
        Some(token) if query.nodes.len() > 1 => {
            let request = probe_request(access, &query.nodes).await?;
            let mesh = access.measure(&request, token).await?;
            simulated_pairs = mesh.pairs.iter().any(MeshPair::simulated);
            mesh.pairs
                .iter()
                .map(|p| job_pair(p, routes.as_ref()))
                .collect()
        }
        _ => Vec::new(),
    };
    // A simulated number is always labelled: one simulated run or pair (an agent run with
    // `--sim`) makes the verdict simulated.
    let simulated = simulated_pairs
        || hosts.iter().any(|h| {
            h.report
                .as_ref()
                .is_some_and(|r| r.provenance == Provenance::Simulated)
        });
    let job_cables = match &routes {
        Some(routes) => routes.cables(),
        None if access.fabric.is_none() => rnic_cables(access, &query.nodes)
            .await
            .map_err(|why| unavailable(format!("database: {why}")))?,
        None => Vec::new(),
    };
    let evidence = JobEvidence {
        job: query.job.clone(),
        nodes: query.nodes.clone(),
        hosts,
        pairs,
        ports,
        job_cables,
        what_if: None,
        simulated,
        not_judged,
        collectives,
    };
    Ok(Gathered {
        evidence,
        follow_ups,
        routes,
    })
}

/// The mesh the verdict's probes run: on the budget of the newest pair baseline recorded
/// between the job's nodes, so that each pair is probed as its baseline was
/// ([`crate::pair_baselines`]); on the mesh's default budget without one.
async fn probe_request(access: &Access, nodes: &[String]) -> Result<MeshRequest, Refusal> {
    let budget = pair_baselines::newest_budget(&access.pool, nodes)
        .await
        .map_err(|why| unavailable(format!("database: {why}")))?;
    match budget {
        Some(budget) => MeshRequest::with_budget(nodes.to_vec(), &budget)
            .map_err(|why| unavailable(format!("database: {why}"))),
        None => Ok(MeshRequest::of_nodes(nodes.to_vec())),
    }
}

fn unavailable(why: String) -> Refusal {
    (StatusCode::SERVICE_UNAVAILABLE, why)
}
