/*!
GPU counters through NVML, loaded at run time (linux-counters.md 5).

The calls go through the `nvml-wrapper` crate, which opens the library with dlopen at run
time and resolves NVML's versioned names (`nvmlInit_v2`, `nvmlDeviceGetPciInfo_v3`).
[`Nvml::load`] opens `libnvidia-ml.so.1` (the name the NVIDIA driver installs; the wrapper's
own default, the development symlink `libnvidia-ml.so`, is the fallback) and then checks
that every function hostping calls is there, so that a library without one is refused at
load rather than failing later, GPU by GPU. No library, a missing symbol, or a driver that
is not loaded is an [`NvmlUnavailable`], which callers print as "no GPUs (NVML:
<reason>)": a host without NVIDIA GPUs is normal, not an error.

Per GPU ([`GpuReading`]): the PCI address (NVML's `00000000:3B:00.0` normalised to the
sysfs form `0000:3b:00.0`), utilisation, PCIe throughput, PCIe link generation and width
(current and maximum) and the PCIe replay counter. A call that fails for one GPU leaves
that field `None`: `NOT_SUPPORTED` silently (the GPU has no such counter), anything else
(`GPU_IS_LOST`: the GPU fell off the bus) with a message in [`GpuReading::error`], so one
lost GPU never hides the others.
*/

use crate::sysfs::{ParseError, PciAddr};
use nvml_wrapper::enum_wrappers::device::{PcieUtilCounter, TopologyLevel as NvmlLevel};
use nvml_wrapper::error::NvmlError as WrapperError;
use nvml_wrapper::Device;
use serde::Serialize;
use std::ffi::OsStr;

/// NVML cannot be used on this machine; callers print "no GPUs (NVML: <reason>)".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no GPUs (NVML: {reason})")]
pub struct NvmlUnavailable {
    /// Why: the library that could not be opened, the symbol it lacks, or what
    /// `nvmlInit_v2` answered.
    pub reason: String,
}

/// An NVML call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{call}: {message}")]
pub struct NvmlError {
    /// The call and its argument (`nvmlDeviceGetHandleByIndex_v2(1)`).
    pub call: String,
    /// The `nvmlReturn_t` value (`999`, NVML's "unknown", for failures that are not a
    /// return code: an answer that is not UTF-8 or not a value NVML documents); `0`
    /// (success) when the call succeeded but its answer is unusable (a `busId` that is not
    /// a PCI address).
    pub code: u32,
    /// What went wrong, in `nvml-wrapper`'s words ("device fell off the bus or has
    /// otherwise become inacessible").
    pub message: String,
}

impl NvmlError {
    fn new(call: impl Into<String>, e: WrapperError) -> NvmlError {
        let message = e.to_string();
        NvmlError {
            call: call.into(),
            code: nvml_wrapper_sys::bindings::nvmlReturn_t::from(e),
            message,
        }
    }
}

/// Whether [`Nvml`] measures PCIe throughput. `nvmlDeviceGetPcieThroughput` counts bytes
/// over a 20 ms window and blocks for it, once per direction: about 40 ms per GPU
/// (linux-counters.md 5), so a caller that reads often may skip it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Throughput {
    /// Leave `pcie_tx_kbps` and `pcie_rx_kbps` `None` and return at once.
    Skip,
    /// Measure both directions (about 40 ms per GPU).
    Measure,
}
/// One GPU as NVML sees it. Each counter is `None` when the GPU does not support it or the
/// call failed (then [`error`](Self::error) says why).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuReading {
    /// PCI address, from `nvmlPciInfo_t.busId` in sysfs form (`0000:3b:00.0`).
    pub bus_id: PciAddr,
    /// Product name (`NVIDIA A100-SXM4-80GB`).
    pub name: Option<String>,
    /// Percent of the last sample period (1/6 s to 1 s) in which a kernel ran.
    pub utilisation_gpu_pct: Option<u32>,
    /// Percent of the last sample period in which device memory was read or written.
    pub utilisation_memory_pct: Option<u32>,
    /// PCIe bytes sent by the GPU, KB/s over a 20 ms window ([`Throughput::Measure`] only).
    pub pcie_tx_kbps: Option<u32>,
    /// PCIe bytes received by the GPU, KB/s over a 20 ms window.
    pub pcie_rx_kbps: Option<u32>,
    /// PCIe generation the link runs at now (it drops when idle on some GPUs).
    pub link_gen_current: Option<u32>,
    /// Highest PCIe generation the GPU and the system support together.
    pub link_gen_max: Option<u32>,
    /// Lanes in use now.
    pub link_width_current: Option<u32>,
    /// Most lanes the link can train to.
    pub link_width_max: Option<u32>,
    /// PCIe replays since the driver loaded: a growing count is a bad link.
    pub replay_counter: Option<u32>,
    /// Calls that failed for a reason other than `NOT_SUPPORTED`, `call: message`,
    /// joined by `; `.
    pub error: Option<String>,
}

