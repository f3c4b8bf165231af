//! A switch: one FIFO input buffer per input port and one output queue per output port, both
//! `buffer_bytes` (thesis 3.5; codes-peer.md's one buffer per port, no virtual channels).
//!
//! The packet at the head of an input buffer is routed once it has been there for the switch
//! latency: down by the topology's deterministic rule, up to the least loaded up port (queue
//! bytes plus credits not yet returned by the next buffer, ties broken at random), or by D-mod-K
//! without adaptive routing (the up port [`crate::topology::Topology::deterministic_route`]
//! reports). It moves into that output queue when the queue
//! has room; otherwise it blocks its whole input buffer (head-of-line blocking, which is how
//! congestion trees spread) and waits in the port's FIFO of blocked inputs until the port
//! sends a packet. Leaving the input buffer sends its credits back upstream. Entering the
//! output queue is where congestion is judged (thesis 3.2), the ground truth counted and the
//! telemetry of algorithm 3 applied. An output port sends its head packet when the link is
//! idle and it holds the packet's credits.

use rand_chacha::ChaCha8Rng;

use super::engine::Engine;
use super::links::Stall;
use super::mads::FIRST_MAD_JOB;
use super::packets::NIL;
use super::wiring::Route;
use crate::telemetry::TelemetryKind;

impl Engine {
    /// `packet` has been in the input buffer at the far end of its link for the switch
    /// latency: it can be routed once the packets before it have gone.
    pub fn arrive(&mut self, packet: u32) {
        if self.packets[packet].job >= FIRST_MAD_JOB {
            return self.mad_arrives(packet);
        }
        let link = self.packets[packet].link;
        let bytes = self.packets[packet].bytes;
        let units = self.timing.units(bytes);
        let arrived = &mut self.links[link];
        arrived.rcv_bytes += u64::from(bytes);
        arrived.rcv_packets += 1;
        let input = &mut arrived.input;
        input.units += units;
        input.peak_units = input.peak_units.max(input.units);
        debug_assert!(
            input.units <= self.timing.buffer_units,
            "input {link} overflows"
        );
        input.fifo.push(&mut self.packets, packet);
        if input.blocked_on == NIL {
            self.forward(link);
        }
    }

    /// Moves packets from the head of the input buffer at the far end of `link` into their
    /// output queues until it is empty or its head blocks.
    pub fn forward(&mut self, link: u32) {
        let switch = self.links[link].input.switch;
        debug_assert_eq!(self.links[link].input.blocked_on, NIL);
        while !self.links[link].input.fifo.is_empty() {
            let packet = self.links[link].input.fifo.head;
            let (dst, bytes) = (self.packets[packet].dst, self.packets[packet].bytes);
            let port = self.choose_port(switch, dst);
            if self.links.queue_bytes(port) + bytes > self.timing.buffer_bytes {
                self.block(link, port);
                return;
            }
            self.move_to_output(link, port);
            self.transmit(port);
        }
    }

    fn choose_port(&mut self, switch: u32, dst: u32) -> u32 {
        match self.wiring.route(switch, dst) {
            Route::Down(port) => port,
            Route::Up { start, count } if !self.config.adaptive => {
                start + self.wiring.deterministic_up(switch, dst, count)
            }
            Route::Up { start, count } => {
                let now = self.now;
                let (_, ties) = self.links.least_loaded_into(
                    start,
                    count,
                    now,
                    self.timing.unit_bytes,
                    &mut self.tied,
                );
                start + pick_tied(&self.tied, ties, &mut self.routing_rng)
            }
            Route::UpAmong { at, count } => self.choose_among(switch, at, count, dst),
        }
    }

    /// [`Engine::choose_port`] among the up ports left where links are missing (real fabrics
    /// only), out of line.
    #[cold]
    #[inline(never)]
    fn choose_among(&mut self, switch: u32, at: u32, count: u32, dst: u32) -> u32 {
        if !self.config.adaptive {
            let k = self.wiring.deterministic_up(switch, dst, count);
            return self.wiring.up_among(at, k);
        }
        let ports = self.wiring.up_list(at, count);
        let now = self.now;
        let (_, ties) =
            self.links
                .least_loaded_of(ports, now, self.timing.unit_bytes, &mut self.tied);
        ports[pick_tied(&self.tied, ties, &mut self.routing_rng) as usize]
    }

    fn block(&mut self, link: u32, port: u32) {
        self.links[link].input.blocked_on = port;
        self.links[link].input.next_blocked = NIL;
        let tail = self.links[port].blocked_tail;
        if tail == NIL {
            self.links[port].blocked_head = link;
        } else {
            self.links[tail].input.next_blocked = link;
        }
        self.links[port].blocked_tail = link;
    }

