//! The host as the topology files of other tools describe it (hwloc's `lstopo --of xml`,
//! NCCL's `NCCL_TOPO_DUMP_FILE`), and how it becomes a [`HostTopology`].
//!
//! Both formats are a tree: sockets (hwloc packages, NCCL `<cpu>`s) with their memory nodes,
//! and below each socket its PCIe switches and devices. Each reader ([`crate::hwloc_xml`],
//! [`crate::nccl_topo`]) reduces its file to a [`Host`], and [`Host::build`] names and links
//! the components the way discovery of a real host does (`rdma::sysfs::topology`), so a model
//! read from a file and one discovered on the same machine use the same ids:
//!
//! - `cpuN` per socket and `memN` per NUMA node (N as the file numbers them), `swN` per PCIe
//!   switch in file order, `gpuN` by PCI address, `rnicN` by RDMA device name (`mlx5_2`
//!   before `mlx5_10`), then by PCI address.
//! - What neither format says takes the TOML host file's defaults
//!   ([`crate::hostfile::defaults`]): hop latencies, access times, RNIC processing time and
//!   windows, and the capacities of memory channels
//!   ([`defaults::MEMORY_CHANNEL_GBPS`]) and inter-socket links
//!   ([`defaults::INTER_SOCKET_GBPS`]).
//! - A PCIe link the file gives no speed for is taken as Gen4 x16, as discovery does on bare
//!   metal ([`ASSUMED_PCIE`]).
//! - An RNIC port rate the file does not give (hwloc never does; NCCL gives `<net speed>`)
//!   is taken as the capacity of the RNIC's own PCIe link: the most the RNIC can move, so a
//!   healthy model reaches it. An RNIC without a PCI function (an NCCL `<nic>` right under a
//!   `<cpu>`) has a link of its line rate, as discovery models a software RNIC.
//! - Sockets are joined by the distances between their NUMA nodes where the file has them
//!   (hwloc), as discovery joins them: the nearest pairs directly, and the next distance
//!   joins groups still apart; otherwise every pair of sockets is joined (NCCL's own model
//!   joins every pair of `<cpu>` with a `SYS` link).

use crate::hostfile::{check_class_counts, defaults, pcie_capacity_gbps, ModelError};
use crate::ids::{natural_order, ComponentId};
use crate::limits;
use crate::topology::{Component, ComponentKind, HostTopology, Link, LinkKind, Rnic};

/// The PCIe link assumed where a file gives none.
pub const ASSUMED_PCIE: &str = "gen4x16";

/// How deep the PCIe tree of a file may nest: real trees are a root port and two or three
/// switch levels (each level two bridges); far deeper is a malformed file, and the readers
/// walk the tree recursively.
pub(crate) const MAX_DEPTH: usize = 64;

/// A host read from a file, before it is named and linked.
#[derive(Debug, Default)]
pub(crate) struct Host {
    /// The model's name.
    pub name: String,
    /// What the file is (`hwloc XML`), for the description.
    pub format: &'static str,
    /// The sockets, in file order.
    pub sockets: Vec<Socket>,
    /// Distance between each two sockets (by index in `sockets`), where the file has one.
    pub distances: Option<Vec<Vec<u64>>>,
    /// The file was written in a virtual machine: its bridges are the hypervisor's, whose
    /// link speeds say nothing of the hardware, so switch links, and device links the file
    /// gives no speed for, have an unknown capacity ([`Link::capacity_known`]), as discovery
    /// does in a virtual machine.
    pub virtual_machine: bool,
}

/// One CPU socket and what hangs from it.
#[derive(Debug, Default)]
pub(crate) struct Socket {
    /// N of `cpuN`.
    pub id: u32,
    /// N of each `memN` on this socket.
    pub memory: Vec<u32>,
    /// Switches and devices right below the socket's root complex.
    pub below: Vec<Node>,
}

/// A PCIe switch or a device.
#[derive(Debug)]
pub(crate) enum Node {
    /// A PCIe switch; `link` is its upstream link, Gb/s.
    Switch { link: Option<f64>, below: Vec<Node> },
    /// A GPU at a PCI address, with its link in Gb/s.
    Gpu { busid: String, link: Option<f64> },
    /// An RNIC port.
    Rnic {
        /// Its PCI function; `None` for a NIC the file places on no PCI function.
        busid: Option<String>,
        /// The RDMA device name (`mlx5_0`), where the file gives one.
        name: Option<String>,
        /// The port rate, Gb/s, where the file gives one.
        rate_gbps: Option<f64>,
        /// Its PCIe link, Gb/s.
        link: Option<f64>,
    },
}

/// Where a component hangs: a socket (index) or a switch (index).
#[derive(Debug, Clone, Copy)]
enum Up {
    Socket(usize),
    Switch(usize),
}

