//! `GET /api/jobs/verdict?nodes=LIST&since=T&until=T[&job=ID][&probe=1]
//! [&what_if=ring|tree&observed_us=X[&bytes=N]]`: the job verdict on real hosts (DESIGN
//! 4.7). The collector gathers a [`model::job::JobEvidence`] from what it holds and answers
//! `analyze::job::judge`'s [`model::job::JobReport`] with `"simulated": false`. With `job`,
//! the collectives its agents sent for that job are evidence too (DESIGN 4.8); a `POST` to
//! the same URL carries the job's own collectives instead, read by the caller from the
//! job's dump directory (`hostping job --collector --nccl DIR`).
//!
//! Reading is open, as the other GET endpoints are; `probe=1` asks each node without a run
//! in the window for a check and runs pair probes through the agents as `POST /api/mesh`
//! does, and so needs a probe token (`Authorization: Bearer`;
//! 403 with mesh off, 401 without a token of the probe-tokens file). 400 names the bad
//! parameter; 503 when the database does not answer within [`evidence::READ_WAIT`].
//! `what_if` replays the job's traffic on the collector's fabric and compares it with the
//! job's measured time `observed_us` (issue 28 section 3); without a fabric it is listed in
//! `not_judged`. Without a fabric the answer also says why no switch port was read
//! (`ports_unread`, an addition to the report).
//!
//! The sequence (gather, judge, follow-ups, judge, port reads, judge, what-if) is the
//! verdict crate's (`verdict::pipeline::run`), the same as a simulated job's; these modules
//! say how the collector measures each step ([`measure::Fleet`]).
//!
//! | module | job |
//! |---|---|
//! | [`query`] | the query string, checked |
//! | [`hosts`] | each node's newest run in the window, and the paths the job crosses on it |
//! | [`ports`] | switch-port deltas in the window and before it |
//! | [`routes`] | the job's routes and cables on the collector's fabric, or each RNIC's own cable without one |
//! | [`pairs`] | a mesh's pair (judged against its recorded baseline, `crate::pair_baselines`) as the verdict's pair |
//! | [`follow_up`] | with `probe=1`, a check asked of each host without one in the window, and pairs that split a culprit's candidate cables |
//! | [`port_reads`] | with `probe=1`, switch ports read now through their samplers: a culprit's candidate cables, and the route's cables without counters in the window |
//! | [`evidence`] | all of the above gathered, with a deadline |
//! | [`what_if`] | with `what_if`, the job's traffic replayed on the fabric against its measured time, and the job judged again |
//! | [`measure`] | the above as the verdict pipeline's `Measure` |

pub mod evidence;
pub mod follow_up;
pub mod hosts;
pub mod measure;
pub mod pairs;
pub mod port_reads;
pub mod ports;
pub mod query;
pub mod routes;
pub mod what_if;

use crate::agents::refuse;
use crate::mesh::Access;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::DefaultBodyLimit;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use fleet_api::collectives::JobCollectives;
use model::job::CollectiveEvidence;
use query::VerdictQuery;
use std::time::SystemTime;
use verdict::pipeline::{self, Options};

/// The most a `POST` of a job's collectives may weigh: [`MAX_SUMMARIES`](crate::collectives::MAX_SUMMARIES) summaries of a few
/// hundred bytes each, with room.
pub const MAX_POSTED_BYTES: usize = 8 << 20;

/// The route, over [`Access`] (the database, the probe tokens, the fabric).
pub fn routes(access: Access) -> Router {
    Router::new()
        .route(
            "/api/jobs/verdict",
            get(verdict)
                .post(verdict_with_collectives)
                .layer(DefaultBodyLimit::max(MAX_POSTED_BYTES)),
        )
        .with_state(access)
}

async fn verdict(
    State(access): State<Access>,
    headers: HeaderMap,
    asked: Result<Query<fleet_api::job::VerdictQuery>, QueryRejection>,
) -> Response {
    judge(access, headers, asked, None).await
}

