//! The sampler's side of `POST /api/fabric/sweeps` (`hostping fabric sample --collector
//! URL`): each sweep is queued as it completes and a thread posts the queue oldest first,
//! with the rules runs have (`fleet_api::post`): a network error, a timeout, a 5xx
//! or a 401/403 keeps the sweep and backs off (doubling from [`FIRST_BACKOFF`] to
//! [`MAX_BACKOFF`]); a 400, 413 or 422 drops it with a line on stderr, for it would be
//! refused again and would hold back every sweep behind it. The sampler keeps sampling
//! meanwhile. Unlike the agent's runs the queue is in memory, bounded by [`QUEUE`] sweeps:
//! past it the oldest is dropped and said, and sweeps still queued when the sampler stops
//! (after a bounded drain) are counted and said. No sweep is lost silently.
//!
//! A stored sweep's answer may ask for ports to be read now (`read_now`, a job verdict's
//! follow-up, which the collector keeps on its board); the sender keeps them for the
//! sampling loop, which takes them with [`Sender::wait_for_reads`] instead of sleeping
//! between sweeps, and reads them twice [`READ_GAP`] apart.
//!
//! It is the contract's client, beside the body it sends ([`crate::sweep`]), so that a
//! sampler (`hostping fabric sample`, the agent's loop) posts without the collector crate.

pub use crate::sweep::{ReadNow, READ_GAP};
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use crate::post::Delivery;
use crate::post::{FIRST_BACKOFF, MAX_BACKOFF};

/// Sweeps kept while the collector is unreachable: 10 minutes at 1 Hz. A sweep of a
/// 3,888-port fabric's share is a few hundred kB of JSON, so this bounds memory to about
/// 100 MB in the worst case.
pub const QUEUE: usize = 600;

/// Where sweeps go and with which token.
#[derive(Debug, Clone)]
pub struct Target {
    /// The collector's base URL, checked as the agent's `--collector`.
    pub url: String,
    /// The sampler host's bearer token.
    pub token: String,
    /// What an https:// collector's certificate is checked against.
    pub tls: ureq::tls::TlsConfig,
}

/// Posts one body to the collector's sweeps endpoint; with a stored sweep, the ports its
/// answer asks to be read now.
pub fn post(client: &ureq::Agent, target: &Target, body: &[u8]) -> (Delivery, Vec<ReadNow>) {
    let url = format!("{}/api/fabric/sweeps", target.url.trim_end_matches('/'));
    let (delivery, answer) = crate::post::post_reading(client, &url, &target.token, body);
    (delivery, read_now(&answer))
}

/// The `read_now` of a sweep's answer; none when it has none (a collector before it) or
/// the answer does not read.
fn read_now(answer: &str) -> Vec<ReadNow> {
    #[derive(serde::Deserialize)]
    struct Answer {
        #[serde(default)]
        read_now: Vec<ReadNow>,
    }
    serde_json::from_str::<Answer>(answer).map_or_else(|_| Vec::new(), |a| a.read_now)
}

/// What the queue holds and what became of the rest.
#[derive(Default)]
struct State {
    queue: VecDeque<(u64, Vec<u8>)>,
    stopping: bool,
    /// Dropped because the queue was full.
    overflowed: u64,
    /// Refused by the collector.
    refused: u64,
    delivered: u64,
    /// Ports the collector asked to be read now, not yet taken by the sampling loop.
    read_now: Vec<ReadNow>,
}

/// The queue and its posting thread.
pub struct Sender {
    shared: Arc<(Mutex<State>, Condvar)>,
    thread: JoinHandle<()>,
    log: fn(&str),
}

/// What a stopped sender says: sweeps delivered, refused, dropped from a full queue, and
/// left unsent when the drain ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Stored by the collector.
    pub delivered: u64,
    /// Refused by it (400, 413, 422).
    pub refused: u64,
    /// Dropped, oldest first, while the queue was full.
    pub overflowed: u64,
    /// Still queued when the drain ended.
    pub unsent: u64,
}

