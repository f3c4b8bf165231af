//! The future event list, ordered by time and, among equal times, by scheduling order.
//!
//! Most events of a packet network are scheduled a fixed delay ahead: a full-size packet
//! reaches the next switch's routing logic serialisation + link + switch latency after it
//! starts, its node serialisation + link latency after, its link is free serialisation after.
//! Events pushed a fixed delay after a clock that never goes back come out of a plain FIFO
//! already sorted, so each such delay gets a FIFO lane; the rest (message start times, waits
//! for a busy link) go to a calendar of 1 ns buckets ([`Calendar`]) whose next bucket is a
//! small 4-ary heap (half the levels of a binary heap, and a node's children share a cache
//! line or two). A pop takes the earliest of the lane heads and the calendar's. Every event
//! carries a sequence number, so ties leave in scheduling order whichever structure holds
//! them.

use std::collections::VecDeque;

/// One scheduled event: when, and an opaque payload the engine decodes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    pub time: u64,
    pub what: u64,
}

/// Field order gives the order: time, then sequence (unique, so `what` never decides).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    time: u64,
    seq: u64,
    what: u64,
}

struct Lane {
    delay: u64,
    events: VecDeque<Entry>,
}

pub(crate) struct EventQueue {
    /// Time of the latest popped event; nothing may be scheduled before it.
    now: u64,
    seq: u64,
    lanes: Vec<Lane>,
    calendar: Calendar,
    /// The lane the latest pop came from (`None`: the calendar).
    popped_lane: Option<usize>,
    /// The earliest entry and where it is (lane, or `None`: the calendar), kept up to date so
    /// that a pop and the peek after it scan the lane heads once.
    earliest: Option<(Entry, Option<usize>)>,
}

impl EventQueue {
    /// `lane_delays`: the delays (picoseconds) that get a FIFO lane.
    pub fn new(lane_delays: impl IntoIterator<Item = u64>) -> Self {
        let mut lanes: Vec<Lane> = Vec::new();
        for delay in lane_delays {
            if lanes.iter().all(|lane| lane.delay != delay) {
                lanes.push(Lane {
                    delay,
                    events: VecDeque::new(),
                });
            }
        }
        EventQueue {
            now: 0,
            seq: 0,
            lanes,
            calendar: Calendar::new(),
            popped_lane: None,
            earliest: None,
        }
    }

    /// Schedules `what` at `time`, which must not be before the last popped event.
    #[inline]
    pub fn push(&mut self, time: u64, what: u64) {
        assert!(
            time >= self.now,
            "event scheduled in the past ({time} < {})",
            self.now
        );
        let entry = Entry {
            time,
            seq: self.seq,
            what,
        };
        self.seq += 1;
        let delay = time - self.now;
        let place = match self.lanes.iter().position(|lane| lane.delay == delay) {
            Some(i) => {
                self.lanes[i].events.push_back(entry);
                Some(i)
            }
            None => {
                self.calendar.push(entry);
                None
            }
        };
        // A new earliest entry is the head of its lane (older lane entries are earlier) or the
        // earliest of the calendar.
        let earliest = match self.earliest {
            Some((e, _)) => entry < e,
            None => true,
        };
        if earliest {
            self.earliest = Some((entry, place));
        }
    }

    /// The event [`Self::pop`] would return now.
    #[inline]
    pub fn peek(&self) -> Option<Event> {
        self.earliest.map(|(entry, _)| Event {
            time: entry.time,
            what: entry.what,
        })
    }

    /// The payload `distance` places behind the head of the lane the latest pop came from:
    /// an event due a little later, for prefetching (each pop moves one lane, so looking
    /// there sees each lane event once).
    #[inline]
    pub fn upcoming(&self, distance: usize) -> Option<u64> {
        let lane = &self.lanes[self.popped_lane?];
        lane.events.get(distance).map(|e| e.what)
    }

