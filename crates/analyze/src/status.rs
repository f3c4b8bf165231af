//! Path status: is each probed path normal, abnormal or uncertain (Hostping 4.3)?
//!
//! Idle mode (4.3, first half): a path is abnormal when its eq.-3 bandwidth is more than
//! `abnormal_th` below its baseline. A path that is not abnormal is normal only when the
//! RNIC reaches the endpoint at line rate (an affinitive endpoint); a latency-bound GDR
//! path "cannot show a degraded link above its rate", so its "as expected" is no evidence
//! and it stays uncertain: such paths are judged only against the baseline.
//!
//! Busy mode (4.3, second half): an RNIC carrying service traffic (throughput above
//! `thp_low` of its line rate, Hostping 5) cannot be compared with the baseline. Its
//! affinitive paths are compared with each other instead: one more than `abnormal_th`
//! below the best of them is abnormal, and none can be called normal. Idle RNICs of a busy
//! host are still judged against the baseline ("check whether there are idle RNICs on
//! the host", 4.3).
//!
//! Latency (4.1.1 eq. 2, 4.3): the small-message median more than `abnormal_th` above the
//! baseline is abnormal. For a busy RNIC every path's latency carries the same queueing in
//! the RNIC (T_proc grows with its load), so its latency is judged relatively too: each
//! path's latency over its baseline, against the smallest such ratio among its affinitive
//! paths. Where the baselines of those paths are equal this is exactly "more than
//! `(1 + abnormal_th)` times the smallest latency"; dividing by the baseline keeps a
//! memory path from looking slow next to a GPU behind the same switch.

use crate::evidence;
use model::{
    ComponentId, HostTopology, Mode, Path, PathOutcome, PathReport, PathStatus, ProbeRun,
    Thresholds,
};

/// What the monitors said about one RNIC before the probe (Hostping 4.2, 5).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RnicCondition {
    /// The RNIC.
    pub id: ComponentId,
    /// Its line rate, Gb/s.
    pub line_rate_gbps: f64,
    /// Service throughput, if the monitor read it.
    pub throughput_gbps: Option<f64>,
    /// Tx PFC pause duration ratio, if read.
    pub tx_pause_ratio: Option<f64>,
    /// Drops since the previous snapshot, if read.
    pub drops: Option<u64>,
    /// Throughput above `thp_low` of line rate. An unread throughput counts as busy: the
    /// analyzer will not vouch for paths of an RNIC whose load it does not know.
    pub busy: bool,
    /// Tx pause ratio above `pfc_high`, or any drop (Hostping 4.2, 5).
    pub abnormal: bool,
}

impl RnicCondition {
    /// `paused 5.0 % of the time, 12 drops` for evidence.
    pub fn symptoms(&self) -> String {
        let mut parts = Vec::new();
        if let Some(p) = self.tx_pause_ratio {
            parts.push(format!("Tx paused {:.1} % of the time", p * 100.0));
        }
        if let Some(d) = self.drops.filter(|d| *d > 0) {
            parts.push(format!("{d} packets dropped"));
        }
        if parts.is_empty() {
            "no symptom counters read".to_string()
        } else {
            parts.join(", ")
        }
    }
}

/// The condition of every RNIC of the host, in host order.
pub(crate) fn rnic_conditions(
    host: &HostTopology,
    snapshot: &model::HostSnapshot,
    th: &Thresholds,
) -> Vec<RnicCondition> {
    host.rnics()
        .map(|c| {
            let line_rate_gbps = c.rnic().map(|r| r.line_rate_gbps).unwrap_or(0.0);
            let act = snapshot.rnic(&c.id);
            let throughput_gbps = act.and_then(|a| a.throughput_gbps);
            let tx_pause_ratio = act.and_then(|a| a.tx_pause_ratio);
            let drops = act.and_then(|a| a.drops);
            // Hostping 5: Thp_low is 5 % of line rate; PFC_high is a 3 % pause ratio, and
            // any drop counts.
            let busy = !throughput_gbps.is_some_and(|t| th.rnic_idle(t, line_rate_gbps));
            let abnormal =
                tx_pause_ratio.is_some_and(|p| p > th.pfc_high) || drops.is_some_and(|d| d > 0);
            RnicCondition {
                id: c.id.clone(),
                line_rate_gbps,
                throughput_gbps,
                tx_pause_ratio,
                drops,
                busy,
                abnormal,
            }
        })
        .collect()
}

