//! Credit-based flow control on every link (thesis 3.5 and codes-peer.md): a sender holds
//! credits for the free flow units of the buffer at the far end, spends them when it starts a
//! packet, and gets them back one link latency after the packet leaves that buffer.
//!
//! Returns are applied lazily: a return is a (time, units) entry folded into the credits in
//! hand the next time anyone looks at the link, so the common case costs no event; only a
//! sender stalled on credits gets a wake-up, at the return that lets it go. A return due
//! already (a link without propagation delay) goes straight into the credits. The first
//! return in flight sits in the link's [`super::links::Returns`]; the ones behind it (rare: a buffer
//! forwards about one packet per serialisation time, and returns are in flight for one link
//! latency) spill into a FIFO.
//!
//! What adaptive routing compares for every up port of a switch (credits in hand, the output
//! queue, and whether a return is due) is a 16-byte [`Flow`] in an array of its own, four
//! ports to a cache line: a scan of a `full` switch's 18 up ports reads 5 lines, not 18 link
//! records. The scan looks for due returns to fold in only while some link into a switch has
//! one in flight (`Links::switch_returns`): never where links have no propagation delay, as
//! a return between switches is then due when it is given.

use super::links::{Flow, Links, Stall};
use super::packets::NIL;

impl Links {
    #[inline]
    pub fn queue_bytes(&self, link: u32) -> u32 {
        self.flows[link as usize].queue_bytes
    }

    #[inline]
    pub fn set_queue_bytes(&mut self, link: u32, bytes: u32) {
        self.flows[link as usize].queue_bytes = bytes;
        let returns = &mut self.items[link as usize].returns;
        returns.peak_queue_bytes = returns.peak_queue_bytes.max(bytes);
    }

    /// Credits in hand at `now`, after folding in the returns that have arrived.
    #[inline]
    pub fn available(&mut self, link: u32, now: u64) -> u32 {
        if self.flows[link as usize].next_return_ps <= now {
            self.absorb(link, now);
        }
        self.flows[link as usize].credits
    }

    /// The least loaded of links `start..start + count` (a switch's up ports): their
    /// positions in `tied`, in order; returns the least load and how many links have it. A link's load is its output
    /// queue bytes plus the flow units the far buffer holds or will hold for the sender
    /// (spent and not yet given back), in bytes, what adaptive routing compares. Reads only
    /// the compact [`Flow`] array, in one pass without branches on the loads (ties are
    /// common, so a branch on them mispredicts).
    #[inline]
    pub fn least_loaded_into(
        &mut self,
        start: u32,
        count: u32,
        now: u64,
        unit_bytes: u32,
        tied: &mut Vec<u32>,
    ) -> (u64, usize) {
        let range = start as usize..(start + count) as usize;
        if self.switch_returns > 0
            && self.flows[range.clone()]
                .iter()
                .any(|flow| flow.next_return_ps <= now)
        {
            for link in range.clone() {
                self.available(link as u32, now);
            }
        }
        least_load(
            self.flows[range].iter(),
            self.buffer_units,
            unit_bytes,
            tied,
        )
    }

    /// [`Links::least_loaded_into`] of the listed links (the up ports left where links are
    /// missing).
    pub fn least_loaded_of(
        &mut self,
        links: &[u32],
        now: u64,
        unit_bytes: u32,
        tied: &mut Vec<u32>,
    ) -> (u64, usize) {
        if self.switch_returns > 0
            && links
                .iter()
                .any(|&link| self.flows[link as usize].next_return_ps <= now)
        {
            for &link in links {
                self.available(link, now);
            }
        }
        let flows = links.iter().map(|&link| &self.flows[link as usize]);
        least_load(flows, self.buffer_units, unit_bytes, tied)
    }