    /// Finds the earliest entry, and the lane holding it (`None`: the calendar).
    #[inline]
    fn find_earliest(&mut self) -> Option<(Entry, Option<usize>)> {
        let mut best = self.calendar.peek();
        let mut best_lane = None;
        for (i, lane) in self.lanes.iter().enumerate() {
            if let Some(&head) = lane.events.front() {
                let earlier = match best {
                    Some(b) => head < b,
                    None => true,
                };
                if earlier {
                    best = Some(head);
                    best_lane = Some(i);
                }
            }
        }
        best.map(|entry| (entry, best_lane))
    }

    /// The earliest event (the first scheduled among equal times), or `None` when none is left.
    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        let (entry, lane) = self.earliest?;
        match lane {
            Some(i) => self.lanes[i].events.pop_front(),
            None => Some(self.calendar.pop()),
        };
        self.popped_lane = lane;
        self.now = entry.time;
        self.earliest = self.find_earliest();
        Some(Event {
            time: entry.time,
            what: entry.what,
        })
    }
}

/// The events that fit no lane, bucketed by time (a calendar queue): only the bucket due
/// next is kept ordered, in a small heap that stays in the first-level cache, and the
/// buckets after it are plain vectors that take a push in a few instructions. A bucket is
/// 2^[`BUCKET_SHIFT`] ps wide; events beyond the ring's [`RING`] buckets wait in an overflow
/// heap.
struct Calendar {
    /// Entries of buckets up to `current`, ordered.
    active: QuaternaryHeap,
    /// The bucket number (time >> shift) the active heap has reached.
    current: u64,
    /// Buckets `current + 1 ..= current + RING - 1`, at their number modulo `RING`, unordered.
    ring: Vec<Vec<Entry>>,
    in_ring: usize,
    /// Entries too far ahead for the ring, ordered.
    overflow: QuaternaryHeap,
}

/// A bucket is 1.024 ns: the irregular events of a large fabric under load (message starts,
/// waits for a busy link) come at tens to hundreds per nanosecond, so a bucket's heap is small.
const BUCKET_SHIFT: u32 = 10;
/// The ring spans 0.5 us ahead, past nearly every wait for a link or a message start (at
/// half load a 512 B message's gap exceeds it one time in a thousand); every bucket keeps
/// the capacity it reached, so a longer ring costs memory and cache for nothing.
const RING: u64 = 512;

impl Calendar {
    fn new() -> Self {
        Calendar {
            active: QuaternaryHeap::default(),
            current: 0,
            ring: (0..RING).map(|_| Vec::new()).collect(),
            in_ring: 0,
            overflow: QuaternaryHeap::default(),
        }
    }

    #[inline]
    fn push(&mut self, entry: Entry) {
        let bucket = entry.time >> BUCKET_SHIFT;
        if bucket <= self.current {
            self.active.push(entry);
        } else if bucket - self.current < RING {
            self.ring[(bucket % RING) as usize].push(entry);
            self.in_ring += 1;
        } else {
            self.overflow.push(entry);
        }
    }

    /// The earliest entry, moving the next bucket into the active heap when it is empty.
    #[inline]
    fn peek(&mut self) -> Option<Entry> {
        if self.active.is_empty() {
            self.advance();
        }
        self.active.peek()
    }

    /// Removes the earliest entry; the calendar must not be empty.
    #[inline]
    fn pop(&mut self) -> Entry {
        if self.active.is_empty() {
            self.advance();
        }
        self.active.pop()
    }

    /// Makes the earliest non-empty bucket (in the ring or the overflow) the active one.
    fn advance(&mut self) {
        let from_ring = (self.in_ring > 0).then(|| {
            (self.current + 1..)
                .find(|&b| !self.ring[(b % RING) as usize].is_empty())
                .expect("a non-empty bucket")
        });
        let from_overflow = self.overflow.peek().map(|e| e.time >> BUCKET_SHIFT);
        let next = match (from_ring, from_overflow) {
            (Some(r), Some(o)) => r.min(o),
            (Some(b), None) | (None, Some(b)) => b,
            (None, None) => return,
        };
        self.current = next;
        if from_ring == Some(next) {
            let slot = (next % RING) as usize;
            let mut bucket = std::mem::take(&mut self.ring[slot]);
            self.in_ring -= bucket.len();
            for entry in bucket.drain(..) {
                self.active.push(entry);
            }
            self.ring[slot] = bucket;
        }
        while let Some(entry) = self.overflow.peek() {
            if entry.time >> BUCKET_SHIFT != next {
                break;
            }
            self.overflow.pop();
            self.active.push(entry);
        }
    }
}

