//! The ring exchange of thesis 4.4, the primary application: rank i sends to rank
//! i - 1 (mod R). Every rank receives from exactly one sender, so it cannot cause endpoint
//! congestion; with a row-major mapping it is also almost entirely leaf-local.

use super::script::Script;
use super::Op;

/// Each round: send `bytes` to the left neighbour, then wait for the right neighbour's
/// message of that round.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Ring {
    /// Ranks in the ring.
    pub ranks: u32,
    /// Bytes of each message.
    pub bytes: u64,
    /// Rounds: each rank sends this many messages.
    pub rounds: u32,
}

impl Ring {
    /// Message size when none is given: 128 KiB (thesis 4.4).
    pub const DEFAULT_BYTES: u64 = 128 * 1024;

    /// The rank `rank` sends to: `rank - 1 (mod ranks)`.
    pub fn left_of(&self, rank: u32) -> u32 {
        (rank + self.ranks - 1) % self.ranks
    }
}

impl Script for Ring {
    fn ranks(&self) -> u32 {
        self.ranks
    }

    fn op(&self, rank: u32, index: u64) -> Option<Op> {
        let round = index / 2;
        // A lone rank has no neighbour to send to.
        if round >= u64::from(self.rounds) || self.ranks < 2 {
            return None;
        }
        Some(if index % 2 == 0 {
            Op::Send {
                dst: self.left_of(rank),
                bytes: self.bytes,
                not_before_ps: 0,
            }
        } else {
            Op::AwaitReceived { total: round + 1 }
        })
    }
}
