//! A test runs on the CPUs of its RNIC's NUMA node, as perftest's documentation asks of its
//! own runs (`taskset`): the thread that posts and polls stays on one node's CPUs for the
//! whole test instead of being moved mid-test, and sits next to the device. In the Soft-RoCE
//! guest a floating READ test took 3.5 % longer than `ib_read_lat` and a pinned one 1.6 %
//! (third-fastest of 16 tests each, one boot, BENCHMARKS.md "READ pass mark").
//!
//! Pinning is best effort: where the kernel refuses it, or the caller may not run on any of
//! those CPUs (a cgroup cpuset, a `taskset` of its own), the test runs where it is.

use std::mem::{size_of, zeroed};

/// The calling thread pinned to some CPUs; its earlier CPU set comes back when dropped.
pub(super) struct Pinned {
    previous: libc::cpu_set_t,
}

impl Pinned {
    /// Pins the calling thread to those of `cpus` it may run on now; `None` (and nothing
    /// changed) when that leaves no CPU or the kernel refuses.
    pub(super) fn to(cpus: &[u32]) -> Option<Pinned> {
        // SAFETY: a zeroed cpu_set_t is an empty set; sched_getaffinity writes at most
        // size_of::<cpu_set_t>() bytes into it.
        let mut previous: libc::cpu_set_t = unsafe { zeroed() };
        if unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut previous) } != 0 {
            return None;
        }
        // SAFETY: as above.
        let mut wanted: libc::cpu_set_t = unsafe { zeroed() };
        let mut any = false;
        for &cpu in cpus {
            let cpu = cpu as usize;
            // SAFETY: CPU_ISSET and CPU_SET check `cpu` against the set's size.
            if cpu < libc::CPU_SETSIZE as usize && unsafe { libc::CPU_ISSET(cpu, &previous) } {
                unsafe { libc::CPU_SET(cpu, &mut wanted) };
                any = true;
            }
        }
        // SAFETY: `wanted` is an initialised set of the size given.
        let pinned = any
            && unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &wanted) } == 0;
        pinned.then_some(Pinned { previous })
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: `previous` is the set read from the kernel for this thread. A failure
        // leaves the thread on the node's CPUs, which is still a valid place to run.
        unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &self.previous) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn current() -> Vec<usize> {
        // SAFETY: as in `Pinned::to`.
        let mut set: libc::cpu_set_t = unsafe { zeroed() };
        assert_eq!(
            unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) },
            0
        );
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect()
    }

    #[test]
    fn a_pinned_thread_runs_on_the_allowed_cpus_asked_for_and_gets_its_set_back() {
        let before = current();
        let first = before[0] as u32;
        {
            // A CPU this thread may not use (beyond any real machine) is left out.
            let _pinned = Pinned::to(&[first, 1 << 16]).expect("pinned to an allowed CPU");
            assert_eq!(current(), vec![first as usize]);
        }
        assert_eq!(current(), before);
    }

    #[test]
    fn no_allowed_cpu_changes_nothing() {
        let before = current();
        assert!(Pinned::to(&[]).is_none());
        assert!(Pinned::to(&[1 << 16]).is_none());
        assert_eq!(current(), before);
    }
}
