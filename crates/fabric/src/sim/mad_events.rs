//! The MAD service model's events on the engine (`mads` describes the model and keeps its
//! state): a sampler's sweeps and queries, the VL15 queues' transmissions, the switches'
//! processors, the answers' delivery.

use super::engine::Engine;
use super::mads::{Sweep, MAD_ANSWER, MAD_QUERY};
use super::packets::{Packet, Trip, NIL};
use super::payload::{management, DELIVER, SERVICE_DONE, SWEEP_DUE};
use super::wiring::{FarEnd, Route};
use crate::telemetry::Header;

impl Engine {
    /// A sampler's sweep is due: start it, or mark it pending behind the one running; and
    /// schedule the next.
    pub fn sweep_due(&mut self, sampler: u32) {
        let s = &mut self.mads.samplers[sampler as usize];
        let due = self.now;
        let next = due + s.spec.period_ps;
        if next <= self.config.end_ps.unwrap_or(u64::MAX) {
            self.events.push(next, management(SWEEP_DUE, sampler));
        }
        let s = &mut self.mads.samplers[sampler as usize];
        if s.query.is_some() {
            s.pending.get_or_insert(due);
            return;
        }
        self.begin_sweep(sampler, due);
    }

    fn begin_sweep(&mut self, sampler: u32, due: u64) {
        let s = &mut self.mads.samplers[sampler as usize];
        s.sweep_start = self.now;
        s.sweep_due = due;
        s.query = Some(0);
        self.send_query(sampler);
    }

    /// Sends the sampler's current query from its node.
    fn send_query(&mut self, sampler: u32) {
        let s = &mut self.mads.samplers[sampler as usize];
        let target = s.spec.ports[s.query.expect("a query in flight")].switch;
        let node = s.spec.node.0;
        s.result.queries_sent += 1;
        let link = self.wiring.nic_link(node);
        let packet = Packet {
            link,
            next: NIL,
            dst: node,
            bytes: self.config.mads.mad_bytes,
            id: target.0,
            job: MAD_QUERY,
            header: Header::default(),
        };
        let trip = Trip {
            message: NIL,
            src: node,
            receiver: sampler,
            ready_ps: self.now,
        };
        let index = self.packets.insert(packet, trip);
        self.queue_mad(link, index);
    }

    /// Puts a MAD in `link`'s VL15 queue and sends it at once if the link is free.
    fn queue_mad(&mut self, link: u32, packet: u32) {
        self.packets[packet].link = link;
        self.mads.lanes[link as usize]
            .queue
            .push(&mut self.packets, packet);
        self.mads.queued += 1;
        self.send_mad(link);
    }

    /// Sends the head of `link`'s VL15 queue if the link is free (then looks again when it is
    /// free once more, for the next MAD or data), or waits for the link. Returns whether the
    /// queue held a MAD: then the link is taken care of and data must wait.
    pub fn send_mad(&mut self, link: u32) -> bool {
        if self.mads.lanes[link as usize].queue.is_empty() {
            return false;
        }
        let busy_until = self.links[link].busy_until;
        if busy_until > self.now {
            self.wake(link, busy_until);
            return true;
        }
        let packet = self.mads.lanes[link as usize].queue.pop(&self.packets);
        self.mads.queued -= 1;
        self.mads.mad_hops += 1;
        let bytes = self.packets[packet].bytes;
        let lane = &mut self.mads.lanes[link as usize];
        lane.bytes += u64::from(bytes);
        lane.packets += 1;
        let serialisation = self.timing.serialisation_ps(link, bytes);
        let sender = &mut self.links[link];
        sender.busy_until = self.now + serialisation;
        sender.busy_ps += serialisation;
        let arrival = self.now + serialisation + self.timing.link_ps;
        match self.wiring.far_end(link) {
            FarEnd::Switch(_) => {
                let what = u64::from(link) << 32 | u64::from(packet);
                self.events.push(arrival + self.timing.switch_ps, what);
            }
            FarEnd::Node(_) => self.events.push(arrival, DELIVER | u64::from(packet)),
        }
        let free = self.links[link].busy_until;
        self.wake(link, free);
        true
    }

    /// A MAD has arrived at a switch (past the switch latency): a query for this switch joins
    /// its processor's queue, anything else goes on towards its target.
    #[cold]
    pub fn mad_arrives(&mut self, packet: u32) {
        let link = self.packets[packet].link;
        let bytes = self.packets[packet].bytes;
        let arrived = &mut self.links[link];
        arrived.rcv_bytes += u64::from(bytes);
        arrived.rcv_packets += 1;
        let switch = arrived.input.switch();
        let p = self.packets[packet];
        if p.job == MAD_QUERY {
            if p.id == switch {
                return self.queue_for_service(switch, packet);
            }
            let routes = self.mads.to_switch[p.id as usize]
                .as_ref()
                .expect("routes to every target");
            let port = routes[switch as usize];
            return self.queue_mad(port, packet);
        }
        let port = self.answer_port(switch, p.dst);
        self.queue_mad(port, packet);
    }

    /// The port an answer for `node` leaves `switch` by: the data routing, deterministic
    /// (D-mod-K) on the way up.
    fn answer_port(&self, switch: u32, node: u32) -> u32 {
        match self.wiring.route(switch, node) {
            Route::Down(port) => port,
            Route::Up { start, count } => start + self.wiring.deterministic_up(switch, node, count),
            Route::UpAmong { at, count } => self
                .wiring
                .up_among(at, self.wiring.deterministic_up(switch, node, count)),
        }
    }

    fn queue_for_service(&mut self, switch: u32, packet: u32) {
        let processor = &mut self.mads.processors[switch as usize];
        processor.queue.push_back(packet);
        if !processor.busy {
            processor.busy = true;
            let done = self.now + self.timing.mad_service_ps;
            self.events.push(done, management(SERVICE_DONE, switch));
        }
    }

    /// `switch`'s processor has answered the query at the head of its queue.
    pub fn service_done(&mut self, switch: u32) {
        let processor = &mut self.mads.processors[switch as usize];
        let packet = processor.queue.pop_front().expect("a query in service");
        if processor.queue.is_empty() {
            processor.busy = false;
        } else {
            let done = self.now + self.timing.mad_service_ps;
            self.events.push(done, management(SERVICE_DONE, switch));
        }
        self.mads.served[switch as usize] += 1;
        let node = self.packets.trip(packet).src;
        let answer = &mut self.packets[packet];
        answer.job = MAD_ANSWER;
        answer.dst = node;
        let port = self.answer_port(switch, node);
        self.queue_mad(port, packet);
    }

    /// An answer has reached its sampler's node: the next query, or the end of the sweep.
    #[cold]
    pub fn mad_delivered(&mut self, packet: u32) {
        let (_, trip) = self.packets.remove(packet);
        let sampler = trip.receiver;
        let now = self.now;
        let s = &mut self.mads.samplers[sampler as usize];
        s.result.answers_received += 1;
        let next = s.query.expect("a sweep running") + 1;
        if next < s.spec.ports.len() {
            s.query = Some(next);
            return self.send_query(sampler);
        }
        s.query = None;
        s.result.sweeps.push(Sweep {
            start_ps: s.sweep_start,
            spread_ps: now - s.sweep_start,
            late_ps: s.sweep_start - s.sweep_due,
        });
        if let Some(due) = s.pending.take() {
            self.begin_sweep(sampler, due);
        }
    }
}
