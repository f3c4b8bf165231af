//! Slurm's hostlist syntax (`node[001-016,020]`), as `scontrol show hostnames` expands it:
//! the names a job's nodes go by (`SLURM_JOB_NODELIST`), so that an operator can name the
//! hosts of a job the way Slurm prints them.
//!
//! A list is comma-separated items outside brackets. An item is text with bracketed ranges in
//! it; each bracket holds comma-separated numbers or `low-high` ranges, and an item with
//! several brackets names every combination (`rack[1-2]-n[01-02]`: rack1-n01, rack1-n02,
//! rack2-n01, rack2-n02). A range's numbers are zero-padded to the width of its low end, as
//! Slurm pads them (`k[1-003]` is k1, k2, k3; `n[08-11]` is n08 ... n11). A name ends with
//! its last range (`gpu[0-3]a` is refused, as scontrol refuses it). Names keep the order
//! written, repeats included, as `scontrol` prints them.

use crate::limits;

/// Why a hostlist cannot be expanded; the message quotes the list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("hostlist `{list}`: {reason}")]
pub struct HostlistError {
    /// The list as given.
    pub list: String,
    /// What is wrong with it.
    pub reason: String,
}

/// The host names `list` stands for, in order. Refuses an empty list or item, unbalanced or
/// nested brackets, a range whose high end is below its low end, a bound that is not a
/// decimal number, and a list of more than [`limits::HOSTLIST_NAMES`] names (checked
/// before expanding).
pub fn expand(list: &str) -> Result<Vec<String>, HostlistError> {
    let fail = |reason: String| HostlistError {
        list: list.to_string(),
        reason,
    };
    let items = split_outside_brackets(list).map_err(fail)?;
    let mut parsed = Vec::with_capacity(items.len());
    let mut names: u64 = 0;
    for item in items {
        let item = item.trim();
        if item.is_empty() {
            return Err(fail("an empty name between commas".to_string()));
        }
        let parts = parse_item(item).map_err(fail)?;
        let item_names = parts
            .iter()
            .map(Part::count)
            .fold(1u64, u64::saturating_mul);
        names = names.saturating_add(item_names);
        if names > limits::HOSTLIST_NAMES {
            let cap = limits::above("host names", &names, &limits::HOSTLIST_NAMES);
            return Err(fail(cap.to_string()));
        }
        parsed.push(parts);
    }
    let mut out = Vec::with_capacity(names as usize);
    for parts in &parsed {
        combine(parts, String::new(), &mut out);
    }
    Ok(out)
}

/// [`expand`], refusing a list that names a host more than once, naming each such host.
/// The one rule of every command that takes a list of hosts (`--nodes`, the collector's
/// `nodes=`): a host given twice is a typo or a list pasted twice, and judging it twice
/// would count its pairs twice, so it is refused rather than silently dropped.
///
/// ```
/// use model::hostlist::expand_unique;
/// assert_eq!(expand_unique("n[1-2],n3").unwrap(), ["n1", "n2", "n3"]);
/// assert_eq!(expand_unique("n[1-3],n[2-3]").unwrap_err().to_string(),
///            "hostlist `n[1-3],n[2-3]`: n[2-3] named more than once: each host once");
/// ```
pub fn expand_unique(list: &str) -> Result<Vec<String>, HostlistError> {
    let names = expand(list)?;
    let mut seen = std::collections::HashSet::with_capacity(names.len());
    let mut twice: Vec<String> = Vec::new();
    for name in &names {
        if !seen.insert(name.as_str()) && !twice.contains(name) {
            twice.push(name.clone());
        }
    }
    if twice.is_empty() {
        Ok(names)
    } else {
        Err(HostlistError {
            list: list.to_string(),
            reason: format!("{} named more than once: each host once", compress(&twice)),
        })
    }
}

/// Names written back in hostlist syntax, in their order: a run of names that differ only
/// in a trailing number shares one bracket (`leaf1`..`leaf16`, `spine1`..`spine8` is
/// `leaf[1-16],spine[1-8]`), so that a list of switches or hosts in a message is short and
/// reads as what it is. [`expand`] gives the names back.
///
/// ```
/// use model::hostlist::compress;
/// let names = ["node001", "node002", "node003", "node007", "gpu9", "gpu10", "x"];
/// assert_eq!(compress(&names), "node[001-003,007],gpu[9-10],x");
/// ```
pub fn compress<S: AsRef<str>>(names: &[S]) -> String {
    let mut groups: Vec<(&str, Vec<Run>)> = Vec::new();
    for name in names {
        let name = name.as_ref();
        let Some((prefix, digits, n)) = numbered(name) else {
            groups.push((name, Vec::new()));
            continue;
        };
        if let Some((last_prefix, runs)) = groups.last_mut() {
            if *last_prefix == prefix && !runs.is_empty() {
                let (low, _, high) = runs.last_mut().expect("not empty");
                let width = low.len();
                if Some(n) == high.checked_add(1) && format!("{n:0width$}") == digits {
                    *high = n;
                } else {
                    runs.push((digits.to_string(), n, n));
                }
                continue;
            }
        }
        groups.push((prefix, vec![(digits.to_string(), n, n)]));
    }
    let written: Vec<String> = groups
        .into_iter()
        .map(|(prefix, runs)| match runs.as_slice() {
            [] => prefix.to_string(),
            [(low, first, last)] if first == last => format!("{prefix}{low}"),
            _ => {
                let items: Vec<String> = runs
                    .iter()
                    .map(|(low, first, last)| {
                        let width = low.len();
                        if first == last {
                            low.clone()
                        } else {
                            format!("{low}-{last:0width$}")
                        }
                    })
                    .collect();
                format!("{prefix}[{}]", items.join(","))
            }
        })
        .collect();
    written.join(",")
}

