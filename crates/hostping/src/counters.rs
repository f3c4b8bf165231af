//! Every counter source at once: `hostping counters`, the agent's monitor snapshots, and
//! the configuration `hostping lint` judges.
//!
//! The real sources live in `rdma::counters`, one module each; here they are read together
//! and turned into model values: the monitor's [`HostSnapshot`] (Hostping 4.1.2, 4.2: RNIC
//! throughput, Tx pause ratio, drops, GPU activity, link utilisation from the bus monitor)
//! and the [`HostConfig`] (link training, ACS, ATS, IOMMU). A source the host lacks is
//! `unavailable` with the reason; a source that fails (permission denied, a malformed file)
//! is `error`, and the others are still read.
//!
//! Rates need two readings: the monitor keeps the previous one, so the agent's 1 s cadence
//! costs one reading per snapshot; a one-shot snapshot reads twice, [`WINDOW`] apart.

use crate::real::RealError;
use crate::render::Style;
use model::{
    AcsPort, AtsState, ComponentId, GpuActivity, HostConfig, HostSnapshot, HostTopology,
    IommuConfig, LinkKind, LinkTraining, LinkUtilisation, Provenance, RnicActivity,
};
use rdma::counters::{ethtool, iommu, nvml, pcie, rnic, uncore};
use rdma::sysfs::{self, Discovery, PciAddr, SysRoot};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use vhost::VirtualHost;

/// Between the two readings of a one-shot snapshot.
pub const WINDOW: Duration = Duration::from_millis(200);

/// How a source fared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceStatus {
    /// Read.
    Ok,
    /// Not on this host (no RDMA device, no NVIDIA driver, no uncore PMUs).
    Unavailable,
    /// Present but failed (permission denied, malformed file): the detail names it.
    Error,
}

/// One source's readings.
#[derive(Debug, Clone, Serialize)]
pub struct SourceReport {
    /// `rnic`, `ethtool`, `pcie`, `gpu`, `uncore`, `memory`.
    pub source: &'static str,
    /// How it fared.
    pub status: SourceStatus,
    /// Why it is unavailable or failed, or what is worth knowing.
    pub detail: Option<String>,
    /// The readings, as the source module types them.
    pub readings: serde_json::Value,
}

impl SourceReport {
    /// Whether the source was read.
    pub fn is_ok(&self) -> bool {
        self.status == SourceStatus::Ok
    }

    fn new(source: &'static str, readings: impl Serialize) -> SourceReport {
        SourceReport {
            source,
            status: SourceStatus::Ok,
            detail: None,
            readings: serde_json::to_value(readings).expect("readings serialise"),
        }
    }

    fn unavailable(source: &'static str, why: impl Into<String>) -> SourceReport {
        SourceReport {
            source,
            status: SourceStatus::Unavailable,
            detail: Some(why.into()),
            readings: serde_json::Value::Null,
        }
    }

    fn failed(mut self, why: impl Into<String>) -> SourceReport {
        self.status = SourceStatus::Error;
        self.detail = Some(why.into());
        self
    }
}

/// One snapshot of every source.
#[derive(Debug, Clone, Serialize)]
pub struct CounterReport {
    /// The host model, when there is one (an RDMA device to build it around).
    pub host: Option<String>,
    /// Read on this host, or produced by the virtual host.
    pub provenance: Provenance,
    /// Wall clock, ms since the epoch.
    pub at_unix_ms: i64,
    /// The monitors' view in model ids.
    pub monitor: HostSnapshot,
    /// The static configuration in model ids.
    pub config: HostConfig,
    /// Every source.
    pub sources: Vec<SourceReport>,
}

impl CounterReport {
    /// The failed sources in one line, if any.
    pub fn failed_sources(&self) -> Option<String> {
        let failed: Vec<String> = self
            .sources
            .iter()
            .filter(|s| s.status == SourceStatus::Error)
            .map(|s| format!("{}: {}", s.source, s.detail.as_deref().unwrap_or("failed")))
            .collect();
        (!failed.is_empty()).then(|| failed.join("; "))
    }
}

fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The virtual host's counters: its monitor snapshot and the configuration its faults imply.
pub fn simulated(host: &HostTopology, vh: &mut VirtualHost) -> CounterReport {
    use probe::Monitor;
    CounterReport {
        host: Some(host.name.clone()),
        provenance: Provenance::Simulated,
        at_unix_ms: unix_ms(),
        monitor: vh.snapshot(),
        config: vh.config(),
        sources: vec![SourceReport {
            source: "virtual host",
            status: SourceStatus::Ok,
            detail: Some(
                "SIMULATED: throughput, pause ratio and link utilisation from the flow model"
                    .into(),
            ),
            readings: serde_json::to_value(
                vh.faults()
                    .iter()
                    .map(|f| f.to_string())
                    .collect::<Vec<_>>(),
            )
            .expect("strings serialise"),
        }],
    }
}

/// One reading of the sources that change.
struct Sample {
    at: Instant,
    ports: Vec<rnic::PortCounters>,
    port_errors: Vec<String>,
    /// Per netdev.
    ethtool: BTreeMap<String, Result<ethtool::PauseDrops, ethtool::EthtoolError>>,
    gpus: Vec<Result<nvml::GpuReading, nvml::NvmlError>>,
    uncore: Option<Result<uncore::UncoreSample, String>>,
}

/// The counter sources of this host (or of a tree under `--sysfs-root`).
pub struct RealCounters {
    root: SysRoot,
    discovery: Discovery,
    nvml: Result<nvml::Nvml, String>,
    uncore: Result<uncore::UncoreMonitor, String>,
    prev: Option<Sample>,
}

impl RealCounters {
    /// Discovers the host and opens its counter sources ([`RealCounters::with_discovery`]).
    /// Only a malformed or unreadable tree is an error: missing sources are noted per source.
    pub fn open(root: SysRoot) -> Result<RealCounters, RealError> {
        let discovery = crate::real::discover(&root)?;
        Ok(RealCounters::with_discovery(root, discovery))
    }

    /// The counter sources of a host already discovered under `root`: NVML and the uncore
    /// PMUs are opened where they exist, and only for the running system (`/`): they
    /// belong to this kernel, not to a captured tree.
    pub fn with_discovery(root: SysRoot, discovery: Discovery) -> RealCounters {
        let (nvml, uncore) = if is_live(&root) {
            (
                nvml::Nvml::load().map_err(|e| e.to_string()),
                uncore::UncoreMonitor::open(&root).map_err(|e| e.reason),
            )
        } else {
            let tree = root.root().display();
            (
                Err(format!("no GPUs (NVML: not read for the captured tree {tree})")),
                Err(format!(
                    "uncore PMUs of the captured tree {tree} are not counted (perf_event counts this kernel)"
                )),
            )
        };
        RealCounters {
            root,
            discovery,
            nvml,
            uncore,
            prev: None,
        }
    }

    /// The host model, when discovery built one.
    pub fn host(&self) -> Option<&HostTopology> {
        self.discovery.host.as_ref()
    }

