//! `hostping`: parse flags, dispatch to one short function per command, map the outcome to
//! the exit status of DESIGN 4.3 (0 healthy, 1 bottleneck found, 2 usage or input error).

use anyhow::{bail, Context, Result};
use clap::Parser;
use hostping::agent::backend::{Backend, RealBackend, RealProbing, Scheduled, SimBackend};
use hostping::agent::config::AgentConfig;
use hostping::agent::{self, Agent, Status, Stop};
use hostping::bench;
use hostping::cli::{
    AgentArgs, BaselineArgs, BenchCommand, CheckArgs, Cli, Command, CountersArgs, Format, HostArgs,
    LintArgs, TopologyArgs,
};
use hostping::pipeline::{self, BaselineSource, CheckSettings};
use hostping::render::{self, Style};
use hostping::scenario::Scenario;
use hostping::sim;
use indicatif::{ProgressBar, ProgressStyle};
use model::{Baseline, BaselineKind, HostTopology, Report};
use probe::{LatencySpec, Monitor, ProbeEngine, StreamSpec};
use rdma::engine::{EngineOptions, TestFault};
use rdma::host::{self as real, RealError};
use rdma::monitor::HostMonitor;
use rdma::sysfs::SysRoot;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;
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
        Command::Counters(args) => counters(args),
        Command::Lint(args) => lint(args),
        Command::Agent(args) => agent_command(args),
        Command::Bench(cmd) => bench_command(cmd),
        Command::Fabric(cmd) => hostping::fabric::run(cmd).map(|congested| {
            if congested {
                Outcome::Findings
            } else {
                Outcome::Healthy
            }
        }),
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

/// The sysfs root of the real host: `--sysfs-root`, or `/`.
fn sysfs_root(host: &HostArgs) -> SysRoot {
    host.sysfs_root
        .clone()
        .map(SysRoot::new)
        .unwrap_or_else(SysRoot::system)
}

fn engine_options(timeout_ms: u64, faults: &[String]) -> Result<EngineOptions> {
    Ok(EngineOptions {
        timeout: Duration::from_millis(timeout_ms),
        faults: faults
            .iter()
            .map(|f| TestFault::parse(f).map_err(|e| anyhow::anyhow!("--verbs-fault: {e}")))
            .collect::<Result<_>>()?,
    })
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

/// Progress of a series on its bar: the run as position, the paths done as message.
fn show_progress(bar: &ProgressBar, run: u32, done: usize, total: usize) {
    bar.set_position(u64::from(run));
    bar.set_message(format!("run {}: {done}/{total} paths", run + 1));
}

/// Pause between the runs of a series on a real host: a short one, not the agent's 5 min.
const REAL_CADENCE_NS: u64 = 1_000_000_000;

fn check(args: CheckArgs) -> Result<Outcome> {
    if !(0.0..=0.5).contains(&args.noise) {
        bail!("--noise: {} is outside 0..0.5", args.noise);
    }
    if !(args.stream_ms > 0.0 && args.stream_ms <= 60_000.0) {
        bail!("--stream-ms: {} is outside 0..60000", args.stream_ms);
    }
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
        ..CheckSettings::default()
    };
    match &args.host.sim {
        Some(name) => check_simulated(&args, name, &settings),
        None => check_real(&args, &settings),
    }
}

