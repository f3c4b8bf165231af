//! The configuration turned into the integers the engine computes with: picoseconds for
//! delays, flow units for credits.

use super::SimConfig;

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
}

impl Timing {
    /// `config` must have passed validation (positive bandwidth, sizes, flow unit).
    pub fn new(config: &SimConfig) -> Self {
        let ps_per_byte = 8000.0 / config.link_gbps;
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
        }
    }

    /// Time to put `bytes` on a link.
    #[inline]
    pub fn serialisation_ps(&self, bytes: u32) -> u64 {
        if bytes == self.packet_bytes {
            self.full_packet_ps
        } else {
            (f64::from(bytes) * self.ps_per_byte).round() as u64
        }
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

    #[test]
    fn hundred_gigabit_moves_a_byte_in_80_ps() {
        let config = SimConfig {
            packet_bytes: 4096,
            flow_unit_bytes: 64,
            ..SimConfig::default()
        };
        let t = Timing::new(&config);
        assert_eq!(t.serialisation_ps(4096), 4096 * 80);
        assert_eq!(t.serialisation_ps(100), 8000);
        assert_eq!((t.link_ps, t.switch_ps), (20_000, 90_000));
        assert_eq!((t.units(4096), t.units(65), t.units(0)), (64, 2, 1));
        assert_eq!(t.buffer_units, 1024);
    }
}
