//! What the NIC of a node running a rank keeps: its job, rank and node, the messages it has
//! received, and where it stands in its program. The NIC's logic (`nic`) works on it; the
//! engine holds one per rank.

/// One rank's NIC.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Nic {
    pub(super) job: u16,
    pub(super) rank: u32,
    pub(super) node: u32,
    /// Whole messages received since the start.
    pub(super) received: u64,
    pub(super) state: NicState,
}

/// Where a NIC stands in its rank's program.
#[derive(Copy, Clone, Debug)]
pub(super) enum NicState {
    /// The program decides what comes next.
    NextOp,
    Awaiting {
        total: u64,
    },
    Sending {
        /// Entry in the message pool (`NIL` for a one-packet message).
        message: u32,
        receiver: u32,
        ready_ps: u64,
        bytes_left: u64,
        packets_left: u64,
    },
    Done,
}

impl Nic {
    pub fn new(job: u16, rank: u32, node: u32) -> Self {
        Nic {
            job,
            rank,
            node,
            received: 0,
            state: NicState::NextOp,
        }
    }
}
