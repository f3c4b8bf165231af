//! The job's collectives as this host's ranks record them (DESIGN 4.8,
//! `shared/reference/nccl-inspector.md`): `hostping agent ... --nccl-dir DIR` watches DIR
//! and the `nccl-inspector-<jobid>` folders in it (the plugin's default dump folders, also
//! `nccl-inspector-unknown-jobid`), tails each file as the plugin appends to it, and turns
//! the records into per-rank summaries of closed time buckets ([`JobCollectives`]): what
//! the agent sends the collector instead of raw records.
//!
//! The agent's loop calls [`NcclWatcher::poll`] every few seconds; each poll does bounded
//! work and keeps bounded memory whatever the files hold: at most
//! [`NcclSettings::chunk_bytes`] read per file, at most [`NcclSettings::tail_cap`] bytes of
//! an incomplete object kept per file, at most [`NcclSettings::max_open_records`] records
//! per job in open buckets. Files that cannot be read are reported ([`FileProblem`]) and
//! tried again on the next poll; nothing here is fatal to the agent.

mod buckets;
pub mod report;
mod tail;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

pub use fleet_api::collectives::JobCollectives;
use model::inspector::Skipped;
use serde::{Deserialize, Serialize};

use buckets::JobBuckets;
use tail::TailedFile;

/// The plugin's default dump folder is this prefix and the job id
/// (`NCCL_INSPECTOR_DUMP_DIR`'s default, the reference).
pub const FOLDER_PREFIX: &str = "nccl-inspector-";
/// The folder's job id outside a batch system: no job.
pub const UNKNOWN_JOB: &str = "unknown-jobid";

/// How the watcher reads and buckets.
#[derive(Clone, Debug, PartialEq)]
pub struct NcclSettings {
    /// The buckets' width in seconds, aligned to its multiples in Unix time: 5 s holds a
    /// hundred collectives or more per communicator, enough for a median, and keeps the
    /// summaries a fraction of the records. A bucket is sent once each file still writing
    /// has passed its end (`buckets::CLOSE_MARGIN_S`), and a slowdown shows after two slow
    /// ones (analyze::collectives), so the width sets how soon the collector can judge a
    /// job that slowed (issue 39 item 7, BENCHMARKS.md). Narrower buckets, of a step, would
    /// cut one collective's ranks apart wherever the hosts' clocks differ across a bucket's
    /// edge, and send as many summaries as records.
    pub bucket_s: f64,
    /// A bucket closes at the latest this long after its end, whatever the job's newest
    /// record: a job that stopped writing still has its last buckets sent.
    pub max_age_s: f64,
    /// The most bytes read from one file in one poll: a backlog (an agent started late on
    /// a file of hundreds of MB) is read over several polls, never all in memory.
    pub chunk_bytes: usize,
    /// The longest incomplete object kept between polls: a record is 200-500 bytes (the
    /// reference), so anything longer is garbage, counted bad and dropped.
    pub tail_cap: usize,
    /// Records a job may hold in open buckets; more are counted as dropped.
    pub max_open_records: usize,
    /// The directory is scanned for new files on every this many polls (and on the first):
    /// a file appears once per process, it is followed on every poll.
    pub rescan_every: u32,
}

impl Default for NcclSettings {
    fn default() -> Self {
        Self {
            bucket_s: 5.0,
            max_age_s: 120.0,
            chunk_bytes: 4 << 20,
            tail_cap: 1 << 20,
            // A busy 8-GPU host writes ~640 records/s (8 processes x 4 communicators x 20
            // collectives/s); three 5 s buckets of that are ~10 000.
            max_open_records: 100_000,
            rescan_every: 3,
        }
    }
}

/// A file or folder that could not be read in a poll; it is tried again on the next.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileProblem {
    /// The file or folder.
    pub path: PathBuf,
    /// Why, as the OS said it.
    pub error: String,
    /// Polls in a row this file has failed (1 the first time; always 1 for a folder): a
    /// problem that lasts is a permission to fix, not a file being rotated.
    pub failures: u64,
}

