//! `hostping fabric bench cases|roots|peer|sampling`: the thesis' case studies side by side
//! with its figures, the roots switch-port counters find on them against reservoir
//! sampling's, the CODES peer's workloads side by side with its measurements, and the LDMS
//! ibfabric sampler study replayed on the simulator.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;

use anyhow::{bail, Context, Result};
use fabric::analysis::view::JobSelection;
use fabric::analysis::{write_plots, LinkView, PlotOptions, ViewSpec};
use fabric::cases::{self, CaseReport, Scale};
use fabric::peer::{self, PeerWorkload};
use fabric::roots_study;
use fabric::sim::{SimConfig, SimResult, Simulation};
use fabric::topology::Topology;
use fabric::traffic::{self, JobPlan, MappingSpec, WorkloadSpec};
use serde::{Deserialize, Serialize};

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

/// One workload's figures, measured in its own process: the work done (what the network
/// did, simulated) and what it cost (measured).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PeerFigures {
    pub workload: String,
    pub nodes: u32,
    /// Offered load, fraction of line rate (CODES' `--load` converted, see `fabric::peer`).
    pub load: f64,
    pub link_latency_ns: f64,
    pub simulated_us: f64,
    pub packets_delivered: u64,
    pub mean_latency_us: f64,
    pub max_latency_us: f64,
    pub mean_hops: f64,
    pub events: u64,
    pub events_per_packet: f64,
    pub events_per_second: f64,
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
    let topology = Topology::new(workload.topology.clone())?;
    let config = workload.config(args.seed);
    let link_latency_ns = config.link_latency_ns;
    let spec = WorkloadSpec::from_str(&workload.workload_spec())?;
    let simulation = prepare(&topology, &spec, &MappingSpec::RowMajor, config)?;
    let result = simulation.run(&mut |_| {});
    let [job] = result.jobs.as_slice() else {
        bail!("peer workload {}: expected one job", workload.id);
    };
    let packets = result.packets_delivered;
    let figures = PeerFigures {
        workload: workload.id.to_string(),
        nodes: topology.num_nodes(),
        load: workload.load,
        link_latency_ns,
        simulated_us: result.end_ps as f64 / 1e6,
        packets_delivered: packets,
        mean_latency_us: job.mean_message_latency_ns / 1000.0,
        max_latency_us: job.max_message_latency_ns / 1000.0,
        mean_hops: job.average_path_length(),
        events: result.events,
        events_per_packet: result.events as f64 / packets.max(1) as f64,
        events_per_second: result.events as f64 / result.wall_seconds,
        wall_seconds: result.wall_seconds,
        cpu_seconds: process_cost().0,
        packets_per_wall_second: packets as f64 / result.wall_seconds,
        peak_rss_mb: peak_resident_bytes().context("/proc/self/status: no VmHWM")? as f64 / 1e6,
    };
    println!("{}", serde_json::to_string(&figures)?);
    Ok(false)
}

/// One workload: this simulator's run beside CODES' quoted figures, and the ratios.
#[derive(Debug, Serialize)]
struct PeerRow {
    workload: String,
    /// The `--load` CODES ran with (its GiB/s unit), against `hostping.load` of line rate.
    codes_load: f64,
    hostping: PeerFigures,
    codes: peer::CodesFigures,
    /// hostping's packets delivered against CODES', percent.
    packets_difference_percent: f64,
    /// CODES wall time / hostping wall time, against CODES' fastest and median run.
    speedup_vs_best: f64,
    speedup_vs_median: f64,
    /// hostping peak RSS / CODES peak RSS.
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
        let codes = workload.codes;
        rows.push(PeerRow {
            workload: workload.id.to_string(),
            codes_load: workload.codes_load,
            packets_difference_percent: (figures.packets_delivered as f64 / codes.packets as f64
                - 1.0)
                * 100.0,
            speedup_vs_best: codes.best_wall_seconds() / figures.wall_seconds,
            speedup_vs_median: codes.median_wall_seconds() / figures.wall_seconds,
            memory_ratio: figures.peak_rss_mb / codes.peak_rss_mb,
            codes,
            hostping: figures,
        });
    }
    let text = match args.format {
        Format::Json => serde_json::to_string_pretty(&rows)? + "\n",
        Format::Table => peer_table(&rows),
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(false)
}

