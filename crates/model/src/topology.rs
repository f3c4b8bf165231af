//! The host model: components, links, and the loopback paths from every RNIC to every
//! endpoint, with each RNIC's affinitive endpoints (DESIGN 2 and 4.1; Hostping 3.2, 4.3).
//!
//! A host is a forest of PCIe trees, one per CPU socket, whose roots are joined by
//! inter-socket links; memory nodes hang off their socket by a memory channel. Every
//! component except a CPU has exactly one upstream link, so the path between an RNIC and an
//! endpoint is unique: up from the RNIC to the lowest common ancestor (a PCIe switch, or the
//! CPU root complex), across sockets if needed, and down to the endpoint.

use crate::ids::{ComponentId, LinkId};
use serde::Serialize;
use std::collections::{HashMap, VecDeque};

/// What a component is, with the parameters a flow model of it needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ComponentKind {
    /// A CPU socket and its root complex.
    Cpu {
        /// Extra round-trip time when peer-to-peer PCIe traffic is forwarded through this
        /// root complex (GDR across root ports).
        p2p_forward_ns: f64,
    },
    /// A NUMA memory node (the DRAM of one socket).
    Memory {
        /// DRAM access time seen by a DMA read.
        access_ns: f64,
    },
    /// A PCIe switch (upper or leaf).
    PcieSwitch,
    /// A GPU; its memory is a loopback endpoint (GPUDirect RDMA).
    Gpu {
        /// Time for the GPU to answer a DMA read from its memory (BAR1).
        access_ns: f64,
    },
    /// An RDMA NIC port.
    Rnic(Rnic),
}

/// The RNIC parameters the probe plan and the flow model need.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rnic {
    /// Line rate in Gb/s.
    pub line_rate_gbps: f64,
    /// T_proc of Hostping eq. 1: post to first DMA read, plus last write to CQE polled.
    pub proc_ns: f64,
    /// Bytes of DMA reads the RNIC keeps outstanding (bounds read bandwidth by Little's law).
    pub read_window_bytes: f64,
    /// Bytes one QP may keep in flight ("Tx window").
    pub qp_window_bytes: f64,
}

/// Short names of component kinds, as written in host-model files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ComponentClass {
    /// See [`ComponentKind::Cpu`].
    Cpu,
    /// See [`ComponentKind::Memory`].
    Memory,
    /// See [`ComponentKind::PcieSwitch`].
    PcieSwitch,
    /// See [`ComponentKind::Gpu`].
    Gpu,
    /// See [`ComponentKind::Rnic`].
    Rnic,
}

impl ComponentKind {
    /// The kind without its parameters.
    pub fn class(&self) -> ComponentClass {
        match self {
            ComponentKind::Cpu { .. } => ComponentClass::Cpu,
            ComponentKind::Memory { .. } => ComponentClass::Memory,
            ComponentKind::PcieSwitch => ComponentClass::PcieSwitch,
            ComponentKind::Gpu { .. } => ComponentClass::Gpu,
            ComponentKind::Rnic(_) => ComponentClass::Rnic,
        }
    }
}

impl ComponentClass {
    /// The name used in host-model files and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            ComponentClass::Cpu => "cpu",
            ComponentClass::Memory => "memory",
            ComponentClass::PcieSwitch => "pcie_switch",
            ComponentClass::Gpu => "gpu",
            ComponentClass::Rnic => "rnic",
        }
    }

    /// Memory nodes and GPUs are what an RNIC's loopback probe reads from and writes to.
    pub fn is_endpoint(self) -> bool {
        matches!(self, ComponentClass::Memory | ComponentClass::Gpu)
    }
}

/// A component of the host.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Component {
    /// Its id (`gpu3`).
    pub id: ComponentId,
    /// The CPU socket it belongs to (a CPU belongs to itself).
    pub socket: ComponentId,
    /// What it is.
    #[serde(flatten)]
    pub kind: ComponentKind,
}

