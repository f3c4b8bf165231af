//! What a command concluded and how it is written: one document to stdout, JSON for
//! machines or a view for people, written once and flushed, so that a reader that goes away
//! (a closed pipe) ends the command quietly (exit 0) and any other write error is one.

use crate::cli::Format;
use anyhow::{Context, Result};
use serde::Serialize;
use std::io::Write;
use std::path::Path;
use views::Style;

/// What a command concluded (DESIGN 4.3's exit status: 0 healthy, 1 bottleneck found,
/// 3 inconclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing wrong.
    Healthy,
    /// A bottleneck, a finding, a failed check.
    Findings,
    /// Nothing wrong was found, but some link could not be judged, so the host cannot be
    /// called healthy.
    Inconclusive,
}

impl Outcome {
    /// `Findings` when `found`, else `Healthy`.
    pub fn found(found: bool) -> Outcome {
        if found {
            Outcome::Findings
        } else {
            Outcome::Healthy
        }
    }

    /// What one report concluded ([`model::Report::verdict`]).
    pub fn of_report(report: &model::Report) -> Outcome {
        match report.verdict() {
            model::report::Verdict::Healthy => Outcome::Healthy,
            model::report::Verdict::Findings => Outcome::Findings,
            model::report::Verdict::Inconclusive => Outcome::Inconclusive,
        }
    }

    /// What a series concluded (`check --runs N`): a finding in any run, else what the last
    /// run concluded (it is judged with the whole history).
    pub fn of_series(reports: &[model::Report]) -> Outcome {
        let each: Vec<Outcome> = reports.iter().map(Outcome::of_report).collect();
        if each.contains(&Outcome::Findings) {
            Outcome::Findings
        } else {
            // An empty series judged nothing.
            each.last().copied().unwrap_or(Outcome::Inconclusive)
        }
    }

    /// The exit status of DESIGN 4.3.
    pub fn exit_status(self) -> u8 {
        match self {
            Outcome::Healthy => 0,
            Outcome::Findings => 1,
            Outcome::Inconclusive => 3,
        }
    }
}

/// Writes `value` as pretty JSON (with `--format json`) or the `view` of it for people.
pub fn print<T: Serialize + ?Sized>(
    format: Format,
    value: &T,
    view: impl FnOnce(&T) -> String,
) -> Result<()> {
    let text = match format {
        Format::Json => serde_json::to_string_pretty(value)? + "\n",
        Format::Table => view(value),
    };
    write_stdout(&text)
}

/// Writes `value` as [`print`] does, to the file of `-o/--output` when one is given (the
/// view then without colour: a file is no terminal), else to stdout.
pub fn print_to<T: Serialize + ?Sized>(
    output: Option<&Path>,
    format: Format,
    value: &T,
    view: impl FnOnce(&T, Style) -> String,
) -> Result<()> {
    let Some(path) = output else {
        return print(format, value, |v| view(v, Style::for_stdout()));
    };
    let text = match format {
        Format::Json => serde_json::to_string_pretty(value)? + "\n",
        Format::Table => view(value, Style { color: false }),
    };
    std::fs::write(path, text).with_context(|| format!("-o {}: cannot write", path.display()))
}

/// Writes `text` to stdout, flushed.
pub fn write_stdout(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("writing the output")
}

/// A collector's error as `--collector` reports it: a refusal as `--collector: STATUS from
/// URL: its words`, anything else after `--collector: `.
pub fn collector_error(e: fleet_api::client::ClientError) -> anyhow::Error {
    match e {
        fleet_api::client::ClientError::Refused { url, status, words } => {
            anyhow::anyhow!("--collector: {status} from {url}: {words}")
        }
        e => anyhow::anyhow!("--collector: {e}"),
    }
}
