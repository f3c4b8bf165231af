//! What `hostping fabric sim` leaves in its `--out` folder, as a contract: the file names,
//! the run summary (`summary.json`, which `hostping fabric merge` and the Slurm sweep scripts
//! in `scripts/slurm/` read), and the per-port counts (`ports.csv`). Fields are only ever
//! added, never renamed or dropped (DESIGN 4: scripts outside this repository read them).
//!
//! This module builds the files' contents, and [`merge`] the table and CSV of many runs;
//! writing them is the caller's (the binary's). A
//! summary reads its figures from one run ([`SimResult`]), the exact counts of the ground
//! truth and the estimates of the view the diagnosis used ([`LinkView`], thesis 3.2-3.3 and
//! 4.2), and the diagnosis (thesis chapter 4). Every figure is simulated, and says so.
//!
//! ```
//! use fabric::summary::{MergedRun, RunSummary};
//! use fabric::analysis::{diagnose, LinkView, Thresholds, ViewSpec};
//! use fabric::analysis::view::JobSelection;
//! use fabric::sim::{SimConfig, Simulation};
//! use fabric::topology::Topology;
//! use fabric::traffic::{self, MappingSpec, WorkloadSpec};
//!
//! let topology = Topology::resolve("radix8").unwrap();
//! let workload: WorkloadSpec = "uniform,load=0.3".parse().unwrap();
//! let mapping: MappingSpec = "row-major".parse().unwrap();
//! let config = SimConfig { end_ps: Some(2_000_000), ..SimConfig::default() };
//! let jobs = traffic::build_jobs(&workload, &mapping, &topology, &config.job_settings()).unwrap();
//! let result = Simulation::new(&topology, config, jobs).unwrap().run(&mut |_| {});
//! let truth = LinkView::build(&topology, &result, &ViewSpec::ground_truth(JobSelection::All)).unwrap();
//! let diagnosis = diagnose(&topology, &truth, &Thresholds::default());
//! let summary = RunSummary::new(
//!     &topology, &workload.to_string(), &mapping.to_string(), "reservoir", &result, &truth,
//!     &diagnosis,
//! );
//! // What a sweep compares reads back from the file's text.
//! let merged: MergedRun = serde_json::from_str(&summary.to_json().unwrap()).unwrap();
//! assert_eq!(merged.topology, "radix8");
//! assert_eq!(merged.jobs.len(), 1);
//! ```

pub mod merge;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::analysis::view::{link_name, LinkView};
use crate::analysis::Diagnosis;
use crate::cabling::Recognized;
use crate::input::InputError;
use crate::sim::{SimConfig, SimResult};
use crate::topology::Topology;

/// The run summary's file name in the output folder.
pub const SUMMARY_FILE: &str = "summary.json";
/// The per-port counts' file name ([`ports_csv`]).
pub const PORTS_FILE: &str = "ports.csv";
/// The diagnosis in words (`analysis::render_text`).
pub const DIAGNOSIS_FILE: &str = "diagnosis.txt";
/// Stem of the congested-fraction plots (`.svg`, `.png`, `-up`/`-down`, `-wNNN`).
pub const PLOT_STEM: &str = "congested-fraction";

/// Why a summary's files cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    /// The recognised fabric does not describe the tree the counts are of: it has no name
    /// for one of the tree's switches, or no fabric port for one of its ports.
    #[error("{file}: the recognised fabric has no {what} for the tree's {what} {index} (it names {count})")]
    OriginMismatch {
        /// The fabric's topology file.
        file: String,
        /// `switch` or `port`.
        what: &'static str,
        /// The tree's switch number or port index that has no counterpart.
        index: u32,
        /// How many the fabric names.
        count: usize,
    },
    /// The summary could not be written as JSON.
    #[error("{SUMMARY_FILE}: {0}")]
    Json(#[from] serde_json::Error),
}

