/*!
Maps discovered facts into a [`model::HostTopology`] and the [`Bindings`] from its ids to
devices. Pure: no I/O, so every shape is testable without a tree.

- One `cpuP` per socket (P = its package id, [`super::sockets`]), one `memN` per memory
  node (N = NUMA node id) on the memory channel of its socket, and the inter-socket links
  `cpuA--cpuB` (A < B) the socket layout found. Memory-channel and inter-socket capacities
  are not in sysfs: [`MEMORY_CHANNEL_GBPS`] and [`INTER_SOCKET_GBPS`] are assumed, with a
  note.
- RNICs `rnic0..` in port order (ACTIVE ports with a rate), GPUs `gpu0..` by PCI address.
- The PCIe chain of each device is root port, then pairs of (switch upstream port, switch
  downstream port), then the device (linux-counters.md 4.2). Each upstream port is one
  `pcie_switch` named `swN`, N in the order of the upstream ports' addresses; its
  downstream ports are internal to it. A device right below a root port, or on the root
  bus, hangs from its socket's CPU; a root port belongs to the socket of its own NUMA node,
  else the device's, else the first socket.
- A link's capacity is the negotiated speed and width of its downstream end (the device,
  or the switch's upstream port). Without one the RNIC's line rate (RNIC links) or Gen4 x16
  (others) is assumed, with a note.
- In a virtual machine ([`super::cpu`]) the bridges are the hypervisor's: QEMU's root and
  switch ports report 2.5 GT/s x1 whatever the hardware below them runs at, and a
  passed-through device may report width 0. Those values say nothing about the hardware,
  so such links have an unknown capacity (`Link::capacity_known` false, a placeholder
  capacity as above) and a note; paths across them are not judged on bandwidth.
- The model name says what kind of host this is, not which: `2s-4rnic200-8gpu-<hash>`,
  the hash (FNV-1a, 32 bits) taken over the canonical structure (components, links,
  capacities, line rates) and never the hostname or PCI addresses, so hosts of one kind
  share a baseline and a retrained link changes the name.
*/

use super::ib::RdmaPort;
use super::pci::{Hop, PciAddr, PcieLink};
use super::sockets::SocketLayout;
use super::{GpuDevice, LinkLayer, PortState};
use model::hostfile::defaults;
use model::topology::StructureError;
use model::{
    Component, ComponentClass, ComponentId, ComponentKind, HostTopology, Link, LinkId, LinkKind,
    Rnic,
};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Assumed capacities of what sysfs does not report: the host-model defaults every
/// source without them shares.
pub use defaults::{INTER_SOCKET_GBPS, MEMORY_CHANNEL_GBPS};
/// The capacity assumed for a PCIe link that reports none: Gen4 x16.
const ASSUMED_PCIE: PcieLink = PcieLink {
    gts: 16.0,
    width: 16,
};

/// What the loopback engine needs to open one RNIC of the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RnicBinding {
    /// RDMA device name (`mlx5_0`).
    pub device: String,
    /// Port number.
    pub port: u8,
    /// The GID index to use ([`RdmaPort::loopback_gid`]).
    pub gid_index: Option<u32>,
    /// The port's link layer: LID addressing on InfiniBand, GID on Ethernet.
    pub link_layer: LinkLayer,
    /// The port's LID.
    pub lid: Option<u16>,
    /// A software device (rxe): no GPU memory through it.
    pub software: bool,
    /// The NUMA node of its PCI function (its netdev's, for a software device): the node
    /// whose CPUs a loopback test posts from.
    pub numa_node: Option<u32>,
}

/// Model ids to devices, for every RNIC, memory node and GPU of a discovered host.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Bindings {
    /// `rnicN` to its device and port.
    pub rnics: Vec<(ComponentId, RnicBinding)>,
    /// `memN` to its NUMA node.
    pub memory: Vec<(ComponentId, u32)>,
    /// `cpuP` to its package id P (the uncore PMUs count per socket, and name it by that
    /// number).
    pub cpus: Vec<(ComponentId, u32)>,
    /// `gpuN` to its PCI function.
    pub gpus: Vec<(ComponentId, PciAddr)>,
    /// Each PCIe link of the model to the function at its downstream end (the device, or
    /// the switch's upstream port), where the link's training is read.
    pub pcie_links: Vec<(LinkId, PciAddr)>,
    /// Each switch `swN` to its ports (where ACS control is read).
    pub switches: Vec<(ComponentId, SwitchPorts)>,
}

/// The PCI functions of one modelled switch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SwitchPorts {
    /// Its upstream port.
    pub upstream: PciAddr,
    /// The downstream ports on the way to modelled devices.
    pub downstream: Vec<PciAddr>,
}

impl Bindings {
    /// The device behind an RNIC id.
    pub fn rnic(&self, id: &ComponentId) -> Option<&RnicBinding> {
        self.rnics.iter().find(|(c, _)| c == id).map(|(_, b)| b)
    }

    /// The NUMA node behind a memory id.
    pub fn memory(&self, id: &ComponentId) -> Option<u32> {
        self.memory.iter().find(|(c, _)| c == id).map(|(_, n)| *n)
    }

    /// The CPU component of a socket, by the number the uncore PMUs and the model use.
    pub fn cpu(&self, socket: u32) -> Option<&ComponentId> {
        self.cpus.iter().find(|(_, n)| *n == socket).map(|(c, _)| c)
    }

    /// The PCI function behind a GPU id.
    pub fn gpu(&self, id: &ComponentId) -> Option<PciAddr> {
        self.gpus.iter().find(|(c, _)| c == id).map(|(_, a)| *a)
    }
}

