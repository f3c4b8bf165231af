//! ISPASS'21's ODP micro-benchmarks (damming and flood) as `hostping odp-bench` runs them: on
//! a real device ([`real`]) or on the virtual host's RNIC transport model ([`sim`], labelled
//! simulated). Both give a [`model::odp_bench::OdpBenchReport`].

pub mod real;
pub mod sim;

use model::odp_bench::OdpBenchKind;

/// One sweep of a micro-benchmark.
#[derive(Debug, Clone)]
pub struct OdpSweep {
    /// Damming or flood.
    pub kind: OdpBenchKind,
    /// The RDMA device (real) or the model's RNIC (simulated); default the first.
    pub device: Option<String>,
    /// Damming: the intervals between the two READs, us.
    pub intervals: Vec<u32>,
    /// Flood: the largest number of QPs (the sweep runs 1..=qps).
    pub qps: u32,
    /// Longest wait for one work completion, ms (real devices).
    pub timeout_ms: u64,
}

/// Where a real sweep stands, told before each point and once at the end.
#[derive(Debug, Clone, Copy)]
pub struct SweepProgress<'a> {
    /// The device measured.
    pub device: &'a str,
    /// Points done.
    pub done: usize,
    /// Points in the sweep.
    pub total: usize,
    /// The point about to be measured: an interval in us (damming) or a QP count (flood);
    /// 0 once the sweep is over.
    pub at: u32,
}