struct Flat<'a> {
    switches: Vec<(Up, Option<f64>)>,
    gpus: Vec<(&'a str, Up, Option<f64>)>,
    rnics: Vec<(&'a Node, Up)>,
}

impl<'a> Flat<'a> {
    fn add(&mut self, nodes: &'a [Node], up: Up) {
        for n in nodes {
            match n {
                Node::Switch { link, below } => {
                    self.switches.push((up, *link));
                    let me = Up::Switch(self.switches.len() - 1);
                    self.add(below, me);
                }
                Node::Gpu { busid, link } => self.gpus.push((busid, up, *link)),
                Node::Rnic { .. } => self.rnics.push((n, up)),
            }
        }
    }
}

/// RNICs in the order discovery names them: named ones first, in natural order of their
/// device names (`mlx5_2` before `mlx5_10`), then by PCI function.
fn rnic_order(a: &Node, b: &Node) -> std::cmp::Ordering {
    let (
        Node::Rnic {
            name: na,
            busid: ba,
            ..
        },
        Node::Rnic {
            name: nb,
            busid: bb,
            ..
        },
    ) = (a, b)
    else {
        unreachable!("only RNICs are collected");
    };
    na.is_none()
        .cmp(&nb.is_none())
        .then_with(|| match (na, nb) {
            (Some(x), Some(y)) => natural_order(x, y),
            _ => std::cmp::Ordering::Equal,
        })
        .then_with(|| ba.cmp(bb))
}

impl Host {
    /// Names, links and checks the host; errors name `source_name`.
    pub(crate) fn build(self, source_name: &str) -> Result<HostTopology, ModelError> {
        let err = |field: &str, reason: String| ModelError {
            source_name: source_name.to_string(),
            field: field.to_string(),
            reason,
        };
        let mut flat = Flat {
            switches: Vec::new(),
            gpus: Vec::new(),
            rnics: Vec::new(),
        };
        for (i, s) in self.sockets.iter().enumerate() {
            flat.add(&s.below, Up::Socket(i));
        }
        flat.gpus.sort_by(|a, b| a.0.cmp(b.0));
        flat.rnics.sort_by(|(a, _), (b, _)| rnic_order(a, b));

        let cpu = |i: usize| ComponentId::new(format!("cpu{}", self.sockets[i].id));
        let switch = |i: usize| ComponentId::new(format!("sw{i}"));
        let id_of = |up: Up| match up {
            Up::Socket(i) => cpu(i),
            Up::Switch(i) => switch(i),
        };
        let assumed = pcie_capacity_gbps(ASSUMED_PCIE).expect("a valid PCIe link");
        let vm = self.virtual_machine;
        // A link's capacity, and whether it is known.
        let capacity = |field: &str, link: Option<f64>| -> Result<(f64, bool), ModelError> {
            match link {
                Some(gbps) if gbps.is_finite() && gbps > 0.0 => {
                    limits::at_most("PCIe link Gb/s", gbps, limits::LINK_GBPS)
                        .map(|gbps| (gbps, true))
                        .map_err(|e| err(field, e.to_string()))
                }
                _ => Ok((assumed, !vm)),
            }
        };

        let mut components = Vec::new();
        let mut links = Vec::new();
        let mut push = |id: ComponentId, kind: ComponentKind| {
            components.push(Component {
                socket: id.clone(),
                id,
                kind,
            })
        };
        for i in 0..self.sockets.len() {
            let p2p_forward_ns = defaults::CPU_P2P_FORWARD_NS;
            push(cpu(i), ComponentKind::Cpu { p2p_forward_ns });
        }
        for (i, s) in self.sockets.iter().enumerate() {
            for n in &s.memory {
                let mem = ComponentId::new(format!("mem{n}"));
                let access_ns = defaults::MEMORY_ACCESS_NS;
                push(mem.clone(), ComponentKind::Memory { access_ns });
                links.push(Link::with_default_latency(
                    &mem,
                    &cpu(i),
                    LinkKind::MemoryChannel,
                    defaults::MEMORY_CHANNEL_GBPS,
                ));
            }
        }
        for (a, b) in socket_links(self.sockets.len(), self.distances.as_deref()) {
            let kind = LinkKind::InterSocket;
            links.push(Link::with_default_latency(
                &cpu(a),
                &cpu(b),
                kind,
                defaults::INTER_SOCKET_GBPS,
            ));
        }
        for (i, (up, gbps)) in flat.switches.iter().enumerate() {
            let kind = match up {
                Up::Socket(_) => LinkKind::RootPort,
                Up::Switch(_) => LinkKind::SwitchUplink,
            };
            let id = switch(i);
            // A virtual machine's bridge link is the hypervisor's: a placeholder.
            let (gbps, known) = match vm {
                true => (assumed, false),
                false => capacity(&format!("switch {id}"), *gbps)?,
            };
            push(id.clone(), ComponentKind::PcieSwitch);
            let mut l = Link::with_default_latency(&id, &id_of(*up), kind, gbps);
            l.capacity_known = known;
            links.push(l);
        }
        for (i, (busid, up, gbps)) in flat.gpus.iter().enumerate() {
            let id = ComponentId::new(format!("gpu{i}"));
            let (gbps, known) = capacity(&format!("gpu {busid}"), *gbps)?;
            let access_ns = defaults::GPU_ACCESS_NS;
            push(id.clone(), ComponentKind::Gpu { access_ns });
            let mut l = Link::with_default_latency(&id, &id_of(*up), LinkKind::GpuPcie, gbps);
            l.capacity_known = known;
            links.push(l);
        }
        let mut names = Vec::new();
        for (i, (node, up)) in flat.rnics.iter().enumerate() {
            let Node::Rnic {
                busid,
                name,
                rate_gbps,
                link: gbps,
            } = node
            else {
                unreachable!("only RNICs are collected")
            };
            let id = ComponentId::new(format!("rnic{i}"));
            let who = name.as_deref().or(busid.as_deref()).unwrap_or("?");
            let field = format!("rnic {who}");
            let rate = match rate_gbps {
                Some(r) if r.is_finite() && *r > 0.0 => Some(
                    limits::at_most("line rate Gb/s", *r, limits::LINK_GBPS)
                        .map_err(|e| err(&field, e.to_string()))?,
                ),
                _ => None,
            };
            let (line_rate_gbps, (pcie_gbps, known)) = match (busid, rate) {
                (Some(_), Some(r)) => (r, capacity(&field, *gbps)?),
                (Some(_), None) => {
                    let c = capacity(&field, *gbps)?;
                    (c.0, c)
                }
                (None, Some(r)) => (r, (r, true)),
                (None, None) => (assumed, (assumed, true)),
            };
            push(
                id.clone(),
                ComponentKind::Rnic(Rnic {
                    line_rate_gbps,
                    proc_ns: defaults::RNIC_PROC_NS,
                    read_window_bytes: defaults::RNIC_READ_WINDOW_BYTES,
                    qp_window_bytes: defaults::RNIC_QP_WINDOW_BYTES,
                }),
            );
            let mut l = Link::with_default_latency(&id, &id_of(*up), LinkKind::RnicPcie, pcie_gbps);
            l.capacity_known = known;
            links.push(l);
            names.push(format!("{id} {who}"));
        }
        if flat.rnics.is_empty() {
            return Err(err(
                "rnic",
                format!(
                    "the {} names no RDMA NIC (an OpenFabrics device such as mlx5_0, an NCCL <nic>, or a PCI function of InfiniBand class 0x0207 or of network class from vendor 0x15b3), and a host model needs one to probe from",
                    self.format
                ),
            ));
        }
        check_class_counts(&components).map_err(|e| err("component", e.to_string()))?;
        limits::at_most("links", links.len(), limits::LINKS)
            .map_err(|e| err("link", e.to_string()))?;
        let description = format!(
            "{}: {} sockets, {} PCIe switches, {} GPUs, {} RNICs ({})",
            self.format,
            self.sockets.len(),
            flat.switches.len(),
            flat.gpus.len(),
            flat.rnics.len(),
            names.join(", ")
        );
        HostTopology::new(self.name, description, components, links)
            .map_err(|e| err(&e.field, e.reason))
    }
}

/// The inter-socket links of `n` sockets as (lower, higher) index pairs: without distances
/// every pair (as NCCL joins them); with them, [`crate::sockets::joined_by_distance`].
fn socket_links(n: usize, distances: Option<&[Vec<u64>]>) -> Vec<(usize, usize)> {
    match distances {
        Some(d) => crate::sockets::joined_by_distance(n, |a, b| Some(d[a][b])),
        None => (0..n)
            .flat_map(|a| (a + 1..n).map(move |b| (a, b)))
            .collect(),
    }
}

/// The tree of an XML file: a leading byte-order mark and blank lines are skipped (an XML
/// declaration must open the document, yet files are pasted with blank lines above it), the
/// declaration is blanked in place so that the parser's line numbers stay the file's, and
/// a DTD line (hwloc writes `<!DOCTYPE topology SYSTEM "hwloc2.dtd">`) is allowed.
pub(crate) fn xml_text(text: &str) -> String {
    let body = text.trim_start_matches('\u{feff}');
    let lead = body.len() - body.trim_start().len();
    let mut out = body.to_string();
    if body[lead..].starts_with("<?xml") {
        if let Some(end) = body[lead..].find("?>") {
            let blank: String = body[lead..lead + end + 2]
                .chars()
                .map(|c| if c == '\n' { '\n' } else { ' ' })
                .collect();
            out.replace_range(lead..lead + end + 2, &blank);
        }
    }
    out
}

/// Parses XML text prepared by [`xml_text`]; an error names the file, and the line in it.
pub(crate) fn parse_xml<'a>(
    source_name: &str,
    text: &'a str,
) -> Result<roxmltree::Document<'a>, ModelError> {
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        // Far above any real topology (hwloc's capture of a 192-core machine is ~5,000
        // nodes); bounds the memory a hostile file can make the parser take.
        nodes_limit: 1_000_000,
        ..roxmltree::ParsingOptions::default()
    };
    roxmltree::Document::parse_with_options(text, options).map_err(|e| ModelError {
        source_name: source_name.to_string(),
        field: format!("line {}", e.pos().row),
        reason: e.to_string(),
    })
}

