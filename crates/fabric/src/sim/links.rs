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

use std::collections::VecDeque;

use super::credits::{Flow, Returns};
use super::packets::{Fifo, NIL};
use super::switch::InputBuffer;

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

pub(crate) struct Links {
    pub(super) items: Vec<Link>,
    /// Per link, what adaptive routing compares (see `credits`).
    pub(super) flows: Vec<Flow>,
    /// Credit returns in flight behind the first one, per link (see `credits`).
    pub(super) spills: Vec<VecDeque<(u64, u32)>>,
    pub(super) buffer_units: u32,
}

impl Links {
    /// `inputs`: the buffer at the far end of each link.
    pub fn new(inputs: impl IntoIterator<Item = InputBuffer>, buffer_units: u32) -> Self {
        let items: Vec<Link> = inputs
            .into_iter()
            .map(|input| Link {
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
            })
            .collect();
        Links {
            flows: vec![Flow::new(buffer_units); items.len()],
            spills: vec![VecDeque::new(); items.len()],
            items,
            buffer_units,
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &Link> {
        self.items.iter()
    }

    /// Starts loading both lines of a link (see [`super::engine::prefetch`]).
    #[inline]
    pub fn prefetch(&self, link: u32) {
        let link = &self.items[link as usize];
        super::engine::prefetch(link);
        super::engine::prefetch(&link.packets);
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
