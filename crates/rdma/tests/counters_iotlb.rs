//! `rdma::counters::iotlb` and the per-RNIC translation answer of `counters::iommu`
//! against fixture trees of both vendors (`testdata/counters/iommu/{intel,amd}/`, written
//! by `make_trees.py` there from the kernel code that creates the files), the PMU-less VM
//! tree, and the real `perf_event_open` path on this machine's `software` PMU.

use rdma::counters::iommu::{read_memory_config, rnic_translation, GroupType, RnicTranslation};
use rdma::counters::iotlb::{
    iommu_pmus, plan, requester_id, IommuPmu, IotlbCounterSpec, IotlbEvent, IotlbGap, IotlbMonitor,
    Vendor,
};
use rdma::counters::uncore::{EventConfig, Pmu};
use rdma::sysfs::pci::PciAddr;
use rdma::sysfs::SysRoot;
use std::path::Path;
use std::time::Duration;

fn tree(name: &str) -> SysRoot {
    SysRoot::new(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/counters")
            .join(name),
    )
}

fn addr(s: &str) -> PciAddr {
    s.parse().unwrap()
}

fn translation(root: &SysRoot, rnic: &str) -> RnicTranslation {
    let config = read_memory_config(root).unwrap();
    rnic_translation(root, &config, addr(rnic)).unwrap()
}

fn pmus(root: &SysRoot) -> Vec<IommuPmu> {
    iommu_pmus(root).unwrap()
}

