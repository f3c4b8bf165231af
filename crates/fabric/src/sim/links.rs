//! Everything the engine keeps per link, two cache lines each, laid out by who reads what
//! together: the first line is what sending looks at (when the link is free, the sender's
//! pending wake-up, the output queue and the inputs blocked on it, the flow control routing
//! does not read), the second what a hop updates once (the ground-truth counters of the
//! port, and the input buffer at the link's far end with its receive counters). A hop then touches its packet, the line
//! pair of the link it came in on and the pair of the port it leaves by. What adaptive
//! routing compares for every up port (credits, queue bytes, the next credit return) is kept
//! apart in [`Links::flows`], 16 bytes a link, so that scanning a switch's up ports reads a
//! few consecutive lines rather than one line per port.
//!
//! Links are numbered like [`super::wiring::Wiring`]'s: switch ports, then node injection
//! links (which use the flow control, the busy time and the wake-up only).
//!
//! The state kept here, the flow control's ([`Flow`], [`Returns`]) and the input buffer's
//! ([`InputBuffer`]), is worked on by `credits` and `switch`; it is declared here, below
//! them and the engine, so that each of them uses it without using the others.

use std::collections::VecDeque;

use super::packets::{Fifo, NIL};
use super::prefetch::prefetch;
use super::wiring::FarEnd;

#[derive(Copy, Clone, Debug)]
#[repr(C, align(128))]
pub(crate) struct Link {
    /// Flow control not read by routing (routing's part is in [`Links::flows`]).
    pub returns: Returns,
    /// The link serialises a packet until then.
    pub busy_until: u64,
    /// Time of the pending wake event of the sender (`u64::MAX`: none).
    pub wake_at: u64,
    pub queue: Fifo,
    /// Input buffers (by link) whose head waits for room in the queue, first blocked first.
    pub blocked_head: u32,
    pub blocked_tail: u32,
    /// Packets that entered the output queue, those marked congested, their bytes, and the
    /// time spent transmitting (ground truth, all jobs together; `tally` splits them by job
    /// when there are several).
    pub packets: u64,
    pub congested: u64,
    pub bytes: u64,
    pub busy_ps: u64,
    /// The buffer at the far end (unused for links into nodes).
    pub input: InputBuffer,
    /// What has arrived whole in that buffer (the far port's PortRcvData and PortRcvPkts,
    /// `counters`), in the line `arrive` updates anyway.
    pub rcv_bytes: u64,
    pub rcv_packets: u64,
}

const _: () = assert!(std::mem::size_of::<Link>() == 128);

impl Link {
    /// A link before any run: idle, nothing queued or counted, `input` empty.
    fn idle(input: InputBuffer) -> Self {
        Link {
            returns: Returns::default(),
            busy_until: 0,
            wake_at: u64::MAX,
            queue: Fifo::EMPTY,
            blocked_head: NIL,
            blocked_tail: NIL,
            packets: 0,
            congested: 0,
            bytes: 0,
            busy_ps: 0,
            input,
            rcv_bytes: 0,
            rcv_packets: 0,
        }
    }
}

pub(crate) struct Links {
    pub(super) items: Vec<Link>,
    /// Per link, what adaptive routing compares (see `credits`).
    pub(super) flows: Vec<Flow>,
    /// Credit returns in flight behind the first one, per link (see `credits`).
    pub(super) spills: Vec<VecDeque<(u64, u32)>>,
    /// Links into switches with a credit return in flight (see `credits`). Routing compares
    /// only such links (a switch's up ports); while there are none, as when links have no
    /// propagation delay, it need not look for returns to fold in.
    pub(super) switch_returns: u32,
    pub(super) buffer_units: u32,
}

impl Links {
    /// `inputs`: the buffer at the far end of each link.
    pub fn new(inputs: impl IntoIterator<Item = InputBuffer>, buffer_units: u32) -> Self {
        let items: Vec<Link> = inputs.into_iter().map(Link::idle).collect();
        Links {
            flows: vec![Flow::new(buffer_units); items.len()],
            // Built, not cloned: `vec![x; n]` clones an empty deque n times, a tenth of a
            // short probe's run on a large tree (issue 38's 256 hosts of full-891).
            spills: std::iter::repeat_with(VecDeque::new)
                .take(items.len())
                .collect(),
            items,
            switch_returns: 0,
            buffer_units,
        }
    }