/// What one poll gave.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NcclPoll {
    /// Each job with records read, something skipped or dropped, or buckets closed.
    pub jobs: Vec<JobCollectives>,
    /// The files and folders that could not be read.
    pub problems: Vec<FileProblem>,
}

/// A followed file and the job its folder names.
#[derive(Debug)]
struct Followed {
    tail: TailedFile,
    /// `Some(job)` in a `nccl-inspector-<jobid>` folder; `None` directly in the watched
    /// directory (the records say their job).
    folder_job: Option<Option<String>>,
    /// Failed reads in a row.
    failures: u64,
    /// The watcher's number for it, never reused: its jobs' buckets wait for it by this.
    number: u64,
}

/// Watches a dump directory and turns what its files gain into [`JobCollectives`].
#[derive(Debug)]
pub struct NcclWatcher {
    dir: PathBuf,
    settings: NcclSettings,
    files: BTreeMap<PathBuf, Followed>,
    jobs: BTreeMap<Option<String>, JobBuckets>,
    polls: u64,
    /// Files followed so far, the next one's number.
    followed: u64,
}

impl NcclWatcher {
    /// Watches `dir` (which need not exist yet: a job creates its folder when it starts).
    pub fn new(dir: impl Into<PathBuf>, settings: NcclSettings) -> Self {
        Self {
            dir: dir.into(),
            settings,
            files: BTreeMap::new(),
            jobs: BTreeMap::new(),
            polls: 0,
            followed: 0,
        }
    }

    /// One step of the agent's loop at wall-clock time `now`: finds new files (every
    /// [`NcclSettings::rescan_every`] polls), reads what each file gained, and summarises
    /// the buckets that closed.
    pub fn poll(&mut self, now: SystemTime) -> NcclPoll {
        let mut poll = NcclPoll::default();
        if self
            .polls
            .is_multiple_of(u64::from(self.settings.rescan_every.max(1)))
        {
            self.rescan(&mut poll.problems);
        }
        self.polls += 1;
        let mut out: BTreeMap<Option<String>, JobCollectives> = BTreeMap::new();
        let mut gone = Vec::new();
        for (path, followed) in &mut self.files {
            let read = match followed
                .tail
                .read(self.settings.chunk_bytes, self.settings.tail_cap)
            {
                Ok(Some(read)) => read,
                Ok(None) => {
                    gone.push(path.clone());
                    continue;
                }
                Err(error) => {
                    followed.failures += 1;
                    poll.problems.push(FileProblem {
                        path: path.clone(),
                        error: error.to_string(),
                        failures: followed.failures,
                    });
                    continue;
                }
            };
            followed.failures = 0;
            // Skipped objects go to the folder's job, else to the job of the file's records.
            let mut file_job = followed.folder_job.clone();
            for record in read.records {
                let job = match &followed.folder_job {
                    Some(job) => job.clone(),
                    None => record.job.clone(),
                };
                file_job.get_or_insert_with(|| job.clone());
                let entry = out.entry(job.clone()).or_insert_with(|| JobCollectives {
                    job: job.clone(),
                    ..JobCollectives::default()
                });
                entry.records += 1;
                // A simulated number is always labelled, at the collector too.
                entry.simulated |= read.simulated;
                let kept = self.jobs.entry(job).or_default().add(
                    record,
                    followed.number,
                    self.settings.bucket_s,
                    self.settings.max_open_records,
                );
                if !kept {
                    entry.dropped += 1;
                }
            }
            if read.skipped != Skipped::default() {
                let job = file_job.flatten();
                out.entry(job.clone())
                    .or_insert_with(|| JobCollectives {
                        job,
                        ..JobCollectives::default()
                    })
                    .skipped
                    .add(&read.skipped);
            }
        }
        for path in gone {
            self.files.remove(&path);
        }
        self.close(unix_s(now), &mut out);
        poll.jobs = out
            .into_values()
            .filter(|j| j.records > 0 || j.skipped != Skipped::default() || !j.summaries.is_empty())
            .collect();
        poll
    }

