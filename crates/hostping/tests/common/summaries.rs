//! Per-rank summaries of jobs' collectives as agents post them to the collector
//! (`POST /api/collectives`, DESIGN 4.8), for the tests of the collector's jobs and their
//! pages: 5 s buckets of ten collectives each on the fleet's four hosts.

use fleet_api::collectives::{CollectivesUpload, JobCollectives};
use model::inspector::{RankSummary, Skipped};

/// The bucket width, seconds.
pub const WIDTH: f64 = 5.0;
/// Buckets of each job.
pub const BUCKETS: u32 = 12;
/// Collectives per rank and bucket.
pub const PER_BUCKET: u64 = 10;
/// The all-reduce's size.
pub const BYTES: u64 = 64 << 20;
/// A rank's healthy execution time of the all-reduce, us.
pub const EXEC: f64 = 6000.0;
/// The first slow bucket of a straggler job.
pub const ONSET_BUCKET: u32 = 6;
/// The fleet's hosts, each with a token.
pub const HOSTS: [&str; 4] = ["node001", "node002", "node003", "node004"];

/// A summary of `rank` of `communicator` (`n_ranks` ranks over `n_nodes` hosts), a
/// `collective` of `bytes`, on `host` in bucket `b` of the window starting at `t0`, its
/// median execution time `exec_us`.
pub fn summary(
    (communicator, collective, bytes): (&str, &str, u64),
    (rank, n_ranks, n_nodes): (u32, u32, u32),
    host: &str,
    (t0, b): (f64, u32),
    exec_us: f64,
) -> RankSummary {
    // A few percent of deterministic jitter, so that the earlier level has a spread and the
    // medians are not every rank's value.
    let exec_us = exec_us * (1.0 + 0.03 * ((b * 7 + rank * 3) % 5) as f64 / 4.0);
    let n = n_ranks as f64;
    let algobw = bytes as f64 / (exec_us * 1e-6) / 1e9;
    RankSummary {
        communicator: communicator.into(),
        rank,
        n_ranks,
        n_nodes,
        hostname: host.into(),
        pid: Some(1000 + rank as u64),
        gpu: None,
        collective: collective.into(),
        bytes,
        start_s: t0 + b as f64 * WIDTH,
        width_s: WIDTH,
        count: PER_BUCKET,
        first_seq: b as u64 * PER_BUCKET,
        last_seq: b as u64 * PER_BUCKET + PER_BUCKET - 1,
        exec_us,
        busbw_gbs: algobw * 2.0 * (n - 1.0) / n,
    }
}

/// The all-reduce of a job of `n_ranks` ranks over `n_nodes` hosts (rank r on
/// `HOSTS[r % n_nodes]`) in communicator `communicator`, each rank's execution time in
/// bucket b `exec(rank, b)`.
pub fn all_reduce_job(
    communicator: &str,
    (n_ranks, n_nodes): (u32, u32),
    t0: f64,
    exec: impl Fn(u32, u32) -> f64,
) -> Vec<RankSummary> {
    let mut out = Vec::new();
    for b in 0..BUCKETS {
        for rank in 0..n_ranks {
            out.push(summary(
                (communicator, "AllReduce", BYTES),
                (rank, n_ranks, n_nodes),
                HOSTS[(rank % n_nodes) as usize],
                (t0, b),
                exec(rank, b),
            ));
        }
    }
    out
}

/// A job of 16 ranks on the four hosts in communicator `0xa`, where from [`ONSET_BUCKET`]
/// on every rank but 6 waits 40 ms for rank 6.
pub fn straggler_job(t0: f64) -> Vec<RankSummary> {
    all_reduce_job("0xa", (16, 4), t0, |rank, b| {
        if b >= ONSET_BUCKET && rank != 6 {
            EXEC + 40_000.0
        } else {
            EXEC
        }
    })
}

/// A job of 8 ranks on node001 and node002 in communicator `0xb`, steady.
pub fn healthy_job(t0: f64) -> Vec<RankSummary> {
    all_reduce_job("0xb", (8, 2), t0, |_, _| EXEC)
}

/// What `host`'s agent posts of `jobs`: its own ranks', each job having skipped `skipped`.
pub fn upload(host: &str, jobs: &[(&str, &[RankSummary])], skipped: &Skipped) -> CollectivesUpload {
    CollectivesUpload {
        host: host.into(),
        jobs: jobs
            .iter()
            .map(|(job, summaries)| {
                let mine: Vec<RankSummary> = summaries
                    .iter()
                    .filter(|s| s.hostname == host)
                    .cloned()
                    .collect();
                JobCollectives {
                    job: Some(job.to_string()),
                    records: mine.iter().map(|s| s.count).sum(),
                    skipped: skipped.clone(),
                    dropped: 0,
                    summaries: mine,
                    simulated: false,
                }
            })
            .filter(|j| !j.summaries.is_empty())
            .collect(),
    }
}