    /// The RoCE netdevs whose ethtool statistics carry pause and drops.
    fn netdevs(ports: &[rnic::PortCounters]) -> Vec<String> {
        let mut out: Vec<String> = ports
            .iter()
            .filter(|p| p.link_layer == sysfs::LinkLayer::Ethernet)
            .filter_map(|p| p.netdev.clone())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    fn sample(&self, throughput: nvml::Throughput) -> Sample {
        let (ports, errors) = rnic::read_ports_lenient(&self.root);
        let ethtool = if is_live(&self.root) {
            Self::netdevs(&ports)
                .into_iter()
                .map(|n| {
                    let stats =
                        ethtool::read_stats(&n).map(|s| ethtool::PauseDrops::from_stats(&s));
                    (n, stats)
                })
                .collect()
        } else {
            BTreeMap::new()
        };
        let gpus = match &self.nvml {
            Ok(n) => n.read_all(throughput).unwrap_or_else(|e| vec![Err(e)]),
            Err(_) => Vec::new(),
        };
        let uncore = self
            .uncore
            .as_ref()
            .ok()
            .map(|u| u.read().map_err(|e| e.to_string()));
        Sample {
            at: Instant::now(),
            ports,
            port_errors: errors.iter().map(|e| e.to_string()).collect(),
            ethtool,
            gpus,
            uncore,
        }
    }

    /// A new sample, with the previous one (taken [`WINDOW`] ago when there was none).
    fn advance(&mut self, throughput: nvml::Throughput) -> (Sample, Sample) {
        let prev = match self.prev.take() {
            Some(p) => p,
            None => {
                let first = self.sample(nvml::Throughput::Skip);
                std::thread::sleep(WINDOW);
                first
            }
        };
        let cur = self.sample(throughput);
        (prev, cur)
    }

    /// The monitors' view now, for the agent: no PCIe throughput from NVML (it blocks
    /// about 20 ms per GPU), everything else.
    pub fn monitor_snapshot(&mut self) -> HostSnapshot {
        let (prev, cur) = self.advance(nvml::Throughput::Skip);
        let snapshot = self.monitor(&prev, &cur);
        self.prev = Some(cur);
        snapshot
    }

    /// Every source, the monitor view and the configuration.
    pub fn read(&mut self) -> CounterReport {
        let (prev, cur) = self.advance(nvml::Throughput::Measure);
        let monitor = self.monitor(&prev, &cur);
        let mut sources = vec![
            self.rnic_source(&cur),
            self.ethtool_source(&cur),
            self.pcie_source(),
            self.gpu_source(&cur),
            self.uncore_source(&prev, &cur),
        ];
        let memory = iommu::read_memory_config(&self.root);
        sources.push(match &memory {
            Ok(m) => SourceReport::new("memory", m),
            Err(e) => SourceReport::new("memory", serde_json::Value::Null).failed(e.to_string()),
        });
        let config = self.config_from(memory.ok());
        self.prev = Some(cur);
        CounterReport {
            host: self.host().map(|h| h.name.clone()),
            provenance: Provenance::Measured,
            at_unix_ms: unix_ms(),
            monitor,
            config,
            sources,
        }
    }

    /// The static configuration alone (`hostping lint`).
    pub fn config(&mut self) -> HostConfig {
        let memory = iommu::read_memory_config(&self.root);
        let mut config = self.config_from(memory.as_ref().ok().cloned());
        if let Err(e) = memory {
            config
                .unavailable
                .push(format!("IOMMU and huge pages: {e}"));
        }
        config
    }

    fn rnic_source(&self, cur: &Sample) -> SourceReport {
        let report = if cur.ports.is_empty() && cur.port_errors.is_empty() {
            SourceReport::unavailable(
                "rnic",
                format!(
                    "no RDMA device found: {} has no devices",
                    self.root.path("sys/class/infiniband").display()
                ),
            )
        } else {
            SourceReport::new("rnic", &cur.ports)
        };
        if cur.port_errors.is_empty() {
            report
        } else {
            report.failed(cur.port_errors.join("; "))
        }
    }

    fn ethtool_source(&self, cur: &Sample) -> SourceReport {
        if !is_live(&self.root) {
            return SourceReport::unavailable(
                "ethtool",
                "ethtool statistics come from the running kernel, not from a captured tree",
            );
        }
        if cur.ethtool.is_empty() {
            return SourceReport::unavailable(
                "ethtool",
                "no RoCE netdev to read pause and drops from",
            );
        }
        let readings: BTreeMap<&String, serde_json::Value> = cur
            .ethtool
            .iter()
            .map(|(n, r)| {
                let v = match r {
                    Ok(p) => serde_json::to_value(p).expect("serialises"),
                    Err(e) => serde_json::json!({ "error": e.to_string() }),
                };
                (n, v)
            })
            .collect();
        let report = SourceReport::new("ethtool", readings);
        let failed: Vec<String> = cur
            .ethtool
            .values()
            .filter_map(|r| r.as_ref().err())
            .filter(|e| !matches!(e, ethtool::EthtoolError::NoStatistics { .. }))
            .map(|e| e.to_string())
            .collect();
        if failed.is_empty() {
            report
        } else {
            report.failed(failed.join("; "))
        }
    }

    /// The PCI functions on every RNIC and GPU path, root port first.
    fn pcie_functions(&self) -> Vec<PciAddr> {
        let mut devices: Vec<PciAddr> = self
            .discovery
            .rdma_ports
            .iter()
            .filter(|p| !p.software)
            .filter_map(|p| p.pci)
            .chain(self.discovery.gpus.iter().map(|g| g.pci))
            .collect();
        devices.sort();
        devices.dedup();
        devices
    }

    fn pcie_source(&self) -> SourceReport {
        let devices = self.pcie_functions();
        if devices.is_empty() {
            return SourceReport::unavailable("pcie", "no RNIC or GPU on a PCIe link");
        }
        let mut paths = BTreeMap::new();
        let mut errors = Vec::new();
        for d in devices {
            match pcie::read_path(&self.root, d) {
                Ok(p) => {
                    paths.insert(d.to_string(), p);
                }
                Err(e) => errors.push(e.to_string()),
            }
        }
        let report = SourceReport::new("pcie", &paths);
        if errors.is_empty() {
            report
        } else {
            report.failed(errors.join("; "))
        }
    }

    fn gpu_source(&self, cur: &Sample) -> SourceReport {
        match &self.nvml {
            Err(why) => SourceReport::unavailable("gpu", why.clone()),
            Ok(_) => {
                let readings: Vec<serde_json::Value> = cur
                    .gpus
                    .iter()
                    .map(|g| match g {
                        Ok(r) => serde_json::to_value(r).expect("serialises"),
                        Err(e) => serde_json::json!({ "error": e.to_string() }),
                    })
                    .collect();
                SourceReport::new("gpu", readings)
            }
        }
    }

    fn uncore_source(&self, prev: &Sample, cur: &Sample) -> SourceReport {
        let monitor = match &self.uncore {
            Err(why) => return SourceReport::unavailable("uncore", why.clone()),
            Ok(m) => m,
        };
        let dt = cur.at.duration_since(prev.at).as_secs_f64();
        match (&prev.uncore, &cur.uncore) {
            (Some(Ok(p)), Some(Ok(c))) => {
                let mut report = SourceReport::new("uncore", uncore::rates(p, c, dt));
                let gaps: Vec<String> = monitor.gaps().iter().map(|g| g.to_string()).collect();
                if !gaps.is_empty() {
                    report.detail = Some(gaps.join("; "));
                }
                report
            }
            (_, Some(Err(e))) | (Some(Err(e)), _) => {
                SourceReport::new("uncore", serde_json::Value::Null).failed(e.clone())
            }
            _ => SourceReport::unavailable("uncore", "no reading yet"),
        }
    }

    /// The monitor view in model ids, from two samples.
    fn monitor(&self, prev: &Sample, cur: &Sample) -> HostSnapshot {
        let mut snapshot = HostSnapshot::default();
        let Some(host) = self.host() else {
            return snapshot;
        };
        let bindings = &self.discovery.bindings;
        let dt = cur.at.duration_since(prev.at).as_secs_f64();
        let port = |s: &'_ Sample, device: &str, port: u8| {
            s.ports
                .iter()
                .find(|p| p.device == device && p.port == port)
                .cloned()
        };
        for (id, b) in &bindings.rnics {
            let (Some(p), Some(c)) = (port(prev, &b.device, b.port), port(cur, &b.device, b.port))
            else {
                snapshot.rnics.push(RnicActivity {
                    id: id.clone(),
                    throughput_gbps: None,
                    tx_pause_ratio: None,
                    drops: None,
                });
                continue;
            };
            let rx = rnic::rcv_gbps(&p, &c, dt);
            let tx = rnic::xmit_gbps(&p, &c, dt);
            let throughput = match (rx, tx) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
            let eth = c.netdev.as_ref().and_then(|n| {
                let before = prev.ethtool.get(n)?.as_ref().ok()?;
                let after = cur.ethtool.get(n)?.as_ref().ok()?;
                Some((before, after))
            });
            let pause = eth.and_then(|(a, b)| ethtool::tx_pause_ratio(a, b, dt));
            let drops = match (
                rnic::drops_delta(&p, &c),
                eth.and_then(|(a, b)| ethtool::drops_delta(a, b)),
            ) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
            snapshot.rnics.push(RnicActivity {
                id: id.clone(),
                throughput_gbps: throughput,
                tx_pause_ratio: pause,
                drops,
            });
            if let (Some(gbps), Some(link)) = (throughput, upstream_link(host, id)) {
                snapshot.links.push(LinkUtilisation {
                    id: link.id.clone(),
                    utilisation: Some(gbps / link.capacity_gbps),
                });
            }
        }
        for (id, addr) in &bindings.gpus {
            let reading = cur
                .gpus
                .iter()
                .filter_map(|g| g.as_ref().ok())
                .find(|g| g.bus_id == *addr);
            snapshot.gpus.push(GpuActivity {
                id: id.clone(),
                busy: reading.and_then(|r| r.utilisation_gpu_pct).map(|u| u > 0),
            });
            let pcie = reading.and_then(|r| Some(r.pcie_tx_kbps?.max(r.pcie_rx_kbps?)));
            if let (Some(kbps), Some(link)) = (pcie, upstream_link(host, id)) {
                snapshot.links.push(LinkUtilisation {
                    id: link.id.clone(),
                    utilisation: Some(kbps as f64 * 8e3 / 1e9 / link.capacity_gbps),
                });
            }
        }
        if let (Some(Ok(p)), Some(Ok(c))) = (&prev.uncore, &cur.uncore) {
            snapshot
                .links
                .extend(self.bus_utilisation(host, &uncore::rates(p, c, dt)));
        }
        snapshot
    }

