//! The flow network of a host with its faults: which resources each flow loads, and what
//! each flow gets (max-min fair, [`crate::maxmin`]) at one flap phase.
//!
//! All numbers are per direction, in Gb/s.
//!
//! - **Resources.** Each PCIe or inter-socket link is full duplex: two resources, one per
//!   direction (`Up` = towards the CPU, or from `down` to `up` for an inter-socket link).
//!   A memory channel is one resource, its DRAM bus, which reads and writes share. Each
//!   RNIC adds one resource: its receive side at line rate.
//! - **Capacity** of a link resource = `capacity * health - other`, where health is the
//!   product of the `degrade` fractions on the link, times the `flap` fractions in a
//!   degraded half-period, and `other` is the `overload` share (summed, at most 1) of the
//!   *nominal* capacity, loaded on both directions. Other traffic is fixed: it does not
//!   yield to the probe or to services.
//! - **Probe flow** (elastic): a loopback reads from the endpoint and writes back, so it
//!   loads each direction of every PCIe / inter-socket hop by its rate R, a memory channel
//!   by 2R (`LinkKind::loopback_load`), and its RNIC's receive side by R (the write back).
//! - **Service flows** (demand-limited): received from the network and written to an
//!   endpoint, they load only the RNIC-to-endpoint direction of each hop, a memory channel
//!   by R, and the RNIC's receive side by R. `service:<rnic>:<gbps>` without an endpoint is
//!   split equally over the RNIC's affinitive endpoints (over all its endpoints if it has
//!   none).
//! - **Detour** (Hostping 6 #7, #8): with ACS on at a path's turnaround switch, or ATS off
//!   on the RNIC of a path that reaches a GPU without the CPU, the path goes from the
//!   turnaround switch up to the root complex and back down: `links_to_cpu(switch)` are
//!   crossed twice more (once up, once down, so a probe loads each of their directions 2R),
//!   their latencies count twice in the one-way sum, and the CPU's `p2p_forward_ns` is paid.
//!   ACS at a switch no path turns at changes nothing: traffic through it is already going
//!   up or down.
//! - **Memory bus** (HotNets'22 3.2, `membw`): the cores' traffic on a memory node is a
//!   fixed load on its memory channel, like `overload`'s other traffic, and like it does not
//!   yield to DMA: "when memory bus is contended, CPUs are able to acquire a larger fraction
//!   of memory bus bandwidth than NIC". The channel keeps its capacity (it is healthy); the
//!   probe gets what the cores leave, and queueing on the channel raises its latency. It is
//!   kept apart from `overload` only so the uncore view can say whose traffic it is.
//! - **IOMMU** (HotNets'22 3.1, `iommu`): an RNIC whose DMA is translated gets one more
//!   resource, its NIC-to-memory path, of capacity `C * pkt / (T_base + M * T_miss)`
//!   ([`model::IommuModel::bound_gbps`]), where M = translations per packet x miss ratio of
//!   an IOTLB of N entries against the working set in pages. The probe's write back and
//!   service traffic to a memory node load it by their rate; each probe message also pays
//!   one translation for its read and one for its write, `2 * miss_ratio * T_miss` of
//!   Lat_host. Paths to GPU memory are not translated: the RNIC reaches GPU memory
//!   peer-to-peer with addresses translated ahead of time by ATS, which the IOTLB bound of
//!   3.1 (writes into host memory through the root complex) does not describe; with ATS
//!   off such a path is detoured through the root complex, which Hostping 6 #8 names.
//! - **Bus monitor view**: the utilisation of a link is its busiest direction's other
//!   traffic plus delivered *service* load over its nominal capacity. The probe is left
//!   out on purpose: a probe saturates whatever limits it, so counting it would make every
//!   degraded link look overloaded and hide a failure behind a false contention diagnosis
//!   (Hostping 4.1.2 tells the two apart by utilisation).

use crate::fault::Fault;
use crate::latency::{queueing, RnicLimits};
use crate::maxmin::{self, Flow};
use model::{ComponentClass, ComponentKind, HostTopology, LinkId, LinkKind, Turnaround};

/// Direction of travel over a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    /// From `down` to `up`.
    Up,
    /// From `up` to `down`.
    Down,
}

