//! What the sender NIC writes into a packet (algorithms 2 and 5) and what every switch does to
//! it (algorithms 3, 6 and 8), with saturating hop counters (thesis 5.6).

use rand::RngCore;

use super::hash::{hash_bit, port_key};
use super::{Header, TelemetryConfig, TelemetryKind};
use crate::topology::{PortIndex, PortRef};

/// A telemetry setting the simulator cannot run with.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TelemetryConfigError {
    /// The hop counters' width (thesis 5.6) is outside 1 to 8 bits.
    #[error("hop_counter_bits must be between 1 and 8, not {0}")]
    HopCounterBits(u8),
    /// The share of packets tagged (thesis 5.1) is outside (0, 1].
    #[error("tag_fraction must be in (0, 1], not {0}")]
    TagFraction(f64),
}

impl TelemetryConfig {
    /// Checks what the simulator cannot run with: a counter of 1 to 8 bits (the header field is
    /// a `u8`) and a tag fraction in (0, 1].
    pub fn validate(&self) -> Result<(), TelemetryConfigError> {
        if !(1..=8).contains(&self.hop_counter_bits) {
            return Err(TelemetryConfigError::HopCounterBits(self.hop_counter_bits));
        }
        if !(self.tag_fraction > 0.0 && self.tag_fraction <= 1.0) {
            return Err(TelemetryConfigError::TagFraction(self.tag_fraction));
        }
        Ok(())
    }

    /// The largest value a `hop_counter_bits`-wide counter holds, `2^b - 1`.
    pub fn hop_counter_max(&self) -> u8 {
        u8::MAX >> (8 - self.hop_counter_bits.clamp(1, 8))
    }

    /// Algorithm 2 / 5 (sender NIC): a fresh header with empty reservoirs and zero counts. Only
    /// a `tag_fraction` of the packets is tagged (thesis 5.1: tagging a subset cuts the
    /// overhead); switches leave an untagged packet alone and the receiver ignores it.
    pub fn on_send(&self, rng: &mut dyn RngCore) -> Header {
        let tagged = match self.kind {
            TelemetryKind::Off => false,
            _ if self.tag_fraction >= 1.0 => true,
            _ => f64::from(rng.next_u32()) < self.tag_fraction * 4_294_967_296.0,
        };
        Header {
            tagged,
            ..Header::default()
        }
    }

    /// Algorithm 3 / 6 / 8 (every switch), for the output port the packet leaves through.
    /// `index` is what [`TelemetryKind::Reservoir`] stores; the 1-bit kinds store the hash of
    /// `packet_id` and `at` instead (thesis 5.4).
    pub fn on_switch(
        &self,
        header: &mut Header,
        packet_id: u32,
        at: PortRef,
        index: PortIndex,
        congested: bool,
        rng: &mut dyn RngCore,
    ) {
        if !header.tagged {
            return;
        }
        let sample = || match self.kind {
            TelemetryKind::Reservoir => index,
            _ => hash_bit(packet_id, port_key(at)),
        };
        let max = self.hop_counter_max();
        match self.kind {
            TelemetryKind::Off => {}
            TelemetryKind::Reservoir | TelemetryKind::Reservoir1Bit => {
                // Algorithm 3 / 6: two independent reservoirs of size 1.
                if replaces_reservoir(header.hop_count, rng) {
                    header.hop_sample = sample();
                }
                header.hop_count = saturating_increment(header.hop_count, max);
                if congested {
                    if replaces_reservoir(header.congested_count, rng) {
                        header.congested_sample = sample();
                    }
                    header.congested_count = saturating_increment(header.congested_count, max);
                }
            }
            TelemetryKind::SingleBit => {
                // Algorithm 8: one reservoir; the congested bit travels with the sampled hop.
                if replaces_reservoir(header.hop_count, rng) {
                    header.hop_sample = sample();
                    header.congested_bit = congested;
                }
                header.hop_count = saturating_increment(header.hop_count, max);
            }
        }
    }
}

/// Whether "a random integer between 0 and `count`, inclusive" is 0 (algorithm 3 lines 2 and
/// 7): the reservoir keeps the new hop with probability 1 / (count + 1). One draw from `rng`,
/// reduced to `0..=count` by multiply-shift (Lemire), whose bias of at most (count + 1) / 2^32
/// is far below anything the statistics can see.
fn replaces_reservoir(count: u8, rng: &mut dyn RngCore) -> bool {
    (u64::from(rng.next_u32()) * (u64::from(count) + 1)) >> 32 == 0
}

