//! A port's counter deltas between two reads by the same sampler.
//!
//! A counter that reads less than before was reset (a `perfquery -x`/`-R`, a switch
//! reboot, a port cleared by the subnet manager): the delta is the value read now, counted
//! up from zero since the reset, a lower bound of the true count that is never negative.
//! Wrap-around is not a case of its own: the 64-bit counters of PortCountersExtended do not
//! wrap in a switch's lifetime (2^64 bytes is 11 years at 400 Gb/s), and the 32-bit
//! counters of PortCounters stop at their maximum instead of wrapping (IBA 16.1.3.5; the
//! sampler names them `saturated`), so a delta across a stopped counter is 0, the
//! undercount the sampler already warns about. A read not newer than the previous one (a
//! resent sweep, a clock stepped back) gives no delta and leaves the previous read in place.

/// One read of a port's counters, in `model::switch_port::COUNTER_NAMES` order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Read {
    /// When the answer arrived, ns since the Unix epoch.
    pub at_unix_ns: u64,
    /// The switch's totals.
    pub counters: [u64; 9],
}

/// What a new read gives against the previous one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The port's first read from this sampler (or its first after retention dropped the
    /// previous one): the baseline of the next delta.
    First,
    /// Not newer than the previous read: ignored.
    Stale,
    /// The counts between the two reads.
    Delta {
        /// ns between the two reads.
        interval_ns: u64,
        /// Per counter, never negative.
        deltas: [u64; 9],
        /// Whether some counter was reset in between (its delta counts from the reset).
        reset: bool,
    },
}

/// The step from `previous` to `now`.
pub fn step(previous: Option<&Read>, now: &Read) -> Step {
    let Some(previous) = previous else {
        return Step::First;
    };
    if now.at_unix_ns <= previous.at_unix_ns {
        return Step::Stale;
    }
    let mut deltas = [0; 9];
    let mut reset = false;
    for (d, (&was, &is)) in deltas
        .iter_mut()
        .zip(previous.counters.iter().zip(&now.counters))
    {
        *d = match is.checked_sub(was) {
            Some(grown) => grown,
            None => {
                reset = true;
                is
            }
        };
    }
    Step::Delta {
        interval_ns: now.at_unix_ns - previous.at_unix_ns,
        deltas,
        reset,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn read(at: u64, first: u64) -> Read {
        let mut counters = [0; 9];
        counters[0] = first;
        Read {
            at_unix_ns: at,
            counters,
        }
    }

    #[test]
    fn growth_is_the_difference() {
        let was = Read {
            at_unix_ns: 1_000,
            counters: [10, 20, 30, 40, 50, 60, 70, 80, 90],
        };
        let is = Read {
            at_unix_ns: 1_000_001_000,
            counters: [15, 20, 31, 140, 4_050, 60, 71, 80, 90],
        };
        assert_eq!(
            step(Some(&was), &is),
            Step::Delta {
                interval_ns: 1_000_000_000,
                deltas: [5, 0, 1, 100, 4_000, 0, 1, 0, 0],
                reset: false
            }
        );
    }

    #[test]
    fn a_reset_counts_from_zero_and_is_flagged() {
        assert_eq!(
            step(Some(&read(1, 1_000)), &read(2, 7)),
            Step::Delta {
                interval_ns: 1,
                deltas: [7, 0, 0, 0, 0, 0, 0, 0, 0],
                reset: true
            }
        );
        // A 64-bit counter near its end reset to 0.
        assert_eq!(
            step(Some(&read(1, u64::MAX)), &read(2, 0)),
            Step::Delta {
                interval_ns: 1,
                deltas: [0; 9],
                reset: true
            }
        );
    }

    #[test]
    fn a_saturated_32_bit_counter_gives_zero() {
        let stopped = u64::from(u32::MAX);
        assert_eq!(
            step(Some(&read(1, stopped)), &read(2, stopped)),
            Step::Delta {
                interval_ns: 1,
                deltas: [0; 9],
                reset: false
            }
        );
    }

    #[test]
    fn first_and_stale_reads_give_no_delta() {
        assert_eq!(step(None, &read(5, 1)), Step::First);
        assert_eq!(step(Some(&read(5, 1)), &read(5, 2)), Step::Stale);
        assert_eq!(step(Some(&read(5, 1)), &read(4, 2)), Step::Stale);
    }

    proptest! {
        /// Deltas over a run of reads: never more than what was counted, and with no reset in
        /// between they add up to the last read less the first, exactly.
        #[test]
        fn deltas_sum_to_the_growth_or_count_from_the_reset(
            start in any::<u64>(),
            steps in proptest::collection::vec((1u64..1_000_000, 0u64..1 << 40, any::<bool>()), 1..40)
        ) {
            let mut was = read(1, start);
            let mut total: u128 = 0;
            let mut resets = false;
            for (dt, grow, reset) in steps {
                let value = if reset { grow } else { was.counters[0].saturating_add(grow) };
                let is = read(was.at_unix_ns + dt, value);
                match step(Some(&was), &is) {
                    Step::Delta { interval_ns, deltas, reset: flagged } => {
                        prop_assert_eq!(interval_ns, dt);
                        prop_assert_eq!(flagged, value < was.counters[0]);
                        prop_assert!(deltas[0] <= value);
                        resets |= flagged;
                        total += u128::from(deltas[0]);
                    }
                    other => prop_assert!(false, "{:?}", other),
                }
                was = is;
            }
            if !resets {
                prop_assert_eq!(total, u128::from(was.counters[0] - start));
            }
        }
    }
}