/// One link with its faults.
#[derive(Debug, Clone)]
struct LinkModel {
    capacity_gbps: f64,
    latency_ns: f64,
    kind: LinkKind,
    /// Product of `degrade` fractions.
    degrade: f64,
    /// Product of `flap` fractions, applied in degraded half-periods (1 when none).
    flap: f64,
    /// Share of nominal capacity taken by other traffic, per direction.
    other_share: f64,
    /// Share of nominal capacity taken by the cores' memory traffic (`membw`; memory
    /// channels only), on top of `other_share`.
    cores_share: f64,
    /// Resource of each direction, `[Up, Down]`; equal for a memory channel's bus.
    res: [usize; 2],
}

impl LinkModel {
    /// A healthy link; takes its resources from `n_res` onwards.
    fn new(l: &model::Link, n_res: &mut usize) -> LinkModel {
        let res = if l.kind == LinkKind::MemoryChannel {
            [*n_res, *n_res]
        } else {
            [*n_res, *n_res + 1]
        };
        *n_res = res[1] + 1;
        LinkModel {
            capacity_gbps: l.capacity_gbps,
            latency_ns: l.latency_ns,
            kind: l.kind,
            degrade: 1.0,
            flap: 1.0,
            other_share: 0.0,
            cores_share: 0.0,
            res,
        }
    }

    fn res(&self, dir: Dir) -> usize {
        match dir {
            Dir::Up => self.res[0],
            Dir::Down => self.res[1],
        }
    }

    fn shared_bus(&self) -> bool {
        self.res[0] == self.res[1]
    }
}

/// One RNIC with its faults.
#[derive(Debug, Clone)]
pub(crate) struct RnicModel {
    /// Rate limits (the Tx window already applied).
    pub limits: RnicLimits,
    /// Slow start enabled.
    pub slow_start: bool,
    /// Its receive-side resource.
    res: usize,
    /// Its DMA translated by the IOMMU, when an `iommu` fault says so.
    pub iommu: Option<Translation>,
}

/// An RNIC's translated DMA (HotNets'22 3.1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Translation {
    /// Page size of its mappings, bytes.
    pub page_bytes: u64,
    /// Bytes its active buffers span.
    pub working_set_bytes: u64,
    /// Share of translations that miss the IOTLB.
    pub miss_ratio: f64,
    /// IOTLB misses per DMA write (M).
    pub misses_per_packet: f64,
    /// Translations per DMA write.
    pub translations_per_packet: f64,
    /// The NIC-to-memory bound, Gb/s.
    pub bound_gbps: f64,
    /// Extra Lat_host of one probe message: a read and a write translation, ns.
    pub message_ns: f64,
    /// Its resource (the NIC-to-memory path).
    res: usize,
}

impl Translation {
    /// DMA translated with pages of `page_bytes` over a working set of `working_set_bytes`,
    /// on the IOMMU `iommu` of the host model; takes resource `n_res`.
    fn new(
        iommu: &model::IommuModel,
        page_bytes: u64,
        working_set_bytes: u64,
        n_res: &mut usize,
    ) -> Translation {
        let res = *n_res;
        *n_res += 1;
        let miss_ratio = iommu.miss_ratio(working_set_bytes, page_bytes);
        let translations_per_packet = iommu.translations_per_packet(page_bytes);
        let misses_per_packet = translations_per_packet * miss_ratio;
        Translation {
            page_bytes,
            working_set_bytes,
            miss_ratio,
            misses_per_packet,
            translations_per_packet,
            bound_gbps: iommu.bound_gbps(misses_per_packet),
            message_ns: 2.0 * miss_ratio * iommu.t_miss_ns,
            res,
        }
    }
}

impl RnicModel {
    /// An RNIC as its model file describes it; takes resource `n_res`.
    fn new(c: &model::Component, n_res: &mut usize) -> RnicModel {
        let r = c.rnic().expect("rnics() yields rnics");
        let res = *n_res;
        *n_res += 1;
        RnicModel {
            limits: RnicLimits {
                line_rate_gbps: r.line_rate_gbps,
                proc_ns: r.proc_ns,
                read_window_bytes: r.read_window_bytes,
                qp_window_bytes: r.qp_window_bytes,
            },
            slow_start: false,
            res,
            iommu: None,
        }
    }
}