/// Thesis 5.6: the hop counter saturates at `max` rather than wrapping. A wrapped counter
/// reads 0 again and makes the next switch overwrite the reservoir with certainty; a saturated
/// one only under-weights paths longer than `max`.
fn saturating_increment(count: u8, max: u8) -> u8 {
    if count < max {
        count + 1
    } else {
        max
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::topology::SwitchId;

    fn config(kind: TelemetryKind, bits: u8) -> TelemetryConfig {
        TelemetryConfig {
            kind,
            hop_counter_bits: bits,
            tag_fraction: 1.0,
        }
    }

    fn port(switch: u32, port: u16) -> PortRef {
        PortRef {
            switch: SwitchId(switch),
            port,
        }
    }

    #[test]
    fn counter_widths() {
        assert_eq!(config(TelemetryKind::Reservoir, 2).hop_counter_max(), 3);
        assert_eq!(config(TelemetryKind::Reservoir, 8).hop_counter_max(), 255);
        assert!(config(TelemetryKind::Reservoir, 0).validate().is_err());
        assert!(config(TelemetryKind::Reservoir, 9).validate().is_err());
        let mut zero_tags = config(TelemetryKind::Reservoir, 3);
        zero_tags.tag_fraction = 0.0;
        assert!(zero_tags.validate().is_err());
        assert!(TelemetryConfig::default().validate().is_ok());
    }

    /// The first hop always fills an empty reservoir (thesis 3.2: the only integer between 0
    /// and 0 is 0), and counts saturate at 2^b - 1 instead of wrapping.
    #[test]
    fn first_hop_fills_and_counts_saturate() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let cfg = config(TelemetryKind::Reservoir, 2);
        let mut header = cfg.on_send(&mut rng);
        assert!(header.tagged);
        cfg.on_switch(&mut header, 7, port(4, 1), 33, true, &mut rng);
        assert_eq!(
            (header.hop_sample, header.congested_sample),
            (33, 33),
            "first hop"
        );
        for hop in 0..6 {
            cfg.on_switch(&mut header, 7, port(5 + hop, 2), 40 + hop, false, &mut rng);
        }
        assert_eq!((header.hop_count, header.congested_count), (3, 1));
    }

    #[test]
    fn one_bit_kinds_store_the_hash() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let at = port(17, 3);
        for kind in [TelemetryKind::Reservoir1Bit, TelemetryKind::SingleBit] {
            for id in [1u32, 2, 99, 123_456_789] {
                let cfg = config(kind, 3);
                let mut header = cfg.on_send(&mut rng);
                cfg.on_switch(&mut header, id, at, 0, true, &mut rng);
                let expected = hash_bit(id, port_key(at));
                assert_eq!(header.hop_sample, expected);
                assert_eq!(header.hop_count, 1);
                if kind == TelemetryKind::SingleBit {
                    assert!(header.congested_bit);
                    assert_eq!(header.congested_count, 0);
                } else {
                    assert_eq!(
                        (header.congested_sample, header.congested_count),
                        (expected, 1)
                    );
                }
            }
        }
    }

    #[test]
    fn untagged_and_off_packets_carry_nothing() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let off = config(TelemetryKind::Off, 3);
        let mut header = off.on_send(&mut rng);
        assert!(!header.tagged);
        let mut sparse = config(TelemetryKind::Reservoir, 3);
        sparse.tag_fraction = 1e-9;
        let mut untagged = sparse.on_send(&mut rng);
        assert!(!untagged.tagged);
        sparse.on_switch(&mut untagged, 1, port(0, 0), 5, true, &mut rng);
        off.on_switch(&mut header, 1, port(0, 0), 5, true, &mut rng);
        assert_eq!(untagged, Header::default());
        assert_eq!(header, Header::default());
    }

    /// Thesis 3.3 relies on the hop and the congested reservoir sampling independently: on a
    /// path congested at all 5 hops both hold the same port 1/5 of the time (4 standard
    /// errors over 20 000 packets), not always, as one shared random integer would make them.
    #[test]
    fn reservoirs_sample_independently() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let cfg = config(TelemetryKind::Reservoir, 3);
        let packets = 20_000;
        let same = (0..packets)
            .filter(|_| {
                let mut header = cfg.on_send(&mut rng);
                for hop in 0..5 {
                    cfg.on_switch(&mut header, 1, port(hop, 0), hop, true, &mut rng);
                }
                header.hop_sample == header.congested_sample
            })
            .count() as f64;
        let standard_error = (0.2 * 0.8 / f64::from(packets)).sqrt();
        assert!((same / f64::from(packets) - 0.2).abs() <= 4.0 * standard_error);
    }

    /// 1 / (count + 1) for each count, over 200 000 draws (4 standard errors).
    #[test]
    fn replacement_probability() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let draws = 200_000;
        for count in [0u8, 1, 2, 4, 254] {
            let p = 1.0 / (f64::from(count) + 1.0);
            let hits = (0..draws)
                .filter(|_| replaces_reservoir(count, &mut rng))
                .count() as f64;
            let standard_error = (p * (1.0 - p) / f64::from(draws)).sqrt();
            assert!(
                (hits / f64::from(draws) - p).abs() <= 4.0 * standard_error,
                "count {count}: {hits}"
            );
        }
    }
}