/// Each workload as a two-column block, hostping beside CODES, the work done first (so that a
/// reader sees both simulators did the same) and its cost after.
fn peer_table(rows: &[PeerRow]) -> String {
    let optional = |v: Option<f64>, precision: usize| match v {
        Some(v) => format!("{v:.precision$}"),
        None => "-".to_string(),
    };
    let mut out = String::new();
    for r in rows {
        let (h, c) = (&r.hostping, &r.codes);
        out += &format!(
            "workload {}: {} nodes, {} us, CODES --load={} = {:.9} of line rate, link latency {} ns, telemetry off\n",
            r.workload, h.nodes, h.simulated_us, r.codes_load, h.load, h.link_latency_ns
        );
        out += &format!(
            "  {:<20} {:>24} {:>22}\n",
            "", "hostping (simulated)", "CODES (quoted)"
        );
        let mut line = |what: &str, ours: String, theirs: String| {
            out += &format!("  {what:<20} {ours:>24} {theirs:>22}\n");
        };
        line(
            "packets delivered",
            format!(
                "{} ({:+.3} %)",
                h.packets_delivered, r.packets_difference_percent
            ),
            c.packets.to_string(),
        );
        line(
            "mean latency us",
            format!("{:.3}", h.mean_latency_us),
            optional(c.mean_latency_us, 3),
        );
        line(
            "max latency us",
            format!("{:.3}", h.max_latency_us),
            optional(c.max_latency_us, 3),
        );
        line(
            "mean hops",
            format!("{:.3}", h.mean_hops),
            optional(c.mean_hops, 3),
        );
        line(
            "wall s",
            format!("{:.2}", h.wall_seconds),
            c.wall_seconds
                .iter()
                .map(|w| w.to_string())
                .collect::<Vec<_>>()
                .join(" / "),
        );
        line("cpu s", format!("{:.2}", h.cpu_seconds), "-".to_string());
        line(
            "peak RSS MB",
            format!("{:.0}", h.peak_rss_mb),
            format!("{:.0}", c.peak_rss_mb),
        );
        line("events", h.events.to_string(), c.events.to_string());
        line(
            "events/s",
            format!("{:.3e}", h.events_per_second),
            format!("{:.3e}", c.events as f64 / c.best_wall_seconds()),
        );
        line(
            "events/packet",
            format!("{:.2}", h.events_per_packet),
            format!("{:.2}", c.events as f64 / c.packets as f64),
        );
        line(
            "packets/wall s",
            format!("{:.3e}", h.packets_per_wall_second),
            format!("{:.3e}", c.packets as f64 / c.best_wall_seconds()),
        );
        out += &format!(
            "  speed-up {:.1}x (CODES' best run), {:.1}x (its median); memory {:.3}x\n  CODES measured {}\n\n",
            r.speedup_vs_best, r.speedup_vs_median, r.memory_ratio, c.measured
        );
    }
    out += "hostping: simulated and timed here. CODES is not run by this benchmark: its sequential runs\n\
            are quoted from CODES' own runs on this project's build machine (Debian 12, 2 cores). The simulators\n\
            count events differently; packets, latency and hops show that both did the same work.\n";
    out
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
        Format::Table => sampling_tables(&result),
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(false)
}

