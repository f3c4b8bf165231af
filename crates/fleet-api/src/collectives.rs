//! A job's collectives between the agent and the collector (DESIGN 4.8): the body of
//! `POST /api/collectives`, compact per-rank summaries of closed time buckets that an agent
//! tailing a host's NCCL Inspector dumps sends (never raw records), and `GET /api/jobs`,
//! the running and recent jobs the collector knows of, the slow ones first.

use model::inspector::{RankSummary, Skipped};
use serde::{Deserialize, Serialize};

/// The path of the agents' posts.
pub const PATH: &str = "/api/collectives";
/// The path of the jobs list.
pub const JOBS_PATH: &str = "/api/jobs";

/// The path of one job's symptom (`GET`, the full `model::inspector::Symptom`).
pub fn symptom_path(job: &str) -> String {
    format!("{JOBS_PATH}/{job}/symptom")
}

/// One job's collectives as one host's agent read them since its last post
/// (`agent::nccl`'s watcher).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JobCollectives {
    /// The job (its dump folder's `nccl-inspector-<jobid>`, else the records' own); `None`
    /// when neither says.
    pub job: Option<String>,
    /// Records read into these summaries.
    pub records: u64,
    /// What the reading skipped.
    pub skipped: Skipped,
    /// Records read but not kept: their bucket had closed already (late), or the job's open
    /// records were at the agent's cap.
    #[serde(default)]
    pub dropped: u64,
    /// Per rank, collective kind and size, and closed time bucket, each bucket once.
    pub summaries: Vec<RankSummary>,
    /// Some of the records were written by a simulation (`metadata.git_rev`
    /// `model::inspector::SIMULATED_GIT_REV`): the verdicts judged with them say so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub simulated: bool,
}

impl JobCollectives {
    /// Adds what a later read of the same job gave: its counts, its summaries after these.
    pub fn absorb(&mut self, later: JobCollectives) {
        self.records += later.records;
        self.skipped.add(&later.skipped);
        self.dropped += later.dropped;
        self.summaries.extend(later.summaries);
        self.simulated |= later.simulated;
    }
}

/// The body of `POST /api/collectives`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectivesUpload {
    /// The host's name in the fleet (the token must belong to it).
    pub host: String,
    /// Its jobs' collectives.
    pub jobs: Vec<JobCollectives>,
}

/// The answer to `POST /api/collectives`: what was stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectivesStored {
    /// The host that posted.
    pub host: String,
    /// Jobs in the post.
    pub jobs: u64,
    /// Summaries stored for the first time.
    pub new: u64,
    /// Summaries stored before, replaced by the post's (a resend).
    pub replaced: u64,
}

/// One job of `GET /api/jobs` (DESIGN 4.8).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobEntry {
    /// The job.
    pub job: String,
    /// The hosts its records came from, in name order.
    pub nodes: Vec<String>,
    /// Whether its collectives slowed.
    pub slow: bool,
    /// When, Unix seconds: the first slow collective's start.
    pub since: Option<f64>,
    /// The hardest-hit communicator's bus bandwidth now (during the slowdown when slow),
    /// GB/s.
    pub busbw_gbs: Option<f64>,
    /// What a ring of its size reaches on its links (NCCL's model), where its hosts are
    /// known, GB/s.
    pub expected_gbs: Option<f64>,
    /// The verdict the collector reached on it, when it judged the job.
    pub verdict: Option<String>,
    /// When, Unix seconds.
    pub verdict_at: Option<f64>,
    /// The newest record's bucket end, Unix seconds (an addition: running jobs have recent
    /// ones).
    pub last_seen: f64,
}
