//! `hostping counters`: one snapshot of every counter source.

use crate::cli::CountersArgs;
use crate::output::{print, Outcome};
use anyhow::{bail, Result};
use check::host::{Host, HostOptions};
use views::Style;

/// Runs `hostping counters`.
pub fn run(args: CountersArgs) -> Result<Outcome> {
    let mut host = Host::open(
        &args.host.spec(),
        HostOptions {
            inject: args.inject.clone(),
            ..HostOptions::default()
        },
    )?;
    let report = host.counters();
    print(args.format, &report, |r| {
        views::counters(r, Style::for_stdout())
    })?;
    // Everything read is printed first; a source that failed (permission denied, a
    // malformed file) then makes the exit status 2.
    if let Some(failed) = report.failed_sources() {
        bail!("{failed}");
    }
    Ok(Outcome::Healthy)
}
