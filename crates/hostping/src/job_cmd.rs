//! `hostping job`: the job verdict (DESIGN 4.7). On a simulated cluster the evidence comes
//! from the `cluster` crate; on real hosts (`--collector`) from the collector
//! (`GET /api/jobs/verdict`, [`real`]). `analyze::job` judges both the same way.

mod real;

use anyhow::Result;

use crate::cli::job::JobArgs;
use crate::output::Outcome;

/// Runs `hostping job`.
pub fn run(args: JobArgs) -> Result<Outcome> {
    let Some(_sim_cluster) = &args.sim_cluster else {
        return real::run(&args);
    };
    anyhow::bail!("job --sim-cluster: being built")
}
