//! The read API's query parameters: as the URL carries them (text, so that a bad number is
//! refused in words that name it, not by the framework's deserializer), checked by one
//! number parser, and written back into a query string for clients.

use super::hosts::HostSummary;
use analyze::fleet::Health;
use model::Cause;
use serde::{Deserialize, Serialize};
use std::fmt::Display;
use std::ops::RangeInclusive;
use std::str::FromStr;

/// Runs per page of `GET /api/hosts/{host}/runs` without `limit`, and the most one holds.
pub const DEFAULT_RUNS: u32 = 20;
/// See [`DEFAULT_RUNS`].
pub const MAX_RUNS: u32 = 1000;
/// Timeline points without `limit` (2,016 being a week at the 5-minute cadence), and the
/// most one answer holds (five weeks).
pub const DEFAULT_POINTS: u32 = 1000;
/// See [`DEFAULT_POINTS`].
pub const MAX_POINTS: u32 = 10_000;
/// Slow hosts listed without `limit`, and the most one answer holds.
pub const DEFAULT_SLOW_HOSTS: usize = 50;
/// See [`DEFAULT_SLOW_HOSTS`].
pub const MAX_SLOW_HOSTS: usize = 10_000;

/// A query string outside the contract (400), in words that name the parameter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// Not a number, or out of its range.
    #[error("{name}: {text:?} is not a number from {min} to {max}")]
    NotANumber {
        /// The parameter.
        name: &'static str,
        /// What it held.
        text: String,
        /// The least it may be.
        min: String,
        /// The most it may be.
        max: String,
    },
    /// The timeline without its path.
    #[error("rnic and endpoint are required: ?rnic=R&endpoint=E")]
    NoPath,
    /// Not one of the parameter's values.
    #[error("{name}: {text:?} is not one of {}", .valid.join(", "))]
    NotOneOf {
        /// The parameter.
        name: &'static str,
        /// What it held.
        text: String,
        /// The values it may take.
        valid: Vec<&'static str>,
    },
}

/// What started an agent's run (`trigger` of [`super::RunEnvelope`], `?trigger=` of an
/// agent's `GET /api/runs`): the host check every five minutes, Hostping 5's symptoms (a
/// pause storm, drops), transport errors, and a run asked for.
pub const TRIGGERS: [&str; 5] = ["idle", "pfc", "drops", "transport", "manual"];

/// One of `valid` from the query string: `None` when absent, refused naming the parameter
/// and every valid value when it is none of them.
pub fn choice<T: Copy>(
    name: &'static str,
    text: Option<&str>,
    valid: &[T],
    as_str: impl Fn(T) -> &'static str,
) -> Result<Option<T>, QueryError> {
    let Some(text) = text else {
        return Ok(None);
    };
    match valid.iter().find(|&&v| as_str(v) == text) {
        Some(&v) => Ok(Some(v)),
        None => Err(QueryError::NotOneOf {
            name,
            text: text.to_owned(),
            valid: valid.iter().map(|&v| as_str(v)).collect(),
        }),
    }
}

/// A number from the query string: `default` when absent, refused naming the parameter when
/// it is not a number within `range`.
pub fn number<T>(
    name: &'static str,
    text: Option<&str>,
    default: T,
    range: RangeInclusive<T>,
) -> Result<T, QueryError>
where
    T: FromStr + PartialOrd + Display,
{
    let Some(text) = text else {
        return Ok(default);
    };
    match text.parse::<T>() {
        Ok(n) if range.contains(&n) => Ok(n),
        _ => Err(QueryError::NotANumber {
            name,
            text: text.to_owned(),
            min: range.start().to_string(),
            max: range.end().to_string(),
        }),
    }
}

/// `GET /api/hosts?cause=C&health=H`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostsQuery {
    /// Only hosts whose latest run has this cause (`link_failure`, ...).
    pub cause: Option<String>,
    /// Only hosts of this health (`healthy`, `unhealthy`, `inconclusive`, `stale`).
    pub health: Option<String>,
}

/// A [`HostsQuery`], checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostsFilter {
    /// Only hosts whose latest run has this cause.
    pub cause: Option<Cause>,
    /// Only hosts of this health.
    pub health: Option<Health>,
}

impl HostsQuery {
    /// The checked filter.
    pub fn filter(&self) -> Result<HostsFilter, QueryError> {
        Ok(HostsFilter {
            cause: choice("cause", self.cause.as_deref(), &Cause::ALL, Cause::as_str)?,
            health: choice(
                "health",
                self.health.as_deref(),
                &Health::ALL,
                Health::as_str,
            )?,
        })
    }

    /// `?cause=C&health=H`, the parameters given.
    pub fn to_query_string(&self) -> String {
        query_string(&[("cause", &self.cause), ("health", &self.health)])
    }
}