/// A path as the flow model sees it.
#[derive(Debug, Clone)]
struct Route {
    rnic: usize,
    /// `(link, direction)` from the RNIC to the endpoint, detour crossings included.
    hops: Vec<(usize, Dir)>,
    /// Endpoint access plus root-complex forwarding, ns.
    fixed_ns: f64,
    /// The probe flow's resource usage.
    probe: Vec<(usize, f64)>,
}

impl Route {
    /// The route of `path` from RNIC number `rnic`, detoured through the root complex
    /// above `detour` (a switch) when ACS or ATS sends it there.
    fn new(
        host: &HostTopology,
        path: &model::Path,
        rnic: usize,
        detour: Option<&model::ComponentId>,
        links: &[LinkModel],
        rnics: &[RnicModel],
    ) -> Route {
        let index = |id: &LinkId| {
            host.links()
                .iter()
                .position(|l| &l.id == id)
                .expect("paths cross links")
        };
        let forward_ns = |cpu: &model::ComponentId| match host.component(cpu).map(|c| &c.kind) {
            Some(ComponentKind::Cpu { p2p_forward_ns }) => *p2p_forward_ns,
            _ => 0.0,
        };
        // Walk from the RNIC: a link is crossed upwards when we stand at its `down` end.
        let mut hops = Vec::with_capacity(path.links.len() + 4);
        let mut at = &path.rnic;
        for id in &path.links {
            let l = &host.links()[index(id)];
            let dir = if &l.down == at { Dir::Up } else { Dir::Down };
            at = if dir == Dir::Up { &l.up } else { &l.down };
            hops.push((index(id), dir));
        }
        let mut fixed_ns = match host.component(&path.endpoint).map(|c| &c.kind) {
            Some(ComponentKind::Memory { access_ns } | ComponentKind::Gpu { access_ns }) => {
                *access_ns
            }
            _ => 0.0,
        };
        if let (true, Turnaround::RootComplex(cpu)) = (path.p2p_through_cpu, &path.turnaround) {
            fixed_ns += forward_ns(cpu);
        }
        if let Some(switch) = detour {
            // Up from the turnaround switch to the CPU and back down (Hostping 6 #7, #8).
            let extra = host.links_to_cpu(switch);
            let turn = hops.iter().take_while(|(_, d)| *d == Dir::Up).count();
            let up = extra.iter().map(|id| (index(id), Dir::Up));
            let down = extra.iter().rev().map(|id| (index(id), Dir::Down));
            hops.splice(turn..turn, up.chain(down));
            if let Some(l) = extra.last().and_then(|id| host.link(id)) {
                fixed_ns += forward_ns(&l.up);
            }
        }
        let mut probe: Vec<(usize, f64)> = vec![(rnics[rnic].res, 1.0)];
        if let Some(t) = translated_to(host, path, &rnics[rnic]) {
            // The write back is the posted DMA write the credits bound (HotNets'22 3.1).
            probe.push((t.res, 1.0));
            fixed_ns += t.message_ns;
        }
        for &(l, _) in &hops {
            // The read and the write back: both directions, or the shared DRAM bus twice.
            let link = &links[l];
            let load = link.kind.loopback_load();
            probe.push((link.res[0], load));
            if !link.shared_bus() {
                probe.push((link.res[1], load));
            }
        }
        Route {
            rnic,
            hops,
            fixed_ns,
            probe: merged(probe),
        }
    }
}

/// The translation of an RNIC's DMA to `path`'s endpoint: only host memory is translated
/// (see the module doc on GPU memory).
fn translated_to<'a>(
    host: &HostTopology,
    path: &model::Path,
    rnic: &'a RnicModel,
) -> Option<&'a Translation> {
    let to_memory =
        host.component(&path.endpoint).map(|c| c.class()) == Some(ComponentClass::Memory);
    rnic.iommu.as_ref().filter(|_| to_memory)
}

/// What a probe of one path sees at one phase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PathState {
    /// Round-trip intra-host latency, queueing included, ns.
    pub lat_host_ns: f64,
    /// The probe's max-min fair share next to the service traffic, Gb/s.
    pub share_gbps: f64,
}