    /// Memory-channel, inter-socket and root-port utilisation from the uncore rates
    /// (Hostping 5: "Intel's and AMD's API for CPU root ports, memory channels, and
    /// inter-socket buses").
    fn bus_utilisation(
        &self,
        host: &HostTopology,
        rates: &[uncore::BusRate],
    ) -> Vec<LinkUtilisation> {
        let mut gbps: BTreeMap<model::LinkId, f64> = BTreeMap::new();
        let root_buses = self.root_port_buses(host);
        for r in rates {
            let Some(bytes) = r.bytes_per_s else { continue };
            let link = match &r.metric {
                uncore::BusMetric::MemoryRead { socket }
                | uncore::BusMetric::MemoryWrite { socket } => host.links().iter().find(|l| {
                    l.kind == LinkKind::MemoryChannel && l.up.as_str() == format!("cpu{socket}")
                }),
                uncore::BusMetric::InterSocketTx { socket, .. } => host.links().iter().find(|l| {
                    l.kind == LinkKind::InterSocket
                        && (l.up.as_str() == format!("cpu{socket}")
                            || l.down.as_str() == format!("cpu{socket}"))
                }),
                uncore::BusMetric::RootPortIn { root_bus }
                | uncore::BusMetric::RootPortOut { root_bus } => {
                    root_buses.get(root_bus).and_then(|l| host.link(l))
                }
            };
            if let Some(l) = link {
                let g = bytes * 8.0 / 1e9;
                let entry = gbps.entry(l.id.clone()).or_default();
                // Memory: read + write share the channels; the others: the busier direction.
                *entry = match r.metric.family() {
                    uncore::BusFamily::Memory => *entry + g,
                    _ => entry.max(g),
                };
            }
        }
        gbps.into_iter()
            .filter_map(|(id, g)| {
                let cap = host.link(&id)?.capacity_gbps;
                Some(LinkUtilisation {
                    id,
                    utilisation: Some(g / cap),
                })
            })
            .collect()
    }

