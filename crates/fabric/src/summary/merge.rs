//! What `hostping fabric merge` writes: one table from the `summary.json` of many runs,
//! typically the tasks of a Slurm job array (docs/fabric.md), for people ([`table`]) or for
//! scripts ([`csv`], whose columns are a contract as the summary's fields are). Reading the
//! summaries (and the input error, naming the file and the line, of a file that is not one)
//! is [`super::read_runs`]'.

use super::MergedRun;

/// The columns, in order: one row per (run, job).
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

/// The runs as a table for people, columns padded, with a last line saying they are
/// simulated.
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