    /// Puts `link` back as [`Links::new`] made it, its far-end buffer `input`: what a
    /// prepared simulator does to the links a run used before the next run.
    pub fn reset(&mut self, link: u32, input: InputBuffer) {
        self.items[link as usize] = Link::idle(input);
        self.flows[link as usize] = Flow::new(self.buffer_units);
        self.spills[link as usize].clear();
    }

    pub fn iter(&self) -> impl Iterator<Item = &Link> {
        self.items.iter()
    }

    /// Starts loading both lines of a link (see [`prefetch`]).
    #[inline]
    pub fn prefetch(&self, link: u32) {
        let link = &self.items[link as usize];
        prefetch(link);
        prefetch(&link.packets);
    }
}

impl std::ops::Index<u32> for Links {
    type Output = Link;
    #[inline]
    fn index(&self, link: u32) -> &Link {
        &self.items[link as usize]
    }
}

impl std::ops::IndexMut<u32> for Links {
    #[inline]
    fn index_mut(&mut self, link: u32) -> &mut Link {
        &mut self.items[link as usize]
    }
}

/// The part of a link's flow control that routing reads.
#[derive(Copy, Clone, Debug)]
#[repr(C)]
pub(crate) struct Flow {
    /// Time of the earliest return in flight (`u64::MAX`: none).
    pub(super) next_return_ps: u64,
    /// Credits in hand: flow units free in the far buffer, as far as the sender knows.
    pub(super) credits: u32,
    /// Bytes in the sender's output queue (switch ports; 0 for injection links).
    pub(super) queue_bytes: u32,
}

const _: () = assert!(std::mem::size_of::<Flow>() == 16);

impl Flow {
    /// A link's flow control at the start: a full buffer's worth of credits.
    pub fn new(buffer_units: u32) -> Self {
        Flow {
            next_return_ps: u64::MAX,
            credits: buffer_units,
            queue_bytes: 0,
        }
    }
}

/// The rest of a link's flow control, in its [`Link`] record.
#[derive(Copy, Clone, Debug, Default)]
#[repr(C)]
pub(crate) struct Returns {
    /// Units of the earliest return in flight.
    pub(super) next_return_units: u32,
    /// Returns in flight after the first, in the link's spill FIFO (a buffer forwards about a
    /// packet per serialisation and returns travel one link latency: a few at a time).
    pub(super) spilled: u16,
    /// The head of the output queue is waiting for credits with the link idle: XmitWait is
    /// running (`counters`). Here because `transmit` reads this line anyway.
    pub waiting: bool,
    /// Units the stalled head packet needs when the returns in flight do not cover them
    /// (0: not stalled that way).
    pub(super) stalled_on: u32,
    pub(super) peak_queue_bytes: u32,
}

impl Returns {
    /// The most the output queue held.
    pub fn peak_queue_bytes(&self) -> u32 {
        self.peak_queue_bytes
    }
}

/// Why a sender could not take credits, and what to wait for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Stall {
    /// Returns in flight cover the packet from this time on.
    Until(u64),
    /// Not until the far buffer forwards more packets; [`Links::give_back`] will say when.
    Unknown,
}

/// The input buffer at the far end of a link, at a switch port (the switch's logic,
/// `switch`, moves its packets on).
#[derive(Copy, Clone, Debug)]
#[repr(C)]
pub(crate) struct InputBuffer {
    /// Packets past the switch latency, in arrival order.
    pub(super) fifo: Fifo,
    /// The switch it belongs to (`NIL` for a link into a node, which has none).
    pub(super) switch: u32,
    /// The output port the head waits for room in (`NIL`: not blocked).
    pub(super) blocked_on: u32,
    /// The next input buffer blocked on the same port.
    pub(super) next_blocked: u32,
    /// Flow units held.
    pub(super) units: u32,
    pub(super) peak_units: u32,
}

impl InputBuffer {
    /// The buffer at the far end of a link.
    pub fn new(far_end: FarEnd) -> Self {
        InputBuffer {
            fifo: Fifo::EMPTY,
            switch: match far_end {
                FarEnd::Switch(s) => s,
                FarEnd::Node(_) => NIL,
            },
            blocked_on: NIL,
            next_blocked: NIL,
            units: 0,
            peak_units: 0,
        }
    }

    /// The switch the buffer belongs to (`NIL` for a link into a node).
    #[inline]
    pub fn switch(&self) -> u32 {
        self.switch
    }

    /// The most flow units the buffer held.
    pub fn peak_units(&self) -> u32 {
        self.peak_units
    }
}
