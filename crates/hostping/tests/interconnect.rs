//! Issue 12's "done when" for the host interconnect, through the library as `check --sim`
//! runs it (and once through the binary): IOMMU congestion, memory-bus congestion and ODP
//! stalls are named where they are, with evidence a reader can check against the papers
//! (HotNets'22 3.1, 3.2; ISPASS'21).

mod common;

use check::pipeline::{self, CheckSettings};
use common::{hostping, stderr, stdout};
use model::{Cause, HostTopology, LinkId, PathStatus, Report};
use serde_json::Value;

fn dgx() -> HostTopology {
    model::builtin::load("dgx-a100").unwrap().unwrap()
}

/// One check of dgx-a100 with `faults`, judged against a simulated baseline, as
/// `hostping check --sim dgx-a100 --inject ...` does.
fn check(faults: &[&str], seed: u64) -> Report {
    let host = dgx();
    let faults = check::sim::parse_faults(
        &faults.iter().map(|f| f.to_string()).collect::<Vec<_>>(),
        &host,
    )
    .unwrap();
    let settings = CheckSettings::default();
    let baseline = check::record::simulated(
        &host,
        check::record::DEFAULT_RUNS,
        seed,
        &settings.latency,
        vhost::VhostConfig::default().noise,
    );
    pipeline::check_virtual(&host, faults, seed, &baseline, &settings)
        .pop()
        .unwrap()
}

fn bandwidth(r: &Report, rnic: &str, endpoint: &str) -> f64 {
    r.paths
        .iter()
        .find(|p| p.rnic.as_str() == rnic && p.endpoint.as_str() == endpoint)
        .and_then(|p| p.bandwidth_gbps)
        .unwrap()
}

#[test]
fn iommu_4k_beyond_reach_is_iommu_congestion_on_rnic1s_root_port() {
    let host = dgx();
    for seed in [1, 2, 3] {
        let r = check(&["iommu:rnic1:4096:4k"], seed);
        assert!(!r.healthy);
        assert_eq!(r.diagnoses.len(), 1, "{:#?}", r.diagnoses);
        let d = &r.diagnoses[0];
        assert_eq!(d.cause, Cause::IommuCongestion);
        assert_eq!(d.links, [LinkId::from("usw1--cpu0")]);
        assert_eq!(
            host.root_port_above(&"rnic1".into()),
            Some(d.links[0].clone())
        );
        assert_eq!(d.rnic.as_ref().map(|r| r.as_str()), Some("rnic1"));
        // The bound of HotNets'22 3.1 with the model's C, pkt, T_base, T_miss and M = 2
        // (a 4 KiB packet spans two 4 KiB pages, nearly all of which miss).
        let bound = host.iommu.bound_gbps(2.0);
        assert!((bound - 87.4).abs() < 0.1, "{bound}");
        for needle in [
            "4 KiB pages",
            "a working set of 4096 MiB against an IOTLB reach of 128 x 4 KiB = 512 KiB",
            "(100 % miss rate), M = 2.00 misses per DMA write",
            "C = 4 posted writes of 4096 B in flight, T_base = 500 ns and T_miss = 500 ns",
            "C * pkt / (T_base + M * T_miss) is 87 Gb/s (HotNets'22 3.1)",
            "rnic1->mem0 and rnic1->mem1 measured",
        ] {
            assert!(
                d.evidence.contains(needle),
                "`{needle}` not in: {}",
                d.evidence
            );
        }
        // The measured rate is the bound: the model and the evidence agree.
        for mem in ["mem0", "mem1"] {
            let bw = bandwidth(&r, "rnic1", mem);
            assert!(
                (bw - bound).abs() / bound < 0.05,
                "rnic1->{mem} {bw} vs {bound}"
            );
        }
        // GPU memory is reached peer-to-peer and is not translated.
        let near_gpu = r
            .paths
            .iter()
            .find(|p| p.rnic.as_str() == "rnic1" && p.endpoint.as_str() == "gpu2")
            .unwrap();
        assert_eq!(near_gpu.status, PathStatus::Normal);
    }
}

#[test]
fn iommu_2m_within_reach_is_healthy() {
    for seed in [1, 2, 3] {
        let r = check(&["iommu:rnic1:128:2m"], seed);
        assert!(r.healthy, "seed {seed}: {:#?}", r.diagnoses);
        assert!(r.diagnoses.is_empty());
    }
}

#[test]
fn a_failed_root_port_under_translation_within_reach_stays_a_link_failure() {
    // The IOMMU translates rnic1's DMA but misses nothing (64 huge pages fit the IOTLB), so
    // its bound (262 Gb/s) explains no drop: the failed root port is the finding.
    let r = check(&["iommu:rnic1:128:2m", "degrade:usw1--cpu0:0.4"], 6);
    assert_eq!(r.diagnoses.len(), 1, "{:#?}", r.diagnoses);
    assert_eq!(r.diagnoses[0].cause, Cause::LinkFailure);
    assert_eq!(r.diagnoses[0].links, [LinkId::from("usw1--cpu0")]);
}

