//! The result of ISPASS'21's two ODP micro-benchmarks (`shared/papers/001_50e040594ebebbef.txt`,
//! "Microbench for packet damming" and "Microbench for packet flood"), the same shape whether
//! a real device ran them (`rdma`) or the virtual host's transport model did (`vhost`): what
//! `hostping odp-bench` prints and serialises. Every point carries the work done (READs, QPs)
//! beside the time it took.

use crate::{ComponentId, Provenance};
use serde::{Deserialize, Serialize};

/// Which micro-benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OdpBenchKind {
    /// Two 100 B READs on one QP at a swept interval, ODP memory on both sides.
    Damming,
    /// 8192 100 B READs back to back over 1..N QPs, client-side ODP.
    Flood,
}

impl OdpBenchKind {
    /// The word the CLI and the JSON use.
    pub fn as_str(self) -> &'static str {
        match self {
            OdpBenchKind::Damming => "damming",
            OdpBenchKind::Flood => "flood",
        }
    }
}

/// Transport counters of the device over one point (deltas of the mlx5 `hw_counters` names;
/// `None` where the device does not count it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransportDelta {
    /// Requests that waited out the whole transport timeout (`local_ack_timeout_err`).
    pub local_ack_timeout_err: Option<u64>,
    /// Sequence-error NAKs received by the requester (`packet_seq_err`).
    pub packet_seq_err: Option<u64>,
    /// Out-of-sequence packets received by the responder (`out_of_sequence`).
    pub out_of_sequence: Option<u64>,
    /// Duplicate requests received by the responder (`duplicate_request`).
    pub duplicate_request: Option<u64>,
}

/// One point of a sweep: one damming interval, or one flood QP count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OdpBenchPoint {
    /// Damming: the interval between posting the two READs, us; flood: `None`.
    pub interval_us: Option<u32>,
    /// QPs the READs were spread over.
    pub qps: u32,
    /// READs issued (and completed: a point with a READ that did not complete is an error,
    /// not a point).
    pub reads: u32,
    /// Bytes per READ.
    pub read_bytes: u32,
    /// From the first post to the last completion, us.
    pub elapsed_us: f64,
    /// The slowest single READ, post to completion, us.
    pub slowest_read_us: f64,
    /// Packets on the wire during the point, both directions, from the port counters
    /// (`port_xmit_packets` + `port_rcv_packets`); `None` where the device does not count.
    pub packets: Option<u64>,
    /// The transport counters over the point.
    pub transport: TransportDelta,
    /// Page faults the RNIC took on the ODP regions over the point (RDMA netlink per-MR
    /// `page_faults`, or the model's count); `None` where not readable.
    pub page_faults: Option<u64>,
}

/// A whole run of one micro-benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OdpBenchReport {
    /// Which micro-benchmark.
    pub kind: OdpBenchKind,
    /// The device (an RDMA device name, or the virtual host's RNIC id).
    pub device: String,
    /// The virtual host's RNIC, when simulated.
    pub rnic: Option<ComponentId>,
    /// Measured on a device, or computed by the virtual host's transport model.
    pub provenance: Provenance,
    /// The points in sweep order.
    pub points: Vec<OdpBenchPoint>,
    /// Things a reader must know to read the numbers (the model's parameters, what a
    /// software RNIC does differently), one sentence each.
    pub notes: Vec<String>,
}
