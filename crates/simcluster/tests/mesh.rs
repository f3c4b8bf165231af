//! The mesh on the simulated `pod-32` (issue 27 section 6): a degraded cable flags exactly
//! the pairs whose route crosses it, and those pairs name the cable; a host's fault flags
//! only that host's pairs, and only their host part; the other fabric faults show as they
//! would on a real fabric.

use std::collections::BTreeSet;

use simcluster::mesh::{self, MeshSettings};
use simcluster::report::{MeshReport, PairEnd, PairReport, PartStatus};
use simcluster::{Cable, Cluster, ClusterFaults, RnicPort};

fn pod() -> Cluster {
    Cluster::builtin("pod-32").unwrap().unwrap()
}

fn mesh(cluster: &Cluster, inject: &[&str]) -> MeshReport {
    let texts: Vec<String> = inject.iter().map(|s| s.to_string()).collect();
    let faults = ClusterFaults::parse(&texts, cluster).unwrap();
    mesh::run(cluster, &faults, &MeshSettings::default(), &|_, _| {}).unwrap()
}

fn port(cluster: &Cluster, end: &PairEnd) -> RnicPort {
    let host = cluster.host_index(&end.host).unwrap();
    let rnic = cluster.hosts[host]
        .rnics
        .iter()
        .position(|r| r.as_str() == end.rnic)
        .unwrap();
    RnicPort { host, rnic }
}

/// The cables a pair's probes cross, both ways.
fn crossed(cluster: &Cluster, pair: &PairReport) -> BTreeSet<Cable> {
    let (a, b) = (port(cluster, &pair.parts.a), port(cluster, &pair.parts.b));
    cluster
        .cables_between(a, b)
        .into_iter()
        .chain(cluster.cables_between(b, a))
        .collect()
}

fn abnormal(report: &MeshReport) -> BTreeSet<usize> {
    (0..report.pairs.len())
        .filter(|&i| report.pairs[i].parts.status != PartStatus::Normal)
        .collect()
}

#[test]
fn a_healthy_pod_is_all_normal_and_labelled_simulated() {
    let pod = pod();
    let report = mesh(&pod, &[]);
    assert!(report.simulated);
    assert_eq!(report.exit_code(), 0);
    assert!(abnormal(&report).is_empty());
    assert_eq!(report.coverage.cables, 256);
    assert!(report.coverage.not_identifiable.is_empty());
    for p in &report.pairs {
        // The split adds up, and the host parts are half the hosts' loopback latencies.
        let sum =
            p.parts.host_a_us.unwrap() + p.parts.host_b_us.unwrap() + p.parts.network_us.unwrap();
        assert!((p.parts.latency_us.unwrap() - sum).abs() < 1e-9, "{p:?}");
        assert!(
            p.parts.network_us.unwrap() > 0.0 && p.parts.network_us.unwrap() < 1.0,
            "{p:?}"
        );
        assert!(p.parts.bandwidth_gbps.unwrap() > 180.0, "{p:?}");
        assert_eq!(
            p.parts.route.len(),
            if p.same_leaf { 2 } else { 6 },
            "{p:?}"
        );
        assert_ne!(p.parts.a.host, p.parts.b.host);
    }
    // Every RNIC of every host is probed.
    let probed: BTreeSet<(String, String)> = report
        .pairs
        .iter()
        .flat_map(|p| {
            [
                (p.parts.a.host.clone(), p.parts.a.rnic.clone()),
                (p.parts.b.host.clone(), p.parts.b.rnic.clone()),
            ]
        })
        .collect();
    assert_eq!(probed.len(), 128);
    // The simulated switch ports counted the probes' bytes, and no error.
    assert!(report.ports.len() > 200, "{}", report.ports.len());
    assert!(report
        .ports
        .iter()
        .all(|p| p.counters.symbol_errors + p.counters.rcv_errors + p.counters.link_downed == 0));
    let bytes: u64 = report
        .ports
        .iter()
        .map(|p| p.counters.xmit_data_bytes)
        .sum();
    assert!(
        bytes >= report.budget.bytes,
        "{bytes} < {}",
        report.budget.bytes
    );
}

