//! What `hostping fabric sim` leaves in its `--out` folder: the run summary (the contract
//! `merge` reads), the per-port counts as CSV, the diagnosis as text, and the plots.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use fabric::analysis::view::{link_name, LinkView};
use fabric::analysis::Diagnosis;
use fabric::sim::{SimConfig, SimResult};
use fabric::topology::Topology;

use super::cabled::FabricOrigin;
use serde::{Deserialize, Serialize};

pub const SUMMARY_FILE: &str = "summary.json";
pub const PORTS_FILE: &str = "ports.csv";
pub const DIAGNOSIS_FILE: &str = "diagnosis.txt";
/// Stem of the congested-fraction plots (`.svg`, `.png`, `-up`/`-down`, `-wNNN`).
pub const PLOT_STEM: &str = "congested-fraction";

/// `summary.json`: everything about one run that a person or a sweep compares. Fields are
/// only ever added (DESIGN 4: outside scripts read them).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunSummary {
    /// Always true: every figure comes from the simulator.
    pub simulated: bool,
    pub topology: String,
    pub nodes: u32,
    pub switches: u32,
    pub workload: String,
    pub mapping: String,
    pub telemetry: String,
    pub seed: u64,
    pub config: SimConfig,
    pub end_us: f64,
    pub events: u64,
    pub packets_delivered: u64,
    pub wall_seconds: f64,
    pub jobs: Vec<JobSummary>,
    /// Congested packet-hops over all packet-hops, exact (ground truth).
    pub congested_hop_fraction: f64,
    /// The dominant cause (copy of `diagnosis.cause`, for scripts).
    pub cause: String,
    pub diagnosis: Diagnosis,
    pub files: Vec<PathBuf>,
    /// The real fabric the tree was recognised from (`--topology` an ibnetdiscover file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric: Option<FabricOrigin>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobSummary {
    pub name: String,
    pub ranks: u32,
    pub finished: bool,
    /// When its last message arrived (the end of the run when it did not finish).
    pub completion_us: f64,
    pub messages_delivered: u64,
    pub packets_delivered: u64,
    pub bytes_delivered: u64,
    /// Hops per delivered packet (Table 4.1).
    pub average_path_length: f64,
    pub mean_message_latency_us: f64,
    pub max_message_latency_us: f64,
}

impl RunSummary {
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
            diagnosis: diagnosis.clone(),
            files: Vec::new(),
            fabric: None,
        }
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
            writeln!(
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
            )
            .unwrap();
        }
        writeln!(
            out,
            "  congested hops (exact): {:.4}; {} events in {:.2} s wall",
            self.congested_hop_fraction, self.events, self.wall_seconds
        )
        .unwrap();
        out
    }
}

/// `ports.csv`: one row per switch output port with the exact counts and the estimates of
/// the view the diagnosis used; for a tree recognised from a real fabric, also the fabric
/// switch and port of each row.
pub fn ports_csv(
    topology: &Topology,
    truth: &LinkView,
    estimate: &LinkView,
    fabric: Option<&FabricOrigin>,
) -> String {
    let mut out = String::from(
        "port_index,link,level,direction,packets,congested,congested_fraction,gbps,\
         est_count,est_congested,est_congested_fraction,est_gbps",
    );
    out += if fabric.is_some() {
        ",fabric_switch,fabric_port\n"
    } else {
        "\n"
    };
    for (t, e) in truth.links.iter().zip(&estimate.links) {
        writeln!(
            out,
            "{},{},{},{},{:.0},{:.0},{:.4},{:.3},{:.1},{:.1},{:.4},{:.3}",
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
            e.gbps
        )
        .unwrap();
        if let Some(fabric) = fabric {
            let port = topology.port_ref(t.index);
            out.truncate(out.len() - 1);
            writeln!(
                out,
                ",{},{}",
                csv_field(&fabric.switches[port.switch.0 as usize]),
                fabric.ports[t.index as usize]
            )
            .unwrap();
        }
    }
    out
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

/// Writes `name` under `dir`, naming the file in the error.
pub fn write(dir: &Path, name: &str, contents: &str) -> Result<PathBuf> {
    let path = dir.join(name);
    std::fs::write(&path, contents).with_context(|| format!("{}: cannot write", path.display()))?;
    Ok(path)
}