impl Component {
    /// The kind without its parameters.
    pub fn class(&self) -> ComponentClass {
        self.kind.class()
    }

    /// The RNIC parameters, if this is an RNIC.
    pub fn rnic(&self) -> Option<&Rnic> {
        match &self.kind {
            ComponentKind::Rnic(r) => Some(r),
            _ => None,
        }
    }
}

/// The six link kinds of DESIGN 4.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkKind {
    /// RNIC to its PCIe switch (or root port).
    RnicPcie,
    /// GPU to its PCIe switch (or root port).
    GpuPcie,
    /// PCIe switch to the switch above it.
    SwitchUplink,
    /// PCIe switch to the CPU root port.
    RootPort,
    /// Memory node to its socket.
    MemoryChannel,
    /// Socket to socket (UPI, xGMI).
    InterSocket,
}

impl LinkKind {
    /// Every kind, in report order.
    pub const ALL: [LinkKind; 6] = [
        LinkKind::RnicPcie,
        LinkKind::GpuPcie,
        LinkKind::SwitchUplink,
        LinkKind::RootPort,
        LinkKind::MemoryChannel,
        LinkKind::InterSocket,
    ];

    /// The name used in host-model files and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            LinkKind::RnicPcie => "rnic_pcie",
            LinkKind::GpuPcie => "gpu_pcie",
            LinkKind::SwitchUplink => "switch_uplink",
            LinkKind::RootPort => "root_port",
            LinkKind::MemoryChannel => "memory_channel",
            LinkKind::InterSocket => "inter_socket",
        }
    }

    /// One-way hop latency of this kind where a model gives none, ns. Same-switch GDR =
    /// 2 x (100 + 100) + 600 = 1.0 us; across root ports 2 x (100 + 25 + 75) x 2 + 600 + 800
    /// = 2.2 us; across the socket link +2 x 100 = 2.4 us (Hostping 3.2.2: 1.0, 2.2, +0.2 us;
    /// the other terms are `hostfile::defaults`).
    pub fn default_latency_ns(self) -> f64 {
        match self {
            LinkKind::RnicPcie | LinkKind::GpuPcie => 100.0,
            LinkKind::SwitchUplink => 25.0,
            LinkKind::RootPort => 75.0,
            LinkKind::MemoryChannel => 50.0,
            LinkKind::InterSocket => 100.0,
        }
    }

    /// How many times a loopback flow of rate R loads one direction of this link.
    ///
    /// PCIe and socket interconnects are full duplex: the read (endpoint to RNIC) and the
    /// write back (RNIC to endpoint) travel in opposite directions, so each carries R. A
    /// memory channel's DRAM bus is shared by reads and writes, so a loopback costs it 2R.
    pub fn loopback_load(self) -> f64 {
        match self {
            LinkKind::MemoryChannel => 2.0,
            _ => 1.0,
        }
    }
}

/// A link between two components.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Link {
    /// `<down>--<up>`.
    pub id: LinkId,
    /// What kind of link it is.
    pub kind: LinkKind,
    /// The component farther from the CPU.
    pub down: ComponentId,
    /// The component nearer the CPU.
    pub up: ComponentId,
    /// Capacity of one direction (of the shared bus, for a memory channel), Gb/s. A
    /// placeholder when `capacity_known` is false.
    pub capacity_gbps: f64,
    /// False when nothing the host reports says what this link can carry (a virtual
    /// machine's emulated PCIe bridges report 2.5 GT/s x1 whatever runs below them):
    /// `capacity_gbps` is then a placeholder that nothing may be judged against, and the
    /// paths across the link have `capacity_known` false. True in every TOML model file; an NCCL
    /// topology file of a virtual machine gives it for the same reason ([`crate::nccl_topo`]).
    pub capacity_known: bool,
    /// One-way latency of the hop, ns.
    pub latency_ns: f64,
}

