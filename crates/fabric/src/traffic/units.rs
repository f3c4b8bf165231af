//! Quantities in workload specs and files: message sizes (`128KiB`, `4096`) and times
//! (`1.5us`, `250000`). Parsed exactly, in decimal, so `1.5KiB` is 1536 bytes and `0.1ns`
//! is 100 ps, and a value that is not a whole number of the base unit is an error rather than
//! a silent rounding.

/// Size suffixes: binary ones (KiB = 1024, as the thesis' "4 KB" arrays of 1024 integers)
/// and decimal ones (KB = 1000). No suffix, or `B`, means bytes.
const SIZE_UNITS: [(&str, u64); 7] = [
    ("GiB", 1 << 30),
    ("MiB", 1 << 20),
    ("KiB", 1 << 10),
    ("GB", 1_000_000_000),
    ("MB", 1_000_000),
    ("KB", 1_000),
    ("B", 1),
];

/// Time suffixes, in picoseconds (the simulator's clock). No suffix means picoseconds.
const TIME_UNITS: [(&str, u64); 5] = [
    ("ps", 1),
    ("ns", 1_000),
    ("us", 1_000_000),
    ("ms", 1_000_000_000),
    ("s", 1_000_000_000_000),
];

const SIZE_FORMS: &str = "a number of bytes with an optional B, KiB, MiB, GiB, KB, MB or GB";
const TIME_FORMS: &str = "picoseconds, or a number with ps, ns, us, ms or s";

/// Picoseconds to send `bytes` at `gbps`: bits / (Gb/s) is nanoseconds.
pub fn transfer_ps(bytes: f64, gbps: f64) -> f64 {
    bytes * 8.0 / gbps * 1000.0
}

/// A size or time that does not read as a whole number of bytes or picoseconds; each names
/// the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// A negative quantity.
    #[error("'{text}' is negative")]
    Negative {
        /// The text given.
        text: String,
    },
    /// A suffix that is none of the units.
    #[error("unknown unit '{suffix}' in '{text}': expected {forms}")]
    UnknownUnit {
        /// The suffix that names no unit.
        suffix: String,
        /// The whole text.
        text: String,
        /// The forms accepted, for the message.
        forms: &'static str,
    },
    /// Text that is not a number.
    #[error("'{text}' is not a number: expected {forms}")]
    NotANumber {
        /// The text given.
        text: String,
        /// The forms accepted, for the message.
        forms: &'static str,
    },
    /// A value beyond 64 bits of the base unit.
    #[error("'{text}' is too large")]
    TooLarge {
        /// The text given.
        text: String,
    },
    /// A value with a fraction of the base unit (`0.5B`, `0.1ps`).
    #[error("'{text}' is not a whole number of {base}s")]
    NotWhole {
        /// The text given.
        text: String,
        /// The base unit (`byte`, `picosecond`).
        base: &'static str,
    },
}

/// A message size in bytes, e.g. `131072`, `128KiB`, `1.5MiB`.
pub fn parse_bytes(text: &str) -> Result<u64, QuantityError> {
    parse_quantity(text, &SIZE_UNITS, "byte", SIZE_FORMS)
}

/// A time in picoseconds, e.g. `250000`, `250ns`, `1.5us`.
pub fn parse_time_ps(text: &str) -> Result<u64, QuantityError> {
    parse_quantity(text, &TIME_UNITS, "picosecond", TIME_FORMS)
}

/// The shortest exact spelling of a size (`131072` -> `128KiB`), which [`parse_bytes`] reads
/// back to the same value.
pub fn format_bytes(bytes: u64) -> String {
    for (suffix, scale) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if bytes >= scale && bytes % scale == 0 {
            return format!("{}{suffix}", bytes / scale);
        }
    }
    bytes.to_string()
}

fn parse_quantity(
    text: &str,
    units: &[(&str, u64)],
    base: &'static str,
    forms: &'static str,
) -> Result<u64, QuantityError> {
    let text = text.trim();
    let owned = || text.to_string();
    if text.starts_with('-') {
        return Err(QuantityError::Negative { text: owned() });
    }
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let scale = if suffix.is_empty() {
        1
    } else {
        units
            .iter()
            .find(|(name, _)| *name == suffix)
            .map(|&(_, scale)| scale)
            .ok_or_else(|| QuantityError::UnknownUnit {
                suffix: suffix.to_string(),
                text: owned(),
                forms,
            })?
    };
    let (mantissa, decimals) = parse_decimal(number).ok_or_else(|| QuantityError::NotANumber {
        text: owned(),
        forms,
    })?;
    let divisor = 10u128.pow(decimals);
    let scaled = mantissa
        .checked_mul(u128::from(scale))
        .ok_or_else(|| QuantityError::TooLarge { text: owned() })?;
    if scaled % divisor != 0 {
        return Err(QuantityError::NotWhole {
            text: owned(),
            base,
        });
    }
    u64::try_from(scaled / divisor).map_err(|_| QuantityError::TooLarge { text: owned() })
}

/// `12.50` -> (1250, 2): the digits as an integer and how many were after the point.
fn parse_decimal(number: &str) -> Option<(u128, u32)> {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    // 30 digits keep 10^digits * the largest unit inside u128.
    if !all_digits(whole) || !all_digits(fraction) || whole.len() + fraction.len() > 30 {
        return None;
    }
    let digits = format!("{whole}{fraction}");
    Some((digits.parse().ok()?, fraction.len() as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("128KiB"), Ok(131_072));
        assert_eq!(parse_bytes("1.5KiB"), Ok(1536));
        assert_eq!(parse_bytes("2KB"), Ok(2000));
        assert_eq!(parse_bytes("512B"), Ok(512));
        assert!(parse_bytes("1.3B")
            .unwrap_err()
            .to_string()
            .contains("whole number"));
        assert!(parse_bytes("4kb")
            .unwrap_err()
            .to_string()
            .contains("unknown unit 'kb'"));
        assert!(parse_bytes("-4")
            .unwrap_err()
            .to_string()
            .contains("negative"));
        assert!(parse_bytes("KiB")
            .unwrap_err()
            .to_string()
            .contains("not a number"));
        assert!(matches!(
            parse_bytes("99999999999GiB"),
            Err(QuantityError::TooLarge { .. })
        ));
    }

    #[test]
    fn times() {
        assert_eq!(parse_time_ps("250000"), Ok(250_000));
        assert_eq!(parse_time_ps("1.5us"), Ok(1_500_000));
        assert_eq!(parse_time_ps("0.1ns"), Ok(100));
        assert_eq!(parse_time_ps("2ms"), Ok(2_000_000_000));
        assert!(parse_time_ps("0.5ps")
            .unwrap_err()
            .to_string()
            .contains("whole number"));
        assert!(parse_time_ps("3h")
            .unwrap_err()
            .to_string()
            .contains("unknown unit"));
    }

    #[test]
    fn formatted_sizes_read_back() {
        for bytes in [0, 1, 512, 1024, 4096, 131_072, 1536, 3 << 30] {
            assert_eq!(parse_bytes(&format_bytes(bytes)), Ok(bytes));
        }
        assert_eq!(format_bytes(131_072), "128KiB");
    }
}
