//! The fleet's judgement (Hostping 4.3 and 5, and beyond the paper where it fell short): what
//! a fleet baseline is (per kind of host, per path, the median and MAD over a batch of
//! hosts, [`baseline`], on the statistics of [`crate::robust`]), a run's path judged
//! against it ([`judge`]), hosts slow run after run though no run crosses Abnormal_th
//! ([`slow`]), when a host's latest run is too old to speak for it ([`STALE_AFTER_MS`]), and
//! from these a host's one-word health ([`health`]).
//!
//! The collector stores the values and runs the SQL; every decision is made here, on plain
//! values, so that it can be tested without a database and replayed on stored runs.

pub mod baseline;
pub mod judge;
pub mod slow;

use model::{PathStatus, Report};
use serde::{Deserialize, Serialize};

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

/// A host's health in one word, from its latest run (DESIGN 4.3 and 4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Health {
    /// Every link judged, no bottleneck, and recent.
    Healthy,
    /// A bottleneck found (exit status 1).
    Unhealthy,
    /// Some link could not be judged, so the host cannot be called healthy (exit status 3).
    Inconclusive,
    /// The latest run is too old to speak for the host (no finding in it).
    Stale,
}

impl Health {
    /// Every value, in the order the API documents them.
    pub const ALL: [Health; 4] = [
        Health::Healthy,
        Health::Unhealthy,
        Health::Inconclusive,
        Health::Stale,
    ];

    /// The name served and accepted (`healthy`, ...), as serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            Health::Healthy => "healthy",
            Health::Unhealthy => "unhealthy",
            Health::Inconclusive => "inconclusive",
            Health::Stale => "stale",
        }
    }

    /// Parses a name of [`Health::as_str`].
    pub fn from_name(name: &str) -> Option<Health> {
        Health::ALL.into_iter().find(|h| h.as_str() == name)
    }
}

/// Whether a run is inconclusive for its host's health: it could not judge every link
/// (DESIGN 4.3) and found nothing wrong in what it judged. A run with a finding (a
/// diagnosis, an abnormal path, a failed probe) is unhealthy even when it also left links
/// unjudged, as its exit status is 1.
pub fn is_inconclusive(report: &Report) -> bool {
    report.inconclusive
        && report.diagnoses.is_empty()
        && report
            .paths
            .iter()
            .all(|p| p.status != PathStatus::Abnormal && !p.failed())
}

/// A host's health from its latest run (`inconclusive` as [`is_inconclusive`] says): `None`
/// before any run. A finding stays a finding
/// until a newer run says otherwise, so an unhealthy host is unhealthy however old its run;
/// any other verdict is only as good as it is recent, so an old one is stale; a run that
/// could not judge every link is inconclusive, never healthy, whatever its `healthy` field
/// says (a report breaking that rule is not trusted with the word).
pub fn health(
    healthy: Option<bool>,
    inconclusive: bool,
    latest_started_unix_ms: Option<i64>,
    now_unix_ms: i64,
) -> Option<Health> {
    let healthy = healthy?;
    let stale = latest_started_unix_ms.is_none_or(|t| is_stale(t, now_unix_ms));
    Some(if !healthy && !inconclusive {
        Health::Unhealthy
    } else if stale {
        Health::Stale
    } else if inconclusive {
        Health::Inconclusive
    } else {
        Health::Healthy
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_never_says_healthy_of_an_unjudged_or_old_run() {
        let now = 10 * STALE_AFTER_MS;
        let fresh = Some(now - 1000);
        let old = Some(now - STALE_AFTER_MS - 1);
        assert_eq!(health(None, false, None, now), None);
        assert_eq!(health(Some(true), false, fresh, now), Some(Health::Healthy));
        assert_eq!(
            health(Some(false), false, fresh, now),
            Some(Health::Unhealthy)
        );
        assert_eq!(
            health(Some(false), false, old, now),
            Some(Health::Unhealthy)
        );
        assert_eq!(
            health(Some(false), true, fresh, now),
            Some(Health::Inconclusive)
        );
        // A report that says healthy and inconclusive at once is not called healthy.
        assert_eq!(
            health(Some(true), true, fresh, now),
            Some(Health::Inconclusive)
        );
        assert_eq!(health(Some(true), false, old, now), Some(Health::Stale));
        assert_eq!(health(Some(false), true, old, now), Some(Health::Stale));
        for h in Health::ALL {
            assert_eq!(Health::from_name(h.as_str()), Some(h));
            assert_eq!(
                serde_json::to_value(h).unwrap(),
                serde_json::Value::from(h.as_str())
            );
        }
        assert_eq!(Health::from_name("ok"), None);
    }

    #[test]
    fn a_host_is_stale_once_three_checks_are_missed() {
        let now = 10 * STALE_AFTER_MS;
        assert!(!is_stale(now - STALE_AFTER_MS, now));
        assert!(is_stale(now - STALE_AFTER_MS - 1, now));
        assert_eq!(stale_before(now), now - 15 * 60 * 1000);
    }
}
