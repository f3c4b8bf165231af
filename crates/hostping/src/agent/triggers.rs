//! When the agent probes (Hostping 4.2, 5): symptoms read every second start an
//! affinitive-only probe at once; the host status read every five minutes starts a full
//! mesh when the host is idle. A duty-cycle limiter sits in front of both.

use model::{HostSnapshot, HostTopology, Mode, Thresholds};

/// An abnormal metric on one RNIC (Hostping 5: "PFC_high is 3 % (every second,
/// transmission is paused by 30 ms)", or any packet drop).
#[derive(Debug, Clone, PartialEq)]
pub enum Symptom {
    /// The RNIC paused its upstream port for more than PFC_high of the last interval.
    Pause {
        /// The RNIC.
        rnic: String,
        /// Tx pause duration ratio.
        ratio: f64,
        /// PFC_high.
        limit: f64,
    },
    /// Drop counters rose.
    Drops {
        /// The RNIC.
        rnic: String,
        /// Packets dropped since the previous reading.
        count: u64,
    },
}

impl Symptom {
    /// The trigger name runs are stored under.
    pub fn trigger(&self) -> &'static str {
        match self {
            Symptom::Pause { .. } => "pfc",
            Symptom::Drops { .. } => "drops",
        }
    }

    /// In words, with the values.
    pub fn detail(&self) -> String {
        match self {
            Symptom::Pause { rnic, ratio, limit } => {
                format!("{rnic} tx pause ratio {ratio:.3} > PFC_high {limit}")
            }
            Symptom::Drops { rnic, count } => format!("{rnic} dropped {count} packets"),
        }
    }
}

/// The symptoms in a snapshot, RNIC by RNIC: pause first, as the paper's main trigger.
pub fn symptoms(snapshot: &HostSnapshot, thresholds: &Thresholds) -> Vec<Symptom> {
    let mut out = Vec::new();
    for r in &snapshot.rnics {
        if let Some(ratio) = r.tx_pause_ratio.filter(|&p| p > thresholds.pfc_high) {
            out.push(Symptom::Pause {
                rnic: r.id.to_string(),
                ratio,
                limit: thresholds.pfc_high,
            });
        }
    }
    for r in &snapshot.rnics {
        if let Some(count) = r.drops.filter(|&d| d > 0) {
            out.push(Symptom::Drops {
                rnic: r.id.to_string(),
                count,
            });
        }
    }
    out
}

/// Whether the host status allows a full mesh: every RNIC under Thp_low and every GPU idle
/// (Hostping 4.2, 5).
pub fn host_idle(host: &HostTopology, snapshot: &HostSnapshot, thresholds: &Thresholds) -> bool {
    crate::pipeline::mode_from_snapshot(host, snapshot, thresholds) == Mode::Idle
}

/// A token bucket over probe time: it fills at `max_duty` ns per ns of clock, up to
/// `burst_ns`, and a run may start while it holds anything. Each run then pays its whole
/// duration, so over any window of length T the agent probes at most
/// `burst + max_duty * T` plus one run, whatever the symptoms do.
#[derive(Debug, Clone)]
pub struct DutyLimiter {
    max_duty: f64,
    burst_ns: f64,
    budget_ns: f64,
    last_ns: u64,
    started_ns: u64,
    spent_ns: u64,
}

impl DutyLimiter {
    /// A full bucket at `now_ns`.
    pub fn new(max_duty: f64, burst_ns: u64, now_ns: u64) -> DutyLimiter {
        DutyLimiter {
            max_duty,
            burst_ns: burst_ns as f64,
            budget_ns: burst_ns as f64,
            last_ns: now_ns,
            started_ns: now_ns,
            spent_ns: 0,
        }
    }

    fn refill(&mut self, now_ns: u64) {
        let elapsed = now_ns.saturating_sub(self.last_ns) as f64;
        self.budget_ns = (self.budget_ns + elapsed * self.max_duty).min(self.burst_ns);
        self.last_ns = self.last_ns.max(now_ns);
    }

    /// Whether a run may start now.
    pub fn allows(&mut self, now_ns: u64) -> bool {
        self.refill(now_ns);
        self.budget_ns > 0.0
    }

    /// Charges a run that took `ns` and ended at `now_ns`.
    pub fn charge(&mut self, ns: u64, now_ns: u64) {
        self.refill(now_ns);
        self.budget_ns -= ns as f64;
        self.spent_ns += ns;
    }

    /// Share of time spent probing since the agent started.
    pub fn duty_cycle(&self, now_ns: u64) -> f64 {
        let elapsed = now_ns.saturating_sub(self.started_ns);
        if elapsed == 0 {
            0.0
        } else {
            self.spent_ns as f64 / elapsed as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::RnicActivity;
    use proptest::prelude::*;

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
    fn the_first_symptom_is_probed_at_once_then_the_duty_cycle_holds() {
        let sec = 1_000_000_000u64;
        let mut l = DutyLimiter::new(0.05, 2 * sec, 0);
        assert!(l.allows(0));
        l.charge(sec / 2, sec / 2);
        // A storm: a symptom every second, each probe 0.5 s.
        let mut runs = 1;
        for t in 1..=3600u64 {
            if l.allows(t * sec) {
                l.charge(sec / 2, t * sec + sec / 2);
                runs += 1;
            }
        }
        let duty = l.duty_cycle(3600 * sec);
        assert!(duty <= 0.05 + 2.5 / 3600.0, "{duty}");
        assert!(
            duty >= 0.045,
            "the limiter should not starve probing: {duty}"
        );
        assert!(runs > 300, "{runs}");
    }

    proptest! {
        #[test]
        fn probing_never_exceeds_burst_plus_duty_plus_one_run(
            duty in 0.001f64..1.0,
            burst in 0u64..10_000,
            attempts in prop::collection::vec((0u64..5_000, 1u64..3_000), 1..200),
        ) {
            let mut l = DutyLimiter::new(duty, burst, 0);
            let mut now = 0u64;
            let mut spent = 0u64;
            let mut longest = 0u64;
            for (gap, cost) in attempts {
                now += gap;
                if l.allows(now) {
                    now += cost;
                    l.charge(cost, now);
                    spent += cost;
                    longest = longest.max(cost);
                }
            }
            let bound = burst as f64 + duty * now as f64 + longest as f64;
            prop_assert!(spent as f64 <= bound + 1e-6, "spent {spent} > {bound}");
        }
    }
}
