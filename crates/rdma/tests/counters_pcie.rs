//! The PCIe and IOMMU counter sources (`rdma::counters::{pcie, iommu}`) against whole
//! fixture trees (`testdata/hosts/<host>/`), copies of them with one file changed, and this
//! machine's own `/sys` and `/proc`.

mod common;

use common::TempTree;
use rdma::counters::iommu::{
    device_translation, read_memory_config, GroupType, HugepagePool, IntelIommu, IommuMode,
    IommuUnit, MeminfoHugepages,
};
use rdma::counters::pcie::{
    link_state, read_function, read_path, AcsControl, AcsFlags, Aer, AerCounts, AerRegisters,
    AtsControl, Capability, ExpressCap, PcieFunction, PortType, RootPortTotals,
};
use rdma::sysfs::{DiscoverError, PciAddr, PcieLink, SysRoot};
use std::fs;
use std::path::Path;

fn fixture(name: &str) -> SysRoot {
    SysRoot::new(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/hosts")
            .join(name),
    )
}

fn pci(s: &str) -> PciAddr {
    s.parse().unwrap()
}

fn function(root: &SysRoot, addr: &str) -> PcieFunction {
    read_function(root, pci(addr)).unwrap_or_else(|e| panic!("{addr}: {e}"))
}

/// Every PCI function of a tree, by address.
fn all_functions(root: &SysRoot) -> Vec<PcieFunction> {
    let mut names: Vec<String> = fs::read_dir(root.path("sys/bus/pci/devices"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names.iter().map(|n| function(root, n)).collect()
}

/// A copy of a fixture, symlinks kept, in a folder removed on drop.
impl TempTree {
    fn root(&self) -> SysRoot {
        SysRoot::new(&self.0)
    }

    fn write(&self, rel: &str, text: &str) {
        fs::write(self.path(rel), format!("{text}\n")).unwrap();
    }
}

/// `running 8.0 GT/s x8 of 16.0 GT/s x16` when the link above `device` trained below
/// what it can do (lint judges this on the model's `LinkTraining`; here it picks the
/// fixture's functions to look at).
fn trained_below(port: Option<&PcieFunction>, device: &PcieFunction) -> Option<String> {
    let (current, capable) = link_state(port, device)?;
    let describe = |l: PcieLink| format!("{:.1} GT/s x{}", l.gts, l.width);
    (current.gts < capable.gts || current.width < capable.width)
        .then(|| format!("running {} of {}", describe(current), describe(capable)))
}

/// The links of a path that start at a root port or switch downstream port and trained
/// below what both ends support, as `port -> device: running ...`.
fn downtrained_links(path: &[PcieFunction]) -> Vec<String> {
    path.windows(2)
        .filter(|pair| {
            matches!(
                pair[0].port_type(),
                Some(PortType::RootPort | PortType::SwitchDownstream)
            )
        })
        .filter_map(|pair| {
            let below = trained_below(Some(&pair[0]), &pair[1])?;
            Some(format!("{} -> {}: {below}", pair[0].addr, pair[1].addr))
        })
        .collect()
}

/// Where sysfs and config space disagree on the link (`current_link_*` against LNKSTA,
/// `max_link_*` against LNKCAP): both read the same registers, so a difference means a
/// capture taken at two moments.
fn config_mismatch(f: &PcieFunction) -> Vec<&'static str> {
    let Some(express) = f.express.present() else {
        return Vec::new();
    };
    [
        ("current_link_* vs LNKSTA", f.current, express.link_status),
        ("max_link_* vs LNKCAP", f.max, express.link_cap),
    ]
    .into_iter()
    .filter(|(_, sysfs, config)| sysfs.is_some() && config.is_some() && sysfs != config)
    .map(|(what, _, _)| what)
    .collect()
}

fn gen4(width: u32) -> Option<PcieLink> {
    Some(PcieLink { gts: 16.0, width })
}

const CORRECTABLE: [&str; 8] = [
    "Receiver Error",
    "Bad TLP",
    "Bad DLLP",
    "RELAY_NUM Rollover",
    "Replay Timer Timeout",
    "Advisory Non-Fatal",
    "Corrected Internal Error",
    "Header Log Overflow",
];
const UNCORRECTABLE: [&str; 17] = [
    "Undefined",
    "Data Link Protocol",
    "Surprise Down Error",
    "Poisoned TLP",
    "Flow Control Protocol",
    "Completion Timeout",
    "Completer Abort",
    "Unexpected Completion",
    "Receiver Overflow",
    "Malformed TLP",
    "ECRC",
    "Unsupported Request",
    "ACS Violation",
    "Uncorrectable Internal Error",
    "MC Blocked TLP",
    "AtomicOp Egress Blocked",
    "TLP Prefix Blocked Error",
];

/// An `aer_dev_*` file as the fixture writes it: every name, `given` nonzero.
fn counts(names: &[&str], given: &[(&str, u64)]) -> Option<AerCounts> {
    let errors: Vec<(String, u64)> = names
        .iter()
        .map(|n| {
            let count = given.iter().find(|(g, _)| g == n).map_or(0, |(_, c)| *c);
            (n.to_string(), count)
        })
        .collect();
    let total = given.iter().map(|(_, c)| c).sum();
    Some(AerCounts { errors, total })
}

fn aer(cor: &[(&str, u64)], nonfatal: &[(&str, u64)], rootport: Option<[u64; 3]>) -> Aer {
    Aer {
        correctable: counts(&CORRECTABLE, cor),
        nonfatal: counts(&UNCORRECTABLE, nonfatal),
        fatal: counts(&UNCORRECTABLE, &[]),
        rootport: rootport.map(|[correctable, nonfatal, fatal]| RootPortTotals {
            correctable,
            nonfatal,
            fatal,
        }),
    }
}

fn express(port_type: PortType, link: Option<PcieLink>) -> Capability<ExpressCap> {
    Capability::Present(ExpressCap {
        offset: 0x60,
        port_type,
        link_cap: link,
        link_status: link,
        max_payload_bytes: Some(256),
    })
}

/// The AER capability of the fixture's functions: nothing logged, nothing masked.
fn no_aer_errors() -> Capability<AerRegisters> {
    Capability::Present(AerRegisters {
        uncorrectable_status: 0,
        uncorrectable_mask: 0,
        uncorrectable_severity: 0,
        correctable_status: 0,
        correctable_mask: 0,
    })
}

fn ats(enabled: bool) -> Capability<AtsControl> {
    Capability::Present(AtsControl {
        enabled,
        stu: 0,
        invalidate_queue_depth: 32,
    })
}

// ------------------------------------------------------------------ dgx-a100: PCIe

#[test]
fn the_path_of_mlx5_1_runs_from_its_root_port_through_two_switches() {
    let root = fixture("dgx-a100");
    let path = read_path(&root, pci("0000:35:00.0")).unwrap();
    let got: Vec<(String, Option<PortType>)> = path
        .iter()
        .map(|f| (f.addr.to_string(), f.port_type()))
        .collect();
    let want = [
        ("0000:30:00.0", PortType::RootPort),
        ("0000:31:00.0", PortType::SwitchUpstream),
        ("0000:32:00.0", PortType::SwitchDownstream),
        ("0000:33:00.0", PortType::SwitchUpstream),
        ("0000:34:00.0", PortType::SwitchDownstream),
        ("0000:35:00.0", PortType::Endpoint),
    ]
    .map(|(a, t)| (a.to_string(), Some(t)));
    assert_eq!(got, want);

    let acs = |control| {
        Capability::Present(AcsControl {
            capability: AcsFlags::from_bits_retain(0x005f),
            control: AcsFlags::from_bits_retain(control),
        })
    };
    let zero = aer(&[], &[], None);
    // The leaf switch's downstream port above mlx5_1, ACS redirects on.
    assert_eq!(
        path[4],
        PcieFunction {
            addr: pci("0000:34:00.0"),
            class: 0x060400,
            current: gen4(16),
            max: gen4(16),
            aer: Some(zero.clone()),
            express: express(PortType::SwitchDownstream, gen4(16)),
            acs: acs(0x001d),
            ats: Capability::Absent,
            aer_registers: no_aer_errors(),
            config_bytes: 4096,
        }
    );
    assert_eq!(
        path[4].acs.to_string(),
        "ACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-"
    );
    // The upper switch's downstream port: ACS implemented, nothing enabled.
    assert_eq!(path[2].acs, acs(0));
    assert_eq!(
        path[2].acs.to_string(),
        "ACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-"
    );
    // Root ports have ACS too; upstream ports do not.
    assert_eq!(
        path[0].acs,
        Capability::Present(AcsControl {
            capability: AcsFlags::from_bits_retain(0x001f),
            control: AcsFlags::empty(),
        })
    );
    assert_eq!(
        (&path[1].acs, &path[3].acs),
        (&Capability::Absent, &Capability::Absent)
    );
    // The RNIC itself.
    assert_eq!(
        path[5],
        PcieFunction {
            addr: pci("0000:35:00.0"),
            class: 0x020000,
            current: gen4(16),
            max: gen4(16),
            aer: Some(zero),
            express: express(PortType::Endpoint, gen4(16)),
            acs: Capability::Absent,
            ats: ats(true),
            aer_registers: no_aer_errors(),
            config_bytes: 4096,
        }
    );
    assert_eq!(
        path[5].ats.to_string(),
        "ATSCtl:\tEnable+, Smallest Translation Unit: 00"
    );
}

#[test]
fn acs_redirects_only_in_the_downstream_ports_of_leaf_switch_2() {
    let redirecting: Vec<String> = all_functions(&fixture("dgx-a100"))
        .iter()
        .filter(|f| f.acs.present().is_some_and(|a| a.control.redirects()))
        .map(|f| f.addr.to_string())
        .collect();
    assert_eq!(redirecting, ["0000:34:00.0", "0000:34:01.0"]);
}

#[test]
fn ats_is_on_for_gpus_and_three_rnics_off_on_mlx5_3_unknown_on_mlx5_4() {
    let root = fixture("dgx-a100");
    for (addr, want) in [
        ("0000:15:00.0", ats(true)),
        ("0000:35:00.0", ats(true)),
        ("0000:95:00.0", ats(true)),
        ("0000:b5:00.0", ats(false)),
    ] {
        assert_eq!(function(&root, addr).ats, want, "{addr}");
    }
    assert_eq!(
        function(&root, "0000:b5:00.0").ats.to_string(),
        "ATSCtl:\tEnable-, Smallest Translation Unit: 00"
    );
    let gpus: Vec<PcieFunction> = all_functions(&root)
        .into_iter()
        .filter(|f| f.class == 0x030200)
        .collect();
    assert_eq!(gpus.len(), 8);
    assert!(gpus.iter().all(|g| g.ats == ats(true)));
}

#[test]
fn mlx5_4s_config_space_is_truncated_to_64_bytes() {
    let f = function(&fixture("dgx-a100"), "0000:d1:00.0");
    let reason = "config space truncated to 64 bytes: needs CAP_SYS_ADMIN";
    fn unknown<T>(reason: &str) -> Capability<T> {
        Capability::Unknown {
            reason: reason.to_string(),
        }
    }
    assert_eq!(f.config_bytes, 64);
    assert_eq!(f.express, unknown(reason));
    assert_eq!(f.acs, unknown(reason));
    assert_eq!(f.ats, unknown(reason));
    assert_eq!(f.ats.to_string(), format!("unknown ({reason})"));
    // Sysfs still has the link; config space cannot cross-check it.
    assert_eq!((f.current, f.max), (gen4(16), gen4(16)));
    assert_eq!(trained_below(None, &f), None);
    assert_eq!(config_mismatch(&f), [] as [&str; 0]);
}

#[test]
fn aer_counts_show_at_both_ends_of_gpu3s_link_and_at_its_root_port() {
    let root = fixture("dgx-a100");
    let gpu3 = function(&root, "0000:39:00.0");
    assert_eq!(
        gpu3.aer,
        Some(aer(
            &[
                ("Bad TLP", 12),
                ("Bad DLLP", 31),
                ("Replay Timer Timeout", 4)
            ],
            &[("Completion Timeout", 1)],
            None
        ))
    );
    let port = function(&root, "0000:38:00.0");
    assert_eq!(
        port.aer,
        Some(aer(
            &[
                ("Receiver Error", 9),
                ("Bad DLLP", 5),
                ("RELAY_NUM Rollover", 2)
            ],
            &[],
            None
        ))
    );
    assert_eq!(
        function(&root, "0000:30:00.0").aer,
        Some(aer(&[], &[], Some([63, 1, 0])))
    );
    assert_eq!(
        function(&root, "0000:10:00.0").aer,
        Some(aer(&[], &[], Some([0, 0, 0])))
    );
    let with_errors: Vec<(String, u64)> = all_functions(&root)
        .iter()
        .filter_map(|f| Some((f.addr.to_string(), f.aer.as_ref()?.device_total()?)))
        .filter(|(_, n)| *n > 0)
        .collect();
    assert_eq!(
        with_errors,
        [
            ("0000:38:00.0".to_string(), 16),
            ("0000:39:00.0".to_string(), 48)
        ]
    );
    let nonzero: Vec<(&str, u64)> = gpu3
        .aer
        .as_ref()
        .unwrap()
        .correctable
        .as_ref()
        .unwrap()
        .nonzero()
        .collect();
    assert_eq!(
        nonzero,
        [
            ("Bad TLP", 12),
            ("Bad DLLP", 31),
            ("Replay Timer Timeout", 4)
        ]
    );
}

#[test]
fn only_gpu5s_link_runs_below_what_both_ends_support() {
    let root = fixture("dgx-a100");
    let functions = all_functions(&root);
    // Per function: GPU 5's link at both ends, and root ports whose device has fewer
    // lanes or a lower speed than the port.
    let per_function: Vec<(String, String)> = functions
        .iter()
        .filter_map(|f| Some((f.addr.to_string(), trained_below(None, f)?)))
        .collect();
    let x8 = "running 16.0 GT/s x8 of 16.0 GT/s x16";
    let want = [
        ("0000:00:1c.0", "running 5.0 GT/s x1 of 16.0 GT/s x16"),
        ("0000:00:1d.0", "running 16.0 GT/s x4 of 16.0 GT/s x16"),
        ("0000:50:00.0", "running 8.0 GT/s x1 of 16.0 GT/s x16"),
        ("0000:50:01.0", "running 8.0 GT/s x1 of 16.0 GT/s x16"),
        ("0000:98:00.0", x8),
        ("0000:99:00.0", x8),
    ]
    .map(|(a, d)| (a.to_string(), d.to_string()));
    assert_eq!(per_function, want);
    // Per link, both ends considered: GPU 5's only.
    let mut links = Vec::new();
    for f in functions.iter().filter(|f| f.class >> 8 != 0x0604) {
        let path = read_path(&root, f.addr).unwrap();
        links.extend(downtrained_links(&path));
    }
    assert_eq!(
        links,
        ["0000:98:00.0 -> 0000:99:00.0: running 16.0 GT/s x8 of 16.0 GT/s x16"]
    );
}

#[test]
fn every_dgx_a100_function_agrees_with_its_config_space() {
    let functions = all_functions(&fixture("dgx-a100"));
    assert_eq!(functions.len(), 60);
    for f in &functions {
        assert_eq!(config_mismatch(f), [] as [&str; 0], "{}", f.addr);
        // Bridges are ports of some kind, and only bridges are.
        let bridge = f.class >> 8 == 0x0604;
        let port = matches!(
            f.port_type(),
            Some(
                PortType::RootPort
                    | PortType::SwitchUpstream
                    | PortType::SwitchDownstream
                    | PortType::PcieToPciBridge
            )
        );
        assert_eq!(bridge, port, "{}", f.addr);
    }
}

#[test]
fn a_link_that_retrained_slower_is_downtrained_and_differs_from_config_space() {
    let tree = TempTree::copy_of(fixture("dgx-a100").root(), "pcie-retrain");
    tree.write(
        "sys/bus/pci/devices/0000:15:00.0/current_link_speed",
        "8.0 GT/s PCIe",
    );
    let f = function(&tree.root(), "0000:15:00.0");
    assert_eq!(
        trained_below(None, &f).as_deref(),
        Some("running 8.0 GT/s x16 of 16.0 GT/s x16")
    );
    assert_eq!(config_mismatch(&f), ["current_link_* vs LNKSTA"]);
    // Without sysfs link files, LNKSTA and LNKCAP tell.
    for file in ["current_link_speed", "current_link_width"] {
        fs::remove_file(tree.path(&format!("sys/bus/pci/devices/0000:99:00.0/{file}"))).unwrap();
    }
    let gpu5 = function(&tree.root(), "0000:99:00.0");
    assert_eq!(gpu5.current, None);
    assert_eq!(
        trained_below(None, &gpu5).as_deref(),
        Some("running 16.0 GT/s x8 of 16.0 GT/s x16")
    );
}

#[test]
fn conventional_pci_and_root_complex_functions() {
    let root = fixture("dgx-a100");
    // The BMC's VGA, behind a PCIe-to-PCI bridge: 256 bytes, no PCI Express capability.
    let vga = function(&root, "0000:02:00.0");
    assert_eq!(
        vga,
        PcieFunction {
            addr: pci("0000:02:00.0"),
            class: 0x030000,
            current: None,
            max: None,
            aer: None,
            express: Capability::Absent,
            acs: Capability::Absent,
            ats: Capability::Absent,
            aer_registers: Capability::Absent,
            config_bytes: 256,
        }
    );
    assert_eq!(
        function(&root, "0000:01:00.0").port_type(),
        Some(PortType::PcieToPciBridge)
    );
    // The host bridge: an endpoint in the root complex, without a link.
    let host = function(&root, "0000:00:00.0");
    assert_eq!(
        host.express,
        Capability::Present(ExpressCap {
            offset: 0x60,
            port_type: PortType::RcIntegratedEndpoint,
            link_cap: None,
            link_status: None,
            max_payload_bytes: Some(256),
        })
    );
    assert_eq!(
        (&host.acs, &host.ats, &host.aer),
        (&Capability::Absent, &Capability::Absent, &None)
    );
    assert_eq!(trained_below(None, &host), None);
}

#[test]
fn the_rxe_guests_256_byte_copies_hide_extended_capabilities() {
    let root = fixture("rxe-guest");
    let path = read_path(&root, pci("0000:81:00.0")).unwrap();
    let types: Vec<Option<PortType>> = path.iter().map(PcieFunction::port_type).collect();
    assert_eq!(types, [Some(PortType::RootPort), Some(PortType::Endpoint)]);
    let reason = "config space is 256 bytes: extended capabilities from 0x100 not readable";
    for f in &path {
        assert_eq!(f.config_bytes, 256);
        assert_eq!(
            f.acs,
            Capability::Unknown {
                reason: reason.into()
            }
        );
    }
    // QEMU's root port supports 16.0 GT/s x16; the virtio NIC 2.5 GT/s x1, as trained.
    assert_eq!(
        trained_below(None, &path[0]).as_deref(),
        Some("running 2.5 GT/s x1 of 16.0 GT/s x16")
    );
    assert_eq!(downtrained_links(&path), [] as [String; 0]);
    for f in all_functions(&root) {
        assert_eq!(config_mismatch(&f), [] as [&str; 0], "{}", f.addr);
    }
}

#[test]
fn functions_without_a_config_file_have_unknown_capabilities() {
    let nic = function(&fixture("no-rdma"), "0000:03:00.0");
    let unknown = Capability::Unknown {
        reason: "`config` is missing".into(),
    };
    assert_eq!(nic.ats, unknown);
    assert_eq!(nic.config_bytes, 0);
    assert_eq!(nic.aer, None);
    assert_eq!(nic.current, Some(PcieLink { gts: 5.0, width: 4 }));
}

// ---------------------------------------------------------------- PCIe: errors

fn assert_names(e: DiscoverError, tree: &TempTree, rel: &str, reason: &str) {
    assert_eq!(e.path(), tree.path(rel), "{e}");
    assert!(e.to_string().contains(reason), "{e}");
}

#[test]
fn malformed_pcie_files_are_errors_naming_them() {
    let tree = TempTree::copy_of(fixture("dgx-a100").root(), "pcie-pcie-errors");
    let dev = "sys/bus/pci/devices/0000:16:00.0";
    let read = || read_function(&tree.root(), pci("0000:16:00.0")).unwrap_err();

    tree.write(
        &format!("{dev}/aer_dev_fatal"),
        "Undefined zero\nTOTAL_ERR_FATAL 0",
    );
    assert_names(
        read(),
        &tree,
        &format!("{dev}/aer_dev_fatal"),
        "`Undefined zero`",
    );
    tree.write(&format!("{dev}/aer_dev_fatal"), "TOTAL_ERR_FATAL 0");

    tree.write(&format!("{dev}/max_link_width"), "x16");
    assert_names(
        read(),
        &tree,
        &format!("{dev}/max_link_width"),
        "a PCIe lane count",
    );
    tree.write(&format!("{dev}/max_link_width"), "16");

    fs::write(tree.path(&format!("{dev}/config")), [0u8; 10]).unwrap();
    assert_names(
        read(),
        &tree,
        &format!("{dev}/config"),
        "config space is 10 bytes",
    );
    fs::remove_file(tree.path(&format!("{dev}/class"))).unwrap();
    assert_names(
        read(),
        &tree,
        &format!("{dev}/class"),
        "required file is missing",
    );

    let rp = "sys/bus/pci/devices/0000:10:00.0";
    fs::remove_file(tree.path(&format!("{rp}/aer_rootport_total_err_nonfatal"))).unwrap();
    let e = read_function(&tree.root(), pci("0000:10:00.0")).unwrap_err();
    assert_names(
        e,
        &tree,
        &format!("{rp}/aer_rootport_total_err_nonfatal"),
        "missing while",
    );

    let e = read_function(&tree.root(), pci("0000:42:00.0")).unwrap_err();
    assert_names(
        e,
        &tree,
        "sys/bus/pci/devices/0000:42:00.0",
        "no such PCI function",
    );
    let e = read_path(&tree.root(), pci("0000:42:00.0")).unwrap_err();
    assert_names(e, &tree, "sys/bus/pci/devices/0000:42:00.0", "missing");
}

// ------------------------------------------------------------ memory and IOMMU

#[test]
fn dgx_a100_translates_rnic_dma_without_hugepages() {
    let root = fixture("dgx-a100");
    let m = read_memory_config(&root).unwrap();
    let dmar = |name: &str| IommuUnit {
        name: name.into(),
        intel: Some(IntelIommu {
            version: (1, 0),
            cap: 0xd2008c40660462,
            ecap: 0xf050de,
        }),
    };
    assert_eq!(m.iommu.units, [dmar("dmar0"), dmar("dmar1")]);
    assert!(m.iommu.units[0].intel.unwrap().device_tlb());
    assert_eq!(m.iommu.mode, IommuMode::Translated { lazy: true });
    assert_eq!(m.iommu.groups.len(), 60);
    assert!(m
        .iommu
        .groups
        .iter()
        .all(|g| g.kind == Some(GroupType::DmaFq) && g.devices.len() == 1));
    let pool = |size_kib| HugepagePool {
        size_kib,
        total: 0,
        free: 0,
        reserved: 0,
        surplus: 0,
    };
    assert_eq!(m.hugepages, [pool(2048), pool(1048576)]);
    assert_eq!(
        m.meminfo,
        Some(MeminfoHugepages {
            total: 0,
            free: 0,
            reserved: 0,
            surplus: 0,
            size_kib: 2048,
            anon_huge_kib: Some(0),
        })
    );
    assert_eq!(m.thp_enabled.as_deref(), Some("never"));
    assert_eq!(m.thp_defrag.as_deref(), Some("madvise"));
    assert_eq!(m.cmdline, ["intel_iommu=on"]);
    assert_eq!(m.hugepages_reserved(), Some(false));
    for rnic in [
        "0000:15:00.0",
        "0000:35:00.0",
        "0000:95:00.0",
        "0000:b5:00.0",
    ] {
        assert!(m.translated_without_hugepages(pci(rnic)), "{rnic}");
        assert_eq!(
            device_translation(&root, pci(rnic)).unwrap(),
            Some(GroupType::DmaFq)
        );
        let group = m.iommu.group_of(pci(rnic)).unwrap();
        assert_eq!(group.devices, [rnic]);
    }
    let json = serde_json::to_value(&m).unwrap();
    assert_eq!(
        json["iommu"]["mode"],
        serde_json::json!({"translated": {"lazy": true}})
    );
    assert_eq!(json["iommu"]["groups"][0]["kind"], "DMA-FQ");
}

#[test]
fn the_iotlb_risk_goes_away_with_passthrough_hugepages_or_thp() {
    let rnic = pci("0000:35:00.0");
    let tree = TempTree::copy_of(fixture("dgx-a100").root(), "pcie-iotlb");
    let group = fs::read_link(tree.path("sys/bus/pci/devices/0000:35:00.0/iommu_group")).unwrap();
    let group_type = tree
        .path("sys/bus/pci/devices/0000:35:00.0")
        .join(group)
        .join("type");
    assert!(read_memory_config(&tree.root())
        .unwrap()
        .translated_without_hugepages(rnic));

    fs::write(&group_type, "identity\n").unwrap();
    let m = read_memory_config(&tree.root()).unwrap();
    assert!(!m.translated_without_hugepages(rnic));
    assert_eq!(
        device_translation(&tree.root(), rnic).unwrap(),
        Some(GroupType::Identity)
    );
    assert_eq!(m.iommu.mode, IommuMode::Translated { lazy: true });
    fs::write(&group_type, "DMA\n").unwrap();
    assert!(read_memory_config(&tree.root())
        .unwrap()
        .translated_without_hugepages(rnic));

    tree.write(
        "sys/kernel/mm/transparent_hugepage/enabled",
        "always [madvise] never",
    );
    assert!(!read_memory_config(&tree.root())
        .unwrap()
        .translated_without_hugepages(rnic));
    tree.write(
        "sys/kernel/mm/transparent_hugepage/enabled",
        "always madvise [never]",
    );

    tree.write(
        "sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages",
        "16",
    );
    assert!(!read_memory_config(&tree.root())
        .unwrap()
        .translated_without_hugepages(rnic));
}

#[test]
fn no_rdma_has_no_iommu_and_reserves_hugepages() {
    let m = read_memory_config(&fixture("no-rdma")).unwrap();
    assert_eq!(m.iommu.units, []);
    assert_eq!(m.iommu.groups, []);
    assert_eq!(m.iommu.mode, IommuMode::Off);
    assert_eq!(
        m.hugepages,
        [
            HugepagePool {
                size_kib: 2048,
                total: 1024,
                free: 1000,
                reserved: 8,
                surplus: 0
            },
            HugepagePool {
                size_kib: 1048576,
                total: 0,
                free: 0,
                reserved: 0,
                surplus: 0
            }
        ]
    );
    assert_eq!(
        m.meminfo.map(|h| (h.total, h.anon_huge_kib)),
        Some((1024, Some(1431552)))
    );
    assert_eq!(m.thp_enabled.as_deref(), Some("always"));
    assert_eq!(m.cmdline, ["intel_iommu=off"]);
    assert_eq!(m.hugepages_reserved(), Some(true));
    assert!(!m.translated_without_hugepages(pci("0000:03:00.0")));
    assert_eq!(
        device_translation(&fixture("no-rdma"), pci("0000:03:00.0")),
        Ok(None)
    );
}

#[test]
fn the_rxe_guest_has_no_memory_files_but_reads() {
    let m = read_memory_config(&fixture("rxe-guest")).unwrap();
    assert_eq!(m.iommu.mode, IommuMode::Off);
    assert_eq!((m.meminfo, m.thp_enabled.as_deref()), (None, None));
    assert_eq!(m.hugepages_reserved(), None);
}

#[test]
fn malformed_memory_files_are_errors_naming_them() {
    let tree = TempTree::copy_of(fixture("dgx-a100").root(), "pcie-memory-errors");
    let read = || read_memory_config(&tree.root()).unwrap_err();

    tree.write("sys/kernel/iommu_groups/3/type", "auto");
    assert_names(read(), &tree, "sys/kernel/iommu_groups/3/type", "`auto`");
    // Group 3 holds the BMC's VGA.
    let e = device_translation(&tree.root(), pci("0000:02:00.0")).unwrap_err();
    assert_names(
        e,
        &tree,
        "sys/bus/pci/devices/0000:02:00.0/iommu_group/type",
        "`auto`",
    );
    tree.write("sys/kernel/iommu_groups/3/type", "DMA-FQ");

    tree.write("sys/kernel/mm/transparent_hugepage/defrag", "always defer");
    assert_names(
        read(),
        &tree,
        "sys/kernel/mm/transparent_hugepage/defrag",
        "in brackets",
    );
    tree.write("sys/kernel/mm/transparent_hugepage/defrag", "[never]");

    tree.write("proc/meminfo", "HugePages_Total: 0");
    assert_names(read(), &tree, "proc/meminfo", "HugePages_Free");
    tree.write("proc/meminfo", "MemTotal: lots");

    assert_names(read(), &tree, "proc/meminfo", "`MemTotal: lots`");
    tree.write("proc/meminfo", "MemTotal: 1 kB");

    let pool = "sys/kernel/mm/hugepages/hugepages-2048kB";
    fs::remove_file(tree.path(&format!("{pool}/surplus_hugepages"))).unwrap();
    assert_names(
        read(),
        &tree,
        &format!("{pool}/surplus_hugepages"),
        "missing",
    );
    tree.write(&format!("{pool}/surplus_hugepages"), "0");
    fs::create_dir(tree.path("sys/kernel/mm/hugepages/hugepages-2MB")).unwrap();
    assert_names(
        read(),
        &tree,
        "sys/kernel/mm/hugepages/hugepages-2MB",
        "hugepages-2048kB",
    );
    fs::remove_dir_all(tree.path("sys/kernel/mm/hugepages")).unwrap();

    tree.write(
        "sys/devices/virtual/iommu/dmar1/intel-iommu/ecap",
        "0xf050de",
    );
    assert_names(
        read(),
        &tree,
        "sys/class/iommu/dmar1/intel-iommu/ecap",
        "in hex",
    );
    tree.write("sys/devices/virtual/iommu/dmar1/intel-iommu/ecap", "f050de");

    fs::create_dir(tree.path("sys/kernel/iommu_groups/x")).unwrap();
    assert_names(
        read(),
        &tree,
        "sys/kernel/iommu_groups/x",
        "an IOMMU group number",
    );
    fs::remove_dir(tree.path("sys/kernel/iommu_groups/x")).unwrap();
    assert!(read_memory_config(&tree.root()).is_ok());
}

// ------------------------------------------------------------------ this machine

fn this_machines_functions() -> Vec<PciAddr> {
    match fs::read_dir("/sys/bus/pci/devices") {
        Ok(entries) => entries
            .map(|e| e.unwrap().file_name().to_string_lossy().parse().unwrap())
            .collect(),
        Err(_) => Vec::new(),
    }
}

fn assert_names_a_file_below(e: &DiscoverError, dir: &str) {
    assert!(e.path().starts_with(dir), "{e}");
}

#[test]
fn this_machines_memory_config_reads() {
    let root = SysRoot::system();
    let m = read_memory_config(&root).expect("this machine's memory config reads");
    if m.iommu.units.is_empty() {
        assert_eq!(m.iommu.mode, IommuMode::Off);
    }
    for addr in this_machines_functions() {
        match device_translation(&root, addr) {
            Ok(kind) => {
                if kind.is_some() {
                    assert!(m.iommu.group_of(addr).is_some(), "{addr}");
                }
            }
            Err(e) => assert_names_a_file_below(&e, "/sys"),
        }
    }
}

#[test]
fn every_pci_function_of_this_machine_reads() {
    let root = SysRoot::system();
    for addr in this_machines_functions() {
        match read_function(&root, addr) {
            Ok(f) => {
                assert_eq!(f.addr, addr);
                assert!(f.config_bytes == 0 || f.config_bytes >= 64, "{addr}");
                let _ = (
                    trained_below(None, &f),
                    config_mismatch(&f),
                    f.acs.to_string(),
                );
            }
            Err(e) => assert_names_a_file_below(&e, "/sys"),
        }
        match read_path(&root, addr) {
            Ok(path) => assert_eq!(path.last().map(|f| f.addr), Some(addr)),
            Err(e) => assert_names_a_file_below(&e, "/sys"),
        }
    }
}
