//! The query of `GET /api/jobs/verdict`: the job's nodes (a Slurm hostlist), its window in
//! Unix seconds, its id, and whether to probe; checked, each refusal naming the parameter.

use serde::Deserialize;

/// The window when `since` is not given: the hour before `until`.
pub const DEFAULT_WINDOW_S: i64 = 3600;

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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerdictQuery {
    /// The job's hosts, in rank order, each once.
    pub nodes: Vec<String>,
    /// The window judged.
    pub window: Window,
    /// The job's id.
    pub job: Option<String>,
    /// Whether pair probes run through the agents.
    pub probe: bool,
}

impl VerdictQuery {
    /// Checks `raw`, `now_s` standing for a missing `until`; the refusal names the parameter.
    pub fn parse(raw: &RawQuery, now_s: i64) -> Result<VerdictQuery, String> {
        let list = raw
            .nodes
            .as_deref()
            .ok_or("nodes=LIST is required (Slurm hostlist syntax: node[001-016,020])")?;
        let nodes = model::hostlist::expand(list).map_err(|e| format!("nodes={list}: {e}"))?;
        if nodes.len() > crate::mesh::MAX_NODES {
            return Err(format!(
                "nodes={list}: {} hosts, more than {}",
                nodes.len(),
                crate::mesh::MAX_NODES
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        if let Some(twice) = nodes.iter().find(|n| !seen.insert(n.as_str())) {
            return Err(format!("nodes={list}: {twice} is given twice"));
        }
        let seconds = |name: &str, v: &str| -> Result<i64, String> {
            v.parse::<i64>()
                .ok()
                .filter(|s| (0..=i64::MAX / 1_000_000_000).contains(s))
                .ok_or_else(|| {
                    format!("{name}={v}: wants Unix seconds (a whole number, 0 or more)")
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
            return Err(format!(
                "since={since_s} is not before until={until_s}: the window is empty"
            ));
        }
        let job = match raw.job.as_deref() {
            Some(id) if id.is_empty() || id.len() > 64 || id.chars().any(char::is_control) => {
                return Err(format!(
                    "job={id:?}: wants a job id of 1 to 64 printable characters"
                ))
            }
            id => id.map(str::to_owned),
        };
        let probe = match raw.probe.as_deref() {
            None | Some("0" | "false") => false,
            Some("1" | "true") => true,
            Some(other) => return Err(format!("probe={other}: wants 1 or 0")),
        };
        Ok(VerdictQuery {
            nodes,
            window: Window { since_s, until_s },
            job,
            probe,
        })
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
        assert!(!q.probe && q.job.is_none());
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
            let e = VerdictQuery::parse(&q, 100).unwrap_err();
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
                job: None, probe: Some(probe),
            };
            match VerdictQuery::parse(&q, 1_000_000) {
                Ok(v) => prop_assert!(v.window.since_s < v.window.until_s && !v.nodes.is_empty()),
                Err(e) => prop_assert!(
                    ["nodes=", "since=", "until=", "probe="].iter().any(|p| e.contains(p)), "{}", e
                ),
            }
        }
    }
}