impl Link {
    /// A link of known capacity with the default latency of its kind, as discovery and the
    /// readers of other tools' host files make them.
    pub fn with_default_latency(
        down: &ComponentId,
        up: &ComponentId,
        kind: LinkKind,
        capacity_gbps: f64,
    ) -> Link {
        Link {
            id: LinkId::between(down, up),
            kind,
            down: down.clone(),
            up: up.clone(),
            capacity_gbps,
            capacity_known: true,
            latency_ns: kind.default_latency_ns(),
        }
    }
}

/// Where a loopback path turns from going up towards the CPU to going down to the endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "at", content = "id", rename_all = "snake_case")]
pub enum Turnaround {
    /// Peer-to-peer inside a PCIe switch: the path never reaches the CPU.
    Switch(ComponentId),
    /// Through a CPU root complex (memory access, or GDR across root ports or sockets).
    RootComplex(ComponentId),
}

/// The loopback path between one RNIC and one endpoint (DESIGN 2).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Path {
    /// The probing RNIC.
    pub rnic: ComponentId,
    /// The memory node or GPU probed.
    pub endpoint: ComponentId,
    /// The links crossed, in order from the RNIC to the endpoint.
    pub links: Vec<LinkId>,
    /// Where the path turns.
    pub turnaround: Turnaround,
    /// True when a GPU is reached peer-to-peer through a CPU root complex (GDR distance 3
    /// or 4 of Hostping 3.2.2), which bounds the read bandwidth by latency.
    pub p2p_through_cpu: bool,
    /// Whether the RNIC reaches this endpoint at line rate (Hostping 4.3 and footnote 5),
    /// as far as the links of known capacity say.
    pub affinitive: bool,
    /// False when a link of the path has an unknown capacity ([`Link::capacity_known`]):
    /// what the path should carry is not known, so its bandwidth cannot be judged
    /// (`NotJudgedReason::NotMeasurable`).
    pub capacity_known: bool,
}

/// A validated host model with its paths. Build one with `hostfile::parse` or
/// [`crate::builtin::load`].
#[derive(Debug, Clone, Serialize)]
pub struct HostTopology {
    /// Model name (`dgx-a100`).
    pub name: String,
    /// One line saying what the model is.
    pub description: String,
    components: Vec<Component>,
    links: Vec<Link>,
    paths: Vec<Path>,
    /// The IOMMU of the host (HotNets'22 3.1 parameters; the defaults unless the model
    /// file has an `[iommu]` table).
    pub iommu: crate::iommu::IommuModel,
    /// The RNICs' RC transport over ODP memory (the defaults unless the model file has an
    /// `[odp]` table).
    pub odp: crate::odp_model::OdpModel,
    #[serde(skip)]
    component_index: HashMap<ComponentId, usize>,
    #[serde(skip)]
    link_index: HashMap<LinkId, usize>,
    /// Component id -> index of its upstream link.
    #[serde(skip)]
    upstream: HashMap<ComponentId, usize>,
}

/// Why a set of components and links is not a host this model can describe.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct StructureError {
    /// The component or link at fault (`link[3]`, `component rnic0`).
    pub field: String,
    /// What is wrong with it.
    pub reason: String,
}

fn structure_error(field: impl Into<String>, reason: impl Into<String>) -> StructureError {
    StructureError {
        field: field.into(),
        reason: reason.into(),
    }
}

