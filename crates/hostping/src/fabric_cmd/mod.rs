//! `hostping fabric ...`: the fabric layer's commands on top of the `fabric` crate. This
//! module parses nothing and decides nothing: it builds the inputs, runs the simulator, and
//! writes what the crate's analysis concluded; [`switches`] does the same for a real
//! InfiniBand subnet through `rdma`.

pub mod bench;
mod net;
pub mod output;
pub mod route;
pub mod simulate;
pub mod switches;

use std::io::Write;
use std::str::FromStr;

use crate::cli::Format;
use crate::output::Outcome;
use anyhow::{bail, Context, Result};
use clap::ValueEnum;
use fabric::analysis::view::JobSelection;
use fabric::analysis::{
    diagnose, judge_uniform, render_text, write_plots, write_window_plots, Cause, Directions,
    LinkView, PlotOptions, Thresholds, ViewSpec,
};
use fabric::real_fabric::{RealFabricError, TreeInput};
use fabric::sim::{CongestionRule, SimConfig};
use fabric::telemetry::{TelemetryConfig, TelemetryKind};
use fabric::topology::Engine;
use fabric::topology_file::TreeInputError;
use fabric::traffic::{self, MappingSpec, WorkloadSpec};

use crate::cli::fabric::{
    FabricCommand, MergeArgs, MergeFormat, PlotDirections, RoutingChoice, SimArgs, SuggestArgs,
    TelemetryChoice,
};
use fabric::summary::{ports_csv, RunSummary, DIAGNOSIS_FILE, PLOT_STEM, PORTS_FILE, SUMMARY_FILE};
use simulate::{duration_ps, prepare, run_with_progress};

/// Runs one fabric command; `Findings` when it found congestion (exit status 1),
/// `Inconclusive` when a simulation could not be judged (exit status 3).
pub fn run(command: FabricCommand) -> Result<Outcome> {
    let found = match command {
        FabricCommand::Sim(args) => return sim(&args),
        FabricCommand::SuggestMapping(args) => suggest(&args),
        FabricCommand::Bench(cmd) => bench::run(cmd),
        FabricCommand::Merge(args) => merge(&args),
        FabricCommand::Discover(args) => switches::discover_command(&args),
        FabricCommand::Route(args) => return route::route_command(&args),
        FabricCommand::Sample(args) => switches::sample_command(&args),
        FabricCommand::Delegate(args) => switches::delegate_command(&args).map(|()| false),
        FabricCommand::Net(args) => net::net_command(&args).map(|()| false),
    }?;
    Ok(Outcome::found(found))
}

fn telemetry_kind(choice: TelemetryChoice) -> TelemetryKind {
    match choice {
        TelemetryChoice::Reservoir => TelemetryKind::Reservoir,
        TelemetryChoice::Reservoir1Bit => TelemetryKind::Reservoir1Bit,
        TelemetryChoice::SingleBit => TelemetryKind::SingleBit,
        TelemetryChoice::Off => TelemetryKind::Off,
    }
}

/// `queue-exceeds-credits`, `queue-above:BYTES` or `credits-below:BYTES` (thesis 3.2, 5.10).
fn congestion_rule(text: &str) -> Result<CongestionRule> {
    let bytes = |value: &str| -> Result<u32> {
        let bytes = traffic::units::parse_bytes(value)
            .map_err(|e| anyhow::anyhow!("--congestion {text}: {e}"))?;
        u32::try_from(bytes).with_context(|| format!("--congestion {text}: too large"))
    };
    match text.split_once(':') {
        None if text == "queue-exceeds-credits" => Ok(CongestionRule::QueueExceedsCredits),
        Some(("queue-above", value)) => Ok(CongestionRule::QueueAbove { bytes: bytes(value)? }),
        Some(("credits-below", value)) => Ok(CongestionRule::CreditsBelow { bytes: bytes(value)? }),
        _ => bail!(
            "--congestion {text}: expected queue-exceeds-credits, queue-above:BYTES or credits-below:BYTES"
        ),
    }
}

