//! The host-interconnect faults in the flow model (noise off): the IOTLB bound of
//! HotNets'22 3.1, the cores' share of the memory bus of 3.2, and ODP (ISPASS'21), which
//! probes never see.

mod common;

use common::*;
use model::OdpKind;
use probe::{Monitor, Plan};
use vhost::VhostConfig;

const EXACT: VhostConfig = VhostConfig {
    seed: 0,
    noise: 0.0,
    flap_half_period_ns: 15_000_000,
};

fn exact(faults: &[&str]) -> (vhost::VirtualHost, model::ProbeRun) {
    let h = host("dgx-a100");
    let mut vh = vhost(&h, faults, EXACT);
    let mut spec = spec(3);
    spec.latency.warmup = 1;
    let run = run(&mut vh, Plan::FullMesh, &spec);
    (vh, run)
}

/// rnic0's loopback bandwidth to mem0 with `iommu:rnic0:<mib>:<page>`.
fn iotlb_point(mib: f64, page: &str) -> f64 {
    let (_, run) = exact(&[&format!("iommu:rnic0:{mib}:{page}")]);
    bw(&run, "rnic0", "mem0")
}

#[test]
fn the_iotlb_curve_has_its_knee_at_the_iotlb_reach() {
    let healthy = bw(&exact(&[]).1, "rnic0", "mem0");
    // 4 KiB pages: 128 entries reach 0.5 MiB; 2 MiB pages reach 256 MiB (512x).
    for (page, reach_mib) in [("4k", 0.5), ("2m", 256.0)] {
        assert!(within(iotlb_point(reach_mib / 4.0, page), healthy, 1e-9));
        assert!(
            within(iotlb_point(reach_mib, page), healthy, 1e-9),
            "{page}"
        );
        let beyond = iotlb_point(reach_mib * 16.0, page);
        assert!(beyond < 0.8 * healthy, "{page}: {beyond} vs {healthy}");
        // Never faster with a larger working set.
        let mut last = f64::INFINITY;
        for k in 0..12 {
            let v = iotlb_point(reach_mib * 2f64.powi(k - 2), page);
            assert!(
                v <= last * (1.0 + 1e-9),
                "{page} at 2^{k} x reach: {v} after {last}"
            );
            last = v;
        }
    }
    // Far beyond reach, 4 KiB pages miss twice per 4 KiB packet (M = 2), 2 MiB once.
    let m = model::IommuModel::default();
    assert!(within(iotlb_point(1e6, "4k"), m.bound_gbps(2.0), 1e-3));
    let m_2m = m.translations_per_packet(2 << 20) * m.miss_ratio(1_000_000 << 20, 2 << 20);
    assert!(within(iotlb_point(1e6, "2m"), m.bound_gbps(m_2m), 1e-3));
}

#[test]
fn translation_touches_only_the_rnics_memory_paths() {
    let (_, base) = exact(&[]);
    let (mut vh, hit) = exact(&["iommu:rnic1:4096:4k"]);
    assert_eq!(
        moved(&base, &hit, 1e-9),
        names(&["rnic1->mem0", "rnic1->mem1"])
    );
    // Each message pays a read and a write translation, nearly always a miss: +1 us.
    let shift = small_us(&hit, "rnic1", "mem0") - small_us(&base, "rnic1", "mem0");
    assert!((shift - 1.0).abs() < 0.01, "{shift}");
    let snap = vh.snapshot();
    let a = snap
        .iommu
        .iter()
        .find(|a| a.rnic.as_str() == "rnic1")
        .unwrap();
    assert_eq!(a.translated, Some(true));
    assert_eq!(a.page_bytes, Some(4096));
    assert_eq!(a.working_set_bytes, Some(4096 << 20));
    assert!((a.misses_per_packet().unwrap() - 2.0).abs() < 1e-3);
    let other = snap
        .iommu
        .iter()
        .find(|a| a.rnic.as_str() == "rnic0")
        .unwrap();
    assert_eq!(other.translated, Some(false));
    let config = vh.config();
    let group = config
        .iommu_groups
        .iter()
        .find(|g| g.device.as_str() == "rnic1")
        .unwrap();
    assert_eq!(
        (group.translated, group.page_bytes),
        (Some(true), Some(4096))
    );
    assert_eq!(group.kind.as_deref(), Some("DMA"));
    assert_eq!(config.iommu.as_ref().unwrap().translated, Some(true));
}

