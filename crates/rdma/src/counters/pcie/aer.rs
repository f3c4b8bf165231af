//! The AER statistics files of a function (`aer_dev_*`, `aer_rootport_total_err_*`).

use crate::sysfs::{DiscoverError, ParseError, SysRoot};
use serde::Serialize;
use std::path::Path;

/// The AER statistics of a function (`Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats`,
/// linux-counters.md 4.1). Errors are often counted at the link partner, not at the device
/// at fault: read both ends of a link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Aer {
    /// `aer_dev_correctable`.
    pub correctable: Option<AerCounts>,
    /// `aer_dev_nonfatal`.
    pub nonfatal: Option<AerCounts>,
    /// `aer_dev_fatal`.
    pub fatal: Option<AerCounts>,
    /// `aer_rootport_total_err_*`: error messages this root port received from below.
    pub rootport: Option<RootPortTotals>,
}

impl Aer {
    /// Errors this function saw itself: the sum of the three `TOTAL_ERR_*` lines; `None`
    /// unless all three files were read (a sum without one would understate it).
    pub fn device_total(&self) -> Option<u64> {
        [&self.correctable, &self.nonfatal, &self.fatal]
            .into_iter()
            .try_fold(0, |sum: u64, c| Some(sum.saturating_add(c.as_ref()?.total)))
    }
}

/// One `aer_dev_*` file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AerCounts {
    /// Every `<name> <count>` line but the total, in file order (`Receiver Error`,
    /// `Bad TLP`, ...; the kernel writes `<array>_bit[<n>]` for an unnamed bit).
    pub errors: Vec<(String, u64)>,
    /// The `TOTAL_ERR_*` line.
    pub total: u64,
}

impl AerCounts {
    /// The errors with a nonzero count.
    pub fn nonzero(&self) -> impl Iterator<Item = (&str, u64)> {
        self.errors
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(name, n)| (name.as_str(), *n))
    }
}

/// The `aer_rootport_total_err_*` files of a root port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RootPortTotals {
    /// `aer_rootport_total_err_cor`.
    pub correctable: u64,
    /// `aer_rootport_total_err_nonfatal`.
    pub nonfatal: u64,
    /// `aer_rootport_total_err_fatal`.
    pub fatal: u64,
}

pub(super) fn read_aer(root: &SysRoot, dir: &Path) -> Result<Option<Aer>, DiscoverError> {
    let counts = |file: &str, total: &'static str| {
        root.parse_optional(&dir.join(file), |s| parse_aer_counts(s, total))
    };
    let correctable = counts("aer_dev_correctable", "TOTAL_ERR_COR")?;
    let nonfatal = counts("aer_dev_nonfatal", "TOTAL_ERR_NONFATAL")?;
    let fatal = counts("aer_dev_fatal", "TOTAL_ERR_FATAL")?;
    let rootport = read_rootport_totals(root, dir)?;
    let any = correctable.is_some() || nonfatal.is_some() || fatal.is_some() || rootport.is_some();
    Ok(any.then_some(Aer {
        correctable,
        nonfatal,
        fatal,
        rootport,
    }))
}

/// All three `aer_rootport_total_err_*` files, or none: the kernel shows them together.
fn read_rootport_totals(
    root: &SysRoot,
    dir: &Path,
) -> Result<Option<RootPortTotals>, DiscoverError> {
    let names =
        ["cor", "nonfatal", "fatal"].map(|k| dir.join(format!("aer_rootport_total_err_{k}")));
    let mut values = [None; 3];
    for (value, path) in values.iter_mut().zip(&names) {
        *value = root.parse_optional(path, parse_count)?;
    }
    match values {
        [Some(correctable), Some(nonfatal), Some(fatal)] => Ok(Some(RootPortTotals {
            correctable,
            nonfatal,
            fatal,
        })),
        [None, None, None] => Ok(None),
        _ => {
            let missing = values.iter().position(Option::is_none).unwrap_or(0);
            Err(DiscoverError::Malformed {
                path: names[missing].clone(),
                reason: "missing while other aer_rootport_total_err_* files exist".into(),
            })
        }
    }
}

/// Parses an `aer_dev_*` file: lines `<name> <count>` (`%s %llu`; names have spaces), the
/// last one `<total_name> <count>` (`TOTAL_ERR_COR`, ...).
pub fn parse_aer_counts(s: &str, total_name: &'static str) -> Result<AerCounts, ParseError> {
    let mut errors = Vec::new();
    let mut total = None;
    for line in s.lines() {
        let bad = || ParseError::new(line, "an AER line `<name> <count>`");
        let (name, count) = line.trim_end().rsplit_once(' ').ok_or_else(bad)?;
        let name = name.trim_end();
        let count = parse_count(count).map_err(|_| bad())?;
        if name.is_empty() || total.is_some() {
            return Err(bad());
        }
        if name == total_name {
            total = Some(count);
        } else {
            errors.push((name.to_string(), count));
        }
    }
    let total =
        total.ok_or_else(|| ParseError::new(s, "AER counts ending in a TOTAL_ERR_* line"))?;
    Ok(AerCounts { errors, total })
}