#[test]
fn intel_units_have_dmar_pmus_one_with_a_requester_filter() {
    let found = pmus(&tree("iommu/intel"));
    let summary: Vec<(&str, &str, Vendor, u32, bool)> = found
        .iter()
        .map(|p| {
            (
                p.unit.as_str(),
                p.pmu.name.as_str(),
                p.vendor,
                p.pmu.type_id,
                p.filters_by_device(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("dmar0", "dmar0", Vendor::Intel, 18, false),
            ("dmar3", "dmar3", Vendor::Intel, 21, true)
        ]
    );
    let dmar3 = &found[1];
    assert_eq!(dmar3.pmu.cpus, [0]);
    assert_eq!(dmar3.pmu.events.len(), 24);
    assert_eq!(
        dmar3.pmu.events["iotlb_lookup"].terms,
        "event_group=0x3,event=0x001"
    );
    assert!(dmar3.missing_events().is_empty());
}

#[test]
fn an_intel_rnic_is_translated_on_4k_pages_by_a_unit_with_superpages() {
    let t = translation(&tree("iommu/intel"), "0000:38:00.0");
    assert_eq!(
        t,
        RnicTranslation {
            rnic: addr("0000:38:00.0"),
            unit: Some("dmar3".into()),
            group: Some(45),
            group_type: Some(GroupType::DmaFq),
            translated: Some(true),
            buffer_pages_kib: vec![4],
            iommu_pages_kib: Some(vec![4, 2048, 1 << 20]),
        }
    );
    assert!(t.translated_on_4k_only());
}

#[test]
fn intel_counters_are_filtered_to_the_rnic_where_the_unit_can() {
    let root = tree("iommu/intel");
    let found = pmus(&root);
    let specs = plan(&found, addr("0000:38:00.0"), Some("dmar3")).unwrap();
    let rid = u64::from(requester_id(addr("0000:38:00.0")));
    assert_eq!(rid, 0x3800);
    let want = |event, select: u64| IotlbCounterSpec {
        rnic: addr("0000:38:00.0"),
        unit: "dmar3".into(),
        pmu: "dmar3".into(),
        event,
        per_device: true,
        pmu_type: 21,
        cpu: 0,
        config: EventConfig {
            // event_group config:28-31 = 3, event config:0-27.
            config: 3 << 28 | select,
            // filter_requester_id_en config1:0, filter_requester_id config1:16-31.
            config1: 1 | rid << 16,
            config2: 0,
        },
    };
    assert_eq!(
        specs,
        [want(IotlbEvent::Lookup, 1), want(IotlbEvent::Hit, 2)]
    );
    assert_eq!(
        specs[0].to_string(),
        "dmar3/iotlb_lookup/ on CPU 0 for 0000:38:00.0"
    );
    // dmar0 cannot filter: the whole unit's counts, and the spec says so.
    let unfiltered = plan(&found, addr("0000:b8:00.0"), Some("dmar0")).unwrap();
    assert!(unfiltered
        .iter()
        .all(|s| !s.per_device && s.config.config1 == 0));
    assert_eq!(unfiltered[1].config.config, 3 << 28 | 2);
}

#[test]
fn a_unit_without_a_pmu_or_events_is_a_gap_naming_it() {
    let root = tree("iommu/intel");
    let found = pmus(&root);
    let t = translation(&root, "0000:d8:00.0");
    assert_eq!(t.unit.as_deref(), Some("dmar7"));
    let gap = plan(&found, t.rnic, t.unit.as_deref()).unwrap_err();
    assert!(
        matches!(&gap, IotlbGap::NoPmu { unit, present, .. } if unit == "dmar7" && present == "dmar0, dmar3")
    );
    assert!(
        gap.to_string()
            .starts_with("0000:d8:00.0: IOMMU unit dmar7 has no perf PMU"),
        "{gap}"
    );
    let mut lacking = found.clone();
    lacking[1].pmu.events.remove("iotlb_hit");
    assert_eq!(
        plan(&lacking, addr("0000:38:00.0"), Some("dmar3"))
            .unwrap_err()
            .to_string(),
        "dmar3: no events/iotlb_hit (the unit does not count IOTLB lookups)"
    );
    lacking[1].pmu.cpus.clear();
    lacking[1].pmu.events = found[1].pmu.events.clone();
    assert_eq!(
        plan(&lacking, addr("0000:38:00.0"), Some("dmar3")).unwrap_err(),
        IotlbGap::NoCpumask {
            pmu: "dmar3".into()
        }
    );
}

#[test]
fn amd_counters_use_the_ivhd_units_pmu_with_the_device_id_filter() {
    let root = tree("iommu/amd");
    let found = pmus(&root);
    let names: Vec<(&str, &str)> = found
        .iter()
        .map(|p| (p.unit.as_str(), p.pmu.name.as_str()))
        .collect();
    assert_eq!(names, [("ivhd0", "amd_iommu_0"), ("ivhd1", "amd_iommu_1")]);
    assert!(found
        .iter()
        .all(|p| p.vendor == Vendor::Amd && p.filters_by_device()));
    assert_eq!(found[1].pmu.events.len(), 24);

    let t = translation(&root, "0000:41:00.0");
    assert_eq!(t.unit.as_deref(), Some("ivhd1"));
    assert_eq!((t.group, t.group_type), (Some(12), Some(GroupType::Dma)));
    assert_eq!(t.translated, Some(true));
    // 2 MiB pool with pages and THP always: buffers can be on huge pages.
    assert_eq!(t.buffer_pages_kib, [4, 2048]);
    assert!(!t.translated_on_4k_only());
    assert_eq!(t.iommu_pages_kib, None);

    let specs = plan(&found, t.rnic, t.unit.as_deref()).unwrap();
    let events: Vec<(IotlbEvent, u64, u64)> = specs
        .iter()
        .map(|s| (s.event, s.config.config, s.config.config1))
        .collect();
    // csource config:0-7, devid config:8-23 = 0x4100, devid_mask config1:0-15.
    assert_eq!(
        events,
        [
            (IotlbEvent::PteHit, 0x06 | 0x4100 << 8, 0xffff),
            (IotlbEvent::PteMiss, 0x07 | 0x4100 << 8, 0xffff),
            (IotlbEvent::PdeHit, 0x08 | 0x4100 << 8, 0xffff),
            (IotlbEvent::PdeMiss, 0x09 | 0x4100 << 8, 0xffff),
        ]
    );
    assert!(specs
        .iter()
        .all(|s| s.pmu == "amd_iommu_1" && s.pmu_type == 12 && s.per_device));

    // An identity-mapped RNIC: not translated, and its unit has no PMU here.
    let id = translation(&root, "0000:c1:00.0");
    assert_eq!(
        (id.group_type, id.translated),
        (Some(GroupType::Identity), Some(false))
    );
    assert!(matches!(
        plan(&found, id.rnic, id.unit.as_deref()),
        Err(IotlbGap::NoPmu { .. })
    ));
}

#[test]
fn a_vm_has_no_iommu_pmu_and_an_rnic_without_unit_is_untranslated() {
    let root = tree("pmu/vm");
    assert!(pmus(&root).is_empty());
    let gap = plan(&[], addr("0000:00:03.0"), None).unwrap_err();
    assert_eq!(
        gap.to_string(),
        "0000:00:03.0: no IOMMU unit (no iommu link): its DMA is not translated"
    );
}

/// The real syscall path of the monitor: two specs on this machine's `software` PMU
/// (cpu-clock as "lookups", task-clock as "hits"), read twice; the reading has positive
/// lookups. Only the mechanics: no IOMMU PMU exists here.
#[test]
fn the_monitor_opens_and_reads_through_perf_event_open() {
    let root = SysRoot::system();
    let software = Pmu::load(&root, "software").unwrap();
    let spec = |event, config: u64| IotlbCounterSpec {
        rnic: addr("0000:00:00.0"),
        unit: "software".into(),
        pmu: "software".into(),
        event,
        per_device: false,
        pmu_type: software.type_id,
        cpu: 0,
        config: EventConfig {
            config,
            config1: 0,
            config2: 0,
        },
    };
    let monitor = match IotlbMonitor::open(
        &root,
        vec![spec(IotlbEvent::Lookup, 0), spec(IotlbEvent::Hit, 1)],
    ) {
        Ok(m) => m,
        Err(e) => {
            assert!(e.reason.contains("software/iotlb_lookup/ on CPU 0"), "{e}");
            eprintln!("perf_event_open is refused here: {e}");
            return;
        }
    };
    let a = monitor.read().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let b = monitor.read().unwrap();
    let r = b.since(&a).expect("both counters ran");
    assert!(r.lookups > 1e6, "{r:?}");
    assert!(!r.per_device);
}
