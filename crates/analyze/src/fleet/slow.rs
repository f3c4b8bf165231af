//! Slow hosts (beyond the paper): hosts whose paths stay below their kind's fleet baseline
//! run after run, though no run is Abnormal_th below and so no run flags them (Hostping
//! judges one run against Abnormal_th = 20 %, Section 5; a host 10 % slow on a path passes
//! every run).
//!
//! A path of a host is slow when, over its recent values (the ring of the last
//! `baseline::HOST_RUNS` healthy idle runs that feeds the fleet baseline):
//! - it has at least [`MIN_RUNS`] of them, so that one odd run cannot make a finding;
//! - the host's median is worse than the fleet's by more than [`RANK_SIGMAS`] robust
//!   standard deviations of a host's value (`Spread::host_sigma`: the MAD between
//!   the hosts of the batch, scaled to a standard deviation) and by at least a tenth of
//!   Abnormal_th (`baseline::min_slow_fraction`);
//! - and at least [`PERSISTENT_SHARE`] of those runs are individually worse than the fleet's
//!   median, so the deficit is persistent rather than a few bad runs (a healthy host has
//!   about half its runs on either side: 8 or more of 9 on one side happens in 2 % of healthy
//!   hosts, and then the median must also be 3 sigmas away).
//!
//! A host's score is the sum of its slow paths' deficits in percent (bandwidth below, or
//! latency above, the fleet's median): a host 10 % slow on four paths (an RNIC's whole row)
//! ranks above one 15 % slow on one path. Hosts with no slow path are not ranked.

use super::baseline::{min_slow_fraction, FleetPath, Ring, Spread};
use model::Thresholds;
use serde::{Deserialize, Serialize};

/// Recent runs a path needs before its host can be called slow on it.
pub const MIN_RUNS: usize = 5;
/// The share of its recent runs a slow path must have worse than the fleet's median.
pub const PERSISTENT_SHARE: f64 = 0.8;
/// How many robust standard deviations of a host's value below the fleet make a path slow
/// here: 5, where one run's verdict uses `baseline::SLOW_SIGMAS` (3). The ranking tests
/// every path of every host at once (40 paths x 2 metrics on a dgx-a100, times the fleet),
/// and at 3 sigmas one healthy test in 740 would pass; at 5, one in 3.5 million, so a
/// 10,000-host fleet of healthy hosts ranks about none.
pub const RANK_SIGMAS: f64 = 5.0;

/// Which metric of a path is worse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Bandwidth below the fleet's.
    Bandwidth,
    /// Latency above the fleet's.
    Latency,
}

/// One slow path of a host, with the numbers behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowPath {
    /// The RNIC.
    pub rnic: String,
    /// The endpoint.
    pub endpoint: String,
    /// Which metric.
    pub metric: Metric,
    /// The host's median over its recent runs (Gb/s or us).
    pub host_value: f64,
    /// The fleet baseline (Gb/s or us).
    pub fleet_value: f64,
    /// How much worse than the fleet, percent.
    pub deficit_pct: f64,
    /// How many robust standard deviations of a host's value that is.
    pub sigmas: f64,
    /// The host's recent runs of this path.
    pub runs: usize,
    /// Of those, how many were worse than the fleet's median.
    pub runs_worse: usize,
}

/// A ranked host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowHost {
    /// The host.
    pub host: String,
    /// Its kind.
    pub kind: String,
    /// Its rack, when known.
    pub rack: Option<String>,
    /// The sum of its slow paths' deficits, percent.
    pub score: f64,
    /// The slow paths, worst first.
    pub paths: Vec<SlowPath>,
    /// The finding in words.
    pub evidence: String,
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// Whether `values` (one host's recent runs of one metric) are persistently worse than
/// `spread`'s median; `higher_is_better` for bandwidth.
fn persistently_worse(
    values: &[f64],
    spread: &Spread,
    higher_is_better: bool,
    th: &Thresholds,
) -> Option<(f64, f64, f64, usize)> {
    if values.len() < MIN_RUNS {
        return None;
    }
    let host = crate::robust::median(values.iter().copied())?;
    let fleet = spread.hosts.median;
    let worse_by = if higher_is_better {
        fleet - host
    } else {
        host - fleet
    };
    let fraction = worse_by / fleet;
    let sigma = spread.host_sigma(values.len());
    let sigmas = if sigma > 0.0 {
        worse_by / sigma
    } else {
        f64::INFINITY
    };
    let worse_runs = values
        .iter()
        .filter(|&&v| {
            if higher_is_better {
                v < fleet
            } else {
                v > fleet
            }
        })
        .count();
    let persistent = worse_runs as f64 >= PERSISTENT_SHARE * values.len() as f64;
    (fleet > 0.0 && fraction >= min_slow_fraction(th) && sigmas > RANK_SIGMAS && persistent)
        .then_some((host, fraction, sigmas, worse_runs))
}