#[test]
fn a_degraded_cable_flags_exactly_the_pairs_across_it_and_they_name_it() {
    let pod = pod();
    let healthy = mesh(&pod, &[]);
    // Host cables and uplinks of several leaves, named by either end.
    for label in [
        "leaf1/1",
        "leaf2/9",
        "spine5/3",
        "node017/rnic3",
        "leaf16/16",
        "spine8/13",
    ] {
        let report = mesh(&pod, &[&format!("fabric:degrade:{label}:0.5")]);
        assert_eq!(report.pairs.len(), healthy.pairs.len());
        let cable = pod.cable_at(pod.parse_port(label).unwrap());
        let across: BTreeSet<usize> = (0..report.pairs.len())
            .filter(|&i| crossed(&pod, &report.pairs[i]).contains(&cable))
            .collect();
        assert!(!across.is_empty(), "{label}");
        assert_eq!(abnormal(&report), across, "{label}");
        for &i in &across {
            let p = &report.pairs[i];
            assert_eq!(
                p.parts.network_status,
                PartStatus::Abnormal,
                "{label}: {p:?}"
            );
            assert_eq!(
                (p.parts.host_a_status, p.parts.host_b_status),
                (PartStatus::Normal, PartStatus::Normal)
            );
            assert!(p.parts.bandwidth_gbps.unwrap() < 110.0, "{label}: {p:?}");
        }
        // The abnormal pairs are exactly this cable's pairs and no other cable's.
        let others = (0..pod.fabric.topology.num_ports() as u32)
            .map(|c| pod.cable_at(pod.fabric.topology.port_ref(c)))
            .filter(|&c| c != cable)
            .filter(|&c| {
                let pairs: BTreeSet<usize> = (0..report.pairs.len())
                    .filter(|&i| crossed(&pod, &report.pairs[i]).contains(&c))
                    .collect();
                pairs == across
            })
            .count();
        assert_eq!(others, 0, "{label} is not identifiable");
        assert_eq!(report.exit_code(), 1);
    }
}

#[test]
fn a_host_fault_flags_only_that_hosts_pairs_and_only_their_host_part() {
    let pod = pod();
    // rnic2's nearest GPU is gpu4: the RNIC's own link halves what both carry.
    let report = mesh(&pod, &["node007:degrade:rnic2--lsw4:0.5"]);
    let flagged = abnormal(&report);
    assert!(!flagged.is_empty());
    for (i, p) in report.pairs.iter().enumerate() {
        let on_it = |e: &PairEnd| e.host == "node007" && e.rnic == "rnic2";
        assert_eq!(
            flagged.contains(&i),
            on_it(&p.parts.a) || on_it(&p.parts.b),
            "{p:?}"
        );
        if flagged.contains(&i) {
            assert_eq!(p.parts.network_status, PartStatus::Normal, "{p:?}");
            let host_part = if on_it(&p.parts.a) {
                p.parts.host_a_status
            } else {
                p.parts.host_b_status
            };
            let other_part = if on_it(&p.parts.a) {
                p.parts.host_b_status
            } else {
                p.parts.host_a_status
            };
            assert_eq!(
                (host_part, other_part),
                (PartStatus::Abnormal, PartStatus::Normal),
                "{p:?}"
            );
        }
    }
    let host = report.hosts.iter().find(|h| h.host == "node007").unwrap();
    assert!(
        !host.healthy && host.causes.contains(&"link_failure".to_string()),
        "{:?}",
        host.causes
    );
    assert!(report
        .hosts
        .iter()
        .filter(|h| h.host != "node007")
        .all(|h| h.healthy));
}

#[test]
fn a_down_host_cable_fails_its_pairs_and_a_down_uplink_is_routed_around() {
    let pod = pod();
    let report = mesh(&pod, &["fabric:down:node009/rnic0"]);
    for p in &report.pairs {
        let on_it = [&p.parts.a, &p.parts.b]
            .iter()
            .any(|e| e.host == "node009" && e.rnic == "rnic0");
        let expected = if on_it {
            PartStatus::Failed
        } else {
            PartStatus::Normal
        };
        assert_eq!(p.parts.status, expected, "{p:?}");
        if on_it {
            assert!(p.reason.as_deref().unwrap().contains("leaf2/1"), "{p:?}");
        }
    }
    // The subnet manager routes around a down uplink: no pair's route uses it, none fails;
    // both its ports count the link going down and carry nothing.
    let report = mesh(&pod, &["fabric:down:leaf2/9"]);
    let downed: Vec<_> = report
        .ports
        .iter()
        .filter(|p| p.counters.link_downed > 0)
        .collect();
    assert_eq!(downed.len(), 2, "{downed:?}");
    assert!(downed
        .iter()
        .all(|p| (p.port == "leaf2/9" || p.port == "spine1/2") && p.counters.xmit_pkts == 0));
    assert!(report
        .pairs
        .iter()
        .all(|p| p.parts.status == PartStatus::Normal));
    assert!(report
        .pairs
        .iter()
        .all(|p| !p.parts.route.iter().any(|hop| hop == "leaf2/9")));
}

