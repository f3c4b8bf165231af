//! The real host's monitor: every counter source read together and turned into model
//! values, for `hostping counters`, `lint`, `check` and the agent alike.
//!
//! The sources live in [`crate::counters`], one module each; here they are read together and
//! mapped to model ids through the discovery's [`Bindings`](crate::sysfs::Bindings): the
//! monitor's [`HostSnapshot`] (Hostping 4.1.2, 4.2: RNIC throughput, Tx pause ratio, drops,
//! GPU activity, link utilisation from the bus monitor) and the [`HostConfig`] (link
//! training, ACS, ATS, IOMMU). The host-interconnect facts have a module each: `translation`
//! (each RNIC's IOMMU group and IOTLB, HotNets'22 3.1), `membw` (memory bandwidth by who
//! moves it, 3.2), `transport` (transport error counters) and `odp` (ODP memory regions,
//! their owners, the capability and the timeout floor; ISPASS'21). A source the host lacks is `unavailable` with the reason; a
//! source that fails (permission denied, a malformed file) is `error`, and the others are
//! still read. It judges nothing: `analyze` does.
//!
//! Rates need two readings: the monitor keeps the previous one, so the agent's 1 s cadence
//! costs one reading per snapshot; a one-shot snapshot reads twice, [`WINDOW`] apart.

mod config;
mod membw;
mod odp;
mod sample;
mod snapshot;
mod sources;
mod translation;
mod transport;

use crate::counters::{iommu, nvml, uncore};
use crate::sysfs::{self, Discovery, SysRoot};
use model::{CounterReport, HostConfig, HostSnapshot, HostTopology, Provenance, SourceReport};
use sample::Sample;
use std::time::{Duration, Instant, SystemTime};

/// Between the two readings of a one-shot snapshot.
pub const WINDOW: Duration = Duration::from_millis(200);

/// The counter sources of this host (or of a tree under `--sysfs-root`).
pub struct HostMonitor {
    root: SysRoot,
    discovery: Discovery,
    nvml: Result<nvml::Nvml, nvml::NvmlUnavailable>,
    uncore: Result<uncore::UncoreMonitor, uncore::Unavailable>,
    /// Each RNIC's IOMMU translation, read at open (it changes only when a driver is
    /// rebound): what `HostSnapshot::iommu` quotes.
    translations: translation::Translations,
    iotlb: translation::IotlbCounters,
    /// Each bound device's ODP capability, read at open.
    odp_caps: serde_json::Value,
    prev: Option<Sample>,
    started: Instant,
}

impl HostMonitor {
    /// Discovers the host and opens its counter sources ([`HostMonitor::with_discovery`]).
    /// Only a malformed or unreadable tree is an error: missing sources are noted per source.
    pub fn open(root: SysRoot) -> Result<HostMonitor, sysfs::DiscoverError> {
        let discovery = sysfs::discover(&root)?;
        Ok(HostMonitor::with_discovery(root, discovery))
    }

    /// The counter sources of a host already discovered under `root`: NVML and the uncore
    /// PMUs are opened where they exist, and only for the running system (`/`): they
    /// belong to this kernel, not to a captured tree.
    pub fn with_discovery(root: SysRoot, discovery: Discovery) -> HostMonitor {
        let (nvml, uncore) = if is_live(&root) {
            (nvml::Nvml::load(), uncore::UncoreMonitor::open(&root))
        } else {
            let tree = root.root().display();
            (
                Err(nvml::NvmlUnavailable {
                    reason: format!("not read for the captured tree {tree}"),
                }),
                Err(uncore::Unavailable {
                    reason: format!(
                        "uncore PMUs of the captured tree {tree} are not counted (perf_event counts this kernel)"
                    ),
                }),
            )
        };
        let mut monitor = HostMonitor {
            root,
            discovery,
            nvml,
            uncore,
            translations: Vec::new(),
            iotlb: Vec::new(),
            odp_caps: serde_json::Value::Null,
            prev: None,
            started: Instant::now(),
        };
        monitor.translations = match iommu::read_memory_config(&monitor.root) {
            Ok(m) => monitor.translations(&m),
            Err(e) => monitor
                .rnic_functions()
                .into_iter()
                .map(|(rnic, _)| {
                    let source = e.clone();
                    let why = translation::TranslationError::MemoryConfig {
                        rnic: rnic.clone(),
                        source,
                    };
                    (rnic, Err(why))
                })
                .collect(),
        };
        monitor.iotlb = translation::open_iotlb(&monitor.root, &monitor.translations);
        monitor.odp_caps = monitor.read_odp_caps();
        monitor
    }