/// `summary.json`: everything about one run that a person or a sweep compares. Fields are
/// only ever added (DESIGN 4: outside scripts read them).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunSummary {
    /// Always true: every figure comes from the simulator.
    pub simulated: bool,
    /// The tree's name (`radix8`, or the stem of the topology file it came from).
    pub topology: String,
    /// Compute nodes of the tree.
    pub nodes: u32,
    /// Switches of the tree, all levels.
    pub switches: u32,
    /// The workload as given, defaults filled in (`uniform,load=0.3,bytes=128KiB`).
    pub workload: String,
    /// The mapping of ranks to nodes (`row-major`, a file).
    pub mapping: String,
    /// The telemetry in the switches (`reservoir`, `reservoir-1bit`, `single-bit`, `off`).
    pub telemetry: String,
    /// The run's seed (a copy of `config.seed`, for scripts).
    pub seed: u64,
    /// The whole simulator configuration.
    pub config: SimConfig,
    /// Simulated time at the end of the run, us.
    pub end_us: f64,
    /// Events the engine processed.
    pub events: u64,
    /// Packets delivered to their destination nodes, all jobs.
    pub packets_delivered: u64,
    /// Wall-clock time of the simulation, s (the one figure that differs between two runs
    /// of the same seed).
    pub wall_seconds: f64,
    /// One entry per job, in the workload's order.
    pub jobs: Vec<JobSummary>,
    /// Congested packet-hops over all packet-hops, exact (ground truth).
    pub congested_hop_fraction: f64,
    /// The dominant cause (copy of `diagnosis.cause`, for scripts); `inconclusive` when the
    /// run could not be judged.
    pub cause: String,
    /// Whether the run is no verdict: nothing congested was found, but too little was sampled
    /// to call it free of congestion (`hostping fabric sim` exits 3, as DESIGN 4.3's checks).
    pub inconclusive: bool,
    /// Why it is inconclusive (`diagnosis.not_judged.reason`), when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inconclusive_reason: Option<String>,
    /// The diagnosis of the estimated view (thesis chapter 4).
    pub diagnosis: Diagnosis,
    /// Every file the run wrote to its output folder, this summary's included.
    pub files: Vec<PathBuf>,
    /// The real fabric the tree was recognised from (`--topology` an ibnetdiscover file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric: Option<FabricOrigin>,
}

/// One job of a run, as the summary reports it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobSummary {
    /// The job's name (`reduction naive`).
    pub name: String,
    /// MPI ranks of the job.
    pub ranks: u32,
    /// Whether every message arrived before the run ended.
    pub finished: bool,
    /// When its last message arrived (the end of the run when it did not finish).
    pub completion_us: f64,
    /// Messages delivered.
    pub messages_delivered: u64,
    /// Packets delivered.
    pub packets_delivered: u64,
    /// Payload bytes delivered.
    pub bytes_delivered: u64,
    /// Hops per delivered packet (Table 4.1).
    pub average_path_length: f64,
    /// Mean message latency, us: from a message's becoming ready at its NIC to the delivery
    /// of its last packet.
    pub mean_message_latency_us: f64,
    /// Longest message latency, us.
    pub max_message_latency_us: f64,
}

/// Where a recognised fabric's parts are in the tree: written into `summary.json` (and
/// `ports.csv`) so that simulated ports can be found on the real switches.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FabricOrigin {
    /// The topology file.
    pub file: String,
    /// Fabric switch name of each tree switch, by switch number.
    pub switches: Vec<String>,
    /// Tree nodes with no host cabled (free leaf ports).
    pub free_nodes: Vec<u32>,
    /// Pairs of switches with cables missing, simulated without them (`'a' -- 'b' (3 of 4
    /// cables)`).
    #[serde(default)]
    pub missing_cables: Vec<String>,
    /// Fabric port of each tree switch output port, by port index.
    #[serde(skip)]
    pub ports: Vec<u16>,
    /// The fabric's name of the host on each tree node (a CA's description, `node001
    /// mlx5_0`), by node; `None` for a free leaf port.
    #[serde(skip)]
    pub hosts: Vec<Option<String>>,
}

impl FabricOrigin {
    /// What the summary keeps of a fabric read from `file` and recognised as a tree
    /// ([`crate::cabling::Cabling::recognize`]).
    pub fn of(file: &str, recognized: &Recognized) -> FabricOrigin {
        FabricOrigin {
            file: file.to_string(),
            switches: recognized.switch_names.clone(),
            free_nodes: recognized.topology.free_nodes().to_vec(),
            missing_cables: recognized
                .missing_cables
                .iter()
                .map(ToString::to_string)
                .collect(),
            ports: recognized.fabric_ports.clone(),
            hosts: recognized
                .node_hosts
                .iter()
                .map(|h| h.as_ref().map(|(name, _)| name.clone()))
                .collect(),
        }
    }
}

