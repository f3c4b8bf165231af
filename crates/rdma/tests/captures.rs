//! Discovery on real machines' sysfs (`testdata/captures/`, sources in its SOURCES.md):
//! every capture there is read, and its sockets, memory nodes, inter-socket links and notes
//! are what the machine has. Then the odd shapes real trees hold, on copies of a fixture:
//! a device without `ports/`, a PCI function without `vendor`, a virtual machine's bridges.

mod common;

use common::TempTree;
use model::{ComponentId, LinkKind};
use rdma::sysfs::{discover, Discovery, SysRoot};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn captures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/captures")
}

/// A capture as a root discovery can read: a folder as it is, a `.tar.bz2` extracted
/// (with the system `tar`) below the target's temporary folder, at the folder holding
/// `sys/`.
fn capture_root(name: &str) -> PathBuf {
    let entry = captures().join(name);
    if entry.is_dir() {
        return entry;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("capture-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let status = Command::new("tar")
        .arg("-xjf")
        .arg(&entry)
        .arg("-C")
        .arg(&dir)
        .status()
        .expect("tar runs");
    assert!(status.success(), "tar -xjf {}", entry.display());
    // hwloc's tarballs hold one folder named after the machine.
    fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("sys").is_dir())
        .unwrap_or_else(|| panic!("{name}: no folder with sys/ in it"))
}

fn discover_capture(name: &str) -> Discovery {
    discover(&SysRoot::new(capture_root(name))).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// What a capture must give: sockets with their memory nodes, links, notes.
struct Expected {
    name: &'static str,
    sockets: &'static [(u32, &'static [u32])],
    links: &'static [(u32, u32)],
    notes: &'static [&'static str],
}

const FULL_MESH_4: &[(u32, u32)] = &[(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)];
const NO_RDMA: &str = "no RDMA devices found: sys/class/infiniband does not exist";

const EXPECTED: &[Expected] = &[
    Expected {
        // Magny-Cours: two dies per package, every package 16 from every other.
        name: "48amd64-4pa2n6c-sparse.tar.bz2",
        sockets: &[(0, &[0, 1]), (1, &[2, 33]), (2, &[34, 45]), (3, &[72, 73])],
        links: FULL_MESH_4,
        notes: &[
            "package 0 holds NUMA nodes 0, 1 (sub-NUMA clustering or NPS): one socket, cpu0, with a memory node each",
            "package 1 holds NUMA nodes 2, 33 (sub-NUMA clustering or NPS): one socket, cpu1, with a memory node each",
            "package 2 holds NUMA nodes 34, 45 (sub-NUMA clustering or NPS): one socket, cpu2, with a memory node each",
            "package 3 holds NUMA nodes 72, 73 (sub-NUMA clustering or NPS): one socket, cpu3, with a memory node each",
            NO_RDMA,
        ],
    },
    Expected {
        // 4 x Xeon E7-4870, distances all 20: a full mesh, not a chain.
        name: "40intel64-4n10c",
        sockets: &[(0, &[0]), (1, &[1]), (2, &[2]), (3, &[3])],
        links: FULL_MESH_4,
        notes: &[
            "NUMA node 3's CPUs report no package: taken as socket cpu3",
            NO_RDMA,
        ],
    },
    Expected {
        // POWER9 with V100 memory as NUMA nodes 250..255, each 80 from both sockets.
        name: "nvidiagpunumanodes",
        sockets: &[(0, &[0, 250, 251, 252, 253, 254, 255]), (8, &[8])],
        links: &[(0, 8)],
        notes: &[
            "NUMA node 250 has memory but no CPUs (GPU memory, CXL or HBM): mem250 hangs from cpu0, the nearest socket (distance 80; as near to cpu8: the lowest taken)",
            "NUMA node 251 has memory but no CPUs (GPU memory, CXL or HBM): mem251 hangs from cpu0, the nearest socket (distance 80; as near to cpu8: the lowest taken)",
            "NUMA node 252 has memory but no CPUs (GPU memory, CXL or HBM): mem252 hangs from cpu0, the nearest socket (distance 80; as near to cpu8: the lowest taken)",
            "NUMA node 253 has memory but no CPUs (GPU memory, CXL or HBM): mem253 hangs from cpu0, the nearest socket (distance 80; as near to cpu8: the lowest taken)",
            "NUMA node 254 has memory but no CPUs (GPU memory, CXL or HBM): mem254 hangs from cpu0, the nearest socket (distance 80; as near to cpu8: the lowest taken)",
            "NUMA node 255 has memory but no CPUs (GPU memory, CXL or HBM): mem255 hangs from cpu0, the nearest socket (distance 80; as near to cpu8: the lowest taken)",
            NO_RDMA,
        ],
    },
    Expected {
        // The Xeon Phi's scif0 registers as an RDMA device without ports: skipped.
        name: "32em64t-2n8c+1mic",
        sockets: &[(0, &[0]), (1, &[1])],
        links: &[(0, 1)],
        notes: &["scif0 in sys/class/infiniband has no ports folder (not an RDMA port device: a Xeon Phi's scif0 registers there): skipped"],
    },
];