/// What the model is built from: usable ports and GPUs with their PCI chains (root port
/// first, the device last; empty for a device without a PCI function).
pub(crate) struct Facts<'a> {
    pub hostname: Option<&'a str>,
    pub sockets: &'a SocketLayout,
    /// The host is a virtual machine: its bridges' link values are the hypervisor's.
    pub virtual_machine: bool,
    pub rnics: Vec<(&'a RdmaPort, Vec<Hop>)>,
    pub gpus: Vec<(&'a GpuDevice, Vec<Hop>)>,
}

/// The ports a loopback test can use: ACTIVE, with a non-zero rate. The others get a note.
pub(crate) fn usable_ports<'a>(
    ports: &'a [RdmaPort],
    notes: &mut Vec<String>,
) -> Vec<&'a RdmaPort> {
    let mut usable = Vec::new();
    for p in ports {
        let who = format!("{} port {}", p.device, p.port);
        match (&p.state, &p.rate) {
            (PortState::Active, Some(rate)) if rate.gbps > 0.0 => usable.push(p),
            (PortState::Active, Some(rate)) => {
                notes.push(format!("{who} is ACTIVE at rate `{rate}`: not probed"))
            }
            (PortState::Active, None) => {
                notes.push(format!("{who} is ACTIVE but reports no rate: not probed"))
            }
            (state, _) => notes.push(format!("{who} is {state}: not probed")),
        }
    }
    usable
}

/// Where a device or switch hangs: a CPU (package id) or a switch (its upstream port).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Up {
    Cpu(u32),
    Switch(PciAddr),
}

/// A PCIe switch: where it hangs, the link of its upstream port, and the downstream ports
/// that lead to modelled devices.
struct Switch {
    up: Up,
    link: Option<PcieLink>,
    downstream: std::collections::BTreeSet<PciAddr>,
}

/// A device placed in the tree.
struct Placed {
    up: Up,
    /// Its PCI function; `None` without one.
    addr: Option<PciAddr>,
    link: Option<PcieLink>,
}

/// Places devices in the PCIe tree, collecting the switches on their way.
struct Tree<'a> {
    sockets: &'a SocketLayout,
    switches: BTreeMap<PciAddr, Switch>,
    notes: &'a mut Vec<String>,
}

impl Tree<'_> {
    /// The socket (package) for a NUMA node as a device reports it.
    fn socket(&mut self, numa: Option<u32>, what: &str) -> u32 {
        let first = self.sockets.sockets[0].package;
        match numa {
            Some(n) => match self.sockets.socket_of_node(n) {
                Some(package) => package,
                None => {
                    self.notes.push(format!(
                        "{what} is on NUMA node {n}, which has no CPUs or memory: placed on cpu{first}"
                    ));
                    first
                }
            },
            None if self.sockets.sockets.len() > 1 => {
                let package = self.sockets.socket_of_node(0).unwrap_or(first);
                self.notes.push(format!(
                    "{what} reports no NUMA node: placed on cpu{package}"
                ));
                package
            }
            None => first,
        }
    }

    fn place(&mut self, hops: &[Hop], numa: Option<u32>, what: &str) -> Placed {
        let Some((device, above)) = hops.split_last() else {
            return Placed {
                up: Up::Cpu(self.socket(numa, what)),
                addr: None,
                link: None,
            };
        };
        let Some((root_port, bridges)) = above.split_first() else {
            return Placed {
                up: Up::Cpu(self.socket(device.numa_node, what)),
                addr: Some(device.addr),
                link: device.link,
            };
        };
        let socket = self.socket(root_port.numa_node.or(device.numa_node), what);
        let mut up = Up::Cpu(socket);
        let pairs = bridges.chunks_exact(2);
        if let [odd] = pairs.remainder() {
            self.notes.push(format!(
                "{what}: bridge {} is not a switch port pair: left out of the model",
                odd.addr
            ));
        }
        for pair in pairs {
            let upstream = &pair[0];
            self.switches
                .entry(upstream.addr)
                .or_insert(Switch {
                    up,
                    link: upstream.link,
                    downstream: Default::default(),
                })
                .downstream
                .insert(pair[1].addr);
            up = Up::Switch(upstream.addr);
        }
        Placed {
            up,
            addr: Some(device.addr),
            link: device.link,
        }
    }
}

