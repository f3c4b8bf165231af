//! Measurement noise: one seeded RNG, owned by the virtual host (STYLE 4.1: one seed, one
//! RNG, no global or thread RNG), so a seed replays a run bit for bit.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

/// Multiplicative noise factors drawn from Normal(1, sigma), clamped to
/// [[`Noise::MIN`], [`Noise::MAX`]] so that a wild draw can neither make time run backwards
/// nor stall a run.
#[derive(Debug, Clone)]
pub(crate) struct Noise {
    rng: ChaCha8Rng,
}

impl Noise {
    /// Smallest factor.
    pub const MIN: f64 = 0.5;
    /// Largest factor.
    pub const MAX: f64 = 2.0;

    /// A noise source seeded from `seed`.
    pub(crate) fn new(seed: u64) -> Noise {
        Noise {
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// One factor around 1. With `sigma == 0` it is exactly 1 and the RNG is not touched.
    pub(crate) fn factor(&mut self, sigma: f64) -> f64 {
        if sigma == 0.0 {
            return 1.0;
        }
        let z: f64 = self.rng.sample(StandardNormal);
        (1.0 + sigma * z).clamp(Self::MIN, Self::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_factors() {
        let (mut a, mut b, mut c) = (Noise::new(7), Noise::new(7), Noise::new(8));
        let xa: Vec<f64> = (0..100).map(|_| a.factor(0.02)).collect();
        let xb: Vec<f64> = (0..100).map(|_| b.factor(0.02)).collect();
        let xc: Vec<f64> = (0..100).map(|_| c.factor(0.02)).collect();
        assert_eq!(xa, xb);
        assert_ne!(xa, xc);
    }

    #[test]
    fn factors_have_the_asked_spread_and_bounds() {
        let mut n = Noise::new(1);
        let xs: Vec<f64> = (0..20_000).map(|_| n.factor(0.02)).collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64).sqrt();
        assert!((mean - 1.0).abs() < 0.001, "{mean}");
        assert!((sd - 0.02).abs() < 0.001, "{sd}");
        let wild: Vec<f64> = (0..1000).map(|_| n.factor(5.0)).collect();
        assert!(wild.iter().all(|&x| (Noise::MIN..=Noise::MAX).contains(&x)));
        assert!(wild.contains(&Noise::MIN) && wild.contains(&Noise::MAX));
        assert_eq!(n.factor(0.0), 1.0);
    }
}
