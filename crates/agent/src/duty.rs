//! How often the agent may probe: a duty-cycle limiter in front of both triggers (the
//! symptoms of `analyze::symptoms`, read every second, and the idle host status of
//! `analyze::mode`, read every five minutes; Hostping 4.2, 5).

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
    /// A full bucket at `now_ns` (ns of the backend clock): at most `max_duty` (a share of
    /// time, 0 to 1) spent probing over the long run, and up to `burst_ns` ns of probing at
    /// once, so that the first symptom is probed without waiting.
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

    /// Whether a run may start at `now_ns`.
    pub fn allows(&mut self, now_ns: u64) -> bool {
        self.refill(now_ns);
        self.budget_ns > 0.0
    }

    /// Charges a run that took `ns` ns of the backend clock and ended at `now_ns`.
    pub fn charge(&mut self, ns: u64, now_ns: u64) {
        self.refill(now_ns);
        self.budget_ns -= ns as f64;
        self.spent_ns += ns;
    }

    /// Share of time (0 to 1) spent probing since the agent started, at `now_ns`.
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
    use proptest::prelude::*;

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
