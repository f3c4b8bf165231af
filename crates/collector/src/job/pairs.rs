//! A pair of a real mesh (`POST /api/mesh`'s `pairs[]`, the agents' reports with the
//! collector's route) as the verdict's [`JobPair`], its cables named from its routes, or
//! without a fabric the two RNICs' own cables, each named by its host end.

use super::routes::JobRoutes;
use crate::mesh::rnic_cable;
use model::job::{JobPair, JobPairEnd};
use model::pair::PartStatus;
use serde_json::Value;

/// `pair` as a [`JobPair`]; its cables from `route` and `route_back` when the fabric is
/// known, else its two RNICs' own cables ([`rnic_cable`]).
pub fn job_pair(pair: &Value, routes: Option<&JobRoutes>) -> JobPair {
    let end = |e: &Value| JobPairEnd {
        host: text(&e["host"]),
        rnic: text(&e["rnic"]),
    };
    let labels = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|l| {
                l.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let route = labels(&pair["route"]);
    let back = labels(&pair["route_back"]);
    let own = |e: &Value| {
        let device = e["device"].as_str().unwrap_or(e["rnic"].as_str()?);
        Some(rnic_cable(e["host"].as_str()?, device))
    };
    let cables = match routes {
        Some(r) => r.cables_along(route.iter().chain(&back).map(String::as_str)),
        None => [own(&pair["a"]), own(&pair["b"])]
            .into_iter()
            .flatten()
            .collect(),
    };
    JobPair {
        a: end(&pair["a"]),
        b: end(&pair["b"]),
        latency_us: pair["latency_us"].as_f64(),
        bandwidth_gbps: pair["bandwidth_gbps"].as_f64(),
        host_a_us: pair["host_a_us"].as_f64(),
        host_b_us: pair["host_b_us"].as_f64(),
        network_us: pair["network_us"].as_f64(),
        route,
        status: status(&pair["status"]),
        host_a_status: status(&pair["host_a_status"]),
        host_b_status: status(&pair["host_b_status"]),
        network_status: status(&pair["network_status"]),
        endpoint_a: text(&pair["endpoint_a"]),
        endpoint_b: text(&pair["endpoint_b"]),
        cables,
        retransmitted_packets: pair["retransmitted_packets"].as_u64().unwrap_or(0),
        counters_a: serde_json::from_value(pair["counters_a"].clone()).ok(),
        reason: pair["error"]
            .as_str()
            .or(pair["reason"].as_str())
            .filter(|r| !r.is_empty())
            .map(str::to_owned),
    }
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

/// A status as the agents write it: a pair that could not reach its peer is `failed`; a
/// part an agent did not judge (no baseline of the pair) is `uncertain`.
fn status(v: &Value) -> PartStatus {
    match v.as_str() {
        Some("normal") => PartStatus::Normal,
        Some("abnormal") => PartStatus::Abnormal,
        Some("failed" | "unreachable") => PartStatus::Failed,
        _ => PartStatus::Uncertain,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_measured_pair_keeps_its_parts_and_an_unjudged_part_is_uncertain() {
        // The shape of agent::pair::PairReport as the mesh annotates it.
        let pair = json!({"a": {"host": "n1", "rnic": "rnic0", "device": "mlx5_0"},
            "b": {"host": "n2", "rnic": "rnic0"}, "latency_us": 3.5, "bandwidth_gbps": 92.0,
            "host_a_us": 1.0, "host_b_us": 1.25, "network_us": 1.25, "route": null,
            "route_reason": "not traced", "status": "uncertain", "reason": "no baseline",
            "network_status": "abnormal", "endpoint_a": "mem0", "error": null});
        let p = job_pair(&pair, None);
        assert_eq!((p.a.host.as_str(), p.b.rnic.as_str()), ("n1", "rnic0"));
        assert_eq!((p.latency_us, p.network_us), (Some(3.5), Some(1.25)));
        assert_eq!(p.status, PartStatus::Uncertain);
        assert_eq!(p.host_a_status, PartStatus::Uncertain);
        assert_eq!(p.network_status, PartStatus::Abnormal);
        // No fabric: the two RNICs' own cables, by device where the agent gave one.
        assert!(p.route.is_empty());
        assert_eq!(p.cables, ["n1/mlx5_0", "n2/rnic0"]);
        assert_eq!(p.reason.as_deref(), Some("no baseline"));
        assert_eq!(p.endpoint_b, "");

        let down = json!({"a": {"host": "n1", "rnic": "rnic0"}, "b": {"host": "n2", "rnic": "rnic0"},
            "status": "unreachable", "reason": "n2's agent is unreachable",
            "error": "n2's agent is unreachable"});
        let p = job_pair(&down, None);
        assert_eq!(p.status, PartStatus::Failed);
        assert_eq!(p.latency_us, None);
        assert_eq!(p.reason.as_deref(), Some("n2's agent is unreachable"));
    }
}
