//! Follow-up streaming tests the analyzer asks for when one run cannot name a root cause.
//!
//! Beyond the paper. Hostping 6 #9 and #10 tell of RNICs whose bandwidth to every endpoint
//! was below the baseline, first diagnosed as an RNIC PCIe link failure; only "continuous
//! bandwidth tests" and a configuration inspection found "slow start" and a too small
//! "Tx window". The analyzer asks for those discriminating tests itself, through
//! [`FollowUp`], so that it never does I/O: the caller (a probe engine, the virtual host,
//! a test stub) runs them.
//!
//! - a long stream on one QP ([`FollowUpTest::LONG_ONE_QP`]): slow start ramps the rate up
//!   once, so over 100 ms it is amortised and the stream reaches the baseline;
//! - a stream on many QPs ([`FollowUpTest::MANY_QPS`]): a per-QP Tx window bounds each QP,
//!   not their sum, so eight QPs together reach the baseline.
//!
//! A failed link is slow for both.
//!
//! Beyond those, an idle run re-probes the paths that alone judge a link with the run's own
//! latency test, spaced in time ([`FollowUp::latency`], [`crate::reprobe`]): a flapping link
//! is degraded in some of them and healthy in others, a failed one in all.

use model::{Path, PathMeasurement, StreamResult};

/// A discriminating streaming test the analyzer asks for (beyond the paper, cases #9/#10).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FollowUpTest {
    /// QPs to stream on at once.
    pub qps: u32,
    /// How long to stream, us.
    pub duration_us: f64,
}

impl FollowUpTest {
    /// One QP for 100 ms: slow start ramps once and is amortised.
    pub const LONG_ONE_QP: FollowUpTest = FollowUpTest {
        qps: 1,
        duration_us: 100_000.0,
    };
    /// Eight QPs for 10 ms: a per-QP Tx window no longer binds.
    pub const MANY_QPS: FollowUpTest = FollowUpTest {
        qps: 8,
        duration_us: 10_000.0,
    };
}

/// Runs follow-up streaming tests on a path of the analysed host.
pub trait FollowUp {
    /// Streams on `path` as `test` says; `None` when the test cannot run (no engine, the
    /// host is busy, the RNIC refused).
    fn stream(&mut self, path: &Path, test: &FollowUpTest) -> Option<StreamResult>;

    /// Lets `idle_ns` of idle time pass, then probes `path` again with the run's latency
    /// test; `None` when it cannot (no engine, the probe failed). Without an engine behind
    /// it, nothing is re-probed.
    fn latency(&mut self, path: &Path, idle_ns: u64) -> Option<PathMeasurement> {
        let _ = (path, idle_ns);
        None
    }
}

/// Runs no follow-up test: every request answers `None`, and the analyzer says so in its
/// evidence.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoFollowUp;

impl FollowUp for NoFollowUp {
    fn stream(&mut self, _path: &Path, _test: &FollowUpTest) -> Option<StreamResult> {
        None
    }
}
