//! A job's bus bandwidth over time (DESIGN 4.8), for the job page's plot:
//! `GET /api/jobs/{job}/busbw?since=T`, one series per communicator, collective kind and
//! message size, each point the median over the job's ranks of their summaries' bus
//! bandwidth in one time bucket (as `analyze::collectives` judges a communicator's level,
//! so the line drawn is the one the symptom's onset was read from).

use serde::{Deserialize, Serialize};

/// Points one series holds at most: a plot 700 pixels wide shows no more. Longer series
/// merge neighbouring buckets into one point ([`BusbwPoint::buckets`]).
pub const MAX_POINTS: usize = 600;

/// The path of a job's series.
pub fn busbw_path(job: &str) -> String {
    format!("{}/{job}/busbw", crate::collectives::JOBS_PATH)
}

/// The answer to `GET /api/jobs/{job}/busbw`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobBusbw {
    /// The job.
    pub job: String,
    /// The window's start, Unix seconds.
    pub since: f64,
    /// Rank summaries the series were computed from (the job's newest in the window, at
    /// most the collector's cap).
    pub summaries: u64,
    /// Whether the cap left older summaries in the window unread: the series then start
    /// later than the window.
    pub truncated: bool,
    /// One series per communicator, collective and size, by communicator, then collective,
    /// then size.
    pub series: Vec<BusbwSeries>,
}

/// One communicator's collectives of one kind and size over time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BusbwSeries {
    /// The communicator.
    pub communicator: String,
    /// The collective (`AllReduce`).
    pub collective: String,
    /// The message size, bytes.
    pub bytes: u64,
    /// Its ranks (the largest `n_ranks` its summaries give).
    pub ranks: u32,
    /// Its points, oldest first, at most [`MAX_POINTS`].
    pub points: Vec<BusbwPoint>,
}

/// The bus bandwidth of one time bucket (or of neighbouring buckets merged).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BusbwPoint {
    /// The bucket's start, Unix seconds.
    pub start_s: f64,
    /// Its width, seconds (the merged buckets' span when [`Self::buckets`] > 1).
    pub width_s: f64,
    /// The median over the ranks' summaries in it, GB/s.
    pub busbw_gbs: f64,
    /// How many rank summaries the median is of.
    pub summaries: u32,
    /// Buckets merged into this point: 1 unless the series had more than [`MAX_POINTS`].
    pub buckets: u32,
}