/// `POST`: the body is the job's own collectives (`fleet_api::collectives::JobCollectives`,
/// at most [`MAX_SUMMARIES`](crate::collectives::MAX_SUMMARIES) summaries, checked as an agent's are), judged in place of those
/// the agents sent; 400 names the field outside the contract, 413 a body over
/// [`MAX_POSTED_BYTES`].
async fn verdict_with_collectives(
    State(access): State<Access>,
    headers: HeaderMap,
    asked: Result<Query<fleet_api::job::VerdictQuery>, QueryRejection>,
    body: Bytes,
) -> Response {
    let posted: JobCollectives = match serde_json::from_slice(&body) {
        Ok(posted) => posted,
        Err(e) => return refuse(StatusCode::BAD_REQUEST, format!("body: {e}")),
    };
    if let Err(why) = crate::collectives::check_job(&posted) {
        return refuse(StatusCode::BAD_REQUEST, why.under("body").to_string());
    }
    let evidence = CollectiveEvidence {
        records: posted.records,
        summaries: posted.summaries,
        skipped: posted.skipped,
        // What the job's hosts allow is read with them (`evidence::gather`).
        expected_busbw_gbs: Default::default(),
        simulated: posted.simulated,
    };
    judge(access, headers, asked, Some(evidence)).await
}

/// The verdict of `asked`, with the job's collectives as the caller posted them when given.
async fn judge(
    access: Access,
    headers: HeaderMap,
    asked: Result<Query<fleet_api::job::VerdictQuery>, QueryRejection>,
    posted: Option<CollectiveEvidence>,
) -> Response {
    let asked = match asked {
        Ok(Query(asked)) => asked,
        // The query's own refusal (`fleet_api::job::QueryError`) in its words, without
        // axum's preamble.
        Err(e) => {
            let why =
                std::error::Error::source(&e).map_or_else(|| e.body_text(), |s| s.to_string());
            return refuse(StatusCode::BAD_REQUEST, why);
        }
    };
    let now_s = model::time::unix_ms(SystemTime::now()) / 1000;
    let query = match VerdictQuery::resolve(asked, now_s) {
        Ok(q) => VerdictQuery {
            collectives: posted,
            ..q
        },
        Err(why) => return refuse(StatusCode::BAD_REQUEST, why.to_string()),
    };
    // A host the collector has never heard of is a typo, not a host without a run.
    match crate::agents::unknown_hosts(&access.pool, &query.nodes).await {
        Ok(unknown) if unknown.is_empty() => {}
        Ok(unknown) => {
            let (code, why) = crate::agents::unknown_refusal(&unknown);
            return refuse(code, why);
        }
        Err(e) => return refuse(StatusCode::SERVICE_UNAVAILABLE, format!("database: {e}")),
    }
    let token = if query.probe {
        match access.authorize(&headers) {
            Ok(token) => Some(token),
            Err((code, why)) => return refuse(code, why),
        }
    } else {
        None
    };
    let options = Options {
        probe: token.is_some(),
        what_if: query.what_if.as_ref().map(what_if::asked),
    };
    let mut fleet = measure::Fleet::new(&access, &query, token);
    match pipeline::run(&mut fleet, options).await {
        Ok(run) => {
            let ports_unread = (access.fabric.is_none() && run.report.ports.is_empty())
                .then(|| NO_FABRIC.to_string());
            Json(Answer {
                report: run.report,
                ports_unread,
            })
            .into_response()
        }
        Err((code, why)) => refuse(code, why),
    }
}

/// Why a collector without a fabric reads no switch port for a job. Not a gap of the
/// verdict's (it is no `not_judged` item, and the verdict stays what the pairs and hosts
/// make it): without the cabling, no port is known to be on the job's routes or off them.
pub const NO_FABRIC: &str = "the collector was started without --fabric (the fabric's \
     cabling, an ibnetdiscover capture), so it does not know which switch ports the job's \
     routes cross and reads none";

/// The verdict as the collector answers it: DESIGN 4.7's report, and what only the
/// collector knows of it (an addition to the contract; `hostping job` reads the report and
/// passes over it).
#[derive(serde::Serialize)]
struct Answer {
    #[serde(flatten)]
    report: model::job::JobReport,
    /// Why no switch port was read, where the collector knows: it has no fabric
    /// ([`NO_FABRIC`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    ports_unread: Option<String>,
}
