//! The query of `GET /api/jobs/verdict`: the job's nodes (a Slurm hostlist), its window in
//! Unix seconds, its id, whether to probe, and the what-if's traffic and the job's measured
//! time; checked, each refusal naming the parameter.

use serde::Deserialize;
use verdict::whatif::JobTraffic;

/// The window when `since` is not given: the hour before `until`.
pub const DEFAULT_WINDOW_S: i64 = 3600;
/// The buffer a what-if all-reduce reduces when `bytes` is not given: `hostping job
/// --bytes`'s default.
pub const DEFAULT_WHAT_IF_BYTES: u64 = 64 << 20;
/// The largest buffer a what-if replays: 1 GiB, sixteen times the default. The replay's
/// cost grows with the packets it moves (about 15 s for 64 MiB over 256 hosts,
/// BENCHMARKS.md), and a request must not hold a core for hours.
pub const MAX_WHAT_IF_BYTES: u64 = 1 << 30;

/// The query string as given.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawQuery {
    /// `nodes=LIST`.
    pub nodes: Option<String>,
    /// `since=T`.
    pub since: Option<String>,
    /// `until=T`.
    pub until: Option<String>,
    /// `job=ID`.
    pub job: Option<String>,
    /// `probe=1`.
    pub probe: Option<String>,
    /// `what_if=ring|tree`.
    pub what_if: Option<String>,
    /// `bytes=N`.
    pub bytes: Option<String>,
    /// `observed_us=X`.
    pub observed_us: Option<String>,
}

/// A job's window, Unix seconds: `since` exclusive, `until` inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Its start.
    pub since_s: i64,
    /// Its end.
    pub until_s: i64,
}

impl Window {
    /// The window of the same length just before this one.
    pub fn before(self) -> Window {
        Window {
            since_s: self.since_s - (self.until_s - self.since_s),
            until_s: self.since_s,
        }
    }
}

/// The query, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictQuery {
    /// The job's hosts, in rank order, each once.
    pub nodes: Vec<String>,
    /// The window judged.
    pub window: Window,
    /// The job's id.
    pub job: Option<String>,
    /// Whether pair probes run through the agents.
    pub probe: bool,
    /// The what-if asked for.
    pub what_if: Option<WhatIfQuery>,
}

/// `what_if=ring|tree[&bytes=N]&observed_us=X`: replay the job's traffic on the collector's
/// fabric and compare with the job's own measured time.
#[derive(Debug, Clone, PartialEq)]
pub struct WhatIfQuery {
    /// The collective replayed.
    pub traffic: JobTraffic,
    /// The job's measured time of that traffic, us: positive and finite.
    pub observed_us: f64,
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
    /// `since` or `until` is not Unix seconds.
    #[error("{name}={value}: wants Unix seconds (a whole number, 0 or more)")]
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
    /// Checks `raw`, `now_s` standing for a missing `until`; the refusal names the parameter.
    pub fn parse(raw: &RawQuery, now_s: i64) -> Result<VerdictQuery, QueryError> {
        let list = raw.nodes.as_deref().ok_or(QueryError::NoNodes)?;
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
        let seconds = |name: &'static str, v: &str| -> Result<i64, QueryError> {
            v.parse::<i64>()
                .ok()
                .filter(|s| (0..=i64::MAX / 1_000_000_000).contains(s))
                .ok_or_else(|| QueryError::Seconds {
                    name,
                    value: v.to_owned(),
                })
        };
        let until_s = match raw.until.as_deref() {
            Some(v) => seconds("until", v)?,
            None => now_s,
        };
        let since_s = match raw.since.as_deref() {
            Some(v) => seconds("since", v)?,
            None => (until_s - DEFAULT_WINDOW_S).max(0),
        };
        if since_s >= until_s {
            return Err(QueryError::EmptyWindow { since_s, until_s });
        }
        let job = match raw.job.as_deref() {
            Some(id) if id.is_empty() || id.len() > 64 || id.chars().any(char::is_control) => {
                return Err(QueryError::Job { id: id.to_owned() })
            }
            id => id.map(str::to_owned),
        };
        let probe = match raw.probe.as_deref() {
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
            window: Window { since_s, until_s },
            job,
            probe,
            what_if: WhatIfQuery::parse(raw)?,
        })
    }
}

