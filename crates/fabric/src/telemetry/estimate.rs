//! Estimators built on the receivers' counts, and the expected moments of thesis 3.3 and 5.3
//! that say how far an estimate may stray from the truth.

use super::PortSamples;

/// `Φ^-1(0.99)`, the default z of the false-positive threshold (thesis 5.3). Figure 5.2 used
/// 99.5 % (`Φ^-1(0.995)` ~ 2.576).
pub const Z_99: f64 = 2.326_347_874_040_841;

/// Congested fraction of one port (thesis 3.2): `congested / counts`, 0 when `counts` is not
/// positive, and clamped to [0, 1] (thesis 3.3: "we expect 0 <= F <= 1").
///
/// Why the raw quotient exceeds 1: `counts` and `congested` come from two independent
/// reservoirs (algorithm 3), so each strays from its truth on its own. A port crossed by N
/// packets of l hops has `Var[W] = N (l - 1)` (3.3); when those packets met congestion only
/// there (g = 1) the congested count is exact, so a count sampled low, e.g. 90 for 128 packets
/// at l = 3 (2.4 standard deviations), turns a true 0.76 into 1.08. The quotient's spread is
/// [`congested_fraction_sd`]; the fraction itself is the quotient clamped, as the thesis'
/// definition clamps a port without counts to 0.
pub fn congested_fraction(congested: f64, counts: f64) -> f64 {
    raw_congested_fraction(congested, counts).clamp(0.0, 1.0)
}

/// `congested / counts` unclamped (0 without a positive count): the quotient whose spread
/// [`congested_fraction_sd`] gives.
fn raw_congested_fraction(congested: f64, counts: f64) -> f64 {
    if counts > 0.0 {
        congested / counts
    } else {
        0.0
    }
}

/// The variance of a weighted count estimated from the samples themselves (thesis 3.3, 5.3):
/// `sum_sq` is the sum of the squared weights the receivers added (each tagged sample's
/// `l / f`), `count` their sum. A packet of l hops adds l with probability 1/l, so
/// `Var[W] = sum N_i (l_i - 1)`, and every sampled packet stands for l of them: `sum l^2 - W`
/// is its unbiased estimate (Horvitz-Thompson). The same holds for the 1-bit kinds, whose
/// `Var[W_d] = sum Q_l l^2 - N_l` is estimated by the same sum over the candidates' votes. Never
/// negative.
pub fn weighted_count_variance(sum_sq: f64, count: f64) -> f64 {
    (sum_sq - count).max(0.0)
}

/// One standard deviation of the unclamped congested fraction (thesis 3.3, Taylor expansion):
/// `Var[F] ~ (Ŵ/W)^2 (Var[Ŵ]/Ŵ^2 + Var[W]/W^2)`, with the moments estimated by
/// [`weighted_count_variance`]. 0 without a positive count or congested count, as the thesis'
/// formula gives for M = 0.
pub fn congested_fraction_sd(
    congested: f64,
    congested_variance: f64,
    counts: f64,
    counts_variance: f64,
) -> f64 {
    if counts <= 0.0 || congested <= 0.0 {
        return 0.0;
    }
    let fraction = raw_congested_fraction(congested, counts);
    fraction
        * (congested_variance / (congested * congested) + counts_variance / (counts * counts))
            .sqrt()
}

/// [`congested_fraction`] of every port.
pub fn congested_fractions(samples: &PortSamples) -> Vec<f64> {
    samples
        .congested
        .iter()
        .zip(&samples.counts)
        .map(|(&congested, &counts)| congested_fraction(congested, counts))
        .collect()
}

/// The smallest 1-bit count reported as real traffic (thesis 5.3): `L * sqrt(Q) * z`. A port
/// no packet crossed has `E[W] = 0` and `Var[W] = Q l^2` with `l <= L` (the network diameter),
/// so with `z = Φ^-1(p)` a count this high comes from real traffic with probability about `p`.
pub fn false_positive_threshold(candidates: u64, diameter: u32, z: f64) -> f64 {
    f64::from(diameter) * (candidates as f64).sqrt() * z
}

/// The 1-bit counts (or congested counts, with their own candidate counts) with every count
/// below [`false_positive_threshold`] replaced by 0 (thesis 5.3, Bond and McKinley's rule).
pub fn thresholded_counts(counts: &[f64], candidates: &[u64], diameter: u32, z: f64) -> Vec<f64> {
    assert_eq!(
        counts.len(),
        candidates.len(),
        "1-bit samples have Q per port"
    );
    counts
        .iter()
        .zip(candidates)
        .map(|(&w, &q)| {
            if w >= false_positive_threshold(q, diameter, z) {
                w
            } else {
                0.0
            }
        })
        .collect()
}

/// Scales counts of tagged packets up to all packets: each packet is tagged with probability
/// `tag_fraction` (thesis 5.1), so `count / tag_fraction` is unbiased, with the variance of
/// [`weighted_count_moments`]. Congested fractions need no scaling (both sides scale alike);
/// thresholds apply before scaling, since Q counts tagged packets.
pub fn scale_to_all_packets(counts: &[f64], tag_fraction: f64) -> Vec<f64> {
    counts.iter().map(|&c| c / tag_fraction).collect()
}