/// A min-heap of entries with four children per node. Keys (time, then sequence) are one
/// `u128` so that picking the smallest child compiles to conditional moves rather than
/// branches the processor cannot predict; payloads sit in a parallel vector.
#[derive(Default)]
struct QuaternaryHeap {
    keys: Vec<u128>,
    whats: Vec<u64>,
}

impl QuaternaryHeap {
    fn key(entry: &Entry) -> u128 {
        u128::from(entry.time) << 64 | u128::from(entry.seq)
    }

    fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    #[inline]
    fn peek(&self) -> Option<Entry> {
        let key = *self.keys.first()?;
        Some(Entry {
            time: (key >> 64) as u64,
            seq: key as u64,
            what: self.whats[0],
        })
    }

    fn push(&mut self, entry: Entry) {
        let key = Self::key(&entry);
        let mut hole = self.keys.len();
        self.keys.push(key);
        self.whats.push(entry.what);
        while hole > 0 {
            let parent = (hole - 1) / 4;
            if self.keys[parent] <= key {
                break;
            }
            self.keys[hole] = self.keys[parent];
            self.whats[hole] = self.whats[parent];
            hole = parent;
        }
        self.keys[hole] = key;
        self.whats[hole] = entry.what;
    }

    /// Removes the smallest entry; the heap must not be empty.
    fn pop(&mut self) -> Entry {
        let top = self.peek().expect("non-empty heap");
        let last_key = self.keys.pop().expect("non-empty heap");
        let last_what = self.whats.pop().expect("non-empty heap");
        let len = self.keys.len();
        if len == 0 {
            return top;
        }
        let mut hole = 0;
        loop {
            let first = 4 * hole + 1;
            if first >= len {
                break;
            }
            let mut child = first;
            let mut child_key = self.keys[first];
            for c in first + 1..(first + 4).min(len) {
                let key = self.keys[c];
                let smaller = key < child_key;
                child = if smaller { c } else { child };
                child_key = if smaller { key } else { child_key };
            }
            if last_key <= child_key {
                break;
            }
            self.keys[hole] = child_key;
            self.whats[hole] = self.whats[child];
            hole = child;
        }
        self.keys[hole] = last_key;
        self.whats[hole] = last_what;
        top
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    proptest! {
        /// Against a binary heap ordered by (time, insertion number): interleaved pushes (never
        /// into the past) and pops come out in the same order, ties first-in first-out,
        /// whether an event went to a lane or to the calendar, and there to the bucket being
        /// popped, a later one in the ring, or the overflow beyond it.
        #[test]
        fn pops_in_time_then_insertion_order(steps in proptest::collection::vec((0u64..3, 0u64..12, any::<bool>(), 0usize..3), 1..400)) {
            let mut queue = EventQueue::new([100, 250, 100, 0]);
            let mut reference = BinaryHeap::new();
            let mut now = 0;
            for (seq, (pops, choice, lane, scale)) in (0u64..).zip(steps) {
                // Lane delays, and irregular ones that often tie with them, fall in the same
                // calendar bucket, a later one, or beyond the ring.
                let step = [50, 733, 1_500_001][scale];
                let delay = if lane { [100, 250, 0][choice as usize % 3] } else { choice * step };
                let time = now + delay;
                queue.push(time, seq);
                reference.push(Reverse((time, seq)));
                for _ in 0..pops {
                    let expected = reference.pop().map(|Reverse((time, what))| Event { time, what });
                    let got = queue.pop();
                    prop_assert_eq!(got, expected);
                    if let Some(e) = got {
                        now = e.time;
                    }
                }
            }
            while let Some(Reverse((time, what))) = reference.pop() {
                prop_assert_eq!(queue.pop(), Some(Event { time, what }));
            }
            prop_assert_eq!(queue.pop(), None);
        }
    }
}