    /// The host model, when discovery built one.
    pub fn host(&self) -> Option<&HostTopology> {
        self.discovery.host.as_ref()
    }

    /// What discovery found.
    pub fn discovery(&self) -> &Discovery {
        &self.discovery
    }

    /// Every source, the monitor view and the configuration.
    pub fn read(&mut self) -> CounterReport {
        let (prev, cur) = self.advance(nvml::Throughput::Measure);
        let mut monitor = self.monitor(&prev, &cur);
        let odp = self.odp();
        monitor.odp = odp.regions.clone();
        let mut sources = vec![
            self.rnic_source(&cur),
            self.ethtool_source(&cur),
            self.pcie_source(),
            self.gpu_source(&cur),
            self.uncore_source(&prev, &cur),
            self.iotlb_source(&prev, &cur),
            self.transport_source(&cur),
            self.membw_source(&monitor),
            odp.source,
        ];
        let memory = iommu::read_memory_config(&self.root);
        sources.push(match &memory {
            Ok(m) => SourceReport::ok("memory", m),
            Err(e) => SourceReport::ok("memory", ()).failed(e.to_string()),
        });
        let config = self.config_from(memory.ok(), odp.regions);
        self.prev = Some(cur);
        CounterReport {
            host: self.host().map(|h| h.name.clone()),
            provenance: Provenance::Measured,
            at_unix_ms: model::time::unix_ms(SystemTime::now()),
            monitor,
            config,
            sources,
        }
    }

    /// The static configuration alone (`hostping lint`).
    pub fn config(&mut self) -> HostConfig {
        let memory = iommu::read_memory_config(&self.root);
        let odp = self.odp();
        let mut config = self.config_from(memory.as_ref().ok().cloned(), odp.regions);
        if !odp.source.is_ok() {
            let why = odp.source.detail.unwrap_or_default();
            config
                .unavailable
                .push(format!("ODP memory regions: {why}"));
        }
        if let Err(e) = memory {
            config
                .unavailable
                .push(format!("IOMMU and huge pages: {e}"));
        }
        config
    }
}

impl probe::Monitor for HostMonitor {
    /// The monitors' view now, for the agent and the mode choice: no PCIe throughput from
    /// NVML (it blocks about 20 ms per GPU), everything else. `at_ns` counts from when the
    /// monitor was opened.
    fn snapshot(&mut self) -> HostSnapshot {
        let (prev, cur) = self.advance(nvml::Throughput::Skip);
        let mut snapshot = self.monitor(&prev, &cur);
        snapshot.odp = self.odp().regions;
        snapshot.at_ns = self.started.elapsed().as_nanos() as u64;
        self.prev = Some(cur);
        snapshot
    }
}

/// The monitor of the dgx-a100 fixture tree.
#[cfg(test)]
fn dgx_fixture() -> HostMonitor {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/hosts/dgx-a100");
    HostMonitor::open(SysRoot::new(root)).expect("the fixture tree discovers")
}

/// Whether `root` is the running system: ethtool, NVML and perf_event read this kernel,
/// whatever tree the files come from.
fn is_live(root: &SysRoot) -> bool {
    root.root() == std::path::Path::new("/")
}
