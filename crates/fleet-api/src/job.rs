//! DESIGN 4.7's query, `GET /api/jobs/verdict?nodes=..&since=..&until=..&job=..&probe=1&
//! what_if=ring|tree&bytes=..&observed_us=..`, as one type: `hostping job` builds it and
//! [`crate::client`] writes it as a query string; the collector reads it back, checked, each
//! refusal naming the parameter as given. Its defaults are written here only; the window's,
//! which needs the collector's clock, is applied there ([`DEFAULT_WINDOW_S`]).

use serde::Deserialize;
use std::fmt::Write as _;

/// The path of the job verdict.
pub const PATH: &str = "/api/jobs/verdict";
/// The window when `since` is not given: the hour before `until` (the collector's now when
/// not given either).
pub const DEFAULT_WINDOW_S: i64 = 3600;
/// The buffer a what-if all-reduce reduces when `bytes` is not given (`hostping job
/// --bytes`'s default too).
pub const DEFAULT_WHAT_IF_BYTES: u64 = 64 << 20;
/// The largest buffer a what-if replays: [`model::limits::WHAT_IF_BYTES`] (1 GiB, sixteen
/// times the default), the cap `hostping job --bytes` has too. The replay's cost grows with
/// the packets it moves (about 15 s for 64 MiB over 256 hosts, BENCHMARKS.md), and a
/// request must not hold a core for hours.
pub const MAX_WHAT_IF_BYTES: u64 = model::limits::WHAT_IF_BYTES;

/// The all-reduce a what-if replays: `ring` or `tree`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collective {
    /// NCCL's ring all-reduce.
    Ring,
    /// A binomial-tree all-reduce.
    Tree,
}

impl Collective {
    /// Its name in the query and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Collective::Ring => "ring",
            Collective::Tree => "tree",
        }
    }
}

impl std::str::FromStr for Collective {
    type Err = ();

    /// `ring` or `tree`; anything else is no collective (a caller says what it is instead).
    fn from_str(text: &str) -> Result<Collective, ()> {
        match text {
            "ring" => Ok(Collective::Ring),
            "tree" => Ok(Collective::Tree),
            _ => Err(()),
        }
    }
}

/// The job verdict's query, checked but for its window, which the collector completes with
/// its clock.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "Given")]
pub struct VerdictQuery {
    /// The job's hosts, in rank order, each once (a Slurm hostlist in the query).
    pub nodes: Vec<String>,
    /// The window's start, Unix seconds, exclusive (default: [`DEFAULT_WINDOW_S`] before
    /// its end).
    pub since_s: Option<i64>,
    /// Its end, inclusive (default: now).
    pub until_s: Option<i64>,
    /// The job's id.
    pub job: Option<String>,
    /// Whether pair probes run through the agents (they need a probe token).
    pub probe: bool,
    /// The what-if asked for.
    pub what_if: Option<WhatIf>,
}

/// `what_if=ring|tree[&bytes=N]&observed_us=X`: replay the job's traffic on the collector's
/// fabric and compare with the job's own measured time.
#[derive(Debug, Clone, PartialEq)]
pub struct WhatIf {
    /// The all-reduce replayed.
    pub collective: Collective,
    /// The buffer it reduces, 1 to [`MAX_WHAT_IF_BYTES`].
    pub bytes: u64,
    /// The job's measured time of that traffic, us: positive and finite.
    pub observed_us: f64,
}

/// The query string as given, before it is checked.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Given {
    nodes: Option<String>,
    since: Option<String>,
    until: Option<String>,
    job: Option<String>,
    probe: Option<String>,
    what_if: Option<String>,
    bytes: Option<String>,
    observed_us: Option<String>,
}

