//! `hostping odp-bench`: ISPASS'21's ODP micro-benchmarks (damming and flood), on a real
//! device ([`real`]) or on the virtual host's RNIC transport model ([`sim`], labelled
//! simulated). Both give a [`model::odp_bench::OdpBenchReport`], printed by [`render`] and
//! drawn by [`plot`] when `--plot` asks.

mod plot;
mod real;
mod render;
mod sim;

pub use plot::PlotError;

pub use real::OdpBenchError;
pub use render::{render_json, render_table};

use crate::cli::{Format, OdpBenchArgs, OdpBenchKind};
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
pub fn run(args: &OdpBenchArgs) -> anyhow::Result<()> {
    let report: OdpBenchReport = match &args.sim {
        Some(model) => sim::run(args, kind(args), model)?,
        None => real::run(args, kind(args)).inspect_err(|e| {
            if let Some(partial) = e.partial() {
                print(partial, args.format);
            }
        })?,
    };
    if let Some(path) = &args.plot {
        plot::write(&report, path)?;
    }
    print(&report, args.format);
    Ok(())
}

fn print(report: &OdpBenchReport, format: Format) {
    match format {
        Format::Json => println!("{}", render_json(report)),
        Format::Table => print!("{}", render_table(report)),
    }
}