    #[cold]
    fn absorb(&mut self, link: u32, now: u64) {
        let spill = &mut self.spills[link as usize];
        let flow = &mut self.flows[link as usize];
        let returns = &mut self.items[link as usize].returns;
        while flow.next_return_ps <= now {
            flow.credits += returns.next_return_units;
            (flow.next_return_ps, returns.next_return_units) = if returns.spilled > 0 {
                returns.spilled -= 1;
                spill.pop_front().expect("spilled return")
            } else {
                (u64::MAX, 0)
            };
        }
        debug_assert!(
            flow.credits <= self.buffer_units,
            "link {link}: credits over buffer"
        );
        if flow.next_return_ps == u64::MAX && self.leads_to_switch(link) {
            self.switch_returns -= 1;
        }
    }

    /// Whether the far end of `link` is a switch (which routing may compare the link for).
    #[inline]
    fn leads_to_switch(&self, link: u32) -> bool {
        self[link].input.switch() != NIL
    }

    /// Credits in hand plus all returns in flight.
    fn eventual(&self, link: u32) -> u32 {
        let returns = &self[link].returns;
        let spilled: u32 = self.spills[link as usize].iter().map(|&(_, u)| u).sum();
        self.flows[link as usize].credits + returns.next_return_units + spilled
    }

    /// Spends `units` credits if they are in hand at `now`; otherwise says when to look again.
    #[inline]
    pub fn take(&mut self, link: u32, now: u64, units: u32) -> Result<(), Stall> {
        let credits = self.available(link, now);
        if credits >= units {
            self.flows[link as usize].credits -= units;
            return Ok(());
        }
        self.stall(link, credits, units)
    }

    #[cold]
    fn stall(&mut self, link: u32, credits: u32, units: u32) -> Result<(), Stall> {
        let first = (
            self.flows[link as usize].next_return_ps,
            self[link].returns.next_return_units,
        );
        let returns = std::iter::once(first)
            .filter(|&(at, _)| at != u64::MAX)
            .chain(self.spills[link as usize].iter().copied());
        let mut have = credits;
        for (at, back) in returns {
            have += back;
            if have >= units {
                return Err(Stall::Until(at));
            }
        }
        self[link].returns.stalled_on = units;
        Err(Stall::Unknown)
    }

    /// The far buffer freed `units` at `now`; the credits reach the sender at `at` (not
    /// before any earlier return). Returns the time to wake the sender when it was stalled
    /// for them.
    #[inline]
    pub fn give_back(&mut self, link: u32, now: u64, at: u64, units: u32) -> Option<u64> {
        // Fold in what has arrived first, so that only returns truly in flight queue up.
        self.available(link, now);
        let flow = &mut self.flows[link as usize];
        let returns = &mut self.items[link as usize].returns;
        if at <= now {
            // Due already: every earlier return has been folded in above.
            flow.credits += units;
        } else if flow.next_return_ps == u64::MAX {
            flow.next_return_ps = at;
            returns.next_return_units = units;
            if self.leads_to_switch(link) {
                self.switch_returns += 1;
            }
        } else {
            let spill = &mut self.spills[link as usize];
            debug_assert!(spill.back().map_or(flow.next_return_ps, |&(t, _)| t) <= at);
            returns.spilled = returns
                .spilled
                .checked_add(1)
                .expect("fewer than 65536 credit returns in flight on one link");
            spill.push_back((at, units));
        }
        debug_assert!(
            self.eventual(link) <= self.buffer_units,
            "link {link}: more credits than buffer"
        );
        let stalled_on = self[link].returns.stalled_on;
        if stalled_on > 0 && self.eventual(link) >= stalled_on {
            self[link].returns.stalled_on = 0;
            return Some(at);
        }
        None
    }
}