    /// Root-port links by the root bus of the function below them (`pciDDDD:BB` in its
    /// sysfs path), which is how IIO stacks name what they serve (linux-counters.md 6).
    fn root_port_buses(&self, host: &HostTopology) -> BTreeMap<uncore::RootBus, model::LinkId> {
        let mut out = BTreeMap::new();
        for (link, addr) in &self.discovery.bindings.pcie_links {
            if host.link(link).map(|l| l.kind) != Some(LinkKind::RootPort) {
                continue;
            }
            let path = self.root.path(&format!("sys/bus/pci/devices/{addr}"));
            let Ok(real) = std::fs::canonicalize(&path) else {
                continue;
            };
            let bus = real
                .components()
                .filter_map(|c| c.as_os_str().to_str())
                .find_map(|c| c.strip_prefix("pci")?.parse::<uncore::RootBus>().ok());
            if let Some(bus) = bus {
                out.insert(bus, link.clone());
            }
        }
        out
    }

    fn config_from(&self, memory: Option<iommu::MemoryConfig>) -> HostConfig {
        let mut config = HostConfig {
            provenance: Some(Provenance::Measured),
            ..HostConfig::default()
        };
        if self.host().is_none() {
            config
                .unavailable
                .push("PCIe paths: no RDMA device, so no RNIC or GPU path to check".into());
            return config;
        }
        let bindings = &self.discovery.bindings;
        let mut unknown: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let read =
            |addr: PciAddr, config: &mut HostConfig| match pcie::read_function(&self.root, addr) {
                Ok(f) => Some(f),
                Err(e) => {
                    config.unavailable.push(e.to_string());
                    None
                }
            };
        for (link, addr) in &bindings.pcie_links {
            let path = match pcie::read_path(&self.root, *addr) {
                Ok(p) => p,
                Err(e) => {
                    config.unavailable.push(e.to_string());
                    continue;
                }
            };
            let Some((device, above)) = path.split_last() else {
                continue;
            };
            let Some((cur, max)) = pcie::link_state(above.last(), device) else {
                continue;
            };
            config.links.push(LinkTraining {
                link: link.clone(),
                function: Some(addr.to_string()),
                current_gts: cur.gts,
                current_width: cur.width,
                max_gts: max.gts,
                max_width: max.width,
            });
        }
        for (switch, ports) in &bindings.switches {
            for addr in &ports.downstream {
                let Some(f) = read(*addr, &mut config) else {
                    continue;
                };
                match &f.acs {
                    pcie::Capability::Present(acs) => config.acs.push(AcsPort {
                        switch: switch.clone(),
                        port: addr.to_string(),
                        redirect: acs.redirects(),
                        control: acs
                            .to_string()
                            .trim_start_matches("ACSCtl:")
                            .trim()
                            .to_string(),
                    }),
                    pcie::Capability::Unknown { reason } => unknown
                        .entry(reason.clone())
                        .or_default()
                        .push(addr.to_string()),
                    pcie::Capability::Absent => {}
                }
            }
        }
        let devices: Vec<(ComponentId, PciAddr)> = bindings
            .rnics
            .iter()
            .filter(|(_, b)| !b.software)
            .filter_map(|(id, b)| {
                let port = self
                    .discovery
                    .rdma_ports
                    .iter()
                    .find(|p| p.device == b.device && p.port == b.port)?;
                Some((id.clone(), port.pci?))
            })
            .chain(bindings.gpus.iter().cloned())
            .collect();
        for (id, addr) in devices {
            let Some(f) = read(addr, &mut config) else {
                continue;
            };
            match &f.ats {
                pcie::Capability::Present(ats) => config.ats.push(AtsState {
                    device: id,
                    enabled: ats.enabled,
                }),
                pcie::Capability::Unknown { reason } => unknown
                    .entry(reason.clone())
                    .or_default()
                    .push(addr.to_string()),
                pcie::Capability::Absent => {}
            }
        }
        for (reason, functions) in unknown {
            config
                .unavailable
                .push(format!("ACS/ATS of {}: {reason}", functions.join(", ")));
        }
        if let Some(m) = memory {
            config.iommu = Some(iommu_config(&m, &self.discovery));
        }
        config
    }
}