/// A run of consecutive numbers after one prefix in [`compress`]: the first one's digits as
/// written (their width pads the run), its value, and the last value.
type Run = (String, u64, u64);

/// A name as its text before a trailing number, the number's digits and its value; `None`
/// for a name without one, or one that brackets could not give back (a bracket or a comma
/// in it, or a number of more than 18 digits).
fn numbered(name: &str) -> Option<(&str, &str, u64)> {
    if name.contains(['[', ']', ',']) {
        return None;
    }
    let start = name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let digits = &name[start..];
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    Some((&name[..start], digits, digits.parse().ok()?))
}

/// Text, or the numbers of one bracket, each with the width to pad it to.
#[derive(Debug)]
enum Part {
    Text(String),
    Numbers(Vec<(u64, usize)>),
}

impl Part {
    fn count(&self) -> u64 {
        match self {
            Part::Text(_) => 1,
            Part::Numbers(numbers) => numbers.len() as u64,
        }
    }
}

/// The items of a list: split at the commas that are outside brackets.
fn split_outside_brackets(list: &str) -> Result<Vec<&str>, String> {
    if list.trim().is_empty() {
        return Err("it is empty".to_string());
    }
    let (mut items, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in list.char_indices() {
        match c {
            '[' if depth == 0 => depth = 1,
            '[' => return Err(format!("a bracket opens inside another at byte {i}")),
            ']' if depth == 1 => depth = 0,
            ']' => return Err(format!("a bracket closes at byte {i} that never opened")),
            ',' if depth == 0 => {
                items.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err("a bracket is never closed".to_string());
    }
    items.push(&list[start..]);
    Ok(items)
}

/// One item as text and bracketed number lists.
fn parse_item(item: &str) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut rest = item;
    while let Some(open) = rest.find('[') {
        if open > 0 {
            parts.push(Part::Text(rest[..open].to_string()));
        }
        let close = rest[open..].find(']').expect("brackets balanced") + open;
        parts.push(Part::Numbers(parse_bracket(&rest[open + 1..close])?));
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        // Slurm ends a name with its last range: `gpu[0-3]a` is not a hostlist to scontrol.
        if !parts.is_empty() {
            return Err(format!(
                "`{rest}` follows the last bracket of `{item}`; Slurm names end with their last range"
            ));
        }
        parts.push(Part::Text(rest.to_string()));
    }
    Ok(parts)
}

/// `001-016,020`: every number, with the width of its range's low end.
fn parse_bracket(inside: &str) -> Result<Vec<(u64, usize)>, String> {
    let mut numbers = Vec::new();
    for range in inside.split(',') {
        let range = range.trim();
        let (low, high) = range.split_once('-').unwrap_or((range, range));
        let number = |text: &str| {
            if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) || text.len() > 18 {
                Err(format!(
                    "`{range}` in brackets is not a number or a low-high range"
                ))
            } else {
                Ok(text.parse::<u64>().expect("at most 18 digits"))
            }
        };
        let (from, to) = (number(low)?, number(high)?);
        if to < from {
            return Err(format!("the range `{range}` runs backwards"));
        }
        if to - from >= limits::HOSTLIST_NAMES {
            let names = to - from + 1;
            return Err(limits::above(
                &format!("the range `{range}`"),
                &names,
                &limits::HOSTLIST_NAMES,
            )
            .to_string());
        }
        numbers.extend((from..=to).map(|n| (n, low.len())));
    }
    Ok(numbers)
}

/// Every name `parts` stands for after `prefix`, appended to `out`.
fn combine(parts: &[Part], prefix: String, out: &mut Vec<String>) {
    match parts.split_first() {
        None => out.push(prefix),
        Some((Part::Text(text), rest)) => combine(rest, prefix + text, out),
        Some((Part::Numbers(numbers), rest)) => {
            for &(n, width) in numbers {
                combine(rest, format!("{prefix}{n:0width$}"), out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn names(list: &str) -> Vec<String> {
        expand(list).unwrap()
    }

    #[test]
    fn ranges_lists_and_products_expand_as_slurm_does() {
        assert_eq!(
            names("node[001-003,010],x"),
            ["node001", "node002", "node003", "node010", "x"]
        );
        assert_eq!(
            names("rack[1-2]-n[01-02]"),
            ["rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"]
        );
        // Padding follows the low end (scontrol 22.05: k[1-003] is k1, k2, k3).
        assert_eq!(names("k[1-003]"), ["k1", "k2", "k3"]);
        assert_eq!(names("n[8-11]"), ["n8", "n9", "n10", "n11"]);
        assert_eq!(names("m[08-11]"), ["m08", "m09", "m10", "m11"]);
        assert_eq!(names("a[5]b[2-3]"), ["a5b2", "a5b3"]);
        assert_eq!(names("a,a"), ["a", "a"]);
    }

    #[test]
    fn names_compress_to_ranges_per_prefix() {
        let switches: Vec<String> = (1..=16)
            .map(|n| format!("leaf{n}"))
            .chain((1..=8).map(|n| format!("spine{n}")))
            .collect();
        assert_eq!(compress(&switches), "leaf[1-16],spine[1-8]");
        assert_eq!(compress(&["n08", "n09", "n10", "n7"]), "n[08-10,7]");
        let hosts: Vec<String> = (1..=32).map(|n| format!("node{n:03}")).collect();
        assert_eq!(compress(&hosts), "node[001-032]");
        assert_eq!(compress(&["a", "b1", "b3"]), "a,b[1,3]");
        assert_eq!(compress(&["x1"]), "x1");
        assert_eq!(
            expand_unique("gpu[1-2],gpu2,gpu1,gpu3")
                .unwrap_err()
                .to_string(),
            "hostlist `gpu[1-2],gpu2,gpu1,gpu3`: gpu[2,1] named more than once: each host once"
        );
    }

    #[test]
    fn malformed_lists_are_refused_with_the_reason() {
        for (list, says) in [
            ("", "empty"),
            ("a,,b", "empty name"),
            ("a[3-1]", "runs backwards"),
            ("a[1-2", "never closed"),
            ("a]1", "never opened"),
            ("a[1[2]]", "inside another"),
            ("a[x]", "not a number"),
            ("a[1-]", "not a number"),
            ("gpu[0-3]a", "follows the last bracket"),
            ("a[0-99999999999]", "above the cap of 65536"),
            ("a[0-9],b[0-99999]", "above the cap of 65536"),
            ("a[0-999]b[0-999]", "host names 1000000 is above the cap"),
        ] {
            let e = expand(list).unwrap_err();
            assert!(e.to_string().contains(says), "{list}: {e}");
            assert!(e.to_string().contains(&format!("`{list}`")), "{e}");
        }
    }

    proptest! {
        /// Names written back as a hostlist expand to the same names, in order.
        #[test]
        fn compressed_names_expand_back(names in proptest::collection::vec("[a-c]{0,2}-?[0-9]{0,4}", 0..30)) {
            let names: Vec<String> = names.into_iter().filter(|n| !n.is_empty()).collect();
            prop_assume!(!names.is_empty());
            prop_assert_eq!(expand(&compress(&names)).unwrap(), names);
        }

        /// A list is unique-expanded exactly when no name repeats, and a refusal names the
        /// repeated hosts.
        #[test]
        fn repeats_are_refused_naming_them(list in "[a-b][0-3]{1,2}(,[a-b][0-3]{1,2}){0,6}") {
            let names = expand(&list).unwrap();
            let distinct: std::collections::HashSet<&String> = names.iter().collect();
            match expand_unique(&list) {
                Ok(unique) => prop_assert_eq!(unique.len(), distinct.len()),
                Err(e) => {
                    prop_assert!(distinct.len() < names.len());
                    prop_assert!(e.to_string().contains("named more than once"), "{}", e);
                }
            }
        }

        #[test]
        fn any_text_is_expanded_or_refused_never_a_panic(list in "[a-c0-9,\\[\\]-]{0,24}") {
            if let Ok(names) = expand(&list) {
                prop_assert!(names.len() as u64 <= limits::HOSTLIST_NAMES);
            }
        }

        /// A list written from names that share a prefix expands back to them.
        #[test]
        fn a_written_range_expands_to_its_names(low in 0u64..500, len in 1u64..40, width in 1usize..5) {
            let high = low + len - 1;
            let list = format!("gpu[{low:0width$}-{high}]");
            let expected: Vec<String> = (low..=high).map(|n| format!("gpu{n:0width$}")).collect();
            prop_assert_eq!(expand(&list).unwrap(), expected);
        }
    }
}