    /// Records held in open buckets, all jobs together: 0 once every bucket has closed.
    pub fn open_records(&self) -> usize {
        self.jobs.values().map(JobBuckets::open_records).sum()
    }

    /// Bytes of incomplete objects kept between polls, all files together.
    pub fn kept_bytes(&self) -> usize {
        self.files.values().map(|f| f.tail.kept_bytes()).sum()
    }

    /// The files followed.
    pub fn files(&self) -> impl Iterator<Item = &Path> + '_ {
        self.files.values().map(|f| f.tail.path())
    }

    /// Closes each job's due buckets into `out`, and forgets the jobs with nothing open
    /// whose newest record is older than the max age (finished jobs: the map stays bounded).
    fn close(&mut self, now_s: f64, out: &mut BTreeMap<Option<String>, JobCollectives>) {
        let settings = &self.settings;
        for (job, buckets) in &mut self.jobs {
            let summaries = buckets.close(now_s, settings.bucket_s, settings.max_age_s);
            if !summaries.is_empty() {
                out.entry(job.clone())
                    .or_insert_with(|| JobCollectives {
                        job: job.clone(),
                        ..JobCollectives::default()
                    })
                    .summaries = summaries;
            }
        }
        self.jobs.retain(|_, b| {
            b.open_records() > 0 || b.newest_us() / 1e6 + settings.max_age_s >= now_s
        });
    }

    /// Adds the files now in the directory and its dump folders.
    fn rescan(&mut self, problems: &mut Vec<FileProblem>) {
        let dir = self.dir.clone();
        let Some(entries) = list(&dir, problems) else {
            return;
        };
        // The watched directory may itself be a job's dump folder.
        let dir_job = folder_job(&dir);
        for (path, is_dir) in entries {
            if !is_dir {
                self.follow(path, dir_job.clone());
                continue;
            }
            let Some(job) = folder_job(&path) else {
                continue;
            };
            for (file, is_dir) in list(&path, problems).unwrap_or_default() {
                if !is_dir {
                    self.follow(file, Some(job.clone()));
                }
            }
        }
    }

    fn follow(&mut self, path: PathBuf, folder_job: Option<Option<String>>) {
        let number = &mut self.followed;
        self.files.entry(path.clone()).or_insert_with(|| {
            *number += 1;
            Followed {
                tail: TailedFile::new(path),
                folder_job,
                failures: 0,
                number: *number,
            }
        });
    }
}

/// The job a dump folder names: `nccl-inspector-12345` -> `Some(Some("12345"))`,
/// `nccl-inspector-unknown-jobid` -> `Some(None)`, any other folder -> `None`.
fn folder_job(dir: &Path) -> Option<Option<String>> {
    let name = dir.file_name().and_then(OsStr::to_str)?;
    let job = name.strip_prefix(FOLDER_PREFIX)?;
    Some((job != UNKNOWN_JOB && !job.is_empty()).then(|| job.to_string()))
}

/// A folder's entries (path, is a folder), or `None` with a problem when it cannot be read.
fn list(dir: &Path, problems: &mut Vec<FileProblem>) -> Option<Vec<(PathBuf, bool)>> {
    let mut problem = |error: std::io::Error| {
        problems.push(FileProblem {
            path: dir.to_path_buf(),
            error: error.to_string(),
            failures: 1,
        })
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) => {
            problem(error);
            return None;
        }
    };
    let mut listed = Vec::new();
    for entry in entries {
        match entry.and_then(|e| Ok((e.path(), e.file_type()?))) {
            Ok((path, kind)) if kind.is_dir() => listed.push((path, true)),
            Ok((path, kind)) if kind.is_file() => listed.push((path, false)),
            Ok(_) => {}
            Err(error) => problem(error),
        }
    }
    Some(listed)
}

fn unix_s(now: SystemTime) -> f64 {
    now.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
