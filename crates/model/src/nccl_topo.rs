//! NCCL's topology XML (`NCCL_TOPO_DUMP_FILE`, and the `NCCL_TOPO_FILE`s cloud images ship)
//! as a host model.
//!
//! What is read, and how (the naming and the defaults are [`crate::host_tree`]'s):
//!
//! - Each `<cpu>` is a NUMA node and NCCL knows no packages, so each is a socket of its own
//!   with one memory node: `cpuN` and `memN`, N its `numaid` (its place in the file where
//!   the numaid is missing or -1, as in a virtual machine). Sockets are all joined to each
//!   other, as NCCL joins every pair of `<cpu>` with a `SYS` link.
//! - NCCL writes a PCIe switch as one `<pci>` of bridge class (0x0604), its upstream port,
//!   and leaves out root ports and downstream ports: each such `<pci>` is a switch, and what
//!   sits right in a `<cpu>` hangs from its root complex. A virtual bridge (`ffff:ff:01.0`,
//!   which Azure's images write over the GPUs and NICs that share a PCIe switch the VM cannot
//!   see) is read as that switch, as NCCL reads it: its GPUs and NICs share it.
//! - A link's capacity is `link_speed` (GT/s) times `link_width` of its lower end; a speed
//!   NCCL could not read (`""`, `Unknown`) or a width of 0 counts as not given.
//! - An RNIC is each `<net>` of a `<nic>` (its `name` names it, its `speed` in Mb/s is the
//!   line rate), else a `<pci>` of RNIC class ([`crate::host_tree::rnic_by_class`]); a GPU
//!   is a `<pci>` holding a `<gpu>`, else of GPU class ([`crate::host_tree::gpu_by_class`]).
//! - A device reporting a link width of 0 is passed through to a virtual machine (bare
//!   metal never trains a link to width 0): the file's bridges are then the hypervisor's,
//!   and their links (2.5 GT/s x1 on QEMU, whatever runs below) have an unknown capacity.
//! - NVLink, C2C and the `<cpu>` affinity masks are not read: they are not on a loopback
//!   path, and a mask cut short changes nothing.

use crate::host_tree::{self, error_at as error, Host, Node, Socket, MAX_DEPTH};
use crate::hostfile::{pcie_capacity_gbps, ModelError};
use crate::topology::HostTopology;
use roxmltree::Node as X;

/// Parses an NCCL topology file; errors name `source_name`.
pub fn parse(source_name: &str, text: &str) -> Result<HostTopology, ModelError> {
    let prepared = host_tree::xml_text(text);
    let doc = host_tree::parse_xml(source_name, &prepared)?;
    read(source_name, &doc)?.build(source_name)
}

fn read(source_name: &str, doc: &roxmltree::Document) -> Result<Host, ModelError> {
    let root = doc.root_element();
    if !root.has_tag_name("system") {
        return Err(error(
            source_name,
            root,
            format!(
                "the first element is <{}>, not NCCL's <system>",
                root.tag_name().name()
            ),
        ));
    }
    let mut host = Host {
        name: host_tree::model_name(source_name),
        format: "NCCL topology",
        ..Host::default()
    };
    for (i, cpu) in root
        .children()
        .filter(|c| c.has_tag_name("cpu"))
        .enumerate()
    {
        let id = cpu
            .attribute("numaid")
            .and_then(|n| n.trim().parse::<u32>().ok())
            .unwrap_or(i as u32);
        host.sockets.push(Socket {
            id,
            memory: vec![id],
            below: walk(source_name, cpu, 0)?,
        });
    }
    if host.sockets.is_empty() {
        return Err(error(source_name, root, "no <cpu> in <system>"));
    }
    host.virtual_machine = root.descendants().any(|n| {
        n.has_tag_name("pci")
            && class_and_vendor(n).0 != 0x0604
            && n.attribute("link_width").map(str::trim) == Some("0")
    });
    Ok(host)
}

/// The switches and devices below `parent` (a `<cpu>` or a switch's `<pci>`).
fn walk(source_name: &str, parent: X, depth: usize) -> Result<Vec<Node>, ModelError> {
    if depth > MAX_DEPTH {
        return Err(error(
            source_name,
            parent,
            format!("<pci> elements nest deeper than {MAX_DEPTH} levels"),
        ));
    }
    let mut out = Vec::new();
    for c in parent.children().filter(|c| c.is_element()) {
        match c.tag_name().name() {
            "pci" => {
                let (class, vendor) = class_and_vendor(c);
                let busid = c.attribute("busid").unwrap_or("?").to_ascii_lowercase();
                if class == 0x0604 {
                    // A virtual bridge too: it stands for the switch the hypervisor hides.
                    out.push(Node::Switch {
                        link: link_gbps(c),
                        below: walk(source_name, c, depth + 1)?,
                    });
                } else {
                    out.extend(device(c, busid, class, vendor));
                }
            }
            "nic" => out.extend(nets(c, None, None)),
            _ => {}
        }
    }
    Ok(out)
}

/// `class="0x030200"` is class 0x0302 (the last byte is the programming interface).
fn class_and_vendor(n: X) -> (u16, Option<u16>) {
    let class = n
        .attribute("class")
        .and_then(host_tree::number)
        .map_or(0, |c| (c >> 8) as u16);
    let vendor = n
        .attribute("vendor")
        .and_then(host_tree::number)
        .and_then(|v| u16::try_from(v).ok())
        .filter(|v| *v != 0);
    (class, vendor)
}

/// `link_speed="32.0 GT/s PCIe"` and `link_width="16"`, in Gb/s after encoding.
fn link_gbps(n: X) -> Option<f64> {
    let speed = n.attribute("link_speed")?;
    let gts: f64 = speed.split_whitespace().next()?.parse().ok()?;
    let width = n.attribute("link_width")?.trim();
    // Transfer rate of each PCIe generation, GT/s.
    const GENERATIONS: [(f64, u8); 6] = [
        (2.5, 1),
        (5.0, 2),
        (8.0, 3),
        (16.0, 4),
        (32.0, 5),
        (64.0, 6),
    ];
    let gen = GENERATIONS.iter().find(|(rate, _)| *rate == gts)?.1;
    pcie_capacity_gbps(&format!("gen{gen}x{width}")).ok()
}

/// The GPU or the RNICs a non-bridge `<pci>` is, if any.
fn device(n: X, busid: String, class: u16, vendor: Option<u16>) -> Vec<Node> {
    let link = link_gbps(n);
    if let Some(nic) = n.children().find(|c| c.has_tag_name("nic")) {
        return nets(nic, Some(&busid), link);
    }
    if n.children().any(|c| c.has_tag_name("gpu")) || host_tree::gpu_by_class(class, vendor) {
        return vec![Node::Gpu { busid, link }];
    }
    if host_tree::rnic_by_class(class, vendor) {
        return vec![Node::Rnic {
            busid: Some(busid),
            name: None,
            rate_gbps: None,
            link,
        }];
    }
    Vec::new()
}

/// One RNIC per `<net>` of a `<nic>`: `speed` is Mb/s.
fn nets(nic: X, busid: Option<&str>, link: Option<f64>) -> Vec<Node> {
    nic.children()
        .filter(|c| c.has_tag_name("net"))
        .map(|net| Node::Rnic {
            busid: busid.map(str::to_string),
            name: net.attribute("name").map(str::to_string),
            rate_gbps: net
                .attribute("speed")
                .and_then(|s| s.trim().parse::<f64>().ok())
                .map(|mbps| mbps / 1000.0),
            link,
        })
        .collect()
}
