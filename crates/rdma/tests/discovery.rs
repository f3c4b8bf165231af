//! Topology discovery against whole fixture trees (`testdata/hosts/<host>/sys`, real
//! relative symlinks), compared as whole values; and against this machine's `/sys`.

mod common;

use common::TempTree;
use model::{
    Component, ComponentId, ComponentKind, Link, LinkKind, Path as ModelPath, Rnic, Turnaround,
};
use rdma::sysfs::ib::parse_gid;
use rdma::sysfs::{
    discover, Bindings, DiscoverError, Discovery, GidEntry, GidKind, GpuDevice, LinkLayer,
    LinkRate, NumaNode, PciAddr, PortState, RdmaPort, RnicBinding, SwitchPorts, SysRoot,
};
use std::fs;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/hosts")
        .join(name)
}

fn discover_fixture(name: &str) -> Discovery {
    discover(&SysRoot::new(fixture(name))).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A copy of a fixture, symlinks kept, in a folder removed on drop.
impl TempTree {
    fn write(&self, rel: &str, text: &str) {
        fs::write(self.path(rel), format!("{text}\n")).unwrap();
    }

    fn discover(&self) -> Result<Discovery, DiscoverError> {
        discover(&SysRoot::new(&self.0))
    }
}

fn pci(s: &str) -> PciAddr {
    s.parse().unwrap()
}

fn id(s: &str) -> ComponentId {
    ComponentId::from(s)
}

const GEN4X16: f64 = 16.0 * 16.0 * 128.0 / 130.0;
const GEN4X8: f64 = 16.0 * 8.0 * 128.0 / 130.0;

// ---------------------------------------------------------------- dgx-a100: the model

fn component(name: &str, socket: &str, kind: ComponentKind) -> Component {
    Component {
        id: id(name),
        socket: id(socket),
        kind,
    }
}

fn link(down: &str, up: &str, kind: LinkKind, capacity_gbps: f64) -> Link {
    Link {
        id: model::LinkId::between(&id(down), &id(up)),
        kind,
        down: id(down),
        up: id(up),
        capacity_gbps,
        capacity_known: true,
        latency_ns: kind.default_latency_ns(),
    }
}

/// sw(3r) is the upper switch of root port r, sw(3r+1) and sw(3r+2) its leaf switches
/// (the order of their upstream ports' addresses); RNIC r and GPU 2r sit on sw(3r+1).
fn dgx_components() -> Vec<Component> {
    let socket = |r: usize| if r < 2 { "cpu0" } else { "cpu1" };
    let mut c = vec![
        component(
            "cpu0",
            "cpu0",
            ComponentKind::Cpu {
                p2p_forward_ns: 800.0,
            },
        ),
        component(
            "cpu1",
            "cpu1",
            ComponentKind::Cpu {
                p2p_forward_ns: 800.0,
            },
        ),
        component("mem0", "cpu0", ComponentKind::Memory { access_ns: 100.0 }),
        component("mem1", "cpu1", ComponentKind::Memory { access_ns: 100.0 }),
    ];
    for sw in 0..12 {
        c.push(component(
            &format!("sw{sw}"),
            socket(sw / 3),
            ComponentKind::PcieSwitch,
        ));
    }
    for gpu in 0..8 {
        c.push(component(
            &format!("gpu{gpu}"),
            socket(gpu / 2),
            ComponentKind::Gpu { access_ns: 600.0 },
        ));
    }
    for r in 0..4 {
        c.push(component(
            &format!("rnic{r}"),
            socket(r),
            ComponentKind::Rnic(Rnic {
                line_rate_gbps: 200.0,
                proc_ns: 1500.0,
                read_window_bytes: 34_512.0,
                qp_window_bytes: 4.0 * 1024.0 * 1024.0,
            }),
        ));
    }
    c
}

fn dgx_links() -> Vec<Link> {
    use LinkKind::*;
    let mut l = vec![
        link("mem0", "cpu0", MemoryChannel, 1638.4),
        link("mem1", "cpu1", MemoryChannel, 1638.4),
        link("cpu0", "cpu1", InterSocket, 537.6),
    ];
    for r in 0..4 {
        let cpu = if r < 2 { "cpu0" } else { "cpu1" };
        let upper = format!("sw{}", 3 * r);
        l.push(link(&upper, cpu, RootPort, GEN4X16));
        l.push(link(
            &format!("sw{}", 3 * r + 1),
            &upper,
            SwitchUplink,
            GEN4X16,
        ));
        l.push(link(
            &format!("sw{}", 3 * r + 2),
            &upper,
            SwitchUplink,
            GEN4X16,
        ));
    }
    for gpu in 0..8 {
        let leaf = format!("sw{}", 3 * (gpu / 2) + 1 + gpu % 2);
        // GPU 5 trained at x8: its link follows the negotiated width.
        let capacity = if gpu == 5 { GEN4X8 } else { GEN4X16 };
        l.push(link(&format!("gpu{gpu}"), &leaf, GpuPcie, capacity));
    }
    for r in 0..4 {
        l.push(link(
            &format!("rnic{r}"),
            &format!("sw{}", 3 * r + 1),
            RnicPcie,
            GEN4X16,
        ));
    }
    l
}

#[test]
fn dgx_a100_model_has_every_component_and_link_with_negotiated_capacities() {
    let d = discover_fixture("dgx-a100");
    let host = d.host.expect("a model");
    assert_eq!(host.components(), dgx_components().as_slice());
    assert_eq!(host.links(), dgx_links().as_slice());
    assert_eq!(
        host.description,
        "dgx-a100-01: 2 sockets, 12 PCIe switches, 8 GPUs, 4 RNICs (4 x 200 Gb/s); from sysfs"
    );
    let (kind, hash) = host.name.split_at("2s-4rnic200-8gpu-".len());
    assert_eq!(kind, "2s-4rnic200-8gpu-");
    assert!(
        hash.len() == 8 && hash.bytes().all(|b| b.is_ascii_hexdigit()),
        "{}",
        host.name
    );
}

fn path(
    rnic: &str,
    endpoint: &str,
    links: &[&str],
    turn: Turnaround,
    p2p: bool,
    aff: bool,
) -> ModelPath {
    ModelPath {
        rnic: id(rnic),
        endpoint: id(endpoint),
        links: links.iter().map(|l| model::LinkId::from(*l)).collect(),
        turnaround: turn,
        p2p_through_cpu: p2p,
        affinitive: aff,
        capacity_known: true,
    }
}

#[test]
fn dgx_a100_paths_of_rnic2_and_their_affinity() {
    use Turnaround::{RootComplex, Switch};
    let host = discover_fixture("dgx-a100").host.expect("a model");
    let up = ["rnic2--sw7", "sw7--sw6", "sw6--cpu1"];
    let cross = |rest: &[&'static str]| -> Vec<&'static str> {
        up.iter()
            .copied()
            .chain(["cpu0--cpu1"])
            .chain(rest.iter().copied())
            .collect()
    };
    let local = |rest: &[&'static str]| -> Vec<&'static str> {
        up.iter().copied().chain(rest.iter().copied()).collect()
    };
    let cpu0 = || RootComplex(id("cpu0"));
    let cpu1 = || RootComplex(id("cpu1"));
    let want = vec![
        path(
            "rnic2",
            "mem0",
            &cross(&["mem0--cpu0"]),
            cpu0(),
            false,
            true,
        ),
        path(
            "rnic2",
            "mem1",
            &local(&["mem1--cpu1"]),
            cpu1(),
            false,
            true,
        ),
        path(
            "rnic2",
            "gpu0",
            &cross(&["sw0--cpu0", "sw1--sw0", "gpu0--sw1"]),
            cpu0(),
            true,
            false,
        ),
        path(
            "rnic2",
            "gpu1",
            &cross(&["sw0--cpu0", "sw2--sw0", "gpu1--sw2"]),
            cpu0(),
            true,
            false,
        ),
        path(
            "rnic2",
            "gpu2",
            &cross(&["sw3--cpu0", "sw4--sw3", "gpu2--sw4"]),
            cpu0(),
            true,
            false,
        ),
        path(
            "rnic2",
            "gpu3",
            &cross(&["sw3--cpu0", "sw5--sw3", "gpu3--sw5"]),
            cpu0(),
            true,
            false,
        ),
        path(
            "rnic2",
            "gpu4",
            &["rnic2--sw7", "gpu4--sw7"],
            Switch(id("sw7")),
            false,
            true,
        ),
        // Same upper switch, but the x8 link caps it below line rate: not affinitive.
        path(
            "rnic2",
            "gpu5",
            &["rnic2--sw7", "sw7--sw6", "sw8--sw6", "gpu5--sw8"],
            Switch(id("sw6")),
            false,
            false,
        ),
        path(
            "rnic2",
            "gpu6",
            &local(&["sw9--cpu1", "sw10--sw9", "gpu6--sw10"]),
            cpu1(),
            true,
            false,
        ),
        path(
            "rnic2",
            "gpu7",
            &local(&["sw9--cpu1", "sw11--sw9", "gpu7--sw11"]),
            cpu1(),
            true,
            false,
        ),
    ];
    let rnic2 = id("rnic2");
    assert_eq!(host.paths_of(&rnic2).cloned().collect::<Vec<_>>(), want);
    // The built-in model of the same shape, all links x16, has gpu5 affinitive too.
    let builtin = model::builtin::load("dgx-a100").unwrap().unwrap();
    let names = |h: &model::HostTopology| -> Vec<String> {
        h.affinitive_endpoints(&rnic2)
            .map(|e| e.to_string())
            .collect()
    };
    assert_eq!(names(&builtin), ["mem0", "mem1", "gpu4", "gpu5"]);
    assert_eq!(names(&host), ["mem0", "mem1", "gpu4"]);
}

// ------------------------------------------------------ dgx-a100: the discovered facts

fn gid(index: u32, text: &str, kind: GidKind, netdev: Option<&str>) -> GidEntry {
    GidEntry {
        index,
        gid: parse_gid(text).unwrap(),
        kind: Some(kind),
        netdev: netdev.map(String::from),
    }
}

fn rate(gbps: f64, generation: &str) -> Option<LinkRate> {
    Some(LinkRate {
        gbps,
        lanes: 4,
        generation: Some(generation.into()),
    })
}

fn ib_port(device: &str, lid: u16, gid0: &str, netdev: &str, addr: &str, node: u32) -> RdmaPort {
    RdmaPort {
        device: device.into(),
        port: 1,
        state: PortState::Active,
        phys_state: Some("5: LinkUp".into()),
        rate: rate(200.0, "HDR"),
        link_layer: LinkLayer::InfiniBand,
        lid: Some(lid),
        gids: vec![gid(0, gid0, GidKind::IbRoceV1, None)],
        netdev: Some(netdev.into()),
        pci: Some(pci(addr)),
        numa_node: Some(node),
        software: false,
    }
}

fn roce_port(
    device: &str,
    mac_gid: &str,
    v4_gid: Option<&str>,
    netdev: &str,
    addr: &str,
) -> RdmaPort {
    let nd = Some(netdev);
    let mut gids = vec![
        gid(0, mac_gid, GidKind::IbRoceV1, nd),
        gid(1, mac_gid, GidKind::RoceV2, nd),
    ];
    if let Some(v4) = v4_gid {
        // Indices 16 and 17 (a global IPv6 address) lie past the 16 entries read.
        gids.push(gid(2, v4, GidKind::IbRoceV1, nd));
        gids.push(gid(3, v4, GidKind::RoceV2, nd));
    }
    RdmaPort {
        device: device.into(),
        port: 1,
        state: PortState::Active,
        phys_state: Some("5: LinkUp".into()),
        rate: rate(200.0, "HDR"),
        link_layer: LinkLayer::Ethernet,
        lid: Some(0),
        gids,
        netdev: Some(netdev.into()),
        pci: Some(pci(addr)),
        numa_node: None,
        software: false,
    }
}

fn dgx_ports() -> Vec<RdmaPort> {
    let mut mlx5_1 = roce_port(
        "mlx5_1",
        "fe80:0000:0000:0000:0e42:a1ff:fe3e:5c10",
        Some("0000:0000:0000:0000:0000:ffff:0a01:010b"),
        "enp53s0np0",
        "0000:35:00.0",
    );
    mlx5_1.numa_node = Some(0);
    let mut mlx5_3 = roce_port(
        "mlx5_3",
        "fe80:0000:0000:0000:0e42:a1ff:fe3e:5c30",
        Some("0000:0000:0000:0000:0000:ffff:0a01:030b"),
        "enp181s0np0",
        "0000:b5:00.0",
    );
    mlx5_3.numa_node = Some(1);
    let mut mlx5_4 = roce_port(
        "mlx5_4",
        "fe80:0000:0000:0000:0e42:a1ff:fe3e:5c40",
        None,
        "enp209s0np0",
        "0000:d1:00.0",
    );
    mlx5_4.state = PortState::Down;
    mlx5_4.phys_state = Some("3: Disabled".into());
    mlx5_4.rate = rate(100.0, "EDR");
    mlx5_4.numa_node = Some(1);
    vec![
        ib_port(
            "mlx5_0",
            0x11,
            "fe80:0000:0000:0000:b859:9f03:00c4:1a20",
            "ibp21s0",
            "0000:15:00.0",
            0,
        ),
        mlx5_1,
        ib_port(
            "mlx5_2",
            0x13,
            "fe80:0000:0000:0000:b859:9f03:00c4:1c20",
            "ibp149s0",
            "0000:95:00.0",
            1,
        ),
        mlx5_3,
        mlx5_4,
    ]
}

const DGX_GPUS: [&str; 8] = [
    "0000:16:00.0",
    "0000:19:00.0",
    "0000:36:00.0",
    "0000:39:00.0",
    "0000:96:00.0",
    "0000:99:00.0",
    "0000:b6:00.0",
    "0000:b9:00.0",
];

#[test]
fn dgx_a100_ports_gpus_nodes_bindings_and_notes() {
    let d = discover_fixture("dgx-a100");
    assert_eq!(d.hostname.as_deref(), Some("dgx-a100-01"));
    assert_eq!(
        d.numa_nodes,
        [
            NumaNode {
                id: 0,
                cpulist: "0-63,128-191".into(),
                mem_total_kib: Some(528_174_556),
                distance: None,
                packages: vec![],
            },
            NumaNode {
                id: 1,
                cpulist: "64-127,192-255".into(),
                mem_total_kib: Some(528_444_416),
                distance: None,
                packages: vec![],
            },
        ]
    );
    assert_eq!(d.rdma_ports, dgx_ports());
    // The BMC's ASPEED VGA and the NVSwitches (NVIDIA, class 0x0680) are not GPUs.
    let gpus: Vec<GpuDevice> = DGX_GPUS
        .iter()
        .enumerate()
        .map(|(i, a)| GpuDevice {
            pci: pci(a),
            vendor: 0x10de,
            device: 0x20b0,
            numa_node: Some(if i < 4 { 0 } else { 1 }),
        })
        .collect();
    assert_eq!(d.gpus, gpus);

    let rnic = |device: &str, gid_index, link_layer, lid| RnicBinding {
        device: device.into(),
        port: 1,
        gid_index: Some(gid_index),
        link_layer,
        lid: Some(lid),
        software: false,
        // The fixture's first two NICs hang below node 0's root ports, the others node 1's.
        numa_node: Some(u32::from(device > "mlx5_1")),
    };
    let want = Bindings {
        rnics: vec![
            (id("rnic0"), rnic("mlx5_0", 0, LinkLayer::InfiniBand, 0x11)),
            // RoCE: the RoCE v2 GID holding the IPv4 address.
            (id("rnic1"), rnic("mlx5_1", 3, LinkLayer::Ethernet, 0)),
            (id("rnic2"), rnic("mlx5_2", 0, LinkLayer::InfiniBand, 0x13)),
            (id("rnic3"), rnic("mlx5_3", 3, LinkLayer::Ethernet, 0)),
        ],
        memory: vec![(id("mem0"), 0), (id("mem1"), 1)],
        cpus: vec![(id("cpu0"), 0), (id("cpu1"), 1)],
        gpus: DGX_GPUS
            .iter()
            .enumerate()
            .map(|(i, a)| (id(&format!("gpu{i}")), pci(a)))
            .collect(),
        pcie_links: Vec::new(),
        switches: Vec::new(),
    };
    assert_eq!(d.bindings.rnics, want.rnics);
    assert_eq!(d.bindings.memory, want.memory);
    assert_eq!(d.bindings.cpus, want.cpus);
    assert_eq!(d.bindings.cpu(1), Some(&id("cpu1")));
    assert_eq!(d.bindings.gpus, want.gpus);
    // Root port r (bus BB) feeds an upper switch (BB+1) with leaf switches at BB+3 (NIC r at
    // BB+5, GPU 2r at BB+6) and BB+7 (GPU 2r+1 at BB+9): the fixture's README.
    let at = |bus: u8, dev: u8| pci(&format!("0000:{bus:02x}:{dev:02x}.0"));
    let link = |s: String| model::LinkId::from(s.as_str());
    let (mut switch_links, mut gpu_links, mut rnic_links, mut switches) =
        (vec![], vec![], vec![], vec![]);
    for (r, bb) in [0x10u8, 0x30, 0x90, 0xb0].into_iter().enumerate() {
        let (upper, leaf0, leaf1) = (3 * r, 3 * r + 1, 3 * r + 2);
        let cpu = if r < 2 { "cpu0" } else { "cpu1" };
        switch_links.push((link(format!("sw{upper}--{cpu}")), at(bb + 1, 0)));
        switch_links.push((link(format!("sw{leaf0}--sw{upper}")), at(bb + 3, 0)));
        switch_links.push((link(format!("sw{leaf1}--sw{upper}")), at(bb + 7, 0)));
        let ports = |upstream, downstream| SwitchPorts {
            upstream,
            downstream,
        };
        switches.push((
            id(&format!("sw{upper}")),
            ports(at(bb + 1, 0), vec![at(bb + 2, 0), at(bb + 2, 1)]),
        ));
        switches.push((
            id(&format!("sw{leaf0}")),
            ports(at(bb + 3, 0), vec![at(bb + 4, 0), at(bb + 4, 1)]),
        ));
        switches.push((
            id(&format!("sw{leaf1}")),
            ports(at(bb + 7, 0), vec![at(bb + 8, 0)]),
        ));
        gpu_links.push((link(format!("gpu{}--sw{leaf0}", 2 * r)), at(bb + 6, 0)));
        gpu_links.push((link(format!("gpu{}--sw{leaf1}", 2 * r + 1)), at(bb + 9, 0)));
        rnic_links.push((link(format!("rnic{r}--sw{leaf0}")), at(bb + 5, 0)));
    }
    let pcie_links: Vec<_> = [switch_links, gpu_links, rnic_links].concat();
    assert_eq!(d.bindings.pcie_links, pcie_links);
    assert_eq!(d.bindings.switches, switches);
    assert_eq!(
        d.notes,
        [
            "CPU package ids are not in sysfs (cpu*/topology/physical_package_id): each NUMA node with CPUs is taken as one socket",
            "NUMA distances are not in sysfs (node*/distance): sockets chained in package order",
            "mlx5_4 port 1 is DOWN: not probed",
            "memory channel capacity is not in sysfs: assumed 1638.4 Gb/s per NUMA node (8 x DDR4-3200)",
            "inter-socket capacity is not in sysfs: assumed 537.6 Gb/s per link (3 x UPI at 11.2 GT/s)",
        ]
    );
}

#[test]
fn the_json_view_writes_addresses_and_gids_as_sysfs_does() {
    let d = discover_fixture("dgx-a100");
    let json = serde_json::to_value(&d).unwrap();
    let port = &json["rdma_ports"][1];
    assert_eq!(port["pci"], "0000:35:00.0");
    assert_eq!(
        port["gids"][3]["gid"],
        "0000:0000:0000:0000:0000:ffff:0a01:010b"
    );
    assert_eq!(port["gids"][3]["kind"], "RoceV2");
    assert_eq!(
        json["bindings"]["gpus"][5],
        serde_json::json!(["gpu5", "0000:99:00.0"])
    );
    assert_eq!(json["host"]["name"], d.host.unwrap().name);
}

// ----------------------------------------------------------------- the model's name

#[test]
fn the_model_name_is_stable_and_changes_with_a_link_width() {
    let name = |d: Discovery| d.host.expect("a model").name;
    let original = name(discover_fixture("dgx-a100"));
    assert_eq!(name(discover_fixture("dgx-a100")), original);

    let tree = TempTree::copy_of(&fixture("dgx-a100"), "discovery-name");
    // Another host of the same kind: other hostname, same hardware.
    tree.write("proc/sys/kernel/hostname", "dgx-a100-02");
    let other = tree.discover().unwrap();
    assert_eq!(
        other.host.as_ref().unwrap().description.split(':').next(),
        Some("dgx-a100-02")
    );
    assert_eq!(name(other), original);

    // GPU 0 retrains to x4: a different kind of host, and a capacity that follows.
    tree.write("sys/bus/pci/devices/0000:16:00.0/current_link_width", "4");
    let degraded = tree.discover().unwrap().host.unwrap();
    assert_ne!(degraded.name, original);
    assert!(degraded.name.starts_with("2s-4rnic200-8gpu-"));
    let gpu0 = degraded.link(&"gpu0--sw1".into()).unwrap();
    assert!((gpu0.capacity_gbps - GEN4X16 / 4.0).abs() < 1e-9);

    tree.write("sys/bus/pci/devices/0000:16:00.0/current_link_width", "16");
    assert_eq!(name(tree.discover().unwrap()), original);
}

// ------------------------------------------------------------------------ errors

#[test]
fn a_malformed_rate_is_an_error_naming_the_file() {
    let tree = TempTree::copy_of(&fixture("dgx-a100"), "discovery-rate");
    tree.write("sys/class/infiniband/mlx5_1/ports/1/rate", "fast");
    let e = tree.discover().unwrap_err();
    let file = tree.path("sys/class/infiniband/mlx5_1/ports/1/rate");
    assert_eq!(
        e,
        DiscoverError::Malformed {
            path: file.clone(),
            reason: "`fast` is not a link rate like `200 Gb/sec (4X HDR)`".into(),
        }
    );
    assert_eq!(
        e.to_string(),
        format!(
            "{}: `fast` is not a link rate like `200 Gb/sec (4X HDR)`",
            file.display()
        )
    );
}

#[test]
fn a_malformed_numa_node_is_an_error_naming_the_file() {
    let tree = TempTree::copy_of(&fixture("dgx-a100"), "discovery-numa");
    tree.write("sys/bus/pci/devices/0000:16:00.0/numa_node", "zero");
    let e = tree.discover().unwrap_err();
    assert_eq!(
        e,
        DiscoverError::Malformed {
            path: tree.path("sys/bus/pci/devices/0000:16:00.0/numa_node"),
            reason: "`zero` is not a NUMA node number or -1".into(),
        }
    );
}

#[test]
fn a_missing_required_file_is_an_error_naming_it() {
    let tree = TempTree::copy_of(&fixture("dgx-a100"), "discovery-state");
    fs::remove_file(tree.path("sys/class/infiniband/mlx5_0/ports/1/state")).unwrap();
    let e = tree.discover().unwrap_err();
    assert_eq!(
        e,
        DiscoverError::Malformed {
            path: tree.path("sys/class/infiniband/mlx5_0/ports/1/state"),
            reason: "required file is missing or has no value".into(),
        }
    );
}

#[test]
fn an_optional_file_may_be_missing() {
    let tree = TempTree::copy_of(&fixture("dgx-a100"), "discovery-optional");
    fs::remove_file(tree.path("sys/class/infiniband/mlx5_0/ports/1/lid")).unwrap();
    fs::remove_file(tree.path("sys/bus/pci/devices/0000:16:00.0/numa_node")).unwrap();
    let d = tree.discover().unwrap();
    assert_eq!(d.rdma_ports[0].lid, None);
    assert_eq!(d.bindings.rnic(&id("rnic0")).unwrap().lid, None);
    assert_eq!(d.gpus[0].numa_node, None);
    // Its root port still says node 0: the model is unchanged.
    assert_eq!(d.host.unwrap().links(), dgx_links().as_slice());
}

#[test]
fn an_unreadable_root_is_an_error_naming_it() {
    let missing = Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-such-root");
    let e = discover(&SysRoot::new(&missing)).unwrap_err();
    assert_eq!(e.path(), missing);
    assert!(
        e.to_string()
            .starts_with(&format!("cannot read {}: ", missing.display())),
        "{e}"
    );
    assert!(!e.to_string().contains('\n'));

    // A folder that is not a sysfs root (no sys/ in it) is refused too.
    let tree = TempTree::copy_of(&fixture("no-rdma"), "discovery-nosys");
    fs::remove_dir_all(tree.path("sys")).unwrap();
    let e = tree.discover().unwrap_err();
    assert!(
        matches!(&e, DiscoverError::Unreadable { path, .. } if *path == tree.path("sys")),
        "{e}"
    );
}

// ------------------------------------------------------------------- no-rdma host

#[test]
fn a_host_without_rdma_has_nodes_but_no_model() {
    let d = discover_fixture("no-rdma");
    assert_eq!(d.hostname, None);
    assert_eq!(
        d.numa_nodes,
        [NumaNode {
            id: 0,
            cpulist: "0-15".into(),
            mem_total_kib: Some(65_536_000),
            distance: None,
            packages: vec![],
        }]
    );
    assert_eq!(d.rdma_ports, []);
    // Its only display controller is the BMC's (ASPEED): no GPU.
    assert_eq!(d.gpus, []);
    assert!(d.host.is_none());
    assert_eq!(d.bindings, Bindings::default());
    assert_eq!(
        d.notes,
        ["no RDMA devices found: sys/class/infiniband does not exist"]
    );
}

#[test]
fn a_kernel_without_numa_has_one_node_0() {
    let tree = TempTree::copy_of(&fixture("no-rdma"), "discovery-nonuma");
    fs::remove_dir_all(tree.path("sys/devices/system/node")).unwrap();
    fs::create_dir_all(tree.path("proc")).unwrap();
    tree.write(
        "proc/meminfo",
        "MemTotal:       65536000 kB\nMemFree:        61234567 kB",
    );
    let d = tree.discover().unwrap();
    assert_eq!(
        d.numa_nodes,
        [NumaNode {
            id: 0,
            cpulist: "0-15".into(),
            mem_total_kib: Some(65_536_000),
            distance: None,
            packages: vec![],
        }]
    );
    assert_eq!(
        d.notes,
        [
            "no sys/devices/system/node (kernel without NUMA): one node 0 assumed",
            "no RDMA devices found: sys/class/infiniband does not exist",
        ]
    );
}

// ----------------------------------------------------------- rxe guest, this machine

/// A tree captured from a Soft-RoCE QEMU guest, when its capture has been added: rxe0 on
/// eth0 on a virtio-net PCI function, one or two NUMA nodes, no GPUs.
#[test]
fn an_rxe_guest_hangs_its_software_rnic_from_a_cpu() {
    if !fixture("rxe-guest/sys").exists() {
        eprintln!("testdata/hosts/rxe-guest/sys is not captured yet: nothing to check");
        return;
    }
    let d = discover_fixture("rxe-guest");
    let rxe = d
        .rdma_ports
        .iter()
        .find(|p| p.device == "rxe0")
        .expect("rxe0");
    assert!(rxe.software);
    assert_eq!(rxe.netdev.as_deref(), Some("eth0"));
    assert_eq!(rxe.link_layer, LinkLayer::Ethernet);
    assert!(rxe.pci.is_some(), "eth0 is a virtio-net PCI function");
    assert!(d.gpus.is_empty());
    let host = d.host.expect("rxe0 is ACTIVE");
    let rnic0 = id("rnic0");
    assert_eq!(
        d.bindings.rnic(&rnic0).map(|b| b.device.as_str()),
        Some("rxe0")
    );
    // The software RNIC hangs from the socket of eth0's NUMA node (1: the guest puts the
    // NIC on an expander bridge of node 1), at its line rate, so both memory nodes are
    // affinitive, the remote one across the socket link.
    assert_eq!(rxe.numa_node, Some(1));
    let links = host.links_to_cpu(&rnic0);
    assert_eq!(links, [model::LinkId::from("rnic0--cpu1")]);
    assert_eq!(host.link(&links[0]).unwrap().capacity_gbps, 2.5);
    let paths: Vec<(String, bool, usize)> = host
        .paths()
        .iter()
        .map(|p| (p.endpoint.to_string(), p.affinitive, p.links.len()))
        .collect();
    assert_eq!(
        paths,
        [("mem0".to_string(), true, 3), ("mem1".to_string(), true, 2)]
    );
    let rate = rxe.rate.as_ref().unwrap().gbps;
    assert!(host
        .name
        .starts_with(&format!("{}s-1rnic{rate}-0gpu-", d.numa_nodes.len())));
}

#[test]
fn this_machine_is_discovered() {
    let d = discover(&SysRoot::system()).expect("the running system's sysfs reads");
    assert!(!d.numa_nodes.is_empty());
    if !Path::new("/sys/class/infiniband").exists() {
        assert!(d.rdma_ports.is_empty());
        assert!(d.host.is_none());
        assert!(
            d.notes
                .iter()
                .any(|n| n.starts_with("no RDMA devices found")),
            "{:?}",
            d.notes
        );
    }
}
