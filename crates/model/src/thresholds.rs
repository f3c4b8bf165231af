//! The analyzer's thresholds, with their defaults from Hostping Section 5 (DESIGN 3).

use serde::{Deserialize, Serialize};

/// Thresholds and their defaults: fractions, except the run count `flapping_runs` (the
/// paper's) and the round count `reprobe_rounds` (beyond the paper).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Thresholds {
    /// A path is abnormal when its bandwidth is this far below the baseline, or its
    /// latency this far above it (Hostping 5: 20 %).
    pub abnormal_th: f64,
    /// A link above this utilisation is overloaded (Hostping 5: 90 %).
    pub util_high: f64,
    /// An RNIC below this share of its line rate is idle (Hostping 5: 5 %).
    pub thp_low: f64,
    /// A Tx pause duration ratio above this triggers a probe (Hostping 5: 3 %).
    pub pfc_high: f64,
    /// A link gray in this many consecutive runs is flapping (Hostping 4.3: 3).
    pub flapping_runs: u32,
    /// Rounds of within-run re-probes of the paths that alone judge a link, in idle runs
    /// (beyond the paper, `analyze::reprobe`: 10, about a second of a run); 0 turns them
    /// off, leaving the flapping rules across runs.
    pub reprobe_rounds: u32,
}

/// A threshold outside its meaningful range: the setting, its value and the range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("thresholds.{setting} = {value} is outside {range}")]
pub struct ThresholdError {
    /// The key, like `abnormal_th`.
    pub setting: &'static str,
    /// Its value as given.
    pub value: String,
    /// The valid range, with what the setting is (`(0, 1): a fraction`).
    pub range: &'static str,
}

/// The most consecutive runs [`Thresholds::flapping_runs`] may ask for: the agent keeps that
/// many runs in memory and the paper's value is 3.
pub const MAX_FLAPPING_RUNS: u32 = 100;
/// The most re-probe rounds per idle run (each is about a tenth of a second of probing).
pub const MAX_REPROBE_ROUNDS: u32 = 100;

impl Thresholds {
    /// Refuses a meaningless value, naming the first one found: the fractions are
    /// fractions (`abnormal_th = 5` would call a path at a sixth of its baseline normal), the
    /// run and round counts are bounded.
    pub fn check(&self) -> Result<(), ThresholdError> {
        let fraction = |setting, value: f64, ok: bool, range| {
            if ok {
                Ok(())
            } else {
                Err(ThresholdError {
                    setting,
                    value: value.to_string(),
                    range,
                })
            }
        };
        // Written so that NaN fails every test.
        let v = self.abnormal_th;
        fraction(
            "abnormal_th",
            v,
            v > 0.0 && v < 1.0,
            "(0, 1): a fraction of the baseline",
        )?;
        let v = self.util_high;
        fraction(
            "util_high",
            v,
            v > 0.0 && v <= 1.0,
            "(0, 1]: a fraction of capacity",
        )?;
        let v = self.thp_low;
        fraction(
            "thp_low",
            v,
            (0.0..1.0).contains(&v),
            "[0, 1): a fraction of line rate",
        )?;
        let v = self.pfc_high;
        fraction(
            "pfc_high",
            v,
            v > 0.0 && v < 1.0,
            "(0, 1): a fraction of time",
        )?;
        if !(1..=MAX_FLAPPING_RUNS).contains(&self.flapping_runs) {
            return Err(ThresholdError {
                setting: "flapping_runs",
                value: self.flapping_runs.to_string(),
                range: "1..=100 runs",
            });
        }
        if self.reprobe_rounds > MAX_REPROBE_ROUNDS {
            return Err(ThresholdError {
                setting: "reprobe_rounds",
                value: self.reprobe_rounds.to_string(),
                range: "0..=100 rounds",
            });
        }
        Ok(())
    }

    /// Whether an RNIC carrying `throughput_gbps` of service traffic is idle: at most Thp_low
    /// of its line rate (Hostping 5).
    pub fn rnic_idle(&self, throughput_gbps: f64, line_rate_gbps: f64) -> bool {
        throughput_gbps <= self.thp_low * line_rate_gbps
    }
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            abnormal_th: 0.20,
            util_high: 0.90,
            thp_low: 0.05,
            pfc_high: 0.03,
            flapping_runs: 3,
            reprobe_rounds: 10,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_papers_defaults_are_valid() {
        assert_eq!(Thresholds::default().check(), Ok(()));
    }

    #[test]
    fn a_meaningless_value_is_named_with_its_range() {
        let th = Thresholds {
            abnormal_th: 5.0,
            ..Thresholds::default()
        };
        assert_eq!(
            th.check().unwrap_err().to_string(),
            "thresholds.abnormal_th = 5 is outside (0, 1): a fraction of the baseline"
        );
        for (th, setting) in [
            (
                Thresholds {
                    util_high: 0.0,
                    ..Thresholds::default()
                },
                "util_high",
            ),
            (
                Thresholds {
                    util_high: 1.5,
                    ..Thresholds::default()
                },
                "util_high",
            ),
            (
                Thresholds {
                    thp_low: -0.1,
                    ..Thresholds::default()
                },
                "thp_low",
            ),
            (
                Thresholds {
                    pfc_high: 1.0,
                    ..Thresholds::default()
                },
                "pfc_high",
            ),
            (
                Thresholds {
                    pfc_high: f64::NAN,
                    ..Thresholds::default()
                },
                "pfc_high",
            ),
            (
                Thresholds {
                    flapping_runs: 0,
                    ..Thresholds::default()
                },
                "flapping_runs",
            ),
            (
                Thresholds {
                    flapping_runs: 101,
                    ..Thresholds::default()
                },
                "flapping_runs",
            ),
            (
                Thresholds {
                    reprobe_rounds: 101,
                    ..Thresholds::default()
                },
                "reprobe_rounds",
            ),
        ] {
            assert_eq!(th.check().unwrap_err().setting, setting, "{th:?}");
        }
        // The edges that make sense are accepted.
        let edges = Thresholds {
            util_high: 1.0,
            thp_low: 0.0,
            flapping_runs: 1,
            reprobe_rounds: 0,
            ..Thresholds::default()
        };
        assert_eq!(edges.check(), Ok(()));
    }

    proptest! {
        /// Any abnormal_th is accepted exactly when it is a fraction strictly between 0 and 1.
        #[test]
        fn abnormal_th_is_accepted_only_as_a_fraction(v in proptest::num::f64::ANY) {
            let th = Thresholds { abnormal_th: v, ..Thresholds::default() };
            prop_assert_eq!(th.check().is_ok(), v > 0.0 && v < 1.0);
        }
    }
}