#[test]
fn the_cores_take_the_memory_bus_and_the_uncore_view_says_so() {
    let (_, base) = exact(&[]);
    let (mut vh, hit) = exact(&["membw:mem1:0.9"]);
    let to_mem1: Vec<String> = ["rnic0", "rnic1", "rnic2", "rnic3"]
        .iter()
        .map(|r| format!("{r}->mem1"))
        .collect();
    assert_eq!(
        moved(&base, &hit, 1e-9),
        names(&to_mem1.iter().map(String::as_str).collect::<Vec<_>>())
    );
    // The loopback reads and writes back over the bus the cores leave: 0.1 x 1638.4 / 2.
    assert!(within(bw(&hit, "rnic0", "mem1"), 81.92, 1e-9));
    // Queueing behind the cores raises latency to that node.
    assert!(small_us(&hit, "rnic0", "mem1") > small_us(&base, "rnic0", "mem1") + 0.5);
    let snap = vh.snapshot();
    let mem1 = snap
        .memory
        .iter()
        .find(|m| m.node.as_str() == "mem1")
        .unwrap();
    assert!(within(mem1.total_gbps.unwrap(), 0.9 * 1638.4, 1e-9));
    assert_eq!(mem1.rnic_dma_gbps, Some(0.0));
    assert!(within(mem1.cores_gbps().unwrap(), 0.9 * 1638.4, 1e-9));
    assert!(within(
        snap.utilisation(&"mem1--cpu1".into()).unwrap(),
        0.9,
        1e-9
    ));
    let mem0 = snap
        .memory
        .iter()
        .find(|m| m.node.as_str() == "mem0")
        .unwrap();
    assert_eq!(mem0.total_gbps, Some(0.0));
}

#[test]
fn service_dma_is_counted_as_rnic_traffic_on_the_memory_bus() {
    let h = host("dgx-a100");
    let mut vh = vhost(&h, &["service:rnic0:150:mem0", "membw:mem0:0.5"], EXACT);
    let snap = vh.snapshot();
    let mem0 = snap
        .memory
        .iter()
        .find(|m| m.node.as_str() == "mem0")
        .unwrap();
    assert!(within(mem0.rnic_dma_gbps.unwrap(), 150.0, 1e-9));
    assert!(within(mem0.cores_gbps().unwrap(), 0.5 * 1638.4, 1e-9));
}

#[test]
fn odp_changes_no_probe_only_counters_and_regions() {
    let (_, base) = exact(&[]);
    for fault in ["odp:rnic2:damming", "odp:rnic2:flood:16"] {
        let (mut vh, hit) = exact(&[fault]);
        assert!(moved(&base, &hit, 0.0).is_empty(), "{fault}");
        for p in &base.paths {
            let (r, e) = (p.rnic.as_str(), p.endpoint.as_str());
            assert_eq!(
                small_us(&base, r, e),
                small_us(&hit, r, e),
                "{fault} {r}->{e}"
            );
        }
        let snap = vh.snapshot();
        let t = snap
            .transport
            .iter()
            .find(|t| t.rnic.as_str() == "rnic2")
            .unwrap();
        let quiet = snap
            .transport
            .iter()
            .find(|t| t.rnic.as_str() == "rnic0")
            .unwrap();
        assert_eq!(quiet.local_ack_timeout_err, Some(0));
        assert!(t.local_ack_timeout_err.unwrap() > 0, "{fault}");
        assert!(snap.odp.iter().all(|r| r.rnic.as_str() == "rnic2"));
        assert_eq!(vh.config().odp, snap.odp, "{fault}");
        let floor = vh.config().transport_timeouts[2].floor_ms;
        assert_eq!(floor, Some(vhost::TRANSPORT_TIMEOUT_FLOOR_MS));
        if fault.contains("flood") {
            assert_eq!(t.duplicate_request, Some(15 * vhost::FLOOD_READS_PER_S));
            assert_eq!(snap.odp.len(), 16);
            assert!(snap.odp.iter().all(|r| r.kind == OdpKind::Implicit));
        } else {
            assert_eq!(t.duplicate_request, Some(0));
            assert_eq!(snap.odp.len(), 1);
        }
    }
}