/// The closest common ancestor of two GPUs in the PCIe tree
/// (`nvmlGpuTopologyLevel_t`, nvml.h; linux-counters.md 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TopologyLevel {
    /// 0: the same board (one GPU, or two on one card).
    Internal,
    /// 10: one PCIe switch.
    Single,
    /// 20: several PCIe switches, no host bridge between.
    Multiple,
    /// 30: the same host bridge.
    HostBridge,
    /// 40: the same NUMA node (CPU), different host bridges.
    Node,
    /// 50: across the inter-socket link.
    System,
}

impl From<NvmlLevel> for TopologyLevel {
    fn from(level: NvmlLevel) -> TopologyLevel {
        match level {
            NvmlLevel::Internal => TopologyLevel::Internal,
            NvmlLevel::Single => TopologyLevel::Single,
            NvmlLevel::Multiple => TopologyLevel::Multiple,
            NvmlLevel::HostBridge => TopologyLevel::HostBridge,
            NvmlLevel::Node => TopologyLevel::Node,
            NvmlLevel::System => TopologyLevel::System,
        }
    }
}

/// Parses NVML's `busId` (`00000000:3B:00.0`: an 8-digit domain, upper-case hex) into a
/// [`PciAddr`], whose `Display` is the sysfs form `0000:3b:00.0`.
pub fn parse_bus_id(s: &str) -> Result<PciAddr, ParseError> {
    s.parse()
}

/// The library names tried by [`Nvml::load`], in order.
const LIBRARY_NAMES: [&str; 2] = ["libnvidia-ml.so.1", "libnvidia-ml.so"];

/// An initialised NVML; `nvmlShutdown` runs on drop (`nvml-wrapper`'s `Drop`).
pub struct Nvml {
    nvml: nvml_wrapper::Nvml,
}

/// Whether the library has each function hostping calls, by the name `nvml-wrapper`
/// resolves it under; the first one missing.
fn missing_symbol(lib: &nvml_wrapper_sys::bindings::NvmlLib) -> Option<&'static str> {
    macro_rules! check {
        ($($sym:ident),+ $(,)?) => {
            $( if lib.$sym.is_err() { return Some(stringify!($sym)); } )+
        };
    }
    check!(
        nvmlShutdown,
        nvmlDeviceGetCount_v2,
        nvmlDeviceGetHandleByIndex_v2,
        nvmlDeviceGetHandleByPciBusId_v2,
        nvmlDeviceGetPciInfo_v3,
        nvmlDeviceGetName,
        nvmlDeviceGetUtilizationRates,
        nvmlDeviceGetPcieThroughput,
        nvmlDeviceGetCurrPcieLinkGeneration,
        nvmlDeviceGetCurrPcieLinkWidth,
        nvmlDeviceGetMaxPcieLinkGeneration,
        nvmlDeviceGetMaxPcieLinkWidth,
        nvmlDeviceGetPcieReplayCounter,
        nvmlDeviceGetTopologyCommonAncestor,
    );
    None
}