impl HostTopology {
    /// Checks the structure and derives sockets, paths and affinity.
    ///
    /// `components[i].socket` is ignored and recomputed. Links must already have ids of the
    /// form `<down>--<up>`.
    pub fn new(
        name: String,
        description: String,
        mut components: Vec<Component>,
        links: Vec<Link>,
    ) -> Result<Self, StructureError> {
        let mut component_index = HashMap::new();
        for (i, c) in components.iter().enumerate() {
            if component_index.insert(c.id.clone(), i).is_some() {
                return Err(structure_error(
                    format!("component {}", c.id),
                    "duplicate id",
                ));
            }
        }
        let mut link_index = HashMap::new();
        let mut upstream = HashMap::new();
        for (i, l) in links.iter().enumerate() {
            let field = format!("link {}", l.id);
            for end in [&l.down, &l.up] {
                if !component_index.contains_key(end) {
                    return Err(structure_error(field, format!("unknown component `{end}`")));
                }
            }
            if link_index.insert(l.id.clone(), i).is_some() {
                return Err(structure_error(field, "duplicate link"));
            }
            if !(l.capacity_gbps > 0.0 && l.capacity_gbps.is_finite()) {
                return Err(structure_error(
                    field,
                    "capacity must be a positive number of Gb/s",
                ));
            }
            if !(l.latency_ns >= 0.0 && l.latency_ns.is_finite()) {
                return Err(structure_error(
                    field,
                    "latency must be a non-negative number of ns",
                ));
            }
            if l.kind != LinkKind::InterSocket && upstream.insert(l.down.clone(), i).is_some() {
                return Err(structure_error(
                    field,
                    format!(
                        "`{}` already has an upstream link; a host is a tree per socket",
                        l.down
                    ),
                ));
            }
        }
        let mut topo = HostTopology {
            name,
            description,
            components: Vec::new(),
            links,
            paths: Vec::new(),
            iommu: crate::iommu::IommuModel::default(),
            odp: crate::odp_model::OdpModel::default(),
            component_index,
            link_index,
            upstream,
        };
        // Every non-CPU component must reach a CPU by its upstream links; that CPU is its
        // socket. The step bound stops a cycle in a malformed file.
        let sockets = components
            .iter()
            .map(|c| topo.socket_of(&c.id, &components))
            .collect::<Result<Vec<_>, _>>()?;
        for (c, socket) in components.iter_mut().zip(sockets) {
            c.socket = socket;
        }
        topo.components = components;
        topo.check_kinds()?;
        if topo.rnics().next().is_none() {
            return Err(structure_error(
                "component",
                "a host needs at least one rnic",
            ));
        }
        topo.paths = topo.derive_paths()?;
        Ok(topo)
    }

    fn socket_of(
        &self,
        id: &ComponentId,
        components: &[Component],
    ) -> Result<ComponentId, StructureError> {
        let mut at = id.clone();
        for _ in 0..=components.len() {
            let c = &components[self.component_index[&at]];
            if c.class() == ComponentClass::Cpu {
                return Ok(at);
            }
            match self.upstream.get(&at) {
                Some(&l) => at = self.links[l].up.clone(),
                None => {
                    return Err(structure_error(
                        format!("component {id}"),
                        format!("`{at}` has no upstream link, so `{id}` reaches no cpu"),
                    ))
                }
            }
        }
        Err(structure_error(
            format!("component {id}"),
            "its upstream links form a cycle",
        ))
    }

    /// Each link's kind must match the classes of its two ends, and devices must be leaves.
    fn check_kinds(&self) -> Result<(), StructureError> {
        use ComponentClass as C;
        for l in &self.links {
            let down = self.component(&l.down).expect("checked").class();
            let up = self.component(&l.up).expect("checked").class();
            let expected = expected_link_kind(down, up).ok_or_else(|| {
                structure_error(
                    format!("link {}", l.id),
                    format!("a {} cannot hang below a {}", down.as_str(), up.as_str()),
                )
            })?;
            if expected != l.kind {
                return Err(structure_error(
                    format!("link {}", l.id),
                    format!(
                        "kind is {} but a {} below a {} is a {} link",
                        l.kind.as_str(),
                        down.as_str(),
                        up.as_str(),
                        expected.as_str()
                    ),
                ));
            }
            if matches!(up, C::Gpu | C::Rnic | C::Memory) {
                return Err(structure_error(
                    format!("link {}", l.id),
                    format!("a {} has nothing below it", up.as_str()),
                ));
            }
        }
        Ok(())
    }

