//! A job's traffic as the what-if replays it: the collective or the workload file over the
//! job's hosts in rank order, each host's share split evenly over its rails.
//!
//! NCCL's rail-optimised collectives run one ring or tree per rail: rank i's RNIC r talks
//! to RNIC r of its neighbours only, so each rail carries `1 / rails` of every message.

use fabric::traffic::{
    CommMatrix, Op, Program, Reduction, ReductionKind, Ring, Workload, WorkloadFile,
};
use rand::RngCore;

/// Pieces a tree all-reduce is pipelined in: NCCL cuts its buffer into slices and a rank
/// forwards slice k while it receives slice k + 1 (NCCL's default 4 MiB buffer in 8 slices).
pub const TREE_SLICE_BYTES: u64 = 512 * 1024;

/// What the job sends, rank by rank (rank = the job's host in placement order).
#[derive(Clone, Debug, PartialEq)]
pub enum JobTraffic {
    /// NCCL's ring all-reduce of `bytes`: 2 (n - 1) steps of `bytes / n`, each rank sending
    /// to its neighbour in rank order (a reduce-scatter then an all-gather).
    RingAllReduce {
        /// The buffer reduced, bytes.
        bytes: u64,
    },
    /// A tree all-reduce of `bytes`: a binomial-tree reduce to rank 0 then a broadcast back
    /// down the same tree (MPI's classic, thesis 4.3's tree), pipelined in slices of
    /// [`TREE_SLICE_BYTES`]. Rank 0's link carries log2(n) times the buffer each way: a
    /// pattern no mapping helps.
    TreeAllReduce {
        /// The buffer reduced, bytes.
        bytes: u64,
    },
    /// Any traffic, as a workload file of `fabric` (`time source destination bytes`).
    File(WorkloadFile),
}

impl JobTraffic {
    /// `ring all-reduce of 64 MiB over 16 ranks`.
    pub fn describe(&self, ranks: usize) -> String {
        match self {
            JobTraffic::RingAllReduce { bytes } => {
                format!("ring all-reduce of {} over {ranks} ranks", size(*bytes))
            }
            JobTraffic::TreeAllReduce { bytes } => {
                format!("tree all-reduce of {} over {ranks} ranks", size(*bytes))
            }
            JobTraffic::File(file) => format!(
                "workload file {} ({} messages over {ranks} ranks)",
                file.path.display(),
                file.messages()
            ),
        }
    }

    /// Ranks the traffic needs, when it fixes them (a workload file does).
    pub fn ranks(&self) -> Option<usize> {
        match self {
            JobTraffic::File(file) => Some(file.ranks() as usize),
            _ => None,
        }
    }

    /// Each rank's operations over `ranks` ranks, whole messages (one rail's share is cut
    /// from them by [`RailShare`]).
    pub(crate) fn program(&self, ranks: u32) -> Box<dyn Program> {
        match self {
            JobTraffic::RingAllReduce { bytes } => Workload::Ring(ring(ranks, *bytes)).program(),
            JobTraffic::TreeAllReduce { bytes } => Box::new(Ops::new(tree_ops(ranks, *bytes))),
            JobTraffic::File(file) => Workload::File(file.clone()).program(),
        }
    }

    /// Bytes and packets between ranks over the whole job, all rails together.
    pub(crate) fn matrix(&self, ranks: u32, packet_bytes: u32) -> CommMatrix {
        let workload = match self {
            JobTraffic::RingAllReduce { bytes } => Workload::Ring(ring(ranks, *bytes)),
            JobTraffic::File(file) => Workload::File(file.clone()),
            JobTraffic::TreeAllReduce { bytes } => {
                let sends =
                    tree_ops(ranks, *bytes)
                        .into_iter()
                        .enumerate()
                        .flat_map(|(src, ops)| {
                            ops.into_iter().filter_map(move |op| match op {
                                Op::Send { dst, bytes, .. } => Some((src as u32, dst, bytes)),
                                Op::AwaitReceived { .. } => None,
                            })
                        });
                return CommMatrix::from_messages(ranks, sends, packet_bytes);
            }
        };
        workload
            .matrix(packet_bytes)
            .expect("a collective or a workload file has a fixed matrix")
    }

    /// The typical message a rank sends, bytes (a ring step, a tree slice, a file's mean).
    pub(crate) fn message_bytes(&self, ranks: u32) -> u64 {
        match self {
            JobTraffic::RingAllReduce { bytes } => ring(ranks, *bytes).bytes,
            JobTraffic::TreeAllReduce { bytes } => (*bytes).min(TREE_SLICE_BYTES),
            JobTraffic::File(file) => {
                let matrix = Workload::File(file.clone())
                    .matrix(1)
                    .expect("a workload file has a fixed matrix");
                let total: u64 = matrix.flows().iter().map(|f| f.bytes).sum();
                total / file.messages().max(1) as u64
            }
        }
    }
}

