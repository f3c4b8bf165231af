//! A comparison of runs like thesis Table 4.1 (mappings of the 2-D stencil): per row, the time
//! one round took, the average path length, the fraction of congested hops and the worst
//! congested fraction, beside reference figures (the thesis' own) when given.

use serde::{Deserialize, Serialize};

use super::diagnose::Thresholds;
use super::view::LinkView;
use crate::sim::JobResult;

/// Figures to compare a row with, e.g. the thesis' Table 4.1; either may be unknown (the
/// thesis has no elapsed time for two-level tiling).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReferenceFigures {
    /// Completion time, us.
    pub elapsed_us: Option<f64>,
    /// Hops per delivered packet.
    pub average_path_length: Option<f64>,
}

/// One run as a row of the comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableRow {
    /// The run in words (the mapping, the reduction).
    pub label: String,
    /// Completion time of the job: one round of the pattern, microseconds.
    pub elapsed_us: f64,
    /// Whether the job finished (if not, `elapsed_us` is a lower bound).
    pub finished: bool,
    /// Hops per delivered packet (thesis 3.3 footnote: the node-to-leaf link not counted).
    pub average_path_length: f64,
    /// Congested packet-hops over all packet-hops in the view.
    pub congested_hop_fraction: f64,
    /// Highest congested fraction of a link with at least `min_count` weighted packets sampled,
    /// in [0, 1].
    pub worst_congested_fraction: f64,
    /// One standard deviation of that estimate (thesis 3.3; 0 for exact counts).
    pub worst_congested_fraction_sd: f64,
    /// Figures to compare it with, when there are any.
    pub reference: Option<ReferenceFigures>,
}

impl TableRow {
    /// The row of one job of a run, with congestion from `view` (usually that job's samples).
    pub fn from_run(
        label: &str,
        job: &JobResult,
        view: &LinkView,
        thresholds: &Thresholds,
    ) -> Self {
        let worst = view.worst_link(thresholds.min_count);
        TableRow {
            label: label.to_string(),
            elapsed_us: job.completion_us(),
            finished: job.finished,
            average_path_length: job.average_path_length(),
            congested_hop_fraction: view.congested_hop_fraction(),
            worst_congested_fraction: worst.map_or(0.0, |l| l.congested_fraction),
            worst_congested_fraction_sd: worst.map_or(0.0, |l| l.congested_fraction_sd),
            reference: None,
        }
    }

    /// The row with reference figures beside it.
    pub fn with_reference(self, reference: ReferenceFigures) -> Self {
        TableRow {
            reference: Some(reference),
            ..self
        }
    }
}

/// Runs side by side, as thesis Table 4.1.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ComparisonTable {
    /// The table's title.
    pub title: String,
    /// Heads the reference columns, e.g. "thesis".
    pub reference_label: String,
    /// The rows, in the order given.
    pub rows: Vec<TableRow>,
}

impl ComparisonTable {
    /// Columns aligned (labels left, numbers right); the reference columns only when a row has
    /// reference figures.
    pub fn render_text(&self) -> String {
        let with_reference = self.rows.iter().any(|r| r.reference.is_some());
        let mut header = vec![
            "".to_string(),
            "elapsed us".to_string(),
            "avg path".to_string(),
            "congested hops".to_string(),
            "worst fraction ± 1 sd".to_string(),
        ];
        if with_reference {
            header.push(format!("{} us", self.reference_label));
            header.push(format!("{} path", self.reference_label));
        }
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|row| cells(row, with_reference))
            .collect();
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for row in &rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let line = |cells: &[String]| -> String {
            let padded: Vec<String> = cells
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(i, (cell, &w))| {
                    if i == 0 {
                        format!("{cell:<w$}")
                    } else {
                        format!("{cell:>w$}")
                    }
                })
                .collect();
            padded.join("  ").trim_end().to_string() + "\n"
        };
        let mut out = format!("{}\n", self.title);
        out += &line(&header);
        for row in &rows {
            out += &line(row);
        }
        out += "(simulated";
        if rows.iter().any(|r| r[1].starts_with('>')) {
            out += "; > marks a job that had not finished";
        }
        if with_reference {
            out += &format!(
                "; {} columns: reference figures, not simulated",
                self.reference_label
            );
        }
        out += ")\n";
        out
    }
}

fn cells(row: &TableRow, with_reference: bool) -> Vec<String> {
    let elapsed = if row.finished {
        format!("{:.1}", row.elapsed_us)
    } else {
        format!(">{:.1}", row.elapsed_us)
    };
    let mut cells = vec![
        row.label.clone(),
        elapsed,
        format!("{:.3}", row.average_path_length),
        format!("{:.4}", row.congested_hop_fraction),
        format!(
            "{:.3} ± {:.3}",
            row.worst_congested_fraction, row.worst_congested_fraction_sd
        ),
    ];
    if with_reference {
        let reference = row.reference.as_ref();
        let figure = |value: Option<f64>, decimals: usize| {
            value.map_or("-".to_string(), |v| format!("{v:.decimals$}"))
        };
        cells.push(figure(reference.and_then(|r| r.elapsed_us), 1));
        cells.push(figure(reference.and_then(|r| r.average_path_length), 3));
    }
    cells
}