impl RunSummary {
    /// The summary of `result` on `topology`: `truth` is the ground-truth view (exact
    /// counts), `diagnosis` what the analysis concluded. `files` starts empty and `fabric`
    /// unset: the caller records what it writes and where the tree came from.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        topology: &Topology,
        workload: &str,
        mapping: &str,
        telemetry: &str,
        result: &SimResult,
        truth: &LinkView,
        diagnosis: &Diagnosis,
    ) -> Self {
        let jobs = result
            .jobs
            .iter()
            .map(|job| JobSummary {
                name: job.name.clone(),
                ranks: job.ranks,
                finished: job.finished,
                completion_us: job.completion_us(),
                messages_delivered: job.messages_delivered,
                packets_delivered: job.packets_delivered,
                bytes_delivered: job.bytes_delivered,
                average_path_length: job.average_path_length(),
                mean_message_latency_us: job.mean_message_latency_ns / 1e3,
                max_message_latency_us: job.max_message_latency_ns / 1e3,
            })
            .collect();
        RunSummary {
            simulated: true,
            topology: topology.name().to_string(),
            nodes: topology.num_nodes(),
            switches: topology.num_switches(),
            workload: workload.to_string(),
            mapping: mapping.to_string(),
            telemetry: telemetry.to_string(),
            seed: result.config.seed,
            config: result.config.clone(),
            end_us: result.end_ps as f64 / 1e6,
            events: result.events,
            packets_delivered: result.packets_delivered,
            wall_seconds: result.wall_seconds,
            jobs,
            congested_hop_fraction: truth.congested_hop_fraction(),
            cause: diagnosis.cause.as_str().to_string(),
            inconclusive: diagnosis.not_judged.is_some(),
            inconclusive_reason: diagnosis.not_judged.as_ref().map(|n| n.reason.clone()),
            diagnosis: diagnosis.clone(),
            files: Vec::new(),
            fabric: None,
        }
    }

    /// The text of `summary.json` (and of `fabric sim --format json`): pretty-printed,
    /// ending in a newline.
    pub fn to_json(&self) -> Result<String, SummaryError> {
        Ok(serde_json::to_string_pretty(self)? + "\n")
    }

    /// The run in a few lines for a terminal.
    pub fn render_text(&self) -> String {
        let mut out = format!(
            "simulated {} ({} nodes, {} switches), workload {}, mapping {}, telemetry {}, seed {}\n",
            self.topology,
            self.nodes,
            self.switches,
            self.workload,
            self.mapping,
            self.telemetry,
            self.seed
        );
        for job in &self.jobs {
            let state = if job.finished {
                "finished in"
            } else {
                "unfinished at"
            };
            // Writing to a String cannot fail.
            let _ = writeln!(
                out,
                "  job {}: {} ranks, {state} {:.2} us; {} messages, {} packets delivered; \
                 average path {:.3} hops; message latency mean {:.2} us, max {:.2} us",
                job.name,
                job.ranks,
                job.completion_us,
                job.messages_delivered,
                job.packets_delivered,
                job.average_path_length,
                job.mean_message_latency_us,
                job.max_message_latency_us
            );
        }
        let _ = writeln!(
            out,
            "  congested hops (exact): {:.4}; {} events in {:.2} s wall",
            self.congested_hop_fraction, self.events, self.wall_seconds
        );
        out
    }
}

