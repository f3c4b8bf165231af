//! `hostping baseline`: a baseline recorded on this host or a simulated one, written to a
//! file.

use crate::cli::BaselineArgs;
use crate::output::Outcome;
use crate::progress::{progress_bar, show_run};
use anyhow::{Context, Result};
use check::host::{Host, HostOptions, ProbeOptions};
use probe::LatencySpec;

/// Runs `hostping baseline`.
pub fn run(args: BaselineArgs) -> Result<Outcome> {
    let latency = LatencySpec {
        op: args.op.into(),
        iterations: args.iterations,
        ..LatencySpec::default()
    };
    let mut host = Host::open(
        &args.host.spec(),
        HostOptions {
            seed: args.seed,
            ..HostOptions::default()
        },
    )?;
    host.supports(latency.op)?;
    let probe = ProbeOptions {
        timeout_ms: args.timeout_ms,
        verbs_faults: Vec::new(),
    };
    let bar = progress_bar(u64::from(args.runs), "baseline");
    let recorded = host.record_baseline(args.runs, &latency, &probe, &mut |run, done, total| {
        show_run(&bar, run, done, total)
    })?;
    bar.finish_and_clear();
    for path in &recorded.left_out {
        eprintln!("not in the baseline: {path}");
    }
    let b = recorded.baseline;
    let text = serde_json::to_string_pretty(&b)? + "\n";
    std::fs::write(&args.output, text)
        .with_context(|| format!("cannot write baseline `{}`", args.output.display()))?;
    eprintln!(
        "wrote {}: {} paths of {}, median of {} {} healthy runs",
        args.output.display(),
        b.paths.len(),
        b.host,
        b.runs,
        b.provenance.as_str()
    );
    Ok(Outcome::Healthy)
}
