//! One job's records in open time buckets, until they close (DESIGN 4.8): the agent sends
//! the collector per-rank summaries of closed buckets (`analyze::collectives::summarize`),
//! never raw records, and keeps nothing of a bucket once it is summarised.

use std::collections::BTreeMap;

use model::inspector::{CollectiveRecord, RankSummary};

/// A job's open buckets, by bucket index (`floor(at_s / width_s)`, aligned to multiples of
/// the width in Unix time as `summarize` aligns them).
#[derive(Debug, Default)]
pub(super) struct JobBuckets {
    open: BTreeMap<i64, Vec<CollectiveRecord>>,
    /// Records in `open`.
    open_records: usize,
    /// Buckets below this index are closed: a record for one is late and dropped, so that
    /// each bucket is summarised once.
    closed_below: Option<i64>,
    /// The newest record's time, us since the epoch.
    newest_us: f64,
}

impl JobBuckets {
    /// Keeps `record` in its bucket, unless that bucket has closed already (a late record)
    /// or `cap` records are open; says whether it was kept.
    pub(super) fn add(&mut self, record: CollectiveRecord, width_s: f64, cap: usize) -> bool {
        let bucket = index(record.at_us, width_s);
        if self.closed_below.is_some_and(|below| bucket < below) || self.open_records >= cap {
            return false;
        }
        self.newest_us = self.newest_us.max(record.at_us);
        self.open_records += 1;
        let mut record = record;
        // The job is the key this is kept under; the copy in each record is not needed.
        record.job = None;
        self.open.entry(bucket).or_default().push(record);
        true
    }

    /// Summarises and forgets the buckets that closed: those ending more than one width
    /// before the job's newest record (records arrive up to one dump interval late, and an
    /// interval is shorter than a bucket), and those ending more than `max_age_s` before
    /// `now_s` (a job that stopped writing).
    pub(super) fn close(&mut self, now_s: f64, width_s: f64, max_age_s: f64) -> Vec<RankSummary> {
        let by_newest = index(self.newest_us, width_s) - 1;
        let by_age = ((now_s - max_age_s) / width_s).floor() as i64;
        // Buckets with an index below `below` end at or before both limits.
        let below = by_newest.max(by_age);
        let still_open = self.open.split_off(&below);
        let closed = std::mem::replace(&mut self.open, still_open);
        self.closed_below = Some(self.closed_below.map_or(below, |b| b.max(below)));
        let records: Vec<CollectiveRecord> = closed.into_values().flatten().collect();
        self.open_records -= records.len();
        if records.is_empty() {
            return Vec::new();
        }
        analyze::collectives::summarize(&records, width_s)
    }

    /// Records held in open buckets.
    pub(super) fn open_records(&self) -> usize {
        self.open_records
    }

    /// The newest record's time, us since the epoch (0 before any).
    pub(super) fn newest_us(&self) -> f64 {
        self.newest_us
    }
}

fn index(at_us: f64, width_s: f64) -> i64 {
    (at_us / 1e6 / width_s).floor() as i64
}
