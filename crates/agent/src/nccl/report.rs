//! The agent's collectives thread (`hostping agent --nccl-dir DIR --collector URL`, DESIGN
//! 4.8): it polls the [`NcclWatcher`] every [`POLL_BUSY`] while a job's records are open
//! here ([`POLL_IDLE`] otherwise) and posts to `POST {URL}/api/collectives` as soon as a
//! poll closed a bucket: per-rank summaries, never raw records. What a poll read without
//! closing a bucket (counts, skipped objects) waits for the next post, at most
//! [`POST_EVERY`].
//!
//! A post the collector could not take now (the network, a 5xx, a token being fixed) stays
//! queued and is tried again [`POST_EVERY`] later, with those of later polls; the queue is
//! bounded ([`MAX_QUEUED`] posts), the oldest dropped past it and logged, so a collector away
//! for hours costs the host a bounded amount of memory. A post refused for good (400, 413,
//! 422) is dropped with a log line. A file the watcher cannot read is logged when its
//! trouble starts, not at every poll. The thread waits on the agent's [`Control`], so a
//! stop ends it within one poll.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use fleet_api::collectives::{CollectivesUpload, JobCollectives, PATH};
use fleet_api::post::{post, Delivery};

use super::{NcclSettings, NcclWatcher};
use crate::sender::CollectorTarget;
use crate::Control;

/// How often the dump directory is read while records are open: a bucket goes to the
/// collector at the first poll after every file passed it (`buckets::CLOSE_MARGIN_S`), so
/// this is the most the poll adds to a slowdown's news. Reading a busy 8-GPU host's files
/// once a second costs a fraction of a percent of a core (BENCHMARKS.md).
pub const POLL_BUSY: Duration = Duration::from_secs(1);
/// ... and while nothing is open (no job writing here): a new job's first records wait
/// this long at most, and an idle host is not polled faster.
pub const POLL_IDLE: Duration = Duration::from_secs(5);
/// Read counts without a closed bucket are posted at most this often, and a post the
/// collector could not take is tried again this much later: a collector that is down is
/// not called every second by every agent.
pub const POST_EVERY: Duration = Duration::from_secs(5);
/// Posts kept while the collector cannot take them: 10 minutes of posts.
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
    // What polls read since the last post, by job.
    let mut unsent: BTreeMap<String, JobCollectives> = BTreeMap::new();
    let mut last_post = Instant::now();
    let mut retry_at: Option<Instant> = None;
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
        // A job the records do not name cannot be listed or judged as one.
        for job in polled.jobs {
            let Some(name) = job.job.clone() else {
                continue;
            };
            match unsent.get_mut(&name) {
                Some(earlier) => earlier.absorb(job),
                None => {
                    unsent.insert(name, job);
                }
            }
        }
        let closed = unsent.values().any(|j| !j.summaries.is_empty());
        if !unsent.is_empty() && (closed || last_post.elapsed() >= POST_EVERY) {
            last_post = Instant::now();
            let upload = CollectivesUpload {
                host: target.host.clone(),
                jobs: std::mem::take(&mut unsent).into_values().collect(),
            };
            match serde_json::to_vec(&upload) {
                Ok(body) => queue.push_back(body),
                Err(e) => log(&format!("nccl: cannot encode a post: {e}")),
            }
            if queue.len() > MAX_QUEUED {
                queue.pop_front();
                log(&format!(
                    "nccl: {url} has not taken the job collectives for {MAX_QUEUED} posts: dropped the oldest"
                ));
            }
        }
        if retry_at.is_none_or(|at| Instant::now() >= at) {
            retry_at = send_queued(&client, &url, &target.token, &mut queue, &mut failing, log);
        }
        let wait = if watcher.open_records() > 0 {
            POLL_BUSY
        } else {
            POLL_IDLE
        };
        if control.sleep(wait) {
            return;
        }
    }
}

/// Posts the queued bodies, oldest first, until the collector cannot take one now: then
/// says when to try again ([`POST_EVERY`] later), `None` once the queue is empty. A body
/// refused for good is dropped. `failing` holds the trouble logged last, so that it is
/// logged when it starts and when it ends, not at every try.
fn send_queued(
    client: &ureq::Agent,
    url: &str,
    token: &str,
    queue: &mut VecDeque<Vec<u8>>,
    failing: &mut Option<String>,
    log: fn(&str),
) -> Option<Instant> {
    while let Some(body) = queue.front() {
        match post(client, url, token, body) {
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
                    *failing = Some(why);
                }
                return Some(Instant::now() + POST_EVERY);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_collector::answering;
    use std::sync::Mutex;

    static LOGGED: Mutex<Vec<String>> = Mutex::new(Vec::new());

    fn log(line: &str) {
        LOGGED.lock().unwrap().push(line.to_string());
    }

    #[test]
    fn queued_posts_go_oldest_first_and_wait_when_the_collector_cannot_take_them() {
        let client = fleet_api::post::client(ureq::tls::TlsConfig::default());
        let mut queue: VecDeque<Vec<u8>> = [b"1".to_vec(), b"2".to_vec()].into();
        let mut failing = None;
        let send = |addr, queue: &mut VecDeque<Vec<u8>>, failing: &mut Option<String>| {
            let url = format!("http://{addr}{PATH}");
            send_queued(&client, &url, "t", queue, failing, log)
        };

        // Nobody listening: both kept, tried again a while later; the trouble logged once,
        // however often it recurs.
        let down = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let before = Instant::now();
        let retry = send(down, &mut queue, &mut failing);
        assert!(
            retry.is_some_and(|at| at >= before + POST_EVERY),
            "{retry:?}"
        );
        assert!(send(down, &mut queue, &mut failing).is_some());
        assert_eq!(queue.len(), 2);

        // A collector that takes one post: the oldest goes, the newer waits again.
        let retry = send(answering("200 OK", "{}"), &mut queue, &mut failing);
        assert!(retry.is_some());
        assert_eq!(queue, [b"2".to_vec()]);

        // Back for good: delivered, the queue empty, nothing to retry.
        let retry = send(answering("200 OK", "{}"), &mut queue, &mut failing);
        assert_eq!(retry, None);
        assert!(queue.is_empty() && failing.is_none());

        // Refused for good: dropped, nothing to retry.
        queue.push_back(b"3".to_vec());
        let retry = send(
            answering("422 Unprocessable Entity", r#"{"error": "bad"}"#),
            &mut queue,
            &mut failing,
        );
        assert_eq!(retry, None);
        assert!(queue.is_empty());

        // Each trouble when it started, each recovery once.
        let logged = LOGGED.lock().unwrap();
        let count = |words: &str| logged.iter().filter(|l| l.contains(words)).count();
        assert_eq!(count("cannot post now"), 2, "{logged:?}");
        assert_eq!(count("posting again"), 2, "{logged:?}");
        assert_eq!(count("refused a post for good"), 1, "{logged:?}");
    }
}
