/*!
NUMA nodes, from `sys/devices/system/node/node<N>/`
(`Documentation/ABI/stable/sysfs-devices-node`; `drivers/base/node.c`).

| file | policy |
|---|---|
| `sys/devices/system/node/` | optional: absent on a kernel without NUMA, which then has one node 0 (a note) |
| `node<N>/cpulist` | required: a cpulist (`0-23,48-71`; empty for a node without CPUs) |
| `node<N>/meminfo` | optional: `Node <N> MemTotal: <kB> kB` |
| `node<N>/distance` | optional: one distance per online node, in node order (`10 21`); a row of another length is left out with a note |
| `sys/devices/system/cpu/cpu<C>/topology/physical_package_id` | optional, per CPU of the node (see [`super::cpu`]) |
| `sys/devices/system/cpu/online` | optional: node 0's CPUs on a kernel without NUMA |
| `proc/meminfo` | optional: node 0's memory on a kernel without NUMA (`MemTotal: <kB> kB`) |
*/

use super::cpu;
use super::pci::parse_decimal_u32;
use super::{DiscoverError, ParseError, SysRoot};
use serde::Serialize;

/// The largest CPU number a cpulist may name (the kernel's `NR_CPUS` is at most 8192 on
/// x86-64); the bound keeps a corrupt range from allocating without limit.
pub const MAX_CPU: u32 = 65_535;

/// A NUMA node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NumaNode {
    /// The N of `node<N>`.
    pub id: u32,
    /// `node<N>/cpulist`, as written (validated); empty for a memory-only node.
    pub cpulist: String,
    /// `MemTotal` of `node<N>/meminfo`, KiB.
    pub mem_total_kib: Option<u64>,
    /// `node<N>/distance`: the ACPI SLIT distance to every node, in the order of
    /// [`Discovery::numa_nodes`](super::Discovery::numa_nodes); `None` when absent or of
    /// another length (a note says so).
    pub distance: Option<Vec<u32>>,
    /// The CPU packages (`physical_package_id`) of the node's CPUs, ascending; empty for a
    /// node without CPUs or when the kernel does not say.
    pub packages: Vec<u32>,
}

impl NumaNode {
    /// A node with CPUs.
    pub fn has_cpus(&self) -> bool {
        !self.cpulist.is_empty()
    }

    /// A node whose memory a probe can reach: it reports memory, or has CPUs and does
    /// not say (absent is not zero).
    pub fn has_memory(&self) -> bool {
        match self.mem_total_kib {
            Some(kib) => kib > 0,
            None => self.has_cpus(),
        }
    }
}

/// Parses `node<N>/distance` (`node_read_distance`: `%d` per online node, space
/// separated).
pub fn parse_distance(s: &str) -> Result<Vec<u32>, ParseError> {
    let bad = || ParseError::new(s, "NUMA distances like `10 21`");
    let row: Vec<u32> = s
        .split(' ')
        .map(|d| parse_decimal_u32(d).ok_or_else(bad))
        .collect::<Result<_, _>>()?;
    Ok(row)
}

/// Parses a cpulist (`bitmap_print_to_pagebuf` with `list = true`): comma-separated CPU
/// numbers and ranges `a-b`, ascending; empty means no CPUs. Returns the CPU numbers.
pub fn parse_cpulist(s: &str) -> Result<Vec<u32>, ParseError> {
    let bad = || ParseError::new(s, "a cpulist like 0-23,48-71");
    let mut cpus = Vec::new();
    if s.is_empty() {
        return Ok(cpus);
    }
    for part in s.split(',') {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let lo = parse_decimal_u32(lo).ok_or_else(bad)?;
        let hi = parse_decimal_u32(hi).ok_or_else(bad)?;
        if lo > hi || hi > MAX_CPU || cpus.last().is_some_and(|last| *last >= lo) {
            return Err(bad());
        }
        cpus.extend(lo..=hi);
    }
    Ok(cpus)
}

/// Parses `MemTotal` from a node's `meminfo` (`Node 0 MemTotal:  8218844 kB`) or from
/// `/proc/meminfo` (`MemTotal:  8218844 kB`); `None` when no such line exists.
pub fn parse_mem_total_kib(s: &str) -> Result<Option<u64>, ParseError> {
    for line in s.lines() {
        let mut words = line.split_whitespace().skip_while(|w| *w != "MemTotal:");
        if words.next().is_none() {
            continue;
        }
        let bad = || ParseError::new(line.trim(), "a MemTotal line like `MemTotal: 8218844 kB`");
        let value = words.next().ok_or_else(bad)?;
        if words.next() != Some("kB") || words.next().is_some() {
            return Err(bad());
        }
        if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        return value.parse().map(Some).map_err(|_| bad());
    }
    Ok(None)
}