/// Builds the host model. `facts.rnics` must not be empty.
pub(crate) fn build(
    facts: &Facts<'_>,
    notes: &mut Vec<String>,
) -> Result<(HostTopology, Bindings), StructureError> {
    let mut tree = Tree {
        sockets: facts.sockets,
        switches: BTreeMap::new(),
        notes,
    };
    let rnics: Vec<(&RdmaPort, Placed)> = facts
        .rnics
        .iter()
        .map(|(port, hops)| {
            let what = format!("{} port {}", port.device, port.port);
            // A software RNIC (rxe, siw) is the CPU: its loopback copies memory to memory
            // and never crosses its netdev's PCIe link, so it hangs from the socket of
            // that netdev's NUMA node, not below the NIC.
            let hops: &[Hop] = if port.software { &[] } else { hops };
            (*port, tree.place(hops, port.numa_node, &what))
        })
        .collect();
    let gpus: Vec<(&GpuDevice, Placed)> = facts
        .gpus
        .iter()
        .map(|(gpu, hops)| {
            let what = format!("GPU {}", gpu.pci);
            (*gpu, tree.place(hops, gpu.numa_node, &what))
        })
        .collect();
    let Tree {
        switches, notes, ..
    } = tree;

    let mut model = Model {
        switch_ids: switches
            .keys()
            .enumerate()
            .map(|(i, addr)| (*addr, ComponentId::new(format!("sw{i}"))))
            .collect(),
        components: Vec::new(),
        links: Vec::new(),
        bindings: Bindings::default(),
        notes,
        virtual_machine: facts.virtual_machine,
    };
    model.add_sockets(facts.sockets);
    for (addr, switch) in &switches {
        model.add_switch(*addr, switch);
    }
    for (i, (gpu, placed)) in gpus.iter().enumerate() {
        model.add_gpu(i, gpu, placed);
    }
    let mut functions: BTreeMap<PciAddr, ComponentId> = BTreeMap::new();
    for (i, (port, placed)) in rnics.iter().enumerate() {
        let id = model.add_rnic(i, port, placed);
        if let Some(addr) = placed.addr {
            match functions.get(&addr) {
                Some(first) => model.notes.push(format!(
                    "{id} shares PCI function {addr} with {first}: the model gives each its own PCIe link"
                )),
                None => {
                    functions.insert(addr, id);
                }
            }
        }
    }

    let Model {
        components,
        links,
        bindings,
        ..
    } = model;
    let sockets = facts.sockets.sockets.len();
    let name = model_name(&components, &links, sockets, gpus.len());
    let description = describe(facts.hostname, &components, sockets);
    let host = HostTopology::new(name, description, components, links)?;
    Ok((host, bindings))
}

/// The model being written: components and links in file order (CPUs, memory, switches,
/// GPUs, RNICs; links likewise), with the bindings.
struct Model<'a> {
    switch_ids: BTreeMap<PciAddr, ComponentId>,
    components: Vec<Component>,
    links: Vec<Link>,
    bindings: Bindings,
    notes: &'a mut Vec<String>,
    virtual_machine: bool,
}

impl Model<'_> {
    fn id_of(&self, up: Up) -> ComponentId {
        match up {
            Up::Cpu(n) => cpu_id(n),
            Up::Switch(addr) => self.switch_ids[&addr].clone(),
        }
    }

    fn push(&mut self, id: &ComponentId, kind: ComponentKind) {
        self.components.push(Component {
            id: id.clone(),
            socket: id.clone(),
            kind,
        });
    }

    /// `cpuP`, `memN` and their links, with the assumed capacities noted.
    fn add_sockets(&mut self, layout: &SocketLayout) {
        for s in &layout.sockets {
            let p2p_forward_ns = defaults::CPU_P2P_FORWARD_NS;
            self.push(&cpu_id(s.package), ComponentKind::Cpu { p2p_forward_ns });
            self.bindings.cpus.push((cpu_id(s.package), s.package));
        }
        for s in &layout.sockets {
            for &n in &s.memory_nodes {
                let mem = ComponentId::new(format!("mem{n}"));
                let access_ns = defaults::MEMORY_ACCESS_NS;
                self.push(&mem, ComponentKind::Memory { access_ns });
                let kind = LinkKind::MemoryChannel;
                self.links.push(Link::with_default_latency(
                    &mem,
                    &cpu_id(s.package),
                    kind,
                    MEMORY_CHANNEL_GBPS,
                ));
                self.bindings.memory.push((mem, n));
            }
        }
        self.notes.push(format!(
            "memory channel capacity is not in sysfs: assumed {MEMORY_CHANNEL_GBPS} Gb/s per NUMA node (8 x DDR4-3200)"
        ));
        for &(a, b) in &layout.links {
            let kind = LinkKind::InterSocket;
            self.links.push(Link::with_default_latency(
                &cpu_id(a),
                &cpu_id(b),
                kind,
                INTER_SOCKET_GBPS,
            ));
        }
        if !layout.links.is_empty() {
            self.notes.push(format!(
                "inter-socket capacity is not in sysfs: assumed {INTER_SOCKET_GBPS} Gb/s per link (3 x UPI at 11.2 GT/s)"
            ));
        }
    }

    fn add_switch(&mut self, addr: PciAddr, switch: &Switch) {
        let id = self.switch_ids[&addr].clone();
        self.push(&id, ComponentKind::PcieSwitch);
        let up = self.id_of(switch.up);
        let kind = match switch.up {
            Up::Cpu(_) => LinkKind::RootPort,
            Up::Switch(_) => LinkKind::SwitchUplink,
        };
        let mut l = Link::with_default_latency(&id, &up, kind, 0.0);
        (l.capacity_gbps, l.capacity_known) = self.pcie_capacity(switch.link, addr, &l.id, true);
        self.bindings.pcie_links.push((l.id.clone(), addr));
        self.links.push(l);
        let ports = SwitchPorts {
            upstream: addr,
            downstream: switch.downstream.iter().copied().collect(),
        };
        self.bindings.switches.push((id, ports));
    }

    fn add_gpu(&mut self, i: usize, gpu: &GpuDevice, placed: &Placed) {
        let id = ComponentId::new(format!("gpu{i}"));
        let access_ns = defaults::GPU_ACCESS_NS;
        self.push(&id, ComponentKind::Gpu { access_ns });
        let up = self.id_of(placed.up);
        let mut l = Link::with_default_latency(&id, &up, LinkKind::GpuPcie, 0.0);
        (l.capacity_gbps, l.capacity_known) =
            self.pcie_capacity(placed.link, gpu.pci, &l.id, false);
        self.bindings.pcie_links.push((l.id.clone(), gpu.pci));
        self.links.push(l);
        self.bindings.gpus.push((id, gpu.pci));
    }

    fn add_rnic(&mut self, i: usize, port: &RdmaPort, placed: &Placed) -> ComponentId {
        let id = ComponentId::new(format!("rnic{i}"));
        let line_rate = port.rate.as_ref().map_or(0.0, |r| r.gbps);
        self.push(
            &id,
            ComponentKind::Rnic(Rnic {
                line_rate_gbps: line_rate,
                proc_ns: defaults::RNIC_PROC_NS,
                read_window_bytes: defaults::RNIC_READ_WINDOW_BYTES,
                qp_window_bytes: defaults::RNIC_QP_WINDOW_BYTES,
            }),
        );
        let up = self.id_of(placed.up);
        let mut known = true;
        let capacity = match (placed.link, placed.addr) {
            (Some(l), _) => l.gbps(),
            (None, _) if port.software => {
                self.notes.push(format!(
                    "{id}--{up}: {} is a software RNIC, so its loopback never crosses {}'s PCIe link: modelled at its line rate ({line_rate} Gb/s), on the socket of its NUMA node",
                    port.device,
                    port.netdev.as_deref().unwrap_or("its netdev")
                ));
                line_rate
            }
            (None, Some(addr)) if self.virtual_machine => {
                self.notes.push(format!(
                    "{id}--{up}: {VM} and {addr} reports no negotiated PCIe link: capacity unknown, not judged"
                ));
                known = false;
                line_rate
            }
            (None, addr) => {
                let who = addr.map_or_else(
                    || format!("{} has no PCI function", port.device),
                    |a| format!("{a} reports no negotiated PCIe link"),
                );
                self.notes.push(format!(
                    "{id}--{up}: {who}: capacity assumed {line_rate} Gb/s (the RNIC's line rate)"
                ));
                line_rate
            }
        };
        let mut l = Link::with_default_latency(&id, &up, LinkKind::RnicPcie, capacity);
        l.capacity_known = known;
        if let (Some(addr), false) = (placed.addr, port.software) {
            self.bindings.pcie_links.push((l.id.clone(), addr));
        }
        self.links.push(l);
        let binding = RnicBinding {
            device: port.device.clone(),
            port: port.port,
            gid_index: port.loopback_gid().map(|g| g.index),
            link_layer: port.link_layer.clone(),
            lid: port.lid,
            software: port.software,
            numa_node: port.numa_node,
        };
        self.bindings.rnics.push((id.clone(), binding));
        id
    }

    /// The capacity of a PCIe link as its downstream end (a bridge: a switch's upstream
    /// port) reports it, and whether it is known. A link that reports none is assumed
    /// Gen4 x16, with a note; in a virtual machine, a bridge's report and a missing one
    /// are the hypervisor's, not the hardware's: unknown (Gen4 x16 as a placeholder).
    fn pcie_capacity(
        &mut self,
        reported: Option<PcieLink>,
        addr: PciAddr,
        link: &LinkId,
        bridge: bool,
    ) -> (f64, bool) {
        let assumed = ASSUMED_PCIE.gbps();
        match reported {
            Some(l) if bridge && self.virtual_machine => {
                self.notes.push(format!(
                    "{link}: {VM} and {addr} is a bridge it emulates: its {} GT/s x{} is not the hardware's: capacity unknown, not judged",
                    l.gts, l.width
                ));
                (assumed, false)
            }
            Some(l) => (l.gbps(), true),
            None if self.virtual_machine => {
                self.notes.push(format!(
                    "{link}: {VM} and {addr} reports no negotiated PCIe link: capacity unknown, not judged"
                ));
                (assumed, false)
            }
            None => {
                self.notes.push(format!(
                    "{link}: {addr} reports no negotiated PCIe link: capacity assumed {assumed:.2} Gb/s (Gen4 x16)"
                ));
                (assumed, true)
            }
        }
    }
}

