//! Uniform random traffic, the background application of thesis 4.4: every message goes to
//! a rank drawn uniformly from the others. Sends form a Poisson process per rank whose mean
//! rate offers `load` of the link: the mean gap is the time the message takes at
//! `load * link_gbps`. Randomness comes from the rng the engine passes, so a seeded run is
//! reproducible.

use super::units::transfer_ps;
use rand::{Rng, RngCore};
use rand_distr::{Distribution, Exp};

use super::{Op, Program};

/// Stops a rank after `messages` sends or at the first send due after `end_ps`, whichever
/// comes first (at least one of the two is set).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Uniform {
    /// Ranks of the job.
    pub ranks: u32,
    /// Bytes of each message.
    pub bytes: u64,
    /// Offered load as a fraction of `link_gbps`, in (0, 1].
    pub load: f64,
    /// Link rate the load is a fraction of, Gb/s.
    pub link_gbps: f64,
    /// No send is due after this simulated time, ps.
    pub end_ps: Option<u64>,
    /// Sends per rank.
    pub messages: Option<u64>,
}

impl Uniform {
    /// Message size when none is given: 128 KiB, the thesis' 4.4 messages.
    pub const DEFAULT_BYTES: u64 = 128 * 1024;

    /// Mean time between two sends of one rank: a message at `load` of the link's rate.
    pub fn mean_gap_ps(&self) -> f64 {
        transfer_ps(self.bytes as f64, self.load * self.link_gbps)
    }

    pub(crate) fn program(&self) -> UniformProgram {
        UniformProgram {
            spec: *self,
            gaps: Exp::new(1.0 / self.mean_gap_ps()).expect("load and rate are positive"),
            clock_ps: vec![0.0; self.ranks as usize],
            sent: vec![0; self.ranks as usize],
            finished: vec![false; self.ranks as usize],
        }
    }
}

pub struct UniformProgram {
    spec: Uniform,
    gaps: Exp<f64>,
    /// Time of each rank's last send, unrounded so that rounding does not accumulate.
    clock_ps: Vec<f64>,
    sent: Vec<u64>,
    finished: Vec<bool>,
}

impl Program for UniformProgram {
    fn next_op(&mut self, rank: u32, rng: &mut dyn RngCore) -> Option<Op> {
        let r = rank as usize;
        // A lone rank has no other rank to send to.
        let done = self.spec.ranks < 2 || self.spec.messages.is_some_and(|m| self.sent[r] >= m);
        if *self.finished.get(r)? || done {
            return None;
        }
        let at = self.clock_ps[r] + self.gaps.sample(rng);
        if self.spec.end_ps.is_some_and(|end| at > end as f64) {
            // Once past the end the rank stays finished: asking again must not draw a
            // shorter gap.
            self.finished[r] = true;
            return None;
        }
        let other = rng.gen_range(0..self.spec.ranks - 1);
        self.clock_ps[r] = at;
        self.sent[r] += 1;
        Some(Op::Send {
            dst: if other >= rank { other + 1 } else { other },
            bytes: self.spec.bytes,
            not_before_ps: at.round() as u64,
        })
    }
}
