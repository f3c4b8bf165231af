//! The future event list, ordered by time and, among equal times, by scheduling order.
//!
//! Most events of a packet network are scheduled a fixed delay ahead: a full-size packet
//! reaches the next switch's routing logic serialisation + link + switch latency after it
//! starts, its node serialisation + link latency after, its link is free serialisation after.
//! Events pushed a fixed delay after a clock that never goes back come out of a plain FIFO
//! already sorted, so each such delay gets a FIFO lane; the rest (message start times, waits
//! for a busy link) go to a calendar of 1 ns buckets ([`Calendar`]) whose next bucket is
//! sorted once when it comes due (a bucket is filled before it is read, so one sort costs
//! less than keeping it a heap). A pop takes the earliest of the lane heads and the
//! calendar's, which are kept beside each other ([`EventQueue::heads`]) so that finding the
//! next one compares a few numbers in one line. Every event carries a sequence number, so
//! ties leave in scheduling order whichever structure holds them.

use std::cmp::Reverse;
use std::collections::VecDeque;

/// One scheduled event: when, and an opaque payload the engine decodes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    pub time: u64,
    pub what: u64,
}

/// An event with its sequence number; ordered by [`Entry::key`].
#[derive(Copy, Clone, Debug)]
struct Entry {
    time: u64,
    seq: u64,
    what: u64,
}

impl Entry {
    /// The head of an empty lane or calendar: after every real entry, whose sequence numbers
    /// stay below `u64::MAX`.
    const NONE: Entry = Entry {
        time: u64::MAX,
        seq: u64::MAX,
        what: 0,
    };

    /// Time, then sequence (unique, so `what` never decides), as one number: comparing two
    /// compiles to a compare and a subtract with borrow, where comparing field by field
    /// branches.
    #[inline]
    fn key(&self) -> u128 {
        u128::from(self.time) << 64 | u128::from(self.seq)
    }

    fn is_none(&self) -> bool {
        self.seq == u64::MAX
    }
}

pub(crate) struct EventQueue {
    /// Time of the latest popped event; nothing may be scheduled before it.
    now: u64,
    seq: u64,
    /// The delay of each lane, apart from the lanes so that a push's search reads one line.
    delays: Vec<u64>,
    lanes: Vec<VecDeque<Entry>>,
    calendar: Calendar,
    /// The earliest entry of each lane, then the calendar's ([`Entry::NONE`]: empty), copied
    /// out so that a pop finds the next earliest without reading the lanes.
    heads: Vec<Entry>,
    /// Where in `heads` the earliest entry is.
    earliest: usize,
    /// The lane the latest pop came from (`lanes.len()`: the calendar).
    popped: usize,
}

impl EventQueue {
    /// `lane_delays`: the delays (picoseconds) that get a FIFO lane.
    pub fn new(lane_delays: impl IntoIterator<Item = u64>) -> Self {
        let mut delays: Vec<u64> = Vec::new();
        for delay in lane_delays {
            if !delays.contains(&delay) {
                delays.push(delay);
            }
        }
        let lanes = delays.len();
        EventQueue {
            now: 0,
            seq: 0,
            delays,
            lanes: (0..lanes).map(|_| VecDeque::new()).collect(),
            calendar: Calendar::new(),
            heads: vec![Entry::NONE; lanes + 1],
            earliest: 0,
            popped: lanes,
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
        // A new head is the only way the earliest entry changes: an entry behind its lane's
        // head is later than it, one later than the calendar's earliest is not its earliest.
        let place = match self.delays.iter().position(|&d| d == delay) {
            Some(i) => {
                let lane = &mut self.lanes[i];
                lane.push_back(entry);
                if lane.len() > 1 {
                    return;
                }
                i
            }
            None => {
                self.calendar.push(entry);
                let calendar = self.lanes.len();
                if entry.key() > self.heads[calendar].key() {
                    return;
                }
                calendar
            }
        };
        self.heads[place] = entry;
        if entry.key() < self.heads[self.earliest].key() {
            self.earliest = place;
        }
    }

    /// The event [`Self::pop`] would return now.
    #[inline]
    pub fn peek(&self) -> Option<Event> {
        let head = self.heads[self.earliest];
        (!head.is_none()).then_some(Event {
            time: head.time,
            what: head.what,
        })
    }

    /// The payload `distance` places behind the head of the lane the latest pop came from:
    /// an event due a little later, for prefetching (each pop moves one lane, so looking
    /// there sees each lane event once).
    #[inline]
    pub fn upcoming(&self, distance: usize) -> Option<u64> {
        let lane = self.lanes.get(self.popped)?;
        lane.get(distance).map(|e| e.what)
    }

    /// The earliest event (the first scheduled among equal times), or `None` when none is left.
    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        let at = self.earliest;
        let entry = self.heads[at];
        if entry.is_none() {
            return None;
        }
        self.heads[at] = match self.lanes.get_mut(at) {
            Some(lane) => {
                lane.pop_front();
                lane.front().copied().unwrap_or(Entry::NONE)
            }
            None => {
                self.calendar.pop();
                self.calendar.peek()
            }
        };
        self.popped = at;
        self.now = entry.time;
        self.earliest = earliest_of(&self.heads);
        Some(Event {
            time: entry.time,
            what: entry.what,
        })
    }
}