#[test]
fn corrupting_flapping_and_busy_fabrics_show_in_the_network_part_only() {
    let pod = pod();
    let errors = mesh(&pod, &["fabric:errors:leaf3/10:2e5"]);
    let cable = pod.cable_at(pod.parse_port("leaf3/10").unwrap());
    let flagged = abnormal(&errors);
    assert!(!flagged.is_empty());
    for &i in &flagged {
        let p = &errors.pairs[i];
        assert!(crossed(&pod, p).contains(&cable), "{p:?}");
        assert!(p.retransmitted_packets > 0, "{p:?}");
        assert_eq!(p.parts.network_status, PartStatus::Abnormal);
    }
    // Its two ports count the symbol errors (2e5 a second over the 10 s mesh) and the
    // packets lost; no other port counts any.
    let lost: u64 = errors.pairs.iter().map(|p| p.retransmitted_packets).sum();
    for port in &errors.ports {
        let c = &port.counters;
        if port.port == "leaf3/10" || port.port == "spine2/3" {
            assert_eq!(
                (c.symbol_errors, c.rcv_errors),
                (2_000_000, lost),
                "{port:?}"
            );
        } else {
            assert_eq!(c.symbol_errors + c.rcv_errors, 0, "{port:?}");
        }
    }

    // A flapping cable: the pairs across it probed in its degraded phase, and only those.
    let flap = mesh(&pod, &["fabric:flap:spine4/7:0.3"]);
    let cable = pod.cable_at(pod.parse_port("spine4/7").unwrap());
    let across: BTreeSet<usize> = (0..flap.pairs.len())
        .filter(|&i| crossed(&pod, &flap.pairs[i]).contains(&cable))
        .collect();
    let flagged = abnormal(&flap);
    assert!(flagged.is_subset(&across), "{flagged:?} {across:?}");

    // Other jobs' traffic: cross-leaf pairs lose bandwidth in the network, hosts stay normal.
    let busy = mesh(&pod, &["fabric:background:0.8"]);
    let cross: Vec<&PairReport> = busy.pairs.iter().filter(|p| !p.same_leaf).collect();
    let slowed = cross
        .iter()
        .filter(|p| p.parts.network_status == PartStatus::Abnormal)
        .count();
    assert!(slowed * 2 > cross.len(), "{slowed} of {}", cross.len());
    assert!(busy
        .pairs
        .iter()
        .all(|p| p.parts.host_a_status == PartStatus::Normal
            && p.parts.host_b_status == PartStatus::Normal));
}

#[test]
fn nodes_restrict_the_mesh_to_those_hosts() {
    let pod = pod();
    let faults = ClusterFaults::default();
    let settings = MeshSettings {
        nodes: Some(model::hostlist::expand("node[001-004,009]").unwrap()),
        ..MeshSettings::default()
    };
    let report = mesh::run(&pod, &faults, &settings, &|_, _| {}).unwrap();
    assert_eq!(report.hosts.len(), 5);
    let names = ["node001", "node002", "node003", "node004", "node009"];
    assert!(report
        .pairs
        .iter()
        .all(|p| names.contains(&p.parts.a.host.as_str())
            && names.contains(&p.parts.b.host.as_str())));
    let settings = MeshSettings {
        nodes: Some(vec!["node001".into(), "node100".into()]),
        ..MeshSettings::default()
    };
    let err = mesh::run(&pod, &faults, &settings, &|_, _| {})
        .unwrap_err()
        .to_string();
    assert!(err.contains("node100"), "{err}");
    // A mesh of one host has no pair to choose (a job of one host gives its pairs: none).
    let one = MeshSettings {
        nodes: Some(vec!["node001".into()]),
        ..MeshSettings::default()
    };
    let err = mesh::run(&pod, &faults, &one, &|_, _| {})
        .unwrap_err()
        .to_string();
    assert!(err.contains("at least two hosts"), "{err}");
}