fn sim_config(args: &SimArgs, link_gbps: f64) -> Result<SimConfig> {
    let telemetry = TelemetryConfig {
        kind: telemetry_kind(args.telemetry),
        hop_counter_bits: args.hop_bits,
        tag_fraction: args.tag_fraction,
    };
    Ok(SimConfig {
        link_gbps,
        link_latency_ns: args.link_latency_ns,
        switch_latency_ns: args.switch_latency_ns,
        packet_bytes: args.packet_bytes,
        flow_unit_bytes: args.flow_unit_bytes,
        buffer_bytes: args.buffer_bytes,
        end_ps: args.end.map(duration_ps),
        seed: args.seed,
        adaptive: !args.deterministic_routing,
        congestion: congestion_rule(&args.congestion)?,
        telemetry,
        window_ps: args.window.map(duration_ps),
        ..SimConfig::default()
    })
}

/// `--topology` (and `--routing`, `--routes`) read as the simulator's input
/// (`fabric::topology_file::read`); what reading a refused fabric passed over is still said.
pub(crate) fn topology_input(
    arg: &str,
    engine: Option<Engine>,
    routes: Option<&std::path::Path>,
) -> Result<TreeInput> {
    let read = fabric::topology_file::read(arg, engine, routes);
    if let Err(TreeInputError::RealFabric(RealFabricError::NotSimulable { notes, .. })) = &read {
        for note in notes {
            eprintln!("{arg}: note: {note}");
        }
    }
    Ok(read?)
}

