//! The NIC of a node running a rank: it plays the rank's [`crate::traffic::Program`] op by op
//! and injects its messages packet by packet onto the node's link to its leaf; and it is where
//! packets are delivered (the node sinks at line rate; the leaf-to-node link serialises).
//!
//! A message becomes ready at the later of its `not_before_ps` and the time the previous
//! message's last packet has left the NIC; its latency runs from then to the delivery of its
//! last packet. The program is asked for the next op as soon as the last packet of a message
//! starts, with the op taking effect when that packet has left: a program cannot see time
//! (only the order of the calls, which stays deterministic), so asking early changes nothing
//! it could observe and saves an event per message.

use super::engine::Engine;
use super::links::Stall;
use super::mads::FIRST_MAD_JOB;
use super::nic_state::{Nic, NicState};
use super::packets::{Message, Packet, Trip, NIL};
use super::payload::MAX_PACKETS;
use crate::telemetry::{Delivery, Header, TelemetryKind};
use crate::topology::NodeId;
use crate::traffic::Op;

impl Engine {
    /// Runs the NIC's state machine as far as it goes at the current time; schedules a wake
    /// for whatever it waits on (a time, the link, credits) except messages to receive, which
    /// the delivery of the awaited message resumes.
    pub fn advance_nic(&mut self, nic: u32) {
        let Nic {
            job, rank, node, ..
        } = self.nics[nic as usize];
        let link = self.wiring.nic_link(node);
        loop {
            let busy_until = self.links[link].busy_until;
            match self.nics[nic as usize].state {
                NicState::Done => return,
                NicState::NextOp => {
                    let state = self.next_op(job, rank, busy_until.max(self.now));
                    self.nics[nic as usize].state = state;
                    if let NicState::Done = state {
                        self.tally.rank_done(job);
                        self.tally.check_finished(job, self.now);
                        return;
                    }
                }
                NicState::Awaiting { total } => {
                    if self.nics[nic as usize].received < total {
                        return;
                    }
                    if busy_until > self.now {
                        return self.wake(link, busy_until);
                    }
                    self.nics[nic as usize].state = NicState::NextOp;
                }
                NicState::Sending {
                    message,
                    receiver,
                    ready_ps,
                    bytes_left,
                    packets_left,
                } => {
                    if ready_ps > self.now {
                        return self.wake(link, ready_ps);
                    }
                    if busy_until > self.now {
                        return self.wake(link, busy_until);
                    }
                    // A MAD waiting for this link goes first (`mads`).
                    if self.mads.queued > 0 && self.send_mad(link) {
                        return;
                    }
                    let bytes = bytes_left.min(u64::from(self.timing.packet_bytes)) as u32;
                    match self.links.take(link, self.now, self.timing.units(bytes)) {
                        Ok(()) => {}
                        Err(Stall::Until(at)) => return self.wake(link, at),
                        Err(Stall::Unknown) => return,
                    }
                    let packet = Packet {
                        link,
                        next: NIL,
                        dst: self.nics[receiver as usize].node,
                        bytes,
                        id: self.next_packet_id,
                        job,
                        header: Header::default(),
                    };
                    let trip = Trip {
                        message,
                        src: node,
                        receiver,
                        ready_ps,
                    };
                    self.inject(packet, trip);
                    self.nics[nic as usize].state = if packets_left == 1 {
                        NicState::NextOp
                    } else {
                        NicState::Sending {
                            message,
                            receiver,
                            ready_ps,
                            bytes_left: bytes_left - u64::from(bytes),
                            packets_left: packets_left - 1,
                        }
                    };
                }
            }
        }
    }

    /// Asks the program of `job` for `rank`'s next op, which takes effect at `free_at`.
    fn next_op(&mut self, job: u16, rank: u32, free_at: u64) -> NicState {
        let op = self.programs[usize::from(job)].next_op(rank, &mut self.traffic_rng);
        match op {
            None => NicState::Done,
            Some(Op::AwaitReceived { total }) => NicState::Awaiting { total },
            Some(Op::Send {
                dst,
                bytes,
                not_before_ps,
            }) => {
                let first = self.first_nic[usize::from(job)];
                let ranks = self.first_nic[usize::from(job) + 1] - first;
                assert!(
                    dst < ranks,
                    "job {job} rank {rank} sends to rank {dst}, but the job has {ranks} ranks"
                );
                let packets = bytes.div_ceil(u64::from(self.timing.packet_bytes)).max(1);
                let message = if packets == 1 {
                    NIL
                } else {
                    self.messages.insert(Message {
                        packets_left: packets,
                    })
                };
                self.tally.message_sent(job);
                NicState::Sending {
                    message,
                    receiver: first + dst,
                    ready_ps: not_before_ps.max(free_at),
                    bytes_left: bytes,
                    packets_left: packets,
                }
            }
        }
    }

    /// Puts a new packet on its NIC's link, with the telemetry header of algorithm 2/5.
    fn inject(&mut self, mut packet: Packet, trip: Trip) {
        if self.config.telemetry.kind != TelemetryKind::Off {
            packet.header = self.config.telemetry.on_send(&mut self.telemetry_rng);
        }
        let link = packet.link;
        let index = self.packets.insert(packet, trip);
        assert!(index < MAX_PACKETS, "too many packets in flight");
        self.next_packet_id = self.next_packet_id.wrapping_add(1);
        self.start_transmission(link, index);
    }

    /// `packet` has fully arrived at its node.
    pub fn deliver(&mut self, packet: u32) {
        if self.packets[packet].job >= FIRST_MAD_JOB {
            return self.mad_delivered(packet);
        }
        let (p, trip) = self.packets.remove(packet);
        let hops = self.wiring.hops(trip.src, p.dst);
        self.tally.packet_delivered(p.job, p.bytes, hops);
        if let Some(collector) = &mut self.collector {
            let delivery = Delivery {
                src: NodeId(trip.src),
                dst: NodeId(p.dst),
                job: p.job,
                packet_id: p.id,
                bytes: p.bytes,
                arrival_ps: self.now,
                header: p.header,
            };
            collector.on_receive(&self.topology, &delivery);
        }
        if trip.message != NIL {
            let message = &mut self.messages[trip.message];
            message.packets_left -= 1;
            if message.packets_left > 0 {
                return;
            }
            self.messages.remove(trip.message);
        }
        self.tally
            .message_delivered(p.job, self.now - trip.ready_ps);
        let nic = &mut self.nics[trip.receiver as usize];
        nic.received += 1;
        if let NicState::Awaiting { .. } = nic.state {
            self.advance_nic(trip.receiver);
        }
        self.tally.check_finished(p.job, self.now);
    }
}