/// The NUMA nodes, sorted by id.
pub(crate) fn read_nodes(
    root: &SysRoot,
    notes: &mut Vec<String>,
) -> Result<Vec<NumaNode>, DiscoverError> {
    let dir = root.path("sys/devices/system/node");
    let Some(entries) = root.list_dir(&dir)? else {
        notes.push(
            "no sys/devices/system/node (kernel without NUMA): one node 0 assumed".to_string(),
        );
        let cpulist = root.path("sys/devices/system/cpu/online");
        let cpulist = root
            .read_optional(&cpulist)?
            .map_or(Ok(String::new()), |t| {
                parse_cpulist(&t)
                    .map(|_| t)
                    .map_err(|e| DiscoverError::malformed(&cpulist, e))
            })?;
        let mem_total_kib = root
            .parse_optional(&root.path("proc/meminfo"), parse_mem_total_kib)?
            .flatten();
        let cpus = parse_cpulist(&cpulist).expect("validated above");
        return Ok(vec![NumaNode {
            id: 0,
            packages: cpu::packages(root, &cpus)?,
            cpulist,
            mem_total_kib,
            distance: None,
        }]);
    };
    let mut nodes = Vec::new();
    for name in entries {
        // The folder also holds `online`, `possible`, `has_cpu` ... and `power/`.
        let Some(id) = name.strip_prefix("node").and_then(parse_decimal_u32) else {
            continue;
        };
        let node_dir = dir.join(&name);
        let cpulist_path = node_dir.join("cpulist");
        let cpulist = root.read_required(&cpulist_path)?;
        let cpus =
            parse_cpulist(&cpulist).map_err(|e| DiscoverError::malformed(&cpulist_path, e))?;
        let mem_total_kib = root
            .parse_optional(&node_dir.join("meminfo"), parse_mem_total_kib)?
            .flatten();
        nodes.push(NumaNode {
            id,
            cpulist,
            mem_total_kib,
            distance: root.parse_optional(&node_dir.join("distance"), parse_distance)?,
            packages: cpu::packages(root, &cpus)?,
        });
    }
    nodes.sort_by_key(|n| n.id);
    // A row must give one distance per node, else its columns cannot be matched to nodes.
    let count = nodes.len();
    for n in &mut nodes {
        if n.distance.as_ref().is_some_and(|row| row.len() != count) {
            notes.push(format!(
                "node{}/distance has {} entries for {count} NUMA nodes: left out",
                n.id,
                n.distance.as_ref().map_or(0, Vec::len)
            ));
            n.distance = None;
        }
    }
    Ok(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn cpulists_follow_bitmap_print() {
        let table: [(&str, Option<Vec<u32>>); 10] = [
            ("0-3", Some(vec![0, 1, 2, 3])),
            ("0", Some(vec![0])),
            ("", Some(vec![])),
            ("0-1,4,6-7", Some(vec![0, 1, 4, 6, 7])),
            ("3-1", None),
            ("0-3,2", None),
            ("0,,1", None),
            ("0-", None),
            ("0-70000", None),
            (" 0", None),
        ];
        for (text, want) in table {
            assert_eq!(parse_cpulist(text).ok(), want, "{text}");
        }
    }

    #[test]
    fn distances_follow_node_read_distance() {
        assert_eq!(parse_distance("10 21"), Ok(vec![10, 21]));
        assert_eq!(parse_distance("10"), Ok(vec![10]));
        for bad in ["", "10  21", "10,21", "10 -1", " 10", "ten"] {
            assert!(parse_distance(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn mem_total_from_node_and_proc_meminfo() {
        let node = "Node 0 MemTotal:        8218844 kB\nNode 0 MemFree:         5657224 kB\n";
        assert_eq!(parse_mem_total_kib(node), Ok(Some(8_218_844)));
        let proc = "MemTotal:       16384000 kB\nMemFree:         1234 kB\n";
        assert_eq!(parse_mem_total_kib(proc), Ok(Some(16_384_000)));
        assert_eq!(parse_mem_total_kib("Node 0 MemFree: 1 kB\n"), Ok(None));
        assert_eq!(parse_mem_total_kib(""), Ok(None));
        for bad in [
            "Node 0 MemTotal: lots kB",
            "Node 0 MemTotal: 12 MB",
            "Node 0 MemTotal:",
            "MemTotal: -1 kB",
            "MemTotal: 99999999999999999999999 kB",
        ] {
            assert!(parse_mem_total_kib(bad).is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn parsers_never_panic(s in "\\PC*") {
            let _ = parse_cpulist(&s);
            let _ = parse_mem_total_kib(&s);
            let _ = parse_distance(&s);
        }

        #[test]
        fn distances_round_trip(row in prop::collection::vec(0u32..=255, 1..64)) {
            let text: Vec<String> = row.iter().map(u32::to_string).collect();
            prop_assert_eq!(parse_distance(&text.join(" ")), Ok(row));
        }

        #[test]
        fn cpulist_like_strings_never_panic(s in "[0-9,-]{0,24}") {
            if let Ok(cpus) = parse_cpulist(&s) {
                prop_assert!(cpus.windows(2).all(|w| w[0] < w[1]));
            }
        }

        #[test]
        fn cpulists_round_trip(cpus in prop::collection::btree_set(0u32..512, 0..40)) {
            let cpus: Vec<u32> = cpus.into_iter().collect();
            // Print as the kernel does: runs of consecutive CPUs as ranges.
            let mut parts = Vec::new();
            let mut i = 0;
            while i < cpus.len() {
                let mut j = i;
                while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
                    j += 1;
                }
                parts.push(if i == j {
                    cpus[i].to_string()
                } else {
                    format!("{}-{}", cpus[i], cpus[j])
                });
                i = j + 1;
            }
            prop_assert_eq!(parse_cpulist(&parts.join(",")), Ok(cpus));
        }

        #[test]
        fn mem_totals_round_trip(node in 0u32..64, kib: u64) {
            let text = format!("Node {node} MemTotal: {kib:>16} kB\nNode {node} MemFree: 1 kB\n");
            prop_assert_eq!(parse_mem_total_kib(&text), Ok(Some(kib)));
        }
    }
}
