//! Symptoms that make the agent probe at once (Hostping 5): a Tx pause duration ratio above
//! PFC_high (3 %: "every second, transmission is paused by 30 ms") or any packet drop. The
//! host-status check every five minutes uses [`crate::mode`] instead.
//!
//! Beyond the paper, transport errors are a symptom too: a transport timeout
//! (`local_ack_timeout_err`) or a retransmission storm (at least
//! [`crate::odp::FLOOD_MIN_PER_S`] retransmitted requests a second) on an RNIC is how ODP
//! damming and flood show (ISPASS'21), and no probe sees them. They go through the same
//! duty-cycle limit as the paper's triggers.

use model::{ComponentId, HostSnapshot, Thresholds};

/// An abnormal metric on one RNIC (Hostping 5: "PFC_high is 3 % (every second,
/// transmission is paused by 30 ms)", or any packet drop).
#[derive(Debug, Clone, PartialEq)]
pub enum Symptom {
    /// The RNIC paused its upstream port for more than PFC_high of the last interval.
    Pause {
        /// The RNIC.
        rnic: ComponentId,
        /// Tx pause duration ratio.
        ratio: f64,
        /// PFC_high.
        limit: f64,
    },
    /// Drop counters rose.
    Drops {
        /// The RNIC.
        rnic: ComponentId,
        /// Packets dropped since the previous reading.
        count: u64,
    },
    /// Transport timeouts, or a retransmission storm, in the last interval (ISPASS'21).
    Transport {
        /// The RNIC.
        rnic: ComponentId,
        /// `local_ack_timeout_err` in the interval.
        timeouts: u64,
        /// The largest of `duplicate_request`, `out_of_sequence`, `packet_seq_err`.
        retransmitted: u64,
    },
}

impl Symptom {
    /// The trigger name runs are stored under.
    pub fn trigger(&self) -> &'static str {
        match self {
            Symptom::Pause { .. } => "pfc",
            Symptom::Drops { .. } => "drops",
            Symptom::Transport { .. } => "transport",
        }
    }

    /// In words, with the values.
    pub fn detail(&self) -> String {
        match self {
            Symptom::Pause { rnic, ratio, limit } => {
                format!("{rnic} tx pause ratio {ratio:.3} > PFC_high {limit}")
            }
            Symptom::Drops { rnic, count } => format!("{rnic} dropped {count} packets"),
            Symptom::Transport {
                rnic,
                timeouts,
                retransmitted,
            } => format!(
                "{rnic} transport timeouts {timeouts}, retransmitted requests {retransmitted}"
            ),
        }
    }
}

/// The symptoms in a snapshot, RNIC by RNIC: pause first, as the paper's main trigger.
pub fn symptoms(snapshot: &HostSnapshot, thresholds: &Thresholds) -> Vec<Symptom> {
    let mut out = Vec::new();
    for r in &snapshot.rnics {
        if let Some(ratio) = r.tx_pause_ratio.filter(|&p| p > thresholds.pfc_high) {
            out.push(Symptom::Pause {
                rnic: r.id.clone(),
                ratio,
                limit: thresholds.pfc_high,
            });
        }
    }
    for r in &snapshot.rnics {
        if let Some(count) = r.drops.filter(|&d| d > 0) {
            out.push(Symptom::Drops {
                rnic: r.id.clone(),
                count,
            });
        }
    }
    for t in &snapshot.transport {
        let timeouts = t.local_ack_timeout_err.unwrap_or(0);
        if timeouts > 0 || crate::odp::is_storm(t) {
            out.push(Symptom::Transport {
                rnic: t.rnic.clone(),
                timeouts,
                retransmitted: crate::odp::retransmitted(t),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::RnicActivity;

    fn snapshot(pause: &[(Option<f64>, Option<u64>)]) -> HostSnapshot {
        HostSnapshot {
            rnics: pause
                .iter()
                .enumerate()
                .map(|(i, &(p, d))| RnicActivity {
                    id: format!("rnic{i}").as_str().into(),
                    throughput_gbps: Some(0.0),
                    tx_pause_ratio: p,
                    drops: d,
                })
                .collect(),
            ..HostSnapshot::default()
        }
    }

    #[test]
    fn pause_above_pfc_high_and_any_drop_are_symptoms() {
        let t = Thresholds::default();
        let s = snapshot(&[(Some(0.03), Some(0)), (Some(0.031), None), (None, Some(2))]);
        let found = symptoms(&s, &t);
        assert_eq!(
            found
                .iter()
                .map(|s| (s.trigger(), s.detail()))
                .collect::<Vec<_>>(),
            [
                (
                    "pfc",
                    "rnic1 tx pause ratio 0.031 > PFC_high 0.03".to_string()
                ),
                ("drops", "rnic2 dropped 2 packets".to_string())
            ]
        );
        assert!(symptoms(&snapshot(&[(None, None), (Some(0.0), Some(0))]), &t).is_empty());
    }

    #[test]
    fn transport_timeouts_and_storms_are_symptoms_stray_retransmissions_are_not() {
        let t = Thresholds::default();
        let counters = |rnic: &str, timeouts, retransmitted| model::TransportCounters {
            rnic: rnic.into(),
            interval_ns: Some(1_000_000_000),
            local_ack_timeout_err: Some(timeouts),
            packet_seq_err: Some(retransmitted),
            out_of_sequence: None,
            duplicate_request: Some(retransmitted),
        };
        let s = HostSnapshot {
            transport: vec![
                counters("rnic0", 0, 0),
                counters("rnic1", 2, 0),
                counters("rnic2", 0, 40),
                counters("rnic3", 0, 57_344),
            ],
            ..HostSnapshot::default()
        };
        let found: Vec<(&str, String)> = symptoms(&s, &t)
            .iter()
            .map(|s| (s.trigger(), s.detail()))
            .collect();
        assert_eq!(
            found,
            [
                (
                    "transport",
                    "rnic1 transport timeouts 2, retransmitted requests 0".to_string()
                ),
                (
                    "transport",
                    "rnic3 transport timeouts 0, retransmitted requests 57344".to_string()
                ),
            ]
        );
    }
}
