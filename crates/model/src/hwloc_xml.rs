//! hwloc's XML (`lstopo --of xml`, formats 1.x, 2.x and 3.x) as a host model.
//!
//! What is read, and how (the naming and the defaults are [`crate::host_tree`]'s):
//!
//! - Sockets are the `Package` objects (`Socket` in 1.x), `cpuN` by their `os_index`; memory
//!   nodes the `NUMANode` objects, `memN` by theirs, on the socket they sit in (or that sits
//!   in them, as in 1.x); a file without packages has one socket per NUMA node.
//! - The PCIe tree hangs from host bridges (`bridge_type="0-1"`) on the socket they sit in
//!   (the first socket when hwloc placed them above all packages). Below a host bridge a
//!   bridge is a root port; below a root port a bridge is a switch's upstream port and the
//!   bridges below that its downstream ports, where devices and the next switch hang, as
//!   the kernel lays out PCIe (discovery reads the same chains from sysfs). A virtual bridge
//!   (`ffff:ff:..`, as NCCL's files of Azure VMs write) is read as the PCIe switch it
//!   stands for, wherever it sits, as [`crate::nccl_topo`] reads one.
//! - A link's capacity is the `pci_link_speed` of its lower end, which hwloc gives in GB/s
//!   after encoding; `0` (hwloc could not read it) counts as not given.
//! - An RNIC is a PCI function with an OpenFabrics OS device (`mlx5_0`, which names it;
//!   one RNIC per such device, whatever the class: a ConnectX-2 is 0x0c06), else by class
//!   ([`crate::host_tree::rnic_by_class`]). A GPU is an NVIDIA display or 3D controller, or
//!   a function with a CUDA or NVML OS device.
//! - Sockets are joined by the `NUMALatency` distances (`distances2`) where the file has
//!   them. hwloc gives no port rates, memory or inter-socket bandwidths: those are the
//!   defaults.
//! - cpusets and nodesets are not read: where things hang is the tree's structure, so a
//!   mask cut short changes nothing.

use crate::host_tree::{self, error_at as error, Host, Node, Socket, MAX_DEPTH};
use crate::hostfile::ModelError;
use crate::topology::HostTopology;
use roxmltree::Node as X;

/// Parses an hwloc XML topology; errors name `source_name`.
pub fn parse(source_name: &str, text: &str) -> Result<HostTopology, ModelError> {
    let prepared = host_tree::xml_text(text);
    let doc = host_tree::parse_xml(source_name, &prepared)?;
    read(source_name, &doc)?.build(source_name)
}

fn is_object(n: X, kind: &str) -> bool {
    n.has_tag_name("object") && n.attribute("type") == Some(kind)
}

fn is_package(n: X) -> bool {
    is_object(n, "Package") || is_object(n, "Socket")
}

fn os_index(n: X) -> Option<u32> {
    n.attribute("os_index")?.trim().parse().ok()
}

/// hwloc 3.x writes OS device types as bit sets, 1.x and 2.x as an enumeration.
#[derive(Clone, Copy)]
struct Version {
    bit_set_osdev_types: bool,
}

impl Version {
    fn openfabrics(self, osdev: X) -> bool {
        let Some(t) = osdev.attribute("osdev_type").and_then(host_tree::number) else {
            return osdev.attribute("subtype") == Some("OpenFabrics");
        };
        if self.bit_set_osdev_types {
            t & 32 != 0
        } else {
            t == 3
        }
    }
}

