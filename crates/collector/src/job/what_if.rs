//! `what_if=ring|tree[&bytes=N]&observed_us=X`: the job's traffic replayed on the
//! collector's fabric (`verdict::whatif`, the job's nodes placed as [`super::routes`] places
//! them) under the link states the verdict found, and compared with the job's own measured
//! time; then the job judged again with it, as a simulated job is (the verdict pipeline's
//! last step, `verdict::pipeline`). Only the observed time is measured: every replay is
//! simulated.

use super::routes::JobRoutes;
use fleet_api::job::{Collective, WhatIf};
use model::job::{JobEvidence, JobReport};
use std::sync::Arc;
use tokio::sync::Semaphore;
use verdict::pipeline::{Replay, WhatIfAsked};
use verdict::whatif::{JobTraffic, Observed, WhatIfSettings};

/// Seeds the replays' random choices (routing ties, other jobs' traffic, METIS): the same
/// query on the same evidence gives the same answer.
const SEED: u64 = 1;

/// One what-if at a time: its replays take a thread each and run for seconds (about 15 s
/// for 256 hosts, BENCHMARKS.md "The what-if at scale"); two at once would each take as
/// long as both, and starve the collector's other work.
static REPLAYING: Semaphore = Semaphore::const_new(1);

/// The what-if as the query asks it: a real job's measured time is what was observed.
pub fn asked(query: &WhatIf) -> WhatIfAsked {
    let bytes = query.bytes;
    WhatIfAsked {
        traffic: match query.collective {
            Collective::Ring => JobTraffic::RingAllReduce { bytes },
            Collective::Tree => JobTraffic::TreeAllReduce { bytes },
        },
        observed: Observed::Time(query.observed_us),
        settings: WhatIfSettings { seed: SEED },
    }
}

/// Why the job's traffic has no routes to replay on: the collector knows no fabric
/// (`fabric_known` false), or the job's nodes are not placed on it.
pub fn not_placed(fabric_known: bool) -> String {
    if fabric_known {
        "the job's nodes are not placed on the collector's fabric (see `the job's routes`), so \
         its traffic has no routes to replay on"
            .to_string()
    } else {
        "the collector knows no fabric to replay the job's traffic on (start it with --fabric \
         FILE [--routes FILE])"
            .to_string()
    }
}

/// Runs `replay` on the job's placed fabric, one at a time and off the runtime's threads;
/// the new verdict and evidence, or why the replay did not finish.
pub async fn replay(
    routes: Arc<JobRoutes>,
    replay: Replay,
) -> Result<(JobReport, JobEvidence), String> {
    let _turn = REPLAYING
        .acquire()
        .await
        .expect("the semaphore is never closed");
    tokio::task::spawn_blocking(move || replay.run(routes.placed()))
        .await
        .map_err(|e| format!("the replay did not finish: {e}"))
}
