//! A path of a host's latest run judged against a baseline (`GET /api/hosts/{host}/baseline`):
//! the host's own when its report carries one, else its kind's fleet baseline
//! (`collector::baseline`), with Abnormal_th from `model::Thresholds` (Hostping 5) and a
//! "slow" verdict from the fleet's spread of one run.

use super::baseline::{min_slow_fraction, FleetPath, SLOW_SIGMAS};
use model::{BaselineKind, PathReport, Report, Thresholds};
use serde::{Deserialize, Serialize};

/// What a path was judged against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The host's own baseline (a recorded or simulated one in its report).
    Own,
    /// Its kind's fleet baseline.
    Fleet,
    /// Neither.
    None,
}

/// A path's verdict against its baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Within the healthy spread.
    Normal,
    /// Below the baseline by more than [`SLOW_SIGMAS`] run standard deviations (and at
    /// least [`min_slow_fraction`]), but not by Abnormal_th.
    Slow,
    /// More than Abnormal_th below the baseline in bandwidth, or above it in latency.
    Abnormal,
    /// No baseline, no measurement, or a busy run (service traffic shares the RNIC).
    Uncertain,
}

/// One path of `GET /api/hosts/{host}/baseline`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgedPath {
    /// The RNIC.
    pub rnic: String,
    /// The endpoint.
    pub endpoint: String,
    /// What it was judged against.
    pub source: Source,
    /// Baseline latency, us.
    pub latency_us: Option<f64>,
    /// Baseline bandwidth, Gb/s.
    pub bandwidth_gbps: Option<f64>,
    /// The fleet's MAD of latency between hosts, us (fleet source only).
    pub latency_mad_us: Option<f64>,
    /// The fleet's MAD of bandwidth between hosts, Gb/s (fleet source only).
    pub bandwidth_mad_gbps: Option<f64>,
    /// Hosts in the fleet baseline (fleet source only).
    pub hosts: Option<usize>,
    /// Runs behind the fleet baseline (fleet source only).
    pub runs: Option<usize>,
    /// The latest run's latency, us.
    pub measured_latency_us: Option<f64>,
    /// The latest run's bandwidth, Gb/s.
    pub measured_bandwidth_gbps: Option<f64>,
    /// How far the bandwidth is below the baseline, percent (negative: above).
    pub deficit_pct: Option<f64>,
    /// How far the latency is above the baseline, percent (negative: below).
    pub latency_excess_pct: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
}

/// Whether a report's paths carry the host's own baseline: a recorded or simulated one
/// (a relative judgement, line rate and peers, is none).
pub fn has_own_baseline(report: &Report) -> bool {
    matches!(
        report.baseline,
        Some(BaselineKind::Recorded | BaselineKind::Simulated)
    )
}

fn pct(x: f64) -> f64 {
    (x * 1e4).round() / 1e2
}

