//! What the three line-oriented traffic files (workload, mapping, matrix) share: `#`
//! comments, blank lines, whitespace-separated fields, and rank numbers.

/// More ranks than any tree we build has nodes; it also bounds what a file with one absurd
/// rank number can make us allocate.
pub(crate) const MAX_RANKS: u32 = 1 << 24;

/// The data lines of a file: (1-based line number, fields), comments and blanks skipped.
pub(crate) fn data_lines(text: &str) -> impl Iterator<Item = (usize, Vec<&str>)> {
    text.lines().enumerate().filter_map(|(i, line)| {
        let data = line.split('#').next().unwrap_or("");
        let fields: Vec<&str> = data.split_whitespace().collect();
        (!fields.is_empty()).then_some((i + 1, fields))
    })
}

/// A rank (or node) number below [`MAX_RANKS`]; `what` names it in the error.
pub(crate) fn parse_index(field: &str, what: &str) -> Result<u32, String> {
    if field.starts_with('-') {
        return Err(format!("{what} '{field}' is negative"));
    }
    let value: u64 = field
        .parse()
        .map_err(|_| format!("{what} '{field}' is not a whole number"))?;
    if value >= u64::from(MAX_RANKS) {
        return Err(format!(
            "{what} {value} is too large (at most {})",
            MAX_RANKS - 1
        ));
    }
    Ok(value as u32)
}
