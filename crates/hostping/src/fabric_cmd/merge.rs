//! `hostping fabric merge`: one table from the `summary.json` of many runs, typically the
//! tasks of a Slurm job array (docs/fabric.md). A file that is not a run summary is an input
//! error naming the file and the line.

use std::path::{Path, PathBuf};

use fabric::input::InputError;
use serde::{Deserialize, Serialize};

use super::output::SUMMARY_FILE;

/// The fields of a run summary that a sweep compares; the rest of the file is ignored so that
/// summaries from newer versions still merge.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MergedRun {
    #[serde(default)]
    pub source: PathBuf,
    pub topology: String,
    pub workload: String,
    pub mapping: String,
    pub telemetry: String,
    pub seed: u64,
    pub jobs: Vec<MergedJob>,
    pub congested_hop_fraction: f64,
    pub cause: String,
    pub wall_seconds: f64,
    pub packets_delivered: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MergedJob {
    pub name: String,
    pub finished: bool,
    pub completion_us: f64,
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

fn read_run(path: &Path) -> Result<MergedRun, InputError> {
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

const COLUMNS: [&str; 11] = [
    "run",
    "topology",
    "workload",
    "mapping",
    "telemetry",
    "seed",
    "job",
    "completion_us",
    "avg_path",
    "congested_hops",
    "cause",
];

/// One row per (run, job).
fn rows(runs: &[MergedRun]) -> Vec<[String; 11]> {
    let mut rows = Vec::new();
    for run in runs {
        for job in &run.jobs {
            let completion = if job.finished {
                format!("{:.2}", job.completion_us)
            } else {
                format!(">{:.2}", job.completion_us)
            };
            rows.push([
                run.source.display().to_string(),
                run.topology.clone(),
                run.workload.clone(),
                run.mapping.clone(),
                run.telemetry.clone(),
                run.seed.to_string(),
                job.name.clone(),
                completion,
                format!("{:.3}", job.average_path_length),
                format!("{:.4}", run.congested_hop_fraction),
                run.cause.clone(),
            ]);
        }
    }
    rows
}

pub fn table(runs: &[MergedRun]) -> String {
    let rows = rows(runs);
    let mut widths = COLUMNS.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[&str]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        padded.join("  ").trim_end().to_string() + "\n"
    };
    let mut out = line(&COLUMNS);
    for row in &rows {
        out += &line(&row.each_ref().map(String::as_str));
    }
    out += &format!("(simulated; {} runs)\n", runs.len());
    out
}

/// CSV with a header; cells holding a comma or a quote are quoted.
pub fn csv(runs: &[MergedRun]) -> String {
    let quote = |cell: &str| {
        if cell.contains([',', '"', '\n']) {
            format!("\"{}\"", cell.replace('"', "\"\""))
        } else {
            cell.to_string()
        }
    };
    let mut out = COLUMNS.join(",") + "\n";
    for row in rows(runs) {
        out += &(row.iter().map(|c| quote(c)).collect::<Vec<_>>().join(",") + "\n");
    }
    out
}