/// `ports.csv`: one row per switch output port with the exact counts and the estimates of
/// the view the diagnosis used; for a tree recognised from a real fabric, also the fabric
/// switch and port of each row. Each estimate has its standard deviation (`est_*_sd`, thesis
/// 3.3; the estimated fraction is clamped to [0, 1], its deviation is the quotient's). A `fabric`
/// that names fewer switches or ports than the tree has is [`SummaryError::OriginMismatch`].
pub fn ports_csv(
    topology: &Topology,
    truth: &LinkView,
    estimate: &LinkView,
    fabric: Option<&FabricOrigin>,
) -> Result<String, SummaryError> {
    let mut out = String::from(
        "port_index,link,level,direction,packets,congested,congested_fraction,gbps,\
         est_count,est_congested,est_congested_fraction,est_gbps,\
         est_count_sd,est_congested_sd,est_congested_fraction_sd",
    );
    out += if fabric.is_some() {
        ",fabric_switch,fabric_port\n"
    } else {
        "\n"
    };
    for (t, e) in truth.links.iter().zip(&estimate.links) {
        // Writing to a String cannot fail.
        let _ = write!(
            out,
            "{},{},{},{},{:.0},{:.0},{:.4},{:.3},{:.1},{:.1},{:.4},{:.3},{:.1},{:.1},{:.4}",
            t.index,
            link_name(topology, t.port),
            serde_plain(&t.level),
            serde_plain(&t.direction),
            t.count,
            t.congested,
            t.congested_fraction,
            t.gbps,
            e.count,
            e.congested,
            e.congested_fraction,
            e.gbps,
            e.count_sd,
            e.congested_sd,
            e.congested_fraction_sd
        );
        if let Some(fabric) = fabric {
            let port = topology.port_ref(t.index);
            let mismatch = |what, index, count| SummaryError::OriginMismatch {
                file: fabric.file.clone(),
                what,
                index,
                count,
            };
            let switch = fabric
                .switches
                .get(port.switch.0 as usize)
                .ok_or_else(|| mismatch("switch", port.switch.0, fabric.switches.len()))?;
            let fabric_port = fabric
                .ports
                .get(t.index as usize)
                .ok_or_else(|| mismatch("port", t.index, fabric.ports.len()))?;
            let _ = write!(out, ",{},{fabric_port}", csv_field(switch));
        }
        out.push('\n');
    }
    Ok(out)
}

/// A CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180): switch
/// names are node descriptions, which may.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// A unit enum variant as its serde name (`leaf`, `up`).
fn serde_plain<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The fields of a run summary that a sweep compares (`hostping fabric merge`); the rest of
/// the file is ignored so that summaries from newer versions still merge.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MergedRun {
    /// Where the run was read from (the folder or file given); not in the file.
    #[serde(default)]
    pub source: PathBuf,
    /// [`RunSummary::topology`].
    pub topology: String,
    /// [`RunSummary::workload`].
    pub workload: String,
    /// [`RunSummary::mapping`].
    pub mapping: String,
    /// [`RunSummary::telemetry`].
    pub telemetry: String,
    /// [`RunSummary::seed`].
    pub seed: u64,
    /// The jobs, as a sweep compares them.
    pub jobs: Vec<MergedJob>,
    /// [`RunSummary::congested_hop_fraction`].
    pub congested_hop_fraction: f64,
    /// [`RunSummary::cause`].
    pub cause: String,
    /// [`RunSummary::wall_seconds`].
    pub wall_seconds: f64,
    /// [`RunSummary::packets_delivered`].
    pub packets_delivered: u64,
}

/// The fields of a [`JobSummary`] that a sweep compares.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MergedJob {
    /// [`JobSummary::name`].
    pub name: String,
    /// [`JobSummary::finished`].
    pub finished: bool,
    /// [`JobSummary::completion_us`].
    pub completion_us: f64,
    /// [`JobSummary::average_path_length`].
    pub average_path_length: f64,
}

/// Reads every run (a folder stands for its summary file): the runs that could be read, and
/// an error for each that could not, so one failed task does not hide the others.
pub fn read_runs(paths: &[PathBuf]) -> (Vec<MergedRun>, Vec<InputError>) {
    let mut runs = Vec::new();
    let mut errors = Vec::new();
    for path in paths {
        match read_run(path) {
            Ok(run) => runs.push(run),
            Err(e) => errors.push(e),
        }
    }
    (runs, errors)
}

/// One run: `path` is its output folder or its summary file. A file that is not a run
/// summary is an error naming the file and the line.
pub fn read_run(path: &Path) -> Result<MergedRun, InputError> {
    let file = if path.is_dir() {
        path.join(SUMMARY_FILE)
    } else {
        path.to_path_buf()
    };
    let text = InputError::read(&file)?;
    let mut run: MergedRun = serde_json::from_str(&text).map_err(|e| {
        InputError::at_line(
            &file,
            e.line(),
            format!("not a hostping fabric run summary: {e}"),
        )
    })?;
    run.source = path.to_path_buf();
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_only_when_they_must_be() {
        assert_eq!(csv_field("leaf-1"), "leaf-1");
        assert_eq!(csv_field("leaf 1, row 2"), "\"leaf 1, row 2\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