/// The model is named after its file (`ndv4-topo.xml` is `ndv4-topo`).
pub(crate) fn model_name(source_name: &str) -> String {
    let file = source_name
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(source_name);
    file.strip_suffix(".xml").unwrap_or(file).to_string()
}

/// The text of an attribute as a number: decimal, or hexadecimal after `0x`.
pub(crate) fn number(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Whether a PCI address is one of the virtual bridges cloud images write (`ffff:ff:01.0`):
/// no device of the VM, but the grouping of the GPUs and NICs that share a PCIe switch the
/// VM cannot see, so the readers take it for that switch.
pub(crate) fn is_virtual_busid(busid: &str) -> bool {
    busid.split(':').next().is_some_and(|domain| {
        !domain.is_empty() && domain.chars().all(|c| c.eq_ignore_ascii_case(&'f'))
    })
}

/// A PCI function is an RNIC by class alone (when the file names no RDMA device on it):
/// InfiniBand (0x0207) from any vendor; any network class (0x02xx) and ConnectX-8's 0x0801
/// (GB300, behind its own PCIe switch) from Mellanox/NVIDIA networking (vendor 0x15b3).
pub fn rnic_by_class(class: u16, vendor: Option<u16>) -> bool {
    const MELLANOX: u16 = 0x15b3;
    class == 0x0207 || (vendor == Some(MELLANOX) && (class >> 8 == 0x02 || class == 0x0801))
}

/// A PCI function is a GPU by class and vendor: an NVIDIA (0x10de) 3D (0x0302) or VGA
/// (0x0300) controller; an NVIDIA-less file's 0x0302 counts too (cloud images omit vendors).
pub fn gpu_by_class(class: u16, vendor: Option<u16>) -> bool {
    const NVIDIA: u16 = 0x10de;
    match vendor {
        Some(v) => v == NVIDIA && (class == 0x0302 || class == 0x0300),
        None => class == 0x0302,
    }
}

/// An error of an XML host file at `node`, naming the file and the node's line.
pub fn error_at(source_name: &str, node: roxmltree::Node, reason: impl Into<String>) -> ModelError {
    let pos = node.document().text_pos_at(node.range().start);
    ModelError {
        source_name: source_name.to_string(),
        field: format!("line {}", pos.row),
        reason: reason.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockets_join_at_the_nearest_distance_then_the_next() {
        assert_eq!(socket_links(3, None), [(0, 1), (0, 2), (1, 2)]);
        // A ring of four: 0-1-2-3-0 at 20, diagonals at 30.
        let ring = vec![
            vec![10, 20, 30, 20],
            vec![20, 10, 20, 30],
            vec![30, 20, 10, 20],
            vec![20, 30, 20, 10],
        ];
        assert_eq!(
            socket_links(4, Some(&ring)),
            [(0, 1), (0, 3), (1, 2), (2, 3)]
        );
    }

    #[test]
    fn a_declaration_after_blank_lines_is_blanked_in_place() {
        let text = "\n\n<?xml version=\"1.0\"?>\n<topology/>";
        let prepared = xml_text(text);
        assert_eq!(prepared.lines().count(), text.lines().count());
        assert!(parse_xml("t.xml", &prepared).is_ok());
        assert!(
            parse_xml("t.xml", text).is_err(),
            "the parser alone refuses it"
        );
    }

    #[test]
    fn virtual_bridges_are_all_f_domains() {
        assert!(is_virtual_busid("ffff:ff:01.0"));
        assert!(is_virtual_busid("fffffff:ff:ff.0"));
        assert!(!is_virtual_busid("0000:ff:01.0"));
        assert!(!is_virtual_busid(""));
    }
}
