//! The largest sizes the fabric commands accept from a user (a topology file, a workload, a
//! run's length), in one place. Each is checked where the value is parsed, and a value above
//! its cap is refused naming the cap ("radix 65535 is above the cap of 256 ports"), before
//! anything is allocated or simulated: an absurd number must not abort the tool allocating
//! gigabytes or keep it running for days.
//!
//! Each cap sits well above every real fabric and every case the thesis simulates
//! (`../shared/papers/003_05906d5d480b1948.txt`, Table 3.1 and chapter 4), so that no real
//! input meets it.

/// Ports per switch. The largest InfiniBand switch ASICs have 64 ports (Quantum-2, 128 when
/// split to NDR200) and Table 3.1's trees use 36 and 48; 256 leaves room for any switch
/// built, while a radix of 65535 makes a tree whose port tables take gigabytes.
pub const MAX_RADIX: u32 = 256;

/// Compute nodes in a tree. An InfiniBand subnet has 49151 unicast LIDs (0x0001-0xBFFF,
/// IBA 4.1.3), so no single fabric has more endpoints; Table 3.1's largest tree has 4608.
pub const MAX_NODES: u32 = 49_151;

/// Switch output ports in a tree, all levels. A three-level full fat tree has about five
/// switch ports per node (two at the leaf, two at the aggregation level, one at the core), so
/// [`MAX_NODES`] nodes need about 246 000; the simulator keeps a queue, credits and counters
/// per port (and telemetry per port, job and window), so this bounds its memory.
pub const MAX_SWITCH_PORTS: u64 = 1 << 18;

/// Switches of a fabric simulated as cabled (`Topology::graph`): routing it keeps the hops
/// between every pair of switches, so this bounds that table to 128 MiB. The largest
/// InfiniBand fabrics built have a few thousand switch ASICs (a 3-level fat tree of radix 40
/// and 16 000 hosts has 2 000).
pub const MAX_GRAPH_SWITCHES: u32 = 8_192;

/// (switch, destination) entries of a graph's forwarding tables: 128 MiB of ports, far above a
/// few thousand switches routing a few thousand hosts each.
pub const MAX_ROUTE_ENTRIES: u64 = 1 << 26;

/// Ranks of a workload, and the largest rank or node number a traffic or mapping file may
/// name: one rank per compute node, so never more than [`MAX_NODES`].
pub const MAX_RANKS: u32 = MAX_NODES;

/// Messages each rank sends (`rounds`, `arrays`, `messages`): 200 times the thesis' largest
/// (50 arrays per rank, 4.3). Several thousand ranks each sending this many 128 KiB messages
/// already simulate for hours.
pub const MAX_MESSAGES_PER_RANK: u64 = 10_000;

/// Bytes of one message: 8192 times the thesis' 128 KiB (4.2, 4.4). One such message takes
/// 86 ms at 100 Gb/s, longer than the longest case study (18 ms, 4.3) runs in all.
pub const MAX_MESSAGE_BYTES: u64 = 1 << 30;

/// Simulated time a run may be given (`--end`), picoseconds: one second, 55 times the longest
/// case study (18 ms, 4.3). A packet-level simulation of a full tree for longer takes days.
pub const MAX_END_PS: u64 = 1_000_000_000_000;

/// Gb/s of one cable (a cluster file's `link_gbps`): 16 000, ten times the fastest ports of
/// today (1.6 Tb/s Ethernet, 800 Gb/s XDR InfiniBand). A rate of 1e12 Gb/s is a typo, and
/// the simulator's serialisation times round to zero long before it.
pub const MAX_LINK_GBPS: f64 = 16_000.0;

/// Errors a second on one cable (`fabric:errors:<port>:<per_second>`): 1e10. A cable cannot
/// corrupt more packets than it carries, and the fastest port of today (1.6 Tb/s) carries at
/// most 3.1e9 packets a second even of the smallest (64 bytes: 1.6e12 b/s / 512 b); 1e10
/// leaves a margin of three. A real bad cable counts hundreds to millions a second.
pub const MAX_ERRORS_PER_SECOND: f64 = 1e10;

/// Hosts of a simulated cluster (a cluster file's `[[hosts]]`): [`MAX_NODES`]. Every host
/// has at least one RNIC port and every port takes one of the subnet's unicast LIDs, so no
/// fabric cables more hosts. Counted from the host lists before a host is built.
pub const MAX_CLUSTER_HOSTS: u32 = MAX_NODES;

/// A value above its cap, in words: "radix 65535 is above the cap of 256 ports".
pub fn above_cap(
    what: &str,
    value: impl std::fmt::Display,
    cap: impl std::fmt::Display,
    unit: &str,
) -> String {
    format!("{what} {value} is above the cap of {cap} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Table 3.1's trees are far below every cap.
    #[test]
    fn the_thesis_trees_fit_under_the_caps() {
        use crate::topology::Topology;
        for tree in [Topology::full(), Topology::tapered()] {
            assert!(tree.radix() <= MAX_RADIX / 4);
            assert!(tree.num_nodes() <= MAX_NODES / 10);
            assert!((tree.num_ports() as u64) <= MAX_SWITCH_PORTS / 10);
        }
        assert_eq!(
            above_cap("radix", 65535, MAX_RADIX, "ports"),
            "radix 65535 is above the cap of 256 ports"
        );
    }
}