impl Outcome {
    /// Whether every sweep was stored.
    pub fn all_delivered(&self) -> bool {
        self.refused + self.overflowed + self.unsent == 0
    }
}

impl Sender {
    /// Starts the posting thread; `log` writes a line on stderr.
    pub fn start(target: Target, log: fn(&str)) -> Sender {
        let shared = Arc::new((Mutex::new(State::default()), Condvar::new()));
        let theirs = shared.clone();
        let thread = std::thread::Builder::new()
            .name("hostping-sweeps".into())
            .spawn(move || run(&target, &theirs, log))
            .expect("spawn the sweep sender");
        Sender {
            shared,
            thread,
            log,
        }
    }

    /// Queues sweep number `sweep`'s body; a full queue drops its oldest, said on stderr.
    pub fn send(&self, sweep: u64, body: Vec<u8>) {
        let (lock, wake) = &*self.shared;
        let mut state = lock.lock().expect("sweep queue");
        if state.queue.len() >= QUEUE {
            if let Some((oldest, _)) = state.queue.pop_front() {
                state.overflowed += 1;
                (self.log)(&format!(
                    "collector: {QUEUE} sweeps waiting, sweep {oldest} dropped unsent"
                ));
            }
        }
        state.queue.push_back((sweep, body));
        wake.notify_all();
    }

    /// Waits until `until` or until the collector asks for ports to be read now, whichever
    /// comes first; the ports asked (each once), none at `until`.
    pub fn wait_for_reads(&self, until: Instant) -> Vec<ReadNow> {
        let (lock, wake) = &*self.shared;
        let mut state = lock.lock().expect("sweep queue");
        while state.read_now.is_empty() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            state = wake.wait_timeout(state, left).expect("sweep queue").0;
        }
        std::mem::take(&mut state.read_now)
    }

    /// Posts what is queued for at most `drain`, then stops; says what was left.
    pub fn finish(self, drain: Duration) -> Outcome {
        let (lock, wake) = &*self.shared;
        let deadline = Instant::now() + drain;
        let mut state = lock.lock().expect("sweep queue");
        while !state.queue.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            state = wake.wait_timeout(state, left).expect("sweep queue").0;
        }
        state.stopping = true;
        let outcome = Outcome {
            delivered: state.delivered,
            refused: state.refused,
            overflowed: state.overflowed,
            unsent: state.queue.len() as u64,
        };
        wake.notify_all();
        drop(state);
        let _ = self.thread.join();
        outcome
    }
}

