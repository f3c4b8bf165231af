//! A real pair probe judged part by part against a healthy probe of the same pair: the one
//! rule for `hostping pair probe --baseline FILE` (the agent's side) and for the
//! collector's recorded pair baselines (a real `hostping mesh`, the job verdict's probes).

use model::pair::{PairFigures, PartStatus};

/// How far a probe's tail (p99 half round trip) may grow over the baseline's before the
/// network part is abnormal for it: a lost packet waits for the transport's ACK timeout
/// (67 ms for the pair probe, `rdma::engine::pair`), thousands of times a half round trip,
/// while a busy host moves the tail by tens of percent.
pub const TAIL_FACTOR: f64 = 2.0;

/// Each part's status, the pair's, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct PartsJudged {
    /// Host A's part.
    pub host_a: PartStatus,
    /// Host B's part.
    pub host_b: PartStatus,
    /// The network's part.
    pub network: PartStatus,
    /// The pair: abnormal when a part is, uncertain when a part was not measured here or
    /// in the baseline, else normal.
    pub status: PartStatus,
    /// Why, in words: the abnormal parts and their figures.
    pub reason: String,
}

/// Judges a finished, verified probe `now` against `baseline`, part by part, at Abnormal_th
/// (Hostping 5: 20 %, `th`):
/// - a host part is abnormal when its loopback share grew past `th`;
/// - the network part is abnormal when it grew by more than `th` of the pair's baseline
///   latency (not of its own value: on a software RNIC it is the small difference of large
///   loopbacks, and its noise is that of the whole pair), when the tail grew past
///   [`TAIL_FACTOR`], or when the bandwidth fell below `1 - th` of the baseline's.
pub fn judge_against(now: &PairFigures, baseline: &PairFigures, th: f64) -> PartsJudged {
    let host = |now: Option<f64>, then: Option<f64>, name: &str, why: &mut Vec<String>| match (
        now, then,
    ) {
        (Some(now), Some(then)) if now > (1.0 + th) * then => {
            why.push(format!("{name} {now:.2} us vs {then:.2} us"));
            PartStatus::Abnormal
        }
        (Some(_), Some(_)) => PartStatus::Normal,
        _ => PartStatus::Uncertain,
    };
    let mut reasons = Vec::new();
    let host_a = host(
        now.host_a_us,
        baseline.host_a_us,
        &format!("host A ({})", now.a.host),
        &mut reasons,
    );
    let host_b = host(
        now.host_b_us,
        baseline.host_b_us,
        &format!("host B ({})", now.b.host),
        &mut reasons,
    );
    let mut network = Vec::new();
    let network_known = now
        .network_us
        .zip(baseline.network_us)
        .zip(baseline.latency_us);
    if let Some(((now, then), pair)) = network_known {
        if now - then > th * pair {
            network.push(format!(
                "network part {now:.2} us vs {then:.2} us (+{:.2} us, over {:.0} % of the \
                 pair's {pair:.2} us)",
                now - then,
                th * 100.0,
            ));
        }
    }
    if let Some((now, then)) = now.latency.zip(baseline.latency) {
        if now.p99_us > TAIL_FACTOR * then.p99_us {
            network.push(format!(
                "p99 half round trip {:.2} us vs {:.2} us",
                now.p99_us, then.p99_us
            ));
        }
    }
    if let Some((now, then)) = now.bandwidth_gbps.zip(baseline.bandwidth_gbps) {
        if now < (1.0 - th) * then {
            network.push(format!("bandwidth {now:.3} Gb/s vs {then:.3} Gb/s"));
        }
    }
    let network_status = match (network.is_empty(), network_known) {
        (false, _) => PartStatus::Abnormal,
        (true, Some(_)) => PartStatus::Normal,
        (true, None) => PartStatus::Uncertain,
    };
    reasons.extend(network);
    let parts = [host_a, host_b, network_status];
    let (status, reason) = if parts.contains(&PartStatus::Abnormal) {
        (PartStatus::Abnormal, reasons.join("; "))
    } else if parts.contains(&PartStatus::Uncertain) {
        (
            PartStatus::Uncertain,
            "a part was not measured here or in the baseline".to_string(),
        )
    } else {
        (
            PartStatus::Normal,
            "every part within the baseline's".to_string(),
        )
    };
    PartsJudged {
        host_a,
        host_b,
        network: network_status,
        status,
        reason,
    }
}