/// The IOMMU facts lint needs: whether any RNIC's DMA is translated, and the page supply.
fn iommu_config(m: &iommu::MemoryConfig, discovery: &Discovery) -> IommuConfig {
    let rnics: Vec<PciAddr> = discovery
        .rdma_ports
        .iter()
        .filter(|p| !p.software)
        .filter_map(|p| p.pci)
        .collect();
    let mode = rnics
        .iter()
        .filter_map(|a| m.iommu.group_of(*a)?.kind)
        .map(|k| k.to_string())
        .next()
        .unwrap_or_else(|| {
            match m.iommu.mode {
                iommu::IommuMode::Off => "off",
                iommu::IommuMode::Passthrough => "identity",
                iommu::IommuMode::Translated { lazy: true } => "DMA-FQ",
                iommu::IommuMode::Translated { lazy: false } => "DMA",
                iommu::IommuMode::Unknown => "unknown",
            }
            .to_string()
        });
    IommuConfig {
        translated: rnics.iter().any(|a| m.translates(*a)),
        mode,
        hugepages_total: m.hugepages_total().unwrap_or(0),
        thp: m.thp_enabled.clone(),
    }
}

/// The link above a device in the model.
fn upstream_link<'a>(host: &'a HostTopology, id: &ComponentId) -> Option<&'a model::Link> {
    host.link(host.links_to_cpu(id).first()?)
}