/// `64 MiB`, `512 KiB`, `100 B`.
fn size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    UNITS
        .iter()
        .find(|(unit, _)| bytes >= *unit && bytes.is_multiple_of(*unit))
        .map_or(format!("{bytes} B"), |(unit, name)| {
            format!("{} {name}", bytes / unit)
        })
}

/// The ring all-reduce as thesis 4.4's ring: 2 (n - 1) rounds of one n-th of the buffer.
fn ring(ranks: u32, bytes: u64) -> Ring {
    Ring {
        ranks,
        bytes: bytes.div_ceil(u64::from(ranks.max(1))).max(1),
        rounds: 2 * ranks.saturating_sub(1),
    }
}

/// Each rank's ops for the tree all-reduce. Reduce, slice by slice: wait for every child's
/// slice, send the sum to the parent. Broadcast, slice by slice: wait for the parent's
/// slice, pass it to every child. The engine counts messages, not their senders, so each
/// wait is a running total.
fn tree_ops(ranks: u32, bytes: u64) -> Vec<Vec<Op>> {
    let slices = bytes.div_ceil(TREE_SLICE_BYTES).max(1);
    let slice = bytes.div_ceil(slices).max(1);
    let tree = Reduction {
        kind: ReductionKind::Tree,
        ranks,
        arrays: slices as u32,
        bytes: slice,
        root: 0,
    };
    let send = |dst| Op::Send {
        dst,
        bytes: slice,
        not_before_ps: 0,
    };
    (0..ranks)
        .map(|rank| {
            let parent = tree.parent(rank);
            let children = tree.children(rank);
            let fan_in = children.len() as u64;
            let mut ops = Vec::new();
            for k in 0..slices {
                if fan_in > 0 {
                    ops.push(Op::AwaitReceived {
                        total: (k + 1) * fan_in,
                    });
                }
                ops.extend(parent.map(send));
            }
            for k in 0..slices {
                if parent.is_some() {
                    ops.push(Op::AwaitReceived {
                        total: slices * fan_in + k + 1,
                    });
                }
                ops.extend(children.iter().map(|&child| send(child)));
            }
            ops
        })
        .collect()
}

/// A program given as each rank's list of ops.
struct Ops {
    ops: Vec<Vec<Op>>,
    next: Vec<usize>,
}

impl Ops {
    fn new(ops: Vec<Vec<Op>>) -> Ops {
        let next = vec![0; ops.len()];
        Ops { ops, next }
    }
}

impl Program for Ops {
    fn next_op(&mut self, rank: u32, _: &mut dyn RngCore) -> Option<Op> {
        let rank = rank as usize;
        let op = self.ops.get(rank)?.get(self.next[rank]).copied();
        self.next[rank] += 1;
        op
    }
}

/// One rail's share of a job's program: every message cut to `1 / rails` of its bytes, and
/// nothing sent before `start_ps` (when other jobs' traffic has settled).
pub(crate) struct RailShare {
    pub inner: Box<dyn Program>,
    pub rails: u64,
    pub start_ps: u64,
}

impl Program for RailShare {
    fn next_op(&mut self, rank: u32, rng: &mut dyn RngCore) -> Option<Op> {
        Some(match self.inner.next_op(rank, rng)? {
            Op::Send {
                dst,
                bytes,
                not_before_ps,
            } => Op::Send {
                dst,
                bytes: bytes.div_ceil(self.rails).max(1),
                not_before_ps: not_before_ps + self.start_ps,
            },
            wait => wait,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_all_reduce_sends_two_n_minus_one_nths_of_the_buffer_per_rank() {
        let traffic = JobTraffic::RingAllReduce { bytes: 16 << 20 };
        let matrix = traffic.matrix(16, 4096);
        let sent: u64 = matrix.flows().iter().map(|f| f.bytes).sum();
        assert_eq!(sent, 16 * 2 * 15 * (1 << 20));
        assert_eq!(matrix.flows().len(), 16);
    }

    #[test]
    fn a_tree_all_reduce_moves_the_buffer_up_and_down_every_tree_edge() {
        let bytes = 4 << 20;
        let matrix = JobTraffic::TreeAllReduce { bytes }.matrix(16, 4096);
        // 15 edges, each carrying the buffer up and back down.
        assert_eq!(matrix.flows().len(), 30);
        assert!(matrix.flows().iter().all(|f| f.bytes == bytes));
        // Rank 0 receives from log2(16) = 4 children.
        assert_eq!(matrix.flows().iter().filter(|f| f.dst == 0).count(), 4);
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size(64 << 20), "64 MiB");
        assert_eq!(size(512 << 10), "512 KiB");
        assert_eq!(size(1000), "1000 B");
    }
}
