//! ISPASS'21's ODP micro-benchmarks (`shared/papers/001_50e040594ebebbef.txt`): damming,
//! two 100 B READs at a swept interval ([`OdpBench::damming`]), and flood, 8192 100 B READs
//! over 1..N QPs ([`OdpBench::flood`]), on one device: every QP is connected to itself, so
//! the device is both the paper's client and its server. This module holds the gate that
//! says, naming the device, what a device lacks, and the bench that runs the points.
//!
//! Every point is measured on objects of its own (memory, MRs, CQ, QPs) that are freed
//! before the next one; every wait for a completion has a deadline, and a READ that misses
//! it is an error naming the point and the device.

pub mod counters;
mod damming;
mod flood;
pub mod memory;
mod reads;

use crate::engine::{open_port, OpenPortError, RnicPort};
use crate::sysfs::{RnicBinding, SysRoot};
use crate::verbs::{OdpCaps, QpTransport, Verbs, VerbsError};
use counters::MrWatch;
use std::sync::Arc;
use std::time::Duration;

pub use counters::MrsSeen;

/// Bytes per READ: "The message size is 100 bytes" (both micro-benchmarks).
pub const READ_BYTES: u32 = 100;
/// READs of one flood point: "8192 READs with a message size of 100 bytes".
pub const FLOOD_READS: u32 = 8192;
/// The local ACK timeout exponent of every QP: "Set the smallest value to the timeout".
/// The smallest is 1 (4.096 us x 2^1 = 8.192 us; 0 means wait forever). Firmware may floor
/// it (ConnectX: ~500 ms, the paper's finding); [`OdpBench::in_force`] reads back what the
/// driver reports.
pub const ACK_TIMEOUT_MIN: u8 = 1;

/// Why a point could not be measured; each names the point and the device.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The device's port could not be opened.
    #[error(transparent)]
    Open(#[from] OpenPortError),
    /// A verbs call failed (in the message, not a source, so it is printed once).
    #[error("{point} on {device}: {error}")]
    Verbs {
        /// The point (`damming interval 500 us`).
        point: String,
        /// The device.
        device: String,
        /// The call and errno.
        error: VerbsError,
    },
    /// The point's memory could not be mapped.
    #[error("{point} on {device}: mmap of {bytes} B: {error}")]
    Map {
        /// The point.
        point: String,
        /// The device.
        device: String,
        /// Bytes asked for.
        bytes: usize,
        /// errno.
        error: std::io::Error,
    },
    /// A READ did not complete within the timeout.
    #[error("{point} on {device}: READ {read} of {reads} did not complete within {after_ms} ms")]
    Timeout {
        /// The point.
        point: String,
        /// The device.
        device: String,
        /// The first READ still outstanding, from 1.
        read: u32,
        /// READs of the point.
        reads: u32,
        /// The wait, ms.
        after_ms: u64,
    },
    /// A completion carried a work request id that is none of the point's READs (each READ
    /// is posted with its index as id; the provider hands it back).
    #[error(
        "{point} on {device}: a completion for work request {wr_id}, which is none of the \
         {reads} READs posted"
    )]
    UnknownCompletion {
        /// The point.
        point: String,
        /// The device.
        device: String,
        /// The work request id the completion carried.
        wr_id: u64,
        /// READs of the point.
        reads: u32,
    },
    /// A READ completed in error.
    #[error("{point} on {device}: READ {read} of {reads} completed in error: {status}")]
    Completion {
        /// The point.
        point: String,
        /// The device.
        device: String,
        /// The READ, from 1.
        read: u32,
        /// READs of the point.
        reads: u32,
        /// The work completion's status in words.
        status: String,
    },
}

/// An opened device port to run points on.
pub struct OdpBench {
    rnic: RnicPort,
    root: SysRoot,
    timeout: Duration,
    watch: Option<MrWatch>,
    /// Why RDMA netlink cannot show the benchmark's MRs, when it cannot.
    pub netlink_gap: Option<String>,
}

/// One measured point and what RDMA netlink showed of its MRs.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// The point.
    pub point: model::odp_bench::OdpBenchPoint,
    /// The point's MRs in the netlink dump (`None`: netlink unreadable, see
    /// [`OdpBench::netlink_gap`]).
    pub mrs: Option<MrsSeen>,
    /// How many ODP MRs the point registered (those looked for in the dump).
    pub mrs_registered: usize,
    /// Damming: each READ's time from post to completion, us, in post order (flood: empty,
    /// its point carries the slowest).
    pub read_us: Vec<f64>,
    /// READs that completed successfully but whose bytes are not at their local address
    /// afterwards (the data check after the point; 0 on a correct device).
    pub misplaced_reads: u32,
    /// Pages of the local ODP mapping resident right after its registration, and its pages
    /// (`None`: mincore failed). Nothing touched them before, so a driver that honours
    /// `IBV_ACCESS_ON_DEMAND` leaves 0; a pinning one faults them all in.
    pub resident_after_registration: Option<(usize, usize)>,
}

