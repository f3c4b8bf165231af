//! Which way a real pair lost packets, from host A's RNIC's transport counters over the
//! probe. A single pair crosses both RNICs' cables in the same observation, so the
//! tomography alone cannot tell them apart; the RDMA transport can, because each side
//! counts its own half of a loss (RC go-back-N, IBTA 9.7; mlx5's names, rxe's mapped as
//! `rdma::odp_bench::counters::transport` maps them):
//! - A's requests lost on the way to B: B receives a later PSN than it expects and NAKs
//!   it, which A counts as `packet_seq_err`. That says A -> B.
//! - B's requests lost on the way to A: A receives a later PSN than it expects
//!   (`out_of_sequence`). That says B -> A.
//!
//! `duplicate_request` (B sent again what A had received) is said in words but not read as
//! a direction: B's retransmission timer fires for a lost ACK, but as well for a host too
//! busy to answer in time (under QEMU's TCG, rxe counted thousands of them on loopbacks of
//! starved vCPUs, with no packet lost).
//!
//! The cable at the sending end of the lossy direction is the likelier one; the other
//! stays a candidate (the loss may lie anywhere on the way, and a cable that drops one way
//! only is the commoner fault, not the only one).

use model::job::JobPair;

/// The sending end's cable of the direction in which `pair` lost packets, with the counts
/// that say so in words; `None` when the counters were not read, count no loss, or count
/// it both ways.
pub fn lossy_from(pair: &JobPair) -> Option<(&str, String)> {
    let c = pair.counters_a.as_ref()?;
    let outbound = c.packet_seq_err.unwrap_or(0);
    let inbound = c.out_of_sequence.unwrap_or(0);
    let counted = format!(
        "{}/{}'s RNIC counted {} sequence-error NAK(s), {} duplicate request(s) and {} \
         out-of-sequence request(s) over the probe",
        pair.parts.a.host,
        pair.parts.a.rnic,
        c.packet_seq_err.unwrap_or(0),
        c.duplicate_request.unwrap_or(0),
        inbound
    );
    let (cable, from, to) = match (outbound > 0, inbound > 0) {
        (true, false) => (pair.cables.first()?, &pair.parts.a.host, &pair.parts.b.host),
        (false, true) => (pair.cables.last()?, &pair.parts.b.host, &pair.parts.a.host),
        _ => return None,
    };
    Some((
        cable.as_str(),
        format!("{counted}: packets from {from} to {to} were lost, so {cable} at {from}'s end is the likelier"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::job::PairParts;
    use model::odp_bench::TransportDelta;
    use model::pair::{PairEnd, PartStatus};

    fn pair(counters: Option<TransportDelta>) -> JobPair {
        let end = |host: &str| PairEnd {
            host: host.into(),
            rnic: "rnic0".into(),
            device: None,
        };
        JobPair {
            parts: PairParts {
                a: end("node01"),
                b: end("node02"),
                latency_us: Some(120.0),
                bandwidth_gbps: Some(0.05),
                host_a_us: Some(40.0),
                host_b_us: Some(40.0),
                network_us: Some(40.0),
                route: vec![],
                status: PartStatus::Abnormal,
                host_a_status: PartStatus::Normal,
                host_b_status: PartStatus::Normal,
                network_status: PartStatus::Abnormal,
                endpoint_a: "mem1".into(),
                endpoint_b: "mem0".into(),
            },
            cables: vec!["node01/rxe_a".into(), "node02/rxe_b".into()],
            retransmitted_packets: 0,
            reason: None,
            counters_a: counters,
            round: None,
        }
    }

    fn counted(seq: u64, dup: u64, ooo: u64) -> Option<TransportDelta> {
        Some(TransportDelta {
            local_ack_timeout_err: None,
            packet_seq_err: Some(seq),
            out_of_sequence: Some(ooo),
            duplicate_request: Some(dup),
        })
    }

    #[test]
    fn naks_to_a_name_as_cable_and_out_of_sequence_at_a_names_bs() {
        let naks = pair(counted(7, 1, 0));
        let (cable, words) = lossy_from(&naks).unwrap();
        assert_eq!(cable, "node01/rxe_a");
        // Duplicates alone (a peer's timer, maybe a busy host's) say no direction.
        assert_eq!(lossy_from(&pair(counted(0, 40, 0))), None);
        assert!(
            words.contains("7 sequence-error NAK(s)") && words.contains("from node01 to node02"),
            "{words}"
        );
        let out_of_sequence = pair(counted(0, 0, 5));
        let (cable, words) = lossy_from(&out_of_sequence).unwrap();
        assert_eq!(cable, "node02/rxe_b");
        assert!(words.contains("from node02 to node01"), "{words}");
    }

    #[test]
    fn no_counters_no_loss_or_loss_both_ways_say_nothing() {
        assert_eq!(lossy_from(&pair(None)), None);
        assert_eq!(lossy_from(&pair(counted(0, 0, 0))), None);
        assert_eq!(lossy_from(&pair(counted(3, 0, 4))), None);
        assert_eq!(lossy_from(&pair(Some(TransportDelta::default()))), None);
    }
}
