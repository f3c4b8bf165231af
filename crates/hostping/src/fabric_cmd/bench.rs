//! `hostping fabric bench cases|roots|peer|sampling`: the thesis' case studies side by side
//! with its figures, the roots switch-port counters find on them against reservoir
//! sampling's, the CODES peer's workloads side by side with its measurements, and the LDMS
//! ibfabric sampler study replayed on the simulator. The figures and their tables are
//! `fabric`'s (`fabric::peer`, `fabric::sampling::study`); this runs them, each peer
//! workload in a process of its own so that its cost is its own.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;

use anyhow::{bail, Context, Result};
use fabric::analysis::view::JobSelection;
use fabric::analysis::{write_plots, LinkView, PlotOptions, ViewSpec};
use fabric::cases::{self, CaseReport, Scale};
use fabric::peer::{self, PeerFigures, PeerRow, PeerWorkload};
use fabric::roots_study;
use fabric::sim::{SimConfig, SimResult, Simulation};
use fabric::topology::Topology;
use fabric::traffic::{self, JobPlan, MappingSpec, WorkloadSpec};

use super::simulate::{duration_ps, prepare, run_with_progress};
use crate::cli::fabric::{
    CaseScale, CasesArgs, FabricBenchCommand, PeerArgs, RootsArgs, SamplingArgs,
};
use crate::cli::Format;
use check::cost::{peak_resident_bytes, process_cost};

pub fn run(command: FabricBenchCommand) -> Result<bool> {
    match command {
        FabricBenchCommand::Cases(args) => bench_cases(&args),
        FabricBenchCommand::Roots(args) => bench_roots(&args).map(|()| false),
        FabricBenchCommand::Peer(args) if args.child => peer_child(&args),
        FabricBenchCommand::Peer(args) => bench_peer(&args),
        FabricBenchCommand::Sampling(args) => bench_sampling(&args),
    }
}

/// Runs the plans with a progress bar, and keeps the run's summary under `out` if asked.
fn run_plans(
    out: Option<&Path>,
    label: &str,
    topology: &Topology,
    plans: Vec<JobPlan>,
    config: SimConfig,
) -> SimResult {
    let jobs = plans.into_iter().map(JobPlan::into_job).collect();
    let end_ps = config.end_ps;
    let simulation =
        Simulation::new(topology, config, jobs).expect("case studies are valid inputs");
    let result = run_with_progress(simulation, label, end_ps);
    if let Some(dir) = out {
        // The figures are already in the report: a file that cannot be written is a warning.
        if let Err(e) = keep_run(
            &dir.join(label.replace([' ', ':', ','], "-")),
            topology,
            &result,
        ) {
            eprintln!("hostping: warning: {e:#}");
        }
    }
    result
}

/// A case's run in `dir`: its jobs and configuration (`run.json`) and the congested-fraction
/// plot of all its samples.
fn keep_run(dir: &Path, topology: &Topology, result: &SimResult) -> Result<()> {
    let run =
        serde_json::json!({ "simulated": true, "config": result.config, "jobs": result.jobs });
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    super::output::write(
        dir,
        "run.json",
        &(serde_json::to_string_pretty(&run)? + "\n"),
    )?;
    let view = LinkView::build(
        topology,
        result,
        &ViewSpec::for_run(result, JobSelection::All),
    )?;
    write_plots(
        topology,
        &view,
        &PlotOptions::default(),
        &dir.join(fabric::summary::PLOT_STEM),
    )?;
    Ok(())
}

fn bench_cases(args: &CasesArgs) -> Result<bool> {
    type Case = fn(Scale, u64, &mut cases::Runner) -> Result<CaseReport, traffic::TrafficError>;
    let all: [(&str, Case); 3] = [
        ("stencil", cases::stencil),
        ("reduction", cases::reduction),
        ("background", cases::background),
    ];
    let chosen: Vec<(&str, Case)> = match args.case.as_str() {
        "all" => all.to_vec(),
        name => match all.iter().find(|(n, _)| *n == name) {
            Some(case) => vec![*case],
            None => bail!("--case {name}: expected stencil, reduction, background or all"),
        },
    };
    let out: Option<PathBuf> = args.out_dir.clone();
    let mut reports = Vec::new();
    for (_, case) in chosen {
        let mut runner =
            |label: &str, topology: &Topology, plans: Vec<JobPlan>, config: SimConfig| {
                run_plans(out.as_deref(), label, topology, plans, config)
            };
        let report = case(Scale::Thesis, args.seed, &mut runner)?;
        if args.format == Format::Table {
            std::io::stdout()
                .lock()
                .write_all(report.render_text().as_bytes())?;
            println!();
        }
        reports.push(report);
    }
    if args.format == Format::Json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    }
    let failed: Vec<&str> = reports
        .iter()
        .filter(|r| !r.passed())
        .map(|r| r.name.as_str())
        .collect();
    if failed.is_empty() {
        Ok(false)
    } else {
        bail!(
            "case studies that did not reproduce the thesis: {}",
            failed.join("; ")
        )
    }
}

