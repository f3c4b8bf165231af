//! Packets and messages in flight, kept in pools of small plain structs addressed by `u32`
//! (no allocation per packet), and the intrusive FIFO that chains packets through their
//! `next` field (a packet sits in at most one input buffer or output queue at a time).
//!
//! A packet is split in two: what every hop reads ([`Packet`], 36 bytes) and what only its
//! injection and delivery need ([`Trip`]), so that the part the hot path walks through stays
//! small enough for the caches.

use crate::telemetry::Header;

/// "No packet" / "no link" in the `u32` links of the engine's tables.
pub(crate) const NIL: u32 = u32::MAX;

/// The part of a packet every hop reads.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Packet {
    /// The link the packet crossed last: the input buffer it waits in, the output queue it
    /// waits in (a port is a link), or the link delivering it to its node.
    pub link: u32,
    /// Next packet in the FIFO holding this one.
    pub next: u32,
    pub dst: u32,
    pub bytes: u32,
    /// Sequence number of the packet in the run (the id telemetry hashes, thesis 5.2).
    pub id: u32,
    pub job: u16,
    pub header: Header,
}

/// The part of a packet only its injection and delivery touch.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Trip {
    /// Its message's entry in the message pool, or `NIL` for a one-packet message (the
    /// common case, which needs no entry).
    pub message: u32,
    pub src: u32,
    /// The receiving rank's NIC (index into the engine's NIC table).
    pub receiver: u32,
    /// When its message became ready: the later of its `not_before_ps` and the time the
    /// previous message of the rank had left the NIC.
    pub ready_ps: u64,
}

/// Packets in flight: both parts under one index.
pub(crate) struct Packets {
    hot: Pool<Packet>,
    trips: Vec<Trip>,
}

impl Packets {
    pub fn new() -> Self {
        Packets {
            hot: Pool::new(),
            trips: Vec::new(),
        }
    }

    pub fn insert(&mut self, packet: Packet, trip: Trip) -> u32 {
        let index = self.hot.insert(packet);
        match self.trips.get_mut(index as usize) {
            Some(slot) => *slot = trip,
            None => self.trips.push(trip),
        }
        index
    }

    #[inline]
    pub fn trip(&self, index: u32) -> &Trip {
        &self.trips[index as usize]
    }

    /// Frees the slot and returns both parts.
    pub fn remove(&mut self, index: u32) -> (Packet, Trip) {
        self.hot.remove(index);
        (self.hot[index], self.trips[index as usize])
    }
}

impl std::ops::Index<u32> for Packets {
    type Output = Packet;
    #[inline]
    fn index(&self, index: u32) -> &Packet {
        &self.hot[index]
    }
}

impl std::ops::IndexMut<u32> for Packets {
    #[inline]
    fn index_mut(&mut self, index: u32) -> &mut Packet {
        &mut self.hot[index]
    }
}

/// A message of several packets.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Message {
    /// Packets not yet delivered.
    pub packets_left: u64,
}

/// Slots of `T` reused through a free list.
pub(crate) struct Pool<T> {
    items: Vec<T>,
    free: Vec<u32>,
}

impl<T: Copy> Pool<T> {
    pub fn new() -> Self {
        Pool {
            items: Vec::new(),
            free: Vec::new(),
        }
    }

    pub fn insert(&mut self, item: T) -> u32 {
        match self.free.pop() {
            Some(index) => {
                self.items[index as usize] = item;
                index
            }
            None => {
                let index = u32::try_from(self.items.len()).expect("fewer than 2^32 in flight");
                self.items.push(item);
                index
            }
        }
    }

    /// Returns the slot for reuse; the caller must hold no other reference to it.
    pub fn remove(&mut self, index: u32) {
        self.free.push(index);
    }
}

impl<T> std::ops::Index<u32> for Pool<T> {
    type Output = T;
    #[inline]
    fn index(&self, index: u32) -> &T {
        &self.items[index as usize]
    }
}

impl<T> std::ops::IndexMut<u32> for Pool<T> {
    #[inline]
    fn index_mut(&mut self, index: u32) -> &mut T {
        &mut self.items[index as usize]
    }
}

/// A first-in first-out list of packets linked through [`Packet::next`].
#[derive(Copy, Clone, Debug)]
pub(crate) struct Fifo {
    pub head: u32,
    tail: u32,
}

impl Fifo {
    pub const EMPTY: Fifo = Fifo {
        head: NIL,
        tail: NIL,
    };

    pub fn is_empty(&self) -> bool {
        self.head == NIL
    }

    pub fn push(&mut self, packets: &mut Packets, packet: u32) {
        packets[packet].next = NIL;
        if self.tail == NIL {
            self.head = packet;
        } else {
            packets[self.tail].next = packet;
        }
        self.tail = packet;
    }

    /// Removes and returns the head; the list must not be empty.
    pub fn pop(&mut self, packets: &Packets) -> u32 {
        let packet = self.head;
        debug_assert_ne!(packet, NIL);
        self.head = packets[packet].next;
        if self.head == NIL {
            self.tail = NIL;
        }
        packet
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(id: u32) -> (Packet, Trip) {
        let packet = Packet {
            link: 0,
            next: NIL,
            dst: 0,
            bytes: 1,
            id,
            job: 0,
            header: Header::default(),
        };
        let trip = Trip {
            message: NIL,
            src: id,
            receiver: 0,
            ready_ps: 0,
        };
        (packet, trip)
    }

    #[test]
    fn fifo_keeps_order_and_pool_reuses_slots() {
        let mut packets = Packets::new();
        let mut fifo = Fifo::EMPTY;
        let ids: Vec<u32> = (0..3)
            .map(|i| {
                let (p, t) = packet(i);
                packets.insert(p, t)
            })
            .collect();
        for &i in &ids {
            fifo.push(&mut packets, i);
        }
        let first = fifo.pop(&packets);
        let (p, trip) = packets.remove(first);
        assert_eq!((p.id, trip.src), (0, 0));
        let (p, t) = packet(7);
        let reused = packets.insert(p, t);
        assert_eq!(reused, first);
        fifo.push(&mut packets, reused);
        let rest: Vec<u32> = std::iter::from_fn(|| (!fifo.is_empty()).then(|| fifo.pop(&packets)))
            .map(|i| packets[i].id)
            .collect();
        assert_eq!(rest, vec![1, 2, 7]);
    }
}