/// Mean and variance of an estimator.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Moments {
    /// Expected value.
    pub mean: f64,
    /// Variance.
    pub variance: f64,
}

/// `packets` packets along one path of `hops` hops through the port under study.
#[derive(Copy, Clone, Debug)]
pub struct PathFlow {
    /// Packets on the path, N_i.
    pub packets: f64,
    /// Its length in hops, l_i.
    pub hops: f64,
}

/// Thesis 3.3: the weighted count of a port crossed by flows of lengths `l_i` has
/// `E[W] = sum N_i` and `Var[W] = sum N_i (l_i - 1)`. With only a fraction `f` of packets
/// tagged and `W / f` as the estimate, every packet adds `l / f` with probability `f / l`, so
/// `Var = sum N_i (l_i / f - 1)`; `f = 1` gives the thesis' formula.
pub fn weighted_count_moments(flows: &[PathFlow], tag_fraction: f64) -> Moments {
    Moments {
        mean: flows.iter().map(|f| f.packets).sum(),
        variance: flows
            .iter()
            .map(|f| f.packets * (f.hops / tag_fraction - 1.0))
            .sum(),
    }
}

/// A flow for the congested fraction: of its `packets` along `hops` hops,
/// `congested_packets` met congestion on `congested_hops` hops, the port under study one of
/// them (thesis 3.3).
#[derive(Copy, Clone, Debug)]
pub struct CongestedFlow {
    /// Packets of the flow, N_i.
    pub packets: f64,
    /// Its length in hops, l_i.
    pub hops: f64,
    /// Of them, packets that met congestion, M_i.
    pub congested_packets: f64,
    /// Congested hops of each of those, g_i.
    pub congested_hops: f64,
}

/// Thesis 3.3, Taylor expansions of `F = Ŵ / W`:
/// `E[F] ~ M/N + M sum N_i (l_i - 1) / N^3 - M sum N_i (l_i - 1)(l_i - 2) / N^4` and
/// `Var[F] ~ (M/N)^2 (sum M_i (g_i - 1) / M^2 + sum N_i (l_i - 1) / N^2)`, which shrinks like
/// 1/N. Both are 0 when no packet met congestion.
pub fn congested_fraction_moments(flows: &[CongestedFlow]) -> Moments {
    let n: f64 = flows.iter().map(|f| f.packets).sum();
    let m: f64 = flows.iter().map(|f| f.congested_packets).sum();
    if m == 0.0 {
        return Moments {
            mean: 0.0,
            variance: 0.0,
        };
    }
    let second: f64 = flows.iter().map(|f| f.packets * (f.hops - 1.0)).sum();
    let third: f64 = flows
        .iter()
        .map(|f| f.packets * (f.hops - 1.0) * (f.hops - 2.0))
        .sum();
    let congested_second: f64 = flows
        .iter()
        .map(|f| f.congested_packets * (f.congested_hops - 1.0))
        .sum();
    Moments {
        mean: m / n + m * second / n.powi(3) - m * third / n.powi(4),
        variance: (m / n).powi(2) * (congested_second / (m * m) + second / (n * n)),
    }
}

/// Packets of one path length `hops` for the 1-bit estimator (thesis 5.3): `packets` (N_l)
/// crossed the port, `candidates` (Q_l) might have, as far as their source and destination
/// tell.
#[derive(Copy, Clone, Debug)]
pub struct OneBitFlow {
    /// Packets that crossed the port, N_l.
    pub packets: f64,
    /// Packets that might have crossed it as far as their source and destination tell, Q_l.
    pub candidates: f64,
    /// The path length, l.
    pub hops: f64,
}

