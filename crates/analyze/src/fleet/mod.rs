//! The fleet's judgement (Hostping 4.3 and 5, and beyond the paper where it fell short): what
//! a fleet baseline is (per kind of host, per path, the median and MAD over a batch of
//! hosts, [`baseline`], on the statistics of [`crate::robust`]), a run's path judged
//! against it ([`judge`]), hosts slow run after run though no run crosses Abnormal_th
//! ([`slow`]), and when a host's latest run is too old to speak for it ([`STALE_AFTER_MS`]).
//!
//! The collector stores the values and runs the SQL; every decision is made here, on plain
//! values, so that it can be tested without a database and replayed on stored runs.

pub mod baseline;
pub mod judge;
pub mod slow;

/// A host whose latest run started longer ago than this is stale: three of Hostping 5's
/// 5-minute host checks missed in a row.
pub const STALE_AFTER_MS: i64 = 3 * 5 * 60 * 1000;

/// Whether a host whose latest run started at `latest_started_unix_ms` is stale at `now`.
pub fn is_stale(latest_started_unix_ms: i64, now_unix_ms: i64) -> bool {
    latest_started_unix_ms < stale_before(now_unix_ms)
}

/// The start time before which a latest run is stale at `now` (for a query's bound).
pub fn stale_before(now_unix_ms: i64) -> i64 {
    now_unix_ms - STALE_AFTER_MS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_is_stale_once_three_checks_are_missed() {
        let now = 10 * STALE_AFTER_MS;
        assert!(!is_stale(now - STALE_AFTER_MS, now));
        assert!(is_stale(now - STALE_AFTER_MS - 1, now));
        assert_eq!(stale_before(now), now - 15 * 60 * 1000);
    }
}