/// The slow paths of one host's ring against its kind's fleet baseline.
pub fn slow_paths(ring: &Ring, fleet: &FleetPath, th: &Thresholds) -> Vec<SlowPath> {
    let checks = [
        (
            Metric::Bandwidth,
            &ring.bandwidth_gbps,
            &fleet.bandwidth,
            true,
        ),
        (Metric::Latency, &ring.latency_us, &fleet.latency, false),
    ];
    checks
        .into_iter()
        .filter_map(|(metric, values, spread, higher_is_better)| {
            let (host, fraction, sigmas, worse) =
                persistently_worse(values, spread, higher_is_better, th)?;
            Some(SlowPath {
                rnic: ring.rnic.clone(),
                endpoint: ring.endpoint.clone(),
                metric,
                host_value: round(host, 3),
                fleet_value: round(spread.hosts.median, 3),
                deficit_pct: round(fraction * 100.0, 2),
                // A fleet of identical values has no spread: the deficit is then beyond
                // any number of sigmas; JSON has no infinity, so it is capped.
                sigmas: round(sigmas.min(1e6), 1),
                runs: values.len(),
                runs_worse: worse,
            })
        })
        .collect()
}

/// The finding in words: which paths, how much, over how many runs.
pub fn evidence(paths: &[SlowPath]) -> String {
    let parts: Vec<String> = paths
        .iter()
        .map(|p| {
            let (what, dir, unit, prec) = match p.metric {
                Metric::Bandwidth => ("bandwidth", "below", "Gb/s", 1),
                Metric::Latency => ("latency", "above", "us", 3),
            };
            format!(
                "{} {}->{} {:.1} % {dir} the fleet ({:.prec$} vs {:.prec$} {unit}, {:.1} sigmas; {} of its last {} runs {dir})",
                what, p.rnic, p.endpoint, p.deficit_pct, p.host_value, p.fleet_value, p.sigmas,
                p.runs_worse, p.runs
            )
        })
        .collect();
    format!(
        "{} path{} persistently slower than the fleet baseline, under Abnormal_th: {}",
        paths.len(),
        if paths.len() == 1 { "" } else { "s" },
        parts.join("; ")
    )
}

/// Ranks hosts: the highest score first (ties by name); hosts with no slow path are left
/// out.
pub fn rank(mut hosts: Vec<SlowHost>) -> Vec<SlowHost> {
    hosts.retain(|h| !h.paths.is_empty());
    hosts.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.host.cmp(&b.host))
    });
    hosts
}

