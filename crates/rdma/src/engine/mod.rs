//! The libibverbs loopback engine: [`probe::ProbeEngine`] on a real host.
//!
//! It opens every discovered RNIC port once, and for each probe allocates the endpoint's
//! memory (NUMA-bound host memory or GPU memory), runs one test of [`loopback`] and frees
//! everything again. A path that cannot be probed (port down, GPU without a driver,
//! registration refused, a timeout, a work completion in error) is an error for that path
//! only; `probe::run` records it and goes on with the next path.

mod affinity;
mod clock;
pub mod fault;
mod loopback;
pub mod pair;

use crate::counters::uncore::parse_cpulist;
use crate::memory::cuda::{self, Cuda, GpuUnavailable};
use crate::memory::host::{numa_supported, HostRegion, Pages};
use crate::memory::EndpointMemory;
use crate::sysfs::{Bindings, LinkLayer, RnicBinding, SysRoot};
use crate::verbs::{ffi, Verbs, VerbsError};
pub use fault::{FaultKind, TestFault};
use loopback::Settings;
pub(crate) use loopback::{pattern_byte, RnicPort};
use model::{ComponentId, Path, Provenance, StreamResult};
use probe::{LatencySamples, LatencySpec, ProbeEngine, ProbeError, StreamSpec};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How the engine probes.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Longest wait for one completion: a probe never blocks longer than this.
    pub timeout: Duration,
    /// Faults to provoke (tests of the error paths).
    pub faults: Vec<TestFault>,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            // Far above a healthy loopback (microseconds) and above the millisecond tails
            // of a busy or emulated host, yet short enough that a hung path costs little.
            timeout: Duration::from_secs(2),
            faults: Vec::new(),
        }
    }
}

/// The real engine.
pub struct VerbsEngine {
    verbs: Arc<Verbs>,
    rnics: HashMap<ComponentId, Result<RnicPort, OpenPortError>>,
    /// Each RNIC's NUMA node's CPUs, which its tests post from ([`affinity`]).
    local_cpus: HashMap<ComponentId, Vec<u32>>,
    memory_nodes: HashMap<ComponentId, u32>,
    gpus: HashMap<ComponentId, String>,
    cuda: Option<Result<Arc<Cuda>, GpuUnavailable>>,
    numa: bool,
    root: SysRoot,
    options: EngineOptions,
    started: Instant,
    tests: u64,
}

/// Why an RNIC port cannot be used; each message names the device and port.
#[derive(Debug, thiserror::Error)]
pub enum OpenPortError {
    /// A verbs call failed (opening the device, querying it, its port or a GID).
    #[error("{device} port {port}: {source}")]
    Verbs {
        /// The RDMA device (`mlx5_0`).
        device: String,
        /// The port number.
        port: u8,
        /// The call and errno.
        #[source]
        source: VerbsError,
    },
    /// The port is not in the ACTIVE state.
    #[error("{device} port {port}: not ACTIVE (state {state})")]
    NotActive {
        /// The RDMA device.
        device: String,
        /// The port number.
        port: u8,
        /// `ibv_port_attr.state`.
        state: u32,
    },
    /// A RoCE port without a GID to address it by.
    #[error("{device} port {port}: Ethernet (RoCE) but no usable GID")]
    NoGid {
        /// The RDMA device.
        device: String,
        /// The port number.
        port: u8,
    },
}

/// Opens one RNIC port; the error names the device and port. Also what `odp-bench` opens
/// its device with.
pub(crate) fn open_port(verbs: &Arc<Verbs>, b: &RnicBinding) -> Result<RnicPort, OpenPortError> {
    let (device, port) = (b.device.clone(), b.port);
    let verbs_error = |source| OpenPortError::Verbs {
        device: device.clone(),
        port,
        source,
    };
    let ctx = verbs.open(&b.device).map_err(verbs_error)?;
    let caps = ctx.caps().map_err(verbs_error)?;
    let info = ctx.port(b.port).map_err(verbs_error)?;
    if info.state != ffi::IBV_PORT_ACTIVE {
        return Err(OpenPortError::NotActive {
            device,
            port,
            state: info.state,
        });
    }
    let gid = match (b.link_layer.clone(), b.gid_index) {
        (_, Some(index)) => {
            let gid = ctx.gid(b.port, index).map_err(verbs_error)?;
            Some((gid, index as u8))
        }
        (LinkLayer::InfiniBand, None) => None,
        (_, None) => return Err(OpenPortError::NoGid { device, port }),
    };
    Ok(RnicPort {
        ctx,
        port: b.port,
        caps,
        info,
        gid,
    })
}

impl VerbsEngine {
    /// Opens every RNIC port of `bindings`. A port that cannot be opened is remembered with
    /// its reason and fails only its own paths.
    pub fn new(
        verbs: Arc<Verbs>,
        bindings: &Bindings,
        root: SysRoot,
        options: EngineOptions,
    ) -> VerbsEngine {
        let rnics = bindings
            .rnics
            .iter()
            .map(|(id, b)| (id.clone(), open_port(&verbs, b)))
            .collect();
        let local_cpus = bindings
            .rnics
            .iter()
            .filter_map(|(id, b)| Some((id.clone(), node_cpus(&root, b.numa_node?))))
            .collect();
        VerbsEngine {
            verbs,
            rnics,
            local_cpus,
            memory_nodes: bindings.memory.iter().cloned().collect(),
            gpus: bindings
                .gpus
                .iter()
                .map(|(id, pci)| (id.clone(), pci.to_string()))
                .collect(),
            cuda: None,
            numa: numa_supported(),
            root,
            options,
            started: Instant::now(),
            tests: 0,
        }
    }