impl Nvml {
    /// Loads the driver's NVML (`libnvidia-ml.so.1`, then `libnvidia-ml.so`) and
    /// initialises it.
    pub fn load() -> Result<Nvml, NvmlUnavailable> {
        let mut tried = Vec::new();
        for name in LIBRARY_NAMES {
            match Self::open(OsStr::new(name), name) {
                Err(Opened::NoLibrary(e)) => tried.push(e),
                Err(Opened::Unusable(e)) => return Err(e),
                Ok(nvml) => return Ok(nvml),
            }
        }
        Err(NvmlUnavailable {
            reason: format!("no NVIDIA driver library ({})", tried.join("; ")),
        })
    }

    /// Loads NVML from a given file (a driver outside the loader path, or a test double).
    pub fn load_from(path: impl AsRef<OsStr>) -> Result<Nvml, NvmlUnavailable> {
        let path = path.as_ref();
        let shown = path.to_string_lossy().into_owned();
        Self::open(path, &shown).map_err(|e| match e {
            Opened::NoLibrary(e) => NvmlUnavailable {
                reason: format!("cannot open {shown}: {e}"),
            },
            Opened::Unusable(e) => e,
        })
    }

    fn open(path: &OsStr, name: &str) -> Result<Nvml, Opened> {
        let nvml = nvml_wrapper::Nvml::builder()
            .lib_path(path)
            .init()
            .map_err(|e| match e {
                WrapperError::LibloadingError(e) => Opened::NoLibrary(e.to_string()),
                WrapperError::FailedToLoadSymbol(e) => Opened::Unusable(NvmlUnavailable {
                    reason: format!("{name} has no symbol nvmlInit_v2: {e}"),
                }),
                e @ (WrapperError::DriverNotLoaded | WrapperError::LibraryNotFound) => {
                    Opened::Unusable(NvmlUnavailable {
                        reason: format!(
                            "the NVIDIA kernel driver is not loaded (nvmlInit_v2: {e})"
                        ),
                    })
                }
                e => Opened::Unusable(NvmlUnavailable {
                    reason: format!("nvmlInit_v2 failed: {e}"),
                }),
            })?;
        if let Some(symbol) = missing_symbol(nvml.lib()) {
            return Err(Opened::Unusable(NvmlUnavailable {
                reason: format!("{name} has no symbol {symbol}"),
            }));
        }
        Ok(Nvml { nvml })
    }

    /// `nvmlDeviceGetCount_v2`: the GPUs this process may see.
    pub fn device_count(&self) -> Result<u32, NvmlError> {
        self.nvml
            .device_count()
            .map_err(|e| NvmlError::new("nvmlDeviceGetCount_v2", e))
    }

    fn by_index(&self, index: u32) -> Result<Device<'_>, NvmlError> {
        self.nvml
            .device_by_index(index)
            .map_err(|e| NvmlError::new(format!("nvmlDeviceGetHandleByIndex_v2({index})"), e))
    }

    fn by_bus_id(&self, bus_id: PciAddr) -> Result<Device<'_>, NvmlError> {
        self.nvml
            .device_by_pci_bus_id(bus_id.to_string())
            .map_err(|e| NvmlError::new(format!("nvmlDeviceGetHandleByPciBusId_v2({bus_id})"), e))
    }

    /// Reads GPU number `index` (`0..device_count()`).
    pub fn read_index(&self, index: u32, throughput: Throughput) -> Result<GpuReading, NvmlError> {
        read(&self.by_index(index)?, throughput)
    }

    /// Reads the GPU at a PCI address (as sysfs discovery found it).
    pub fn read_bus_id(
        &self,
        bus_id: PciAddr,
        throughput: Throughput,
    ) -> Result<GpuReading, NvmlError> {
        read(&self.by_bus_id(bus_id)?, throughput)
    }

    /// Reads every GPU. The outer error is `nvmlDeviceGetCount_v2` failing; each GPU's
    /// own failure (no handle, no PCI information) is its entry, and the others are read.
    pub fn read_all(
        &self,
        throughput: Throughput,
    ) -> Result<Vec<Result<GpuReading, NvmlError>>, NvmlError> {
        Ok((0..self.device_count()?)
            .map(|i| self.read_index(i, throughput))
            .collect())
    }

    /// `nvmlDeviceGetTopologyCommonAncestor` of the GPUs at two PCI addresses.
    pub fn common_ancestor(&self, a: PciAddr, b: PciAddr) -> Result<TopologyLevel, NvmlError> {
        let (da, db) = (self.by_bus_id(a)?, self.by_bus_id(b)?);
        da.topology_common_ancestor(db)
            .map(TopologyLevel::from)
            .map_err(|e| {
                NvmlError::new(format!("nvmlDeviceGetTopologyCommonAncestor({a}, {b})"), e)
            })
    }
}