/// A host's entry from its slow paths (worst first).
pub fn slow_host(
    host: String,
    kind: String,
    rack: Option<String>,
    mut paths: Vec<SlowPath>,
) -> SlowHost {
    paths.sort_by(|a, b| {
        b.deficit_pct
            .total_cmp(&a.deficit_pct)
            .then_with(|| (&a.rnic, &a.endpoint).cmp(&(&b.rnic, &b.endpoint)))
    });
    let score = round(paths.iter().map(|p| p.deficit_pct).sum(), 2);
    let evidence = evidence(&paths);
    SlowHost {
        host,
        kind,
        rack,
        score,
        paths,
        evidence,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::robust::Robust;

    fn fleet() -> FleetPath {
        let spread = |median, mad, run_mad| Spread {
            hosts: Robust {
                median,
                mad,
                count: 10,
            },
            run_mad,
        };
        FleetPath {
            rnic: "rnic0".into(),
            endpoint: "gpu0".into(),
            latency: spread(2.0, 0.01, 0.03),
            bandwidth: spread(200.0, 1.5, 3.0),
            hosts: 10,
            runs: 90,
        }
    }

    fn ring(bw: &[f64]) -> Ring {
        Ring {
            host: "h".into(),
            rnic: "rnic0".into(),
            endpoint: "gpu0".into(),
            latency_us: vec![2.0; bw.len()],
            bandwidth_gbps: bw.to_vec(),
        }
    }

    #[test]
    fn ten_percent_below_in_every_run_is_slow() {
        let th = Thresholds::default();
        let slow = slow_paths(
            &ring(&[
                181.0, 178.0, 180.0, 183.0, 179.0, 180.5, 182.0, 177.0, 180.0,
            ]),
            &fleet(),
            &th,
        );
        assert_eq!(slow.len(), 1);
        let p = &slow[0];
        assert_eq!((p.metric, p.runs, p.runs_worse), (Metric::Bandwidth, 9, 9));
        assert_eq!(p.host_value, 180.0);
        assert_eq!(p.deficit_pct, 10.0);
        // 20 Gb/s over 1.4826 * 1.5
        assert_eq!(p.sigmas, 9.0);
        let host = slow_host("h".into(), "k".into(), None, slow);
        assert_eq!(host.score, 10.0);
        assert!(
            host.evidence.contains("bandwidth rnic0->gpu0 10.0 % below the fleet (180.0 vs 200.0 Gb/s, 9.0 sigmas; 9 of its last 9 runs below)"),
            "{}",
            host.evidence
        );
    }

    #[test]
    fn noise_a_few_bad_runs_and_too_few_runs_are_not() {
        let th = Thresholds::default();
        let f = fleet();
        // Around the fleet's value.
        assert!(slow_paths(
            &ring(&[198.0, 202.0, 199.0, 201.0, 200.0, 197.0, 203.0]),
            &f,
            &th
        )
        .is_empty());
        // Two very bad runs of nine: the median stays healthy.
        assert!(slow_paths(
            &ring(&[120.0, 199.0, 201.0, 120.0, 200.0, 202.0, 198.0, 200.0, 201.0]),
            &f,
            &th
        )
        .is_empty());
        // Slow, but only four runs so far.
        assert!(slow_paths(&ring(&[180.0, 180.0, 180.0, 180.0]), &f, &th).is_empty());
        // Below the fleet in every run, but by less than 5 sigmas (11.1 Gb/s).
        assert!(slow_paths(&ring(&[196.0; 9]), &f, &th).is_empty());
        assert!(slow_paths(&ring(&[190.0; 9]), &f, &th).is_empty());
        assert_eq!(slow_paths(&ring(&[188.0; 9]), &f, &th).len(), 1);
        // A median far below, but half the runs above the fleet: not persistent.
        assert!(slow_paths(
            &ring(&[150.0, 150.0, 150.0, 150.0, 150.0, 205.0, 205.0, 205.0, 205.0]),
            &f,
            &th
        )
        .is_empty());
    }

    #[test]
    fn ranking_puts_the_largest_total_deficit_first_and_drops_healthy_hosts() {
        let path = |deficit_pct| SlowPath {
            rnic: "rnic0".into(),
            endpoint: "gpu0".into(),
            metric: Metric::Bandwidth,
            host_value: 0.0,
            fleet_value: 0.0,
            deficit_pct,
            sigmas: 5.0,
            runs: 9,
            runs_worse: 9,
        };
        let ranked = rank(vec![
            slow_host("a".into(), "k".into(), None, vec![path(15.0)]),
            slow_host("b".into(), "k".into(), None, vec![]),
            slow_host("c".into(), "k".into(), None, vec![path(10.0), path(10.0)]),
        ]);
        let names: Vec<&str> = ranked.iter().map(|h| h.host.as_str()).collect();
        assert_eq!(names, ["c", "a"]);
    }
}