impl HostsFilter {
    /// Whether `host` passes.
    pub fn keeps(&self, host: &HostSummary) -> bool {
        self.cause
            .is_none_or(|c| host.causes.iter().any(|h| h == c.as_str()))
            && self.health.is_none_or(|h| host.health == Some(h))
    }
}

/// `GET /api/hosts/{host}/runs?limit=N`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunsQuery {
    /// Runs, newest first: 1 to [`MAX_RUNS`], [`DEFAULT_RUNS`] when absent.
    pub limit: Option<String>,
}

impl RunsQuery {
    /// The checked limit.
    pub fn limit(&self) -> Result<u32, QueryError> {
        number("limit", self.limit.as_deref(), DEFAULT_RUNS, 1..=MAX_RUNS)
    }

    /// `?limit=N`, or nothing.
    pub fn to_query_string(&self) -> String {
        query_string(&[("limit", &self.limit)])
    }
}

/// `GET /api/hosts/{host}/timeline?rnic=R&endpoint=E[&since_unix_ms=T][&limit=N]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineQuery {
    /// The path's RNIC (required).
    pub rnic: Option<String>,
    /// The path's endpoint (required).
    pub endpoint: Option<String>,
    /// Only runs started at or after this, ms since the Unix epoch (0 when absent).
    pub since_unix_ms: Option<String>,
    /// The newest this many points: 1 to [`MAX_POINTS`], [`DEFAULT_POINTS`] when absent.
    pub limit: Option<String>,
}

/// A [`TimelineQuery`], checked: what a store is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimelineRequest {
    /// The path's RNIC.
    pub rnic: String,
    /// The path's endpoint.
    pub endpoint: String,
    /// Only runs started at or after this, ms since the Unix epoch.
    pub since_unix_ms: i64,
    /// The newest this many points.
    pub limit: u32,
}

impl TimelineQuery {
    /// The checked request.
    pub fn request(self) -> Result<TimelineRequest, QueryError> {
        let (Some(rnic), Some(endpoint)) = (self.rnic, self.endpoint) else {
            return Err(QueryError::NoPath);
        };
        Ok(TimelineRequest {
            rnic,
            endpoint,
            since_unix_ms: number(
                "since_unix_ms",
                self.since_unix_ms.as_deref(),
                0,
                0..=i64::MAX,
            )?,
            limit: number(
                "limit",
                self.limit.as_deref(),
                DEFAULT_POINTS,
                1..=MAX_POINTS,
            )?,
        })
    }

    /// `?rnic=R&endpoint=E...`, the parameters given.
    pub fn to_query_string(&self) -> String {
        query_string(&[
            ("rnic", &self.rnic),
            ("endpoint", &self.endpoint),
            ("since_unix_ms", &self.since_unix_ms),
            ("limit", &self.limit),
        ])
    }
}

/// `GET /api/fleet/slow-hosts?kind=K&limit=N`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlowHostsQuery {
    /// Only hosts of this kind (every kind when absent).
    pub kind: Option<String>,
    /// The worst this many hosts: 1 to [`MAX_SLOW_HOSTS`], [`DEFAULT_SLOW_HOSTS`] when
    /// absent.
    pub limit: Option<String>,
}

impl SlowHostsQuery {
    /// The checked limit.
    pub fn limit(&self) -> Result<usize, QueryError> {
        number(
            "limit",
            self.limit.as_deref(),
            DEFAULT_SLOW_HOSTS,
            1..=MAX_SLOW_HOSTS,
        )
    }

    /// `?limit=N&kind=K`, the parameters given.
    pub fn to_query_string(&self) -> String {
        query_string(&[("limit", &self.limit), ("kind", &self.kind)])
    }
}

/// `?a=1&b=2` of the parameters that have a value, escaped; empty when none has.
fn query_string(params: &[(&str, &Option<String>)]) -> String {
    let given: Vec<String> = params
        .iter()
        .filter_map(|(name, value)| Some(format!("{name}={}", escape(value.as_deref()?))))
        .collect();
    if given.is_empty() {
        String::new()
    } else {
        format!("?{}", given.join("&"))
    }
}

