//! How numbers and names are written in a diagnosis's `evidence` (plain words, DESIGN 4.3).
//!
//! Every rule writes its evidence through these few functions so that the same quantity
//! always reads the same way: bandwidth in whole Gb/s (to three significant digits under
//! 10 Gb/s, so that a Soft-RoCE path's fraction of a Gb/s does not read as 0), latency in us
//! with two decimals, changes as signed whole percentages.

use std::fmt::Display;

/// `126 Gb/s`, `4.56 Gb/s`, `0.123 Gb/s`.
pub(crate) fn gbps(v: f64) -> String {
    format!("{} Gb/s", rate(v))
}

/// `126-127 Gb/s`, or `126 Gb/s` when the rounded ends agree.
pub(crate) fn gbps_range(values: &[f64]) -> String {
    let (lo, hi) = min_max(values);
    if rate(lo) == rate(hi) {
        gbps(lo)
    } else {
        format!("{}-{} Gb/s", rate(lo), rate(hi))
    }
}

/// A rate in whole units from 10 up, else to three significant digits.
fn rate(v: f64) -> String {
    let decimals = match v.abs() {
        a if a >= 10.0 || a == 0.0 || !a.is_finite() => 0,
        a if a >= 1.0 => 2,
        a if a >= 0.1 => 3,
        _ => 4,
    };
    format!("{v:.decimals$}")
}

/// `2.20 us`.
pub(crate) fn us(v: f64) -> String {
    format!("{v:.2} us")
}

/// `-37 %` / `+120 %`: the change from `reference` to `value`.
pub(crate) fn change(value: f64, reference: f64) -> String {
    if reference <= 0.0 || !reference.is_finite() {
        return "n/a".to_string();
    }
    let pct = (value / reference - 1.0) * 100.0;
    format!("{pct:+.0} %")
}

/// `97 %`.
pub(crate) fn percent(fraction: f64) -> String {
    format!("{:.0} %", fraction * 100.0)
}

/// `100 ms` / `250 us`.
pub(crate) fn duration(us: f64) -> String {
    if us >= 1000.0 {
        format!("{:.0} ms", us / 1000.0)
    } else {
        format!("{us:.0} us")
    }
}

/// `a`, `a and b`, `a, b and c`.
pub(crate) fn list<T: Display>(items: &[T]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => {
            let head: Vec<String> = init.iter().map(|i| i.to_string()).collect();
            format!("{} and {last}", head.join(", "))
        }
    }
}

/// Like [`list`], but names at most `max` items and counts the rest.
pub(crate) fn list_capped<T: Display>(items: &[T], max: usize) -> String {
    if items.len() <= max {
        return list(items);
    }
    let shown: Vec<String> = items[..max].iter().map(|i| i.to_string()).collect();
    format!("{} and {} more", shown.join(", "), items.len() - max)
}

fn min_max(values: &[f64]) -> (f64, f64) {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_the_same_everywhere() {
        assert_eq!(gbps(126.4), "126 Gb/s");
        assert_eq!(gbps_range(&[126.2, 127.3, 126.9]), "126-127 Gb/s");
        assert_eq!(gbps_range(&[126.2, 125.9]), "126 Gb/s");
        // Soft-RoCE under emulation: fractions of a Gb/s keep their digits.
        assert_eq!(gbps(4.561), "4.56 Gb/s");
        assert_eq!(gbps(0.1234), "0.123 Gb/s");
        assert_eq!(gbps(0.01234), "0.0123 Gb/s");
        assert_eq!(gbps(0.0), "0 Gb/s");
        assert_eq!(gbps_range(&[0.121, 0.257]), "0.121-0.257 Gb/s");
        assert_eq!(us(2.2), "2.20 us");
        assert_eq!(change(126.0, 199.0), "-37 %");
        assert_eq!(change(2.2, 1.0), "+120 %");
        assert_eq!(change(1.0, 0.0), "n/a");
        assert_eq!(percent(0.97), "97 %");
        assert_eq!(duration(100_000.0), "100 ms");
        assert_eq!(duration(250.0), "250 us");
    }

    #[test]
    fn lists_read_as_prose() {
        assert_eq!(list::<&str>(&[]), "");
        assert_eq!(list(&["a"]), "a");
        assert_eq!(list(&["a", "b"]), "a and b");
        assert_eq!(list(&["a", "b", "c"]), "a, b and c");
        assert_eq!(list_capped(&["a", "b", "c", "d"], 2), "a, b and 2 more");
        assert_eq!(list_capped(&["a", "b"], 2), "a and b");
    }
}
