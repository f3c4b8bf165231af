//! How long a transfer takes at a rate limit, with and without the RNIC's "slow start"
//! (Hostping 6 #9), computed analytically.
//!
//! Rates are Gb/s, which is bits per ns. Without slow start a transfer of `b` bits at limit
//! `L` takes `b / L`. With slow start the send rate starts at `line_rate / 16` after idle
//! and ramps linearly to `L` over 500 us ([`RAMP_NS`]):
//! `r(t) = r0 + (L - r0) * t / T` for `t < T`, then `L`. Every latency-test message starts
//! after idle and pays the ramp; a streaming test pays it once, at its start. When
//! `L <= r0` there is nothing to ramp and the rate is `L` throughout.

/// Length of the slow-start ramp, ns (our choice: long enough that a 128 KiB message never
/// leaves it, short enough that a 100 ms stream loses well under 1 %).
pub(crate) const RAMP_NS: f64 = 500_000.0;

/// The ramp starts at the line rate divided by this.
pub(crate) const RAMP_START_DIVISOR: f64 = 16.0;

/// The rate profile of a transfer: a steady limit, and the ramp's start rate when slow
/// start is on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Profile {
    /// Steady-state limit, Gb/s.
    pub limit_gbps: f64,
    /// Rate at time 0 when slow start is on, Gb/s.
    pub ramp_from_gbps: Option<f64>,
}

impl Profile {
    /// The ramp's start rate, when there is a ramp to climb.
    fn ramp(&self) -> Option<f64> {
        self.ramp_from_gbps.filter(|&r0| r0 < self.limit_gbps)
    }

    /// Time to move `bits` starting at time 0 (after idle), ns. Infinite at a zero limit.
    pub(crate) fn transfer_ns(&self, bits: f64) -> f64 {
        let l = self.limit_gbps;
        let Some(r0) = self.ramp() else {
            return bits / l;
        };
        let ramp_bits = (r0 + l) * RAMP_NS / 2.0;
        if bits >= ramp_bits {
            return RAMP_NS + (bits - ramp_bits) / l;
        }
        // Solve r0 t + a t^2 = bits with a = (L - r0) / 2T, in the form that stays exact
        // when a is small: t = 2 bits / (r0 + sqrt(r0^2 + 4 a bits)).
        let a = (l - r0) / (2.0 * RAMP_NS);
        2.0 * bits / (r0 + (r0 * r0 + 4.0 * a * bits).sqrt())
    }

    /// Bits moved between `from_ns` and `to_ns`, counted from the start of the transfer.
    pub(crate) fn bits_between(&self, from_ns: f64, to_ns: f64) -> f64 {
        let l = self.limit_gbps;
        let Some(r0) = self.ramp() else {
            return l * (to_ns - from_ns);
        };
        let ramp_end = to_ns.min(RAMP_NS);
        let mut bits = 0.0;
        if from_ns < ramp_end {
            let slope = (l - r0) / RAMP_NS;
            bits +=
                r0 * (ramp_end - from_ns) + slope * (ramp_end * ramp_end - from_ns * from_ns) / 2.0;
        }
        let steady_from = from_ns.max(RAMP_NS);
        if to_ns > steady_from {
            bits += l * (to_ns - steady_from);
        }
        bits
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const FLAT: Profile = Profile {
        limit_gbps: 200.0,
        ramp_from_gbps: None,
    };
    const SLOW: Profile = Profile {
        limit_gbps: 200.0,
        ramp_from_gbps: Some(12.5),
    };

    #[test]
    fn without_ramp_time_is_bits_over_rate() {
        assert_eq!(FLAT.transfer_ns(1_048_576.0), 5242.88);
        assert_eq!(FLAT.bits_between(0.0, 1000.0), 200_000.0);
        let zero = Profile {
            limit_gbps: 0.0,
            ramp_from_gbps: None,
        };
        assert_eq!(zero.transfer_ns(8.0), f64::INFINITY);
    }

    #[test]
    fn ramp_slows_a_128k_message_about_ninefold() {
        // 128 KiB = 1 Mibit; inside the ramp: 12.5 t + 187.5 t^2 / 1e6 = 1048576.
        let t = SLOW.transfer_ns(1_048_576.0);
        assert!((t - 48_540.0).abs() < 10.0, "{t}");
        assert!(t / FLAT.transfer_ns(1_048_576.0) > 9.0);
        // A 1 B message crawls at the start rate.
        assert!((SLOW.transfer_ns(8.0) - 0.64).abs() < 1e-3);
    }

    #[test]
    fn ramp_costs_half_its_area_once() {
        // Bits lost to the ramp: (L - r0) T / 2.
        let lost = 187.5 * RAMP_NS / 2.0;
        let full = 200.0 * 100e6;
        assert!((SLOW.bits_between(0.0, 100e6) - (full - lost)).abs() < 1.0);
        // Over 100 ms that is under 1 %; over 1 ms it is about 23 %.
        assert!(SLOW.bits_between(0.0, 100e6) / full > 0.99);
        let short = SLOW.bits_between(0.0, 1e6) / (200.0 * 1e6);
        assert!((short - 0.766).abs() < 0.001, "{short}");
    }

    #[test]
    fn no_ramp_below_the_start_rate() {
        let p = Profile {
            limit_gbps: 10.0,
            ramp_from_gbps: Some(12.5),
        };
        assert_eq!(p.transfer_ns(1000.0), 100.0);
        assert_eq!(p.bits_between(0.0, 10.0), 100.0);
    }

    proptest! {
        #[test]
        fn transfer_time_inverts_bits_between(limit in 1.0f64..400.0, r0 in 0.5f64..50.0, bits in 1.0f64..1e9) {
            let p = Profile { limit_gbps: limit, ramp_from_gbps: Some(r0) };
            let t = p.transfer_ns(bits);
            prop_assert!((p.bits_between(0.0, t) - bits).abs() <= 1e-6 * bits.max(1.0));
            prop_assert!(t >= bits / limit * (1.0 - 1e-12));
        }

        #[test]
        fn bits_add_up_over_segments(limit in 1.0f64..400.0, a in 0.0f64..2e6, b in 0.0f64..2e6, c in 0.0f64..2e6) {
            let mut v = [a, b, c];
            v.sort_by(f64::total_cmp);
            let p = Profile { limit_gbps: limit, ramp_from_gbps: Some(12.5) };
            let whole = p.bits_between(v[0], v[2]);
            let parts = p.bits_between(v[0], v[1]) + p.bits_between(v[1], v[2]);
            prop_assert!((whole - parts).abs() <= 1e-6 * whole.max(1.0));
        }
    }
}
