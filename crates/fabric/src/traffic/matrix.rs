//! The communication matrix: how much each rank sends each other rank, the input of every
//! mapping method that looks at the pattern (4.2.1 to 4.2.3) and of the mapping metrics of
//! Table 4.1.
//!
//! Read from a workload ([`super::Workload::matrix`]) or from a file of `src dst bytes` lines
//! (`#` comments; sizes as in workload files; repeated pairs add up):
//!
//! ```text
//! # src dst bytes
//! 0 1 128KiB
//! 1 0 128KiB
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use super::lines::{parse_records, parse_transfer, LineError};
use crate::input::InputError;
use crate::topology::{NodeId, Topology};

/// Traffic from one rank to another.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Flow {
    /// The sending rank.
    pub src: u32,
    /// The receiving rank.
    pub dst: u32,
    /// Bytes sent, all messages.
    pub bytes: u64,
    /// Packets of at most `packet_bytes`, counted per message (per line for a matrix file).
    pub packets: u64,
}

/// How much each rank sends each other rank: the flows, one per pair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommMatrix {
    ranks: u32,
    /// Sorted by (src, dst), one entry per pair, no self-traffic.
    flows: Vec<Flow>,
}

/// What a mapping makes of a pattern, both weighted by packets as the simulator counts hops.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct MappingQuality {
    /// Mean hops per packet ([`Topology::hops`]): Table 4.1's "average path length".
    pub average_path_length: f64,
    /// Fraction of packets whose source and destination hang from different leaves: the
    /// edge cut of 4.2.2 with leaves as partitions (thesis: METIS 0.19, incremental 0.23).
    pub leaf_edge_cut: f64,
}

impl CommMatrix {
    /// Sums messages (source, destination, bytes) per pair; a message of `b` bytes is
    /// `ceil(b / packet_bytes)` packets, as the simulator cuts it.
    pub fn from_messages(
        ranks: u32,
        messages: impl IntoIterator<Item = (u32, u32, u64)>,
        packet_bytes: u32,
    ) -> Self {
        assert!(packet_bytes > 0, "packets must have a size");
        let mut pairs: BTreeMap<(u32, u32), (u64, u64)> = BTreeMap::new();
        for (src, dst, bytes) in messages {
            assert!(src < ranks && dst < ranks, "rank outside the matrix");
            if src == dst {
                continue;
            }
            let entry = pairs.entry((src, dst)).or_default();
            entry.0 += bytes;
            entry.1 += bytes.div_ceil(u64::from(packet_bytes)).max(1);
        }
        let flows = pairs
            .into_iter()
            .map(|((src, dst), (bytes, packets))| Flow {
                src,
                dst,
                bytes,
                packets,
            })
            .collect();
        CommMatrix { ranks, flows }
    }

    /// Reads a matrix file (`src dst bytes` lines), counting packets of `packet_bytes`; errors
    /// name the file and the line.
    pub fn load(path: &Path, packet_bytes: u32) -> Result<Self, InputError> {
        let text = InputError::read(path)?;
        Self::parse(path, &text, packet_bytes)
    }

    /// Parses the text of a matrix file (`path` names it in errors); ranks = max rank + 1.
    pub fn parse(path: &Path, text: &str, packet_bytes: u32) -> Result<Self, InputError> {
        let messages = parse_records(
            path,
            text,
            parse_line,
            "no traffic: expected lines 'src dst bytes'",
        )?;
        let ranks = messages
            .iter()
            .map(|&(s, d, _)| s.max(d) + 1)
            .max()
            .unwrap_or(0);
        Ok(Self::from_messages(ranks, messages, packet_bytes))
    }

    /// Ranks of the pattern.
    pub fn ranks(&self) -> u32 {
        self.ranks
    }

    /// The flows, sorted by (src, dst), one per pair, no self-traffic.
    pub fn flows(&self) -> &[Flow] {
        &self.flows
    }

    /// Packets over all flows.
    pub fn total_packets(&self) -> u64 {
        self.flows.iter().map(|f| f.packets).sum()
    }

    /// Packets addressed to each rank.
    pub fn received_packets(&self) -> Vec<u64> {
        let mut received = vec![0; self.ranks as usize];
        for flow in &self.flows {
            received[flow.dst as usize] += flow.packets;
        }
        received
    }

    /// Average path length and leaf-level edge cut of `placement` (rank -> node, covering
    /// every rank); both 0 for a matrix without traffic.
    pub fn quality(&self, placement: &[NodeId], topology: &Topology) -> MappingQuality {
        let (mut packets, mut hops, mut cut) = (0u64, 0u64, 0u64);
        for flow in &self.flows {
            let (a, b) = (placement[flow.src as usize], placement[flow.dst as usize]);
            packets += flow.packets;
            hops += flow.packets * u64::from(topology.hops(a, b));
            if topology.leaf_of(a) != topology.leaf_of(b) {
                cut += flow.packets;
            }
        }
        let share = |x: u64| {
            if packets == 0 {
                0.0
            } else {
                x as f64 / packets as f64
            }
        };
        MappingQuality {
            average_path_length: share(hops),
            leaf_edge_cut: share(cut),
        }
    }

    /// The bandwidth of the matrix under `placement`: the largest |node(i) - node(j)| over
    /// communicating pairs, what reverse Cuthill-McKee minimises (4.2.1, Figure 4.4).
    pub fn bandwidth(&self, placement: &[NodeId]) -> u32 {
        self.flows
            .iter()
            .map(|f| {
                placement[f.src as usize]
                    .0
                    .abs_diff(placement[f.dst as usize].0)
            })
            .max()
            .unwrap_or(0)
    }
}

fn parse_line(fields: &[&str]) -> Result<(u32, u32, u64), LineError> {
    let &[src, dst, bytes] = fields else {
        return Err(LineError::Fields {
            expected: "3 fields 'src dst bytes'".to_string(),
            found: fields.len(),
        });
    };
    parse_transfer(src, dst, bytes)
}