fn check_simulated(args: &CheckArgs, name: &str, settings: &CheckSettings) -> Result<Outcome> {
    if !args.verbs_fault.is_empty() {
        bail!(
            "--verbs-fault applies to a real host's verbs engine; on a simulated host use --inject"
        );
    }
    let host = sim::load_host(name)?;
    let faults = sim::parse_faults(&args.inject, &host)?;
    let (baseline, kind) = match &args.baseline {
        Some(path) => (load_baseline(path, &host)?, BaselineKind::Recorded),
        None => (
            hostping::baseline::simulated(
                &host,
                hostping::baseline::DEFAULT_RUNS,
                args.seed,
                &settings.latency,
                args.noise,
            ),
            BaselineKind::Simulated,
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
    let source = BaselineSource::Given(&baseline, kind);
    run_checks(&mut vhost, &host, source, settings, args)
}

fn check_real(args: &CheckArgs, settings: &CheckSettings) -> Result<Outcome> {
    if !args.inject.is_empty() {
        bail!("--inject needs a simulated host (--sim MODEL); a real host is probed as it is");
    }
    let options = engine_options(args.timeout_ms, &args.verbs_fault)?;
    let real = real::host(sysfs_root(&args.host))?;
    let baseline = match &args.baseline {
        Some(path) => Some(load_baseline(path, &real.host)?),
        None => None,
    };
    let mut engine = real.engine(options)?;
    let software = real.software_rnics();
    let source = match &baseline {
        Some(b) => BaselineSource::Given(b, BaselineKind::Recorded),
        None => BaselineSource::Relative {
            software: &software,
        },
    };
    let settings = CheckSettings {
        cadence_ns: REAL_CADENCE_NS,
        ..settings.clone()
    };
    run_checks(&mut engine, &real.host, source, &settings, args)
}

/// Runs the series with a progress bar, writing each report as soon as it exists.
fn run_checks<E: ProbeEngine + Monitor>(
    engine: &mut E,
    host: &HostTopology,
    source: BaselineSource<'_>,
    settings: &CheckSettings,
    args: &CheckArgs,
) -> Result<Outcome> {
    let bar = progress_bar(u64::from(args.runs), "probing");
    let style = Style::for_stdout();
    let mut stdout = std::io::stdout().lock();
    let mut write_error = None;
    let mut on_report = |report: &Report| {
        // Each run is written as soon as it exists, so an interrupted series loses nothing.
        let text = match args.format {
            Format::Json if args.runs > 1 => serde_json::to_string(report).map(|s| s + "\n"),
            Format::Json => serde_json::to_string_pretty(report).map(|s| s + "\n"),
            Format::Table => Ok(render::report(host, report, args.runs, style) + "\n"),
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
        engine,
        host,
        source,
        settings,
        &mut on_report,
        &mut |run, done, total| show_progress(&bar, run, done, total),
    );
    bar.finish_and_clear();
    if let Some(e) = write_error {
        return Err(e).context("writing the report");
    }
    Ok(
        if reports
            .iter()
            .all(|r| r.healthy && pipeline::failed_paths(r).is_empty())
        {
            Outcome::Healthy
        } else {
            Outcome::Findings
        },
    )
}

fn load_baseline(path: &std::path::Path, host: &HostTopology) -> Result<Baseline> {
    let name = path.display().to_string();
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read baseline `{name}`"))?;
    let baseline = Baseline::from_json(&name, &text)?;
    baseline.check_fits(host, &name)?;
    Ok(baseline)
}

fn baseline(args: BaselineArgs) -> Result<Outcome> {
    let latency = LatencySpec {
        op: args.op.into(),
        iterations: args.iterations,
        ..LatencySpec::default()
    };
    let (b, host_name, how) = match &args.host.sim {
        Some(name) => {
            let host = sim::load_host(name)?;
            let b = hostping::baseline::simulated(
                &host,
                args.runs,
                args.seed,
                &latency,
                VhostConfig::default().noise,
            );
            (b, host.name, "simulated")
        }
        None => {
            let real = real::host(sysfs_root(&args.host))?;
            let mut engine = real.engine(engine_options(args.timeout_ms, &[])?)?;
            let bar = progress_bar(u64::from(args.runs), "baseline");
            let (b, runs) = hostping::baseline::record(
                &mut engine,
                &real.host,
                args.runs,
                &latency,
                REAL_CADENCE_NS,
                &mut |run, done, total| show_progress(&bar, run, done, total),
            )?;
            bar.finish_and_clear();
            for p in real.host.paths() {
                if b.path(&p.rnic, &p.endpoint).is_none() {
                    let why = runs
                        .iter()
                        .filter_map(|r| r.probe(&p.rnic, &p.endpoint))
                        .find_map(|p| match &p.outcome {
                            model::PathOutcome::Failed { error } => Some(error.clone()),
                            model::PathOutcome::Unavailable { reason } => {
                                Some(format!("unavailable: {reason}"))
                            }
                            model::PathOutcome::Measured(_) => None,
                        })
                        .unwrap_or_default();
                    eprintln!("not in the baseline: {}->{} ({why})", p.rnic, p.endpoint);
                }
            }
            (b, real.host.name.clone(), "measured")
        }
    };
    let text = serde_json::to_string_pretty(&b)? + "\n";
    std::fs::write(&args.output, text)
        .with_context(|| format!("cannot write baseline `{}`", args.output.display()))?;
    eprintln!(
        "wrote {}: {} paths of {}, median of {} {how} healthy runs",
        args.output.display(),
        b.paths.len(),
        host_name,
        b.runs
    );
    Ok(Outcome::Healthy)
}

fn topology(args: TopologyArgs) -> Result<Outcome> {
    let text = match &args.host.sim {
        Some(name) => {
            let host = sim::load_host(name)?;
            match args.format {
                Format::Json => serde_json::to_string_pretty(&render::topology_json(&host))? + "\n",
                Format::Table => render::topology(&host),
            }
        }
        None => {
            let root = sysfs_root(&args.host);
            let discovery = rdma::sysfs::discover(&root)?;
            match args.format {
                Format::Json => {
                    serde_json::to_string_pretty(&render::discovery_json(&discovery))? + "\n"
                }
                Format::Table => render::discovery(&discovery),
            }
        }
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(Outcome::Healthy)
}

/// A virtual host of `name` with `inject` faults.
fn virtual_host(name: &str, inject: &[String], seed: u64) -> Result<(HostTopology, VirtualHost)> {
    let host = sim::load_host(name)?;
    let faults = sim::parse_faults(inject, &host)?;
    let config = VhostConfig {
        seed,
        ..VhostConfig::default()
    };
    let vh = VirtualHost::new(host.clone(), faults, config);
    Ok((host, vh))
}

fn counters(args: CountersArgs) -> Result<Outcome> {
    let report = match &args.host.sim {
        Some(name) => {
            let (_, mut vh) = virtual_host(name, &args.inject, 1)?;
            sim::counter_report(&mut vh)
        }
        None => HostMonitor::open(sysfs_root(&args.host))?.read(),
    };
    let text = match args.format {
        Format::Json => serde_json::to_string_pretty(&report)? + "\n",
        Format::Table => render::counters(&report, Style::for_stdout()),
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    // Everything read is printed first; a source that failed (permission denied, a
    // malformed file) then makes the exit status 2.
    if let Some(failed) = report.failed_sources() {
        bail!("{failed}");
    }
    Ok(Outcome::Healthy)
}

fn lint(args: LintArgs) -> Result<Outcome> {
    let (host, config) = match &args.host.sim {
        Some(name) => {
            let (host, vh) = virtual_host(name, &args.inject, 1)?;
            let config = vh.config();
            (Some(host), config)
        }
        None => {
            let mut sources = HostMonitor::open(sysfs_root(&args.host))?;
            let config = sources.config();
            (sources.host().cloned(), config)
        }
    };
    let findings = match &host {
        Some(host) => analyze::lint::lint(host, &config),
        None => Vec::new(),
    };
    let text = match args.format {
        Format::Json => {
            serde_json::to_string_pretty(&serde_json::json!({
                "host": host.as_ref().map(|h| h.name.clone()),
                "provenance": config.provenance,
                "findings": findings,
                "unavailable": config.unavailable,
            }))? + "\n"
        }
        Format::Table => render::lint(host.as_ref(), &config, &findings, Style::for_stdout()),
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(if findings.is_empty() {
        Outcome::Healthy
    } else {
        Outcome::Findings
    })
}

fn agent_command(args: AgentArgs) -> Result<Outcome> {
    let mut config = match &args.config {
        Some(path) => AgentConfig::load(path)?,
        None => AgentConfig::default(),
    };
    if let Some(db) = &args.db {
        config.agent.database = db.clone();
    }
    if let Some(listen) = args.listen {
        config.agent.listen = listen;
    }
    if !(args.time_scale > 0.0 && args.time_scale.is_finite()) {
        bail!(
            "--time-scale: {} must be a positive number",
            args.time_scale
        );
    }
    let stop = std::sync::Arc::new(Stop::default());
    let signals = {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT])
            .context("cannot install the SIGTERM handler")?;
        let stop = stop.clone();
        let handle = signals.handle();
        std::thread::spawn(move || {
            if signals.forever().next().is_some() {
                stop.stop();
            }
        });
        handle
    };
    let mut backend: Box<dyn Backend> = match &args.host.sim {
        Some(name) => Box::new(sim_backend(&args, &config, name)?),
        None => Box::new(real_backend(&args, &config)?),
    };
    let db = &config.agent.database;
    let store = store::Store::open(db)?;
    let (host_name, provenance) = match backend.host() {
        Some(h) => (
            h.name.clone(),
            if args.host.sim.is_some() {
                "simulated"
            } else {
                "measured"
            },
        ),
        None => ("(no RDMA device)".to_string(), "measured"),
    };
    let metrics = std::sync::Arc::new(std::sync::Mutex::new(store::Metrics::new(
        &host_name, provenance,
    )));
    let status = std::sync::Arc::new(std::sync::Mutex::new(Status {
        host: host_name.clone(),
        provenance: provenance.into(),
        probing_disabled: backend.probing_disabled(),
        ..Status::default()
    }));
    let server = agent::http::serve(
        config.agent.listen,
        db.clone(),
        metrics.clone(),
        status.clone(),
    )
    .with_context(|| format!("cannot listen on {}", config.agent.listen))?;
    eprintln!(
        "hostping agent: watching {host_name} ({provenance}); runs in {}; serving http://{}/metrics and /api/runs",
        db.display(),
        server.addr
    );
    let mut log = |line: &str| eprintln!("hostping agent: {line}");
    let mut agent = Agent::new(backend.as_mut(), &config, store, metrics, status, &mut log)?;
    let stored = agent.run(&stop, args.run_for.map(|d| d.as_nanos() as u64));
    server.shutdown();
    signals.close();
    eprintln!(
        "hostping agent: stopped; {stored} runs stored in {}",
        db.display()
    );
    Ok(Outcome::Healthy)
}

fn sim_backend(args: &AgentArgs, config: &AgentConfig, name: &str) -> Result<SimBackend> {
    let (host, vh) = virtual_host(name, &args.inject, args.seed)?;
    let schedule = args
        .schedule
        .iter()
        .map(|s| Scheduled::parse(s, &host).map_err(anyhow::Error::msg))
        .collect::<Result<Vec<_>>>()?;
    let latency = LatencySpec {
        op: config.probe.op,
        iterations: config.probe.iterations,
        ..LatencySpec::default()
    };
    let (baseline, kind) = match &config.agent.baseline {
        Some(path) => (load_baseline(path, &host)?, BaselineKind::Recorded),
        None => (
            hostping::baseline::simulated(
                &host,
                hostping::baseline::DEFAULT_RUNS,
                args.seed,
                &latency,
                VhostConfig::default().noise,
            ),
            BaselineKind::Simulated,
        ),
    };
    Ok(SimBackend::new(
        vh,
        baseline,
        kind,
        args.time_scale,
        schedule,
    ))
}

fn real_backend(
    args: &AgentArgs,
    config: &AgentConfig,
) -> Result<RealBackend<rdma::engine::VerbsEngine>> {
    let root = sysfs_root(&args.host);
    let disabled = |why: String| -> Result<_> {
        Ok(RealBackend::new(Err(why), HostMonitor::open(root.clone())?))
    };
    let real = match real::host(root.clone()) {
        Ok(real) => real,
        Err(e @ (RealError::NoRdma { .. } | RealError::NoVerbs { .. })) => {
            return disabled(e.to_string())
        }
        Err(e) => return Err(e.into()),
    };
    let baseline = match &config.agent.baseline {
        Some(path) => Some(load_baseline(path, &real.host)?),
        None => None,
    };
    match real.engine(engine_options(config.probe.timeout_ms, &[])?) {
        Ok(real::Probed { engine, monitor }) => Ok(RealBackend::new(
            Ok(RealProbing {
                software: real.software_rnics(),
                host: real.host.clone(),
                engine,
                baseline,
            }),
            monitor,
        )),
        Err(e) => disabled(e.to_string()),
    }
}

fn bench_command(cmd: BenchCommand) -> Result<Outcome> {
    match cmd {
        BenchCommand::Agent {
            sim,
            seconds,
            format,
        } => {
            let cost = agent::bench::agent_cost(&sim, seconds)?;
            let text = match format {
                Format::Json => serde_json::to_string_pretty(&cost)? + "\n",
                Format::Table => agent::bench::agent_cost_table(&cost),
            };
            std::io::stdout().lock().write_all(text.as_bytes())?;
            Ok(Outcome::Healthy)
        }
        BenchCommand::Counters {
            sysfs_root,
            repeat,
            format,
        } => {
            let root = sysfs_root.map(SysRoot::new).unwrap_or_else(SysRoot::system);
            let cost = agent::bench::counters_cost(root, repeat)?;
            let text = match format {
                Format::Json => serde_json::to_string_pretty(&cost)? + "\n",
                Format::Table => agent::bench::counters_cost_table(&cost),
            };
            std::io::stdout().lock().write_all(text.as_bytes())?;
            Ok(Outcome::Healthy)
        }
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
