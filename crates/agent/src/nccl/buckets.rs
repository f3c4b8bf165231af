//! One job's records in open time buckets, until they close (DESIGN 4.8): the agent sends
//! the collector per-rank summaries of closed buckets (`analyze::collectives::summarize`),
//! never raw records, and keeps nothing of a bucket once it is summarised.

use std::collections::BTreeMap;

use model::inspector::{CollectiveRecord, RankSummary};

/// A bucket closes once every file still writing has a record this long past its end: one
/// process's file holds its collectives out of time order by at most one collective's run
/// (each is written when it ends, stamped with its start), milliseconds to a few hundred.
pub(super) const CLOSE_MARGIN_S: f64 = 1.0;
/// A file whose newest record is this far behind the job's newest has stopped writing (its
/// process ended, or the plugin dumps no more): it holds no bucket open. The plugin's
/// longest dump interval in its examples is 30 s.
pub(super) const STALE_S: f64 = 30.0;

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
    /// Each file's newest record, us, by the watcher's number for the file: each process
    /// dumps on its own clock, so one file can be a dump interval behind another.
    files_newest_us: BTreeMap<u64, f64>,
}

impl JobBuckets {
    /// Keeps `record`, read from file number `file`, in its bucket, unless that bucket has
    /// closed already (a late record) or `cap` records are open; says whether it was kept.
    pub(super) fn add(
        &mut self,
        record: CollectiveRecord,
        file: u64,
        width_s: f64,
        cap: usize,
    ) -> bool {
        let newest = self.files_newest_us.entry(file).or_insert(record.at_us);
        *newest = newest.max(record.at_us);
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

    /// Summarises and forgets the buckets that closed: those every file still writing has
    /// passed by [`CLOSE_MARGIN_S`] (so a bucket waits for the file a dump interval behind,
    /// and no longer), and those ending more than `max_age_s` before `now_s` (a job that
    /// stopped writing).
    pub(super) fn close(&mut self, now_s: f64, width_s: f64, max_age_s: f64) -> Vec<RankSummary> {
        let stale_before = self.newest_us - STALE_S * 1e6;
        let passed_by_all = self
            .files_newest_us
            .values()
            .copied()
            .filter(|&t| t >= stale_before)
            .fold(self.newest_us, f64::min);
        let by_files = index(passed_by_all - CLOSE_MARGIN_S * 1e6, width_s);
        let by_age = ((now_s - max_age_s) / width_s).floor() as i64;
        // Buckets with an index below `below` end at or before one of the limits.
        let below = by_files.max(by_age);
        // Files that stopped long ago are forgotten: the map stays bounded.
        let forget_before = self.newest_us - max_age_s * 1e6;
        self.files_newest_us.retain(|_, t| *t >= forget_before);
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
