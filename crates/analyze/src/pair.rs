//! A probed RNIC pair judged part by part (DESIGN 4.6): host A's own path, host B's, and the
//! network between them. An abnormal pair whose host parts are normal is a network problem;
//! one whose network part is normal is a host problem.

use std::collections::BTreeMap;

use model::pair::{HostPart, NetworkPart, PartStatus};

/// What a pair's parts add up to, and what is wrong with them.
#[derive(Clone, Debug, PartialEq)]
pub struct PairJudgement {
    /// One-way latency: host A + network + host B, us; `None` when a host part is unknown.
    pub latency_us: Option<f64>,
    /// The least of the three parts' bandwidths (the slowest part bounds a stream), Gb/s.
    pub bandwidth_gbps: f64,
    /// The network's part.
    pub network: PartStatus,
    /// The pair: abnormal when a part is, uncertain when a part was not judged.
    pub status: PartStatus,
    /// Why the network part is abnormal, in words (empty when it is not).
    pub network_reasons: Vec<String>,
}

/// The Abnormal_th a pair between `a` and `b` is judged with: the larger of its two hosts'
/// (`by_host`), so that a pair is no stricter than the agent of either end; Hostping 5's
/// 20 % where neither has one.
pub fn pair_th(by_host: &BTreeMap<String, f64>, a: &str, b: &str) -> f64 {
    [by_host.get(a), by_host.get(b)]
        .into_iter()
        .flatten()
        .copied()
        .reduce(f64::max)
        .unwrap_or(model::Thresholds::default().abnormal_th)
}

/// Judges a pair. The network part is abnormal past Abnormal_th (Hostping 5: 20 %): its
/// latency that far above the healthy fabric's, or the pair's bandwidth that far below what
/// both host paths and the healthy network allow (a host path that is slow already bounds
/// the pair, and is not the network's doing). The host parts keep their own checks' status.
pub fn judge(a: &HostPart, b: &HostPart, network: &NetworkPart, abnormal_th: f64) -> PairJudgement {
    let latency_us = a
        .one_way_us
        .zip(b.one_way_us)
        .map(|(x, y)| x + y + network.one_way_us);
    let host_rates = [a.gbps, b.gbps].into_iter().flatten();
    let allowed = host_rates.clone().fold(network.baseline_gbps, f64::min);
    let bandwidth = host_rates.fold(network.gbps, f64::min);
    let mut reasons = Vec::new();
    if network.one_way_us > (1.0 + abnormal_th) * network.baseline_us {
        reasons.push(format!(
            "network {:.2} us vs {:.2} us on the healthy fabric",
            network.one_way_us, network.baseline_us
        ));
    }
    if bandwidth < (1.0 - abnormal_th) * allowed {
        reasons.push(format!(
            "{bandwidth:.1} Gb/s where both hosts' paths and the healthy network allow {allowed:.1}"
        ));
    }
    let network_status = if reasons.is_empty() {
        PartStatus::Normal
    } else {
        PartStatus::Abnormal
    };
    if network.retransmitted_packets > 0 {
        reasons.push(format!(
            "{} packets sent again",
            network.retransmitted_packets
        ));
    }
    let parts = [a.status, b.status, network_status];
    let status = if parts.contains(&PartStatus::Abnormal) {
        PartStatus::Abnormal
    } else if parts.contains(&PartStatus::Uncertain) {
        PartStatus::Uncertain
    } else {
        PartStatus::Normal
    };
    PairJudgement {
        latency_us,
        bandwidth_gbps: bandwidth,
        network: network_status,
        status,
        network_reasons: reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TH: f64 = 0.2;

    fn host(gbps: f64, status: PartStatus) -> HostPart {
        HostPart {
            one_way_us: Some(1.25),
            gbps: Some(gbps),
            status,
        }
    }

    fn net(us: f64, gbps: f64) -> NetworkPart {
        NetworkPart {
            one_way_us: us,
            gbps,
            baseline_us: 0.35,
            baseline_gbps: 196.0,
            retransmitted_packets: 0,
        }
    }

    #[test]
    fn the_parts_add_up_and_a_healthy_pair_is_normal() {
        let ok = host(200.0, PartStatus::Normal);
        let j = judge(&ok, &ok, &net(0.36, 195.0), TH);
        assert_eq!(j.status, PartStatus::Normal);
        assert!((j.latency_us.unwrap() - 2.86).abs() < 1e-9);
        assert_eq!(j.bandwidth_gbps, 195.0);
    }

    #[test]
    fn a_slow_network_is_the_networks_and_a_slow_host_is_the_hosts() {
        let ok = host(200.0, PartStatus::Normal);
        let j = judge(&ok, &ok, &net(0.36, 99.0), TH);
        assert_eq!(
            (j.network, j.status),
            (PartStatus::Abnormal, PartStatus::Abnormal)
        );
        assert!(
            j.network_reasons[0].contains("99.0 Gb/s"),
            "{:?}",
            j.network_reasons
        );
        let j = judge(&ok, &ok, &net(0.5, 195.0), TH);
        assert_eq!(j.network, PartStatus::Abnormal, "latency 43 % above");

        // A host path at 126 Gb/s bounds the pair; the network, at its healthy rate, is not
        // to blame for it.
        let slow = host(126.0, PartStatus::Abnormal);
        let j = judge(&slow, &ok, &net(0.36, 195.0), TH);
        assert_eq!(
            (j.network, j.status),
            (PartStatus::Normal, PartStatus::Abnormal)
        );
        assert_eq!(j.bandwidth_gbps, 126.0);
        // Both at once are both.
        let j = judge(&slow, &ok, &net(0.36, 60.0), TH);
        assert_eq!(j.network, PartStatus::Abnormal);
    }

    #[test]
    fn an_unjudged_host_part_makes_the_pair_uncertain_not_normal() {
        let ok = host(200.0, PartStatus::Normal);
        let unknown = HostPart {
            one_way_us: None,
            gbps: None,
            status: PartStatus::Uncertain,
        };
        let j = judge(&unknown, &ok, &net(0.36, 195.0), TH);
        assert_eq!(j.status, PartStatus::Uncertain);
        assert_eq!(j.latency_us, None);
    }
}