/// How a note says why a link of a virtual machine is not judged.
const VM: &str = "this host is a virtual machine (`hypervisor` in proc/cpuinfo)";

fn cpu_id(node: u32) -> ComponentId {
    ComponentId::new(format!("cpu{node}"))
}

/// `2s-4rnic200-8gpu-1a2b3c4d`: sockets, RNICs by line rate, GPUs, structure hash.
fn model_name(components: &[Component], links: &[Link], sockets: usize, gpus: usize) -> String {
    let rnics: Vec<String> = rnic_rates(components)
        .iter()
        .map(|(rate, n)| format!("{n}rnic{rate}"))
        .collect();
    format!(
        "{sockets}s-{}-{gpus}gpu-{:08x}",
        rnics.join("-"),
        fnv1a32(canonical_structure(components, links).as_bytes())
    )
}

/// RNIC line rates with how many RNICs have each, in RNIC order.
fn rnic_rates(components: &[Component]) -> Vec<(f64, usize)> {
    let mut rates: Vec<(f64, usize)> = Vec::new();
    for rate in components
        .iter()
        .filter_map(|c| c.rnic())
        .map(|r| r.line_rate_gbps)
    {
        match rates.iter_mut().find(|(r, _)| *r == rate) {
            Some((_, n)) => *n += 1,
            None => rates.push((rate, 1)),
        }
    }
    rates
}

/// One line per component and link with every parameter the model uses.
fn canonical_structure(components: &[Component], links: &[Link]) -> String {
    let mut out = String::new();
    for c in components {
        let params = match &c.kind {
            ComponentKind::Cpu { p2p_forward_ns } => format!("cpu {p2p_forward_ns}"),
            ComponentKind::Memory { access_ns } => format!("memory {access_ns}"),
            ComponentKind::PcieSwitch => "pcie_switch".to_string(),
            ComponentKind::Gpu { access_ns } => format!("gpu {access_ns}"),
            ComponentKind::Rnic(r) => format!(
                "rnic {} {} {} {}",
                r.line_rate_gbps, r.proc_ns, r.read_window_bytes, r.qp_window_bytes
            ),
        };
        let _ = writeln!(out, "component {} {params}", c.id);
    }
    for l in links {
        let capacity = if l.capacity_known {
            format!("{:.3}", l.capacity_gbps)
        } else {
            "unknown".to_string()
        };
        let _ = writeln!(
            out,
            "link {} {} {capacity} {:.3}",
            l.id,
            l.kind.as_str(),
            l.latency_ns
        );
    }
    out
}