    /// All components, in the order of the model file.
    pub fn components(&self) -> &[Component] {
        &self.components
    }

    /// All links, in the order of the model file.
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// Every RNIC x endpoint path: RNICs in file order, memory nodes before GPUs.
    pub fn paths(&self) -> &[Path] {
        &self.paths
    }

    /// A component by id.
    pub fn component(&self, id: &ComponentId) -> Option<&Component> {
        self.component_index.get(id).map(|&i| &self.components[i])
    }

    /// A link by id.
    pub fn link(&self, id: &LinkId) -> Option<&Link> {
        self.link_index.get(id).map(|&i| &self.links[i])
    }

    /// The RNICs, in file order.
    pub fn rnics(&self) -> impl Iterator<Item = &Component> {
        self.components
            .iter()
            .filter(|c| c.class() == ComponentClass::Rnic)
    }

    /// The endpoints: memory nodes, then GPUs, each in file order.
    pub fn endpoints(&self) -> impl Iterator<Item = &Component> {
        let mem = self
            .components
            .iter()
            .filter(|c| c.class() == ComponentClass::Memory);
        mem.chain(
            self.components
                .iter()
                .filter(|c| c.class() == ComponentClass::Gpu),
        )
    }

    /// The path from `rnic` to `endpoint`.
    pub fn path(&self, rnic: &ComponentId, endpoint: &ComponentId) -> Option<&Path> {
        self.paths
            .iter()
            .find(|p| &p.rnic == rnic && &p.endpoint == endpoint)
    }

