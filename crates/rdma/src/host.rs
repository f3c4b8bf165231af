//! This machine as a host to probe: discovery from sysfs, the libibverbs engine with the
//! counter sources as its monitor, and the plain-words errors a user sees when either is
//! missing (no RDMA device, no rdma-core).

use crate::engine::{EngineOptions, VerbsEngine};
use crate::monitor::HostMonitor;
use crate::sysfs::{self, Discovery, SysRoot};
use crate::verbs::Verbs;
use model::{ComponentId, HostTopology};
use probe::{LatencySamples, LatencySpec, Monitor, ProbeEngine, ProbeError, StreamSpec};

/// A real engine with the counter sources as its monitor: what `check` and `baseline`
/// probe through (the pipeline wants both behind one value).
pub struct Probed<E> {
    /// The loopback engine.
    pub engine: E,
    /// The counter sources.
    pub monitor: HostMonitor,
}

impl<E: ProbeEngine> ProbeEngine for Probed<E> {
    fn provenance(&self) -> model::Provenance {
        self.engine.provenance()
    }
    fn now_ns(&self) -> u64 {
        self.engine.now_ns()
    }
    fn latency(
        &mut self,
        path: &model::Path,
        spec: &LatencySpec,
    ) -> Result<LatencySamples, ProbeError> {
        self.engine.latency(path, spec)
    }
    fn stream(
        &mut self,
        path: &model::Path,
        spec: &StreamSpec,
    ) -> Result<model::StreamResult, ProbeError> {
        self.engine.stream(path, spec)
    }
    fn idle(&mut self, ns: u64) {
        self.engine.idle(ns)
    }
}

impl<E: ProbeEngine> Monitor for Probed<E> {
    fn snapshot(&mut self) -> model::HostSnapshot {
        let mut s = self.monitor.snapshot();
        // On the engine's clock, like every probe of the run.
        s.at_ns = self.engine.now_ns();
        s
    }
}

/// Why the real host cannot be probed. Each message is one line.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RealError {
    /// Discovery itself failed (an unreadable or malformed sysfs file).
    #[error(transparent)]
    Discover(#[from] sysfs::DiscoverError),
    /// Nothing to probe.
    #[error(
        "no RDMA device found: {detail}. hostping probes RNICs through libibverbs; to see it \
         work without RDMA hardware, check a simulated host: hostping check --sim dgx-a100 \
         (built-in models: {builtins})"
    )]
    NoRdma {
        /// What discovery saw.
        detail: String,
        /// The built-in model names.
        builtins: String,
    },
    /// RDMA devices exist but libibverbs cannot be loaded.
    #[error("RDMA devices found ({devices}) but {reason}")]
    NoVerbs {
        /// The discovered devices.
        devices: String,
        /// Why libibverbs is unavailable.
        reason: String,
    },
}

/// A discovered host with an RDMA port to probe from.
pub struct RealHost {
    /// The sysfs root it was discovered under.
    pub root: SysRoot,
    /// What discovery found.
    pub discovery: Discovery,
    /// The host model built from it.
    pub host: HostTopology,
}

/// Discovers the host under `root` (`/` on a real machine).
pub fn discover(root: &SysRoot) -> Result<Discovery, RealError> {
    Ok(sysfs::discover(root)?)
}

/// Discovers the host and insists on an RNIC to probe from.
pub fn host(root: SysRoot) -> Result<RealHost, RealError> {
    let discovery = discover(&root)?;
    RealHost::new(root, discovery)
}

impl RealHost {
    /// The host `discovery` found under `root`, if it has an RNIC to probe from.
    pub fn new(root: SysRoot, discovery: Discovery) -> Result<RealHost, RealError> {
        let Some(host) = discovery.host.clone() else {
            let detail = if discovery.rdma_ports.is_empty() {
                format!(
                    "{} has no devices",
                    root.path("sys/class/infiniband").display()
                )
            } else {
                let ports: Vec<String> = discovery
                    .rdma_ports
                    .iter()
                    .map(|p| format!("{} port {} {:?}", p.device, p.port, p.state))
                    .collect();
                format!("no RDMA port is ACTIVE ({})", ports.join(", "))
            };
            return Err(RealError::NoRdma {
                detail,
                builtins: model::builtin::names().collect::<Vec<_>>().join(", "),
            });
        };
        Ok(RealHost {
            root,
            discovery,
            host,
        })
    }

    /// Loads libibverbs and opens every RNIC port of the host, with the counter sources
    /// as its monitor.
    pub fn engine(&self, options: EngineOptions) -> Result<Probed<VerbsEngine>, RealError> {
        let verbs = Verbs::load().map_err(|e| RealError::NoVerbs {
            devices: self.device_names(),
            reason: e.reason,
        })?;
        let engine = VerbsEngine::new(verbs, &self.discovery.bindings, self.root.clone(), options);
        Ok(Probed {
            engine,
            monitor: HostMonitor::with_discovery(self.root.clone(), self.discovery.clone()),
        })
    }

    fn device_names(&self) -> String {
        let mut names: Vec<&str> = self
            .discovery
            .rdma_ports
            .iter()
            .map(|p| p.device.as_str())
            .collect();
        names.dedup();
        names.join(", ")
    }

    /// RNICs driven by software (rxe, siw): the CPU, not a line rate, bounds them.
    pub fn software_rnics(&self) -> Vec<ComponentId> {
        self.discovery
            .bindings
            .rnics
            .iter()
            .filter(|(_, b)| b.software)
            .map(|(id, _)| id.clone())
            .collect()
    }
}
