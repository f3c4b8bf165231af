//! `what_if=ring|tree[&bytes=N]&observed_us=X`: the job's traffic replayed on the
//! collector's fabric (`cluster::whatif`, the job's nodes placed as [`super::routes`] places
//! them) under the link states the verdict found, and compared with the job's own measured
//! time; then the job judged again with it, as a simulated job is
//! ([`cluster::job::judge_with_what_if`]). Only the observed time is measured: every replay
//! is simulated.

use super::query::WhatIfQuery;
use super::routes::JobRoutes;
use cluster::whatif::{Observed, WhatIfSettings};
use model::job::{JobEvidence, JobReport, NotJudgedItem};
use tokio::sync::Semaphore;

/// Seeds the replays' random choices (routing ties, other jobs' traffic, METIS): the same
/// query on the same evidence gives the same answer.
const SEED: u64 = 1;

/// One what-if at a time: its replays take a thread each and run for seconds (about 15 s
/// for 256 hosts, BENCHMARKS.md "The what-if at scale"); two at once would each take as
/// long as both, and starve the collector's other work.
static REPLAYING: Semaphore = Semaphore::const_new(1);

/// `report` judged again with the what-if in `evidence`; without `routes` (no fabric, or
/// the job's nodes not placed on it: `fabric_known` tells which) or when the what-if cannot
/// run, `report` with a `what-if` item in `not_judged` saying why, its verdict as it was.
pub async fn judge_with(
    asked: &WhatIfQuery,
    routes: Option<JobRoutes>,
    fabric_known: bool,
    mut evidence: JobEvidence,
    mut report: JobReport,
) -> JobReport {
    let Some(routes) = routes else {
        report.not_judged.push(not_run(if fabric_known {
            "the job's nodes are not placed on the collector's fabric (see `the job's \
             routes`), so its traffic has no routes to replay on"
                .to_string()
        } else {
            "the collector knows no fabric to replay the job's traffic on (start it with \
             --fabric FILE [--routes FILE])"
                .to_string()
        }));
        return report;
    };
    let _turn = REPLAYING
        .acquire()
        .await
        .expect("the semaphore is never closed");
    let (traffic, observed_us) = (asked.traffic.clone(), asked.observed_us);
    let judged = report.clone();
    let replayed = tokio::task::spawn_blocking(move || {
        cluster::job::judge_with_what_if(
            routes.placed(),
            &traffic,
            Observed::Time(observed_us),
            &mut evidence,
            judged,
            &WhatIfSettings { seed: SEED },
        )
    })
    .await;
    match replayed {
        Ok(report) => report,
        Err(e) => {
            report
                .not_judged
                .push(not_run(format!("the replay did not finish: {e}")));
            report
        }
    }
}

fn not_run(why: String) -> NotJudgedItem {
    NotJudgedItem {
        what: "what-if".to_string(),
        why,
    }
}
