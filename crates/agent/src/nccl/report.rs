//! The agent's collectives thread (`hostping agent --nccl-dir DIR --collector URL`, DESIGN
//! 4.8): every [`POLL_EVERY`] on the wall clock it polls the [`NcclWatcher`] and posts what
//! the poll closed to `POST {URL}/api/collectives`, per-rank summaries, never raw records.
//!
//! A post the collector could not take now (the network, a 5xx, a token being fixed) stays
//! queued and goes again at the next poll, with those of later polls; the queue is bounded
//! ([`MAX_QUEUED`] posts), the oldest dropped past it and logged, so a collector away for
//! hours costs the host a bounded amount of memory. A post refused for good (400, 413, 422)
//! is dropped with a log line. A file the watcher cannot read is logged when its trouble
//! starts, not at every poll. The thread waits on the agent's [`Control`], so a stop ends
//! it within one poll.

use std::collections::{BTreeSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use fleet_api::collectives::{CollectivesUpload, PATH};
use fleet_api::post::{post, Delivery};

use super::{NcclSettings, NcclWatcher};
use crate::sender::CollectorTarget;
use crate::Control;

/// How often the dump directory is read: the plugin writes every dump interval (500 us to
/// 30 s in its examples), and a bucket of [`NcclSettings::bucket_s`] (5 s) closes a width
/// after its end, so a slowdown reaches the collector within about 20 s.
pub const POLL_EVERY: Duration = Duration::from_secs(5);
/// Posts kept while the collector cannot take them: 10 minutes of polls.
pub const MAX_QUEUED: usize = 120;

/// The running thread.
pub struct NcclReporter {
    thread: JoinHandle<()>,
}

impl NcclReporter {
    /// Waits for the thread, after the agent's [`Control`] was told to stop.
    pub fn join(self) {
        let _ = self.thread.join();
    }
}

/// Starts watching `dir` and posting to `target` until `control` stops.
pub fn start(
    dir: PathBuf,
    target: CollectorTarget,
    control: Arc<Control>,
    log: fn(&str),
) -> std::io::Result<NcclReporter> {
    let thread = std::thread::Builder::new()
        .name("hostping-nccl".into())
        .spawn(move || run(dir, &target, &control, log))?;
    Ok(NcclReporter { thread })
}

fn run(dir: PathBuf, target: &CollectorTarget, control: &Control, log: fn(&str)) {
    let client = fleet_api::post::client(target.tls.clone());
    let url = format!("{}{PATH}", target.url.trim_end_matches('/'));
    let mut watcher = NcclWatcher::new(dir, NcclSettings::default());
    let mut queue: VecDeque<Vec<u8>> = VecDeque::new();
    let mut troubled: BTreeSet<PathBuf> = BTreeSet::new();
    let mut failing: Option<String> = None;
    loop {
        let polled = watcher.poll(SystemTime::now());
        let now_troubled: BTreeSet<PathBuf> =
            polled.problems.iter().map(|p| p.path.clone()).collect();
        for p in &polled.problems {
            if !troubled.contains(&p.path) {
                log(&format!(
                    "nccl: cannot read {}: {}",
                    p.path.display(),
                    p.error
                ));
            }
        }
        troubled = now_troubled;
        let jobs: Vec<_> = polled
            .jobs
            .into_iter()
            // A job the records do not name cannot be listed or judged as one.
            .filter(|j| j.job.is_some())
            .collect();
        if !jobs.is_empty() {
            let upload = CollectivesUpload {
                host: target.host.clone(),
                jobs,
            };
            match serde_json::to_vec(&upload) {
                Ok(body) => queue.push_back(body),
                Err(e) => log(&format!("nccl: cannot encode a post: {e}")),
            }
            if queue.len() > MAX_QUEUED {
                queue.pop_front();
                log(&format!(
                    "nccl: {url} has not taken the job collectives for {MAX_QUEUED} polls: dropped the oldest"
                ));
            }
        }
        while let Some(body) = queue.front() {
            match post(&client, &url, &target.token, body) {
                Delivery::Delivered => {
                    queue.pop_front();
                    if let Some(was) = failing.take() {
                        log(&format!("nccl: posting again (after: {was})"));
                    }
                }
                Delivery::Refused(why) => {
                    queue.pop_front();
                    log(&format!(
                        "nccl: the collector refused a post for good: {why}"
                    ));
                }
                Delivery::Retry(why) => {
                    if failing.as_ref() != Some(&why) {
                        log(&format!("nccl: cannot post now ({why}); trying again"));
                        failing = Some(why);
                    }
                    break;
                }
            }
        }
        if control.sleep(POLL_EVERY) {
            return;
        }
    }
}
