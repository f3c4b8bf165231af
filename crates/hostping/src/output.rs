//! What a command concluded and how it is written: one document to stdout, JSON for
//! machines or a view for people, written once and flushed, so that a reader that goes away
//! (a closed pipe) ends the command quietly (exit 0) and any other write error is one.

use crate::cli::Format;
use anyhow::{Context, Result};
use serde::Serialize;
use std::io::Write;

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

/// Writes `text` to stdout, flushed.
pub fn write_stdout(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("writing the output")
}
