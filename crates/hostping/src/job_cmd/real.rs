//! `hostping job --collector`: the verdict on real hosts, from the collector.

use anyhow::Result;

use crate::cli::job::JobArgs;
use crate::output::Outcome;

/// Asks the collector for the verdict and prints it.
pub fn run(_args: &JobArgs) -> Result<Outcome> {
    anyhow::bail!("job --collector: being built")
}