/// FNV-1a, 32 bits (http://www.isthe.com/chongo/tech/comp/fnv/).
fn fnv1a32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(0x0100_0193)
    })
}

/// `dgx-a100-01: 2 sockets, 12 PCIe switches, 8 GPUs, 4 RNICs (4 x 200 Gb/s); from sysfs`.
fn describe(hostname: Option<&str>, components: &[Component], sockets: usize) -> String {
    let count = |class| components.iter().filter(|c| c.class() == class).count();
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let rates = rnic_rates(components);
    let rnics = rates.iter().map(|(_, n)| n).sum();
    let rates: Vec<String> = rates
        .iter()
        .map(|(rate, n)| format!("{n} x {rate} Gb/s"))
        .collect();
    format!(
        "{}: {}, {}, {}, {} ({}); from sysfs",
        hostname.unwrap_or("unnamed host"),
        plural(sockets, "socket", "sockets"),
        plural(
            count(ComponentClass::PcieSwitch),
            "PCIe switch",
            "PCIe switches"
        ),
        plural(count(ComponentClass::Gpu), "GPU", "GPUs"),
        plural(rnics, "RNIC", "RNICs"),
        rates.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysfs::{LinkRate, NumaNode, RdmaPort};

    /// A node whose CPUs are package `id` (each node a socket, as on most two-socket
    /// hosts), at distance 10 from itself and 21 from the others.
    fn node(id: u32, cpulist: &str, mem: Option<u64>) -> NumaNode {
        NumaNode {
            id,
            cpulist: cpulist.into(),
            mem_total_kib: mem,
            distance: None,
            packages: if cpulist.is_empty() { vec![] } else { vec![id] },
        }
    }

    /// The nodes with a full distance matrix (10 to itself, 21 to the others).
    fn with_distances(nodes: &[NumaNode]) -> Vec<NumaNode> {
        nodes
            .iter()
            .map(|n| NumaNode {
                distance: Some(
                    nodes
                        .iter()
                        .map(|m| if m.id == n.id { 10 } else { 21 })
                        .collect(),
                ),
                ..n.clone()
            })
            .collect()
    }

    fn hop(addr: &str, numa_node: Option<u32>, link: Option<(f64, u32)>) -> Hop {
        Hop {
            addr: addr.parse().unwrap(),
            numa_node,
            link: link.map(|(gts, width)| PcieLink { gts, width }),
        }
    }

    fn port(device: &str, gbps: f64, hops: &[Hop], software: bool) -> RdmaPort {
        RdmaPort {
            device: device.into(),
            port: 1,
            state: PortState::Active,
            phys_state: None,
            rate: Some(LinkRate {
                gbps,
                lanes: 4,
                generation: None,
            }),
            link_layer: LinkLayer::Ethernet,
            lid: None,
            gids: Vec::new(),
            netdev: None,
            pci: hops.last().map(|h| h.addr),
            numa_node: hops.last().and_then(|h| h.numa_node),
            software,
        }
    }

    fn gpu(hops: &[Hop]) -> GpuDevice {
        let last = hops.last().unwrap();
        GpuDevice {
            pci: last.addr,
            vendor: 0x10de,
            device: 0x20b0,
            numa_node: last.numa_node,
        }
    }

    /// A link as the builder makes it, for whole-value comparisons.
    fn l(down: &str, up: &str, kind: LinkKind, capacity_gbps: f64) -> Link {
        Link::with_default_latency(&down.into(), &up.into(), kind, capacity_gbps)
    }

    fn build_one(
        nodes: &[NumaNode],
        rnics: &[(RdmaPort, Vec<Hop>)],
        gpus: &[(GpuDevice, Vec<Hop>)],
    ) -> (HostTopology, Bindings, Vec<String>) {
        build_in(nodes, false, rnics, gpus)
    }

    /// As [`build_one`], on a virtual machine or not.
    fn build_in(
        nodes: &[NumaNode],
        virtual_machine: bool,
        rnics: &[(RdmaPort, Vec<Hop>)],
        gpus: &[(GpuDevice, Vec<Hop>)],
    ) -> (HostTopology, Bindings, Vec<String>) {
        let mut notes = Vec::new();
        let sockets = crate::sysfs::sockets::layout(&with_distances(nodes), &mut notes);
        let facts = Facts {
            hostname: Some("h1"),
            sockets: &sockets,
            virtual_machine,
            rnics: rnics.iter().map(|(p, h)| (p, h.clone())).collect(),
            gpus: gpus.iter().map(|(g, h)| (g, h.clone())).collect(),
        };
        let (host, bindings) = build(&facts, &mut notes).unwrap();
        (host, bindings, notes)
    }

    const GEN4X16: f64 = 16.0 * 16.0 * 128.0 / 130.0;
    const MEM_NOTE: &str = "memory channel capacity is not in sysfs: assumed 1638.4 Gb/s per NUMA node (8 x DDR4-3200)";
    const UPI_NOTE: &str =
        "inter-socket capacity is not in sysfs: assumed 537.6 Gb/s per link (3 x UPI at 11.2 GT/s)";

    #[test]
    fn devices_below_a_root_port_hang_from_the_root_ports_socket() {
        let nodes = [node(0, "0-3", Some(1024)), node(1, "4-7", Some(1024))];
        let nic = vec![
            hop("0000:80:01.0", Some(1), Some((16.0, 16))),
            hop("0000:81:00.0", Some(1), Some((8.0, 8))),
        ];
        // The GPU reports no node; its root port says node 1.
        let g = vec![
            hop("0000:90:01.0", Some(1), Some((16.0, 16))),
            hop("0000:91:00.0", None, Some((16.0, 16))),
        ];
        let (host, _, notes) = build_one(
            &nodes,
            &[(port("mlx5_0", 100.0, &nic, false), nic.clone())],
            &[(gpu(&g), g.clone())],
        );
        let gen3x8 = 8.0 * 8.0 * 128.0 / 130.0;
        assert_eq!(
            host.links(),
            [
                l("mem0", "cpu0", LinkKind::MemoryChannel, MEMORY_CHANNEL_GBPS),
                l("mem1", "cpu1", LinkKind::MemoryChannel, MEMORY_CHANNEL_GBPS),
                l("cpu0", "cpu1", LinkKind::InterSocket, INTER_SOCKET_GBPS),
                l("gpu0", "cpu1", LinkKind::GpuPcie, GEN4X16),
                l("rnic0", "cpu1", LinkKind::RnicPcie, gen3x8),
            ]
        );
        assert_eq!(notes, [MEM_NOTE, UPI_NOTE]);
        assert_eq!(host.name, format!("2s-1rnic100-1gpu-{}", &host.name[17..]));
    }

    #[test]
    fn four_sockets_at_equal_distance_reach_any_memory_in_one_hop() {
        // A 4-socket Xeon E7: node distances all 20 (a full mesh), the RNIC on node 0.
        let nodes: Vec<NumaNode> = (0..4)
            .map(|i| node(i, &format!("{}-{}", i * 8, i * 8 + 7), Some(1024)))
            .collect();
        let nic = vec![hop("0000:00:03.0", Some(0), Some((8.0, 16)))];
        let (host, bindings, _) = build_one(
            &nodes,
            &[(port("mlx5_0", 56.0, &nic, false), nic.clone())],
            &[],
        );
        let inter: Vec<&str> = host
            .links()
            .iter()
            .filter(|l| l.kind == LinkKind::InterSocket)
            .map(|l| l.id.as_str())
            .collect();
        assert_eq!(
            inter,
            [
                "cpu0--cpu1",
                "cpu0--cpu2",
                "cpu0--cpu3",
                "cpu1--cpu2",
                "cpu1--cpu3",
                "cpu2--cpu3"
            ]
        );
        for (mem, hops) in [("mem0", 2), ("mem1", 3), ("mem2", 3), ("mem3", 3)] {
            let path = host.path(&"rnic0".into(), &mem.into()).unwrap();
            assert_eq!(path.links.len(), hops, "{mem}: {:?}", path.links);
        }
        assert_eq!(bindings.cpu(3), Some(&"cpu3".into()));
        assert!(host.name.starts_with("4s-1rnic56-0gpu-"), "{}", host.name);
    }

    #[test]
    fn a_virtual_machines_bridges_and_width_0_give_unknown_capacities() {
        // An H100 cloud VM: QEMU root port and switch ports at 2.5 GT/s x1, the
        // passed-through NIC and GPU at width 0 (no link files read).
        let nodes = [node(0, "0-7", Some(1024))];
        let nic = vec![
            hop("0000:00:02.0", Some(0), Some((2.5, 1))),
            hop("0000:01:00.0", Some(0), Some((2.5, 1))),
            hop("0000:02:00.0", Some(0), Some((2.5, 1))),
            hop("0000:03:00.0", Some(0), None),
        ];
        let g = vec![
            hop("0000:00:02.0", Some(0), Some((2.5, 1))),
            hop("0000:01:00.0", Some(0), Some((2.5, 1))),
            hop("0000:02:01.0", Some(0), Some((2.5, 1))),
            hop("0000:04:00.0", Some(0), Some((16.0, 16))),
        ];
        let rnics = [(port("mlx5_0", 400.0, &nic, false), nic.clone())];
        let gpus = [(gpu(&g), g.clone())];
        let (host, _, notes) = build_in(&nodes, true, &rnics, &gpus);
        let capacities: Vec<(&str, bool, f64)> = host
            .links()
            .iter()
            .map(|l| (l.id.as_str(), l.capacity_known, l.capacity_gbps))
            .collect();
        assert_eq!(
            capacities,
            [
                ("mem0--cpu0", true, MEMORY_CHANNEL_GBPS),
                ("sw0--cpu0", false, GEN4X16),
                ("gpu0--sw0", true, GEN4X16),
                ("rnic0--sw0", false, 400.0),
            ]
        );
        assert_eq!(
            &notes[1..],
            [
                "sw0--cpu0: this host is a virtual machine (`hypervisor` in proc/cpuinfo) and 0000:01:00.0 is a bridge it emulates: its 2.5 GT/s x1 is not the hardware's: capacity unknown, not judged",
                "rnic0--sw0: this host is a virtual machine (`hypervisor` in proc/cpuinfo) and 0000:03:00.0 reports no negotiated PCIe link: capacity unknown, not judged",
            ]
        );
        // No path is capped at 2 Gb/s, and none claims a capacity it does not know.
        for p in host.paths() {
            assert!(!p.capacity_known, "{} -> {}", p.rnic, p.endpoint);
        }
        let mem0 = host.path(&"rnic0".into(), &"mem0".into()).unwrap();
        assert!(mem0.affinitive);

        // The same tree on bare metal is judged on what it reports.
        let (metal, _, _) = build_in(&nodes, false, &rnics, &gpus);
        let sw0 = metal.link(&"sw0--cpu0".into()).unwrap();
        assert!(sw0.capacity_known && (sw0.capacity_gbps - 2.0).abs() < 1e-9);
        assert!(metal.paths().iter().all(|p| p.capacity_known));
        assert_ne!(metal.name, host.name);
    }

    #[test]
    fn cpu_less_memory_nodes_are_endpoints_of_their_nearest_socket() {
        let mut nodes = vec![
            node(0, "0-3", Some(1024)),
            node(1, "4-7", Some(1024)),
            node(2, "", Some(16 * 1024)),
        ];
        nodes[0].distance = Some(vec![10, 40, 80]);
        nodes[1].distance = Some(vec![40, 10, 40]);
        nodes[2].distance = Some(vec![80, 40, 10]);
        let mut notes = Vec::new();
        let sockets = crate::sysfs::sockets::layout(&nodes, &mut notes);
        let nic = vec![hop("0000:00:03.0", Some(0), Some((16.0, 16)))];
        let p = port("mlx5_0", 200.0, &nic, false);
        let facts = Facts {
            hostname: None,
            sockets: &sockets,
            virtual_machine: false,
            rnics: vec![(&p, nic.clone())],
            gpus: vec![],
        };
        let (host, bindings) = build(&facts, &mut notes).unwrap();
        let mem2 = host.link(&"mem2--cpu1".into()).unwrap();
        assert_eq!(mem2.kind, LinkKind::MemoryChannel);
        assert_eq!(bindings.memory(&"mem2".into()), Some(2));
        let path = host.path(&"rnic0".into(), &"mem2".into()).unwrap();
        assert_eq!(
            path.links,
            ["rnic0--cpu0", "cpu0--cpu1", "mem2--cpu1"].map(LinkId::from)
        );
        assert!(host.name.starts_with("2s-"), "{}", host.name);
    }

    #[test]
    fn software_rnics_hang_from_their_socket_at_their_line_rate() {
        let nodes = [node(0, "0-1", Some(1024))];
        // rxe on a virtio-net function on the root bus: no link files, no NUMA node.
        let virtio = vec![hop("0000:00:03.0", None, None)];
        let rxe = port("rxe0", 2.5, &virtio, true);
        // rxe on `lo`: no PCI function at all.
        let lo = port("rxe1", 10.0, &[], true);
        let (host, bindings, notes) = build_one(&nodes, &[(rxe, virtio), (lo, vec![])], &[]);
        assert_eq!(
            host.links(),
            [
                l("mem0", "cpu0", LinkKind::MemoryChannel, MEMORY_CHANNEL_GBPS),
                l("rnic0", "cpu0", LinkKind::RnicPcie, 2.5),
                l("rnic1", "cpu0", LinkKind::RnicPcie, 10.0),
            ]
        );
        assert_eq!(
            notes,
            [
                MEM_NOTE,
                "rnic0--cpu0: rxe0 is a software RNIC, so its loopback never crosses its netdev's PCIe link: modelled at its line rate (2.5 Gb/s), on the socket of its NUMA node",
                "rnic1--cpu0: rxe1 is a software RNIC, so its loopback never crosses its netdev's PCIe link: modelled at its line rate (10 Gb/s), on the socket of its NUMA node",
            ]
        );
        assert!(bindings.rnics.iter().all(|(_, b)| b.software));
        assert_eq!(bindings.rnic(&"rnic1".into()).unwrap().device, "rxe1");
        assert_eq!(bindings.memory(&"mem0".into()), Some(0));
        assert!(
            host.name.starts_with("1s-1rnic2.5-1rnic10-0gpu-"),
            "{}",
            host.name
        );
        assert_eq!(
            host.description,
            "h1: 1 socket, 0 PCIe switches, 0 GPUs, 2 RNICs (1 x 2.5 Gb/s, 1 x 10 Gb/s); from sysfs"
        );
    }

    #[test]
    fn switches_are_upstream_ports_and_missing_links_are_assumed() {
        let nodes = [node(0, "0-1", Some(1024))];
        let nic = vec![
            hop("0000:10:00.0", Some(0), Some((16.0, 16))),
            hop("0000:11:00.0", Some(0), None), // upstream port without link files
            hop("0000:12:00.0", Some(0), Some((16.0, 16))),
            hop("0000:13:00.0", Some(0), Some((16.0, 16))),
        ];
        let g = vec![
            hop("0000:10:00.0", Some(0), Some((16.0, 16))),
            hop("0000:11:00.0", Some(0), None),
            hop("0000:12:01.0", Some(0), Some((16.0, 16))),
            hop("0000:14:00.0", Some(0), Some((16.0, 16))),
        ];
        let (host, bindings, notes) = build_one(
            &nodes,
            &[(port("mlx5_0", 200.0, &nic, false), nic.clone())],
            &[(gpu(&g), g.clone())],
        );
        assert_eq!(
            host.links(),
            [
                l("mem0", "cpu0", LinkKind::MemoryChannel, MEMORY_CHANNEL_GBPS),
                l("sw0", "cpu0", LinkKind::RootPort, GEN4X16),
                l("gpu0", "sw0", LinkKind::GpuPcie, GEN4X16),
                l("rnic0", "sw0", LinkKind::RnicPcie, GEN4X16),
            ]
        );
        assert_eq!(
            notes,
            [
                MEM_NOTE,
                "sw0--cpu0: 0000:11:00.0 reports no negotiated PCIe link: capacity assumed 252.06 Gb/s (Gen4 x16)",
            ]
        );
        let path = host.path(&"rnic0".into(), &"gpu0".into()).unwrap();
        assert_eq!(path.turnaround, model::Turnaround::Switch("sw0".into()));
        assert_eq!(bindings.gpu(&"gpu0".into()), Some(g[3].addr));
    }

    #[test]
    fn odd_bridges_shared_functions_and_empty_nodes_are_noted() {
        // Node 1 has neither CPUs nor memory: no socket of its own.
        let nodes = [node(0, "0-1", Some(1024)), node(1, "", None)];
        let nic = vec![
            hop("0000:10:00.0", Some(1), Some((16.0, 16))),
            hop("0000:11:00.0", Some(1), Some((16.0, 16))),
            hop("0000:12:00.0", Some(1), Some((16.0, 16))),
            hop("0000:13:00.0", Some(1), Some((16.0, 16))), // unpaired bridge
            hop("0000:14:00.0", Some(1), Some((16.0, 8))),
        ];
        let p1 = port("mlx4_0", 100.0, &nic, false);
        let mut p2 = p1.clone();
        p2.port = 2;
        let (host, _, notes) = build_one(&nodes, &[(p1, nic.clone()), (p2, nic)], &[]);
        let gen4x8 = GEN4X16 / 2.0;
        assert_eq!(
            host.links(),
            [
                l("mem0", "cpu0", LinkKind::MemoryChannel, MEMORY_CHANNEL_GBPS),
                l("sw0", "cpu0", LinkKind::RootPort, GEN4X16),
                l("rnic0", "sw0", LinkKind::RnicPcie, gen4x8),
                l("rnic1", "sw0", LinkKind::RnicPcie, gen4x8),
            ]
        );
        assert_eq!(
            notes,
            [
                "mlx4_0 port 1 is on NUMA node 1, which has no CPUs or memory: placed on cpu0",
                "mlx4_0 port 1: bridge 0000:13:00.0 is not a switch port pair: left out of the model",
                "mlx4_0 port 2 is on NUMA node 1, which has no CPUs or memory: placed on cpu0",
                "mlx4_0 port 2: bridge 0000:13:00.0 is not a switch port pair: left out of the model",
                MEM_NOTE,
                "rnic1 shares PCI function 0000:14:00.0 with rnic0: the model gives each its own PCIe link",
            ]
        );
    }

    #[test]
    fn a_missing_numa_node_on_a_two_socket_host_is_noted() {
        let nodes = [node(0, "0-1", Some(1024)), node(1, "2-3", Some(1024))];
        let nic = vec![hop("0000:00:03.0", None, None)];
        let (_, _, notes) = build_one(&nodes, &[(port("mlx5_0", 100.0, &nic, false), nic)], &[]);
        assert_eq!(
            notes[0],
            "mlx5_0 port 1 reports no NUMA node: placed on cpu0"
        );
    }

    #[test]
    fn the_name_follows_the_structure_not_the_host() {
        let nodes = [node(0, "0-1", Some(1024))];
        let chain = |width| {
            vec![
                hop("0000:10:00.0", Some(0), Some((16.0, 16))),
                hop("0000:11:00.0", Some(0), Some((16.0, width))),
            ]
        };
        let sockets = crate::sysfs::sockets::layout(&nodes, &mut Vec::new());
        let name_of = |hostname, hops: Vec<Hop>| {
            let p = port("mlx5_0", 200.0, &hops, false);
            let facts = Facts {
                hostname: Some(hostname),
                sockets: &sockets,
                virtual_machine: false,
                rnics: vec![(&p, hops)],
                gpus: vec![],
            };
            let (host, _) = build(&facts, &mut Vec::new()).unwrap();
            (host.name, host.description)
        };
        let (a, desc_a) = name_of("node-a", chain(16));
        let (b, desc_b) = name_of("node-b", chain(16));
        let (c, _) = name_of("node-a", chain(8));
        assert_eq!(a, b);
        assert_ne!(desc_a, desc_b);
        assert_ne!(a, c);
        assert!(a.starts_with("1s-1rnic200-0gpu-") && c.starts_with("1s-1rnic200-0gpu-"));
        let hash = &a["1s-1rnic200-0gpu-".len()..];
        assert!(
            hash.len() == 8 && hash.bytes().all(|b| b.is_ascii_hexdigit()),
            "{a}"
        );
    }

    #[test]
    fn fnv1a32_matches_the_reference_vectors() {
        assert_eq!(fnv1a32(b""), 0x811c_9dc5);
        assert_eq!(fnv1a32(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a32(b"foobar"), 0xbf9c_f968);
    }

    #[test]
    fn only_active_ports_with_a_rate_are_usable() {
        let mut down = port("mlx5_0", 100.0, &[], false);
        down.state = PortState::Down;
        let mut no_rate = port("mlx5_1", 100.0, &[], false);
        no_rate.rate = None;
        let mut zero = port("mlx5_2", 0.0, &[], false);
        zero.port = 2;
        let ok = port("mlx5_3", 100.0, &[], false);
        let ports = [down, no_rate, zero, ok.clone()];
        let mut notes = Vec::new();
        let usable = usable_ports(&ports, &mut notes);
        assert_eq!(usable, [&ok]);
        assert_eq!(
            notes,
            [
                "mlx5_0 port 1 is DOWN: not probed",
                "mlx5_1 port 1 is ACTIVE but reports no rate: not probed",
                "mlx5_2 port 2 is ACTIVE at rate `0 Gb/sec (4X)`: not probed",
            ]
        );
    }
}
