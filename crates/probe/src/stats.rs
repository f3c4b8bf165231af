//! From raw samples to a path measurement: percentiles, and BW_host by Hostping eq. 1-3.

use crate::engine::{LatencySamples, LatencySpec, ProbeError};
use model::{LatencyStats, PathMeasurement};

/// The noise of the median of samples given in ns, in us: half their interquartile range
/// (nearest rank), a spread that a few outliers do not move. `None` for no samples.
pub fn half_iqr_us(samples_ns: &[f64]) -> Option<f64> {
    let sorted = sorted(samples_ns)?;
    Some((rank(&sorted, 0.75) - rank(&sorted, 0.25)) / 2.0 / 1000.0)
}

/// `samples` in ascending order; `None` for none.
fn sorted(samples: &[f64]) -> Option<Vec<f64>> {
    if samples.is_empty() {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(sorted)
}

/// The `q` quantile of non-empty `sorted` samples by nearest rank.
fn rank(sorted: &[f64], q: f64) -> f64 {
    let i = (q * sorted.len() as f64).ceil() as usize;
    sorted[i.clamp(1, sorted.len()) - 1]
}

/// Percentiles of round-trip samples given in ns, reported in us (nearest rank).
///
/// Returns `None` for an empty sample set.
pub fn latency_stats(samples_ns: &[f64]) -> Option<LatencyStats> {
    let sorted = sorted(samples_ns)?;
    let rank = |q: f64| rank(&sorted, q) / 1000.0;
    Some(LatencyStats {
        samples: sorted.len() as u32,
        min_us: sorted[0] / 1000.0,
        p50_us: rank(0.50),
        p90_us: rank(0.90),
        p99_us: rank(0.99),
        max_us: sorted[sorted.len() - 1] / 1000.0,
    })
}

/// BW_host = (size_large - size_small) / (Lat_large - Lat_small), in Gb/s (Hostping
/// eq. 1 minus eq. 2 gives eq. 3). `None` when the large message was not slower.
pub fn bandwidth_from_latency_gbps(
    small_bytes: u64,
    large_bytes: u64,
    small_us: f64,
    large_us: f64,
) -> Option<f64> {
    let dt_us = large_us - small_us;
    // NaN samples fail `dt_us > 0.0` too, and so yield no bandwidth.
    if large_bytes <= small_bytes || dt_us.is_nan() || dt_us <= 0.0 {
        return None;
    }
    Some((large_bytes - small_bytes) as f64 * 8.0 / (dt_us * 1000.0))
}

/// Turns the samples of a latency test into a measurement, from the medians.
pub fn measurement(
    spec: &LatencySpec,
    samples: &LatencySamples,
) -> Result<PathMeasurement, ProbeError> {
    let degenerate = |reason: &str| ProbeError::Degenerate {
        reason: reason.to_string(),
    };
    let small =
        latency_stats(&samples.small_ns).ok_or_else(|| degenerate("no small-message samples"))?;
    let large =
        latency_stats(&samples.large_ns).ok_or_else(|| degenerate("no large-message samples"))?;
    let bandwidth_gbps = bandwidth_from_latency_gbps(
        spec.small_bytes,
        spec.large_bytes,
        small.p50_us,
        large.p50_us,
    )
    .ok_or_else(|| {
        degenerate(&format!(
            "the {} B message ({:.3} us) was not slower than the {} B one ({:.3} us)",
            spec.large_bytes, large.p50_us, spec.small_bytes, small.p50_us
        ))
    })?;
    Ok(PathMeasurement {
        op: spec.op,
        small_bytes: spec.small_bytes,
        large_bytes: spec.large_bytes,
        small,
        large,
        bandwidth_gbps,
        verified_bytes: samples.verified_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_noise_of_a_median_is_half_the_interquartile_range() {
        // 1..=8 us: the 25th percentile is 2 us and the 75th 6 us by nearest rank.
        let samples: Vec<f64> = (1..=8).map(|us| f64::from(us) * 1000.0).collect();
        assert_eq!(half_iqr_us(&samples), Some(2.0));
        // One wild sample does not move it.
        let mut wild = samples.clone();
        wild[7] = 1e9;
        assert_eq!(half_iqr_us(&wild), Some(2.0));
        assert_eq!(half_iqr_us(&[]), None);
    }
    use proptest::prelude::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let samples: Vec<f64> = (1..=100).map(|i| f64::from(i) * 1000.0).collect();
        let s = latency_stats(&samples).unwrap();
        assert_eq!(
            (s.min_us, s.p50_us, s.p90_us, s.p99_us, s.max_us),
            (1.0, 50.0, 90.0, 99.0, 100.0)
        );
        assert_eq!(s.samples, 100);
        assert!(latency_stats(&[]).is_none());
        let one = latency_stats(&[2500.0]).unwrap();
        assert_eq!((one.min_us, one.p50_us, one.p99_us), (2.5, 2.5, 2.5));
    }

    #[test]
    fn eq3_recovers_a_known_bandwidth() {
        // 128 KiB at 200 Gb/s takes 5.243 us more than 1 B.
        let dt = (128.0 * 1024.0 - 1.0) * 8.0 / 200e9 * 1e6;
        let bw = bandwidth_from_latency_gbps(1, 128 * 1024, 2.5, 2.5 + dt).unwrap();
        assert!((bw - 200.0).abs() < 1e-9);
        assert!(bandwidth_from_latency_gbps(1, 128 * 1024, 3.0, 3.0).is_none());
        assert!(bandwidth_from_latency_gbps(1, 128 * 1024, 3.0, 2.0).is_none());
    }

    #[test]
    fn degenerate_samples_are_an_error_not_a_number() {
        let spec = LatencySpec::default();
        let samples = LatencySamples {
            small_ns: vec![3000.0; 5],
            large_ns: vec![2000.0; 5],
            verified_bytes: None,
        };
        assert!(matches!(
            measurement(&spec, &samples),
            Err(ProbeError::Degenerate { .. })
        ));
        let empty = LatencySamples::default();
        assert!(matches!(
            measurement(&spec, &empty),
            Err(ProbeError::Degenerate { .. })
        ));
    }

    proptest! {
        #[test]
        fn percentiles_are_ordered_and_within_range(samples in proptest::collection::vec(0.0f64..1e7, 1..300)) {
            let s = latency_stats(&samples).unwrap();
            prop_assert!(s.min_us <= s.p50_us && s.p50_us <= s.p90_us && s.p90_us <= s.p99_us && s.p99_us <= s.max_us);
            let lo = samples.iter().cloned().fold(f64::INFINITY, f64::min) / 1000.0;
            let hi = samples.iter().cloned().fold(f64::NEG_INFINITY, f64::max) / 1000.0;
            prop_assert_eq!(s.min_us, lo);
            prop_assert_eq!(s.max_us, hi);
        }

        #[test]
        fn eq3_is_inverse_of_transfer_time(gbps in 1.0f64..800.0, base_us in 0.5f64..20.0, large in 2u64..(1 << 24)) {
            let dt_us = (large - 1) as f64 * 8.0 / (gbps * 1e3);
            let bw = bandwidth_from_latency_gbps(1, large, base_us, base_us + dt_us).unwrap();
            prop_assert!((bw - gbps).abs() / gbps < 1e-6);
        }
    }
}
