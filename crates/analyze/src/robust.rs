//! Robust statistics for baselines, of one host over its runs and of a fleet over its hosts
//! (Hostping 4.3 and 5: baselines "obtained via loopback tests on a batch of idle hosts with
//! the same devices and configurations"), and for the benchmarks' repeated runs: the
//! median, which up to half of the values cannot move far, and the median absolute deviation
//! (MAD), the spread that goes with it. One broken host, or a few bad runs of a host, shift
//! neither, where a mean and a standard deviation would follow them.

/// The MAD of normally distributed data times this is the standard deviation: the MAD's
/// consistency constant 1 / Phi^-1(3/4) (Rousseeuw and Croux 1993). Spreads are reported as
/// raw MADs; tests of "how many standard deviations away" scale them by this.
pub const MAD_TO_SIGMA: f64 = 1.4826;

/// The median of `values`: the middle value, or the mean of the two middle values for an
/// even count. `None` when there are none. The one median of the project: baselines,
/// benchmarks and the guest test all summarise repeated runs with it.
pub fn median(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = values.into_iter().collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// The median absolute deviation from the median: median(|x - median(x)|). `None` for an
/// empty sample.
pub fn mad(values: &[f64]) -> Option<f64> {
    let center = median(values.iter().copied())?;
    median(values.iter().map(|x| (x - center).abs()))
}

/// A sample summarised robustly.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Robust {
    /// The median.
    pub median: f64,
    /// The median absolute deviation (raw, not scaled by [`MAD_TO_SIGMA`]).
    pub mad: f64,
    /// How many values.
    pub count: usize,
}

impl Robust {
    /// The summary of `values`; `None` when there are none. NaNs are not expected (the
    /// collector keeps only measured, finite values).
    pub fn of(values: &[f64]) -> Option<Robust> {
        Some(Robust {
            median: median(values.iter().copied())?,
            mad: mad(values)?,
            count: values.len(),
        })
    }
}

/// Two tools' floors over repeated runs on a machine whose noise only ever adds time (a
/// guest under TCG whose vCPUs the host takes away for whole runs): each tool's `k`-th
/// fastest run, `k` the same for both.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Floors {
    /// The first tool's floor.
    pub a: f64,
    /// The second tool's floor.
    pub b: f64,
    /// Which fastest run each floor is (1 the fastest).
    pub k: usize,
    /// Runs of each tool in the quiet state: within [`QUIET`] of the fastest run of either.
    pub quiet: (usize, usize),
}

/// A run within this factor of the fastest runs of the two tools (see [`floors`]) is in the
/// quiet state. The guest's two states are far apart (38-41 us against 75-93 us for a 2 B
/// half round trip, CI 2026-11-30), so a tool measuring a fifth more than the other still
/// counts as quiet and its floor shows it.
pub const QUIET: f64 = 1.3;

/// The most quiet runs a floor is taken over: the third-fastest, as one odd run far below
/// a tool's others would make its fastest a measure of that run alone.
pub const FLOOR_RANK: usize = 3;

