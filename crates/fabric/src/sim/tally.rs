//! What the run counts as it goes: the per-port ground truth telemetry is judged by, and the
//! per-job results (codes-peer.md's per-terminal latency and hops, per-port bytes and busy
//! time).

use super::{GroundTruth, JobResult};

struct JobTally {
    name: String,
    ranks: u32,
    ranks_done: u32,
    messages_sent: u64,
    messages_delivered: u64,
    packets_delivered: u64,
    bytes_delivered: u64,
    total_hops: u64,
    latency_sum_ps: u128,
    latency_max_ps: u64,
    finished_at: Option<u64>,
}

/// Per-port counts over all jobs, kept by the links.
pub(crate) struct PortTotals {
    pub packets: Vec<u64>,
    pub congested: Vec<u64>,
    pub bytes: Vec<u64>,
    pub busy_ps: Vec<u64>,
}

pub(crate) struct Tally {
    ports: usize,
    /// `[packets, congested]` at `job * ports + port`, kept only when there are several jobs
    /// (with one, the per-port totals are its counts, and the hot path saves a cache miss).
    job_ports: Vec<[u64; 2]>,
    jobs: Vec<JobTally>,
    pub packets_delivered: u64,
}

impl Tally {
    /// `jobs`: each job's name and number of ranks; `ports`: the switch ports, whose counts
    /// are split by job when there are several (0: not split, no per-job ground truth).
    pub fn new(ports: usize, jobs: impl IntoIterator<Item = (String, u32)>) -> Self {
        let jobs: Vec<JobTally> = jobs
            .into_iter()
            .map(|(name, ranks)| JobTally {
                name,
                ranks,
                ranks_done: 0,
                messages_sent: 0,
                messages_delivered: 0,
                packets_delivered: 0,
                bytes_delivered: 0,
                total_hops: 0,
                latency_sum_ps: 0,
                latency_max_ps: 0,
                finished_at: None,
            })
            .collect();
        Tally {
            ports,
            job_ports: if jobs.len() > 1 {
                vec![[0; 2]; jobs.len() * ports]
            } else {
                Vec::new()
            },
            jobs,
            packets_delivered: 0,
        }
    }

    /// A packet of `job` entered the output queue of `port`.
    #[inline]
    pub fn enqueued(&mut self, job: u16, port: u32, congested: bool) {
        if self.job_ports.is_empty() {
            return;
        }
        let counts = &mut self.job_ports[usize::from(job) * self.ports + port as usize];
        counts[0] += 1;
        counts[1] += u64::from(congested);
    }

    pub fn message_sent(&mut self, job: u16) {
        self.jobs[usize::from(job)].messages_sent += 1;
    }

    #[inline]
    pub fn packet_delivered(&mut self, job: u16, bytes: u32, hops: u32) {
        let j = &mut self.jobs[usize::from(job)];
        j.packets_delivered += 1;
        j.bytes_delivered += u64::from(bytes);
        j.total_hops += u64::from(hops);
        self.packets_delivered += 1;
    }

    pub fn message_delivered(&mut self, job: u16, latency_ps: u64) {
        let j = &mut self.jobs[usize::from(job)];
        j.messages_delivered += 1;
        j.latency_sum_ps += u128::from(latency_ps);
        j.latency_max_ps = j.latency_max_ps.max(latency_ps);
    }

    pub fn rank_done(&mut self, job: u16) {
        self.jobs[usize::from(job)].ranks_done += 1;
    }

    /// Marks `job` finished at `now` when all its ranks are done and every message it sent
    /// has been delivered.
    pub fn check_finished(&mut self, job: u16, now: u64) {
        let j = &mut self.jobs[usize::from(job)];
        if j.finished_at.is_none()
            && j.ranks_done == j.ranks
            && j.messages_delivered == j.messages_sent
        {
            j.finished_at = Some(now);
        }
    }

    /// The results, with `end_ps` as the completion time of the jobs that did not finish.
    pub fn finish(self, end_ps: u64, totals: PortTotals) -> (Vec<JobResult>, GroundTruth) {
        let jobs = Self::results(self.jobs, end_ps);
        let per_job = |which: usize, total: Vec<u64>| -> Vec<Vec<u64>> {
            if self.job_ports.is_empty() {
                return vec![total; jobs.len()];
            }
            self.job_ports
                .chunks(self.ports)
                .map(|job| job.iter().map(|counts| counts[which]).collect())
                .collect()
        };
        let ground_truth = GroundTruth {
            packets: per_job(0, totals.packets),
            congested: per_job(1, totals.congested),
            bytes: totals.bytes,
            busy_ps: totals.busy_ps,
        };
        (jobs, ground_truth)
    }

    /// The jobs' results alone (see [`Self::finish`]).
    pub fn job_results(self, end_ps: u64) -> Vec<JobResult> {
        Self::results(self.jobs, end_ps)
    }

    fn results(jobs: Vec<JobTally>, end_ps: u64) -> Vec<JobResult> {
        jobs.into_iter()
            .map(|j| {
                let mean_ps = if j.messages_delivered == 0 {
                    0.0
                } else {
                    j.latency_sum_ps as f64 / j.messages_delivered as f64
                };
                JobResult {
                    name: j.name,
                    ranks: j.ranks,
                    messages_sent: j.messages_sent,
                    messages_delivered: j.messages_delivered,
                    packets_delivered: j.packets_delivered,
                    bytes_delivered: j.bytes_delivered,
                    total_hops: j.total_hops,
                    completion_ps: j.finished_at.unwrap_or(end_ps),
                    finished: j.finished_at.is_some(),
                    mean_message_latency_ns: mean_ps / 1000.0,
                    max_message_latency_ns: j.latency_max_ps as f64 / 1000.0,
                }
            })
            .collect()
    }
}
