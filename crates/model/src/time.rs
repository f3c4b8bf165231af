//! Wall-clock instants as the reports and the fleet API carry them: milliseconds since the
//! Unix epoch. This module reads no clock; callers pass the instant in
//! (`model::time::unix_ms(SystemTime::now())`).

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn instants_count_from_the_epoch_and_never_go_negative() {
        let t = UNIX_EPOCH + Duration::from_millis(1_764_000_000_123);
        assert_eq!(unix_ms(t), 1_764_000_000_123);
        assert_eq!(unix_ns(t), 1_764_000_000_123_000_000);
        assert_eq!(unix_ms(UNIX_EPOCH - Duration::from_secs(5)), 0);
    }
}