#[test]
fn every_capture_is_read_as_the_machine_is() {
    let mut names: Vec<String> = fs::read_dir(captures())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".md") && !n.ends_with(".py"))
        .collect();
    names.sort();
    let mut expected: Vec<&str> = EXPECTED.iter().map(|e| e.name).collect();
    expected.sort();
    assert_eq!(
        names, expected,
        "every capture in testdata has its expectations"
    );

    for want in EXPECTED {
        let d = discover_capture(want.name);
        let sockets: Vec<(u32, Vec<u32>)> = d
            .sockets
            .sockets
            .iter()
            .map(|s| (s.package, s.memory_nodes.clone()))
            .collect();
        let want_sockets: Vec<(u32, Vec<u32>)> =
            want.sockets.iter().map(|(p, m)| (*p, m.to_vec())).collect();
        assert_eq!(sockets, want_sockets, "{}", want.name);
        assert_eq!(d.sockets.links, want.links, "{}", want.name);
        assert_eq!(d.notes, want.notes, "{}", want.name);
        assert!(!d.virtual_machine, "{}", want.name);
        assert!(d.host.is_none(), "{}: no RDMA port, no model", want.name);
    }
}

// ------------------------------------------------ a capture with an RNIC added to it

/// The 4-socket Xeon capture with a ConnectX-3 (hand-added: the capture has none) on
/// NUMA node 3, below its own root port, at 8 GT/s x8.
fn xeon_e7_with_an_rnic() -> TempTree {
    let tree = TempTree::copy_of(&capture_root("40intel64-4n10c"), "captures-e7");
    let port = "sys/devices/pci0000:80/0000:80:00.0";
    let nic = format!("{port}/0000:81:00.0");
    for (dir, class) in [(port, "0x060400"), (nic.as_str(), "0x020700")] {
        fs::create_dir_all(tree.path(dir)).unwrap();
        for (file, text) in [
            ("class", class),
            ("vendor", "0x15b3"),
            ("device", "0x1003"),
            ("numa_node", "3"),
            ("current_link_speed", "8.0 GT/s PCIe"),
            ("current_link_width", "8"),
        ] {
            fs::write(tree.path(&format!("{dir}/{file}")), format!("{text}\n")).unwrap();
        }
    }
    for addr in ["0000:80:00.0", "0000:81:00.0"] {
        let real = if addr == "0000:80:00.0" {
            port
        } else {
            nic.as_str()
        };
        std::os::unix::fs::symlink(
            format!("../../../{}", real.trim_start_matches("sys/")),
            tree.path(&format!("sys/bus/pci/devices/{addr}")),
        )
        .unwrap();
    }
    let ib = "sys/class/infiniband/mlx4_0";
    fs::create_dir_all(tree.path(&format!("{ib}/ports/1"))).unwrap();
    std::os::unix::fs::symlink(
        format!("../../../{}", nic.trim_start_matches("sys/")),
        tree.path(&format!("{ib}/device")),
    )
    .unwrap();
    for (file, text) in [
        ("state", "4: ACTIVE"),
        ("rate", "56 Gb/sec (4X FDR)"),
        ("link_layer", "InfiniBand"),
    ] {
        fs::write(
            tree.path(&format!("{ib}/ports/1/{file}")),
            format!("{text}\n"),
        )
        .unwrap();
    }
    tree
}

#[test]
fn on_a_four_socket_full_mesh_every_memory_node_is_one_socket_link_away() {
    let tree = xeon_e7_with_an_rnic();
    let d = discover(&SysRoot::new(&tree.0)).unwrap();
    let host = d.host.expect("mlx4_0 is ACTIVE");
    let rnic0 = ComponentId::from("rnic0");
    assert_eq!(
        host.links_to_cpu(&rnic0),
        [model::LinkId::from("rnic0--cpu3")]
    );
    for mem in ["mem0", "mem1", "mem2"] {
        let path = host.path(&rnic0, &mem.into()).unwrap();
        let inter: Vec<&str> = path
            .links
            .iter()
            .filter(|l| host.link(l).unwrap().kind == LinkKind::InterSocket)
            .map(|l| l.as_str())
            .collect();
        assert_eq!(inter.len(), 1, "{mem}: {:?}", path.links);
        assert!(path.capacity_known);
    }
    let inter_socket = host
        .links()
        .iter()
        .filter(|l| l.kind == LinkKind::InterSocket)
        .count();
    assert_eq!(inter_socket, 6);
    assert!(host.name.starts_with("4s-1rnic56-0gpu-"), "{}", host.name);
}

