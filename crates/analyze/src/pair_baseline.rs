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
///   loopbacks, and its noise is that of the whole pair) and by more than the noise of both
///   network parts together (their `network_noise_us`, added in quadrature), when the tail
///   grew past
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
    // Both probes' noises, where known: a growth inside it is not a change (issue 38).
    let noise = now
        .network_noise_us
        .unwrap_or(0.0)
        .hypot(baseline.network_noise_us.unwrap_or(0.0));
    if let Some(((now, then), pair)) = network_known {
        if now - then > th * pair && now - then > noise {
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

#[cfg(test)]
mod tests {
    use super::*;
    use model::pair::PairEnd;

    fn figures(network_us: f64, network_noise_us: Option<f64>) -> PairFigures {
        let end = |host: &str| PairEnd {
            host: host.into(),
            rnic: "rxe0".into(),
            device: None,
        };
        PairFigures {
            a: end("a"),
            b: end("b"),
            latency_us: Some(25.0),
            host_a_us: Some(10.0),
            host_b_us: Some(10.0),
            network_us: Some(network_us),
            network_noise_us,
            bandwidth_gbps: None,
            latency: None,
        }
    }

    #[test]
    fn a_network_part_grown_inside_its_noise_is_normal_and_past_it_abnormal() {
        // +8 us, past 20 % of the pair's 25 us: abnormal without a noise...
        let judged = judge_against(&figures(13.0, None), &figures(5.0, None), 0.2);
        assert_eq!(judged.network, PartStatus::Abnormal, "{}", judged.reason);
        // ...normal inside the noise of both probes (6 and 8 us: 10 us together)...
        let judged = judge_against(&figures(13.0, Some(6.0)), &figures(5.0, Some(8.0)), 0.2);
        assert_eq!(judged.network, PartStatus::Normal, "{}", judged.reason);
        // ...and abnormal again once it grew past that noise.
        let judged = judge_against(&figures(16.0, Some(6.0)), &figures(5.0, Some(8.0)), 0.2);
        assert_eq!(judged.network, PartStatus::Abnormal, "{}", judged.reason);
    }
}
