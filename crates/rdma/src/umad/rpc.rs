//! Many MAD requests in flight on one port, answered in any order: a window of outstanding
//! requests, each with hostping's own deadline and retries (a fresh transaction id per try,
//! so a late answer to an abandoned try is recognised and dropped), on one blocking thread.
//! The tools operators have send one MAD and wait for it (`perfquery` per switch), so a
//! sweep takes the sum of the round trips; with a window it takes about their maximum.
//!
//! Responses are matched on the low 32 bits of the transaction id: the kernel's MAD layer
//! (and ibsim's umad2sim) puts the sending agent's id in the high 32 bits on the way out.

use super::{Address, Agent, Port, UmadError};
use crate::mad::{MadPacket, MAD_LEN};
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// One request: the MAD (its transaction id is set by the exchange) and where it goes.
#[derive(Debug, Clone)]
pub struct Request {
    /// The agent (class) it is sent on.
    pub agent: Agent,
    /// The destination.
    pub to: Address,
    /// The MAD.
    pub mad: [u8; MAD_LEN],
}

/// How one request ended, other than with a response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    /// No response within the deadline, on every try.
    #[error("no response in {timeout_ms} ms, {tries} tries")]
    Timeout {
        /// The deadline of one try, ms.
        timeout_ms: u64,
        /// Tries made.
        tries: u32,
    },
    /// The send failed.
    #[error("{0}")]
    Send(String),
}

/// The settings of an exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Requests outstanding at once.
    pub window: usize,
    /// Deadline of one try.
    pub timeout: Duration,
    /// Tries after the first.
    pub retries: u32,
}

impl Default for Settings {
    /// 16 outstanding, 100 ms, 2 retries: a switch answers PerfMgt within microseconds to
    /// a millisecond (the LDMS ibfabric paper measured spreads of about 50 us to 1 ms), so
    /// 100 ms is a lost MAD, not a slow one.
    fn default() -> Self {
        Settings {
            window: 16,
            timeout: Duration::from_millis(100),
            retries: 2,
        }
    }
}

struct InFlight {
    index: usize,
    tries: u32,
    deadline: Instant,
}

/// Runs `requests` on `port` with `settings`, calling `done(index, result)` as each one ends
/// (in completion order, every index exactly once). Only the port failing as a whole (the
/// device gone) stops the exchange early, with that error; the requests not yet ended are
/// then not reported.
pub fn exchange(
    port: &mut Port,
    requests: &[Request],
    settings: Settings,
    mut done: impl FnMut(usize, Result<[u8; MAD_LEN], Failure>),
) -> Result<(), UmadError> {
    let mut queue: VecDeque<(usize, u32)> = (0..requests.len()).map(|i| (i, 0)).collect();
    let mut in_flight: HashMap<u32, InFlight> = HashMap::new();
    let mut next_tid: u32 = tid_seed();
    let window = settings.window.max(1);
    while !queue.is_empty() || !in_flight.is_empty() {
        while in_flight.len() < window {
            let Some((index, tries)) = queue.pop_front() else {
                break;
            };
            next_tid = next_tid.wrapping_add(1);
            let tid = next_tid;
            let r = &requests[index];
            let mut mad = r.mad;
            MadPacket::new_unchecked(&mut mad[..]).set_transaction_id(u64::from(tid));
            match port.send(r.agent, r.to, &mad, settings.timeout) {
                Ok(()) => {
                    in_flight.insert(
                        tid,
                        InFlight {
                            index,
                            tries: tries + 1,
                            deadline: Instant::now() + settings.timeout,
                        },
                    );
                }
                Err(e) => done(index, Err(Failure::Send(e.to_string()))),
            }
        }
        let Some(first_deadline) = in_flight.values().map(|f| f.deadline).min() else {
            continue;
        };
        let wait = first_deadline.saturating_duration_since(Instant::now());
        if let Some(received) = port.recv(wait)? {
            let tid = MadPacket::new_unchecked(&received.mad[..]).transaction_id() as u32;
            if let Some(f) = in_flight.remove(&tid) {
                if received.status == 0 {
                    done(f.index, Ok(received.mad));
                } else {
                    // The kernel gave the send back (ETIMEDOUT): a lost try.
                    retry_or_fail(f, settings, &mut queue, &mut done);
                }
            }
            // else: the answer to a try already abandoned; its retry is in flight or done.
        }
        let now = Instant::now();
        let expired: Vec<u32> = in_flight
            .iter()
            .filter(|(_, f)| f.deadline <= now)
            .map(|(tid, _)| *tid)
            .collect();
        for tid in expired {
            let f = in_flight.remove(&tid).expect("listed above");
            retry_or_fail(f, settings, &mut queue, &mut done);
        }
    }
    Ok(())
}

/// Runs `requests` as [`exchange`] does and returns how each one ended, in request order.
pub fn exchange_in_order(
    port: &mut Port,
    requests: &[Request],
    settings: Settings,
) -> Result<Vec<Result<[u8; MAD_LEN], Failure>>, UmadError> {
    let mut ended = vec![None; requests.len()];
    exchange(port, requests, settings, |i, r| {
        assert!(ended[i].is_none(), "request {i} ended twice");
        ended[i] = Some(r);
    })?;
    Ok(ended
        .into_iter()
        .enumerate()
        .map(|(i, r)| r.unwrap_or_else(|| panic!("request {i} never ended")))
        .collect())
}

fn retry_or_fail(
    f: InFlight,
    settings: Settings,
    queue: &mut VecDeque<(usize, u32)>,
    done: &mut impl FnMut(usize, Result<[u8; MAD_LEN], Failure>),
) {
    if f.tries <= settings.retries {
        // Retries go first: their sweep is already late.
        queue.push_front((f.index, f.tries));
    } else {
        done(
            f.index,
            Err(Failure::Timeout {
                timeout_ms: settings.timeout.as_millis() as u64,
                tries: f.tries,
            }),
        );
    }
}

/// A starting transaction id that differs between processes, so that two samplers on one
/// port do not take each other's answers for their own.
fn tid_seed() -> u32 {
    // The sub-second part of the wall clock, as before: only its variation matters.
    let nanos = (model::time::unix_ns(std::time::SystemTime::now()) % 1_000_000_000) as u32;
    std::process::id().rotate_left(16) ^ nanos
}