fn read(source_name: &str, doc: &roxmltree::Document) -> Result<Host, ModelError> {
    let root = doc.root_element();
    if !root.has_tag_name("topology") {
        return Err(error(
            source_name,
            root,
            format!(
                "the first element is <{}>, not hwloc's <topology>",
                root.tag_name().name()
            ),
        ));
    }
    let major = root
        .attribute("version")
        .and_then(|v| v.split('.').next()?.trim().parse::<u32>().ok())
        .unwrap_or(1);
    let version = Version {
        bit_set_osdev_types: major >= 3,
    };
    let objects: Vec<X> = root
        .descendants()
        .filter(|n| n.has_tag_name("object"))
        .collect();
    let packages: Vec<X> = objects.iter().copied().filter(|n| is_package(*n)).collect();
    let numa: Vec<X> = objects
        .iter()
        .copied()
        .filter(|n| is_object(*n, "NUMANode"))
        .collect();

    let mut host = Host {
        name: host_tree::model_name(source_name),
        format: "hwloc XML",
        ..Host::default()
    };
    // Sockets, with the object that stands for each.
    let socket_objects: Vec<X> = if !packages.is_empty() {
        packages.clone()
    } else {
        numa.clone()
    };
    for (i, s) in socket_objects.iter().enumerate() {
        let id = os_index(*s).unwrap_or(i as u32);
        host.sockets.push(Socket {
            id,
            ..Socket::default()
        });
    }
    if host.sockets.is_empty() {
        host.sockets.push(Socket::default());
    }
    let position = |o: X| socket_objects.iter().position(|s| *s == o);
    // The socket an object is in, or (1.x nests packages in NUMA nodes) the one in it.
    let own = |o: X| {
        o.ancestors()
            .find_map(position)
            .or_else(|| o.descendants().find_map(position))
    };
    // An object's socket; an I/O object in a 1.x NUMA node is on that node's socket.
    let socket_of = |n: X| -> usize {
        own(n)
            .or_else(|| {
                n.ancestors()
                    .find(|a| is_object(*a, "NUMANode"))
                    .and_then(own)
            })
            .unwrap_or(0)
    };
    let mut node_socket = Vec::new();
    for (i, n) in numa.iter().enumerate() {
        let id = os_index(*n).unwrap_or(i as u32);
        let s = socket_of(*n);
        host.sockets[s].memory.push(id);
        node_socket.push((id, s));
    }
    if numa.is_empty() {
        for s in &mut host.sockets {
            s.memory.push(s.id);
        }
    }

    // PCIe trees: bridges and devices whose parent is neither.
    for io in objects.iter().copied().filter(|n| is_io(*n)) {
        let parent_is_io = io.parent_element().is_some_and(is_io);
        if parent_is_io {
            continue;
        }
        let s = socket_of(io);
        // Without a host bridge above it, an object is on a root bus.
        let below = if is_object(io, "PCIDev") {
            device(version, io)
        } else if is_virtual(io) {
            vec![virtual_switch(source_name, version, io, 0)?]
        } else if is_host_bridge(io) {
            walk(source_name, version, io, Role::Host, 0)?
        } else {
            walk(source_name, version, io, Role::RootPort, 0)?
        };
        host.sockets[s].below.extend(below);
    }
    host.distances = distances(root, &node_socket, host.sockets.len());
    Ok(host)
}

fn is_io(n: X) -> bool {
    is_object(n, "Bridge") || is_object(n, "PCIDev")
}

fn is_host_bridge(n: X) -> bool {
    is_object(n, "Bridge")
        && n.attribute("bridge_type")
            .is_some_and(|t| t.starts_with("0-"))
}

/// What the bridge whose children are being read is.
#[derive(Clone, Copy, PartialEq)]
enum Role {
    /// A host bridge (root complex).
    Host,
    /// A root port.
    RootPort,
    /// A switch's upstream port.
    SwitchUp,
    /// A switch's downstream port.
    SwitchDown,
}