impl OdpBench {
    /// Opens `binding`'s port; counters are read below `root`; each wait for a completion
    /// lasts at most `timeout`.
    pub fn open(
        verbs: &Arc<Verbs>,
        binding: &RnicBinding,
        root: SysRoot,
        timeout: Duration,
    ) -> Result<OdpBench, BenchError> {
        let rnic = open_port(verbs, binding)?;
        let (watch, netlink_gap) = match MrWatch::open(&binding.device) {
            Ok(Some(w)) => (Some(w), None),
            Ok(None) => (
                None,
                Some(format!("RDMA netlink does not list {}", binding.device)),
            ),
            Err(e) => (None, Some(e.to_string())),
        };
        Ok(OdpBench {
            rnic,
            root,
            timeout,
            watch,
            netlink_gap,
        })
    }

    /// The device name.
    pub fn device(&self) -> &str {
        self.rnic.ctx.name()
    }

    /// The transport attributes a benchmark QP runs with, as `ibv_query_qp` reads them back
    /// from a QP connected like the points' QPs.
    pub fn in_force(&self) -> Result<QpTransport, VerbsError> {
        let pd = self.rnic.ctx.alloc_pd()?;
        let cq = self.rnic.ctx.create_cq(1)?;
        let qp = pd.create_rc_qp(&cq, 1)?;
        qp.connect(&self.rnic.destination(qp.qp_num(), ACK_TIMEOUT_MIN))?;
        qp.transport()
    }
}

/// What RDMA netlink lists of the MRs `ours` (lkey, length); `None` (and the gap noted)
/// when it cannot be read. (The bench's fields, not the bench: the point's verbs objects
/// borrow its port meanwhile.)
fn mrs_seen(
    watch: &mut Option<MrWatch>,
    gap: &mut Option<String>,
    ours: &[(u32, u64)],
) -> Option<MrsSeen> {
    match watch.as_mut()?.seen(ours) {
        Ok(seen) => Some(seen),
        Err(e) => {
            *gap = Some(e.to_string());
            *watch = None;
            None
        }
    }
}

/// A device that cannot run the micro-benchmarks: it lacks ODP, or ODP READ on RC.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{device} has no {missing} ({caps}): ISPASS'21's ODP micro-benchmarks need ODP memory as the target of RDMA READ over RC")]
pub struct NoOdp {
    /// The device.
    pub device: String,
    /// What it lacks, in words.
    pub missing: &'static str,
    /// Its capabilities as `ibv_devinfo -v` prints them.
    pub caps: String,
}

/// Checks that `device`, with capabilities `caps`, can run the micro-benchmarks.
pub fn require_rc_read(device: &str, caps: &OdpCaps) -> Result<(), NoOdp> {
    let missing = if !caps.supported() {
        "on-demand paging (general_odp_caps lacks ODP_SUPPORT)"
    } else if !caps.rc_read() {
        "ODP RDMA READ over RC (rc_odp_caps lacks SUPPORT_READ)"
    } else {
        return Ok(());
    };
    Err(NoOdp {
        device: device.to_string(),
        missing,
        caps: caps.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verbs::ffi::{ibv_odp_caps, IBV_ODP_SUPPORT};
    use crate::verbs::CapsSource;

    fn caps(general: u64, rc: u32, source: CapsSource) -> OdpCaps {
        let raw = ibv_odp_caps {
            general_caps: general,
            rc_odp_caps: rc,
            uc_odp_caps: 0,
            ud_odp_caps: 0,
        };
        OdpCaps::from_raw(raw, 0, u64::MAX, source)
    }

    #[test]
    fn rxe_of_linux_6_1_has_no_odp() {
        // rxe before 6.14 answers query_device_ex with zeroed odp_caps.
        let e = require_rc_read("rxe0", &caps(0, 0, CapsSource::Extended)).unwrap_err();
        assert_eq!(e.device, "rxe0");
        let text = e.to_string();
        assert!(text.starts_with("rxe0 has no on-demand paging"), "{text}");
        assert!(text.contains("general_odp_caps: NO SUPPORT"), "{text}");
    }

    #[test]
    fn odp_without_rc_read_names_the_missing_operation() {
        let e = require_rc_read(
            "mlx5_0",
            &caps(IBV_ODP_SUPPORT, 0b101, CapsSource::Extended),
        )
        .unwrap_err();
        assert!(e.to_string().contains("ODP RDMA READ over RC"), "{e}");
        assert!(e.to_string().contains("SUPPORT_SEND SUPPORT_WRITE"), "{e}");
    }

    #[test]
    fn a_connectx_with_rc_read_passes() {
        let rc = 0b1111;
        assert!(
            require_rc_read("mlx5_0", &caps(IBV_ODP_SUPPORT, rc, CapsSource::Extended)).is_ok()
        );
    }
}
