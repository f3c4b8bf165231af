//! The READs of one point: when each was posted and completed (work request id = the READ's
//! index), the waits with their deadline, and the check of the bytes that arrived.

use super::memory::FreshPages;
use super::BenchError;
use crate::engine::pattern_byte;
use crate::verbs::ffi::ibv_wc;
use crate::verbs::{Cq, CqWaitError, VerbsError};
use std::time::{Duration, Instant};

/// The seed of the remote side's bytes ([`pattern_byte`]).
const SEED: u8 = 0x5a;

/// The point's name and device, for errors.
pub(super) struct Label {
    pub point: String,
    pub device: String,
}

impl Label {
    pub fn verbs(&self, error: VerbsError) -> BenchError {
        BenchError::Verbs {
            point: self.point.clone(),
            device: self.device.clone(),
            error,
        }
    }

    /// Maps `bytes` of fresh pages for the point.
    pub fn map(&self, bytes: usize) -> Result<FreshPages, BenchError> {
        FreshPages::map(bytes).map_err(|error| BenchError::Map {
            point: self.point.clone(),
            device: self.device.clone(),
            bytes,
            error,
        })
    }
}

/// Post and completion times of `n` READs.
pub(super) struct Reads {
    posted: Vec<Option<Instant>>,
    done: Vec<Option<Instant>>,
    pending: usize,
}

impl Reads {
    pub fn new(n: u32) -> Reads {
        Reads {
            posted: vec![None; n as usize],
            done: vec![None; n as usize],
            pending: 0,
        }
    }

    /// READs posted and not completed.
    pub fn pending(&self) -> usize {
        self.pending
    }

    pub fn posted(&mut self, read: u32, at: Instant) {
        self.posted[read as usize] = Some(at);
        self.pending += 1;
    }

    /// Records the completions `wc` polled at `at`. A completion's work request id comes
    /// back from the provider: one that is no READ of the point is returned as `Err`
    /// (the completions before it are recorded), not used as an index.
    pub fn absorb(&mut self, wc: &[ibv_wc], at: Instant) -> Result<(), u64> {
        for w in wc {
            let slot = usize::try_from(w.wr_id)
                .ok()
                .and_then(|i| self.done.get_mut(i))
                .ok_or(w.wr_id)?;
            if slot.is_none() {
                *slot = Some(at);
                self.pending = self.pending.saturating_sub(1);
            }
        }
        Ok(())
    }

    /// [`Reads::absorb`], a stray work request id as the point's error.
    fn absorb_labelled(
        &mut self,
        wc: &[ibv_wc],
        at: Instant,
        label: &Label,
    ) -> Result<(), BenchError> {
        self.absorb(wc, at)
            .map_err(|wr_id| BenchError::UnknownCompletion {
                point: label.point.clone(),
                device: label.device.clone(),
                wr_id,
                reads: self.posted.len() as u32,
            })
    }

    /// The first READ posted and not completed, from 1.
    fn first_pending(&self) -> u32 {
        let i = (0..self.posted.len())
            .find(|&i| self.posted[i].is_some() && self.done[i].is_none())
            .unwrap_or(0);
        i as u32 + 1
    }

    /// Polls `cq` once, recording what completed; returns the completions in `wc`.
    pub fn poll(
        &mut self,
        cq: &Cq<'_>,
        wc: &mut [ibv_wc],
        label: &Label,
    ) -> Result<usize, BenchError> {
        let n = cq
            .poll_checked(wc)
            .map_err(|e| self.wait_error(e, label, Duration::ZERO))?;
        self.absorb_labelled(&wc[..n], Instant::now(), label)?;
        Ok(n)
    }

    /// Waits up to `timeout` for at least one completion, recording it; returns the
    /// completions in `wc`.
    pub fn wait(
        &mut self,
        cq: &Cq<'_>,
        wc: &mut [ibv_wc],
        timeout: Duration,
        label: &Label,
    ) -> Result<usize, BenchError> {
        let n = cq
            .wait(wc, timeout)
            .map_err(|e| self.wait_error(e, label, timeout))?;
        self.absorb_labelled(&wc[..n], Instant::now(), label)?;
        Ok(n)
    }

    /// The error of a wait that ended with `e` after `timeout`.
    pub fn wait_error(&self, e: CqWaitError, label: &Label, timeout: Duration) -> BenchError {
        let reads = self.posted.len() as u32;
        match e {
            CqWaitError::Timeout => BenchError::Timeout {
                point: label.point.clone(),
                device: label.device.clone(),
                read: self.first_pending(),
                reads,
                after_ms: timeout.as_millis() as u64,
            },
            CqWaitError::Failed { wr_id, .. } => BenchError::Completion {
                point: label.point.clone(),
                device: label.device.clone(),
                read: u32::try_from(wr_id).map_or(u32::MAX, |r| r.saturating_add(1)),
                reads,
                status: e.to_string(),
            },
            CqWaitError::Poll(error) => label.verbs(error),
        }
    }