/// The switches and devices that hang from `parent`'s socket or switch, reading the PCI
/// objects below `parent`, which plays `role`.
fn walk(
    source_name: &str,
    version: Version,
    parent: X,
    role: Role,
    depth: usize,
) -> Result<Vec<Node>, ModelError> {
    if depth > MAX_DEPTH {
        return Err(error(
            source_name,
            parent,
            format!("PCI bridges nest deeper than {MAX_DEPTH} levels"),
        ));
    }
    let mut out = Vec::new();
    for c in parent.children().filter(|c| is_io(*c)) {
        if is_object(c, "PCIDev") {
            out.extend(device(version, c));
            continue;
        }
        if is_virtual(c) {
            out.push(virtual_switch(source_name, version, c, depth + 1)?);
            continue;
        }
        match role {
            // A host bridge right below this one: its children are on a root bus too.
            Role::Host if is_host_bridge(c) => {
                out.extend(walk(source_name, version, c, Role::Host, depth + 1)?)
            }
            Role::Host => out.extend(walk(source_name, version, c, Role::RootPort, depth + 1)?),
            Role::RootPort | Role::SwitchDown => out.push(Node::Switch {
                link: link_gbps(c),
                below: walk(source_name, version, c, Role::SwitchUp, depth + 1)?,
            }),
            Role::SwitchUp => {
                out.extend(walk(source_name, version, c, Role::SwitchDown, depth + 1)?)
            }
        }
    }
    Ok(out)
}

/// A bridge at a virtual address (`ffff:ff:01.0`): what a hypervisor shows of a PCIe switch
/// it hides.
fn is_virtual(n: X) -> bool {
    is_object(n, "Bridge")
        && n.attribute("pci_busid")
            .is_some_and(host_tree::is_virtual_busid)
}

/// A virtual bridge is the switch it stands for, whatever its place: the devices below it
/// share that switch (hanging them from the socket, as a root port's, would part a GPU from
/// the NIC it shares the switch with), and a bridge below it is a further switch.
fn virtual_switch(
    source_name: &str,
    version: Version,
    bridge: X,
    depth: usize,
) -> Result<Node, ModelError> {
    Ok(Node::Switch {
        link: link_gbps(bridge),
        below: walk(source_name, version, bridge, Role::SwitchDown, depth + 1)?,
    })
}

/// `pci_link_speed` is GB/s; 0 means hwloc could not read it.
fn link_gbps(n: X) -> Option<f64> {
    let gbytes: f64 = n.attribute("pci_link_speed")?.trim().parse().ok()?;
    (gbytes.is_finite() && gbytes > 0.0).then_some(gbytes * 8.0)
}

/// `pci_type="0302 [10de:1db8] [10de:131d] a1 00"`: the class and the vendor.
fn class_and_vendor(n: X) -> Option<(u16, Option<u16>)> {
    let t = n.attribute("pci_type")?.trim();
    let class = u16::from_str_radix(t.get(..4)?, 16).ok()?;
    let vendor = t
        .split_once('[')
        .and_then(|(_, rest)| u16::from_str_radix(rest.get(..4)?, 16).ok());
    Some((class, vendor))
}

/// The GPU or the RNICs a PCI function is, if any.
fn device(version: Version, n: X) -> Vec<Node> {
    let busid = n.attribute("pci_busid").unwrap_or("?").to_ascii_lowercase();
    let link = link_gbps(n);
    let osdevs: Vec<X> = n.children().filter(|c| is_object(*c, "OSDev")).collect();
    let fabrics: Vec<&str> = osdevs
        .iter()
        .filter(|o| version.openfabrics(**o))
        .filter_map(|o| o.attribute("name"))
        .collect();
    let rnic = |name: Option<&str>| Node::Rnic {
        busid: Some(busid.clone()),
        name: name.map(str::to_string),
        rate_gbps: None,
        link,
    };
    if !fabrics.is_empty() {
        return fabrics.into_iter().map(|f| rnic(Some(f))).collect();
    }
    let cuda = osdevs.iter().any(|o| {
        let subtype = o.attribute("subtype").unwrap_or("");
        let name = o.attribute("name").unwrap_or("");
        subtype.eq_ignore_ascii_case("CUDA")
            || subtype.eq_ignore_ascii_case("NVML")
            || name.starts_with("cuda")
            || name.starts_with("nvml")
    });
    let (class, vendor) = class_and_vendor(n).unwrap_or((0, None));
    if cuda || host_tree::gpu_by_class(class, vendor) {
        return vec![Node::Gpu {
            busid: busid.clone(),
            link,
        }];
    }
    if host_tree::rnic_by_class(class, vendor) {
        return vec![rnic(None)];
    }
    Vec::new()
}