#[test]
fn membw_is_memory_bus_congestion_on_mem1s_channel() {
    for seed in [1, 2, 3] {
        let r = check(&["membw:mem1:0.9"], seed);
        assert_eq!(r.diagnoses.len(), 1, "{:#?}", r.diagnoses);
        let d = &r.diagnoses[0];
        assert_eq!(d.cause, Cause::MemoryBusCongestion);
        assert_eq!(d.links, [LinkId::from("mem1--cpu1")]);
        // 90 % of 1638.4 Gb/s is the cores'; the loopback needs 2 x 200 Gb/s of bus.
        for needle in [
            "mem1 moving 1475 Gb/s of its 1638 Gb/s (90 %)",
            "1475 Gb/s from the cores and 0 Gb/s of RNIC DMA",
            "the cores leave 164 Gb/s, less than the 400 Gb/s",
            "HotNets'22 3.2",
        ] {
            assert!(
                d.evidence.contains(needle),
                "`{needle}` not in: {}",
                d.evidence
            );
        }
        // Every RNIC's loopback to mem1 gets half of what the cores leave.
        for rnic in ["rnic0", "rnic1", "rnic2", "rnic3"] {
            let bw = bandwidth(&r, rnic, "mem1");
            assert!((bw - 0.1 * 1638.4 / 2.0).abs() < 4.0, "{rnic}->mem1 {bw}");
        }
    }
}

#[test]
fn a_failed_memory_channel_stays_a_link_failure() {
    let r = check(&["degrade:mem1--cpu1:0.05"], 4);
    assert_eq!(r.diagnoses.len(), 1, "{:#?}", r.diagnoses);
    assert_eq!(r.diagnoses[0].cause, Cause::LinkFailure);
    assert_eq!(r.diagnoses[0].links, [LinkId::from("mem1--cpu1")]);
}

#[test]
fn odp_damming_and_flood_are_odp_stalls_on_rnic2_and_leave_the_probes_alone() {
    let healthy = check(&[], 5);
    for (fault, pitfall, counters) in [
        (
            "odp:rnic2:damming",
            "packet damming",
            "local_ack_timeout_err 2, packet_seq_err 0, out_of_sequence 0, duplicate_request 0",
        ),
        (
            "odp:rnic2:flood:16",
            "packet flood",
            // 8192 READs a second, each retransmitted once per other QP (15).
            "local_ack_timeout_err 15, packet_seq_err 122880, out_of_sequence 122880, \
             duplicate_request 122880",
        ),
    ] {
        let r = check(&[fault], 5);
        assert_eq!(r.diagnoses.len(), 1, "{fault}: {:#?}", r.diagnoses);
        let d = &r.diagnoses[0];
        assert_eq!(d.cause, Cause::OdpStall, "{fault}");
        assert_eq!(d.rnic.as_ref().map(|r| r.as_str()), Some("rnic2"));
        assert!(d.links.is_empty());
        for needle in [
            pitfall,
            counters,
            "ISPASS'21",
            "owned by odp-app (simulated) (pid 4242)",
        ] {
            assert!(
                d.evidence.contains(needle),
                "`{needle}` not in: {}",
                d.evidence
            );
        }
        // Probes never use ODP memory: the same seed measures the same paths.
        assert_eq!(r.paths, healthy.paths, "{fault}");
    }
    let damming = check(&["odp:rnic2:damming"], 5);
    assert!(damming.diagnoses[0].evidence.contains("~500 ms"));
}

#[test]
fn the_cli_names_iommu_congestion_on_the_root_port() {
    let o = hostping(&[
        "check",
        "--sim",
        "dgx-a100",
        "--inject",
        "iommu:rnic1:4096:4k",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "bottleneck found: {}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["healthy"], false);
    let d = &v["diagnoses"][0];
    assert_eq!(d["cause"], "iommu_congestion");
    assert_eq!(d["links"], serde_json::json!(["usw1--cpu0"]));
    assert_eq!(d["rnic"], "rnic1");
    assert!(d["evidence"].as_str().unwrap().contains("HotNets'22 3.1"));

    let o = hostping(&[
        "check",
        "--sim",
        "dgx-a100",
        "--inject",
        "iommu:rnic1:128:2m",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "healthy: {}", stderr(&o));

    let o = hostping(&[
        "check",
        "--sim",
        "dgx-a100",
        "--inject",
        "odp:rnic2:flood:0",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(
            "bad fault `odp:rnic2:flood:0`: odp flood QPs must be a whole number from 1, got `0`"
        ),
        "{}",
        stderr(&o)
    );
}
