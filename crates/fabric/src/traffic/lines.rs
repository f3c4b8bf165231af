//! What the three line-oriented traffic files (workload, mapping, matrix) share: `#`
//! comments, blank lines, whitespace-separated fields, and rank numbers.

use std::path::Path;

use super::units::parse_bytes;
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
pub(crate) fn parse_records<T>(
    path: &Path,
    text: &str,
    parse_line: impl Fn(&[&str]) -> Result<T, String>,
    expected: &str,
) -> Result<Vec<T>, InputError> {
    let records = data_lines(text)
        .map(|(line, fields)| parse_line(&fields).map_err(|r| InputError::at_line(path, line, r)))
        .collect::<Result<Vec<T>, _>>()?;
    if records.is_empty() {
        return Err(InputError::whole_file(path, expected));
    }
    Ok(records)
}

/// The `source destination bytes` fields of the workload and matrix files: two different
/// ranks and a size of at least one byte.
pub(crate) fn parse_transfer(src: &str, dst: &str, bytes: &str) -> Result<(u32, u32, u64), String> {
    let src = parse_index(src, "source rank")?;
    let dst = parse_index(dst, "destination rank")?;
    let bytes = parse_bytes(bytes).map_err(|e| format!("bad size: {e}"))?;
    if src == dst {
        return Err(format!("rank {src} sends to itself"));
    }
    if bytes == 0 {
        return Err("a transfer of 0 bytes".to_string());
    }
    if bytes > MAX_MESSAGE_BYTES {
        return Err(above_cap(
            "size",
            bytes,
            MAX_MESSAGE_BYTES,
            "bytes per message",
        ));
    }
    Ok((src, dst, bytes))
}

/// A rank (or node) number below [`MAX_RANKS`] (ranks and nodes are numbered from 0);
/// `what` names it in the error.
pub(crate) fn parse_index(field: &str, what: &str) -> Result<u32, String> {
    if field.starts_with('-') {
        return Err(format!("{what} '{field}' is negative"));
    }
    let value: u64 = field
        .parse()
        .map_err(|_| format!("{what} '{field}' is not a whole number"))?;
    if value >= u64::from(MAX_RANKS) {
        return Err(above_cap(what, value, MAX_RANKS - 1, "(one rank per node)"));
    }
    Ok(value as u32)
}