/// The distance between each two sockets: the smallest between a NUMA node of one and a
/// node of the other, from the first `distances2` over NUMA nodes. `None` without one, or
/// when a socket's nodes are not all in it.
fn distances(root: X, node_socket: &[(u32, usize)], sockets: usize) -> Option<Vec<Vec<u64>>> {
    let d = root
        .children()
        .find(|c| c.has_tag_name("distances2") && c.attribute("type") == Some("NUMANode"))?;
    let words = |tag: &str| -> Vec<u64> {
        d.children()
            .filter(|c| c.has_tag_name(tag))
            .flat_map(|c| c.text().unwrap_or("").split_whitespace())
            .filter_map(host_tree::number)
            .collect()
    };
    let indexes = words("indexes");
    let values = words("u64values");
    let n = indexes.len();
    if n == 0 || values.len() != n.checked_mul(n)? {
        return None;
    }
    let at = |node: u32| indexes.iter().position(|&i| i == u64::from(node));
    let mut out = vec![vec![u64::MAX; sockets]; sockets];
    for &(a, sa) in node_socket {
        for &(b, sb) in node_socket {
            let v = values[at(a)? * n + at(b)?];
            out[sa][sb] = out[sa][sb].min(v);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpus(nodes: &[Node]) -> usize {
        nodes
            .iter()
            .map(|n| match n {
                Node::Switch { below, .. } => gpus(below),
                Node::Gpu { .. } => 1,
                Node::Rnic { .. } => 0,
            })
            .sum()
    }

    /// The DGX-2 capture has no network device, so it is refused as a model; its tree is
    /// still read: two PLX levels above each pair of V100s.
    #[test]
    fn dgx2_tree_has_two_switch_levels_above_each_gpu_pair() {
        let text = host_tree::xml_text(include_str!("../testdata/hosts/hwloc-nvidia-dgx2.xml"));
        let doc = host_tree::parse_xml("dgx2.xml", &text).unwrap();
        let host = read("dgx2.xml", &doc).unwrap();
        assert_eq!(host.sockets.len(), 2);
        assert_eq!(
            host.sockets.iter().map(|s| gpus(&s.below)).sum::<usize>(),
            16
        );
        let Node::Switch { below: upper, .. } = &host.sockets[0].below[0] else {
            panic!("a switch first: {:?}", host.sockets[0].below[0]);
        };
        let Node::Switch { below: leaf, link } = &upper[0] else {
            panic!("a second level: {upper:?}");
        };
        // 15.753846 GB/s, PCIe Gen3 x16.
        assert_eq!(*link, Some(15.753846 * 8.0));
        assert!(
            matches!(leaf[..], [Node::Gpu { .. }, Node::Gpu { .. }]),
            "{leaf:?}"
        );
        assert_eq!(host.distances, Some(vec![vec![10, 21], vec![21, 10]]));
    }

    /// hwloc 1.x nests packages (`Socket`) in NUMA nodes and hangs I/O from the node.
    #[test]
    fn hwloc1_io_in_a_numa_node_is_on_that_nodes_socket() {
        let text = r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc.dtd">
<topology>
  <object type="Machine" os_index="0">
    <object type="NUMANode" os_index="0"><object type="Socket" os_index="0"/></object>
    <object type="NUMANode" os_index="1">
      <object type="Socket" os_index="1"/>
      <object type="Bridge" bridge_type="0-1" depth="0">
        <object type="PCIDev" pci_busid="0000:81:00.0" pci_type="0207 [15b3:1003] [15b3:0050] 00 00">
          <object type="OSDev" name="mlx4_0" osdev_type="3"/>
        </object>
      </object>
    </object>
  </object>
</topology>"#;
        let doc = host_tree::parse_xml("v1.xml", text).unwrap();
        let host = read("v1.xml", &doc).unwrap();
        assert_eq!(host.sockets[1].memory, [1]);
        assert!(host.sockets[0].below.is_empty());
        assert!(
            matches!(&host.sockets[1].below[..], [Node::Rnic { name: Some(n), .. }] if n == "mlx4_0")
        );
    }
}
