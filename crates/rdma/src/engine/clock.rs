//! The clock the engine's per-iteration samples are taken with (loopback and pair probes).

use std::time::Instant;

/// Timestamps for the per-iteration samples: the TSC on x86_64, as perftest uses, turned
/// into ns by calibrating against the monotonic clock over the whole test; the monotonic
/// clock itself elsewhere. Why not `Instant` per iteration: where the kernel has no stable
/// TSC clocksource (QEMU TCG guests use the HPET) `clock_gettime` is a system call costing
/// microseconds, twice per iteration, which the samples would include.
pub(crate) struct Ticks {
    started: Instant,
    first: u64,
}

impl Ticks {
    pub(crate) fn start() -> Ticks {
        Ticks {
            started: Instant::now(),
            first: Self::now(),
        }
    }

    #[cfg(target_arch = "x86_64")]
    pub(crate) fn now() -> u64 {
        // SAFETY: RDTSC has no preconditions on x86_64.
        unsafe { core::arch::x86_64::_rdtsc() }
    }

    #[cfg(not(target_arch = "x86_64"))]
    pub(crate) fn now() -> u64 {
        static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }

    /// ns per tick, from the ticks and the monotonic time elapsed since `start`.
    pub(crate) fn ns_per_tick(&self) -> f64 {
        let ticks = Self::now().saturating_sub(self.first).max(1);
        self.started.elapsed().as_nanos() as f64 / ticks as f64
    }
}