fn sim(args: &SimArgs) -> Result<Outcome> {
    let engine = args.routing.map(|choice| match choice {
        RoutingChoice::Minhop => Engine::MinHop,
        RoutingChoice::Updn => Engine::UpDown,
    });
    let mut input = topology_input(&args.topology.topology, engine, args.routes.as_deref())?;
    if let Some(line) = input.describe() {
        eprintln!("{line}");
    }
    let fabric = input.fabric.take();
    let (topology, link_gbps, rates_line) = input.with_rates(args.link_gbps)?;
    if let (Some(fabric), Some(line)) = (&fabric, rates_line) {
        eprintln!("{}: note: {line}", fabric.file);
    }
    let workload = WorkloadSpec::from_str(&args.workload)?;
    let mapping = MappingSpec::from_str(&args.mapping)?;
    let config = sim_config(args, link_gbps)?;
    let end_ps = config.end_ps;
    let (simulation, uniform) = prepare(&topology, &workload, &mapping, config)?;
    // Before the run, so that a folder we cannot write to does not cost a simulation.
    std::fs::create_dir_all(&args.out_dir).with_context(|| {
        format!(
            "{}: cannot create the output folder",
            args.out_dir.display()
        )
    })?;
    let result = run_with_progress(simulation, "simulating", end_ps);

    let jobs = JobSelection::parse(&args.samples, &result.jobs)?;
    let spec = ViewSpec::for_run(&result, jobs.clone());
    let estimate = LinkView::build(&topology, &result, &spec)?;
    let truth = LinkView::build(&topology, &result, &ViewSpec::ground_truth(jobs))?;
    let mut diagnosis = diagnose(&topology, &estimate, &Thresholds::default());
    if let Some(load) = &uniform {
        diagnosis = judge_uniform(diagnosis, &topology, link_gbps, load);
    }

    let telemetry = args.telemetry.to_possible_value().expect("named");
    let mut summary = RunSummary::new(
        &topology,
        &workload.to_string(),
        &mapping.to_string(),
        telemetry.get_name(),
        &result,
        &truth,
        &diagnosis,
    );
    summary.fabric = fabric;
    let options = PlotOptions {
        directions: match args.plot {
            PlotDirections::Both => Directions::Averaged,
            PlotDirections::Split => Directions::Split,
        },
        crop_leaves: args.crop_leaves,
        size: None,
    };
    let stem = args.out_dir.join(PLOT_STEM);
    summary.files = write_plots(&topology, &estimate, &options, &stem)?;
    if args.window.is_some() && result.telemetry.is_some() {
        summary.files.extend(write_window_plots(
            &topology, &result, &spec, &options, &stem,
        )?);
    }
    let diagnosis_text = render_text(&diagnosis);
    summary.files.push(output::write(
        &args.out_dir,
        DIAGNOSIS_FILE,
        &diagnosis_text,
    )?);
    let csv = ports_csv(&topology, &truth, &estimate, summary.fabric.as_ref())?;
    summary
        .files
        .push(output::write(&args.out_dir, PORTS_FILE, &csv)?);
    summary.files.push(args.out_dir.join(SUMMARY_FILE));
    output::write(&args.out_dir, SUMMARY_FILE, &summary.to_json()?)?;

    let text = match args.format {
        Format::Json => summary.to_json()?,
        Format::Table => format!(
            "{}\n{}\nwrote {} files to {}\n",
            summary.render_text(),
            diagnosis_text,
            summary.files.len(),
            args.out_dir.display()
        ),
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(match diagnosis.cause {
        Cause::NoCongestion => Outcome::Healthy,
        Cause::Inconclusive => Outcome::Inconclusive,
        _ => Outcome::Findings,
    })
}

fn suggest(args: &SuggestArgs) -> Result<bool> {
    let topology = topology_input(&args.topology.topology, None, None)?.topology;
    let packet_bytes = SimConfig::default().packet_bytes;
    let matrix = match (&args.workload, &args.matrix) {
        (_, Some(file)) => traffic::CommMatrix::load(file, packet_bytes)?,
        (Some(spec), None) => {
            let workload = WorkloadSpec::from_str(spec)?;
            let settings = SimConfig {
                seed: args.seed,
                ..SimConfig::default()
            }
            .job_settings();
            traffic::workload_matrix(&workload, &topology, &settings)?
        }
        (None, None) => bail!("give --workload or --matrix"),
    };
    let suggestion = traffic::suggest_mapping(&matrix, &topology, args.seed)?;
    if let Some(path) = &args.output {
        let mut text = format!(
            "# hostping fabric suggest-mapping: {} on {} (rank node)\n",
            suggestion.mapping,
            topology.name()
        );
        for (rank, node) in suggestion.placement.iter().enumerate() {
            text += &format!("{rank} {}\n", node.0);
        }
        std::fs::write(path, text).with_context(|| format!("{}: cannot write", path.display()))?;
    }
    let out = match args.format {
        Format::Json => {
            serde_json::to_string_pretty(&serde_json::json!({
                "topology": topology.name(),
                "ranks": matrix.ranks(),
                "mapping": suggestion.mapping.to_string(),
                "row_major": {
                    "average_path_length": suggestion.row_major.average_path_length,
                    "leaf_edge_cut": suggestion.row_major.leaf_edge_cut,
                },
                "suggested": {
                    "average_path_length": suggestion.suggested.average_path_length,
                    "leaf_edge_cut": suggestion.suggested.leaf_edge_cut,
                },
                "explanation": suggestion.explanation,
                "placement": suggestion.placement.iter().map(|n| n.0).collect::<Vec<_>>(),
            }))? + "\n"
        }
        Format::Table => format!(
            "suggested mapping: {}\n  average path length {:.3} -> {:.3} hops; leaf-level edge cut {:.3} -> {:.3} (row-major -> suggested)\n{}\n{}",
            suggestion.mapping,
            suggestion.row_major.average_path_length,
            suggestion.suggested.average_path_length,
            suggestion.row_major.leaf_edge_cut,
            suggestion.suggested.leaf_edge_cut,
            suggestion.explanation,
            args.output.as_ref().map_or(String::new(), |p| format!(
                "wrote the mapping to {} (use --mapping {})\n",
                p.display(),
                p.display()
            )),
        ),
    };
    std::io::stdout().lock().write_all(out.as_bytes())?;
    Ok(false)
}

fn merge(args: &MergeArgs) -> Result<bool> {
    let (runs, errors) = fabric::summary::read_runs(&args.runs);
    let text = match args.format {
        MergeFormat::Table => fabric::summary::merge::table(&runs),
        MergeFormat::Json => serde_json::to_string_pretty(&runs)? + "\n",
        MergeFormat::Csv => fabric::summary::merge::csv(&runs),
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    match errors.as_slice() {
        [] => Ok(false),
        [one] => Err(one.clone().into()),
        many => bail!(
            "{} runs could not be read:\n  {}",
            many.len(),
            many.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n  ")
        ),
    }
}