/// The study's two tables, its set-up above them and the work done beside every figure.
fn sampling_tables(r: &fabric::sampling::study::StudyResult) -> String {
    use fabric::sampling::study::{Targets, Work, TEST_MESSAGE_BYTES};
    let c = &r.config;
    let sim = &c.sim;
    let ms = |ps: u64| ps as f64 / 1e9;
    let mut out = String::new();
    out += "Switch-port sampling on the simulated LDMS ibfabric testbed (SIMULATED; paper: \
            Measuring Minimum Switch Port Metric Retrieval Time and Impact for Multi-Layer \
            InfiniBand Fabrics)\n";
    out += &format!(
        "fabric: 2 leaf switches and 1 core of 36 ports, 2 links leaf-core; links {} Gb/s \
         (4x QDR data rate), {} ns; switches {} ns; MTU {} B\n",
        sim.link_gbps, sim.link_latency_ns, sim.switch_latency_ns, sim.packet_bytes
    );
    out += &format!(
        "MADs: {} B on VL15 (strict priority, no credits); one management processor per switch, \
         {} ns per query, FIFO\n",
        sim.mads.mad_bytes, sim.mads.service_ns
    );
    out += &format!(
        "samplers: the first 8 nodes under each leaf (16), reading all 36 port numbers of each \
         switch one query after another; sweeps start together, the first {} ms in\n",
        ms(fabric::sampling::study::FIRST_SWEEP_PS)
    );
    out += &format!(
        "load: a bandwidth test from the first sampler node (leaf 1) to the first node of leaf 2, \
         {} KiB messages back to back\n\n",
        TEST_MESSAGE_BYTES / 1024
    );
    out += &format!(
        "Spread, us: mean / min / max over every sweep of every sampler; {} sweeps per sampler at \
         {} Hz per cell\n",
        c.spread_sweeps, c.spread_hz
    );
    out += &format!(
        "  {:<18} {:>5}  {:>24} {:>24} {:>24} {:>24}\n",
        "targets",
        "ports",
        "1 sampler idle",
        "1 sampler loaded",
        "16 redundant idle",
        "16 redundant loaded"
    );
    let cell = |targets: Targets, samplers: usize, loaded: bool| {
        r.spread
            .iter()
            .find(|s| s.targets == targets && s.samplers == samplers && s.loaded == loaded)
    };
    let mut total = Work::default();
    for targets in Targets::ALL {
        let mut line = String::new();
        let mut ports = 0;
        for (samplers, loaded) in [(1, false), (1, true), (16, false), (16, true)] {
            let text = match cell(targets, samplers, loaded) {
                Some(s) => {
                    ports = s.ports;
                    add_work(&mut total, &s.work);
                    format!(
                        "{:.1} / {:.1} / {:.1}",
                        s.spread.mean_us, s.spread.min_us, s.spread.max_us
                    )
                }
                None => "-".to_string(),
            };
            line += &format!(" {text:>24}");
        }
        out += &format!("  {:<18} {:>5} {line}\n", targets.label(), ports);
    }
    out += &format!("  work: {}\n\n", work_text(&total));
    out += &format!(
        "Bandwidth test throughput with sampling of all 108 ports, {} ms simulated per run; \
         without sampling {:.4} Gb/s ({})\n",
        ms(c.bandwidth_ps),
        r.baseline_gbps,
        work_text(&r.baseline_work)
    );
    out += &format!(
        "  {:>6}  {:<14} {:>8} {:>10} {:>9} {:>18}  work\n",
        "Hz", "sampling", "samplers", "Gb/s", "change %", "spread mean/max us"
    );
    for b in &r.bandwidth {
        out += &format!(
            "  {:>6}  {:<14} {:>8} {:>10.4} {:>+9.4} {:>18}  {}\n",
            b.hz,
            b.sampling.label(),
            b.samplers,
            b.gbps,
            b.change_pct,
            format!("{:.1} / {:.1}", b.spread.mean_us, b.spread.max_us),
            work_text(&b.work)
        );
    }
    out += "\nAll figures are simulated. The Delegator never splits a switch: with 3 switches it \
            gives one to each of 3 samplers and none to the other 13.\n";
    out
}

fn add_work(total: &mut fabric::sampling::study::Work, w: &fabric::sampling::study::Work) {
    total.sweeps += w.sweeps;
    total.queries += w.queries;
    total.mad_hops += w.mad_hops;
    total.packets += w.packets;
    total.events += w.events;
    total.wall_seconds += w.wall_seconds;
}

fn work_text(w: &fabric::sampling::study::Work) -> String {
    format!(
        "{} sweeps, {} queries, {} MAD hops, {} data packets, {} events, {:.2} s wall",
        w.sweeps, w.queries, w.mad_hops, w.packets, w.events, w.wall_seconds
    )
}
