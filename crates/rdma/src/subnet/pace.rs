//! When a switch-port sampler sweeps: every period from the first sweep; a sweep that
//! overran its period is followed by the next at once, and the missed ticks are skipped
//! rather than made up in a burst. This is the one loop of `hostping fabric sample` and of
//! the agent's sampler (`agent::switch_sampler`); what a sweep does (print, post, store) and
//! how the time until the next is spent (sleeping, or reading the ports a collector asks
//! for now) are theirs, through [`Sweeping`].

use std::time::{Duration, Instant};

/// One sampler's sweeps and waits, as [`pace`] runs them.
pub trait Sweeping {
    /// What ends the loop early.
    type Error;

    /// Runs one sweep.
    fn sweep(&mut self) -> Result<Swept, Self::Error>;

    /// Spends the time until `next`, when the next sweep is due; `Ok(true)` stops the loop.
    fn wait_until(&mut self, next: Instant) -> Result<bool, Self::Error>;
}

/// What a sweep tells the schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Swept {
    /// Start the schedule again from this instant: when a port (re)opened for the sweep
    /// became ready, since opening it (and discovering) delayed the sweep, so that sweeps
    /// are never closer than the period.
    pub restart_from: Option<Instant>,
}

/// How the sweeps went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Paced {
    /// Sweeps run.
    pub sweeps: u64,
    /// Sweeps that took longer than the period (the next started at once).
    pub overran: u64,
}

/// Sweeps every `period` until `sampling` stops, or one of its sweeps or waits fails.
pub fn pace<S: Sweeping>(period: Duration, sampling: &mut S) -> Result<Paced, S::Error> {
    let mut next = Instant::now();
    let mut paced = Paced::default();
    loop {
        let swept = sampling.sweep()?;
        paced.sweeps += 1;
        if let Some(ready) = swept.restart_from {
            next = ready;
        }
        next += period;
        let now = Instant::now();
        if next < now {
            paced.overran += 1;
            next = now;
        }
        if sampling.wait_until(next)? {
            return Ok(paced);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sweeps that take `took[i]`, each restarting the schedule where `restart[i]` says,
    /// for as many sweeps as `took` has; records when each sweep started.
    struct Fake {
        took: Vec<Duration>,
        restart: Vec<bool>,
        started: Vec<Instant>,
        fail_at: Option<usize>,
    }

    impl Sweeping for Fake {
        type Error = String;

        fn sweep(&mut self) -> Result<Swept, String> {
            let i = self.started.len();
            if self.fail_at == Some(i) {
                return Err(format!("sweep {i} failed"));
            }
            self.started.push(Instant::now());
            std::thread::sleep(self.took[i]);
            let ready = Instant::now();
            Ok(Swept {
                restart_from: self.restart[i].then_some(ready),
            })
        }

        fn wait_until(&mut self, next: Instant) -> Result<bool, String> {
            if self.started.len() == self.took.len() {
                return Ok(true);
            }
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
            Ok(false)
        }
    }

    const PERIOD: Duration = Duration::from_millis(30);

    fn fake(took_ms: &[u64], restart: &[bool]) -> Fake {
        Fake {
            took: took_ms
                .iter()
                .map(|&ms| Duration::from_millis(ms))
                .collect(),
            restart: restart.to_vec(),
            started: Vec::new(),
            fail_at: None,
        }
    }

    #[test]
    fn sweeps_keep_the_period_and_an_overrun_is_skipped_not_made_up() {
        let mut sampling = fake(&[1, 70, 1, 1], &[false; 4]);
        let paced = pace(PERIOD, &mut sampling).unwrap();
        assert_eq!(
            paced,
            Paced {
                sweeps: 4,
                overran: 1
            }
        );
        let gaps: Vec<Duration> = sampling.started.windows(2).map(|w| w[1] - w[0]).collect();
        // On the period; after the overrun at once, then a full period after that: the
        // missed ticks are not made up (the sweep after would follow at once).
        assert!(gaps[0] >= PERIOD, "{gaps:?}");
        assert!(gaps[1] >= Duration::from_millis(70), "{gaps:?}");
        assert!(gaps[2] >= PERIOD, "{gaps:?}");
    }

    #[test]
    fn a_restart_counts_the_period_from_when_the_port_was_ready() {
        // The first sweep opens the port (50 ms): the next is a full period after it.
        let mut sampling = fake(&[50, 1], &[true, false]);
        let paced = pace(PERIOD, &mut sampling).unwrap();
        assert_eq!(paced.overran, 0);
        let gap = sampling.started[1] - sampling.started[0];
        assert!(gap >= Duration::from_millis(50) + PERIOD, "{gap:?}");
    }

    #[test]
    fn a_failed_sweep_ends_the_loop_with_its_error() {
        let mut sampling = fake(&[1, 1, 1], &[false; 3]);
        sampling.fail_at = Some(1);
        assert_eq!(pace(PERIOD, &mut sampling), Err("sweep 1 failed".into()));
    }
}