/// Why a query was refused (400), each naming the parameter as given.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum QueryError {
    /// No `nodes`.
    #[error("nodes=LIST is required (Slurm hostlist syntax: node[001-016,020])")]
    NoNodes,
    /// `nodes` is not a hostlist.
    #[error("nodes={list}: {source}")]
    Hostlist {
        /// The list as given.
        list: String,
        /// Why it does not expand.
        source: model::hostlist::HostlistError,
    },
    /// More hosts than a verdict judges.
    #[error("nodes={list}: {count} hosts, more than {max}")]
    TooManyNodes {
        /// The list as given.
        list: String,
        /// The hosts it names.
        count: usize,
        /// The most allowed.
        max: usize,
    },
    /// A host named twice.
    #[error("nodes={list}: {host} is given twice")]
    Twice {
        /// The list as given.
        list: String,
        /// The host.
        host: String,
    },
    /// `since` or `until` is neither Unix seconds nor an RFC 3339 time with its offset
    /// (read by `model::time::unix_seconds`, as `hostping job --since` reads it).
    #[error(
        "{name}={value}: wants Unix seconds or an RFC 3339 time with its offset \
         (2026-11-27T13:00:00Z, 2026-11-27T15:00:00+02:00)"
    )]
    Seconds {
        /// `since` or `until`.
        name: &'static str,
        /// The value as given.
        value: String,
    },
    /// The window has no length.
    #[error("since={since_s} is not before until={until_s}: the window is empty")]
    EmptyWindow {
        /// Its start.
        since_s: i64,
        /// Its end.
        until_s: i64,
    },
    /// `job` is empty, too long or not printable.
    #[error("job={id:?}: wants a job id of 1 to 64 printable characters")]
    Job {
        /// The id as given.
        id: String,
    },
    /// `probe` is not 1 or 0.
    #[error("probe={value}: wants 1 or 0")]
    Probe {
        /// The value as given.
        value: String,
    },
    /// `bytes` or `observed_us` without `what_if`.
    #[error("{name}={value}: only with what_if=ring|tree")]
    WithoutWhatIf {
        /// `bytes` or `observed_us`.
        name: &'static str,
        /// The value as given.
        value: String,
    },
    /// `bytes` out of range.
    #[error("bytes={value}: wants a whole number of bytes, 1 to {MAX_WHAT_IF_BYTES}")]
    Bytes {
        /// The value as given.
        value: String,
    },
    /// `what_if` names no all-reduce.
    #[error("what_if={value}: wants ring or tree (the all-reduce replayed)")]
    WhatIf {
        /// The value as given.
        value: String,
    },
    /// `what_if` without `observed_us`.
    #[error(
        "observed_us=X is required with what_if: the job's own measured time of that \
         traffic, us"
    )]
    NoObserved,
    /// `observed_us` is not a positive time.
    #[error("observed_us={value}: wants a positive number of microseconds")]
    Observed {
        /// The value as given.
        value: String,
    },
}

impl VerdictQuery {
    /// The query string, `?` included: what [`Deserialize`] reads back as this query.
    pub fn to_query_string(&self) -> String {
        let mut out = format!(
            "?nodes={}",
            crate::read::query::escape(&self.nodes.join(","))
        );
        for (key, value) in [("since", self.since_s), ("until", self.until_s)] {
            if let Some(value) = value {
                let _ = write!(out, "&{key}={value}");
            }
        }
        if let Some(job) = &self.job {
            let _ = write!(out, "&job={}", crate::read::query::escape(job));
        }
        if self.probe {
            out.push_str("&probe=1");
        }
        if let Some(w) = &self.what_if {
            let _ = write!(
                out,
                "&what_if={}&bytes={}&observed_us={}",
                w.collective.as_str(),
                w.bytes,
                w.observed_us
            );
        }
        out
    }

    /// The window, Unix seconds (`since` exclusive, `until` inclusive), `now_s` standing for
    /// a missing `until`; refused when it has no length.
    pub fn window(&self, now_s: i64) -> Result<(i64, i64), QueryError> {
        let until_s = self.until_s.unwrap_or(now_s);
        let since_s = self
            .since_s
            .unwrap_or_else(|| (until_s - DEFAULT_WINDOW_S).max(0));
        if since_s >= until_s {
            return Err(QueryError::EmptyWindow { since_s, until_s });
        }
        Ok((since_s, until_s))
    }
}

impl TryFrom<Given> for VerdictQuery {
    type Error = QueryError;

    fn try_from(given: Given) -> Result<VerdictQuery, QueryError> {
        let list = given.nodes.as_deref().ok_or(QueryError::NoNodes)?;
        let nodes = model::hostlist::expand(list).map_err(|source| QueryError::Hostlist {
            list: list.to_owned(),
            source,
        })?;
        if nodes.len() > crate::mesh::MAX_NODES {
            return Err(QueryError::TooManyNodes {
                list: list.to_owned(),
                count: nodes.len(),
                max: crate::mesh::MAX_NODES,
            });
        }
        let mut seen = std::collections::BTreeSet::new();
        if let Some(twice) = nodes.iter().find(|n| !seen.insert(n.as_str())) {
            return Err(QueryError::Twice {
                list: list.to_owned(),
                host: twice.clone(),
            });
        }
        let seconds = |name: &'static str, v: Option<&str>| -> Result<Option<i64>, QueryError> {
            v.map(|v| {
                model::time::unix_seconds(name, v)
                    .ok()
                    .filter(|s| (0..=i64::MAX / 1_000_000_000).contains(s))
                    .ok_or_else(|| QueryError::Seconds {
                        name,
                        value: v.to_owned(),
                    })
            })
            .transpose()
        };
        let until_s = seconds("until", given.until.as_deref())?;
        let since_s = seconds("since", given.since.as_deref())?;
        if let (Some(since_s), Some(until_s)) = (since_s, until_s) {
            if since_s >= until_s {
                return Err(QueryError::EmptyWindow { since_s, until_s });
            }
        }
        let job = match given.job.as_deref() {
            Some(id) if id.is_empty() || id.len() > 64 || id.chars().any(char::is_control) => {
                return Err(QueryError::Job { id: id.to_owned() })
            }
            id => id.map(str::to_owned),
        };
        let probe = match given.probe.as_deref() {
            None | Some("0" | "false") => false,
            Some("1" | "true") => true,
            Some(other) => {
                return Err(QueryError::Probe {
                    value: other.to_owned(),
                })
            }
        };
        Ok(VerdictQuery {
            nodes,
            since_s,
            until_s,
            job,
            probe,
            what_if: WhatIf::given(&given)?,
        })
    }
}