    /// Takes the head of the input buffer at the far end of `link` into the output queue of
    /// `port`, returning its credits upstream.
    fn move_to_output(&mut self, link: u32, port: u32) {
        let packet = self.links[link].input.fifo.pop(&self.packets);
        let units = self.timing.units(self.packets[packet].bytes);
        self.links[link].input.units -= units;
        let back = self.now + self.timing.link_ps;
        if let Some(at) = self.links.give_back(link, self.now, back, units) {
            self.wake(link, at);
        }
        self.enqueue(port, packet);
    }

    fn enqueue(&mut self, port: u32, packet: u32) {
        let bytes = self.packets[packet].bytes;
        let queue_bytes = self.links.queue_bytes(port) + bytes;
        debug_assert!(
            queue_bytes <= self.timing.buffer_bytes,
            "output {port} overflows"
        );
        let credit_bytes =
            u64::from(self.links.available(port, self.now)) * u64::from(self.timing.unit_bytes);
        let congested = self
            .config
            .congestion
            .is_congested(u64::from(queue_bytes), credit_bytes);
        self.tally
            .enqueued(self.packets[packet].job, port, congested);
        if self.config.telemetry.kind != TelemetryKind::Off {
            let p = &mut self.packets[packet];
            self.config.telemetry.on_switch(
                &mut p.header,
                p.id,
                self.wiring.port_ref(port),
                port,
                congested,
                &mut self.telemetry_rng,
            );
        }
        self.links.set_queue_bytes(port, queue_bytes);
        let out = &mut self.links[port];
        out.packets += 1;
        out.congested += u64::from(congested);
        out.bytes += u64::from(bytes);
        self.packets[packet].link = port;
        out.queue.push(&mut self.packets, packet);
    }

    /// Sends the head of `port`'s queue if the link is idle and the credits are there, or
    /// arranges to look again when one of them changes.
    pub fn transmit(&mut self, port: u32) {
        // VL15 first (`mads`); `queued` is 0 in a run without samplers.
        if self.mads.queued > 0 && self.send_mad(port) {
            return;
        }
        let out = &self.links[port];
        if out.queue.is_empty() {
            return;
        }
        if out.busy_until > self.now {
            return self.wake(port, out.busy_until);
        }
        let bytes = self.packets[out.queue.head].bytes;
        match self.links.take(port, self.now, self.timing.units(bytes)) {
            Ok(()) => {}
            Err(Stall::Until(at)) => {
                self.credit_wait_begins(port);
                return self.wake(port, at);
            }
            Err(Stall::Unknown) => return self.credit_wait_begins(port),
        }
        if self.links[port].returns.waiting {
            self.credit_wait_ends(port);
        }
        let packet = self.links[port].queue.pop(&self.packets);
        let queue_bytes = self.links.queue_bytes(port) - bytes;
        self.links.set_queue_bytes(port, queue_bytes);
        self.start_transmission(port, packet);
        self.admit_blocked(port);
        let out = &self.links[port];
        if !out.queue.is_empty() {
            self.wake(port, out.busy_until);
        }
    }

    /// The head of `port`'s queue could not get its credits: a wait begins now unless one
    /// is under way (XmitWait, `counters`).
    #[cold]
    fn credit_wait_begins(&mut self, port: u32) {
        let returns = &mut self.links[port].returns;
        if !returns.waiting {
            returns.waiting = true;
            self.waits[port as usize].begin(self.now);
        }
    }

    /// `port` sends again after waiting for credits.
    #[cold]
    fn credit_wait_ends(&mut self, port: u32) {
        self.links[port].returns.waiting = false;
        self.waits[port as usize].end(self.now);
    }

    /// Room opened in `port`'s queue: the blocked inputs move their heads in, in the order
    /// they blocked, while they fit. Those with more packets behind go back to forwarding.
    fn admit_blocked(&mut self, port: u32) {
        loop {
            let link = self.links[port].blocked_head;
            if link == NIL {
                return;
            }
            let head = self.links[link].input.fifo.head;
            let room = self.timing.buffer_bytes - self.links.queue_bytes(port);
            if self.packets[head].bytes > room {
                return;
            }
            let next = self.links[link].input.next_blocked;
            self.links[port].blocked_head = next;
            if next == NIL {
                self.links[port].blocked_tail = NIL;
            }
            self.links[link].input.blocked_on = NIL;
            self.move_to_output(link, port);
            if !self.links[link].input.fifo.is_empty() {
                self.unblocked.push_back(link);
            }
        }
    }
}

/// One of the `ties` least loaded ports listed in `tied`, at random when there are several.
fn pick_tied(tied: &[u32], ties: usize, rng: &mut ChaCha8Rng) -> u32 {
    match ties {
        1 => tied[0],
        n => tied[rand::Rng::gen_range(rng, 0..n)],
    }
}