/// `text` as one URL path segment or query value: the characters a URL may hold as they are
/// (RFC 3986's unreserved ones) kept, every other byte percent-escaped.
pub fn escape(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::extract::Query;
    use axum::http::Uri;

    fn parsed<T: serde::de::DeserializeOwned>(path_and_query: &str) -> T {
        let uri: Uri = format!("http://h{path_and_query}").parse().unwrap();
        Query::<T>::try_from_uri(&uri).unwrap().0
    }

    /// The messages of the 400s, word for word as they have always been.
    #[test]
    fn numbers_are_refused_naming_the_parameter_and_its_range() {
        assert_eq!(number("limit", None, 20, 1..=1000), Ok(20));
        assert_eq!(number("limit", Some("7"), 20, 1..=1000), Ok(7));
        for bad in ["0", "1001", "x", "-1", "", "1.5"] {
            assert_eq!(
                number("limit", Some(bad), 20u32, 1..=1000)
                    .unwrap_err()
                    .to_string(),
                format!("limit: {bad:?} is not a number from 1 to 1000")
            );
        }
        assert_eq!(
            number("since_unix_ms", Some("soon"), 0, 0..=i64::MAX)
                .unwrap_err()
                .to_string(),
            "since_unix_ms: \"soon\" is not a number from 0 to 9223372036854775807"
        );
        let q = |limit: &str| RunsQuery {
            limit: Some(limit.into()),
        };
        assert_eq!(q("1000").limit(), Ok(1000));
        assert!(q("1001").limit().is_err());
        assert_eq!(RunsQuery::default().limit(), Ok(DEFAULT_RUNS));
        assert_eq!(SlowHostsQuery::default().limit(), Ok(DEFAULT_SLOW_HOSTS));
        assert_eq!(
            TimelineQuery {
                rnic: Some("rnic2".into()),
                ..TimelineQuery::default()
            }
            .request()
            .unwrap_err()
            .to_string(),
            "rnic and endpoint are required: ?rnic=R&endpoint=E"
        );
    }

    /// An enum parameter outside its values is refused listing them all.
    #[test]
    fn enum_parameters_are_refused_listing_the_valid_values() {
        let q = |cause: Option<&str>, health: Option<&str>| HostsQuery {
            cause: cause.map(Into::into),
            health: health.map(Into::into),
        };
        assert_eq!(q(None, None).filter(), Ok(HostsFilter::default()));
        assert_eq!(
            q(Some("odp_stall"), Some("inconclusive")).filter(),
            Ok(HostsFilter {
                cause: Some(Cause::OdpStall),
                health: Some(Health::Inconclusive),
            })
        );
        assert_eq!(
            q(Some("bogus_cause"), None)
                .filter()
                .unwrap_err()
                .to_string(),
            "cause: \"bogus_cause\" is not one of link_failure, link_flapping, \
             link_overloaded, pcie_misconfiguration, rnic_misconfiguration, iommu_congestion, \
             memory_bus_congestion, odp_stall"
        );
        assert_eq!(
            q(None, Some("Healthy")).filter().unwrap_err().to_string(),
            "health: \"Healthy\" is not one of healthy, unhealthy, inconclusive, stale"
        );
        assert_eq!(
            choice("trigger", Some("bogus"), &TRIGGERS, |t| t)
                .unwrap_err()
                .to_string(),
            "trigger: \"bogus\" is not one of idle, pfc, drops, transport, manual"
        );
        assert_eq!(
            choice("trigger", Some("pfc"), &TRIGGERS, |t| t),
            Ok(Some("pfc"))
        );
    }

    /// What a client writes is what a server reads, under the same names.
    #[test]
    fn query_strings_read_back_as_written() {
        let slow = SlowHostsQuery {
            kind: Some("dgx a100/β".into()),
            limit: Some("5".into()),
        };
        assert_eq!(slow.to_query_string(), "?limit=5&kind=dgx%20a100%2F%CE%B2");
        assert_eq!(
            parsed::<SlowHostsQuery>(&format!("/api/fleet/slow-hosts{}", slow.to_query_string())),
            slow
        );
        let runs = RunsQuery {
            limit: Some("1".into()),
        };
        assert_eq!(
            parsed::<RunsQuery>(&format!("/r{}", runs.to_query_string())),
            runs
        );
        assert_eq!(RunsQuery::default().to_query_string(), "");
        let hosts = HostsQuery {
            cause: Some("link_failure".into()),
            health: Some("stale".into()),
        };
        assert_eq!(
            parsed::<HostsQuery>(&format!("/api/hosts{}", hosts.to_query_string())),
            hosts
        );
        let timeline = TimelineQuery {
            rnic: Some("rnic2".into()),
            endpoint: Some("gpu4".into()),
            since_unix_ms: Some("2000".into()),
            limit: None,
        };
        let read: TimelineQuery = parsed(&format!("/t{}", timeline.to_query_string()));
        assert_eq!(read, timeline);
        assert_eq!(
            read.request(),
            Ok(TimelineRequest {
                rnic: "rnic2".into(),
                endpoint: "gpu4".into(),
                since_unix_ms: 2000,
                limit: DEFAULT_POINTS,
            })
        );
    }

    #[test]
    fn url_segments_are_escaped() {
        assert_eq!(escape("node-1.rack_2~"), "node-1.rack_2~");
        assert_eq!(escape("a b/c?"), "a%20b%2Fc%3F");
    }
}