/// Whether `root` is the running system: ethtool, NVML and perf_event read this kernel,
/// whatever tree the files come from.
fn is_live(root: &SysRoot) -> bool {
    root.root() == std::path::Path::new("/")
}

/// `hostping counters` for people.
pub fn render(report: &CounterReport, style: Style) -> String {
    let mut out = String::new();
    let sim = if report.provenance == Provenance::Simulated {
        " (SIMULATED)"
    } else {
        ""
    };
    let host = report
        .host
        .as_deref()
        .unwrap_or("this host (no RDMA device)");
    let _ = writeln!(out, "{}{sim}", style.bold(&format!("counters: {host}")));
    let _ = writeln!(out, "\nsources:");
    for s in &report.sources {
        let status = match s.status {
            SourceStatus::Ok => style.green("ok"),
            SourceStatus::Unavailable => style.gray("unavailable"),
            SourceStatus::Error => style.red("error"),
        };
        let detail = s
            .detail
            .as_deref()
            .map(|d| format!("  {d}"))
            .unwrap_or_default();
        let _ = writeln!(out, "  {:<13} {status}{detail}", s.source);
    }
    let m = &report.monitor;
    if !m.rnics.is_empty() {
        let _ = writeln!(out, "\nRNICs:            throughput  tx pause    drops");
        for r in &m.rnics {
            let _ = writeln!(
                out,
                "  {:<14} {:>11} {:>9} {:>8}",
                r.id.as_str(),
                opt(r.throughput_gbps.map(|v| format!("{v:.2} Gb/s"))),
                opt(r.tx_pause_ratio.map(|v| format!("{:.2} %", v * 100.0))),
                opt(r.drops.map(|v| v.to_string())),
            );
        }
    }
    if !m.gpus.is_empty() {
        let busy: Vec<String> = m
            .gpus
            .iter()
            .map(|g| {
                format!(
                    "{} {}",
                    g.id,
                    opt(g.busy.map(|b| if b { "busy" } else { "idle" }.to_string()))
                )
            })
            .collect();
        let _ = writeln!(out, "\nGPUs: {}", busy.join(", "));
    }
    if !m.links.is_empty() {
        let _ = writeln!(out, "\nlink utilisation:");
        for l in &m.links {
            let _ = writeln!(
                out,
                "  {:<16} {}",
                l.id.as_str(),
                opt(l.utilisation.map(|u| format!("{:.1} %", u * 100.0)))
            );
        }
    }
    let c = &report.config;
    let down: Vec<&LinkTraining> = c.links.iter().filter(|t| t.downtrained()).collect();
    let _ = writeln!(
        out,
        "\nconfiguration: {} PCIe links read ({} downtrained), ACS on {} switch ports ({} redirecting), ATS on {} devices ({} off)",
        c.links.len(),
        down.len(),
        c.acs.len(),
        c.acs.iter().filter(|a| a.redirect).count(),
        c.ats.len(),
        c.ats.iter().filter(|a| !a.enabled).count()
    );
    if let Some(i) = &c.iommu {
        let _ = writeln!(
            out,
            "  IOMMU {} ({}), {} huge pages, THP {}",
            if i.translated {
                "translating RNIC DMA"
            } else {
                "not translating RNIC DMA"
            },
            i.mode,
            i.hugepages_total,
            i.thp.as_deref().unwrap_or("unknown")
        );
    }
    for u in &c.unavailable {
        let _ = writeln!(out, "  {}", style.gray(&format!("not read: {u}")));
    }
    let _ = writeln!(out, "\n(--format json has every counter of every source; `hostping lint` judges the configuration)");
    out
}