    /// Allocates `bytes` on the endpoint.
    fn memory(
        &mut self,
        endpoint: &ComponentId,
        bytes: usize,
        pages: Pages,
    ) -> Result<EndpointMemory, ProbeError> {
        if let Some(&node) = self.memory_nodes.get(endpoint) {
            let region =
                HostRegion::on_node(bytes, self.numa.then_some(node), pages).map_err(|e| {
                    ProbeError::Registration {
                        endpoint: endpoint.to_string(),
                        reason: e.to_string(),
                    }
                })?;
            return Ok(EndpointMemory::Host(region));
        }
        let Some(bus_id) = self.gpus.get(endpoint) else {
            return Err(ProbeError::Unavailable {
                reason: format!("{endpoint} is not an endpoint of the discovered host"),
            });
        };
        let unavailable = |e: GpuUnavailable| ProbeError::Unavailable { reason: e.0 };
        let cuda = self
            .cuda
            .get_or_insert_with(Cuda::load)
            .clone()
            .map_err(unavailable)?;
        let region = cuda.alloc(bus_id, bytes).map_err(unavailable)?;
        let how = region
            .registration(
                self.verbs.has_dmabuf(),
                cuda::peermem_loaded(&self.root.path("sys")),
            )
            .map_err(unavailable)?;
        Ok(EndpointMemory::Gpu(region, how))
    }

    fn port(&self, rnic: &ComponentId) -> Result<&RnicPort, ProbeError> {
        match self.rnics.get(rnic) {
            Some(Ok(port)) => Ok(port),
            // A discovered RNIC that cannot be opened is a failure, not a limit by design.
            Some(Err(e)) => Err(ProbeError::Verbs {
                detail: e.to_string(),
            }),
            None => Err(ProbeError::Unavailable {
                reason: format!("{rnic} is not an RNIC of the discovered host"),
            }),
        }
    }

    fn settings(&self, path: &Path) -> Settings {
        Settings {
            timeout: self.options.timeout,
            fault: self
                .options
                .faults
                .iter()
                .find(|f| f.endpoint == path.endpoint)
                .map(|f| f.kind),
            endpoint: path.endpoint.to_string(),
        }
    }
}

/// The CPUs of NUMA node `node`; none when sysfs does not say (the test then runs where it
/// is).
fn node_cpus(root: &SysRoot, node: u32) -> Vec<u32> {
    let list = root.path(&format!("sys/devices/system/node/node{node}/cpulist"));
    root.read_optional(&list)
        .ok()
        .flatten()
        .and_then(|text| parse_cpulist(&text).ok())
        .unwrap_or_default()
}

/// Read and write regions are whole pages.
fn region_bytes(bytes: u64) -> usize {
    (bytes.max(1) as usize).next_multiple_of(4096)
}

impl ProbeEngine for VerbsEngine {
    fn provenance(&self) -> Provenance {
        Provenance::Measured
    }

    fn now_ns(&self) -> u64 {
        self.started.elapsed().as_nanos() as u64
    }

    fn latency(&mut self, path: &Path, spec: &LatencySpec) -> Result<LatencySamples, ProbeError> {
        self.port(&path.rnic)?;
        let region = region_bytes(spec.large_bytes.max(spec.small_bytes));
        let mem = self.memory(&path.endpoint, 2 * region, Pages::Base)?;
        self.tests += 1;
        let seed = self.tests as u8;
        let settings = self.settings(path);
        let _pinned = self.pin_near(&path.rnic);
        loopback::latency(self.port(&path.rnic)?, &mem, region, spec, &settings, seed)
    }

    fn stream(&mut self, path: &Path, spec: &StreamSpec) -> Result<StreamResult, ProbeError> {
        self.stream_over(path, spec, spec.message_bytes, Pages::Base)
    }
}

impl VerbsEngine {
    /// A stream whose messages walk through `working_set_bytes` on each side (rounded up to
    /// whole pages, at least one message) of memory in `pages` instead of reusing one
    /// message's buffer: the IOTLB sweep of `check --iotlb` (HotNets'22 3.1).
    pub fn stream_over(
        &mut self,
        path: &Path,
        spec: &StreamSpec,
        working_set_bytes: u64,
        pages: Pages,
    ) -> Result<StreamResult, ProbeError> {
        self.port(&path.rnic)?;
        let region = region_bytes(working_set_bytes.max(spec.message_bytes));
        let mem = self.memory(&path.endpoint, 2 * region, pages)?;
        let settings = self.settings(path);
        let _pinned = self.pin_near(&path.rnic);
        loopback::stream(self.port(&path.rnic)?, &mem, region, spec, &settings)
    }

    /// Pins the calling thread to `rnic`'s node's CPUs until the guard drops.
    fn pin_near(&self, rnic: &ComponentId) -> Option<affinity::Pinned> {
        affinity::Pinned::to(self.local_cpus.get(rnic)?)
    }
}
