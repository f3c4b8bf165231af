//! Congestion-tree roots as a switch-port counter sampler finds them (the LDMS ibfabric way:
//! PortXmitData and PortXmitWait read every 1/f seconds), to set beside the roots in-packet
//! reservoir sampling finds (thesis 4.1, `trees`).
//!
//! A switch port counts XmitWait while it has data queued and no credits to send it (IBA
//! 16.1.3.5): the buffer after it is full. Congestion trees (thesis 4.1) spread exactly so,
//! upstream from their root, so a tree's branches are the ports that wait, and its root is
//! where the waiting stops: a port that is busy but does not wait itself. Counters do not say
//! which onward port held a waiting port up, so each waiting port blames the busiest port it
//! may feed under up*/down* routing that does not wait (`trees::may_continue`); the blamed
//! ports are the roots. A leaf's up port fed only by compute nodes has no switch port
//! upstream to wait for it (the NICs' own counters are not the fabric sampler's); it is a
//! root when it runs at line rate, as the mapping case's roots do (thesis 4.2, Theorem 4.2).
//!
//! Counters are deltas over a sampler's window: a tree that lives for 100 us adds 100 us of
//! waiting to a 10 ms window, so the thresholds below, fractions of the window, are what
//! the sampling rate trades against.

use super::trees::{far_end_ports, feeders, may_continue};
use crate::topology::{PortIndex, PortRef, Topology};

/// The counters of every switch output port over one sampler window (deltas).
#[derive(Clone, Debug, PartialEq)]
pub struct CounterWindow {
    /// When the window starts, ps of simulated time.
    pub start_ps: u64,
    /// Its length, ps.
    pub window_ps: u64,
    /// PortXmitData, bytes, by [`PortIndex`].
    pub xmit_bytes: Vec<u64>,
    /// PortXmitWait as time, picoseconds, by [`PortIndex`].
    pub xmit_wait_ps: Vec<u64>,
}

/// When counters call a port waiting, busy or saturated. These are ours, not the papers':
/// an operator's alert levels, applied to the window as a whole.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct CounterThresholds {
    /// A port waits when XmitWait is at least this fraction of the window (5 %: a port
    /// that is never short of credits waits ~0; back-pressure makes it wait a large part of
    /// the time the tree lives).
    pub waiting: f64,
    /// A blamed port must carry at least this fraction of line rate over the window.
    pub busy: f64,
    /// A leaf up port fed only by nodes roots a tree at this fraction of line rate (the
    /// diagnosis' `line_rate_fraction`, 0.85).
    pub saturated: f64,
}

impl Default for CounterThresholds {
    fn default() -> Self {
        CounterThresholds {
            waiting: 0.05,
            busy: 0.5,
            saturated: 0.85,
        }
    }
}

