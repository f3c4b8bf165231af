//! `hostping`: parse flags, dispatch to one short function per command, map the outcome to
//! the exit status of DESIGN 4.3 (0 healthy, 1 bottleneck found, 2 usage or input error).

use anyhow::{bail, Context, Result};
use clap::Parser;
use hostping::bench;
use hostping::cli::{BaselineArgs, BenchCommand, CheckArgs, Cli, Command, Format, TopologyArgs};
use hostping::pipeline::{self, CheckSettings};
use hostping::render::{self, Style};
use hostping::scenario::Scenario;
use hostping::sim;
use indicatif::{ProgressBar, ProgressStyle};
use model::{Baseline, HostTopology};
use probe::{LatencySpec, StreamSpec};
use std::io::Write;
use std::process::ExitCode;
use vhost::{VhostConfig, VirtualHost};

/// What a command concluded.
enum Outcome {
    Healthy,
    Findings,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check(args) => check(args),
        Command::Baseline(args) => baseline(args),
        Command::Topology(args) => topology(args),
        Command::Bench(cmd) => bench_command(cmd),
    };
    match result {
        Ok(Outcome::Healthy) => ExitCode::from(0),
        Ok(Outcome::Findings) => ExitCode::from(1),
        Err(e) if is_broken_pipe(&e) => ExitCode::from(0),
        Err(e) => {
            eprintln!("hostping: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The simulated host named by `--sim`, or the reason a real one cannot be used yet.
fn sim_host(sim: &Option<String>) -> Result<HostTopology> {
    match sim {
        Some(name) => Ok(sim::load_host(name)?),
        None => bail!(
            "probing a real host needs the libibverbs backend, which this build does not have yet; \
             simulate one with --sim MODEL (built-in: {})",
            model::builtin::names().collect::<Vec<_>>().join(", ")
        ),
    }
}

fn progress_bar(len: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    let template = format!("{{spinner}} {what} [{{bar:30}}] {{pos}}/{{len}} {{msg}} ({{elapsed}})");
    bar.set_style(
        ProgressStyle::with_template(&template)
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar
}

fn check(args: CheckArgs) -> Result<Outcome> {
    let host = sim_host(&args.sim.sim)?;
    let faults = sim::parse_faults(&args.inject, &host)?;
    if !(0.0..=0.5).contains(&args.noise) {
        bail!("--noise: {} is outside 0..0.5", args.noise);
    }
    if !(args.stream_ms > 0.0 && args.stream_ms <= 60_000.0) {
        bail!("--stream-ms: {} is outside 0..60000", args.stream_ms);
    }
    let stream = args.stream_qps.map(|qps| StreamSpec {
        qps,
        depth: args.stream_depth,
        duration_us: args.stream_ms * 1000.0,
        ..StreamSpec::default()
    });
    let settings = CheckSettings {
        runs: args.runs,
        stream,
        mode: args.mode,
        latency: LatencySpec {
            iterations: args.iterations,
            ..LatencySpec::default()
        },
        ..CheckSettings::default()
    };
    let baseline = match &args.baseline {
        Some(path) => load_baseline(path, &host)?,
        None => hostping::baseline::simulated(
            &host,
            hostping::baseline::DEFAULT_RUNS,
            args.seed,
            &settings.latency,
            args.noise,
        ),
    };
    let mut vhost = VirtualHost::new(
        host.clone(),
        faults,
        VhostConfig {
            seed: args.seed,
            noise: args.noise,
            ..VhostConfig::default()
        },
    );
    let bar = progress_bar(u64::from(args.runs), "probing");
    let style = Style::for_stdout();
    let mut stdout = std::io::stdout().lock();
    let mut write_error = None;
    let mut on_report = |report: &model::Report| {
        // Each run is written as soon as it exists, so an interrupted series loses nothing.
        let text = match args.format {
            Format::Json if args.runs > 1 => serde_json::to_string(report).map(|s| s + "\n"),
            Format::Json => serde_json::to_string_pretty(report).map(|s| s + "\n"),
            Format::Table => Ok(render::report(&host, report, args.runs, style) + "\n"),
        };
        let written = bar.suspend(|| {
            stdout
                .write_all(text.expect("reports serialise").as_bytes())
                .and_then(|_| stdout.flush())
        });
        if let Err(e) = written {
            write_error.get_or_insert(e);
        }
    };
    let reports = pipeline::check(
        &mut vhost,
        &host,
        &baseline,
        &settings,
        &mut on_report,
        &mut |run, done, total| {
            bar.set_position(u64::from(run));
            bar.set_message(format!("run {}: {done}/{total} paths", run + 1));
        },
    );
    bar.finish_and_clear();
    if let Some(e) = write_error {
        return Err(e).context("writing the report");
    }
    Ok(if reports.iter().all(|r| r.healthy) {
        Outcome::Healthy
    } else {
        Outcome::Findings
    })
}

fn load_baseline(path: &std::path::Path, host: &HostTopology) -> Result<Baseline> {
    let name = path.display().to_string();
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read baseline `{name}`"))?;
    let baseline = Baseline::from_json(&name, &text)?;
    hostping::baseline::check_fits(&baseline, host, &name).map_err(anyhow::Error::msg)?;
    Ok(baseline)
}

fn baseline(args: BaselineArgs) -> Result<Outcome> {
    let host = sim_host(&args.sim.sim)?;
    let latency = LatencySpec {
        iterations: args.iterations,
        ..LatencySpec::default()
    };
    let b = hostping::baseline::simulated(
        &host,
        args.runs,
        args.seed,
        &latency,
        VhostConfig::default().noise,
    );
    let text = serde_json::to_string_pretty(&b)? + "\n";
    std::fs::write(&args.output, text)
        .with_context(|| format!("cannot write baseline `{}`", args.output.display()))?;
    eprintln!(
        "wrote {}: {} paths of {}, median of {} simulated healthy runs",
        args.output.display(),
        b.paths.len(),
        host.name,
        b.runs
    );
    Ok(Outcome::Healthy)
}

fn topology(args: TopologyArgs) -> Result<Outcome> {
    let host = sim_host(&args.sim.sim)?;
    let text = match args.format {
        Format::Json => serde_json::to_string_pretty(&render::topology_json(&host))? + "\n",
        Format::Table => render::topology(&host),
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(Outcome::Healthy)
}

fn bench_command(cmd: BenchCommand) -> Result<Outcome> {
    match cmd {
        BenchCommand::Scenarios {
            dir,
            healthy_runs,
            show_failures,
            format,
        } => bench_scenarios(&dir, healthy_runs, show_failures, format),
        BenchCommand::Check {
            sim,
            repeat,
            format,
        } => {
            let host = sim::load_host(&sim)?;
            let cost = bench::check_cost(&host, repeat);
            let text = match format {
                Format::Json => serde_json::to_string_pretty(&cost)? + "\n",
                Format::Table => format!(
                    "full-mesh check of {} ({} paths x {} iterations x 2 sizes, simulated), median of {} checks:\n  probe + analysis:             {:.1} ms CPU\n  with a fresh 3-run baseline:  {:.1} ms CPU\n",
                    cost.host, cost.paths, cost.iterations, cost.repeat, cost.check_cpu_ms, cost.with_baseline_cpu_ms
                ),
            };
            std::io::stdout().lock().write_all(text.as_bytes())?;
            Ok(Outcome::Healthy)
        }
    }
}

fn bench_scenarios(
    dir: &std::path::Path,
    healthy_runs: u32,
    show_failures: bool,
    format: Format,
) -> Result<Outcome> {
    let scenarios = Scenario::load_dir(dir)?;
    if scenarios.is_empty() {
        bail!("{}: no scenario files (*.toml)", dir.display());
    }
    let hosts: Vec<HostTopology> = model::builtin::names()
        .map(|n| model::builtin::load(n).expect("built-in").expect("valid"))
        .collect();
    let total = scenarios.len() as u64 + u64::from(healthy_runs) * hosts.len() as u64;
    let bar = progress_bar(total, "bench");
    bar.set_message("scenarios");
    let rows = bench::run_scenarios(&scenarios, &mut |_| bar.inc(1));
    let mut false_alarms = Vec::new();
    for host in &hosts {
        bar.set_message(format!("healthy {}", host.name));
        false_alarms.push(bench::false_alarms(host, healthy_runs, &mut || bar.inc(1)));
    }
    bar.finish_and_clear();
    let passed = rows.iter().filter(|(r, _)| r.pass).count();
    let result = bench::SuiteResult {
        scenarios: rows.iter().map(|(r, _)| r.clone()).collect(),
        passed,
        false_alarms,
    };
    let mut out = match format {
        Format::Json => serde_json::to_string_pretty(&result)? + "\n",
        Format::Table => bench::suite_table(&result),
    };
    if show_failures {
        for ((row, outcome), s) in rows.iter().zip(&scenarios) {
            if !row.pass {
                out.push_str(&format!(
                    "\n--- {} {} ({}) ---\n",
                    row.case,
                    row.title,
                    s.file.display()
                ));
                out.push_str(&render::report(
                    &s.host,
                    &outcome.report,
                    s.runs,
                    Style { color: false },
                ));
            }
        }
    }
    std::io::stdout().lock().write_all(out.as_bytes())?;
    Ok(if result.ok() {
        Outcome::Healthy
    } else {
        Outcome::Findings
    })
}
