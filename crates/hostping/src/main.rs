//! `hostping`: parse flags, dispatch to one short function per command, map the outcome to
//! the exit status of DESIGN 4.3 (0 healthy, 1 bottleneck found, 2 usage or input error).

use anyhow::{bail, Context, Result};
use clap::Parser;
use hostping::agent::config::AgentConfig;
use hostping::agent::{self, Agent, Control, Status};
use hostping::bench;
use hostping::cli::{
    AgentArgs, BaselineArgs, BenchCommand, CheckArgs, Cli, CollectorArgs, Command, CountersArgs,
    Format, LintArgs, TopologyArgs,
};
use hostping::host::{Host, HostOptions, ProbeOptions};
use hostping::iotlb;
use hostping::pipeline::{self, BaselineSource, CheckSettings, Prober};
use hostping::render::{self, Style};
use hostping::scenario::Scenario;
use hostping::sim;
use indicatif::{ProgressBar, ProgressStyle};
use model::{Baseline, BaselineKind, HostTopology, Report, Thresholds};
use probe::{LatencySpec, StreamSpec};
use rdma::sysfs::SysRoot;
use std::io::Write;
use std::process::ExitCode;

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
        Command::OdpBench(args) => hostping::odp_bench::run(&args).map(|()| Outcome::Healthy),
        Command::Agent(args) => agent_command(args),
        Command::Collector(args) => collector_command(args),
        Command::Fleet(args) => fleet_command(&args),
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

/// The collector bench's phases, one bar each.
#[derive(Default)]
struct BenchBar(std::sync::Mutex<Option<ProgressBar>>);

impl hostping::collector::bench::Progress for BenchBar {
    fn phase(&self, name: &str, total: u64) {
        let mut bar = self.0.lock().expect("bar");
        if let Some(done) = bar.take() {
            done.finish();
        }
        *bar = Some(progress_bar(total, name));
    }
    fn at(&self, done: u64) {
        if let Some(bar) = self.0.lock().expect("bar").as_ref() {
            bar.set_position(done);
        }
    }
}

impl BenchBar {
    fn finish(&self) {
        if let Some(bar) = self.0.lock().expect("bar").take() {
            bar.finish();
        }
    }
}

/// Progress of a series on its bar: the run as position, the paths done as message.
fn show_progress(bar: &ProgressBar, run: u32, done: usize, total: usize) {
    bar.set_position(u64::from(run));
    bar.set_message(format!("run {}: {done}/{total} paths", run + 1));
}

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
        thresholds: Thresholds {
            reprobe_rounds: args.reprobe_rounds,
            ..Thresholds::default()
        },
        ..CheckSettings::default()
    };
    let mut host = Host::open(
        &args.host,
        HostOptions {
            inject: args.inject.clone(),
            seed: args.seed,
            noise: args.noise,
        },
    )?;
    let probe = ProbeOptions {
        timeout_ms: args.timeout_ms,
        verbs_faults: args.verbs_fault.clone(),
    };
    let iotlb = if args.iotlb {
        Some(iotlb_sweep(&mut host, &probe, args.iotlb_max_mib)?)
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
            recorded = load_baseline(path, host.model())?;
            BaselineSource::Given(&recorded, BaselineKind::Recorded)
        }
        None => {
            default = host.default_baseline(&settings.latency)?;
            default.source()
        }
    };
    let model = host.model().cloned();
    let prober = host.prober(&probe)?;
    let model = model.expect("a host that can be probed has a model");
    run_checks(prober, &model, source, &settings, &args, iotlb.as_ref())
}

/// The IOTLB sweep of `check --iotlb`: the virtual host's curves on a simulated host,
/// streams through the verbs engine on a real one.
fn iotlb_sweep(host: &mut Host, probe: &ProbeOptions, max_mib: u64) -> Result<iotlb::IotlbReport> {
    let plan = iotlb::SweepPlan::up_to(max_mib);
    if let Host::Virtual { vhost, options } = host {
        let config = vhost::VhostConfig {
            seed: options.seed,
            noise: options.noise,
            ..vhost::VhostConfig::default()
        };
        return Ok(iotlb::simulate(
            vhost.topology(),
            vhost.faults(),
            &config,
            &plan,
        ));
    }
    let model = host
        .model()
        .cloned()
        .context("check --iotlb: no host model to sweep")?;
    let groups = host.config().iommu_groups;
    let software: Vec<model::ComponentId> = host.discovery().map_or_else(Vec::new, |d| {
        d.bindings
            .rnics
            .iter()
            .filter(|(_, b)| b.software)
            .map(|(id, _)| id.clone())
            .collect()
    });
    let engine = host
        .verbs_engine(probe)?
        .expect("a real host has a verbs engine");
    Ok(iotlb::measure(engine, &model, &groups, &software, &plan))
}