/// The position of the earliest of `heads` (not empty), without branches on their order
/// (which a processor could not predict).
#[inline]
fn earliest_of(heads: &[Entry]) -> usize {
    let (mut best, mut best_key) = (0, heads[0].key());
    for (i, head) in heads.iter().enumerate().skip(1) {
        let key = head.key();
        let earlier = key < best_key;
        best = if earlier { i } else { best };
        best_key = if earlier { key } else { best_key };
    }
    best
}

/// The events that fit no lane, bucketed by time (a calendar queue): only the bucket due
/// next is kept ordered, sorted when it comes due, and the buckets after it are plain
/// vectors that take a push in a few instructions. A bucket is 2^[`BUCKET_SHIFT`] ps wide;
/// events beyond the ring's [`RING`] buckets wait in an overflow heap.
struct Calendar {
    /// Entries of buckets up to `current`, latest first (a pop takes the last).
    active: Vec<Entry>,
    /// The bucket number (time >> shift) the active entries have reached.
    current: u64,
    /// Buckets `current + 1 ..= current + RING - 1`, at their number modulo `RING`, unordered.
    ring: Vec<Vec<Entry>>,
    in_ring: usize,
    /// Entries too far ahead for the ring, ordered.
    overflow: QuaternaryHeap,
}

/// A bucket is 1.024 ns: the irregular events of a large fabric under load (message starts,
/// waits for a busy link) come at tens to hundreds per nanosecond, so a bucket's sort is short.
const BUCKET_SHIFT: u32 = 10;
/// The ring spans 0.5 us ahead, past nearly every wait for a link or a message start (at
/// half load a 512 B message's gap exceeds it one time in a thousand); every bucket keeps
/// the capacity it reached, so a longer ring costs memory and cache for nothing.
const RING: u64 = 512;

impl Calendar {
    fn new() -> Self {
        Calendar {
            active: Vec::new(),
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
            self.activate(entry);
        } else if bucket - self.current < RING {
            self.ring[(bucket % RING) as usize].push(entry);
            self.in_ring += 1;
        } else {
            self.overflow.push(entry);
        }
    }

    /// Puts `entry` among the active ones, in order (rare: most entries come due in a
    /// later bucket).
    fn activate(&mut self, entry: Entry) {
        let key = entry.key();
        let at = self.active.partition_point(|e| e.key() > key);
        self.active.insert(at, entry);
    }

    /// The earliest entry ([`Entry::NONE`]: none), moving the next bucket in when the
    /// active ones are gone.
    #[inline]
    fn peek(&mut self) -> Entry {
        if self.active.is_empty() {
            self.advance();
        }
        self.active.last().copied().unwrap_or(Entry::NONE)
    }

    /// Removes the earliest entry; the calendar must not be empty.
    #[inline]
    fn pop(&mut self) {
        if self.active.is_empty() {
            self.advance();
        }
        self.active.pop().expect("non-empty calendar");
    }

    /// Makes the earliest non-empty bucket (in the ring or the overflow) the active one; the
    /// active entries are gone.
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
            // The empty active vector takes the bucket's place, so that both keep the
            // capacity they reached.
            let slot = (next % RING) as usize;
            std::mem::swap(&mut self.active, &mut self.ring[slot]);
            self.in_ring -= self.active.len();
            self.active.sort_unstable_by_key(|e| Reverse(e.key()));
        }
        while let Some(entry) = self.overflow.peek() {
            if entry.time >> BUCKET_SHIFT != next {
                break;
            }
            self.overflow.pop();
            self.activate(entry);
        }
    }
}

/// A min-heap of entries with four children per node (the calendar's overflow). Keys (time, then sequence) are one
/// `u128` so that picking the smallest child compiles to conditional moves rather than
/// branches the processor cannot predict; payloads sit in a parallel vector.
#[derive(Default)]
struct QuaternaryHeap {
    keys: Vec<u128>,
    whats: Vec<u64>,
}

impl QuaternaryHeap {
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
        let key = entry.key();
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