/// The positions of the least loaded of `flows` into `tied` (see
/// [`Links::least_loaded_into`]), the least load and how many have it. Each position is written at the
/// list's end whatever its load, and the end moves on only for a tie (or restarts at a new
/// least): no branch on the loads, and no second pass to find the ties.
#[inline]
fn least_load<'a>(
    flows: impl ExactSizeIterator<Item = &'a Flow>,
    buffer_units: u32,
    unit_bytes: u32,
    tied: &mut Vec<u32>,
) -> (u64, usize) {
    if tied.len() < flows.len() {
        tied.resize(flows.len(), 0);
    }
    // A slice of its own, so that its start and length stay in registers through the loop
    // (writes through the vector could, for all the compiler knows, change them).
    let tied = &mut tied[..flows.len()];
    let unit_bytes = u64::from(unit_bytes);
    let (mut best, mut ties) = (u64::MAX, 0);
    for (k, flow) in flows.enumerate() {
        let load =
            u64::from(flow.queue_bytes) + u64::from(buffer_units - flow.credits) * unit_bytes;
        let slot = if load < best { 0 } else { ties };
        tied[slot] = k as u32;
        ties = slot + usize::from(load <= best);
        best = best.min(load);
    }
    (best, ties)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::links::InputBuffer;
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
        credits.set_queue_bytes(0, 300);
        // 300 queued + 10 units outstanding of 64 B.
        let mut tied = Vec::new();
        assert_eq!(
            credits.least_loaded_into(0, 1, 150, 64, &mut tied),
            (300 + 640, 1)
        );
        assert_eq!(tied[0], 0);
    }

    /// Routing skips the look for due returns only while no link into a switch has one in
    /// flight: a return on an up port is folded in when it is due, not before.
    #[test]
    fn routing_sees_returns_on_links_into_switches_when_due() {
        let into_switch = || InputBuffer::new(FarEnd::Switch(0));
        let mut links = Links::new([into_switch(), into_switch()], 10);
        assert_eq!(links.take(0, 0, 4), Ok(()));
        assert_eq!(links.take(1, 0, 2), Ok(()));
        assert_eq!(links.give_back(0, 10, 100, 4), None);
        let mut tied = Vec::new();
        assert_eq!(
            links.least_loaded_into(0, 2, 50, 64, &mut tied),
            (2 * 64, 1)
        );
        assert_eq!(tied[0], 1);
        assert_eq!(links.least_loaded_into(0, 2, 100, 64, &mut tied), (0, 1));
        assert_eq!(tied[0], 0);
        // Folded in: none in flight any more, and the next return is seen again.
        assert_eq!(links.switch_returns, 0);
        assert_eq!(links.take(1, 100, 8), Ok(()));
        assert_eq!(links.give_back(1, 110, 200, 10), None);
        assert_eq!(links.least_loaded_into(0, 2, 150, 64, &mut tied), (0, 1));
        assert_eq!(tied[0], 0);
        assert_eq!(links.least_loaded_of(&[1], 200, 64, &mut tied), (0, 1));
    }

    proptest::proptest! {
        /// The one-pass tie list holds exactly the positions of the least load, in order.
        #[test]
        fn the_tie_list_is_the_least_loaded_positions(
            flows in proptest::collection::vec((0u32..4, 0u32..3), 1..40),
        ) {
            let flows: Vec<Flow> = flows
                .into_iter()
                .map(|(queue, spent)| Flow {
                    next_return_ps: u64::MAX,
                    credits: 8 - spent,
                    queue_bytes: queue * 64,
                })
                .collect();
            let loads: Vec<u64> = flows
                .iter()
                .map(|f| u64::from(f.queue_bytes) + u64::from(8 - f.credits) * 64)
                .collect();
            let least = *loads.iter().min().unwrap();
            let expected: Vec<u32> = (0..loads.len() as u32)
                .filter(|&k| loads[k as usize] == least)
                .collect();
            let mut tied = vec![7; 3];
            let (best, ties) = least_load(flows.iter(), 8, 64, &mut tied);
            proptest::prop_assert_eq!(best, least);
            proptest::prop_assert_eq!(&tied[..ties], &expected[..]);
        }
    }
}
