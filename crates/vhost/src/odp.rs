//! The ODP pitfalls of ISPASS'21 as a virtual RNIC's counters and memory regions show them.
//! Probes never use ODP memory, so an `odp` fault changes no probe result: it changes what
//! the RNIC's `hw_counters` count (the mlx5 names) and which ODP memory regions are in use.
//!
//! - **Damming**: the application issues two 100 B READs at an interval of 0.5 to 4.5 ms on
//!   one QP (ISPASS'21's microbenchmark); an RNIC page fault on a READ loses a packet, and
//!   the requester waits for the transport timeout, which firmware will not set below
//!   ~500 ms ([`TRANSPORT_TIMEOUT_FLOOR_MS`]). Each second so holds about
//!   `1000 / 500 = 2` timeouts (`local_ack_timeout_err`) and as many page faults, and no
//!   retransmission storm.
//! - **Flood**: client-side ODP over `q` QPs; "failure of updating page statuses among
//!   QPs" makes every request be retransmitted once per other QP. Each second of the
//!   application's [`FLOOD_READS_PER_S`] READs (ISPASS'21's 8192 100 B READs) so brings
//!   `8192 * (q - 1)` retransmitted requests, seen as `duplicate_request` and
//!   `out_of_sequence` at the responder and `packet_seq_err` NAKs at the requester, and
//!   `q - 1` requests that wait out the timeout: packets grow with QPs, as the paper's
//!   Fig. (b). One QP has no peer to disagree with, and no storm.
//!
//! These counts are the virtual host's model of the paper's mechanism, labelled simulated
//! wherever they are shown; they are not the paper's measurements.

use crate::fault::{Fault, OdpPitfall};
use model::{ComponentId, OdpKind, OdpRegion, TransportCounters};

/// The smallest transport (ACK) timeout ConnectX firmware honours (ISPASS'21: "the timeout
/// cannot be set to be any smaller than 500 ms").
pub const TRANSPORT_TIMEOUT_FLOOR_MS: f64 = 500.0;

/// READs per second of a flooding application (ISPASS'21's microbenchmark issues 8192).
pub const FLOOD_READS_PER_S: u64 = 8192;

/// Process id and name of the simulated application that owns the ODP regions.
const APP_PID: u32 = 4242;
const APP_NAME: &str = "odp-app (simulated)";

/// Length of an explicit ODP region of the simulated application, bytes.
const REGION_BYTES: u64 = 64 * 1024 * 1024;

/// The pitfall injected on `rnic`, if any (the last one wins).
pub(crate) fn pitfall(faults: &[Fault], rnic: &ComponentId) -> Option<OdpPitfall> {
    faults.iter().rev().find_map(|f| match f {
        Fault::Odp { rnic: r, pitfall } if r == rnic => Some(*pitfall),
        _ => None,
    })
}

/// The transport error counters of `rnic` over `interval_ns`.
pub(crate) fn transport(
    rnic: &ComponentId,
    pitfall: Option<OdpPitfall>,
    interval_ns: u64,
) -> TransportCounters {
    let seconds = interval_ns as f64 / 1e9;
    let per_interval = |per_s: f64| (per_s * seconds).round() as u64;
    let (timeouts, retransmitted) = match pitfall {
        None => (0.0, 0.0),
        Some(OdpPitfall::Damming) => (1000.0 / TRANSPORT_TIMEOUT_FLOOR_MS, 0.0),
        Some(OdpPitfall::Flood { qps }) => {
            let others = f64::from(qps.saturating_sub(1));
            (others, FLOOD_READS_PER_S as f64 * others)
        }
    };
    TransportCounters {
        rnic: rnic.clone(),
        interval_ns: Some(interval_ns),
        local_ack_timeout_err: Some(per_interval(timeouts)),
        packet_seq_err: Some(per_interval(retransmitted)),
        out_of_sequence: Some(per_interval(retransmitted)),
        duplicate_request: Some(per_interval(retransmitted)),
    }
}

/// The ODP memory regions the application holds on `rnic`: one explicit region for
/// damming (ODP on both sides, as the paper's microbenchmark), one implicit region per QP
/// for a flood (client-side ODP), with page faults since registration. One region per QP
/// is what RDMA netlink lists on a real RNIC, and every snapshot builds them: the QP count
/// is capped when the fault is parsed ([`model::limits::ODP_FLOOD_QPS`]), so that is at
/// most 4096 regions (about half a MB), where 4294967295 QPs asked for 481 GB.
pub(crate) fn regions(rnic: &ComponentId, pitfall: OdpPitfall, elapsed_ns: u64) -> Vec<OdpRegion> {
    let seconds = (elapsed_ns as f64 / 1e9).max(1.0);
    let region = |kind, bytes, faults_per_s: f64| OdpRegion {
        rnic: rnic.clone(),
        kind,
        bytes,
        page_faults: Some((faults_per_s * seconds).round() as u64),
        page_invalidations: Some(0),
        pid: Some(APP_PID),
        process: Some(APP_NAME.to_string()),
    };
    match pitfall {
        OdpPitfall::Damming => vec![region(
            OdpKind::Explicit,
            Some(REGION_BYTES),
            1000.0 / TRANSPORT_TIMEOUT_FLOOR_MS,
        )],
        OdpPitfall::Flood { qps } => (0..qps)
            .map(|_| region(OdpKind::Implicit, None, f64::from(qps)))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rnic() -> ComponentId {
        "rnic2".into()
    }

    #[test]
    fn damming_waits_out_two_timeouts_a_second_and_storms_nothing() {
        let t = transport(&rnic(), Some(OdpPitfall::Damming), 1_000_000_000);
        assert_eq!(t.local_ack_timeout_err, Some(2));
        assert_eq!(t.duplicate_request, Some(0));
        assert_eq!(t.packet_seq_err, Some(0));
    }

    #[test]
    fn a_flood_grows_with_qps_and_one_qp_has_none() {
        let count = |qps| {
            transport(&rnic(), Some(OdpPitfall::Flood { qps }), 1_000_000_000)
                .duplicate_request
                .unwrap()
        };
        assert_eq!(count(1), 0);
        assert_eq!(count(8), 7 * 8192);
        assert_eq!(count(16), 15 * 8192);
        let quiet = transport(&rnic(), None, 1_000_000_000);
        assert_eq!(quiet.local_ack_timeout_err, Some(0));
        assert_eq!(quiet.out_of_sequence, Some(0));
    }

    #[test]
    fn regions_name_their_owner() {
        let r = regions(&rnic(), OdpPitfall::Damming, 3_000_000_000);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].kind, OdpKind::Explicit);
        assert_eq!(r[0].page_faults, Some(6));
        assert_eq!(r[0].pid, Some(APP_PID));
        let r = regions(&rnic(), OdpPitfall::Flood { qps: 4 }, 0);
        assert_eq!(r.len(), 4);
        assert!(r
            .iter()
            .all(|m| m.kind == OdpKind::Implicit && m.bytes.is_none()));
    }
}
