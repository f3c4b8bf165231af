//! Credit-based flow control on every link (thesis 3.5 and codes-peer.md): a sender holds
//! credits for the free flow units of the buffer at the far end, spends them when it starts a
//! packet, and gets them back one link latency after the packet leaves that buffer.
//!
//! Returns are applied lazily: a return is a (time, units) entry folded into the credits in
//! hand the next time anyone looks at the link, so the common case costs no event; only a
//! sender stalled on credits gets a wake-up, at the return that lets it go. The first return
//! in flight sits in the link's [`Flow`], on the line routing reads anyway; the ones behind it
//! (rare: a buffer forwards about one packet per serialisation time, and returns are in
//! flight for one link latency) spill into a FIFO.

use super::links::Links;

#[derive(Copy, Clone, Debug)]
#[repr(C)]
pub(crate) struct Flow {
    /// Time of the earliest return in flight (`u64::MAX`: none).
    next_return_ps: u64,
    next_return_units: u32,
    /// Credits in hand: flow units free in the far buffer, as far as the sender knows.
    credits: u32,
    /// Bytes in the sender's output queue (switch ports; 0 for injection links).
    queue_bytes: u32,
    /// Returns in flight after the first, in the link's spill FIFO.
    spilled: u32,
    /// Units the stalled head packet needs when the returns in flight do not cover them
    /// (0: not stalled that way).
    stalled_on: u32,
    peak_queue_bytes: u32,
}

impl Flow {
    /// A link's flow control at the start: a full buffer's worth of credits.
    pub fn new(buffer_units: u32) -> Self {
        Flow {
            next_return_ps: u64::MAX,
            next_return_units: 0,
            credits: buffer_units,
            queue_bytes: 0,
            spilled: 0,
            stalled_on: 0,
            peak_queue_bytes: 0,
        }
    }

    #[inline]
    pub fn queue_bytes(&self) -> u32 {
        self.queue_bytes
    }

    #[inline]
    pub fn set_queue_bytes(&mut self, bytes: u32) {
        self.queue_bytes = bytes;
        self.peak_queue_bytes = self.peak_queue_bytes.max(bytes);
    }

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

impl Links {
    /// Credits in hand at `now`, after folding in the returns that have arrived.
    #[inline]
    pub fn available(&mut self, link: u32, now: u64) -> u32 {
        let flow = &mut self[link].flow;
        if flow.next_return_ps <= now {
            if flow.spilled == 0 {
                // The common case: one return in flight, and it has arrived.
                flow.credits += flow.next_return_units;
                flow.next_return_ps = u64::MAX;
            } else {
                self.absorb(link, now);
            }
        }
        self[link].flow.credits
    }

    /// Output queue bytes plus flow units the far buffer holds or will hold for this sender
    /// (spent and not yet given back), in bytes: the load adaptive routing compares.
    #[inline]
    pub fn load_bytes(&mut self, link: u32, now: u64, unit_bytes: u32) -> u64 {
        let outstanding = self.buffer_units - self.available(link, now);
        u64::from(self[link].flow.queue_bytes) + u64::from(outstanding) * u64::from(unit_bytes)
    }

    fn absorb(&mut self, link: u32, now: u64) {
        let spill = &mut self.spills[link as usize];
        let flow = &mut self.items[link as usize].flow;
        while flow.next_return_ps <= now {
            flow.credits += flow.next_return_units;
            (flow.next_return_ps, flow.next_return_units) = if flow.spilled > 0 {
                flow.spilled -= 1;
                spill.pop_front().expect("spilled return")
            } else {
                (u64::MAX, 0)
            };
        }
        debug_assert!(
            flow.credits <= self.buffer_units,
            "link {link}: credits over buffer"
        );
    }

    /// Credits in hand plus all returns in flight.
    fn eventual(&self, link: u32) -> u32 {
        let flow = &self[link].flow;
        let spilled: u32 = self.spills[link as usize].iter().map(|&(_, u)| u).sum();
        flow.credits + flow.next_return_units + spilled
    }

    /// Spends `units` credits if they are in hand at `now`; otherwise says when to look again.
    pub fn take(&mut self, link: u32, now: u64, units: u32) -> Result<(), Stall> {
        let credits = self.available(link, now);
        if credits >= units {
            self[link].flow.credits -= units;
            return Ok(());
        }
        let flow = self[link].flow;
        let returns = std::iter::once((flow.next_return_ps, flow.next_return_units))
            .filter(|&(at, _)| at != u64::MAX)
            .chain(self.spills[link as usize].iter().copied());
        let mut have = credits;
        for (at, back) in returns {
            have += back;
            if have >= units {
                return Err(Stall::Until(at));
            }
        }
        self[link].flow.stalled_on = units;
        Err(Stall::Unknown)
    }

    /// The far buffer freed `units` at `now`; the credits reach the sender at `at` (not
    /// before any earlier return). Returns the time to wake the sender when it was stalled
    /// for them.
    #[inline]
    pub fn give_back(&mut self, link: u32, now: u64, at: u64, units: u32) -> Option<u64> {
        // Fold in what has arrived first, so that only returns truly in flight queue up.
        self.available(link, now);
        let flow = &mut self.items[link as usize].flow;
        if flow.next_return_ps == u64::MAX {
            flow.next_return_ps = at;
            flow.next_return_units = units;
        } else {
            let spill = &mut self.spills[link as usize];
            debug_assert!(spill.back().map_or(flow.next_return_ps, |&(t, _)| t) <= at);
            flow.spilled += 1;
            spill.push_back((at, units));
        }
        debug_assert!(
            self.eventual(link) <= self.buffer_units,
            "link {link}: more credits than buffer"
        );
        let stalled_on = self[link].flow.stalled_on;
        if stalled_on > 0 && self.eventual(link) >= stalled_on {
            self[link].flow.stalled_on = 0;
            return Some(at);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::switch::InputBuffer;
    use crate::sim::wiring::FarEnd;

    #[test]
    fn credits_come_back_at_their_time_and_wake_a_stalled_sender() {
        let mut credits = Links::new([InputBuffer::new(FarEnd::Node(0))], 10);
        assert_eq!(credits.take(0, 0, 6), Ok(()));
        assert_eq!(credits.take(0, 0, 6), Err(Stall::Unknown));
        // 2 units back by t=150 are not enough for 6 (4 in hand) until the second arrives.
        assert_eq!(credits.give_back(0, 80, 100, 1), None);
        assert_eq!(credits.give_back(0, 130, 150, 1), Some(150));
        assert_eq!(credits.take(0, 120, 6), Err(Stall::Until(150)));
        assert_eq!(credits.available(0, 149), 5);
        assert_eq!(credits.take(0, 150, 6), Ok(()));
        credits[0].flow.set_queue_bytes(300);
        // 300 queued + 10 units outstanding of 64 B.
        assert_eq!(credits.load_bytes(0, 150, 64), 300 + 640);
    }
}