fn run(target: &Target, shared: &(Mutex<State>, Condvar), log: fn(&str)) {
    let client = crate::post::client(target.tls.clone());
    let (lock, wake) = shared;
    let mut backoff = FIRST_BACKOFF;
    let mut failing = false;
    loop {
        // The oldest sweep, left in the queue until it is stored or refused.
        let next = {
            let mut state = lock.lock().expect("sweep queue");
            while state.queue.is_empty() && !state.stopping {
                state = wake.wait(state).expect("sweep queue");
            }
            if state.stopping {
                return;
            }
            state.queue.front().cloned()
        };
        let Some((sweep, body)) = next else { continue };
        let (delivery, asked) = post(&client, target, &body);
        let mut state = lock.lock().expect("sweep queue");
        for port in asked {
            if !state.read_now.contains(&port) {
                state.read_now.push(port);
            }
        }
        match delivery {
            Delivery::Retry(why) => {
                if !failing {
                    log(&format!(
                        "collector unreachable, {} sweeps kept, sampling goes on: {why}",
                        state.queue.len()
                    ));
                    failing = true;
                }
                // Waits on the condvar, so that a stopping sampler is not held back; new
                // sweeps arriving (which also notify) do not cut the wait short.
                let until = Instant::now() + backoff;
                while !state.stopping {
                    let left = until.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    state = wake.wait_timeout(state, left).expect("sweep queue").0;
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
            Delivery::Delivered => {
                state.delivered += 1;
                if failing {
                    log(&format!(
                        "collector reachable again, {} sweeps waiting",
                        state.queue.len() - 1
                    ));
                }
            }
            Delivery::Refused(why) => {
                state.refused += 1;
                log(&format!("sweep {sweep} dropped: {why}"));
            }
        }
        failing = false;
        backoff = FIRST_BACKOFF;
        // The front is still this sweep unless a full queue dropped it meanwhile (sweep
        // numbers do not repeat within a sampler).
        if state.queue.front().is_some_and(|(s, _)| *s == sweep) {
            state.queue.pop_front();
        }
        wake.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(url: String) -> Target {
        Target {
            url,
            token: "t".into(),
            tls: ureq::tls::TlsConfig::default(),
        }
    }

    #[test]
    fn an_unreachable_collector_keeps_the_sweeps_and_says_so() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = closed.local_addr().unwrap();
        drop(closed);
        let sender = Sender::start(target(format!("http://{addr}")), |_| {});
        sender.send(1, b"{}".to_vec());
        sender.send(2, b"{}".to_vec());
        let outcome = sender.finish(Duration::from_millis(300));
        assert_eq!(
            outcome,
            Outcome {
                delivered: 0,
                refused: 0,
                overflowed: 0,
                unsent: 2
            }
        );
        assert!(!outcome.all_delivered());
    }

    #[test]
    fn the_ports_an_answer_asks_for_wake_the_sampling_loop() {
        // A collector that stores every sweep and asks, in its first answer, for one port.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            use std::io::{BufRead, BufReader, Read, Write};
            for (n, stream) in listener.incoming().enumerate() {
                let mut stream = stream.unwrap();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    reader.read_line(&mut line).unwrap();
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap();
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                let answer = if n == 0 {
                    r#"{"stored": 1, "read_now": [{"guid": "0x0000000000200001", "port": 9}]}"#
                } else {
                    r#"{"stored": 2, "read_now": []}"#
                };
                write!(
                    stream,
                    "HTTP/1.1 201 Created\r\ncontent-type: application/json\r\n\
                     content-length: {}\r\nconnection: close\r\n\r\n{answer}",
                    answer.len()
                )
                .unwrap();
            }
        });
        let sender = Sender::start(target(format!("http://{addr}")), |_| {});
        // Nothing asked before a sweep is posted: the wait runs to its end.
        let started = Instant::now();
        assert_eq!(
            sender.wait_for_reads(started + Duration::from_millis(100)),
            vec![]
        );
        assert!(started.elapsed() >= Duration::from_millis(100));
        sender.send(1, b"{}".to_vec());
        let asked = sender.wait_for_reads(Instant::now() + Duration::from_secs(10));
        assert_eq!(
            asked,
            vec![ReadNow {
                guid: "0x0000000000200001".into(),
                port: 9
            }]
        );
        // Taken once.
        sender.send(2, b"{}".to_vec());
        let outcome = sender.finish(Duration::from_secs(10));
        assert_eq!(outcome.delivered, 2);
        assert_eq!(read_now("not json"), vec![]);
        assert_eq!(read_now(r#"{"stored": 3}"#), vec![]);
    }

    #[test]
    fn a_full_queue_drops_its_oldest_and_counts_it() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = closed.local_addr().unwrap();
        drop(closed);
        let sender = Sender::start(target(format!("http://{addr}")), |_| {});
        for n in 0..QUEUE as u64 + 3 {
            sender.send(n, Vec::new());
        }
        let outcome = sender.finish(Duration::ZERO);
        assert_eq!(outcome.overflowed, 3);
        assert_eq!(outcome.unsent, QUEUE as u64);
    }
}
