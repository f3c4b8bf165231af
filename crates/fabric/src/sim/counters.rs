//! Switch port counters as a switch's PerfMgt agent keeps them (IBA 16.1.3.5 PortCounters;
//! the issue's `PortXmitData`, `PortRcvData`, `PortXmitPkts`, `PortRcvPkts`, `PortXmitWait`),
//! and their periodic snapshots ([`super::SimConfig::counter_interval_ps`]).
//!
//! Almost nothing is added to the hot path: what a port has sent is what entered its output
//! queue (the ground truth the links count already) less what is still queued, read only
//! when a snapshot is taken; what a port has received is two adds in the line of the input
//! buffer an arrival updates anyway ([`super::links::Link::rcv_bytes`]). The one new state is
//! XmitWait, the time a port had data queued, its link idle, and no credits to send it: a
//! flag in the line `transmit` reads, set when a packet stalls on credits, and the start of
//! the wait in a cold per-port array ([`Waits`]) touched only at the start and the end of a
//! wait. MADs (virtual lane 15, `mads`) are counted in their own cold per-port counters and
//! added in at snapshot time, so the data counters include every virtual lane as a switch's
//! do.
//!
//! Memory: one snapshot holds 40 bytes per switch port (`full`: 18,144 ports, 726 KB), so a
//! run keeps `ports x snapshots x 40` bytes; the caller bounds it by the interval and `end_ps`.

use serde::{Deserialize, Serialize};

/// The cumulative counters of one switch output port (and of its input side, the `rcv`
/// ones), since the start of the run; indexed like [`crate::topology::PortIndex`].
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortCounters {
    /// Bytes this port has finished putting on its link (data and MADs; real counters count
    /// in units of 4 bytes, these in bytes). A packet counts when its transmission starts.
    pub xmit_bytes: u64,
    /// Packets this port has started putting on its link (data and MADs).
    pub xmit_packets: u64,
    /// Bytes that arrived at this port's input from the peer at the far end of its link.
    /// A packet counts when it is whole in the input buffer (after the link's latency).
    pub rcv_bytes: u64,
    /// Packets that arrived whole at this port's input.
    pub rcv_packets: u64,
    /// Time the port had data queued, its link idle, and not the credits to send the head
    /// packet (PortXmitWait), picoseconds; a MAD sent meanwhile (VL15 needs no credits)
    /// does not end the wait. Real switches count it in ticks of their own
    /// clock; [`PortCounters::xmit_wait_ticks`] gives it in the simulator's tick, the time to
    /// send one flow-control unit at link rate.
    pub xmit_wait_ps: u64,
}

impl PortCounters {
    /// XmitWait in ticks of `tick_ps` (see [`CounterSnapshot::tick_ps`]), rounded down.
    pub fn xmit_wait_ticks(&self, tick_ps: u64) -> u64 {
        self.xmit_wait_ps / tick_ps.max(1)
    }
}

/// Every switch port's counters at one simulated time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CounterSnapshot {
    /// When the snapshot was taken, ps of simulated time.
    pub at_ps: u64,
    /// Indexed by [`crate::topology::PortIndex`].
    pub ports: Vec<PortCounters>,
}

impl CounterSnapshot {
    /// The tick [`PortCounters::xmit_wait_ticks`] counts in: the time one flow unit of
    /// `flow_unit_bytes` takes at `link_gbps` (64 B at 100 Gb/s: 5.12 ns).
    pub fn tick_ps(link_gbps: f64, flow_unit_bytes: u32) -> u64 {
        (f64::from(flow_unit_bytes) * 8000.0 / link_gbps).round() as u64
    }

    /// What each port counted between `earlier` and this snapshot, as a sampler reading the
    /// counters at both times would compute (the counters never wrap: they are 64-bit).
    pub fn delta_since(&self, earlier: &CounterSnapshot) -> Vec<PortCounters> {
        self.ports
            .iter()
            .zip(&earlier.ports)
            .map(|(now, then)| PortCounters {
                xmit_bytes: now.xmit_bytes - then.xmit_bytes,
                xmit_packets: now.xmit_packets - then.xmit_packets,
                rcv_bytes: now.rcv_bytes - then.rcv_bytes,
                rcv_packets: now.rcv_packets - then.rcv_packets,
                xmit_wait_ps: now.xmit_wait_ps - then.xmit_wait_ps,
            })
            .collect()
    }
}

/// XmitWait of one port: the total of its finished waits, and when the current one began.
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct Wait {
    total_ps: u64,
    since_ps: u64,
}

impl Wait {
    /// A wait begins at `now`.
    #[inline]
    pub fn begin(&mut self, now: u64) {
        self.since_ps = now;
    }

    /// The wait under way ends at `now`.
    #[inline]
    pub fn end(&mut self, now: u64) {
        self.total_ps += now - self.since_ps;
    }

    /// The time waited until `now`, the wait under way included when `waiting`.
    pub fn total_at(&self, now: u64, waiting: bool) -> u64 {
        self.total_ps + if waiting { now - self.since_ps } else { 0 }
    }
}

/// The per-port XmitWait state, cold: read at the start and the end of a wait only.
pub(crate) type Waits = Vec<Wait>;
