//! What the three line-oriented traffic files (workload, mapping, matrix) share: `#`
//! comments, blank lines, whitespace-separated fields, and rank numbers.

use std::path::Path;

use super::units::{parse_bytes, QuantityError};
use crate::input::InputError;
use crate::limits::{above_cap, MAX_MESSAGE_BYTES, MAX_RANKS};

/// The data lines of a file: (1-based line number, fields), comments and blanks skipped.
pub(crate) fn data_lines(text: &str) -> impl Iterator<Item = (usize, Vec<&str>)> {
    text.lines().enumerate().filter_map(|(i, line)| {
        let data = line.split('#').next().unwrap_or("");
        let fields: Vec<&str> = data.split_whitespace().collect();
        (!fields.is_empty()).then_some((i + 1, fields))
    })
}

/// Every data line of `text` parsed by `parse_line`, errors naming `path` and the line; a
/// file without data lines is an error saying what was `expected`.
pub(crate) fn parse_records<T, E: std::fmt::Display>(
    path: &Path,
    text: &str,
    parse_line: impl Fn(&[&str]) -> Result<T, E>,
    expected: &str,
) -> Result<Vec<T>, InputError> {
    let records = data_lines(text)
        .map(|(line, fields)| {
            parse_line(&fields).map_err(|e| InputError::at_line(path, line, e.to_string()))
        })
        .collect::<Result<Vec<T>, _>>()?;
    if records.is_empty() {
        return Err(InputError::whole_file(path, expected));
    }
    Ok(records)
}

/// A data line of a traffic file that does not read; each names the field as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LineError {
    /// Not the file's number of fields.
    #[error("expected {expected}, found {found}")]
    Fields {
        /// The fields and their form (`3 fields 'src dst bytes'`).
        expected: String,
        /// Fields on the line.
        found: usize,
    },
    /// A time that does not read.
    #[error("bad time: {0}")]
    Time(#[source] QuantityError),
    /// A size that does not read.
    #[error("bad size: {0}")]
    Size(#[source] QuantityError),
    /// A rank (or node) below 0.
    #[error("{what} '{field}' is negative")]
    Negative {
        /// What the number is (`source rank`).
        what: &'static str,
        /// The field.
        field: String,
    },
    /// A rank (or node) that is not a whole number.
    #[error("{what} '{field}' is not a whole number")]
    NotWhole {
        /// What the number is.
        what: &'static str,
        /// The field.
        field: String,
        /// Why it does not read.
        source: std::num::ParseIntError,
    },
    /// A number above its cap.
    #[error("{}", above_cap(what, value, cap, unit))]
    AboveCap {
        /// What the number is.
        what: &'static str,
        /// The number.
        value: u64,
        /// Its cap.
        cap: u64,
        /// The cap's unit.
        unit: &'static str,
    },
    /// A rank that sends to itself.
    #[error("rank {0} sends to itself")]
    ToItself(u32),
    /// A transfer of nothing.
    #[error("a transfer of 0 bytes")]
    NoBytes,
}

/// The `source destination bytes` fields of the workload and matrix files: two different
/// ranks and a size of at least one byte.
pub(crate) fn parse_transfer(
    src: &str,
    dst: &str,
    bytes: &str,
) -> Result<(u32, u32, u64), LineError> {
    let src = parse_index(src, "source rank")?;
    let dst = parse_index(dst, "destination rank")?;
    let bytes = parse_bytes(bytes).map_err(LineError::Size)?;
    if src == dst {
        return Err(LineError::ToItself(src));
    }
    if bytes == 0 {
        return Err(LineError::NoBytes);
    }
    if bytes > MAX_MESSAGE_BYTES {
        return Err(LineError::AboveCap {
            what: "size",
            value: bytes,
            cap: MAX_MESSAGE_BYTES,
            unit: "bytes per message",
        });
    }
    Ok((src, dst, bytes))
}

/// A rank (or node) number below [`MAX_RANKS`] (ranks and nodes are numbered from 0);
/// `what` names it in the error.
pub(crate) fn parse_index(field: &str, what: &'static str) -> Result<u32, LineError> {
    if field.starts_with('-') {
        return Err(LineError::Negative {
            what,
            field: field.to_owned(),
        });
    }
    let value: u64 = field.parse().map_err(|source| LineError::NotWhole {
        what,
        field: field.to_owned(),
        source,
    })?;
    if value >= u64::from(MAX_RANKS) {
        return Err(LineError::AboveCap {
            what,
            value,
            cap: u64::from(MAX_RANKS - 1),
            unit: "(one rank per node)",
        });
    }
    Ok(value as u32)
}
