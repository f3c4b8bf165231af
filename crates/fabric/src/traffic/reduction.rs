//! The reduction of thesis 4.3: `ranks` ranks combine `arrays` arrays of `bytes` each at
//! `root` (1024 ranks, 50 arrays of 1024 integers = 4 KiB, root 0, on the `full` tree).

use super::script::Script;
use super::Op;

/// How the ranks combine their arrays at the root (thesis 4.3).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ReductionKind {
    /// Every rank sends each array straight to the root: the hotspot whose endpoint
    /// congestion no mapping can remove (Theorem 4.1).
    Naive,
    /// A binomial tree per array, as MPI_Reduce implementations do (thesis [74]): a rank
    /// waits for its children's contributions to array k, then sends the combined array to
    /// its parent. About as many messages, but spread over time and receivers.
    Tree,
}

/// Ops per rank. Naive: a non-root rank sends its `arrays` messages; the root waits for all
/// `(ranks - 1) * arrays` of them. Tree, for each array k: wait until `(k + 1) * children`
/// messages have arrived (the engine counts messages, not their sources, so a fast child's
/// array k + 1 may stand in for a slow child's array k: it only makes the wait end a little
/// early), then send to the parent (not the root).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Reduction {
    /// Naive or tree.
    pub kind: ReductionKind,
    /// Ranks taking part.
    pub ranks: u32,
    /// Arrays each rank contributes.
    pub arrays: u32,
    /// Bytes of each array.
    pub bytes: u64,
    /// The rank the arrays are combined at.
    pub root: u32,
}

impl Reduction {
    /// The thesis' ranks (4.3).
    pub const THESIS_RANKS: u32 = 1024;
    /// The thesis' arrays per rank.
    pub const THESIS_ARRAYS: u32 = 50;
    /// The thesis' array size: 1024 integers, 4 KiB.
    pub const THESIS_BYTES: u64 = 4096;

    /// Rank numbering relative to the root, where the binomial tree is rooted at 0.
    fn relative(&self, rank: u32) -> u32 {
        (rank + self.ranks - self.root) % self.ranks
    }

    fn absolute(&self, relative: u32) -> u32 {
        (relative + self.root) % self.ranks
    }

    /// Where `rank` sends each array: the root for the naive pattern; in the binomial tree
    /// the rank that clears the lowest set bit of its relative number. `None` for the root.
    pub fn parent(&self, rank: u32) -> Option<u32> {
        let v = self.relative(rank);
        if v == 0 {
            return None;
        }
        Some(match self.kind {
            ReductionKind::Naive => self.root,
            ReductionKind::Tree => self.absolute(v & (v - 1)),
        })
    }

    /// The ranks that send to `rank`, in the order MPI's binomial reduce receives them
    /// (increasing distance `2^j` for every `2^j` below the lowest set bit of `rank`).
    pub fn children(&self, rank: u32) -> Vec<u32> {
        let v = self.relative(rank);
        match self.kind {
            ReductionKind::Naive if v == 0 => (0..self.ranks).filter(|&r| r != rank).collect(),
            ReductionKind::Naive => Vec::new(),
            ReductionKind::Tree => {
                let lowest_bit = if v == 0 {
                    u64::MAX
                } else {
                    u64::from(v & v.wrapping_neg())
                };
                (0..32)
                    .map(|j| 1u64 << j)
                    .take_while(|&mask| {
                        mask < lowest_bit && u64::from(v) + mask < u64::from(self.ranks)
                    })
                    .map(|mask| self.absolute(v + mask as u32))
                    .collect()
            }
        }
    }
}

impl Script for Reduction {
    fn ranks(&self) -> u32 {
        self.ranks
    }

    fn op(&self, rank: u32, index: u64) -> Option<Op> {
        let arrays = u64::from(self.arrays);
        let children = self.children(rank).len() as u64;
        let send = self.parent(rank).map(|dst| Op::Send {
            dst,
            bytes: self.bytes,
            not_before_ps: 0,
        });
        match self.kind {
            ReductionKind::Naive => match send {
                Some(send) => (index < arrays).then_some(send),
                None => (index == 0 && children > 0).then_some(Op::AwaitReceived {
                    total: children * arrays,
                }),
            },
            ReductionKind::Tree => {
                let waits = u64::from(children > 0);
                let per_array = waits + u64::from(send.is_some());
                if per_array == 0 || index >= per_array * arrays {
                    return None;
                }
                let (array, step) = (index / per_array, index % per_array);
                if step < waits {
                    Some(Op::AwaitReceived {
                        total: (array + 1) * children,
                    })
                } else {
                    send
                }
            }
        }
    }
}
