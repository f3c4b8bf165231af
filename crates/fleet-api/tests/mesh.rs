//! The pair object and the real mesh's answer (DESIGN 4.6) against the answers hostping
//! wrote before they were typed (`tests/data/mesh/`, see its README): read into
//! `fleet_api::pair` and `fleet_api::mesh`, written back byte for byte.

mod common;

use common::same_bytes;
use fleet_api::mesh::{MeshAnswer, MeshPair, MeshRequest};
use fleet_api::pair::{NetworkFrom, PairReport, PairStatus, RouteSource, TimestampSource};

#[test]
fn an_agents_pair_report_reads_back_and_writes_the_same_bytes() {
    let probed: PairReport = same_bytes("mesh/agent-pair-probe.json");
    assert_eq!(probed.status, PairStatus::Uncertain);
    assert_eq!(probed.network_from, NetworkFrom::LatencyLessHostParts);
    assert_eq!(
        probed.timestamps,
        Some(TimestampSource::CpuNoCompletionTimestamps)
    );
    assert_eq!(probed.route, Some(Vec::new()));
    assert_eq!(probed.counters_a.unwrap().packet_seq_err, Some(0));
    let stopped: PairReport = same_bytes("mesh/pair-probe-unreachable.json");
    assert_eq!(stopped.status, PairStatus::Unreachable);
    assert!(stopped.latency.is_none() && stopped.counters_a.is_none());
}

#[test]
fn the_collectors_mesh_answers_read_back_and_write_the_same_bytes() {
    let per_rail: MeshAnswer = same_bytes("mesh/collector-mesh-per-rail.json");
    let [ran, down, failed] = &per_rail.pairs[..] else {
        panic!("{:?}", per_rail.pairs);
    };
    let report = ran.report().expect("an agent's report");
    assert_eq!(report.route, None, "no fabric: no route");
    assert_eq!(report.route_source, RouteSource::Untraced);
    assert_eq!(report.mesh.probes, Some(10));
    assert!(down.report().is_none() && failed.report().is_none());
    assert_eq!(down.status(), PairStatus::Unreachable);
    assert_eq!(
        per_rail.nodes[2].error.as_deref(),
        Some(match down {
            MeshPair::NotRun(p) => p.error.as_str(),
            MeshPair::Ran(_) => unreachable!(),
        })
    );

    let recorded: MeshAnswer = same_bytes("mesh/collector-mesh-fabric-recorded.json");
    let report = recorded.pairs[0].report().unwrap();
    assert_eq!(report.route_source, RouteSource::Cabling);
    assert_eq!(report.mesh.same_leaf, Some(true));
    assert_eq!(report.mesh.baseline.as_deref(), Some("recorded"));
    assert_eq!(recorded.coverage.as_ref().map(|c| c.cables), Some(2));
    assert_eq!(recorded.baselines_recorded, Some(1));
}

#[test]
fn a_recorded_budget_gives_the_request_it_was_probed_with() {
    let recorded: MeshAnswer = same_bytes("mesh/collector-mesh-fabric-recorded.json");
    let stored = serde_json::to_string(&recorded.budget.asked()).unwrap();
    let request = MeshRequest::with_budget(vec!["a".into(), "b".into()], &stored).unwrap();
    let again = request.budget().unwrap();
    assert_eq!(
        (
            again.bw_iterations,
            again.depth,
            again.latency_probes_same_leaf_pair
        ),
        (300, Some(16), 100)
    );
    assert!(MeshRequest::with_budget(vec![], "{\"rate\": 1}").is_err());
    // Defaults written once, and a budget outside the contract refused in words.
    let default = MeshRequest::of_nodes(vec![]).budget().unwrap();
    assert_eq!(
        (default.duration_s, default.rate, default.rate_same_leaf),
        (10.0, 1.0, 10.0)
    );
    let slow = MeshRequest {
        duration_s: Some(0.0),
        ..MeshRequest::default()
    };
    assert!(slow
        .budget()
        .unwrap_err()
        .to_string()
        .starts_with("duration_s 0"));
}
