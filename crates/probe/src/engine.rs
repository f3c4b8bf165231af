//! The probe engine and monitor traits.

use model::baseline::MeasuredWith;
use model::{HostSnapshot, Op, Path, Provenance, StreamResult};

/// The latency test of Hostping 4.1.1: `iterations` timed round trips of a small and of a
/// large message, after `warmup` untimed ones.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencySpec {
    /// RDMA WRITE (the paper's loopback) or READ.
    pub op: Op,
    /// Small message, bytes (1 B: Hostping 4.1.1).
    pub small_bytes: u64,
    /// Large message, bytes (128 KiB for 200 Gb/s RNICs).
    pub large_bytes: u64,
    /// Untimed iterations first.
    pub warmup: u32,
    /// Timed iterations per size.
    pub iterations: u32,
}

impl Default for LatencySpec {
    /// The defaults a baseline without `measured_with` was recorded with.
    fn default() -> Self {
        let m = MeasuredWith::default();
        LatencySpec {
            op: m.op,
            small_bytes: m.small_bytes,
            large_bytes: m.large_bytes,
            warmup: m.warmup,
            iterations: m.iterations,
        }
    }
}

impl LatencySpec {
    /// What a baseline recorded with this test says it was measured with.
    pub fn measured_with(&self) -> MeasuredWith {
        MeasuredWith {
            op: self.op,
            small_bytes: self.small_bytes,
            large_bytes: self.large_bytes,
            warmup: self.warmup,
            iterations: self.iterations,
        }
    }
}

/// A streaming bandwidth test: `qps` QPs each keeping `depth` messages outstanding for
/// `duration_us`.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamSpec {
    /// RDMA WRITE or READ.
    pub op: Op,
    /// Message size, bytes.
    pub message_bytes: u64,
    /// Number of QPs.
    pub qps: u32,
    /// Outstanding work requests per QP.
    pub depth: u32,
    /// How long to stream, us.
    pub duration_us: f64,
}

impl Default for StreamSpec {
    fn default() -> Self {
        StreamSpec {
            op: Op::Write,
            message_bytes: 64 * 1024,
            qps: 1,
            depth: 16,
            duration_us: 1_000.0,
        }
    }
}

/// Raw round-trip times of a latency test, ns, timed iterations only.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LatencySamples {
    /// Small-message round trips.
    pub small_ns: Vec<f64>,
    /// Large-message round trips.
    pub large_ns: Vec<f64>,
    /// Bytes of the write region compared with the read region after the test; `None`
    /// where no data moves (the virtual host).
    pub verified_bytes: Option<u64>,
}

/// Why a probe of one path failed. The run records it and goes on with the next path.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProbeError {
    /// A wait ran out (no verbs wait blocks forever).
    #[error("timed out after {after_ms} ms waiting for {what}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// The limit.
        after_ms: u64,
    },
    /// A work completion came back with an error status.
    #[error("work completion error: {status}")]
    WorkCompletion {
        /// The status, as `ibv_wc_status_str` names it.
        status: String,
    },
    /// Memory on the endpoint could not be allocated or registered.
    #[error("cannot register memory on {endpoint}: {reason}")]
    Registration {
        /// The endpoint.
        endpoint: String,
        /// Why.
        reason: String,
    },
    /// A verbs call failed (creating a QP, moving it to RTS, posting a request).
    #[error("{detail}")]
    Verbs {
        /// The call, its arguments and the errno.
        detail: String,
    },
    /// The engine cannot probe this path at all.
    #[error("unavailable: {reason}")]
    Unavailable {
        /// Why.
        reason: String,
    },
    /// The data that arrived in the write region is not what the read region held.
    #[error("loopback data mismatch: {detail}")]
    DataMismatch {
        /// Where and what.
        detail: String,
    },
    /// The samples do not yield a bandwidth (the large message was not slower).
    #[error("cannot derive bandwidth: {reason}")]
    Degenerate {
        /// Why.
        reason: String,
    },
}

/// Something that runs loopback probes: the virtual host, or libibverbs on a real host.
pub trait ProbeEngine {
    /// Whether results are measured or simulated.
    fn provenance(&self) -> Provenance;

    /// The engine's clock, ns: simulated time on a virtual host, a monotonic clock on a
    /// real one. Probing advances it.
    fn now_ns(&self) -> u64;

    /// Runs the latency test of one path.
    fn latency(&mut self, path: &Path, spec: &LatencySpec) -> Result<LatencySamples, ProbeError>;

    /// Runs a streaming bandwidth test on one path.
    fn stream(&mut self, path: &Path, spec: &StreamSpec) -> Result<StreamResult, ProbeError>;

    /// Lets `ns` of idle time pass between runs of a series. A real engine sleeps; the
    /// virtual host overrides this to advance its simulated clock.
    fn idle(&mut self, ns: u64) {
        std::thread::sleep(std::time::Duration::from_nanos(ns));
    }
}

/// The hardware monitor and bus monitor of Hostping 4.1.2 and 4.2: RNIC throughput and
/// symptoms, GPU activity, link utilisation.
pub trait Monitor {
    /// What the monitors see now. Values a source cannot read are `None`.
    fn snapshot(&mut self) -> HostSnapshot;
}
