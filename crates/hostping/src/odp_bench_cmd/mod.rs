//! `hostping odp-bench`: ISPASS'21's ODP micro-benchmarks (damming and flood), on a real
//! device ([`real`]) or on the virtual host's RNIC transport model ([`sim`], labelled
//! simulated). Both give a [`model::odp_bench::OdpBenchReport`], printed by [`render`] and
//! drawn by [`plot`] when `--plot` asks.

mod plot;
mod render;

pub use render::{render_json, render_table};

use crate::cli::{Format, OdpBenchArgs, OdpBenchKind};
use crate::output::Outcome;
use crate::progress::progress_bar;
use check::odp_bench::{real, sim, OdpSweep};
use model::odp_bench::{OdpBenchKind as Kind, OdpBenchReport};

/// The micro-benchmark `args` name, in the report's words.
fn kind(args: &OdpBenchArgs) -> Kind {
    match args.kind {
        OdpBenchKind::Damming => Kind::Damming,
        OdpBenchKind::Flood => Kind::Flood,
    }
}

/// Runs `odp-bench` as `args` say and prints the report. A real run that stops part way
/// prints the points it measured before returning the error.
pub fn run(args: &OdpBenchArgs) -> anyhow::Result<Outcome> {
    let sweep = OdpSweep {
        kind: kind(args),
        device: args.device.clone(),
        intervals: args.intervals.clone(),
        qps: args.qps,
        timeout_ms: args.timeout_ms,
    };
    let report: OdpBenchReport = match &args.sim {
        Some(model) => sim::run(&sweep, model)?,
        None => {
            let word = sweep.kind.as_str();
            let mut bar = None;
            let measured = real::run(&sweep, &mut |at| {
                let bar = bar.get_or_insert_with(|| {
                    progress_bar(
                        at.total as u64,
                        &format!("odp-bench {word} on {}", at.device),
                    )
                });
                bar.set_position(at.done as u64);
                bar.set_message(match sweep.kind {
                    Kind::Damming => format!("interval {} us", at.at),
                    Kind::Flood => format!("{} QPs", at.at),
                });
            });
            if let Some(bar) = bar {
                bar.finish_and_clear();
            }
            measured.inspect_err(|e| {
                if let Some(partial) = e.partial() {
                    print(partial, args.format);
                }
            })?
        }
    };
    if let Some(path) = &args.plot {
        plot::write(&report, path)?;
    }
    print(&report, args.format);
    Ok(Outcome::Healthy)
}

fn print(report: &OdpBenchReport, format: Format) {
    match format {
        Format::Json => println!("{}", render_json(report)),
        Format::Table => print!("{}", render_table(report)),
    }
}