impl WhatIf {
    /// The what-if `given` asks for, if any; `bytes` and `observed_us` without `what_if`,
    /// and `what_if` without `observed_us`, are refused.
    fn given(given: &Given) -> Result<Option<WhatIf>, QueryError> {
        let Some(what_if) = given.what_if.as_deref() else {
            let without = |name, value: &String| QueryError::WithoutWhatIf {
                name,
                value: value.clone(),
            };
            return match (&given.bytes, &given.observed_us) {
                (Some(b), _) => Err(without("bytes", b)),
                (None, Some(o)) => Err(without("observed_us", o)),
                (None, None) => Ok(None),
            };
        };
        let bytes = match given.bytes.as_deref() {
            None => DEFAULT_WHAT_IF_BYTES,
            Some(b) => b
                .parse::<u64>()
                .ok()
                .filter(|n| (1..=MAX_WHAT_IF_BYTES).contains(n))
                .ok_or_else(|| QueryError::Bytes {
                    value: b.to_owned(),
                })?,
        };
        let collective = what_if.parse().map_err(|()| QueryError::WhatIf {
            value: what_if.to_owned(),
        })?;
        // Compared with the replays, the job's own time is what a real what-if explains.
        let observed = given.observed_us.as_deref().ok_or(QueryError::NoObserved)?;
        let observed_us = observed
            .parse::<f64>()
            .ok()
            .filter(|us| us.is_finite() && *us > 0.0)
            .ok_or_else(|| QueryError::Observed {
                value: observed.to_owned(),
            })?;
        Ok(Some(WhatIf {
            collective,
            bytes,
            observed_us,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn given(nodes: &str, since: Option<&str>, until: Option<&str>) -> Given {
        Given {
            nodes: Some(nodes.into()),
            since: since.map(Into::into),
            until: until.map(Into::into),
            ..Given::default()
        }
    }

    fn parse(g: Given) -> Result<VerdictQuery, QueryError> {
        VerdictQuery::try_from(g)
    }

    /// The window's times as Unix seconds or RFC 3339 with an offset, read as `hostping job
    /// --since` reads them.
    #[test]
    fn times_are_unix_seconds_or_rfc_3339() {
        let q = parse(given(
            "a",
            Some("2026-11-27T12:26:05+02:00"),
            Some("1795778765"),
        ))
        .unwrap();
        assert_eq!(
            (q.since_s, q.until_s),
            (Some(1_795_775_165), Some(1_795_778_765))
        );
        let e = parse(given("a", Some("2026-11-27T10:26:05"), None)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "since=2026-11-27T10:26:05: wants Unix seconds or an RFC 3339 time with its offset \
             (2026-11-27T13:00:00Z, 2026-11-27T15:00:00+02:00)"
        );
    }

    #[test]
    fn the_window_defaults_to_the_hour_before_now() {
        let q = parse(given("node[01-03]", None, None)).unwrap();
        assert_eq!(q.nodes, ["node01", "node02", "node03"]);
        assert_eq!(q.window(10_000), Ok((6_400, 10_000)));
        let q = parse(given("a,b", Some("5"), Some("20"))).unwrap();
        assert_eq!(q.window(0), Ok((5, 20)));
        assert!(!q.probe && q.job.is_none() && q.what_if.is_none());
        let q = parse(given("a", None, Some("0"))).unwrap();
        assert!(q.window(100).is_err());
    }

    #[test]
    fn a_what_if_wants_its_traffic_and_the_jobs_measured_time() {
        let what_if = |what_if: &str, bytes: Option<&str>, observed_us: Option<&str>| Given {
            what_if: Some(what_if.into()),
            bytes: bytes.map(Into::into),
            observed_us: observed_us.map(Into::into),
            ..given("a,b", None, None)
        };
        let q = parse(what_if("ring", None, Some("8200.5"))).unwrap();
        assert_eq!(
            q.what_if,
            Some(WhatIf {
                collective: Collective::Ring,
                bytes: DEFAULT_WHAT_IF_BYTES,
                observed_us: 8200.5
            })
        );
        let q = parse(what_if("tree", Some("1048576"), Some("350"))).unwrap();
        let w = q.what_if.unwrap();
        assert_eq!((w.collective, w.bytes), (Collective::Tree, 1 << 20));
        let alone = |bytes: Option<&str>, observed_us: Option<&str>| Given {
            bytes: bytes.map(Into::into),
            observed_us: observed_us.map(Into::into),
            ..given("a,b", None, None)
        };
        for (q, said) in [
            (what_if("ring", None, None), "observed_us=X is required"),
            (what_if("mesh", None, Some("5")), "what_if=mesh"),
            (what_if("ring", None, Some("0")), "observed_us=0"),
            (what_if("ring", None, Some("-3")), "observed_us=-3"),
            (what_if("ring", None, Some("inf")), "observed_us=inf"),
            (what_if("ring", None, Some("NaN")), "observed_us=NaN"),
            (what_if("ring", Some("0"), Some("5")), "bytes=0"),
            (
                what_if("ring", Some("2147483648"), Some("5")),
                "bytes=2147483648",
            ),
            (what_if("ring", Some("1e6"), Some("5")), "bytes=1e6"),
            (alone(Some("64"), None), "bytes=64: only with what_if"),
            (alone(None, Some("5")), "observed_us=5: only with what_if"),
        ] {
            let e = parse(q).unwrap_err().to_string();
            assert!(e.contains(said), "{said}: {e}");
        }
    }

    #[test]
    fn each_refusal_names_its_parameter() {
        let mut no_nodes = given("", None, None);
        no_nodes.nodes = None;
        let mut bad_probe = given("a", None, None);
        bad_probe.probe = Some("yes".into());
        let mut bad_job = given("a", None, None);
        bad_job.job = Some(String::new());
        for (q, said) in [
            (no_nodes, "nodes=LIST is required"),
            (given("node[3-1]", None, None), "nodes=node[3-1]"),
            (given("a,b,a", None, None), "a is given twice"),
            (given("a", Some("x"), None), "since=x"),
            (given("a", None, Some("-4")), "until=-4"),
            (
                given("a", Some("9"), Some("9")),
                "since=9 is not before until=9",
            ),
            (bad_probe, "probe=yes"),
            (bad_job, "job=\"\""),
        ] {
            let e = parse(q).unwrap_err().to_string();
            assert!(e.contains(said), "{said}: {e}");
        }
    }

    #[test]
    fn a_query_written_reads_back_as_itself() {
        let q = VerdictQuery {
            nodes: vec!["node01".into(), "node02".into()],
            since_s: Some(5),
            until_s: Some(20),
            job: Some("12 345&x".into()),
            probe: true,
            what_if: Some(WhatIf {
                collective: Collective::Tree,
                bytes: 1 << 20,
                observed_us: 8200.5,
            }),
        };
        let text = q.to_query_string();
        assert_eq!(
            text,
            "?nodes=node01%2Cnode02&since=5&until=20&job=12%20345%26x&probe=1\
             &what_if=tree&bytes=1048576&observed_us=8200.5"
        );
        // As the collector reads it: axum's query extractor.
        let read = |text: &str| {
            let uri: axum::http::Uri = format!("{PATH}{text}").parse().unwrap();
            axum::extract::Query::<VerdictQuery>::try_from_uri(&uri).map(|q| q.0)
        };
        let back = read(&text).unwrap();
        assert_eq!(back, q);
        let bare = VerdictQuery {
            job: None,
            probe: false,
            what_if: None,
            since_s: None,
            until_s: None,
            ..q
        };
        assert_eq!(bare.to_query_string(), "?nodes=node01%2Cnode02");
        // A refusal keeps its words beneath axum's preamble.
        let refused = read("?nodes=a&probe=maybe").unwrap_err();
        let source = std::error::Error::source(&refused).unwrap().to_string();
        assert_eq!(source, "probe=maybe: wants 1 or 0");
    }

    proptest! {
        #[test]
        fn any_query_is_parsed_or_refused_naming_a_parameter(
            nodes in ".{0,30}", since in ".{0,12}", until in ".{0,12}", probe in ".{0,4}"
        ) {
            let q = Given {
                nodes: Some(nodes), since: Some(since), until: Some(until),
                job: None, probe: Some(probe), ..Given::default()
            };
            match parse(q).and_then(|q| q.window(1_000_000).map(|w| (q, w))) {
                Ok((q, (since_s, until_s))) => {
                    prop_assert!(since_s < until_s && !q.nodes.is_empty())
                }
                Err(e) => prop_assert!(
                    ["nodes=", "since=", "until=", "probe="].iter().any(|p| e.to_string().contains(p)), "{}", e
                ),
            }
        }
    }
}
