//! Wall-clock instants as the reports and the fleet API carry them: milliseconds since the
//! Unix epoch. This module reads no clock; callers pass the instant in
//! (`model::time::unix_ms(SystemTime::now())`).
//!
//! And the one reader of a time given by a person ([`unix_seconds`]), the same on the
//! command line (`job --since`), in the collector's query strings (`since=`) and so on the
//! web page, which sends what was typed: Unix seconds, or an RFC 3339 time with its offset
//! (`2026-11-27T13:00:00Z`, `2026-11-27T15:00:00+02:00`; RFC 3339 section 5.6). A time
//! without an offset is refused: whose local time it is would be a guess.

use std::time::{SystemTime, UNIX_EPOCH};

/// `t` in milliseconds since the Unix epoch; an instant before the epoch (a clock set far
/// back) is 0, and one past `i64::MAX` ms saturates.
pub fn unix_ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// `t` in nanoseconds since the Unix epoch, as [`unix_ms`] does it.
pub fn unix_ns(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// A time that is neither Unix seconds nor RFC 3339 with its offset, or one before 1970.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    /// Not a time of either form.
    #[error(
        "{flag} {text}: wants Unix seconds or an RFC 3339 time with its offset (2026-11-27T13:00:00Z, 2026-11-27T15:00:00+02:00)"
    )]
    Wanted {
        /// Where the time came from: the flag (`--since`) or the query parameter (`since`).
        flag: String,
        /// The time as given.
        text: String,
    },
    /// A time before the Unix epoch.
    #[error("{flag} {text}: before 1970")]
    Before1970 {
        /// Where the time came from: the flag (`--since`) or the query parameter (`since`).
        flag: String,
        /// The time as given.
        text: String,
    },
}

/// `text` as Unix seconds; `flag` names it in the error.
pub fn unix_seconds(flag: &str, text: &str) -> Result<i64, TimeError> {
    let wanted = || TimeError::Wanted {
        flag: flag.to_string(),
        text: text.to_string(),
    };
    let before_1970 = || TimeError::Before1970 {
        flag: flag.to_string(),
        text: text.to_string(),
    };
    if text.bytes().all(|b| b.is_ascii_digit()) && !text.is_empty() {
        return text.parse::<i64>().map_err(|_| wanted());
    }
    let (local, offset_s) = split_offset(text).ok_or_else(wanted)?;
    let at = humantime::parse_rfc3339_weak(local).map_err(|_| wanted())?;
    let utc_s = match at.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(_) => return Err(before_1970()),
    };
    let s = utc_s - offset_s;
    if s < 0 {
        return Err(before_1970());
    }
    Ok(s)
}

/// The time before its offset, and the offset in seconds east of UTC (`Z`: 0); `None`
/// without one.
fn split_offset(text: &str) -> Option<(&str, i64)> {
    if let Some(local) = text.strip_suffix(['Z', 'z']) {
        return Some((local, 0));
    }
    let at = text.len().checked_sub(6)?;
    let (local, offset) = (text.get(..at)?, text.get(at..)?.as_bytes());
    let digit = |i: usize| {
        offset[i]
            .is_ascii_digit()
            .then(|| i64::from(offset[i] - b'0'))
    };
    let (hours, minutes) = (digit(1)? * 10 + digit(2)?, digit(4)? * 10 + digit(5)?);
    let sign = match offset[0] {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    (offset[3] == b':' && hours < 24 && minutes < 60)
        .then_some((local, sign * (hours * 3600 + minutes * 60)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::time::Duration;

    #[test]
    fn instants_count_from_the_epoch_and_never_go_negative() {
        let t = UNIX_EPOCH + Duration::from_millis(1_764_000_000_123);
        assert_eq!(unix_ms(t), 1_764_000_000_123);
        assert_eq!(unix_ns(t), 1_764_000_000_123_000_000);
        assert_eq!(unix_ms(UNIX_EPOCH - Duration::from_secs(5)), 0);
    }

    #[test]
    fn unix_seconds_and_rfc_3339_agree() {
        assert_eq!(
            unix_seconds("--since", "1795787165").unwrap(),
            1_795_787_165
        );
        for text in [
            "2026-11-27T10:26:05Z",
            "2026-11-27T12:26:05+02:00",
            "2026-11-27T05:26:05-05:00",
            "2026-11-27T10:26:05.750Z",
        ] {
            assert_eq!(
                unix_seconds("--since", text).unwrap(),
                1_795_775_165,
                "{text}"
            );
        }
    }

    #[test]
    fn a_time_without_an_offset_or_malformed_is_refused_naming_the_flag() {
        for text in [
            "2026-11-27T10:26:05",
            "yesterday",
            "",
            "-5",
            "2026-11-27T10:26:05+2:00x",
            "2026-13-01T00:00:00Z",
        ] {
            let e = unix_seconds("--until", text).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("--until {text}: wants")),
                "{text}: {e}"
            );
        }
        assert!(unix_seconds("--until", "1969-12-31T23:00:00Z").is_err());
    }

    proptest! {
        #[test]
        fn a_written_time_reads_back(s in 0i64..4_000_000_000, offset_min in -(23 * 60 + 59)..(23 * 60 + 59i64)) {
            let utc = humantime::format_rfc3339_seconds(UNIX_EPOCH + std::time::Duration::from_secs(s as u64));
            prop_assert_eq!(unix_seconds("--since", &utc.to_string()).unwrap(), s);
            // The same instant written in another offset's local time.
            let shifted = s + offset_min * 60;
            prop_assume!(shifted >= 0);
            let local = humantime::format_rfc3339_seconds(UNIX_EPOCH + std::time::Duration::from_secs(shifted as u64)).to_string();
            let sign = if offset_min < 0 { '-' } else { '+' };
            let text = format!("{}{sign}{:02}:{:02}", local.trim_end_matches('Z'), offset_min.abs() / 60, offset_min.abs() % 60);
            prop_assert_eq!(unix_seconds("--since", &text).unwrap(), s, "{}", text);
        }

        #[test]
        fn arbitrary_text_never_panics(text in ".{0,40}") {
            let _ = unix_seconds("--since", &text);
        }
    }
}