/// Judges one path of a run: against the host's own baseline when `own` and the path has
/// one, else against `fleet`; Abnormal_th from `th` (Hostping 5), slow from the fleet's
/// run spread when there is one.
pub fn judge(
    path: &PathReport,
    own: bool,
    fleet: Option<&FleetPath>,
    busy: bool,
    th: &Thresholds,
) -> JudgedPath {
    let own_reference = match (own, path.baseline_latency_us, path.baseline_bandwidth_gbps) {
        (true, Some(l), Some(b)) => Some((l, b)),
        _ => None,
    };
    let (source, reference) = match (own_reference, fleet) {
        (Some(r), _) => (Source::Own, Some(r)),
        (None, Some(f)) => (
            Source::Fleet,
            Some((f.latency.hosts.median, f.bandwidth.hosts.median)),
        ),
        (None, None) => (Source::None, None),
    };
    let fleet_fields = fleet.filter(|_| source == Source::Fleet);
    let measured = match (path.latency_us, path.bandwidth_gbps) {
        (Some(l), Some(b)) if path.error.is_none() && !path.unavailable => Some((l, b)),
        _ => None,
    };
    let (deficit, excess) = match (reference, measured) {
        (Some((rl, rb)), Some((l, b))) if rl > 0.0 && rb > 0.0 => {
            (Some((rb - b) / rb), Some((l - rl) / rl))
        }
        _ => (None, None),
    };
    let verdict = match (reference, deficit, excess) {
        _ if busy => Verdict::Uncertain,
        (Some((rl, rb)), Some(d), Some(e)) => {
            if d > th.abnormal_th || e > th.abnormal_th {
                Verdict::Abnormal
            } else {
                let floor = min_slow_fraction(th);
                // A run is slow when it is further below than a healthy run wanders:
                // SLOW_SIGMAS of the fleet's run spread (also around an own baseline,
                // which has no spread of its own).
                let slow = fleet.is_some_and(|f| {
                    let bw = d * rb;
                    let lat = e * rl;
                    (d >= floor && bw > SLOW_SIGMAS * f.bandwidth.run_sigma())
                        || (e >= floor && lat > SLOW_SIGMAS * f.latency.run_sigma())
                });
                if slow {
                    Verdict::Slow
                } else {
                    Verdict::Normal
                }
            }
        }
        _ => Verdict::Uncertain,
    };
    JudgedPath {
        rnic: path.rnic.to_string(),
        endpoint: path.endpoint.to_string(),
        source,
        latency_us: reference.map(|r| r.0),
        bandwidth_gbps: reference.map(|r| r.1),
        latency_mad_us: fleet_fields.map(|f| f.latency.hosts.mad),
        bandwidth_mad_gbps: fleet_fields.map(|f| f.bandwidth.hosts.mad),
        hosts: fleet_fields.map(|f| f.hosts),
        runs: fleet_fields.map(|f| f.runs),
        measured_latency_us: measured.map(|m| m.0),
        measured_bandwidth_gbps: measured.map(|m| m.1),
        deficit_pct: deficit.map(pct),
        latency_excess_pct: excess.map(pct),
        verdict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::baseline::Spread;
    use crate::robust::Robust;
    use model::PathStatus;

    fn fleet(median_bw: f64, mad_bw: f64, run_mad_bw: f64) -> FleetPath {
        let spread = |median, mad, run_mad| Spread {
            hosts: Robust {
                median,
                mad,
                count: 5,
            },
            run_mad,
        };
        FleetPath {
            rnic: "rnic0".into(),
            endpoint: "mem0".into(),
            latency: spread(2.0, 0.01, 0.02),
            bandwidth: spread(median_bw, mad_bw, run_mad_bw),
            hosts: 5,
            runs: 45,
        }
    }

    fn path(bw: f64, baseline: Option<f64>) -> PathReport {
        PathReport {
            rnic: "rnic0".into(),
            endpoint: "mem0".into(),
            latency_us: Some(2.0),
            bandwidth_gbps: Some(bw),
            baseline_latency_us: baseline.map(|_| 2.0),
            baseline_bandwidth_gbps: baseline,
            status: PathStatus::Normal,
            latency_abnormal: false,
            affinitive: true,
            error: None,
            unavailable: false,
            stream: None,
            verified_bytes: None,
            reprobes: Vec::new(),
        }
    }

    #[test]
    fn verdicts_follow_abnormal_th_and_the_run_spread() {
        let th = Thresholds::default();
        let f = fleet(200.0, 1.0, 2.0);
        // sigma of a run: 1.4826 * hypot(1, 2) = 3.3 Gb/s; 3 sigmas = 9.9 Gb/s.
        let v = |bw| judge(&path(bw, None), false, Some(&f), false, &th).verdict;
        assert_eq!(v(199.0), Verdict::Normal);
        assert_eq!(v(192.0), Verdict::Normal);
        assert_eq!(v(185.0), Verdict::Slow);
        assert_eq!(v(161.0), Verdict::Slow);
        assert_eq!(v(159.0), Verdict::Abnormal);
        let j = judge(&path(180.0, None), false, Some(&f), false, &th);
        assert_eq!(j.source, Source::Fleet);
        assert_eq!(j.deficit_pct, Some(10.0));
        assert_eq!((j.hosts, j.runs), (Some(5), Some(45)));
        assert_eq!(j.bandwidth_mad_gbps, Some(1.0));
        // Busy: service traffic shares the RNIC, nothing can be said.
        let busy = judge(&path(100.0, None), false, Some(&f), true, &th);
        assert_eq!(busy.verdict, Verdict::Uncertain);
        assert_eq!(busy.deficit_pct, Some(50.0));
    }

    #[test]
    fn an_own_baseline_comes_first_and_none_is_uncertain() {
        let th = Thresholds::default();
        let f = fleet(200.0, 1.0, 2.0);
        let j = judge(&path(172.0, Some(180.0)), true, Some(&f), false, &th);
        assert_eq!(j.source, Source::Own);
        assert_eq!(j.bandwidth_gbps, Some(180.0));
        assert_eq!(j.bandwidth_mad_gbps, None);
        assert_eq!(j.verdict, Verdict::Normal);
        // A relative reference in the report is no own baseline.
        let j = judge(&path(170.0, Some(180.0)), false, Some(&f), false, &th);
        assert_eq!(j.source, Source::Fleet);
        assert_eq!(j.verdict, Verdict::Slow);
        let j = judge(&path(170.0, None), false, None, false, &th);
        assert_eq!((j.source, j.verdict), (Source::None, Verdict::Uncertain));
        assert_eq!(j.bandwidth_gbps, None);
        assert_eq!(j.measured_bandwidth_gbps, Some(170.0));
    }

    #[test]
    fn a_tight_fleet_still_needs_a_tenth_of_abnormal_th() {
        let th = Thresholds::default();
        let f = fleet(200.0, 0.0, 0.0);
        let v = |bw| judge(&path(bw, None), false, Some(&f), false, &th).verdict;
        assert_eq!(v(199.0), Verdict::Normal);
        assert_eq!(v(195.0), Verdict::Slow);
    }
}