    /// The paths of one RNIC, in endpoint order.
    pub fn paths_of<'a>(&'a self, rnic: &'a ComponentId) -> impl Iterator<Item = &'a Path> + 'a {
        self.paths.iter().filter(move |p| &p.rnic == rnic)
    }

    /// The links from `id` up to its CPU, nearest first.
    pub fn links_to_cpu(&self, id: &ComponentId) -> Vec<LinkId> {
        let mut out = Vec::new();
        let mut at = id;
        while let Some(&l) = self.upstream.get(at) {
            out.push(self.links[l].id.clone());
            at = &self.links[l].up;
        }
        out
    }

    /// The root-port link above `id`, if `id` sits in a PCIe tree.
    pub fn root_port_above(&self, id: &ComponentId) -> Option<LinkId> {
        self.links_to_cpu(id)
            .into_iter()
            .find(|l| self.link(l).map(|l| l.kind) == Some(LinkKind::RootPort))
    }

    /// Every link in the PCIe subtree under a root-port link, the root port included
    /// (Hostping 4.3: in busy mode these are judged by the abnormal RNIC alone).
    pub fn links_under_root_port(&self, root_port: &LinkId) -> Vec<LinkId> {
        self.links
            .iter()
            .filter(|l| l.kind != LinkKind::InterSocket && l.kind != LinkKind::MemoryChannel)
            .filter(|l| self.links_to_cpu(&l.down).contains(root_port))
            .map(|l| l.id.clone())
            .collect()
    }

    /// The endpoints an RNIC reaches at line rate.
    pub fn affinitive_endpoints<'a>(
        &'a self,
        rnic: &'a ComponentId,
    ) -> impl Iterator<Item = &'a ComponentId> + 'a {
        self.paths_of(rnic)
            .filter(|p| p.affinitive)
            .map(|p| &p.endpoint)
    }

    /// The component chain from `id` to its CPU, `id` first.
    fn chain_to_cpu(&self, id: &ComponentId) -> Vec<ComponentId> {
        let mut out = vec![id.clone()];
        let mut at = id;
        while let Some(&l) = self.upstream.get(at) {
            at = &self.links[l].up;
            out.push(at.clone());
        }
        out
    }

    /// Inter-socket links on a shortest route between two CPUs (breadth-first).
    fn socket_route(&self, from: &ComponentId, to: &ComponentId) -> Option<Vec<LinkId>> {
        let mut prev: HashMap<ComponentId, (ComponentId, LinkId)> = HashMap::new();
        let mut queue = VecDeque::from([from.clone()]);
        while let Some(cpu) = queue.pop_front() {
            if &cpu == to {
                let mut route = Vec::new();
                let mut at = cpu;
                while &at != from {
                    let (p, l) = prev[&at].clone();
                    route.push(l);
                    at = p;
                }
                route.reverse();
                return Some(route);
            }
            for l in self
                .links
                .iter()
                .filter(|l| l.kind == LinkKind::InterSocket)
            {
                let next = if l.down == cpu {
                    &l.up
                } else if l.up == cpu {
                    &l.down
                } else {
                    continue;
                };
                if next != from && !prev.contains_key(next) {
                    prev.insert(next.clone(), (cpu.clone(), l.id.clone()));
                    queue.push_back(next.clone());
                }
            }
        }
        None
    }

    fn derive_paths(&self) -> Result<Vec<Path>, StructureError> {
        let mut paths = Vec::new();
        let endpoints: Vec<&Component> = self.endpoints().collect();
        for rnic in self.rnics() {
            let line_rate = rnic.rnic().expect("rnic").line_rate_gbps;
            let up_chain = self.chain_to_cpu(&rnic.id);
            for ep in &endpoints {
                let down_chain = self.chain_to_cpu(&ep.id);
                let shared = down_chain.iter().position(|c| up_chain.contains(c));
                let (turn, cross) = match shared {
                    Some(i) => (down_chain[i].clone(), Vec::new()),
                    None => {
                        let from = up_chain.last().expect("non-empty");
                        let to = down_chain.last().expect("non-empty");
                        let route = self.socket_route(from, to).ok_or_else(|| {
                            structure_error(
                                format!("component {}", ep.id),
                                format!("no inter_socket link joins {from} to {to}"),
                            )
                        })?;
                        (to.clone(), route)
                    }
                };
                let mut links = Vec::new();
                // Up from the RNIC to the turn (or to its own CPU when crossing sockets).
                for c in &up_chain {
                    if c == &turn
                        || (!cross.is_empty()
                            && self.component(c).map(Component::class) == Some(ComponentClass::Cpu))
                    {
                        break;
                    }
                    links.push(self.links[self.upstream[c]].id.clone());
                }
                links.extend(cross.iter().cloned());
                let down_links: Vec<LinkId> = down_chain
                    .iter()
                    .take_while(|c| *c != &turn)
                    .map(|c| self.links[self.upstream[c]].id.clone())
                    .collect();
                links.extend(down_links.into_iter().rev());
                let turn_is_cpu =
                    self.component(&turn).map(Component::class) == Some(ComponentClass::Cpu);
                let p2p_through_cpu = ep.class() == ComponentClass::Gpu && turn_is_cpu;
                let on_path: Vec<&Link> = links
                    .iter()
                    .map(|l| self.link(l).expect("derived from links"))
                    .collect();
                let capacity_known = on_path.iter().all(|l| l.capacity_known);
                // A placeholder capacity bounds nothing: only known links decide affinity.
                let bottleneck = on_path
                    .iter()
                    .filter(|l| l.capacity_known)
                    .map(|l| l.capacity_gbps / l.kind.loopback_load())
                    .fold(f64::INFINITY, f64::min);
                paths.push(Path {
                    rnic: rnic.id.clone(),
                    endpoint: ep.id.clone(),
                    links,
                    turnaround: if turn_is_cpu {
                        Turnaround::RootComplex(turn)
                    } else {
                        Turnaround::Switch(turn)
                    },
                    p2p_through_cpu,
                    // Memory nodes are affinitive when the route has the capacity for line
                    // rate (Hostping footnote 5); GPUs only when reached without the root
                    // complex, whose P2P latency caps reads (Hostping 3.2.2).
                    affinitive: !p2p_through_cpu && bottleneck >= line_rate,
                    capacity_known,
                });
            }
        }
        Ok(paths)
    }
}

