//! ODP stalls (ISPASS'21, "Pitfalls of On-Demand Paging"): an RNIC whose applications use
//! on-demand-paging memory regions and whose transport error counters show one of the two
//! pitfalls. Probes never use ODP memory, so no path shows it: the rule reads the RNIC's
//! `hw_counters` (mlx5 names) and the ODP regions in use, both from the snapshot.
//!
//! - **Flood**: "issue READs using multiple QPs with client-side ODP [...] huge number of
//!   packets by retransmission of requests": at least [`FLOOD_MIN_PER_S`] retransmitted
//!   requests a second (`duplicate_request`, `out_of_sequence` at the responder,
//!   `packet_seq_err` NAKs at the requester).
//! - **Damming**: "packet loss and the subsequent super-long timeout", a timeout firmware
//!   "cannot be set to be any smaller than 500 ms": `local_ack_timeout_err` rising without
//!   a storm.
//!
//! Timeouts or retransmissions on an RNIC with no ODP region in use are not ODP's doing,
//! and this rule says nothing about them.

use crate::evidence;
use crate::facts::Facts;
use model::{Cause, Diagnosis, OdpKind, OdpRegion, TransportCounters};

/// Retransmitted requests per second from which a storm is a flood (a stray retransmission
/// is not).
pub const FLOOD_MIN_PER_S: f64 = 1000.0;

/// One `odp_stall` per RNIC whose counters and ODP regions show a pitfall.
pub(crate) fn diagnose(f: &Facts<'_>) -> Vec<Diagnosis> {
    let mut out = Vec::new();
    for t in &f.snapshot.transport {
        let regions: Vec<&OdpRegion> = f.snapshot.odp.iter().filter(|r| r.rnic == t.rnic).collect();
        if regions.is_empty() {
            continue;
        }
        let Some(pitfall) = pitfall(t) else { continue };
        out.push(Diagnosis {
            cause: Cause::OdpStall,
            links: Vec::new(),
            rnic: Some(t.rnic.clone()),
            setting: None,
            evidence: format!(
                "{pitfall}; {}'s hw_counters{} read {}; {}; probes do not use ODP memory, so \
                 their results cannot show it",
                t.rnic,
                t.interval_ns
                    .map(|ns| format!(" over the last {}", evidence::duration(ns as f64 / 1000.0)))
                    .unwrap_or_default(),
                counters(t),
                regions_words(&regions)
            ),
        });
    }
    out
}

/// Retransmitted requests in the interval: the largest of the counters that see them
/// (`duplicate_request`, `out_of_sequence` at the responder, `packet_seq_err` NAKs at the
/// requester), 0 when none was read.
pub(crate) fn retransmitted(t: &TransportCounters) -> u64 {
    [t.duplicate_request, t.out_of_sequence, t.packet_seq_err]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(0)
}

/// Whether the interval's retransmissions are a storm: at least [`FLOOD_MIN_PER_S`] a second
/// (an interval that was not measured counts as one second).
pub(crate) fn is_storm(t: &TransportCounters) -> bool {
    let seconds = t.interval_ns.map_or(1.0, |ns| ns as f64 / 1e9).max(1e-9);
    retransmitted(t) as f64 / seconds >= FLOOD_MIN_PER_S
}

/// Which pitfall the counters show, in words, if any.
fn pitfall(t: &TransportCounters) -> Option<String> {
    if is_storm(t) {
        let retransmitted = retransmitted(t);
        return Some(format!(
            "packet flood (ISPASS'21): {retransmitted} retransmitted requests, a storm that \
             grows with the QPs sharing client-side ODP pages, because page-status updates fail \
             among QPs; latency reaches seconds"
        ));
    }
    if t.local_ack_timeout_err.is_some_and(|n| n > 0) {
        return Some(
            "packet damming (ISPASS'21): an RNIC page fault on a READ loses a packet and the \
             requester waits out the transport timeout, which firmware will not set below \
             ~500 ms, so communication stalls for hundreds of ms"
                .to_string(),
        );
    }
    None
}

/// `local_ack_timeout_err 2, packet_seq_err 0, out_of_sequence 0, duplicate_request 0`.
fn counters(t: &TransportCounters) -> String {
    [
        ("local_ack_timeout_err", t.local_ack_timeout_err),
        ("packet_seq_err", t.packet_seq_err),
        ("out_of_sequence", t.out_of_sequence),
        ("duplicate_request", t.duplicate_request),
    ]
    .iter()
    .map(|(name, v)| match v {
        Some(v) => format!("{name} {v}"),
        None => format!("{name} not read"),
    })
    .collect::<Vec<_>>()
    .join(", ")
}

/// `1 ODP memory region in use (explicit 64 MiB, 6 page faults) owned by odp-app (pid 4242)`.
fn regions_words(regions: &[&OdpRegion]) -> String {
    let explicit = regions
        .iter()
        .filter(|r| r.kind == OdpKind::Explicit)
        .count();
    let implicit = regions.len() - explicit;
    let faults: Option<u64> = regions.iter().map(|r| r.page_faults).sum();
    let mut owners: Vec<String> = regions
        .iter()
        .map(|r| match (&r.process, r.pid) {
            (Some(name), Some(pid)) => format!("{name} (pid {pid})"),
            (Some(name), None) => name.clone(),
            (None, Some(pid)) => format!("pid {pid}"),
            (None, None) => "an unknown process".to_string(),
        })
        .collect();
    owners.sort();
    owners.dedup();
    format!(
        "{} ODP memory region{} in use ({explicit} explicit, {implicit} implicit{}) owned by {}",
        regions.len(),
        if regions.len() == 1 { "" } else { "s" },
        faults
            .map(|n| format!(", {n} RNIC page faults"))
            .unwrap_or_default(),
        evidence::list(&owners)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(timeouts: u64, retransmitted: u64) -> TransportCounters {
        TransportCounters {
            rnic: "rnic2".into(),
            interval_ns: Some(1_000_000_000),
            local_ack_timeout_err: Some(timeouts),
            packet_seq_err: Some(retransmitted),
            out_of_sequence: Some(retransmitted),
            duplicate_request: Some(retransmitted),
        }
    }

    #[test]
    fn a_storm_is_a_flood_and_lone_timeouts_are_damming() {
        assert!(pitfall(&counts(15, 122_880))
            .unwrap()
            .starts_with("packet flood"));
        assert!(pitfall(&counts(2, 0))
            .unwrap()
            .starts_with("packet damming"));
        assert!(pitfall(&counts(2, 999))
            .unwrap()
            .starts_with("packet damming"));
        assert_eq!(pitfall(&counts(0, 0)), None);
        assert_eq!(
            pitfall(&counts(0, 10)),
            None,
            "a few retransmissions are no storm"
        );
    }

    #[test]
    fn words_name_the_counters_and_the_owners() {
        let mut t = counts(2, 0);
        t.duplicate_request = None;
        assert_eq!(
            counters(&t),
            "local_ack_timeout_err 2, packet_seq_err 0, out_of_sequence 0, duplicate_request not read"
        );
        let region = |kind, pid| OdpRegion {
            rnic: "rnic2".into(),
            kind,
            bytes: None,
            page_faults: Some(3),
            page_invalidations: None,
            pid,
            process: Some("trainer".into()),
        };
        let a = region(OdpKind::Explicit, Some(7));
        let b = region(OdpKind::Implicit, Some(7));
        assert_eq!(
            regions_words(&[&a, &b]),
            "2 ODP memory regions in use (1 explicit, 1 implicit, 6 RNIC page faults) owned by \
             trainer (pid 7)"
        );
    }
}
