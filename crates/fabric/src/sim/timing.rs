//! The configuration turned into the integers the engine computes with: picoseconds for
//! delays, flow units for credits.

use super::SimConfig;
use crate::topology::{NodeId, Topology};

#[derive(Clone, Debug)]
pub(crate) struct Timing {
    ps_per_byte: f64,
    /// Serialisation and flow units of a full packet, the common case, computed once.
    full_packet_ps: u64,
    full_packet_units: u32,
    pub packet_bytes: u32,
    pub link_ps: u64,
    pub switch_ps: u64,
    pub unit_bytes: u32,
    pub buffer_bytes: u32,
    /// Flow units one buffer holds (the credits a sender starts with).
    pub buffer_units: u32,
    /// A switch processor's time to answer one MAD (`mads`).
    pub mad_service_ps: u64,
    /// Per link (as the wiring numbers them), picoseconds a byte takes, where the tree's
    /// links run at rates of their own; empty when every link runs at `link_gbps`.
    ps_per_byte_of_link: Vec<f64>,
}

impl Timing {
    /// `config` must have passed validation (positive bandwidth, sizes, flow unit). Links run
    /// at `config.link_gbps`, or at their own rates where `topology` has them.
    pub fn new(config: &SimConfig, topology: &Topology) -> Self {
        let ps_per_byte = 8000.0 / config.link_gbps;
        let ps_per_byte_of_link = match topology.link_rates() {
            None => Vec::new(),
            Some(rates) => {
                // A node's injection link runs at its leaf port's rate.
                let node_rates = (0..topology.num_nodes())
                    .map(|n| rates[topology.port_index(topology.node_port(NodeId(n))) as usize]);
                rates
                    .iter()
                    .copied()
                    .chain(node_rates)
                    .map(|gbps| 8000.0 / gbps)
                    .collect()
            }
        };
        Timing {
            ps_per_byte,
            full_packet_ps: (f64::from(config.packet_bytes) * ps_per_byte).round() as u64,
            full_packet_units: units(config.packet_bytes, config.flow_unit_bytes),
            packet_bytes: config.packet_bytes,
            link_ps: ns_to_ps(config.link_latency_ns),
            switch_ps: ns_to_ps(config.switch_latency_ns),
            unit_bytes: config.flow_unit_bytes,
            buffer_bytes: config.buffer_bytes,
            buffer_units: config.buffer_bytes / config.flow_unit_bytes,
            mad_service_ps: ns_to_ps(config.mads.service_ns),
            ps_per_byte_of_link,
        }
    }

    /// Time to put `bytes` on `link`.
    #[inline]
    pub fn serialisation_ps(&self, link: u32, bytes: u32) -> u64 {
        if !self.ps_per_byte_of_link.is_empty() {
            self.serialisation_at_own_rate(link, bytes)
        } else if bytes == self.packet_bytes {
            self.full_packet_ps
        } else {
            (f64::from(bytes) * self.ps_per_byte).round() as u64
        }
    }

    /// [`Timing::serialisation_ps`] where links run at rates of their own (real fabrics
    /// only), out of line.
    #[cold]
    #[inline(never)]
    fn serialisation_at_own_rate(&self, link: u32, bytes: u32) -> u64 {
        (f64::from(bytes) * self.ps_per_byte_of_link[link as usize]).round() as u64
    }

    /// The serialisation times of a full packet, one per distinct link rate (one when every
    /// link runs at the same rate): the delays the event queue gives lanes.
    pub fn full_packet_times(&self) -> Vec<u64> {
        let mut times: Vec<u64> = self
            .ps_per_byte_of_link
            .iter()
            .map(|ps| (f64::from(self.packet_bytes) * ps).round() as u64)
            .chain([self.full_packet_ps])
            .collect();
        times.sort_unstable();
        times.dedup();
        times
    }

    /// Credits a packet takes: whole flow units, at least one (an empty packet still
    /// occupies a buffer slot).
    #[inline]
    pub fn units(&self, bytes: u32) -> u32 {
        if bytes == self.packet_bytes {
            self.full_packet_units
        } else {
            units(bytes, self.unit_bytes)
        }
    }
}

fn units(bytes: u32, unit_bytes: u32) -> u32 {
    bytes.div_ceil(unit_bytes).max(1)
}

pub(crate) fn ns_to_ps(ns: f64) -> u64 {
    (ns * 1000.0).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::FatTreeParams;

    #[test]
    fn hundred_gigabit_moves_a_byte_in_80_ps() {
        let config = SimConfig {
            packet_bytes: 4096,
            flow_unit_bytes: 64,
            ..SimConfig::default()
        };
        let t = Timing::new(&config, &Topology::new(FatTreeParams::radix8()).unwrap());
        assert_eq!(t.serialisation_ps(0, 4096), 4096 * 80);
        assert_eq!(t.serialisation_ps(0, 100), 8000);
        assert_eq!((t.link_ps, t.switch_ps), (20_000, 90_000));
        assert_eq!((t.units(4096), t.units(65), t.units(0)), (64, 2, 1));
        assert_eq!(t.buffer_units, 1024);
        assert_eq!(t.full_packet_times(), [4096 * 80]);
    }

    /// A link at a quarter of the rate takes four times as long, and so does the node link
    /// below a slow leaf port; the other links keep the run's rate.
    #[test]
    fn a_slow_link_serialises_at_its_own_rate() {
        let tree = Topology::new(FatTreeParams::radix8()).unwrap();
        let mut rates = vec![100.0; tree.num_ports()];
        rates[1] = 25.0;
        let tree = tree.with_link_rates(rates).unwrap();
        let t = Timing::new(&SimConfig::default(), &tree);
        let node_1_link = tree.num_ports() as u32 + 1;
        assert_eq!(t.serialisation_ps(0, 1000), 80_000);
        assert_eq!(t.serialisation_ps(1, 1000), 320_000);
        assert_eq!(t.serialisation_ps(node_1_link, 1000), 320_000);
        assert_eq!(t.serialisation_ps(node_1_link + 1, 1000), 80_000);
        assert_eq!(t.full_packet_times().len(), 2);
    }
}