impl WhatIfQuery {
    /// The what-if `raw` asks for, if any; `bytes` and `observed_us` without `what_if`, and
    /// `what_if` without `observed_us`, are refused.
    fn parse(raw: &RawQuery) -> Result<Option<WhatIfQuery>, QueryError> {
        let Some(what_if) = raw.what_if.as_deref() else {
            let without = |name, value: &String| QueryError::WithoutWhatIf {
                name,
                value: value.clone(),
            };
            return match (&raw.bytes, &raw.observed_us) {
                (Some(b), _) => Err(without("bytes", b)),
                (None, Some(o)) => Err(without("observed_us", o)),
                (None, None) => Ok(None),
            };
        };
        let bytes = match raw.bytes.as_deref() {
            None => DEFAULT_WHAT_IF_BYTES,
            Some(b) => b
                .parse::<u64>()
                .ok()
                .filter(|n| (1..=MAX_WHAT_IF_BYTES).contains(n))
                .ok_or_else(|| QueryError::Bytes {
                    value: b.to_owned(),
                })?,
        };
        let traffic = match what_if {
            "ring" => JobTraffic::RingAllReduce { bytes },
            "tree" => JobTraffic::TreeAllReduce { bytes },
            other => {
                return Err(QueryError::WhatIf {
                    value: other.to_owned(),
                })
            }
        };
        // Compared with the replays, the job's own time is what a real what-if explains.
        let observed = raw.observed_us.as_deref().ok_or(QueryError::NoObserved)?;
        let observed_us = observed
            .parse::<f64>()
            .ok()
            .filter(|us| us.is_finite() && *us > 0.0)
            .ok_or_else(|| QueryError::Observed {
                value: observed.to_owned(),
            })?;
        Ok(Some(WhatIfQuery {
            traffic,
            observed_us,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn raw(nodes: &str, since: Option<&str>, until: Option<&str>) -> RawQuery {
        RawQuery {
            nodes: Some(nodes.into()),
            since: since.map(Into::into),
            until: until.map(Into::into),
            ..RawQuery::default()
        }
    }

    #[test]
    fn the_window_defaults_to_the_hour_before_now() {
        let q = VerdictQuery::parse(&raw("node[01-03]", None, None), 10_000).unwrap();
        assert_eq!(q.nodes, ["node01", "node02", "node03"]);
        assert_eq!(
            q.window,
            Window {
                since_s: 6_400,
                until_s: 10_000
            }
        );
        assert_eq!(
            q.window.before(),
            Window {
                since_s: 2_800,
                until_s: 6_400
            }
        );
        let q = VerdictQuery::parse(&raw("a,b", Some("5"), Some("20")), 0).unwrap();
        assert_eq!(
            q.window,
            Window {
                since_s: 5,
                until_s: 20
            }
        );
        assert!(!q.probe && q.job.is_none() && q.what_if.is_none());
    }

    #[test]
    fn a_what_if_wants_its_traffic_and_the_jobs_measured_time() {
        let what_if = |what_if: &str, bytes: Option<&str>, observed_us: Option<&str>| RawQuery {
            what_if: Some(what_if.into()),
            bytes: bytes.map(Into::into),
            observed_us: observed_us.map(Into::into),
            ..raw("a,b", None, None)
        };
        let q = VerdictQuery::parse(&what_if("ring", None, Some("8200.5")), 100).unwrap();
        assert_eq!(
            q.what_if,
            Some(WhatIfQuery {
                traffic: JobTraffic::RingAllReduce {
                    bytes: DEFAULT_WHAT_IF_BYTES
                },
                observed_us: 8200.5
            })
        );
        let q = VerdictQuery::parse(&what_if("tree", Some("1048576"), Some("350")), 100).unwrap();
        assert_eq!(
            q.what_if.unwrap().traffic,
            JobTraffic::TreeAllReduce { bytes: 1 << 20 }
        );
        let alone = |bytes: Option<&str>, observed_us: Option<&str>| RawQuery {
            bytes: bytes.map(Into::into),
            observed_us: observed_us.map(Into::into),
            ..raw("a,b", None, None)
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
            let e = VerdictQuery::parse(&q, 100).unwrap_err().to_string();
            assert!(e.contains(said), "{said}: {e}");
        }
    }

    #[test]
    fn each_refusal_names_its_parameter() {
        let mut no_nodes = raw("", None, None);
        no_nodes.nodes = None;
        let mut bad_probe = raw("a", None, None);
        bad_probe.probe = Some("yes".into());
        let mut bad_job = raw("a", None, None);
        bad_job.job = Some(String::new());
        for (q, said) in [
            (no_nodes, "nodes=LIST is required"),
            (raw("node[3-1]", None, None), "nodes=node[3-1]"),
            (raw("a,b,a", None, None), "a is given twice"),
            (raw("a", Some("x"), None), "since=x"),
            (raw("a", None, Some("-4")), "until=-4"),
            (
                raw("a", Some("9"), Some("9")),
                "since=9 is not before until=9",
            ),
            (bad_probe, "probe=yes"),
            (bad_job, "job=\"\""),
        ] {
            let e = VerdictQuery::parse(&q, 100).unwrap_err().to_string();
            assert!(e.contains(said), "{said}: {e}");
        }
    }

    proptest! {
        #[test]
        fn any_query_is_parsed_or_refused_naming_a_parameter(
            nodes in ".{0,30}", since in ".{0,12}", until in ".{0,12}", probe in ".{0,4}"
        ) {
            let q = RawQuery {
                nodes: Some(nodes), since: Some(since), until: Some(until),
                job: None, probe: Some(probe), ..RawQuery::default()
            };
            match VerdictQuery::parse(&q, 1_000_000) {
                Ok(v) => prop_assert!(v.window.since_s < v.window.until_s && !v.nodes.is_empty()),
                Err(e) => prop_assert!(
                    ["nodes=", "since=", "until=", "probe="].iter().any(|p| e.to_string().contains(p)), "{}", e
                ),
            }
        }
    }
}