    /// From the first post to the last completion, and the slowest READ from post to
    /// completion, us. Every READ must have completed.
    pub fn times_us(&self) -> (f64, f64) {
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let pairs: Vec<(Instant, Instant)> = self
            .posted
            .iter()
            .zip(&self.done)
            .map(|(p, d)| {
                (
                    p.expect("every READ posted"),
                    d.expect("every READ completed"),
                )
            })
            .collect();
        let first = pairs.iter().map(|p| p.0).min().expect("at least one READ");
        let last = pairs.iter().map(|p| p.1).max().expect("at least one READ");
        let slowest = pairs
            .iter()
            .map(|(p, d)| us(d.duration_since(*p)))
            .fold(0.0, f64::max);
        (us(last.duration_since(first)), slowest)
    }

    /// Completion time of READ `read` (from 0) from its post, us.
    pub fn read_us(&self, read: u32) -> Option<f64> {
        let (p, d) = (self.posted[read as usize]?, self.done[read as usize]?);
        Some(d.duration_since(p).as_secs_f64() * 1e6)
    }
}

/// Fills `len` bytes at `offset` of the remote side with the pattern (as at that offset).
pub(super) fn fill(remote: &FreshPages, offset: usize, len: usize) {
    let bytes: Vec<u8> = (offset..offset + len)
        .map(|i| pattern_byte(SEED, i))
        .collect();
    remote.write(offset, &bytes);
}

/// Whether READ's `len` bytes at `local_at` are those at `remote_at` of the remote side.
pub(super) fn arrived(local: &FreshPages, local_at: usize, remote_at: usize, len: usize) -> bool {
    let mut got = vec![0u8; len];
    local.read(local_at, &mut got);
    (0..len).all(|i| got[i] == pattern_byte(SEED, remote_at + i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wc(wr_id: u64) -> ibv_wc {
        ibv_wc {
            wr_id,
            ..Default::default()
        }
    }

    #[test]
    fn times_run_from_the_first_post_to_the_last_completion() {
        let t0 = Instant::now();
        let at = |us: u64| t0 + Duration::from_micros(us);
        let mut r = Reads::new(2);
        r.posted(0, at(0));
        r.posted(1, at(500));
        assert_eq!(r.pending(), 2);
        r.absorb(&[wc(0)], at(40)).unwrap();
        assert_eq!((r.pending(), r.first_pending()), (1, 2));
        // A repeated completion id is not counted twice.
        r.absorb(&[wc(0)], at(45)).unwrap();
        assert_eq!(r.pending(), 1);
        r.absorb(&[wc(1)], at(300_500)).unwrap();
        let (elapsed, slowest) = r.times_us();
        assert!((elapsed - 300_500.0).abs() < 1.0, "{elapsed}");
        assert!((slowest - 300_000.0).abs() < 1.0, "{slowest}");
        assert!((r.read_us(0).unwrap() - 40.0).abs() < 1.0);
    }

    #[test]
    fn a_completion_of_no_posted_read_is_an_error_not_an_index() {
        let t0 = Instant::now();
        let mut r = Reads::new(2);
        r.posted(0, t0);
        r.posted(1, t0);
        assert_eq!(r.absorb(&[wc(0), wc(7), wc(1)], t0), Err(7));
        // The completion before the stray one counts; the one after it was not reached.
        assert_eq!((r.pending(), r.first_pending()), (1, 2));
        assert_eq!(r.absorb(&[wc(u64::MAX)], t0), Err(u64::MAX));
        let label = Label {
            point: "damming interval 500 us".into(),
            device: "mlx5_0".into(),
        };
        let err = r.absorb_labelled(&[wc(2)], t0, &label).unwrap_err();
        assert_eq!(
            err.to_string(),
            "damming interval 500 us on mlx5_0: a completion for work request 2, which is \
             none of the 2 READs posted"
        );
    }

    #[test]
    fn the_check_finds_a_byte_that_did_not_arrive() {
        let remote = FreshPages::map(8192).unwrap();
        let local = FreshPages::map(8192).unwrap();
        fill(&remote, 4096, 100);
        let mut bytes = vec![0u8; 100];
        remote.read(4096, &mut bytes);
        local.write(4096, &bytes);
        assert!(arrived(&local, 4096, 4096, 100));
        // The right bytes at the wrong place (what rxe's ODP did, see flood.rs).
        assert!(!arrived(&local, 4096, 4000, 100));
        local.write(4096 + 99, &[bytes[99] ^ 1]);
        assert!(!arrived(&local, 4096, 4096, 100));
    }
}
