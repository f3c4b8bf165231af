//! The one error every input file of the fabric layer reports (topology, workload, mapping,
//! communication matrix, results to merge): which file, which line, and why, in one line.

use std::fmt;
use std::path::{Path, PathBuf};

/// A bad input file. Displayed as `FILE:LINE: reason` (or `FILE: reason` when the problem is
/// not on one line, e.g. the file cannot be read or a count is wrong at the end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The input file at fault.
    pub file: PathBuf,
    /// The line, from 1, when the problem is on one.
    pub line: Option<usize>,
    /// What is wrong, in words.
    pub reason: String,
}

impl InputError {
    /// An error in `file`, at `line` when known.
    pub fn new(file: &Path, line: Option<usize>, reason: impl Into<String>) -> Self {
        InputError {
            file: file.to_path_buf(),
            line,
            reason: reason.into(),
        }
    }

    /// An error on line `line` (from 1) of `file`.
    pub fn at_line(file: &Path, line: usize, reason: impl Into<String>) -> Self {
        Self::new(file, Some(line), reason)
    }

    /// An error about `file` as a whole.
    pub fn whole_file(file: &Path, reason: impl Into<String>) -> Self {
        Self::new(file, None, reason)
    }

    /// Reads a whole file, naming it in the error.
    pub fn read(file: &Path) -> Result<String, InputError> {
        std::fs::read_to_string(file)
            .map_err(|e| Self::whole_file(file, format!("cannot read: {e}")))
    }

    /// A `toml` parse error, with the line its span points at.
    pub fn from_toml(file: &Path, text: &str, err: &toml::de::Error) -> Self {
        let line = err.span().map(|span| line_of_offset(text, span.start));
        // toml's message repeats the location over several lines; the first line is the reason.
        let reason = err
            .message()
            .lines()
            .next()
            .unwrap_or("invalid TOML")
            .to_string();
        Self::new(file, line, reason)
    }
}

/// 1-based line number of a byte offset.
pub fn line_of_offset(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())]
        .bytes()
        .filter(|&b| b == b'\n')
        .count()
        + 1
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.file.display(), line, self.reason),
            None => write!(f, "{}: {}", self.file.display(), self.reason),
        }
    }
}

impl std::error::Error for InputError {}