fn opt(v: Option<String>) -> String {
    v.unwrap_or_else(|| "-".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use uncore::{BusMetric, BusRate};

    fn dgx() -> RealCounters {
        let root = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../rdma/testdata/hosts/dgx-a100"
        );
        RealCounters::open(SysRoot::new(root)).unwrap()
    }

    #[test]
    fn the_bus_monitor_puts_uncore_rates_on_the_model_links() {
        let c = dgx();
        let host = c.host().unwrap().clone();
        let rate = |metric, gbytes: f64| BusRate {
            metric,
            bytes_per_s: Some(gbytes * 1e9),
        };
        let bus = |s: &str| s.parse::<uncore::RootBus>().unwrap();
        let rates = [
            rate(BusMetric::MemoryRead { socket: 0 }, 120.0),
            rate(BusMetric::MemoryWrite { socket: 0 }, 64.8),
            rate(
                BusMetric::InterSocketTx {
                    socket: 1,
                    pmu: "uncore_upi_0".into(),
                },
                30.0,
            ),
            rate(
                BusMetric::InterSocketTx {
                    socket: 1,
                    pmu: "uncore_upi_1".into(),
                },
                10.0,
            ),
            rate(
                BusMetric::RootPortIn {
                    root_bus: bus("0000:90"),
                },
                28.35,
            ),
            rate(
                BusMetric::RootPortOut {
                    root_bus: bus("0000:90"),
                },
                1.0,
            ),
        ];
        let got: BTreeMap<String, f64> = c
            .bus_utilisation(&host, &rates)
            .into_iter()
            .map(|l| (l.id.to_string(), l.utilisation.unwrap()))
            .collect();
        // Memory: read + write over 8 x DDR4-3200 (1638.4 Gb/s).
        assert!(
            (got["mem0--cpu0"] - 184.8 * 8.0 / 1638.4).abs() < 1e-9,
            "{got:?}"
        );
        // Inter-socket: the busiest of the two UPI PMUs of socket 1.
        assert!((got["cpu0--cpu1"] - 240.0 / 537.6).abs() < 1e-9, "{got:?}");
        // Root port of bus 0x90 (socket 1's first root port): the busier direction, over the
        // Gen4 x16 link of the switch below it.
        let root = host
            .links()
            .iter()
            .find(|l| l.kind == LinkKind::RootPort && got.contains_key(l.id.as_str()))
            .expect("a root-port link got a reading");
        assert_eq!(root.up.as_str(), "cpu1");
        assert!((got[root.id.as_str()] - 226.8 / root.capacity_gbps).abs() < 1e-9);
        assert_eq!(got.len(), 3);
    }

    #[test]
    fn the_configuration_of_the_fixture_is_read_in_model_ids() {
        let config = dgx().config();
        assert_eq!(config.links.len(), 24);
        let down: Vec<&str> = config
            .links
            .iter()
            .filter(|t| t.downtrained())
            .map(|t| t.link.as_str())
            .collect();
        assert_eq!(down, ["gpu5--sw8"]);
        let redirecting: Vec<&str> = config
            .acs
            .iter()
            .filter(|p| p.redirect)
            .map(|p| p.port.as_str())
            .collect();
        assert_eq!(redirecting, ["0000:34:00.0", "0000:34:01.0"]);
        let off: Vec<&str> = config
            .ats
            .iter()
            .filter(|a| !a.enabled)
            .map(|a| a.device.as_str())
            .collect();
        assert_eq!(off, ["rnic3"]);
        let iommu = config.iommu.unwrap();
        assert!(iommu.translated);
        assert_eq!(
            (iommu.hugepages_total, iommu.thp.as_deref()),
            (0, Some("never"))
        );
    }
}