/// A report as JSON, with the `iotlb` field when the sweep ran.
fn report_json(
    report: &Report,
    iotlb: Option<&iotlb::IotlbReport>,
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
    iotlb: Option<&iotlb::IotlbReport>,
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
            Format::Table => Ok(render::report(host, report, args.runs, style)
                + &iotlb.map_or(String::new(), |sweep| format!("\n{}", iotlb::render(sweep)))
                + "\n"),
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

/// A baseline file, checked against the host it is to judge (when there is a model).
fn load_baseline(path: &std::path::Path, host: Option<&HostTopology>) -> Result<Baseline> {
    let name = path.display().to_string();
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read baseline `{name}`"))?;
    let baseline = Baseline::from_json(&name, &text)?;
    if let Some(host) = host {
        baseline.check_fits(host, &name)?;
    }
    Ok(baseline)
}

fn baseline(args: BaselineArgs) -> Result<Outcome> {
    let latency = LatencySpec {
        op: args.op.into(),
        iterations: args.iterations,
        ..LatencySpec::default()
    };
    let mut host = Host::open(
        &args.host,
        HostOptions {
            seed: args.seed,
            ..HostOptions::default()
        },
    )?;
    let probe = ProbeOptions {
        timeout_ms: args.timeout_ms,
        verbs_faults: Vec::new(),
    };
    let bar = progress_bar(u64::from(args.runs), "baseline");
    let recorded = host.record_baseline(args.runs, &latency, &probe, &mut |run, done, total| {
        show_progress(&bar, run, done, total)
    })?;
    bar.finish_and_clear();
    for path in &recorded.left_out {
        eprintln!("not in the baseline: {path}");
    }
    let b = recorded.baseline;
    let how = b.provenance.as_str();
    let host_name = b.host.clone();
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
    let host = Host::open(&args.host, HostOptions::default())?;
    // A real host shows what discovery found (devices, bindings, what it could not
    // place); a virtual one its model.
    let text = match (host.discovery(), host.model(), args.format) {
        (Some(d), _, Format::Json) => {
            serde_json::to_string_pretty(&render::discovery_json(d))? + "\n"
        }
        (Some(d), _, Format::Table) => render::discovery(d),
        (None, Some(model), Format::Json) => {
            serde_json::to_string_pretty(&render::topology_json(model))? + "\n"
        }
        (None, Some(model), Format::Table) => render::topology(model),
        (None, None, _) => unreachable!("a virtual host always has a model"),
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(Outcome::Healthy)
}

fn counters(args: CountersArgs) -> Result<Outcome> {
    let mut host = Host::open(
        &args.host,
        HostOptions {
            inject: args.inject.clone(),
            ..HostOptions::default()
        },
    )?;
    let report = host.counters();
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
    let mut opened = Host::open(
        &args.host,
        HostOptions {
            inject: args.inject.clone(),
            ..HostOptions::default()
        },
    )?;
    let config = opened.config();
    let host = opened.model().cloned();
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
    let control = std::sync::Arc::new(Control::default());
    let signals = {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT])
            .context("cannot install the SIGTERM handler")?;
        let control = control.clone();
        let handle = signals.handle();
        std::thread::spawn(move || {
            if signals.forever().next().is_some() {
                control.stop();
            }
        });
        handle
    };
    let host = Host::open(
        &args.host,
        HostOptions {
            inject: args.inject.clone(),
            seed: args.seed,
            ..HostOptions::default()
        },
    )?;
    let provenance = host.provenance().as_str();
    let baseline = match &config.agent.baseline {
        Some(path) => Some(load_baseline(path, host.model())?),
        None => None,
    };
    let latency = LatencySpec {
        op: config.probe.op,
        iterations: config.probe.iterations,
        ..LatencySpec::default()
    };
    let probe = ProbeOptions {
        timeout_ms: config.probe.timeout_ms,
        verbs_faults: Vec::new(),
    };
    let mut backend =
        host.into_agent_backend(baseline, &probe, &latency, args.time_scale, &args.schedule)?;
    let db = &config.agent.database;
    let mut store = store::Store::open(db)?;
    if args.collector.is_some() {
        store.queue_for_collector(args.outbox_cap);
    }
    let host_name = match backend.host() {
        Some(h) => h.name.clone(),
        None => "(no RDMA device)".to_string(),
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
    let name = match (&args.name, &args.host.sim) {
        (Some(name), _) => name.clone(),
        (None, Some(_)) => host_name.clone(),
        (None, None) => agent::hostname().context("cannot read the hostname; give --name")?,
    };
    let probe_tokens = match args
        .probe_tokens
        .as_ref()
        .or(config.agent.probe_tokens.as_ref())
    {
        Some(file) => {
            let tokens = hostping::collector::tokens::Tokens::load(file)?;
            eprintln!(
                "hostping agent: probing on request (POST /api/probe) for {} tokens of {}",
                tokens.len(),
                file.display()
            );
            // An empty file is allowed (a deployment may hand out tokens later), but said.
            if tokens.is_empty() {
                eprintln!(
                    "hostping agent: {} holds no token: every probe request is refused (401)",
                    file.display()
                );
            }
            Some(std::sync::Arc::new(tokens))
        }
        None => None,
    };
    let server = agent::http::serve(
        agent::http::ServeOptions {
            listen: config.agent.listen,
            database: db.clone(),
            name: name.clone(),
            probe: agent::http::ProbeAccess {
                tokens: probe_tokens,
                control: control.clone(),
            },
        },
        metrics.clone(),
        status.clone(),
    )
    .with_context(|| format!("cannot listen on {}", config.agent.listen))?;
    eprintln!(
        "hostping agent: watching {host_name} ({provenance}); runs in {}; serving http://{}/metrics and /api/runs",
        db.display(),
        server.addr
    );
    let fabric = match &config.fabric {
        Some(f) => Some(agent::fabric::start(
            f,
            db,
            metrics.clone(),
            control.clone(),
            |line| eprintln!("hostping agent: {line}"),
        )?),
        None => None,
    };
    let sender = match (&args.collector, &args.token) {
        (Some(url), Some(token)) => {
            eprintln!("hostping agent: sending runs to {url} as {name}");
            let target = agent::outbox::CollectorTarget {
                url: url.clone(),
                token: token.clone(),
                host: name.clone(),
                tls: hostping::collector::tls::client_config(args.collector_ca.as_deref())?,
                // An empty rack in the file is no rack (the collector refuses "").
                rack: args
                    .rack
                    .clone()
                    .or_else(|| config.agent.rack.clone().filter(|r| !r.is_empty())),
            };
            Some(agent::outbox::start(
                target,
                db.clone(),
                metrics.clone(),
                |line| eprintln!("hostping agent: {line}"),
            )?)
        }
        _ => None,
    };
    let mut log = |line: &str| eprintln!("hostping agent: {line}");
    let mut agent = Agent::new(backend.as_mut(), &config, store, metrics, status, &mut log)?;
    let stored = agent.run(&control, args.run_for.map(|d| d.as_nanos() as u64));
    if let Some(fabric) = fabric {
        // The loop ended by a signal or --run-for: the sampler ends with it.
        control.stop();
        fabric.join();
    }
    if let Some(sender) = sender {
        sender.finish();
    }
    server.shutdown();
    signals.close();
    eprintln!(
        "hostping agent: stopped; {stored} runs stored in {}",
        db.display()
    );
    Ok(Outcome::Healthy)
}

fn collector_command(args: CollectorArgs) -> Result<Outcome> {
    let config = hostping::collector::CollectorConfig {
        database: args.database,
        listen: args.listen,
        tokens: args.tokens,
        max_body: args.max_body,
        tls: args
            .tls_cert
            .zip(args.tls_key)
            .map(|(cert, key)| hostping::collector::tls::TlsFiles { cert, key }),
    };
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    hostping::collector::run(&config, |addr| {
        eprintln!("hostping collector: serving {scheme}://{addr}/api/runs and /api/hosts")
    })?;
    Ok(Outcome::Healthy)
}

fn fleet_command(args: &hostping::cli::FleetArgs) -> Result<Outcome> {
    let findings = hostping::fleet_cli::run(args, &mut std::io::stdout().lock())?;
    Ok(if findings {
        Outcome::Findings
    } else {
        Outcome::Healthy
    })
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
        BenchCommand::Collector {
            database,
            hosts,
            days,
            cadence,
            clients,
            queries,
            sim,
            format,
        } => {
            let settings = hostping::collector::bench::BenchSettings {
                database,
                hosts,
                days,
                cadence,
                clients,
                queries,
                model: sim::load_host(&sim)?,
            };
            let bar = BenchBar::default();
            let result = hostping::collector::bench::run(&settings, &bar)?;
            bar.finish();
            let text = match format {
                Format::Json => serde_json::to_string_pretty(&result)? + "\n",
                Format::Table => hostping::collector::bench::table(&result),
            };
            std::io::stdout().lock().write_all(text.as_bytes())?;
            Ok(Outcome::Healthy)
        }
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
                    "full-mesh check of {} ({} paths + {} re-probes, each {} iterations x 2 sizes, simulated), median of {} checks:\n  probe + analysis:             {:.1} ms CPU\n  with a fresh 3-run baseline:  {:.1} ms CPU\n",
                    cost.host, cost.paths, cost.reprobes, cost.iterations, cost.repeat, cost.check_cpu_ms, cost.with_baseline_cpu_ms
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