/// Why a library could not be used: not there at all (the next name may be), or there
/// but unusable (the answer).
enum Opened {
    NoLibrary(String),
    Unusable(NvmlUnavailable),
}

fn read(dev: &Device<'_>, throughput: Throughput) -> Result<GpuReading, NvmlError> {
    let pci = dev
        .pci_info()
        .map_err(|e| NvmlError::new("nvmlDeviceGetPciInfo_v3", e))?;
    let bus_id = parse_bus_id(&pci.bus_id).map_err(|e| NvmlError {
        call: "nvmlDeviceGetPciInfo_v3".into(),
        code: 0,
        message: format!("busId {e}"),
    })?;
    let mut f = Failures::default();
    let name = f.value("nvmlDeviceGetName", dev.name());
    let util = f.value("nvmlDeviceGetUtilizationRates", dev.utilization_rates());
    let (pcie_tx_kbps, pcie_rx_kbps) = match throughput {
        Throughput::Skip => (None, None),
        Throughput::Measure => (
            f.value(
                "nvmlDeviceGetPcieThroughput(TX)",
                dev.pcie_throughput(PcieUtilCounter::Send),
            ),
            f.value(
                "nvmlDeviceGetPcieThroughput(RX)",
                dev.pcie_throughput(PcieUtilCounter::Receive),
            ),
        ),
    };
    let link_gen_current = f.value(
        "nvmlDeviceGetCurrPcieLinkGeneration",
        dev.current_pcie_link_gen(),
    );
    let link_gen_max = f.value(
        "nvmlDeviceGetMaxPcieLinkGeneration",
        dev.max_pcie_link_gen(),
    );
    let link_width_current = f.value(
        "nvmlDeviceGetCurrPcieLinkWidth",
        dev.current_pcie_link_width(),
    );
    let link_width_max = f.value("nvmlDeviceGetMaxPcieLinkWidth", dev.max_pcie_link_width());
    let replay_counter = f.value("nvmlDeviceGetPcieReplayCounter", dev.pcie_replay_counter());
    Ok(GpuReading {
        bus_id,
        name,
        utilisation_gpu_pct: util.as_ref().map(|u| u.gpu),
        utilisation_memory_pct: util.as_ref().map(|u| u.memory),
        pcie_tx_kbps,
        pcie_rx_kbps,
        link_gen_current,
        link_gen_max,
        link_width_current,
        link_width_max,
        replay_counter,
        error: (!f.0.is_empty()).then(|| f.0.join("; ")),
    })
}

/// The optional fields' failures of one GPU's reading, `call: message`.
#[derive(Default)]
struct Failures(Vec<String>);

impl Failures {
    /// The value of a call that succeeded. `NotSupported` is a plain "no value" (the GPU
    /// has no such counter); any other failure is also noted.
    fn value<T>(&mut self, call: &str, result: Result<T, WrapperError>) -> Option<T> {
        match result {
            Ok(v) => Some(v),
            Err(WrapperError::NotSupported) => None,
            Err(e) => {
                self.0.push(format!("{call}: {e}"));
                None
            }
        }
    }
}
