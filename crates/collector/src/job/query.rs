//! The query of `GET /api/jobs/verdict` (`fleet_api::job::VerdictQuery`, checked as it is
//! read) with its window completed by the collector's clock.

use fleet_api::job::{QueryError, WhatIf};

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

/// The query, its window resolved.
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
    pub what_if: Option<WhatIf>,
    /// The job's own collectives as already read: posted by the caller (`POST`), or read by
    /// the slow-job watch (crate::slow_jobs); `None`: those its agents sent are read, when
    /// `job` is given (crate::collectives).
    pub collectives: Option<model::job::CollectiveEvidence>,
}

impl VerdictQuery {
    /// `asked` with `now_s` standing for a missing `until`; refused when the window it comes
    /// to is empty.
    pub fn resolve(
        asked: fleet_api::job::VerdictQuery,
        now_s: i64,
    ) -> Result<VerdictQuery, QueryError> {
        let (since_s, until_s) = asked.window(now_s)?;
        Ok(VerdictQuery {
            nodes: asked.nodes,
            window: Window { since_s, until_s },
            job: asked.job,
            probe: asked.probe,
            what_if: asked.what_if,
            collectives: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_defaults_to_the_hour_before_now() {
        let asked = fleet_api::job::VerdictQuery {
            nodes: vec!["a".into()],
            since_s: None,
            until_s: None,
            job: None,
            probe: false,
            what_if: None,
        };
        let q = VerdictQuery::resolve(asked.clone(), 10_000).unwrap();
        let hour = Window {
            since_s: 6_400,
            until_s: 10_000,
        };
        assert_eq!(q.window, hour);
        assert_eq!(
            q.window.before(),
            Window {
                since_s: 2_800,
                until_s: 6_400
            }
        );
        let e = VerdictQuery::resolve(asked, 0).unwrap_err().to_string();
        assert!(e.contains("since=0 is not before until=0"), "{e}");
    }
}