/// The state of the network at one flap phase.
#[derive(Debug, Clone)]
pub(crate) struct Phase {
    /// Available capacity per resource.
    capacity: Vec<f64>,
    /// Capacity times health per resource (what queueing is measured against).
    effective: Vec<f64>,
    /// Other traffic plus delivered service load per resource.
    load: Vec<f64>,
    /// Of `load`, the delivered service traffic alone.
    service_load: Vec<f64>,
    /// Delivered rate per service flow.
    delivered: Vec<f64>,
    /// Per path, computed on first use.
    paths: Vec<Option<PathState>>,
}

/// A host's links, RNICs and paths as flows and resources.
#[derive(Debug, Clone)]
pub(crate) struct Network {
    links: Vec<LinkModel>,
    rnics: Vec<RnicModel>,
    /// Indexed like `HostTopology::paths`.
    routes: Vec<Route>,
    /// Service flows and the RNIC each belongs to.
    services: Vec<Flow>,
    service_rnic: Vec<usize>,
    n_res: usize,
    has_flaps: bool,
}

/// Sorts usage by resource and merges repeated resources.
fn merged(mut usage: Vec<(usize, f64)>) -> Vec<(usize, f64)> {
    usage.sort_by_key(|&(r, _)| r);
    let mut out: Vec<(usize, f64)> = Vec::with_capacity(usage.len());
    for (r, c) in usage {
        match out.last_mut() {
            Some((last, sum)) if *last == r => *sum += c,
            _ => out.push((r, c)),
        }
    }
    out
}

/// The faults that change how paths are routed (Hostping 6 #7, #8).
struct Redirects<'a> {
    acs_all: bool,
    acs: Vec<&'a str>,
    /// RNIC indices with ATS off.
    ats_off: Vec<usize>,
}

impl Redirects<'_> {
    /// Whether `path`, from RNIC `rnic`, detours through the root complex above `switch`.
    fn detour(
        &self,
        host: &HostTopology,
        path: &model::Path,
        rnic: usize,
    ) -> Option<model::ComponentId> {
        let Turnaround::Switch(s) = &path.turnaround else {
            return None;
        };
        let to_gpu = host.component(&path.endpoint).map(|c| c.class()) == Some(ComponentClass::Gpu);
        let acs = self.acs_all || self.acs.contains(&s.as_str());
        (acs || (to_gpu && self.ats_off.contains(&rnic))).then(|| s.clone())
    }
}