/// The floors of `a` and `b`: each tool's `k`-th fastest run, where `k` is the count of
/// quiet runs of the tool with fewer of them, at least 1 and at most [`FLOOR_RANK`]. A
/// fixed `k` compares a state with another when one tool met the quiet state fewer than `k`
/// times (CI: 2 of hostping's 32 runs, 3 of perftest's: the third-fastest runs were 66.7
/// and 49.8 us, the two fastest 38.6, 44.9 against 40.3, 45.9); the same `k` for both
/// compares like with like. The quiet state is measured from the [`FLOOR_RANK`]-th fastest
/// run of the two tools together, not the fastest: one odd run far below every other
/// (`ib_read_lat` once at 25.9 us among runs of 46.9-55 us, 2026-11-30) would otherwise
/// leave the other tool no quiet run and compare it with that run alone. A tool truly
/// slower by more than [`QUIET`] than another that met the quiet state at least
/// [`FLOOR_RANK`] times has no quiet run, so `k` is 1 and the fastest runs show the gap.
/// `None` when either has no run.
pub fn floors(a: &[f64], b: &[f64]) -> Option<Floors> {
    let sorted = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v
    };
    let (a, b) = (sorted(a), sorted(b));
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let both = sorted(&[a.as_slice(), b.as_slice()].concat());
    let scale = both[FLOOR_RANK.min(both.len()) - 1];
    let quiet = |v: &[f64]| v.iter().take_while(|&&x| x <= QUIET * scale).count();
    let quiet = (quiet(&a), quiet(&b));
    let k = quiet.0.min(quiet.1).clamp(1, FLOOR_RANK);
    // k is 1, or at most the fewer quiet runs: within each tool's runs.
    let kth = |v: &[f64]| v[k - 1];
    Some(Floors {
        a: kth(&a),
        b: kth(&b),
        k,
        quiet,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_no_values() {
        assert_eq!(median([3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median([4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median([7.0]), Some(7.0));
        assert_eq!(median(std::iter::empty()), None);
    }
    use proptest::prelude::*;

    #[test]
    fn floors_compare_like_states() {
        // CI 2026-11-30's pair runs (fastest of each, us): hostping met the quiet state
        // twice, perftest three times; the second-fastest runs are compared.
        let hostping = [79.96, 38.56, 66.73, 44.85, 70.28, 86.0];
        let perftest = [88.11, 49.82, 45.93, 40.34, 58.48, 66.34];
        let f = floors(&hostping, &perftest).unwrap();
        assert_eq!((f.k, f.quiet), (2, (2, 3)));
        assert_eq!((f.a, f.b), (44.85, 45.93));
        // A tool 40 % slower: runs of the same rank are compared and show the gap.
        let slower: Vec<f64> = perftest.iter().map(|x| x * 1.4).collect();
        let f = floors(&slower, &perftest).unwrap();
        assert!((f.a / f.b - 1.4).abs() < 1e-9);
        // Twice as slow as a tool with three quiet runs: no quiet run, the fastest compared.
        let f = floors(&[80.0, 82.0, 90.0], &[40.0, 41.0, 42.0]).unwrap();
        assert_eq!((f.k, f.quiet), (1, (0, 3)));
        assert_eq!((f.a, f.b), (80.0, 40.0));
        // One odd run far below the rest (ib_read_lat in the guest, 2026-11-30) does not set
        // the quiet state: the third-fastest runs are compared.
        let hostping = [50.26, 51.06, 51.41, 52.2, 54.97, 60.1];
        let perftest = [25.93, 46.9, 49.26, 51.82, 55.0, 58.0];
        let f = floors(&hostping, &perftest).unwrap();
        assert_eq!((f.k, f.a, f.b), (3, 51.41, 49.26));
        // Plenty of quiet runs: the third-fastest, past one odd fast run.
        let f = floors(&[36.0, 40.0, 41.0, 42.0], &[39.0, 40.5, 41.5, 90.0]).unwrap();
        assert_eq!((f.k, f.a, f.b), (3, 41.0, 41.5));
        assert_eq!(floors(&[], &[1.0]), None);
    }

    #[test]
    fn known_samples() {
        assert_eq!(mad(&[]), None);
        assert_eq!(mad(&[5.0]), Some(0.0));
        // median 2, deviations 1 0 1 -> 1 (odd count)
        assert_eq!(mad(&[1.0, 2.0, 3.0]), Some(1.0));
        // median 3.5, deviations 2.5 1.5 0.5 0.5 1.5 96.5 -> 1.5 (even count)
        assert_eq!(mad(&[1.0, 2.0, 3.0, 4.0, 5.0, 100.0]), Some(1.5));
        let r = Robust::of(&[10.0, 200.0, 11.0, 9.0, 10.5]).unwrap();
        assert_eq!((r.median, r.mad, r.count), (10.5, 0.5, 5));
    }

    /// The median and MAD by their definitions: the middle of the sorted values, counted
    /// by rank, without the helper's code.
    fn by_definition(values: &[f64]) -> (f64, f64) {
        let mid = |v: &mut Vec<f64>| {
            v.sort_by(|a, b| a.partial_cmp(b).unwrap());
            let n = v.len();
            if n % 2 == 1 {
                v[n / 2]
            } else {
                (v[n / 2 - 1] + v[n / 2]) / 2.0
            }
        };
        let m = mid(&mut values.to_vec());
        let m_dev = mid(&mut values.iter().map(|x| (x - m).abs()).collect());
        (m, m_dev)
    }

    proptest! {
        #[test]
        fn median_and_mad_match_their_definition(
            values in prop::collection::vec(-1e6f64..1e6, 1..60),
        ) {
            let r = Robust::of(&values).unwrap();
            let (m, d) = by_definition(&values);
            prop_assert_eq!(r.median, m);
            prop_assert_eq!(r.mad, d);
            prop_assert!(r.mad >= 0.0);
        }

        #[test]
        fn order_does_not_matter_and_shifts_move_only_the_median(
            values in prop::collection::vec(0f64..1e3, 1..40),
            shift in -1e3f64..1e3,
        ) {
            let r = Robust::of(&values).unwrap();
            let mut reversed = values.clone();
            reversed.reverse();
            prop_assert_eq!(Robust::of(&reversed).unwrap(), r);
            let shifted: Vec<f64> = values.iter().map(|x| x + shift).collect();
            let s = Robust::of(&shifted).unwrap();
            prop_assert!((s.median - (r.median + shift)).abs() < 1e-6);
            prop_assert!((s.mad - r.mad).abs() < 1e-6);
        }

        #[test]
        fn floors_are_symmetric_and_scale_free(
            a in prop::collection::vec(1f64..200.0, 1..40),
            b in prop::collection::vec(1f64..200.0, 1..40),
            scale in 0.01f64..100.0,
        ) {
            let f = floors(&a, &b).unwrap();
            let g = floors(&b, &a).unwrap();
            prop_assert_eq!((f.a, f.b, f.k, f.quiet), (g.b, g.a, g.k, (g.quiet.1, g.quiet.0)));
            let scaled = |v: &[f64]| v.iter().map(|x| x * scale).collect::<Vec<_>>();
            let s = floors(&scaled(&a), &scaled(&b)).unwrap();
            prop_assert!((s.a / s.b - f.a / f.b).abs() < 1e-9);
            // Each floor is one of its tool's runs, no faster than its fastest.
            prop_assert!(a.contains(&f.a) && b.contains(&f.b));
            prop_assert!(1 <= f.k && f.k <= FLOOR_RANK);
        }

        #[test]
        fn fewer_than_half_outliers_leave_the_median_within_the_clean_range(
            clean in prop::collection::vec(100f64..110.0, 5..30),
            outliers in prop::collection::vec(0f64..1e6, 0..4),
        ) {
            prop_assume!(outliers.len() * 2 < clean.len());
            let mut all = clean.clone();
            all.extend(&outliers);
            let m = Robust::of(&all).unwrap().median;
            let lo = clean.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = clean.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            prop_assert!(lo <= m && m <= hi, "{} outside {}..{}", m, lo, hi);
        }
    }
}
