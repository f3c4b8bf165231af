//! Follow-up measurements of a real job's verdict (issue 28 section 2, `probe=1`), each
//! request and what came of it one of the report's `follow_ups`:
//! - **Loopbacks.** A job host with no check of its own in the window leaves its job paths
//!   unjudged: neither a fault of its own nor its share of a pair's time can be told. The
//!   collector asks that host's agent for a check now (`POST /api/probe` with the caller's
//!   probe token, the agents' own endpoint), waits for the run to reach it, and judges with
//!   that run.
//! - **Rechecks.** The hosts of the verdict's host-side culprits, asked for a check again the
//!   same way (`verdict::recheck`): only that fresh check confirms or clears them before
//!   anything acts (DESIGN 4.9).
//! - **Separating pairs.** A culprit whose candidates are several cables the job's pairs
//!   cannot tell apart: for each member, a pair of the job's RNICs whose route crosses it
//!   and none of the others, planned by the verdict's pipeline as for a simulated job
//!   ([`verdict::follow_up::plan`]) and run through the agents (`crate::mesh`).

use super::hosts::{judged_host, Fleets};
use super::pairs::job_pair;
use super::routes::JobRoutes;
use crate::agents;
use crate::mesh::Access;
use model::job::{FollowUp, JobHost, NotJudgedItem};
use std::time::{Duration, Instant};
use tokio_postgres::GenericClient;
use verdict::pipeline::PairsMeasured;
use verdict::recheck::checked;
use verdict::RnicPort;

/// The longest wait for a requested check to arrive: a real host's loopbacks take seconds
/// (tens of seconds under emulation), and the agent sends the run as soon as it has it.
pub const CHECK_WAIT: Duration = Duration::from_secs(180);
/// The longest wait for an agent to accept the request.
const ASK_WAIT: Duration = Duration::from_secs(10);
/// How often the database is read while waiting.
const POLL: Duration = Duration::from_millis(500);

/// Asks every host of `hosts` without a run for a check, waits for the runs, and puts them
/// in place; returns what was asked of whom and what came of it.
pub async fn check_unjudged(
    access: &Access,
    hosts: &mut [JobHost],
    token: &str,
    not_judged: &mut Vec<NotJudgedItem>,
) -> Vec<FollowUp> {
    let missing: Vec<usize> = (0..hosts.len())
        .filter(|&i| hosts[i].report.is_none())
        .collect();
    if missing.is_empty() {
        return Vec::new();
    }
    let names: Vec<String> = missing.iter().map(|&i| hosts[i].host.clone()).collect();
    let checked = check_now(access, &names, token, not_judged).await;
    missing
        .into_iter()
        .zip(checked)
        .map(|(i, checked)| {
            let host = hosts[i].host.clone();
            if let Some(judged) = checked.judged {
                hosts[i] = judged;
            }
            FollowUp {
                kind: "loopback".to_string(),
                target: format!("{host} loopback"),
                why: format!(
                    "{host} has no check of its own in the window: its job paths were not \
                     judged, so its part of a pair cannot be told from the network's"
                ),
                outcome: checked.outcome,
                round: None,
            }
        })
        .collect()
}

/// Checks each host of `hosts` again now (`verdict::recheck`): one outcome per host, in
/// order.
pub async fn recheck(access: &Access, hosts: &[String], token: &str) -> Vec<String> {
    // What a check could not judge is in its outcome's words; the verdict is not judged
    // again with it.
    let mut not_judged = Vec::new();
    check_now(access, hosts, token, &mut not_judged)
        .await
        .into_iter()
        .map(|c| c.outcome)
        .collect()
}

/// A check asked of a host now.
struct Checked {
    /// What came of it, in `verdict::recheck::checked`'s words or `not run: <why>`.
    outcome: String,
    /// The host judged with the run, when one arrived and could be judged.
    judged: Option<JobHost>,
}

impl Checked {
    fn not_run(why: &str) -> Checked {
        Checked::said(format!("not run: {why}"))
    }

    fn said(outcome: String) -> Checked {
        Checked {
            outcome,
            judged: None,
        }
    }
}