impl Network {
    /// Builds the network. Faults must have been checked against `host`
    /// ([`Fault::check`]); ids they name that `host` lacks are ignored here.
    pub(crate) fn new(host: &HostTopology, faults: &[Fault]) -> Network {
        let mut n_res = 0;
        let mut links: Vec<LinkModel> = host
            .links()
            .iter()
            .map(|l| LinkModel::new(l, &mut n_res))
            .collect();
        let mut rnics: Vec<RnicModel> = host
            .rnics()
            .map(|c| RnicModel::new(c, &mut n_res))
            .collect();
        let rnic_index = |id: &model::ComponentId| host.rnics().position(|c| &c.id == id);
        let link_index = |id: &LinkId| host.links().iter().position(|l| &l.id == id);

        let mut redirects = Redirects {
            acs_all: false,
            acs: Vec::new(),
            ats_off: Vec::new(),
        };
        let mut has_flaps = false;
        let mut tx_window: Vec<Option<f64>> = vec![None; rnics.len()];
        for f in faults {
            match f {
                Fault::Degrade { link, fraction } => {
                    if let Some(i) = link_index(link) {
                        links[i].degrade *= fraction;
                    }
                }
                Fault::Flap { link, fraction } => {
                    if let Some(i) = link_index(link) {
                        links[i].flap *= fraction;
                        has_flaps = true;
                    }
                }
                Fault::Overload { link, utilization } => {
                    if let Some(i) = link_index(link) {
                        links[i].other_share = (links[i].other_share + utilization).min(1.0);
                    }
                }
                Fault::Acs { switch: None } => redirects.acs_all = true,
                Fault::Acs { switch: Some(s) } => redirects.acs.push(s.as_str()),
                Fault::AtsOff { rnic } => redirects.ats_off.extend(rnic_index(rnic)),
                Fault::SlowStart { rnic } => {
                    if let Some(r) = rnic_index(rnic) {
                        rnics[r].slow_start = true;
                    }
                }
                Fault::TxWindow { rnic, bytes } => {
                    if let Some(r) = rnic_index(rnic) {
                        let b = *bytes as f64;
                        tx_window[r] = Some(tx_window[r].map_or(b, |w: f64| w.min(b)));
                    }
                }
                Fault::MemBw { mem, fraction } => {
                    let channel = host.links_to_cpu(mem).into_iter().next();
                    if let Some(i) = channel.as_ref().and_then(&link_index) {
                        links[i].cores_share = (links[i].cores_share + fraction).min(1.0);
                    }
                }
                Fault::Iommu {
                    rnic,
                    working_set_mib,
                    page,
                } => {
                    if let Some(r) = rnic_index(rnic) {
                        let bytes = (working_set_mib * 1024.0 * 1024.0).ceil() as u64;
                        rnics[r].iommu = Some(Translation::new(
                            &host.iommu,
                            page.bytes(),
                            bytes,
                            &mut n_res,
                        ));
                    }
                }
                Fault::Service { .. } | Fault::Odp { .. } => {}
            }
        }
        // The Tx window replaces the QP's in-flight limit (even upwards); the smallest wins.
        for (r, w) in rnics.iter_mut().zip(tx_window) {
            if let Some(w) = w {
                r.limits.qp_window_bytes = w;
            }
        }
        let routes: Vec<Route> = host
            .paths()
            .iter()
            .map(|p| {
                let rnic = rnic_index(&p.rnic).expect("paths start at rnics");
                Route::new(
                    host,
                    p,
                    rnic,
                    redirects.detour(host, p, rnic).as_ref(),
                    &links,
                    &rnics,
                )
            })
            .collect();
        let mut net = Network {
            links,
            rnics,
            routes,
            services: Vec::new(),
            service_rnic: Vec::new(),
            n_res,
            has_flaps,
        };
        for f in faults {
            if let Fault::Service {
                rnic,
                gbps,
                endpoint,
            } = f
            {
                net.add_service(host, rnic, *gbps, endpoint.as_ref());
            }
        }
        net
    }