/// The link kind implied by the classes of a link's two ends, if they may be joined.
pub fn expected_link_kind(down: ComponentClass, up: ComponentClass) -> Option<LinkKind> {
    use ComponentClass as C;
    match (down, up) {
        (C::Rnic, C::PcieSwitch | C::Cpu) => Some(LinkKind::RnicPcie),
        (C::Gpu, C::PcieSwitch | C::Cpu) => Some(LinkKind::GpuPcie),
        (C::PcieSwitch, C::PcieSwitch) => Some(LinkKind::SwitchUplink),
        (C::PcieSwitch, C::Cpu) => Some(LinkKind::RootPort),
        (C::Memory, C::Cpu) => Some(LinkKind::MemoryChannel),
        (C::Cpu, C::Cpu) => Some(LinkKind::InterSocket),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn component(id: &str, kind: ComponentKind) -> Component {
        Component {
            id: id.into(),
            socket: id.into(),
            kind,
        }
    }

    fn link(down: &str, up: &str, kind: LinkKind, gbps: f64, known: bool) -> Link {
        Link {
            id: LinkId::between(&down.into(), &up.into()),
            kind,
            down: down.into(),
            up: up.into(),
            capacity_gbps: gbps,
            capacity_known: known,
            latency_ns: 10.0,
        }
    }

    /// cpu0 with mem0, a switch sw0 on a root port whose capacity is `root_gbps` (known
    /// or not), rnic0 and gpu0 on it.
    fn host(root_gbps: f64, root_known: bool) -> HostTopology {
        let components = vec![
            component(
                "cpu0",
                ComponentKind::Cpu {
                    p2p_forward_ns: 0.0,
                },
            ),
            component("mem0", ComponentKind::Memory { access_ns: 0.0 }),
            component("sw0", ComponentKind::PcieSwitch),
            component("gpu0", ComponentKind::Gpu { access_ns: 0.0 }),
            component(
                "rnic0",
                ComponentKind::Rnic(Rnic {
                    line_rate_gbps: 200.0,
                    proc_ns: 0.0,
                    read_window_bytes: 1.0,
                    qp_window_bytes: 1.0,
                }),
            ),
        ];
        let links = vec![
            link("mem0", "cpu0", LinkKind::MemoryChannel, 1600.0, true),
            link("sw0", "cpu0", LinkKind::RootPort, root_gbps, root_known),
            link("gpu0", "sw0", LinkKind::GpuPcie, 252.0, true),
            link("rnic0", "sw0", LinkKind::RnicPcie, 252.0, true),
        ];
        HostTopology::new("t".into(), "t".into(), components, links).unwrap()
    }

    #[test]
    fn a_path_across_a_link_of_unknown_capacity_says_so() {
        // A VM's root port reporting 2.5 GT/s x1 (2 Gb/s) is unknown: it neither caps
        // affinity nor lets the path claim a capacity.
        let vm = host(2.0, false);
        let mem0 = vm.path(&"rnic0".into(), &"mem0".into()).unwrap();
        assert!(!mem0.capacity_known);
        assert!(mem0.affinitive);
        let gpu0 = vm.path(&"rnic0".into(), &"gpu0".into()).unwrap();
        assert!(
            gpu0.capacity_known,
            "peer-to-peer in sw0: the root port is not on it"
        );

        // Known, the same 2 Gb/s makes mem0 unreachable at line rate.
        let metal = host(2.0, true);
        let mem0 = metal.path(&"rnic0".into(), &"mem0".into()).unwrap();
        assert!(mem0.capacity_known);
        assert!(!mem0.affinitive);
    }
}