/// Asks each host of `names` for a check now (`POST /api/probe` with `token` at its agent),
/// waits at most [`CHECK_WAIT`] for the runs, and judges each against its kind's fleet
/// baseline; one [`Checked`] per name, in order.
async fn check_now(
    access: &Access,
    names: &[String],
    token: &str,
    not_judged: &mut Vec<NotJudgedItem>,
) -> Vec<Checked> {
    let (agents, mut client) = match (
        agents::load(&access.pool, Some(names)).await,
        access.pool.get().await,
    ) {
        (Ok(agents), Ok(client)) => (agents, client),
        (Err(e), _) => {
            let why = e.to_string();
            return names.iter().map(|_| Checked::not_run(&why)).collect();
        }
        (_, Err(e)) => {
            let why = format!("database: {e}");
            return names.iter().map(|_| Checked::not_run(&why)).collect();
        }
    };
    let mut outcomes: Vec<Option<Checked>> = names.iter().map(|_| None).collect();
    // Each host's newest run before the request: the check asked for is the first after it.
    let mut asked: Vec<(usize, i64)> = Vec::new();
    for (i, host) in names.iter().enumerate() {
        let Some(agent) = agents.iter().find(|a| &a.host == host) else {
            outcomes[i] = Some(Checked::not_run("no agent registered it"));
            continue;
        };
        let last = match newest_run_id(&**client, host).await {
            Ok(id) => id,
            Err(e) => {
                outcomes[i] = Some(Checked::not_run(&crate::server_words(&e)));
                continue;
            }
        };
        match ask_for_check(&agent.agent_url, token).await {
            Ok(()) => asked.push((i, last)),
            Err(why) => outcomes[i] = Some(Checked::not_run(&why)),
        }
    }
    let deadline = Instant::now() + CHECK_WAIT;
    let mut fleets = Fleets::new();
    while !asked.is_empty() {
        let mut waiting = Vec::new();
        for (i, last) in asked {
            let node = &names[i];
            let run = match run_after(&**client, node, last).await {
                Ok(Some(run)) => run,
                Ok(None) => {
                    waiting.push((i, last));
                    continue;
                }
                Err(e) => {
                    let why = format!("asked; {}", crate::server_words(&e));
                    outcomes[i] = Some(Checked::said(why));
                    continue;
                }
            };
            let (id, kind, text) = run;
            let judged = judged_host(
                &mut client,
                node,
                Some((kind, text)),
                &mut fleets,
                not_judged,
            );
            outcomes[i] = Some(match judged.await {
                Ok(host) => Checked {
                    outcome: checked(&format!("run {id}"), host.report.as_ref()),
                    judged: Some(host),
                },
                Err(e) => {
                    let why = format!("its kind's fleet baseline could not be read: {e}");
                    not_judged.push(NotJudgedItem {
                        what: node.clone(),
                        why: why.clone(),
                    });
                    Checked::said(format!("checked (run {id}), but {why}"))
                }
            });
        }
        asked = waiting;
        if asked.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            for (i, _) in asked {
                outcomes[i] = Some(Checked::said(format!(
                    "asked, but no run arrived within {} s: the host stays unjudged",
                    CHECK_WAIT.as_secs()
                )));
            }
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    outcomes
        .into_iter()
        .map(|o| o.expect("every host asked has an outcome by the deadline"))
        .collect()
}

/// `POST /api/probe` at the agent: accepted (202), or why not in the agent's words.
async fn ask_for_check(agent_url: &str, token: &str) -> Result<(), String> {
    let url = format!("{}/api/probe", agent_url.trim_end_matches('/'));
    let token = token.to_string();
    let asked = url.clone();
    let answer = tokio::task::spawn_blocking(move || {
        let client = fleet_api::post::client(ureq::tls::TlsConfig::default());
        fleet_api::post::ask(
            &client,
            &asked,
            &token,
            &serde_json::json!({}),
            ASK_WAIT,
            1 << 16,
        )
        .map_err(|e| e.to_string())
    })
    .await
    .unwrap_or_else(|e| Err(format!("{url}: the request failed: {e}")))?;
    match answer {
        (202, _) => Ok(()),
        (status, text) => Err(format!(
            "{url} answered {status}: {}",
            fleet_api::post::error_words(&text)
        )),
    }
}

/// The id of `host`'s newest run (0 for none).
async fn newest_run_id(
    client: &impl GenericClient,
    host: &str,
) -> Result<i64, tokio_postgres::Error> {
    let row = client
        .query_one(
            "SELECT COALESCE(MAX(r.id), 0) FROM runs r JOIN hosts h ON r.host_id = h.id
             WHERE h.name = $1",
            &[&host],
        )
        .await?;
    Ok(row.get(0))
}

/// `host`'s newest run after the run `after`: its id, kind and report.
async fn run_after(
    client: &impl GenericClient,
    host: &str,
    after: i64,
) -> Result<Option<(i64, String, String)>, tokio_postgres::Error> {
    let row = client
        .query_opt(
            "SELECT r.id, r.kind, r.report::text FROM runs r JOIN hosts h ON r.host_id = h.id
             WHERE h.name = $1 AND r.id > $2 ORDER BY r.id DESC LIMIT 1",
            &[&host, &after],
        )
        .await?;
    Ok(row.map(|r| (r.get(0), r.get(1), r.get(2))))
}

/// Runs the separating pairs `pairs` (RNIC ports of the job's placed fabric) through the
/// agents with `token`: the pairs as the verdict reads them, in the order asked, or why none
/// ran.
pub async fn separate(
    access: &Access,
    routes: &JobRoutes,
    pairs: &[(RnicPort, RnicPort)],
    token: String,
) -> PairsMeasured {
    match access.measure_pairs(routes.placed(), pairs, token).await {
        Ok(answer) => PairsMeasured::Measured(
            answer
                .pairs
                .iter()
                .take(pairs.len())
                .map(|measured| job_pair(measured, Some(routes)))
                .collect(),
        ),
        Err((_, refused)) => PairsMeasured::NotRun(refused),
    }
}