    /// Adds the flows of `service:<rnic>:<gbps>[:<endpoint>]`: one flow, or the rate split
    /// equally over the RNIC's affinitive endpoints (all its endpoints if none is).
    fn add_service(
        &mut self,
        host: &HostTopology,
        rnic: &model::ComponentId,
        gbps: f64,
        endpoint: Option<&model::ComponentId>,
    ) {
        let Some(r) = host.rnics().position(|c| &c.id == rnic) else {
            return;
        };
        let of_rnic = |p: &model::Path| &p.rnic == rnic;
        let pick = |want: &dyn Fn(&model::Path) -> bool| -> Vec<usize> {
            host.paths()
                .iter()
                .enumerate()
                .filter(|(_, p)| of_rnic(p) && want(p))
                .map(|(i, _)| i)
                .collect()
        };
        let paths = match endpoint {
            Some(e) => pick(&|p| &p.endpoint == e),
            None => Some(pick(&|p| p.affinitive))
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| pick(&|_| true)),
        };
        for &p in &paths {
            // Received from the network and written to the endpoint: the RNIC's receive
            // side and the RNIC-to-endpoint direction of every hop.
            let mut usage = vec![(self.rnics[r].res, 1.0)];
            if let Some(t) = translated_to(host, &host.paths()[p], &self.rnics[r]) {
                usage.push((t.res, 1.0));
            }
            usage.extend(
                self.routes[p]
                    .hops
                    .iter()
                    .map(|&(l, d)| (self.links[l].res(d), 1.0)),
            );
            self.services.push(Flow {
                demand: gbps / paths.len() as f64,
                usage: merged(usage),
            });
            self.service_rnic.push(r);
        }
    }

    /// Whether any link flaps (otherwise both phases are the same).
    pub(crate) fn has_flaps(&self) -> bool {
        self.has_flaps
    }

    /// The RNIC a path starts at, by path index.
    pub(crate) fn rnic_of(&self, path: usize) -> &RnicModel {
        &self.rnics[self.routes[path].rnic]
    }

    /// The network in a healthy (`degraded == false`) or degraded flap half-period, with
    /// the service traffic placed (without any probe).
    pub(crate) fn phase(&self, degraded: bool) -> Phase {
        let mut capacity = vec![0.0; self.n_res];
        let mut effective = vec![0.0; self.n_res];
        let mut load = vec![0.0; self.n_res];
        for l in &self.links {
            let health = l.degrade * if degraded { l.flap } else { 1.0 };
            let eff = l.capacity_gbps * health;
            let other = (l.other_share + l.cores_share).min(1.0) * l.capacity_gbps;
            for r in l.res {
                capacity[r] = (eff - other).max(0.0);
                effective[r] = eff;
                load[r] = other;
            }
        }
        for r in &self.rnics {
            capacity[r.res] = r.limits.line_rate_gbps;
            effective[r.res] = r.limits.line_rate_gbps;
            if let Some(t) = &r.iommu {
                capacity[t.res] = t.bound_gbps;
                effective[t.res] = t.bound_gbps;
            }
        }
        let delivered = maxmin::solve(&capacity, &self.services);
        let mut service_load = vec![0.0; self.n_res];
        for (flow, rate) in self.services.iter().zip(&delivered) {
            for &(r, c) in &flow.usage {
                load[r] += rate * c;
                service_load[r] += rate * c;
            }
        }
        Phase {
            capacity,
            effective,
            load,
            service_load,
            delivered,
            paths: vec![None; self.routes.len()],
        }
    }

    /// What a probe of path `path` sees in `phase` (cached in the phase).
    pub(crate) fn path_state(&self, phase: &mut Phase, path: usize) -> PathState {
        if let Some(s) = phase.paths[path] {
            return s;
        }
        let route = &self.routes[path];
        let rho = |r: usize| {
            if phase.effective[r] > 0.0 {
                phase.load[r] / phase.effective[r]
            } else {
                f64::INFINITY
            }
        };
        let mut lat_host_ns = route.fixed_ns;
        for &(l, dir) in &route.hops {
            let link = &self.links[l];
            let back = if dir == Dir::Up { Dir::Down } else { Dir::Up };
            // Crossed once by the read and once by the write back, each with its queue.
            lat_host_ns += link.latency_ns
                * (2.0 + queueing(rho(link.res(dir))) + queueing(rho(link.res(back))));
        }
        let mut flows = self.services.clone();
        flows.push(Flow {
            demand: f64::INFINITY,
            usage: route.probe.clone(),
        });
        let share_gbps = *maxmin::solve(&phase.capacity, &flows)
            .last()
            .expect("the probe flow");
        let state = PathState {
            lat_host_ns,
            share_gbps,
        };
        phase.paths[path] = Some(state);
        state
    }

    /// Offered and delivered service traffic of RNIC `rnic` (by RNIC order), Gb/s.
    pub(crate) fn service_of(&self, phase: &Phase, rnic: usize) -> (f64, f64) {
        let mut offered = 0.0;
        let mut delivered = 0.0;
        for (i, flow) in self.services.iter().enumerate() {
            if self.service_rnic[i] == rnic {
                offered += flow.demand;
                delivered += phase.delivered[i];
            }
        }
        (offered, delivered)
    }

    /// RNIC number `rnic` (by RNIC order).
    pub(crate) fn rnic(&self, rnic: usize) -> &RnicModel {
        &self.rnics[rnic]
    }

    /// The memory bus of link `link` (by link order) as the uncore counters split it:
    /// `(nominal capacity, everything moved, of it the RNICs' DMA)`, Gb/s. A memory channel
    /// is one shared resource, so both numbers are of that bus.
    pub(crate) fn memory_bus(&self, phase: &Phase, link: usize) -> (f64, f64, f64) {
        let l = &self.links[link];
        let r = l.res[0];
        (l.capacity_gbps, phase.load[r], phase.service_load[r])
    }

    /// The bus monitor's utilisation of link `link` (by link order): the busiest
    /// direction's other plus service load over nominal capacity.
    pub(crate) fn utilisation(&self, phase: &Phase, link: usize) -> f64 {
        let l = &self.links[link];
        l.res.iter().map(|&r| phase.load[r]).fold(0.0, f64::max) / l.capacity_gbps
    }
}
