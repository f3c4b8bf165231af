//! `hostping fabric bench cases|peer`: the thesis' case studies side by side with its figures,
//! and the CODES peer's workloads side by side with its measurements.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;

use anyhow::{bail, Context, Result};
use fabric::analysis::view::JobSelection;
use fabric::analysis::{write_plots, LinkView, PlotOptions, ViewSpec};
use fabric::cases::{self, CaseReport, Scale};
use fabric::peer::{self, PeerWorkload};
use fabric::sim::{SimConfig, SimResult, Simulation};
use fabric::topology::Topology;
use fabric::traffic::{self, JobPlan, MappingSpec, WorkloadSpec};
use serde::{Deserialize, Serialize};

use super::args::{CasesArgs, FabricBenchCommand, FabricFormat, PeerArgs};
use super::{prepare, run_with_progress};
use crate::agent::cost::{peak_resident_bytes, process_cost};

pub fn run(command: FabricBenchCommand) -> Result<bool> {
    match command {
        FabricBenchCommand::Cases(args) => bench_cases(&args),
        FabricBenchCommand::Peer(args) if args.child => peer_child(&args),
        FabricBenchCommand::Peer(args) => bench_peer(&args),
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
        &dir.join(super::output::PLOT_STEM),
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
    let out: Option<PathBuf> = args.out.clone();
    let mut reports = Vec::new();
    for (_, case) in chosen {
        let mut runner =
            |label: &str, topology: &Topology, plans: Vec<JobPlan>, config: SimConfig| {
                run_plans(out.as_deref(), label, topology, plans, config)
            };
        let report = case(Scale::Thesis, args.seed, &mut runner)?;
        if args.format == FabricFormat::Text {
            std::io::stdout()
                .lock()
                .write_all(report.render_text().as_bytes())?;
            println!();
        }
        reports.push(report);
    }
    if args.format == FabricFormat::Json {
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

/// One workload's figures, measured in its own process.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PeerFigures {
    pub workload: String,
    pub nodes: u32,
    pub load: f64,
    pub simulated_us: f64,
    pub packets_delivered: u64,
    pub events: u64,
    pub wall_seconds: f64,
    /// CPU time of the process (on a shared machine the wall time includes waiting for a core).
    pub cpu_seconds: f64,
    pub packets_per_wall_second: f64,
    pub peak_rss_mb: f64,
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
    let topology = Topology::new(workload.topology.clone()).map_err(anyhow::Error::msg)?;
    let config = workload.config(args.seed);
    let spec = WorkloadSpec::from_str(&format!(
        "uniform,load={},bytes={}",
        workload.load,
        peer::MESSAGE_BYTES
    ))?;
    let simulation = prepare(&topology, &spec, &MappingSpec::RowMajor, config)?;
    let result = simulation.run(&mut |_| {});
    let figures = PeerFigures {
        workload: workload.id.to_string(),
        nodes: topology.num_nodes(),
        load: workload.load,
        simulated_us: result.end_ps as f64 / 1e6,
        packets_delivered: result.packets_delivered,
        events: result.events,
        wall_seconds: result.wall_seconds,
        cpu_seconds: process_cost().0,
        packets_per_wall_second: result.packets_delivered as f64 / result.wall_seconds,
        peak_rss_mb: peak_resident_bytes().context("/proc/self/status: no VmHWM")? as f64 / 1e6,
    };
    println!("{}", serde_json::to_string(&figures)?);
    Ok(false)
}

#[derive(Debug, Serialize)]
struct PeerRow {
    hostping: PeerFigures,
    codes: peer::CodesFigures,
    speedup: f64,
    memory_ratio: f64,
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
            "hostping: peer workload {} ({} nodes, load {})...",
            workload.id,
            Topology::new(workload.topology.clone())
                .map_err(anyhow::Error::msg)?
                .num_nodes(),
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
        rows.push(PeerRow {
            speedup: workload.codes.wall_seconds / figures.wall_seconds,
            memory_ratio: figures.peak_rss_mb / workload.codes.peak_rss_mb,
            codes: workload.codes,
            hostping: figures,
        });
    }
    let text = match args.format {
        FabricFormat::Json => serde_json::to_string_pretty(&rows)? + "\n",
        FabricFormat::Text => peer_table(&rows),
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(false)
}

fn peer_table(rows: &[PeerRow]) -> String {
    let mut out = String::from(
        "workload  nodes  load  sim us  packets    wall s   cpu s  packets/s  peak MB |  CODES wall s  packets/s  peak MB |  speed-up  memory\n",
    );
    for r in rows {
        let h = &r.hostping;
        out += &format!(
            "{:<8}  {:>5}  {:>4.2}  {:>6.1}  {:>9}  {:>6.2}  {:>6.2}  {:>9.3e}  {:>7.0} |  {:>12.2}  {:>9.3e}  {:>7.0} |  {:>7.1}x  {:>5.2}x\n",
            h.workload,
            h.nodes,
            h.load,
            h.simulated_us,
            h.packets_delivered,
            h.wall_seconds,
            h.cpu_seconds,
            h.packets_per_wall_second,
            h.peak_rss_mb,
            r.codes.wall_seconds,
            r.codes.packets_per_wall_second(),
            r.codes.peak_rss_mb,
            r.speedup,
            r.memory_ratio,
        );
    }
    out += "(hostping: simulated, telemetry off as in CODES; CODES: sequential runs from ../shared/reference/codes-peer.md)\n";
    out
}