fn bench_roots(args: &RootsArgs) -> Result<()> {
    let scale = match args.scale {
        CaseScale::Thesis => Scale::Thesis,
        CaseScale::Small => Scale::Small,
    };
    let mut runner = |label: &str, topology: &Topology, plans: Vec<JobPlan>, config: SimConfig| {
        run_plans(None, label, topology, plans, config)
    };
    let rows = roots_study::roots_study(scale, args.seed, &mut runner)?;
    let text = match args.format {
        Format::Table => roots_study::render_text(&rows),
        Format::Json => {
            serde_json::to_string_pretty(&serde_json::json!({
                "simulated": true,
                "rates_hz": roots_study::RATES_HZ,
                "runs": rows,
            }))? + "\n"
        }
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(())
}

fn workload_by_id(id: &str) -> Result<PeerWorkload> {
    peer::workloads()
        .into_iter()
        .find(|w| w.id.eq_ignore_ascii_case(id))
        .with_context(|| format!("--workload {id}: expected A, B, C or D"))
}

fn peer_child(args: &PeerArgs) -> Result<bool> {
    let [id] = args.workloads.as_slice() else {
        bail!("--child runs exactly one --workload");
    };
    let workload = workload_by_id(id)?;
    let topology = Topology::new(workload.topology.clone())?;
    let config = workload.config(args.seed);
    let link_latency_ns = config.link_latency_ns;
    let spec = WorkloadSpec::from_str(&workload.workload_spec())?;
    let (simulation, _) = prepare(&topology, &spec, &MappingSpec::RowMajor, config)?;
    let result = simulation.run(&mut |_| {});
    let peak_rss = peak_resident_bytes().context("/proc/self/status: no VmHWM")?;
    let figures = PeerFigures::of_run(
        &workload,
        &topology,
        link_latency_ns,
        &result,
        process_cost().0,
        peak_rss,
    )
    .with_context(|| format!("peer workload {}: expected one job", workload.id))?;
    println!("{}", serde_json::to_string(&figures)?);
    Ok(false)
}

fn bench_peer(args: &PeerArgs) -> Result<bool> {
    let ids: Vec<String> = if args.workloads.is_empty() {
        peer::workloads().iter().map(|w| w.id.to_string()).collect()
    } else {
        args.workloads.clone()
    };
    let exe = std::env::current_exe().context("cannot find the hostping executable")?;
    let mut rows = Vec::new();
    for id in &ids {
        let workload = workload_by_id(id)?;
        eprintln!(
            "hostping: peer workload {} ({} nodes, load {} of line rate)...",
            workload.id,
            Topology::new(workload.topology.clone())?.num_nodes(),
            workload.load
        );
        let output = Command::new(&exe)
            .args([
                "fabric",
                "bench",
                "peer",
                "--child",
                "--workload",
                workload.id,
                "--seed",
            ])
            .arg(args.seed.to_string())
            .output()
            .with_context(|| format!("{}: cannot run", exe.display()))?;
        if !output.status.success() {
            bail!(
                "peer workload {}: {}",
                workload.id,
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        let figures: PeerFigures = serde_json::from_slice(&output.stdout)
            .with_context(|| format!("peer workload {}: unreadable figures", workload.id))?;
        rows.push(PeerRow::new(workload, figures));
    }
    let text = match args.format {
        Format::Json => serde_json::to_string_pretty(&rows)? + "\n",
        Format::Table => peer::render_text(&rows),
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(false)
}

/// `fabric bench sampling`: the study, as tables or JSON.
fn bench_sampling(args: &SamplingArgs) -> Result<bool> {
    use fabric::sampling::study::{run_study, StudyConfig, FIRST_SWEEP_PS};
    if !(args.spread_hz.is_finite() && args.spread_hz > 0.0) {
        bail!("--spread-hz {}: a positive rate", args.spread_hz);
    }
    if let Some(hz) = args.hz.iter().find(|hz| !(hz.is_finite() && **hz > 0.0)) {
        bail!("--hz {hz}: positive rates");
    }
    let bandwidth_ps = duration_ps(args.duration);
    if bandwidth_ps <= FIRST_SWEEP_PS {
        bail!(
            "--duration {}: longer than {} ms, when the first sweep starts",
            humantime::format_duration(args.duration),
            FIRST_SWEEP_PS / 1_000_000_000
        );
    }
    let mut config = StudyConfig {
        spread_hz: args.spread_hz,
        spread_sweeps: args.sweeps,
        bandwidth_ps,
        frequencies: args.hz.clone(),
        ..StudyConfig::default()
    };
    if let Some(ns) = args.service_ns {
        config.sim.mads.service_ns = ns;
    }
    let result = run_study(&config, &mut |label| eprintln!("hostping: {label}..."))?;
    let text = match args.format {
        Format::Json => serde_json::to_string_pretty(&result)? + "\n",
        Format::Table => fabric::sampling::study::render_text(&result),
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(false)
}