// -------------------------------------------------------- odd devices on a fixture

fn dgx_copy(label: &str) -> TempTree {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/hosts/dgx-a100");
    TempTree::copy_of(&fixture, label)
}

#[test]
fn an_rdma_device_without_ports_is_skipped_and_the_rest_discovered() {
    let tree = dgx_copy("captures-scif");
    fs::create_dir_all(tree.path("sys/class/infiniband/scif0")).unwrap();
    let d = discover(&SysRoot::new(&tree.0)).unwrap();
    assert!(d.notes.contains(&"scif0 in sys/class/infiniband has no ports folder (not an RDMA port device: a Xeon Phi's scif0 registers there): skipped".to_string()), "{:?}", d.notes);
    assert_eq!(d.host.unwrap().rnics().count(), 4);
}

#[test]
fn a_pci_function_without_vendor_is_skipped_and_the_rest_discovered() {
    let tree = dgx_copy("captures-vendor");
    // GPU 0 of the fixture.
    fs::remove_file(tree.path("sys/bus/pci/devices/0000:16:00.0/vendor")).unwrap();
    let d = discover(&SysRoot::new(&tree.0)).unwrap();
    assert!(
        d.notes.contains(
            &"PCI function 0000:16:00.0 has no `vendor` file: skipped (not looked at as a GPU)"
                .to_string()
        ),
        "{:?}",
        d.notes
    );
    assert_eq!(d.gpus.len(), 7);
    assert!(d.gpus.iter().all(|g| g.pci.to_string() != "0000:16:00.0"));
    assert_eq!(d.host.unwrap().rnics().count(), 4);
}

// --------------------------------------------------------------- a virtual machine

/// The fixture as a cloud VM shows it: the `hypervisor` CPU flag, every bridge at
/// 2.5 GT/s x1 (QEMU's emulated ports) and the RNICs at width 0.
#[test]
fn a_virtual_machines_bridges_are_an_unknown_capacity_not_a_2_gbps_cap() {
    let tree = dgx_copy("captures-vm");
    fs::write(
        tree.path("proc/cpuinfo"),
        "processor\t: 0\nflags\t\t: fpu vme de pse tsc msr hypervisor lahf_lm\n",
    )
    .unwrap();
    let devices = tree.path("sys/bus/pci/devices");
    for entry in fs::read_dir(&devices).unwrap() {
        let dir = entry.unwrap().path();
        let class = fs::read_to_string(dir.join("class")).unwrap();
        let (speed, width) = match class.trim() {
            c if c.starts_with("0x0604") => ("2.5 GT/s PCIe", "1"),
            c if c.starts_with("0x0207") || c.starts_with("0x0200") => ("Unknown", "0"),
            _ => continue,
        };
        if dir.join("current_link_speed").exists() {
            fs::write(dir.join("current_link_speed"), format!("{speed}\n")).unwrap();
            fs::write(dir.join("current_link_width"), format!("{width}\n")).unwrap();
        }
    }
    let d = discover(&SysRoot::new(&tree.0)).unwrap();
    assert!(d.virtual_machine);
    let host = d.host.unwrap();
    for l in host.links() {
        match l.kind {
            LinkKind::RootPort | LinkKind::SwitchUplink | LinkKind::RnicPcie => {
                assert!(!l.capacity_known, "{}", l.id)
            }
            _ => assert!(l.capacity_known, "{}", l.id),
        }
        assert!(
            l.capacity_gbps > 100.0,
            "{} capped at {}",
            l.id,
            l.capacity_gbps
        );
    }
    let rnic_paths: Vec<_> = host.paths().iter().collect();
    assert_eq!(rnic_paths.len(), 4 * (2 + 8));
    assert!(rnic_paths.iter().all(|p| !p.capacity_known));
    let vm_notes = d
        .notes
        .iter()
        .filter(|n| n.contains("this host is a virtual machine"))
        .count();
    // 12 switches and 4 RNIC links.
    assert_eq!(vm_notes, 16, "{:?}", d.notes);
}
