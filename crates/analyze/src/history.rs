//! Earlier runs of a host, as much of each report as the history rules need (Hostping 4.3:
//! "links marked as gray in three consecutive loopback tests will be identified as flapping
//! links"; 6 #6: "this case shows the necessity to run Hostping periodically").
//!
//! The history is a value the caller keeps (and may persist: it serialises with serde);
//! the analyzer reads it and never stores anything itself.

use model::{Cause, ComponentId, LinkId, LinkStatus, Mode, PathStatus, Report, Thresholds};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Earlier runs of one host, oldest first.
#[derive(Default, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct History {
    /// How many runs are kept; 0 keeps every run.
    capacity: usize,
    runs: VecDeque<RunRecord>,
}

/// What the history keeps of one report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Host model name.
    pub host: String,
    /// `Report.run`.
    pub run: u32,
    /// Idle or busy.
    pub mode: Mode,
    /// Every probed path's status.
    pub paths: Vec<PathRecord>,
    /// Every link's status.
    pub links: Vec<LinkRecord>,
    /// Links a cause other than a failure or a flap named (overloaded, misconfigured): their
    /// status in this run says nothing about flapping. Absent in histories written before
    /// it was kept, which read as none.
    #[serde(default)]
    pub explained: Vec<LinkId>,
}

/// A path's status in one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathRecord {
    /// The RNIC.
    pub rnic: ComponentId,
    /// The endpoint.
    pub endpoint: ComponentId,
    /// Its status.
    pub status: PathStatus,
    /// The statuses of its re-probes within the run (`PathReport.reprobes`). Absent in
    /// histories written before they were kept, which read as none.
    #[serde(default)]
    pub reprobes: Vec<PathStatus>,
}

/// A link's status in one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkRecord {
    /// The link.
    pub id: LinkId,
    /// Its status after Algorithm 1.
    pub status: LinkStatus,
}

impl RunRecord {
    /// Keeps the statuses of a report.
    pub fn from_report(report: &Report) -> RunRecord {
        RunRecord {
            host: report.host.clone(),
            run: report.run,
            mode: report.mode,
            paths: report
                .paths
                .iter()
                .map(|p| PathRecord {
                    rnic: p.rnic.clone(),
                    endpoint: p.endpoint.clone(),
                    status: p.status,
                    reprobes: p.reprobes.clone(),
                })
                .collect(),
            links: report
                .links
                .iter()
                .map(|l| LinkRecord {
                    id: l.id.clone(),
                    status: l.status,
                })
                .collect(),
            explained: report
                .diagnoses
                .iter()
                .filter(|d| !matches!(d.cause, Cause::LinkFailure | Cause::LinkFlapping))
                .flat_map(|d| d.links.iter().cloned())
                .collect(),
        }
    }

    /// A link's status in this run, if the run reported the link.
    pub fn link_status(&self, id: &LinkId) -> Option<LinkStatus> {
        self.links.iter().find(|l| &l.id == id).map(|l| l.status)
    }
}

impl History {
    /// An empty history keeping the last `capacity` runs (0: keep every run).
    pub fn new(capacity: usize) -> Self {
        History {
            capacity,
            runs: VecDeque::new(),
        }
    }

    /// An empty history keeping as many runs as the flapping rules read with `th`, besides
    /// the run being judged: what a caller that judges each run with the recent ones keeps.
    pub fn for_thresholds(th: &Thresholds) -> Self {
        History::new(crate::flap_common::window(th) - 1)
    }

    /// Appends a report's statuses, dropping the oldest run beyond the capacity.
    pub fn record(&mut self, report: &Report) {
        self.runs.push_back(RunRecord::from_report(report));
        while self.capacity > 0 && self.runs.len() > self.capacity {
            self.runs.pop_front();
        }
    }

    /// Number of runs kept.
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    /// True when no run is kept.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// How many runs are kept (0: every run).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The runs, oldest first.
    pub fn runs(&self) -> impl DoubleEndedIterator<Item = &RunRecord> + ExactSizeIterator {
        self.runs.iter()
    }

    /// The last `n` runs of `host` (fewer if there are fewer), oldest first.
    pub(crate) fn last_of(&self, host: &str, n: usize) -> Vec<&RunRecord> {
        let mut v: Vec<&RunRecord> = self
            .runs
            .iter()
            .rev()
            .filter(|r| r.host == host)
            .take(n)
            .collect();
        v.reverse();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::{LinkKind, LinkReport, Provenance};

    fn report(run: u32, status: LinkStatus) -> Report {
        Report {
            host: "dgx-a100".into(),
            mode: Mode::Idle,
            busy: Vec::new(),
            healthy: false,
            inconclusive: false,
            not_judged: Vec::new(),
            provenance: Provenance::Simulated,
            run,
            paths: vec![],
            links: vec![LinkReport {
                id: "mem0--cpu0".into(),
                kind: LinkKind::MemoryChannel,
                status,
                abnormal_cnt: 0,
                utilisation: None,
                bound: None,
            }],
            diagnoses: vec![],
            baseline: None,
            thresholds: None,
        }
    }

    #[test]
    fn keeps_the_last_capacity_runs_oldest_first() {
        let mut h = History::new(2);
        assert!(h.is_empty());
        for run in 0..3 {
            h.record(&report(run, LinkStatus::Gray));
        }
        assert_eq!(h.len(), 2);
        assert_eq!(h.runs().map(|r| r.run).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(
            h.runs().next().unwrap().link_status(&"mem0--cpu0".into()),
            Some(LinkStatus::Gray)
        );
        assert_eq!(h.last_of("dgx-a100", 5).len(), 2);
        assert!(h.last_of("amd-2s", 5).is_empty());
    }

    #[test]
    fn default_keeps_everything_and_round_trips_through_json() {
        let mut h = History::default();
        for run in 0..10 {
            h.record(&report(run, LinkStatus::Normal));
        }
        assert_eq!(h.len(), 10);
        let back: History = serde_json_round_trip(&h);
        assert_eq!(back, h);
    }

    fn serde_json_round_trip(h: &History) -> History {
        let text = serde_json::to_string(h).unwrap();
        serde_json::from_str(&text).unwrap()
    }
}
