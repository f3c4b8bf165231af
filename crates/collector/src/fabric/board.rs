//! The collector's requests to read switch ports now (a job verdict's follow-up, issue 28
//! section 2): the collector cannot reach the switches, the samplers can, and no sampler
//! listens on a port. So the request waits here, by sampler, and the answer of that
//! sampler's next `POST /api/fabric/sweeps` hands it over (`read_now`); the sampler reads
//! those ports twice [`READ_GAP`] apart and posts both reads (`hostping fabric sample`),
//! and the verdict reads the deltas whose interval began after it asked. In memory only: a
//! request lives as long as the verdict that waits for it.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Between a sampler's two reads of the ports asked for: the second read's delta is the
/// ports' counters over this long, begun after the request. A second is the shortest
/// interval `hostping fabric sample` sweeps at by default (`--hz 1`), long enough for a
/// failing cable's symbol errors to show at `ibqueryerrors`' threshold of 10 in a window
/// (analyze::job::ports::ERRORS_TH) only when it errs at 10 a second or more.
pub const READ_GAP: Duration = Duration::from_secs(1);

/// Most ports waiting on the board, all samplers together: a verdict asks at most
/// `cluster::follow_up::MAX_PORT_READS`, so this is 64 verdicts at once; past it a request
/// is refused (said in the verdict's follow-up) rather than memory grown without bound.
pub const MAX_PENDING: usize = 4096;

/// One port asked for, as `read_now` lists it in the sweep's answer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ReadNow {
    /// The switch's node GUID, `0x` and 16 hex digits (DESIGN 4.4).
    pub guid: String,
    /// The port number.
    pub port: u8,
}

/// The ports waiting to be handed to their samplers, shared by the sweeps' endpoint and
/// the job verdict.
#[derive(Clone, Default)]
pub struct ReadBoard {
    pending: Arc<Mutex<HashMap<String, Vec<Waiting>>>>,
}

#[derive(Debug, Clone)]
struct Waiting {
    port: ReadNow,
    /// When the asking verdict stops waiting: past it the request is dropped unsent.
    until: Instant,
}

/// A request refused: the board is full.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{MAX_PENDING} switch-port reads are already waiting for their samplers")]
pub struct BoardFull;

impl ReadBoard {
    /// Asks `sampler` to read `ports` at its next post, for as long as `wait`; a port
    /// already waiting for it is asked once, with the later deadline.
    pub fn ask(&self, sampler: &str, ports: &[ReadNow], wait: Duration) -> Result<(), BoardFull> {
        let now = Instant::now();
        let until = now + wait;
        let mut pending = self.pending.lock().expect("read board");
        prune(&mut pending, now);
        let waiting: usize = pending.values().map(Vec::len).sum();
        let list = pending.entry(sampler.to_string()).or_default();
        let new = ports
            .iter()
            .filter(|p| !list.iter().any(|w| &w.port == *p))
            .count();
        if waiting + new > MAX_PENDING {
            return Err(BoardFull);
        }
        for port in ports {
            match list.iter_mut().find(|w| &w.port == port) {
                Some(w) => w.until = w.until.max(until),
                None => list.push(Waiting {
                    port: port.clone(),
                    until,
                }),
            }
        }
        Ok(())
    }

    /// What `sampler` is asked to read now, each port once, taken off the board (a request
    /// no one waits for any more is dropped).
    pub fn take(&self, sampler: &str) -> Vec<ReadNow> {
        let mut pending = self.pending.lock().expect("read board");
        prune(&mut pending, Instant::now());
        pending
            .remove(sampler)
            .unwrap_or_default()
            .into_iter()
            .map(|w| w.port)
            .collect()
    }
}

/// Drops the requests past their deadline, and the samplers left with none.
fn prune(pending: &mut HashMap<String, Vec<Waiting>>, now: Instant) {
    pending.retain(|_, list| {
        list.retain(|w| w.until > now);
        !list.is_empty()
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(guid: u64, port: u8) -> ReadNow {
        ReadNow {
            guid: model::switch_port::guid_text(guid),
            port,
        }
    }

    #[test]
    fn a_request_goes_to_its_sampler_once_and_only_to_it() {
        let board = ReadBoard::default();
        let wait = Duration::from_secs(60);
        board.ask("s1", &[port(1, 3), port(1, 4)], wait).unwrap();
        board.ask("s1", &[port(1, 3)], wait).unwrap();
        board.ask("s2", &[port(2, 9)], wait).unwrap();
        assert_eq!(board.take("s3"), vec![]);
        assert_eq!(board.take("s1"), vec![port(1, 3), port(1, 4)]);
        // Handed over: the next post of s1 is asked nothing.
        assert_eq!(board.take("s1"), vec![]);
        assert_eq!(board.take("s2"), vec![port(2, 9)]);
    }

    #[test]
    fn a_request_no_one_waits_for_is_dropped() {
        let board = ReadBoard::default();
        board.ask("s1", &[port(1, 3)], Duration::ZERO).unwrap();
        board
            .ask("s1", &[port(1, 4)], Duration::from_secs(60))
            .unwrap();
        assert_eq!(board.take("s1"), vec![port(1, 4)]);
    }

    #[test]
    fn a_full_board_refuses_and_keeps_what_it_holds() {
        let board = ReadBoard::default();
        let wait = Duration::from_secs(60);
        let many: Vec<ReadNow> = (0..MAX_PENDING as u64).map(|g| port(g, 1)).collect();
        board.ask("s1", &many, wait).unwrap();
        // Asked again, nothing is new: accepted.
        board.ask("s1", &many[..10], wait).unwrap();
        assert_eq!(board.ask("s2", &[port(1, 2)], wait), Err(BoardFull));
        assert_eq!(board.take("s2"), vec![]);
        assert_eq!(board.take("s1").len(), MAX_PENDING);
        board.ask("s2", &[port(1, 2)], wait).unwrap();
    }
}
