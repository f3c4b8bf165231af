//! The 2-D stencil of thesis 4.2: a `width x height` grid of ranks, numbered row-major
//! (rank = y * width + x), each exchanging boundary values with its logical neighbours.

use super::script::Script;
use super::Op;

/// Each rank sends `bytes` to each neighbour in a fixed phase order, +x, -x, +y, -y, then waits
/// for its neighbours' messages of that round before the next one, as an iterative solver
/// must. Ranks on the edge of the domain "simply wait instead of sending to a neighbor outside
/// of the problem domain" (thesis 4.2): with `phase_ps` set to the time one message takes at
/// line rate, phase p of round r starts no earlier than (4r + p) x `phase_ps`, so an edge rank
/// lets the phase it has no neighbour for pass instead of starting the next one early and
/// piling a second message onto a neighbour that is still receiving. (The times count from
/// the start of the run, so they are exact for the first round and a lower bound after.) The
/// thesis runs one round of 64 x 72 ranks; 128 KiB per message fits its Table 4.1 times
/// (4 x 128 KiB at 100 Gb/s is about 42 us, against its best 44 us).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Stencil {
    /// Ranks along x.
    pub width: u32,
    /// Ranks along y.
    pub height: u32,
    /// Bytes of each message.
    pub bytes: u64,
    /// Rounds of the exchange.
    pub rounds: u32,
    /// Pacing of the phases (see above); 0 paces nothing.
    pub phase_ps: u64,
}

impl Stencil {
    /// The thesis' grid width (4.2).
    pub const THESIS_WIDTH: u32 = 64;
    /// The thesis' grid height.
    pub const THESIS_HEIGHT: u32 = 72;
    /// Message size when none is given: 128 KiB, which fits Table 4.1's times.
    pub const DEFAULT_BYTES: u64 = 128 * 1024;

    /// Ranks in the grid: `width x height`.
    pub fn ranks(&self) -> u32 {
        self.width * self.height
    }

    /// The neighbours of `rank` in phase order (+x, -x, +y, -y), missing ones left out.
    pub fn neighbours(&self, rank: u32) -> impl Iterator<Item = u32> {
        self.phase_neighbours(rank).into_iter().flatten()
    }

    /// The neighbour in each phase's direction (+x, -x, +y, -y), if any.
    fn phase_neighbours(&self, rank: u32) -> [Option<u32>; 4] {
        let (x, y) = (rank % self.width, rank / self.width);
        let w = self.width;
        [
            (x + 1 < w).then(|| rank + 1),
            (x > 0).then(|| rank - 1),
            (y + 1 < self.height).then(|| rank + w),
            (y > 0).then(|| rank - w),
        ]
    }

    /// One round of `rank`'s operations: its sends, paced by phase, then the wait for the
    /// round's messages (counted since the start).
    fn round_ops(&self, rank: u32, round: u64) -> Vec<Op> {
        let neighbours = self.phase_neighbours(rank);
        let degree = neighbours.iter().flatten().count() as u64;
        let mut ops: Vec<Op> = neighbours
            .iter()
            .enumerate()
            .filter_map(|(phase, to)| {
                to.map(|dst| Op::Send {
                    dst,
                    bytes: self.bytes,
                    not_before_ps: (4 * round + phase as u64) * self.phase_ps,
                })
            })
            .collect();
        ops.push(Op::AwaitReceived {
            total: (round + 1) * degree,
        });
        ops
    }
}

impl Script for Stencil {
    fn ranks(&self) -> u32 {
        Stencil::ranks(self)
    }

    fn op(&self, rank: u32, index: u64) -> Option<Op> {
        let neighbours = self.phase_neighbours(rank).iter().flatten().count() as u64;
        if neighbours == 0 {
            return None;
        }
        let per_round = neighbours + 1;
        let round = index / per_round;
        if round >= u64::from(self.rounds) {
            return None;
        }
        self.round_ops(rank, round)
            .get((index % per_round) as usize)
            .copied()
    }
}