/// Thesis 5.3: `E[W_d] = sum N_l` and `Var[W_d] = sum Q_l l^2 - N_l` (against `N (l - 1)`
/// for the full reservoir: every candidate packet adds `±l` noise).
pub fn one_bit_count_moments(flows: &[OneBitFlow]) -> Moments {
    Moments {
        mean: flows.iter().map(|f| f.packets).sum(),
        variance: flows
            .iter()
            .map(|f| f.candidates * f.hops * f.hops - f.packets)
            .sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fraction_is_zero_without_counts_and_at_most_one() {
        assert_eq!(congested_fraction(3.0, 0.0), 0.0);
        assert_eq!(congested_fraction(3.0, -5.0), 0.0);
        assert_eq!(congested_fraction(1.0, 4.0), 0.25);
        // The ports.csv row of the issue: 97 congested against a count sampled at 90.
        assert_eq!(congested_fraction(97.0, 90.0), 1.0);
        assert_eq!(congested_fraction(-4.0, 90.0), 0.0);
        let samples = PortSamples {
            counts: vec![10.0, 0.0],
            congested: vec![5.0, 2.0],
            ..PortSamples::default()
        };
        assert_eq!(congested_fractions(&samples), vec![0.5, 0.0]);
    }

    #[test]
    fn threshold_is_l_sqrt_q_z() {
        assert!((false_positive_threshold(100, 5, Z_99) - 5.0 * 10.0 * 2.326_347_874).abs() < 1e-6);
        let counts = [120.0, 116.0, -40.0, 0.0];
        let candidates = [100, 100, 100, 0];
        assert_eq!(
            thresholded_counts(&counts, &candidates, 5, Z_99),
            vec![120.0, 0.0, 0.0, 0.0]
        );
    }

    /// The thesis' own numbers: 3.3's single path and 5.3's `Q l^2 - N`.
    #[test]
    fn moments_match_the_thesis_formulas() {
        let path = PathFlow {
            packets: 1000.0,
            hops: 5.0,
        };
        assert_eq!(
            weighted_count_moments(&[path], 1.0),
            Moments {
                mean: 1000.0,
                variance: 4000.0
            }
        );
        assert_eq!(weighted_count_moments(&[path], 0.5).variance, 9000.0);
        let flow = CongestedFlow {
            packets: 1000.0,
            hops: 5.0,
            congested_packets: 300.0,
            congested_hops: 2.0,
        };
        let f = congested_fraction_moments(&[flow]);
        let expected_mean = 0.3 + 300.0 * 4.0 / 1e6 - 300.0 * 12.0 / 1e9;
        assert!((f.mean - expected_mean).abs() < 1e-12);
        let expected_variance = 0.09 * (1.0 / 300.0 + 4.0 / 1000.0);
        assert!((f.variance - expected_variance).abs() < 1e-12);
        let one_bit = OneBitFlow {
            packets: 1000.0,
            candidates: 3000.0,
            hops: 5.0,
        };
        assert_eq!(one_bit_count_moments(&[one_bit]).variance, 74_000.0);
        assert_eq!(scale_to_all_packets(&[10.0, 4.0], 0.25), vec![40.0, 16.0]);
    }

    /// That row's spread: 30 samples of weight 3 give `Var[W] = 270 - 90`, and the congested
    /// count of weight-1 samples is exact, so the quotient 1.078 is 0.16 from its truth at one
    /// standard deviation: the true 0.76 is two of them away, not a fraction above 1.
    #[test]
    fn fraction_spread_from_the_samples() {
        let counts_variance = weighted_count_variance(30.0 * 9.0, 90.0);
        assert_eq!(counts_variance, 180.0);
        let congested_variance = weighted_count_variance(97.0, 97.0);
        assert_eq!(congested_variance, 0.0);
        let sd = congested_fraction_sd(97.0, congested_variance, 90.0, counts_variance);
        assert!((sd - 97.0 / 90.0 * 180f64.sqrt() / 90.0).abs() < 1e-12);
        assert!((1.078 - 2.0 * sd) < 0.76);
        assert_eq!(congested_fraction_sd(0.0, 0.0, 90.0, 180.0), 0.0);
        assert_eq!(congested_fraction_sd(5.0, 5.0, 0.0, 0.0), 0.0);
        assert_eq!(weighted_count_variance(3.0, 5.0), 0.0);
    }

    /// The estimate of `Var[W]` from the samples is unbiased: reservoir sampling of N packets
    /// along l hops through the real switch code, averaged over many runs, gives N (l - 1).
    #[test]
    fn variance_estimate_matches_n_l_minus_1() {
        use crate::telemetry::{TelemetryConfig, TelemetryKind};
        use crate::topology::{PortRef, SwitchId};
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let config = TelemetryConfig {
            kind: TelemetryKind::Reservoir,
            hop_counter_bits: 8,
            tag_fraction: 1.0,
        };
        let (packets, hops, runs) = (200, 5u32, 400);
        let (mut estimates, mut counts) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let (mut count, mut sum_sq) = (0.0, 0.0);
            for _ in 0..packets {
                let mut header = config.on_send(&mut rng);
                for hop in 0..hops {
                    let at = PortRef {
                        switch: SwitchId(hop),
                        port: 0,
                    };
                    config.on_switch(&mut header, 1, at, hop, false, &mut rng);
                }
                if header.hop_sample == 0 {
                    let w = f64::from(header.hop_count);
                    count += w;
                    sum_sq += w * w;
                }
            }
            estimates.push(weighted_count_variance(sum_sq, count));
            counts.push(count);
        }
        let truth = f64::from(packets) * f64::from(hops - 1);
        let mean = estimates.iter().sum::<f64>() / f64::from(runs);
        // The count's own spread over the runs is the variance being estimated.
        let count_mean = counts.iter().sum::<f64>() / f64::from(runs);
        let spread =
            counts.iter().map(|c| (c - count_mean).powi(2)).sum::<f64>() / f64::from(runs - 1);
        assert!((mean - truth).abs() < 0.1 * truth, "{mean} vs {truth}");
        assert!((spread - truth).abs() < 0.2 * truth, "{spread} vs {truth}");
    }
}