/// The roots counters show in one window, by port index, ascending.
pub fn counter_roots(
    topology: &Topology,
    window: &CounterWindow,
    link_gbps: f64,
    thresholds: &CounterThresholds,
) -> Vec<PortIndex> {
    let span = window.window_ps.max(1) as f64;
    let waits = |e: PortIndex| window.xmit_wait_ps[e as usize] as f64 / span >= thresholds.waiting;
    // Line rate over the window, in bytes: Gb/s = bits per ns = bits per 1000 ps.
    let line_bytes = link_gbps * span / 8000.0;
    let load = |e: PortIndex| window.xmit_bytes[e as usize] as f64 / line_bytes;
    let mut roots = Vec::new();
    for e in 0..topology.num_ports() as PortIndex {
        if !waits(e) {
            continue;
        }
        let port = topology.port_ref(e);
        let blamed = far_end_ports(topology, port)
            .into_iter()
            .filter(|&onward| may_continue(topology, port, onward))
            .map(|onward| topology.port_index(onward))
            .filter(|&onward| !waits(onward) && load(onward) >= thresholds.busy)
            .max_by(|&a, &b| load(a).total_cmp(&load(b)).then(b.cmp(&a)));
        roots.extend(blamed);
    }
    for leaf in topology.switches_at(crate::topology::Level::Leaf) {
        let switch = crate::topology::SwitchId(leaf);
        for port in topology.up_ports(switch) {
            let e = topology.port_index(PortRef { switch, port });
            let fed_by_switches = feeders(topology, PortRef { switch, port }).next().is_some();
            if !fed_by_switches && !waits(e) && load(e) >= thresholds.saturated {
                roots.push(e);
            }
        }
    }
    roots.sort_unstable();
    roots.dedup();
    roots
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{FatTreeParams, Peer, SwitchId};

    const GBPS: f64 = 100.0;
    const WINDOW_PS: u64 = 10_000_000; // 10 us: 125,000 bytes at line rate

    fn radix8() -> Topology {
        Topology::new(FatTreeParams::radix8()).unwrap()
    }

    fn quiet(t: &Topology) -> CounterWindow {
        CounterWindow {
            start_ps: 0,
            window_ps: WINDOW_PS,
            xmit_bytes: vec![0; t.num_ports()],
            xmit_wait_ps: vec![0; t.num_ports()],
        }
    }

    fn index(t: &Topology, switch: u32, port: u16) -> PortIndex {
        t.port_index(PortRef {
            switch: SwitchId(switch),
            port,
        })
    }

    #[test]
    fn an_incast_roots_at_the_node_port_its_waiting_feeders_blame() {
        let t = radix8();
        let mut w = quiet(&t);
        // Node 0 under leaf 0 receives at line rate; every aggregation switch's down port to
        // leaf 0 waits half the window (leaf 0's input buffers are full).
        let root = index(&t, 0, 0);
        w.xmit_bytes[root as usize] = 120_000;
        // A second busy port on the leaf that nobody waits for is not blamed over the root.
        w.xmit_bytes[index(&t, 0, 1) as usize] = 70_000;
        for agg in t.switches_at(crate::topology::Level::Aggregation) {
            for port in 0..t.ports(SwitchId(agg)) {
                let at = PortRef {
                    switch: SwitchId(agg),
                    port,
                };
                if let Peer::Switch { switch, .. } = t.peer(at) {
                    if switch == SwitchId(0) {
                        w.xmit_wait_ps[t.port_index(at) as usize] = WINDOW_PS / 2;
                        w.xmit_bytes[t.port_index(at) as usize] = 30_000;
                    }
                }
            }
        }
        assert_eq!(
            counter_roots(&t, &w, GBPS, &CounterThresholds::default()),
            [root]
        );
    }

    #[test]
    fn the_same_tree_diluted_in_a_long_window_is_not_seen() {
        let t = radix8();
        let mut w = quiet(&t);
        let root = index(&t, 0, 0);
        w.xmit_bytes[root as usize] = 120_000;
        let feeder = t.port_index(PortRef {
            switch: SwitchId(t.switches_at(crate::topology::Level::Aggregation).start),
            port: 0,
        });
        w.xmit_wait_ps[feeder as usize] = WINDOW_PS / 2;
        let thresholds = CounterThresholds::default();
        assert_eq!(counter_roots(&t, &w, GBPS, &thresholds), [root]);
        // One hundred times the window: the same counts wait 0.5 % of it.
        w.window_ps *= 100;
        assert!(counter_roots(&t, &w, GBPS, &thresholds).is_empty());
    }

    #[test]
    fn a_saturated_leaf_uplink_fed_by_nodes_is_a_root() {
        let t = radix8();
        let mut w = quiet(&t);
        let up = index(&t, 3, t.up_ports(SwitchId(3)).start);
        w.xmit_bytes[up as usize] = 118_000;
        let busy_down = index(&t, 3, 1);
        w.xmit_bytes[busy_down as usize] = 124_000;
        let roots = counter_roots(&t, &w, GBPS, &CounterThresholds::default());
        assert_eq!(
            roots,
            [up],
            "a busy down port with no waiting feeder is no root"
        );
    }
}