/// What a path was compared with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reference {
    /// Its own baseline.
    Baseline,
    /// The best of its RNIC's affinitive paths (busy RNIC).
    Siblings {
        /// The best bandwidth among them, Gb/s.
        best_gbps: f64,
        /// The endpoint that reached it.
        best_endpoint: ComponentId,
    },
    /// Nothing: the probe failed, or there was no baseline.
    Nothing,
}

/// The judgement of one probed path.
#[derive(Debug, Clone)]
pub(crate) struct PathVerdict<'h> {
    /// The RNIC.
    pub rnic: ComponentId,
    /// The endpoint.
    pub endpoint: ComponentId,
    /// The path in the host model (`None` when the run names a path the model lacks).
    pub path: Option<&'h Path>,
    /// Small-message median, us.
    pub latency_us: Option<f64>,
    /// Eq.-3 bandwidth, Gb/s.
    pub bandwidth_gbps: Option<f64>,
    /// Baseline latency, us.
    pub baseline_latency_us: Option<f64>,
    /// Baseline bandwidth, Gb/s.
    pub baseline_bandwidth_gbps: Option<f64>,
    /// The status.
    pub status: PathStatus,
    /// Latency more than `abnormal_th` above its reference.
    pub latency_abnormal: bool,
    /// Why the path could not be judged.
    pub error: Option<String>,
    /// The engine could not probe it by design (`error` says why).
    pub unavailable: bool,
    /// What the bandwidth was compared with.
    pub reference: Reference,
    /// The streaming test of this path, if the run had one (reported, not judged).
    pub stream: Option<model::StreamResult>,
    /// Bytes of loopback data the engine verified.
    pub verified_bytes: Option<u64>,
}

impl PathVerdict<'_> {
    /// `rnic0->gpu1`.
    pub fn label(&self) -> String {
        format!("{}->{}", self.rnic, self.endpoint)
    }

    /// Affinitive per the host model.
    pub fn affinitive(&self) -> bool {
        self.path.is_some_and(|p| p.affinitive)
    }

    /// `rnic2->gpu4 at 120 Gb/s vs a baseline of 199 Gb/s (-40 %)`, or against the best
    /// sibling for a busy RNIC.
    pub fn describe_bandwidth(&self) -> String {
        let Some(bw) = self.bandwidth_gbps else {
            return format!("{} (not measured)", self.label());
        };
        match (&self.reference, self.baseline_bandwidth_gbps) {
            (
                Reference::Siblings {
                    best_gbps,
                    best_endpoint,
                },
                _,
            ) => format!(
                "{} at {} vs {} to {best_endpoint} ({}; {} carries service traffic, so it is \
                 judged against its best affinitive path)",
                self.label(),
                evidence::gbps(bw),
                evidence::gbps(*best_gbps),
                evidence::change(bw, *best_gbps),
                self.rnic,
            ),
            (_, Some(base)) => format!(
                "{} at {} vs a baseline of {} ({})",
                self.label(),
                evidence::gbps(bw),
                evidence::gbps(base),
                evidence::change(bw, base)
            ),
            (_, None) => format!("{} at {} (no baseline)", self.label(), evidence::gbps(bw)),
        }
    }

    /// `1.02 us vs a baseline of 1.00 us`.
    pub fn describe_latency(&self) -> String {
        match (self.latency_us, self.baseline_latency_us) {
            (Some(l), Some(b)) => {
                format!("{} vs a baseline of {}", evidence::us(l), evidence::us(b))
            }
            (Some(l), None) => evidence::us(l),
            (None, _) => "not measured".to_string(),
        }
    }

    /// The row of `Report.paths`.
    pub fn to_report(&self) -> PathReport {
        PathReport {
            rnic: self.rnic.clone(),
            endpoint: self.endpoint.clone(),
            latency_us: self.latency_us,
            bandwidth_gbps: self.bandwidth_gbps,
            baseline_latency_us: self.baseline_latency_us,
            baseline_bandwidth_gbps: self.baseline_bandwidth_gbps,
            status: self.status,
            latency_abnormal: self.latency_abnormal,
            affinitive: self.affinitive(),
            error: self.error.clone(),
            unavailable: self.unavailable,
            stream: self.stream.clone(),
            verified_bytes: self.verified_bytes,
            reprobes: Vec::new(),
        }
    }
}

