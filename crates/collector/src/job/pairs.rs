//! A pair of a real mesh (`POST /api/mesh`'s `pairs[]`, the agents' reports with the
//! collector's route) as the verdict's [`JobPair`], its cables named from its routes, or
//! without a fabric the two RNICs' own cables, each named by its host end.

use super::routes::JobRoutes;
use crate::mesh::rnic_cable;
use fleet_api::mesh::MeshPair;
use fleet_api::pair::End;
use model::job::{JobPair, PairParts};

/// `pair` as a [`JobPair`]; its cables from `route` and `route_back` when the fabric is
/// known, else its two RNICs' own cables ([`rnic_cable`]).
pub fn job_pair(pair: &MeshPair, routes: Option<&JobRoutes>) -> JobPair {
    // The verdict names an end by host and RNIC id; the device stays with the agent's report.
    let end = |e: &End| End {
        device: None,
        ..e.clone()
    };
    let own = |e: &End| rnic_cable(&e.host, e.device.as_deref().unwrap_or(&e.rnic));
    let (route, back, report, status, words) = match pair {
        MeshPair::NotRun(p) => (
            p.route.clone().unwrap_or_default(),
            p.mesh.route_back.clone().unwrap_or_default(),
            None,
            p.status,
            Some(p.error.as_str()),
        ),
        MeshPair::Ran(p) => (
            p.route.clone().unwrap_or_default(),
            p.mesh.route_back.clone().unwrap_or_default(),
            Some(&**p),
            p.status,
            p.error.as_deref().or(Some(p.reason.as_str())),
        ),
    };
    let cables = match routes {
        Some(r) => r.cables_along(route.iter().chain(&back).map(String::as_str)),
        None => vec![own(pair.a()), own(pair.b())],
    };
    // A part an agent did not judge (no baseline of the pair) is uncertain.
    let part = |s: Option<model::pair::PartStatus>| s.unwrap_or(model::pair::PartStatus::Uncertain);
    JobPair {
        parts: PairParts {
            a: end(pair.a()),
            b: end(pair.b()),
            latency_us: report.and_then(|r| r.latency_us),
            bandwidth_gbps: report.and_then(|r| r.bandwidth_gbps),
            host_a_us: report.and_then(|r| r.host_a_us),
            host_b_us: report.and_then(|r| r.host_b_us),
            network_us: report.and_then(|r| r.network_us),
            route,
            status: status.part(),
            host_a_status: part(report.and_then(|r| r.host_a_status)),
            host_b_status: part(report.and_then(|r| r.host_b_status)),
            network_status: part(report.and_then(|r| r.network_status)),
            endpoint_a: report.map(|r| r.endpoint_a.clone()).unwrap_or_default(),
            // An agent's report names host A's endpoint only.
            endpoint_b: String::new(),
        },
        cables,
        // Not counted by a real probe; its counters_a say which way packets were lost.
        retransmitted_packets: 0,
        counters_a: report.and_then(|r| r.counters_a),
        reason: words.filter(|r| !r.is_empty()).map(str::to_owned),
        // The window's pairs may come from several meshes: the pipeline labels its own
        // follow-ups' rounds.
        round: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_api::mesh::NotRun;
    use fleet_api::pair::{PairReport, PairStatus};
    use model::pair::PartStatus;

    fn end(host: &str, device: Option<&str>) -> End {
        End {
            host: host.into(),
            rnic: "rnic0".into(),
            device: device.map(str::to_owned),
        }
    }

    #[test]
    fn a_measured_pair_keeps_its_parts_and_an_unjudged_part_is_uncertain() {
        // An agent's report as the mesh annotates it.
        let mut report = PairReport {
            a: end("n1", Some("mlx5_0")),
            b: end("n2", None),
            latency_us: Some(3.5),
            bandwidth_gbps: Some(92.0),
            host_a_us: Some(1.0),
            host_b_us: Some(1.25),
            network_us: Some(1.25),
            route: None,
            status: PairStatus::Uncertain,
            reason: "no baseline".into(),
            network_status: Some(PartStatus::Abnormal),
            endpoint_a: "mem0".into(),
            ..PairReport::default()
        };
        report.mesh.route_reason = Some("not traced".into());
        let p = job_pair(&MeshPair::Ran(Box::new(report)), None);
        assert_eq!(
            (p.parts.a.host.as_str(), p.parts.b.rnic.as_str()),
            ("n1", "rnic0")
        );
        assert_eq!(
            (p.parts.latency_us, p.parts.network_us),
            (Some(3.5), Some(1.25))
        );
        assert_eq!(p.parts.status, PartStatus::Uncertain);
        assert_eq!(p.parts.host_a_status, PartStatus::Uncertain);
        assert_eq!(p.parts.network_status, PartStatus::Abnormal);
        // No fabric: the two RNICs' own cables, by device where the agent gave one.
        assert!(p.parts.route.is_empty());
        assert_eq!(p.cables, ["n1/mlx5_0", "n2/rnic0"]);
        assert_eq!(p.reason.as_deref(), Some("no baseline"));
        assert_eq!(p.parts.endpoint_b, "");

        let down = MeshPair::NotRun(Box::new(NotRun::new(
            end("n1", None),
            end("n2", None),
            PairStatus::Unreachable,
            "n2's agent is unreachable".into(),
        )));
        let p = job_pair(&down, None);
        assert_eq!(p.parts.status, PartStatus::Failed);
        assert_eq!(p.parts.latency_us, None);
        assert_eq!(p.reason.as_deref(), Some("n2's agent is unreachable"));
    }
}
