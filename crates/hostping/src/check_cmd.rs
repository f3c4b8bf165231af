//! `hostping check`: one host probed and diagnosed, a run or a series, with the IOTLB sweep
//! when asked; each report written as soon as it exists.

use crate::cli::{CheckArgs, Format};
use crate::output::Outcome;
use crate::progress::{progress_bar, show_run};
use anyhow::{Context, Result};
use check::host::{Host, HostOptions, ProbeOptions};
use check::iotlb::{self, IotlbReport};
use check::pipeline::{self, BaselineSource, CheckSettings, Prober};
use model::{BaselineKind, HostTopology, Report, Thresholds};
use probe::{LatencySpec, StreamSpec};
use std::io::Write;
use views::Style;

/// Runs `hostping check`.
pub fn run(args: CheckArgs) -> Result<Outcome> {
    let op = model::Op::from(args.op);
    let settings = CheckSettings {
        runs: args.runs,
        stream: args.stream_qps.map(|qps| StreamSpec {
            op,
            qps,
            depth: args.stream_depth,
            duration_us: args.stream_ms * 1000.0,
            ..StreamSpec::default()
        }),
        mode: args.mode.into(),
        latency: LatencySpec {
            op,
            iterations: args.iterations,
            ..LatencySpec::default()
        },
        thresholds: Thresholds {
            reprobe_rounds: args.reprobe_rounds,
            ..Thresholds::default()
        },
        ..CheckSettings::default()
    };
    let mut host = Host::open(
        &args.host.spec(),
        HostOptions {
            inject: args.inject.clone(),
            seed: args.seed,
            noise: args.noise,
        },
    )?;
    host.supports(op)?;
    let probe = ProbeOptions {
        timeout_ms: args.timeout_ms,
        verbs_faults: args.verbs_fault.clone(),
    };
    let iotlb = if args.iotlb {
        let mut bar = None;
        let report = iotlb::sweep_host(&mut host, &probe, args.iotlb_max_mib, &mut |at| {
            let bar = bar.get_or_insert_with(|| progress_bar(at.total as u64, "IOTLB sweep"));
            bar.set_position(at.done as u64);
            bar.set_message(at.point);
        });
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        Some(report?)
    } else {
        None
    };
    let settings = CheckSettings {
        cadence_ns: host.cadence_ns(),
        ..settings
    };
    let recorded;
    let default;
    let source = match &args.baseline {
        Some(path) => {
            recorded = check::record::load(path, host.model(), &settings.latency)?;
            BaselineSource::Given(&recorded, BaselineKind::Recorded)
        }
        None => {
            default = host.default_baseline(&settings.latency)?;
            default.source()
        }
    };
    let model = host.model().cloned();
    let prober = host.prober(&probe)?;
    let model = model.context("this host has no model to probe (no ACTIVE RDMA port)")?;
    run_checks(prober, &model, source, &settings, &args, iotlb.as_ref())
}

/// A report as JSON, with the `iotlb` field when the sweep ran.
fn report_json(
    report: &Report,
    iotlb: Option<&IotlbReport>,
) -> serde_json::Result<serde_json::Value> {
    let mut value = serde_json::to_value(report)?;
    if let (Some(sweep), Some(object)) = (iotlb, value.as_object_mut()) {
        object.insert("iotlb".into(), serde_json::to_value(sweep)?);
    }
    Ok(value)
}

/// Runs the series with a progress bar, writing each report as soon as it exists.
fn run_checks(
    engine: &mut dyn Prober,
    host: &HostTopology,
    source: BaselineSource<'_>,
    settings: &CheckSettings,
    args: &CheckArgs,
    iotlb: Option<&IotlbReport>,
) -> Result<Outcome> {
    let bar = progress_bar(u64::from(args.runs), "probing");
    let style = Style::for_stdout();
    let mut stdout = std::io::stdout().lock();
    let mut write_error = None;
    let mut on_report = |report: &Report| {
        // Each run is written as soon as it exists, so an interrupted series loses nothing.
        let text = match args.format {
            Format::Json if args.runs > 1 => report_json(report, iotlb)
                .and_then(|v| serde_json::to_string(&v))
                .map(|s| s + "\n"),
            Format::Json => report_json(report, iotlb)
                .and_then(|v| serde_json::to_string_pretty(&v))
                .map(|s| s + "\n"),
            Format::Table => Ok(views::report(host, report, args.runs, style)
                + &iotlb.map_or(String::new(), |sweep| format!("\n{}", views::iotlb(sweep)))
                + "\n"),
        };
        let written = bar.suspend(|| match text {
            Ok(text) => stdout
                .write_all(text.as_bytes())
                .and_then(|_| stdout.flush()),
            Err(e) => Err(std::io::Error::other(e)),
        });
        if let Err(e) = written {
            write_error.get_or_insert(e);
        }
    };
    let reports = pipeline::check(
        engine,
        host,
        source,
        settings,
        &mut on_report,
        &mut |run, done, total| show_run(&bar, run, done, total),
    );
    bar.finish_and_clear();
    if let Some(e) = write_error {
        return Err(e).context("writing the report");
    }
    Ok(Outcome::of_series(&reports))
}