/// Judges every probed path of `run`, in run order.
pub(crate) fn judge<'h>(
    host: &'h HostTopology,
    run: &ProbeRun,
    baseline: &model::Baseline,
    rnics: &[RnicCondition],
    th: &Thresholds,
) -> Vec<PathVerdict<'h>> {
    let mut verdicts: Vec<PathVerdict<'h>> = run
        .paths
        .iter()
        .map(|probe| {
            let path = host.path(&probe.rnic, &probe.endpoint);
            let base = baseline.path(&probe.rnic, &probe.endpoint);
            let (latency_us, bandwidth_gbps, mut error) = match &probe.outcome {
                PathOutcome::Measured(m) => (Some(m.small.p50_us), Some(m.bandwidth_gbps), None),
                PathOutcome::Failed { error } => (None, None, Some(error.clone())),
                // Said as the engine says it everywhere else: `unavailable: <reason>`.
                PathOutcome::Unavailable { reason } => {
                    (None, None, Some(format!("unavailable: {reason}")))
                }
            };
            if path.is_none() && error.is_none() {
                error = Some(format!(
                    "host model {} has no path from {} to {}",
                    host.name, probe.rnic, probe.endpoint
                ));
            }
            PathVerdict {
                rnic: probe.rnic.clone(),
                endpoint: probe.endpoint.clone(),
                path,
                latency_us,
                bandwidth_gbps,
                baseline_latency_us: base.map(|b| b.latency_us),
                baseline_bandwidth_gbps: base.map(|b| b.bandwidth_gbps),
                status: PathStatus::Uncertain,
                latency_abnormal: false,
                error,
                unavailable: matches!(probe.outcome, PathOutcome::Unavailable { .. }),
                reference: Reference::Nothing,
                stream: probe.stream.clone(),
                verified_bytes: probe.measurement().and_then(|m| m.verified_bytes),
            }
        })
        .collect();

    let busy_rnic =
        |id: &ComponentId| run.mode == Mode::Busy && rnics.iter().any(|r| &r.id == id && r.busy);
    for v in verdicts.iter_mut() {
        if v.error.is_none() && !busy_rnic(&v.rnic) {
            judge_against_baseline(v, th);
        }
    }
    for r in rnics.iter().filter(|r| busy_rnic(&r.id)) {
        judge_among_siblings(&mut verdicts, &r.id, th);
    }
    verdicts
}

/// Rule 1 (Hostping 4.3, idle): against the baseline.
fn judge_against_baseline(v: &mut PathVerdict<'_>, th: &Thresholds) {
    let (Some(bw), Some(base_bw)) = (v.bandwidth_gbps, v.baseline_bandwidth_gbps) else {
        return;
    };
    v.reference = Reference::Baseline;
    v.status = against_baseline(bw, base_bw, v.affinitive(), th);
    if let (Some(lat), Some(base_lat)) = (v.latency_us, v.baseline_latency_us) {
        v.latency_abnormal = lat > (1.0 + th.abnormal_th) * base_lat;
    }
}

/// Rule 1's status of one eq.-3 bandwidth `bw` against the path's baseline `base_bw`: also
/// what a re-probe within the run is judged by ([`crate::reprobe`]).
pub(crate) fn against_baseline(
    bw: f64,
    base_bw: f64,
    affinitive: bool,
    th: &Thresholds,
) -> PathStatus {
    if bw < (1.0 - th.abnormal_th) * base_bw {
        PathStatus::Abnormal
    } else if affinitive {
        PathStatus::Normal
    } else {
        // A latency-bound path's "as expected" says nothing about links above its rate.
        PathStatus::Uncertain
    }
}