/// Parses a counter: decimal digits only, as `%llu` writes it.
pub fn parse_count(s: &str) -> Result<u64, ParseError> {
    let bad = || ParseError::new(s, "a decimal count");
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    s.parse().map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const CORRECTABLE: &str = "Receiver Error 2\nBad TLP 0\nBad DLLP 7\nRELAY_NUM Rollover 0\n\
        Replay Timer Timeout 0\nAdvisory Non-Fatal 0\nCorrected Internal Error 0\n\
        Header Log Overflow 0\ndev_cor_errs_bit[9] 1\nTOTAL_ERR_COR 10";

    #[test]
    fn aer_files_parse_as_the_kernel_writes_them() {
        let got = parse_aer_counts(CORRECTABLE, "TOTAL_ERR_COR").unwrap();
        assert_eq!(got.total, 10);
        assert_eq!(got.errors.len(), 9);
        assert_eq!(got.errors[0], ("Receiver Error".to_string(), 2));
        assert_eq!(
            got.nonzero().collect::<Vec<_>>(),
            [
                ("Receiver Error", 2),
                ("Bad DLLP", 7),
                ("dev_cor_errs_bit[9]", 1)
            ]
        );
        let only_total = parse_aer_counts("TOTAL_ERR_FATAL 0", "TOTAL_ERR_FATAL").unwrap();
        assert_eq!(
            only_total,
            AerCounts {
                errors: vec![],
                total: 0
            }
        );
        let mut aer = Aer {
            correctable: Some(got),
            nonfatal: None,
            fatal: Some(only_total.clone()),
            rootport: None,
        };
        assert_eq!(aer.device_total(), None, "aer_dev_nonfatal was not read");
        aer.nonfatal = Some(only_total);
        assert_eq!(aer.device_total(), Some(10));
    }

    #[test]
    fn malformed_aer_files_are_errors() {
        let table = [
            ("", "TOTAL_ERR_COR"),
            ("Receiver Error 2", "TOTAL_ERR_COR"),
            (CORRECTABLE, "TOTAL_ERR_FATAL"),
            ("TOTAL_ERR_COR 1\nBad TLP 0", "TOTAL_ERR_COR"),
            ("TOTAL_ERR_COR 1\nTOTAL_ERR_COR 1", "TOTAL_ERR_COR"),
            ("Bad TLP -1\nTOTAL_ERR_COR 0", "TOTAL_ERR_COR"),
            ("Bad TLP\nTOTAL_ERR_COR 0", "TOTAL_ERR_COR"),
            (" 3\nTOTAL_ERR_COR 0", "TOTAL_ERR_COR"),
            ("TOTAL_ERR_COR 18446744073709551616", "TOTAL_ERR_COR"),
        ];
        for (text, total) in table {
            assert!(parse_aer_counts(text, total).is_err(), "{text:?}");
        }
        let e = parse_aer_counts("Bad TLP x\nTOTAL_ERR_COR 0", "TOTAL_ERR_COR").unwrap_err();
        assert_eq!(
            e.to_string(),
            "`Bad TLP x` is not an AER line `<name> <count>`"
        );
    }

    #[test]
    fn counts_are_plain_decimals() {
        assert_eq!(parse_count("0"), Ok(0));
        assert_eq!(parse_count("18446744073709551615"), Ok(u64::MAX));
        for bad in ["", "-1", "+1", "1.0", "0x10", " 1", "18446744073709551616"] {
            assert!(parse_count(bad).is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn text_parsers_never_panic(s in "\\PC*") {
            let _ = parse_aer_counts(&s, "TOTAL_ERR_COR");
            let _ = parse_count(&s);
        }

        #[test]
        fn generated_aer_files_read_back(
            counts in prop::collection::vec(("[A-Za-z][A-Za-z _\\[\\]0-9-]{0,20}[A-Za-z]", any::<u64>()), 0..20),
            total: u64,
        ) {
            let mut text: Vec<String> = counts.iter().map(|(n, c)| format!("{n} {c}")).collect();
            text.push(format!("TOTAL_ERR_NONFATAL {total}"));
            prop_assume!(counts.iter().all(|(n, _)| n != "TOTAL_ERR_NONFATAL"));
            let got = parse_aer_counts(&text.join("\n"), "TOTAL_ERR_NONFATAL").unwrap();
            prop_assert_eq!(got.total, total);
            let want: Vec<(String, u64)> = counts.iter().map(|(n, c)| (n.trim_end().to_string(), *c)).collect();
            prop_assert_eq!(got.errors, want);
        }

        #[test]
        fn counts_round_trip(n: u64) {
            prop_assert_eq!(parse_count(&n.to_string()), Ok(n));
        }
    }
}