/// Rule 2 (Hostping 4.3, busy): among one busy RNIC's affinitive paths.
fn judge_among_siblings(verdicts: &mut [PathVerdict<'_>], rnic: &ComponentId, th: &Thresholds) {
    let mine: Vec<usize> = (0..verdicts.len())
        .filter(|&i| &verdicts[i].rnic == rnic && verdicts[i].error.is_none())
        .collect();
    let siblings: Vec<usize> = mine
        .iter()
        .copied()
        .filter(|&i| verdicts[i].affinitive())
        .collect();
    let best = siblings
        .iter()
        .filter_map(|&i| verdicts[i].bandwidth_gbps.map(|bw| (bw, i)))
        .fold(None::<(f64, usize)>, |acc, (bw, i)| match acc {
            Some((b, _)) if b >= bw => acc,
            _ => Some((bw, i)),
        });
    let ratio = |v: &PathVerdict<'_>| match (v.latency_us, v.baseline_latency_us) {
        (Some(l), Some(b)) if b > 0.0 => Some(l / b),
        _ => None,
    };
    let min_ratio = siblings
        .iter()
        .filter_map(|&i| ratio(&verdicts[i]))
        .fold(None::<f64>, |acc, r| Some(acc.map_or(r, |a| a.min(r))));
    let best_endpoint = best.map(|(_, i)| verdicts[i].endpoint.clone());
    for &i in &mine {
        let v = &mut verdicts[i];
        v.status = PathStatus::Uncertain;
        if let (Some((best_gbps, _)), Some(best_endpoint), true) =
            (best, &best_endpoint, v.affinitive())
        {
            v.reference = Reference::Siblings {
                best_gbps,
                best_endpoint: best_endpoint.clone(),
            };
            if v.bandwidth_gbps
                .is_some_and(|bw| bw < (1.0 - th.abnormal_th) * best_gbps)
            {
                v.status = PathStatus::Abnormal;
            }
        }
        if let (Some(r), Some(min)) = (ratio(v), min_ratio) {
            v.latency_abnormal = r > (1.0 + th.abnormal_th) * min;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::{
        Baseline, BaselinePath, HostSnapshot, LatencyStats, Op, PathMeasurement, PathProbe,
        Provenance, RnicActivity,
    };

    fn stats(p50: f64) -> LatencyStats {
        LatencyStats {
            samples: 100,
            min_us: p50,
            p50_us: p50,
            p90_us: p50,
            p99_us: p50,
            max_us: p50,
        }
    }

    fn probe(r: &str, e: &str, bw: f64, lat: f64) -> PathProbe {
        PathProbe {
            rnic: r.into(),
            endpoint: e.into(),
            started_ns: 0,
            outcome: PathOutcome::Measured(PathMeasurement {
                op: Op::Write,
                small_bytes: 1,
                large_bytes: 131072,
                small: stats(lat),
                large: stats(lat + 131072.0 * 8.0 / bw / 1000.0),
                bandwidth_gbps: bw,
                verified_bytes: None,
            }),
            stream: None,
        }
    }

    fn run(mode: Mode, paths: Vec<PathProbe>) -> ProbeRun {
        ProbeRun {
            host: "dgx-a100".into(),
            provenance: Provenance::Simulated,
            mode,
            started_ns: 0,
            finished_ns: 1,
            paths,
        }
    }

    fn baseline(host: &HostTopology) -> Baseline {
        Baseline {
            host: host.name.clone(),
            provenance: Provenance::Simulated,
            runs: 1,
            paths: host
                .paths()
                .iter()
                .map(|p| BaselinePath {
                    rnic: p.rnic.clone(),
                    endpoint: p.endpoint.clone(),
                    latency_us: if p.endpoint.as_str().starts_with("mem") {
                        1.6
                    } else {
                        1.0
                    },
                    bandwidth_gbps: if p.affinitive { 199.0 } else { 125.5 },
                })
                .collect(),
            measured_with: Default::default(),
        }
    }

    #[test]
    fn idle_threshold_is_strictly_below_eighty_percent_of_baseline() {
        let host = model::builtin::load("dgx-a100").unwrap().unwrap();
        let th = Thresholds::default();
        let r = run(
            Mode::Idle,
            vec![
                probe("rnic0", "mem0", 199.0 * 0.8, 1.6),
                probe("rnic0", "mem1", 199.0 * 0.79, 1.6 * 1.21),
                probe("rnic0", "gpu2", 125.5, 1.0),
                probe("rnic0", "gpu3", 90.0, 1.0),
            ],
        );
        let rnics = rnic_conditions(&host, &HostSnapshot::default(), &th);
        let v = judge(&host, &r, &baseline(&host), &rnics, &th);
        let got: Vec<_> = v.iter().map(|v| (v.status, v.latency_abnormal)).collect();
        assert_eq!(
            got,
            [
                (PathStatus::Normal, false),
                (PathStatus::Abnormal, true),
                (PathStatus::Uncertain, false),
                (PathStatus::Abnormal, false)
            ]
        );
    }

    #[test]
    fn failed_probe_and_unknown_path_are_uncertain_with_an_error() {
        let host = model::builtin::load("dgx-a100").unwrap().unwrap();
        let th = Thresholds::default();
        let mut failed = probe("rnic0", "mem0", 1.0, 1.0);
        failed.outcome = PathOutcome::Failed {
            error: "ibv_post_send: QP in error".into(),
        };
        let r = run(Mode::Idle, vec![failed, probe("rnic9", "mem0", 199.0, 1.6)]);
        let v = judge(&host, &r, &baseline(&host), &[], &th);
        assert_eq!(v[0].status, PathStatus::Uncertain);
        assert_eq!(v[0].error.as_deref(), Some("ibv_post_send: QP in error"));
        assert_eq!(v[0].latency_us, None);
        assert_eq!(v[1].status, PathStatus::Uncertain);
        assert!(v[1]
            .error
            .as_deref()
            .unwrap()
            .contains("no path from rnic9 to mem0"));
    }

    #[test]
    fn busy_rnic_is_judged_among_its_affinitive_paths_and_never_normal() {
        let host = model::builtin::load("dgx-a100").unwrap().unwrap();
        let th = Thresholds::default();
        let snapshot = HostSnapshot {
            rnics: vec![
                RnicActivity {
                    id: "rnic0".into(),
                    throughput_gbps: Some(150.0),
                    tx_pause_ratio: Some(0.05),
                    drops: Some(0),
                },
                RnicActivity {
                    id: "rnic1".into(),
                    throughput_gbps: Some(1.0),
                    tx_pause_ratio: Some(0.0),
                    drops: Some(0),
                },
            ],
            ..HostSnapshot::default()
        };
        let rnics = rnic_conditions(&host, &snapshot, &th);
        assert!(rnics[0].busy && rnics[0].abnormal);
        assert!(!rnics[1].busy && !rnics[1].abnormal);
        // rnic2, rnic3: no counters read -> busy (unknown load), not abnormal.
        assert!(rnics[2].busy && !rnics[2].abnormal);
        let r = run(
            Mode::Busy,
            vec![
                probe("rnic0", "mem0", 150.0, 1.6 * 1.5),
                probe("rnic0", "mem1", 100.0, 1.6 * 1.5),
                probe("rnic0", "gpu0", 148.0, 1.0 * 1.5),
                probe("rnic0", "gpu1", 150.0, 1.0 * 2.0),
                probe("rnic1", "mem0", 199.0, 1.6),
                probe("rnic1", "mem1", 150.0, 1.6),
            ],
        );
        let v = judge(&host, &r, &baseline(&host), &rnics, &th);
        let got: Vec<_> = v.iter().map(|v| (v.status, v.latency_abnormal)).collect();
        assert_eq!(
            got,
            [
                (PathStatus::Uncertain, false),
                (PathStatus::Abnormal, false),
                (PathStatus::Uncertain, false),
                // 2.0x its baseline against 1.5x for its siblings: +33 %.
                (PathStatus::Uncertain, true),
                (PathStatus::Normal, false),
                (PathStatus::Abnormal, false)
            ]
        );
        assert_eq!(
            v[1].reference,
            Reference::Siblings {
                best_gbps: 150.0,
                best_endpoint: "mem0".into()
            }
        );
    }
}
