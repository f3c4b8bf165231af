/*!
GPU counters through NVML, loaded at run time (linux-counters.md 5).

[`Nvml::load`] opens `libnvidia-ml.so.1` (the NVIDIA driver installs it; the development
symlink `libnvidia-ml.so` is the fallback) with dlopen and resolves every function hostping
calls once, by its versioned name (`nvmlInit_v2`, `nvmlDeviceGetPciInfo_v3`: the names
`nvml.h` maps the plain ones to). No library, a missing symbol, or a driver that is not
loaded is an [`NvmlUnavailable`], which callers print as "no GPUs (NVML: <reason>)": a
host without NVIDIA GPUs is normal, not an error.

Per GPU ([`GpuReading`]): the PCI address (NVML's `00000000:3B:00.0` normalised to the
sysfs form `0000:3b:00.0`), utilisation, PCIe throughput, PCIe link generation and width
(current and maximum) and the PCIe replay counter. A call that fails for one GPU leaves
that field `None`: `NOT_SUPPORTED` silently (the GPU has no such counter), anything else
(`GPU_IS_LOST`: the GPU fell off the bus) with a message in [`GpuReading::error`], so one
lost GPU never hides the others.
*/

use crate::sysfs::{ParseError, PciAddr};
use serde::Serialize;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString, OsStr};

/// `nvmlReturn_t` (a C enum: an int).
type NvmlReturn = c_int;
/// `nvmlDevice_t`: an opaque `struct nvmlDevice_st *`, valid until `nvmlShutdown`.
type Device = *mut c_void;

/// `nvmlReturn_t` values used here (nvml.h; linux-counters.md 5).
const SUCCESS: NvmlReturn = 0;
const ERROR_NOT_SUPPORTED: NvmlReturn = 3;
const ERROR_DRIVER_NOT_LOADED: NvmlReturn = 9;
const ERROR_LIBRARY_NOT_FOUND: NvmlReturn = 12;

/// `nvmlPcieUtilCounter_t`: `NVML_PCIE_UTIL_TX_BYTES`, `NVML_PCIE_UTIL_RX_BYTES`.
const PCIE_UTIL_TX_BYTES: c_int = 0;
const PCIE_UTIL_RX_BYTES: c_int = 1;

/// `NVML_DEVICE_NAME_V2_BUFFER_SIZE`: large enough for any `nvmlDeviceGetName`.
const NAME_BUFFER_SIZE: usize = 96;

/// `nvmlPciInfo_t` as `nvmlDeviceGetPciInfo_v3` fills it. Layout from nvml.h
/// (`NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE` 16, `NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE` 32):
///
/// | offset | field |
/// |---|---|
/// | 0 | `char busIdLegacy[16]` |
/// | 16 | `unsigned int domain` |
/// | 20 | `unsigned int bus` |
/// | 24 | `unsigned int device` |
/// | 28 | `unsigned int pciDeviceId` (device << 16 \| vendor) |
/// | 32 | `unsigned int pciSubSystemId` |
/// | 36 | `char busId[32]` (`00000000:3B:00.0`) |
///
/// 68 bytes, 4-byte aligned. Only `busId` is read; the rest is there to place it.
#[repr(C)]
struct PciInfo {
    bus_id_legacy: [c_char; 16],
    domain: c_uint,
    bus: c_uint,
    device: c_uint,
    pci_device_id: c_uint,
    pci_sub_system_id: c_uint,
    bus_id: [c_char; 32],
}

/// `nvmlUtilization_t { unsigned int gpu; unsigned int memory; }` (nvml.h): 8 bytes.
#[repr(C)]
#[derive(Default)]
struct Utilization {
    gpu: c_uint,
    memory: c_uint,
}

const _: () = {
    assert!(std::mem::size_of::<PciInfo>() == 68);
    assert!(std::mem::offset_of!(PciInfo, domain) == 16);
    assert!(std::mem::offset_of!(PciInfo, bus_id) == 36);
    assert!(std::mem::size_of::<Utilization>() == 8);
};

type GetUint = unsafe extern "C" fn(Device, *mut c_uint) -> NvmlReturn;

/// Every NVML function hostping calls, resolved once (prototypes from nvml.h).
struct Symbols {
    init: unsafe extern "C" fn() -> NvmlReturn,
    shutdown: unsafe extern "C" fn() -> NvmlReturn,
    error_string: unsafe extern "C" fn(NvmlReturn) -> *const c_char,
    device_count: unsafe extern "C" fn(*mut c_uint) -> NvmlReturn,
    handle_by_index: unsafe extern "C" fn(c_uint, *mut Device) -> NvmlReturn,
    handle_by_pci_bus_id: unsafe extern "C" fn(*const c_char, *mut Device) -> NvmlReturn,
    pci_info: unsafe extern "C" fn(Device, *mut PciInfo) -> NvmlReturn,
    name: unsafe extern "C" fn(Device, *mut c_char, c_uint) -> NvmlReturn,
    utilization: unsafe extern "C" fn(Device, *mut Utilization) -> NvmlReturn,
    pcie_throughput: unsafe extern "C" fn(Device, c_int, *mut c_uint) -> NvmlReturn,
    curr_link_gen: GetUint,
    curr_link_width: GetUint,
    max_link_gen: GetUint,
    max_link_width: GetUint,
    replay_counter: GetUint,
    common_ancestor: unsafe extern "C" fn(Device, Device, *mut c_int) -> NvmlReturn,
}

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
    /// The `nvmlReturn_t` value; `0` (success) when the call succeeded but its answer is
    /// unusable (a `busId` that is not a PCI address).
    pub code: i32,
    /// `nvmlErrorString` of the code ("GPU is lost").
    pub message: String,
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
    /// A value this list does not know.
    Other(i32),
}

impl TopologyLevel {
    fn from_raw(v: c_int) -> TopologyLevel {
        match v {
            0 => TopologyLevel::Internal,
            10 => TopologyLevel::Single,
            20 => TopologyLevel::Multiple,
            30 => TopologyLevel::HostBridge,
            40 => TopologyLevel::Node,
            50 => TopologyLevel::System,
            v => TopologyLevel::Other(v),
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

/// An initialised NVML; `nvmlShutdown` runs on drop.
pub struct Nvml {
    sym: Symbols,
    // Keeps the code behind `sym` mapped; dropped after `Drop::drop` ran.
    _lib: libloading::Library,
}

impl Nvml {
    /// Loads the driver's NVML (`libnvidia-ml.so.1`, then `libnvidia-ml.so`) and
    /// initialises it.
    pub fn load() -> Result<Nvml, NvmlUnavailable> {
        let mut tried = Vec::new();
        for name in LIBRARY_NAMES {
            // SAFETY: NVML's constructors only set up its own state.
            match unsafe { libloading::Library::new(name) } {
                Ok(lib) => return Self::init(lib, name),
                Err(e) => tried.push(e.to_string()),
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
        // SAFETY: as in `load`.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| NvmlUnavailable {
            reason: format!("cannot open {shown}: {e}"),
        })?;
        Self::init(lib, &shown)
    }

    fn init(lib: libloading::Library, name: &str) -> Result<Nvml, NvmlUnavailable> {
        macro_rules! sym {
            ($s:literal) => {
                // SAFETY: the field's type is this symbol's prototype in nvml.h.
                *unsafe { lib.get(concat!($s, "\0").as_bytes()) }.map_err(|e| NvmlUnavailable {
                    reason: format!("{name} has no symbol {}: {e}", $s),
                })?
            };
        }
        let sym = Symbols {
            init: sym!("nvmlInit_v2"),
            shutdown: sym!("nvmlShutdown"),
            error_string: sym!("nvmlErrorString"),
            device_count: sym!("nvmlDeviceGetCount_v2"),
            handle_by_index: sym!("nvmlDeviceGetHandleByIndex_v2"),
            handle_by_pci_bus_id: sym!("nvmlDeviceGetHandleByPciBusId_v2"),
            pci_info: sym!("nvmlDeviceGetPciInfo_v3"),
            name: sym!("nvmlDeviceGetName"),
            utilization: sym!("nvmlDeviceGetUtilizationRates"),
            pcie_throughput: sym!("nvmlDeviceGetPcieThroughput"),
            curr_link_gen: sym!("nvmlDeviceGetCurrPcieLinkGeneration"),
            curr_link_width: sym!("nvmlDeviceGetCurrPcieLinkWidth"),
            max_link_gen: sym!("nvmlDeviceGetMaxPcieLinkGeneration"),
            max_link_width: sym!("nvmlDeviceGetMaxPcieLinkWidth"),
            replay_counter: sym!("nvmlDeviceGetPcieReplayCounter"),
            common_ancestor: sym!("nvmlDeviceGetTopologyCommonAncestor"),
        };
        // SAFETY: nvmlInit_v2 takes no arguments; it may be called more than once
        // (reference counted, matched by nvmlShutdown in Drop).
        let rc = unsafe { (sym.init)() };
        if rc != SUCCESS {
            // SAFETY: nvmlErrorString works before and after a failed init.
            let text = unsafe { error_text(sym.error_string, rc) };
            let reason = match rc {
                ERROR_DRIVER_NOT_LOADED | ERROR_LIBRARY_NOT_FOUND => {
                    format!("the NVIDIA kernel driver is not loaded (nvmlInit_v2: {text})")
                }
                _ => format!("nvmlInit_v2 failed: {text}"),
            };
            return Err(NvmlUnavailable { reason });
        }
        Ok(Nvml { sym, _lib: lib })
    }

    fn check(&self, call: impl FnOnce() -> String, rc: NvmlReturn) -> Result<(), NvmlError> {
        if rc == SUCCESS {
            return Ok(());
        }
        Err(NvmlError {
            call: call(),
            code: rc,
            // SAFETY: error_string returns a static string for any code.
            message: unsafe { error_text(self.sym.error_string, rc) },
        })
    }

    /// `nvmlDeviceGetCount_v2`: the GPUs this process may see.
    pub fn device_count(&self) -> Result<u32, NvmlError> {
        let mut n: c_uint = 0;
        // SAFETY: out-parameter.
        let rc = unsafe { (self.sym.device_count)(&mut n) };
        self.check(|| "nvmlDeviceGetCount_v2".into(), rc)?;
        Ok(n)
    }

    fn handle_by_index(&self, index: u32) -> Result<Device, NvmlError> {
        let mut dev: Device = std::ptr::null_mut();
        // SAFETY: out-parameter; the handle lives until nvmlShutdown (our Drop).
        let rc = unsafe { (self.sym.handle_by_index)(index, &mut dev) };
        self.check(|| format!("nvmlDeviceGetHandleByIndex_v2({index})"), rc)?;
        Ok(dev)
    }

    fn handle_by_bus_id(&self, bus_id: PciAddr) -> Result<Device, NvmlError> {
        let text = CString::new(bus_id.to_string()).expect("a PCI address has no NUL");
        let mut dev: Device = std::ptr::null_mut();
        // SAFETY: a NUL-terminated string and an out-parameter.
        let rc = unsafe { (self.sym.handle_by_pci_bus_id)(text.as_ptr(), &mut dev) };
        self.check(|| format!("nvmlDeviceGetHandleByPciBusId_v2({bus_id})"), rc)?;
        Ok(dev)
    }

    /// Reads GPU number `index` (`0..device_count()`).
    pub fn read_index(&self, index: u32, throughput: Throughput) -> Result<GpuReading, NvmlError> {
        self.read(self.handle_by_index(index)?, throughput)
    }

    /// Reads the GPU at a PCI address (as sysfs discovery found it).
    pub fn read_bus_id(
        &self,
        bus_id: PciAddr,
        throughput: Throughput,
    ) -> Result<GpuReading, NvmlError> {
        self.read(self.handle_by_bus_id(bus_id)?, throughput)
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
        let (da, db) = (self.handle_by_bus_id(a)?, self.handle_by_bus_id(b)?);
        let mut level: c_int = 0;
        // SAFETY: two valid handles and an out-parameter.
        let rc = unsafe { (self.sym.common_ancestor)(da, db, &mut level) };
        self.check(
            || format!("nvmlDeviceGetTopologyCommonAncestor({a}, {b})"),
            rc,
        )?;
        Ok(TopologyLevel::from_raw(level))
    }

    fn read(&self, dev: Device, throughput: Throughput) -> Result<GpuReading, NvmlError> {
        // SAFETY: all-zero bytes are a valid PciInfo.
        let mut pci: PciInfo = unsafe { std::mem::zeroed() };
        // SAFETY: a valid handle and a buffer of the v3 layout.
        let rc = unsafe { (self.sym.pci_info)(dev, &mut pci) };
        self.check(|| "nvmlDeviceGetPciInfo_v3".into(), rc)?;
        let raw = c_array_text(&pci.bus_id);
        let bus_id = parse_bus_id(&raw).map_err(|e| NvmlError {
            call: "nvmlDeviceGetPciInfo_v3".into(),
            code: SUCCESS,
            message: format!("busId {e}"),
        })?;

        let mut f = Fields {
            nvml: self,
            dev,
            errors: Vec::new(),
        };
        let name = f.name();
        let util = f.utilisation();
        let (pcie_tx_kbps, pcie_rx_kbps) = match throughput {
            Throughput::Skip => (None, None),
            Throughput::Measure => (
                f.throughput(PCIE_UTIL_TX_BYTES, "nvmlDeviceGetPcieThroughput(TX)"),
                f.throughput(PCIE_UTIL_RX_BYTES, "nvmlDeviceGetPcieThroughput(RX)"),
            ),
        };
        let s = &self.sym;
        Ok(GpuReading {
            bus_id,
            name,
            utilisation_gpu_pct: util.as_ref().map(|u| u.gpu),
            utilisation_memory_pct: util.as_ref().map(|u| u.memory),
            pcie_tx_kbps,
            pcie_rx_kbps,
            link_gen_current: f.uint(s.curr_link_gen, "nvmlDeviceGetCurrPcieLinkGeneration"),
            link_gen_max: f.uint(s.max_link_gen, "nvmlDeviceGetMaxPcieLinkGeneration"),
            link_width_current: f.uint(s.curr_link_width, "nvmlDeviceGetCurrPcieLinkWidth"),
            link_width_max: f.uint(s.max_link_width, "nvmlDeviceGetMaxPcieLinkWidth"),
            replay_counter: f.uint(s.replay_counter, "nvmlDeviceGetPcieReplayCounter"),
            error: (!f.errors.is_empty()).then(|| f.errors.join("; ")),
        })
    }
}

/// The optional fields of one GPU's reading, and the failures met reading them.
struct Fields<'a> {
    nvml: &'a Nvml,
    dev: Device,
    errors: Vec<String>,
}

impl Fields<'_> {
    /// Whether a call succeeded. `NOT_SUPPORTED` is a plain "no value"; any other failure
    /// is also noted in `errors`.
    fn ok(&mut self, call: &str, rc: NvmlReturn) -> bool {
        match rc {
            SUCCESS => true,
            ERROR_NOT_SUPPORTED => false,
            _ => {
                // SAFETY: error_string is nvmlErrorString.
                let text = unsafe { error_text(self.nvml.sym.error_string, rc) };
                self.errors.push(format!("{call}: {text}"));
                false
            }
        }
    }

    fn uint(&mut self, f: GetUint, call: &str) -> Option<u32> {
        let mut v: c_uint = 0;
        // SAFETY: a valid handle and an out-parameter.
        let rc = unsafe { f(self.dev, &mut v) };
        self.ok(call, rc).then_some(v)
    }

    fn name(&mut self) -> Option<String> {
        let mut buf = [0 as c_char; NAME_BUFFER_SIZE];
        // SAFETY: the buffer holds NAME_BUFFER_SIZE bytes, as passed.
        let rc =
            unsafe { (self.nvml.sym.name)(self.dev, buf.as_mut_ptr(), NAME_BUFFER_SIZE as c_uint) };
        self.ok("nvmlDeviceGetName", rc).then(|| c_array_text(&buf))
    }

    fn utilisation(&mut self) -> Option<Utilization> {
        let mut util = Utilization::default();
        // SAFETY: a valid handle and an out-parameter of the nvml.h layout.
        let rc = unsafe { (self.nvml.sym.utilization)(self.dev, &mut util) };
        self.ok("nvmlDeviceGetUtilizationRates", rc).then_some(util)
    }

    /// One direction of `nvmlDeviceGetPcieThroughput`: blocks about 20 ms.
    fn throughput(&mut self, counter: c_int, call: &str) -> Option<u32> {
        let mut v: c_uint = 0;
        // SAFETY: a valid handle, a value of nvmlPcieUtilCounter_t, an out-parameter.
        let rc = unsafe { (self.nvml.sym.pcie_throughput)(self.dev, counter, &mut v) };
        self.ok(call, rc).then_some(v)
    }
}

impl Drop for Nvml {
    fn drop(&mut self) {
        // SAFETY: matches the successful nvmlInit_v2 of `init`; no handle outlives self.
        unsafe { (self.sym.shutdown)() };
    }
}

/// `nvmlErrorString(rc)` as owned text.
///
/// # Safety
/// `f` must be NVML's `nvmlErrorString`.
unsafe fn error_text(
    f: unsafe extern "C" fn(NvmlReturn) -> *const c_char,
    rc: NvmlReturn,
) -> String {
    // SAFETY: the caller passes nvmlErrorString, which returns a static string or NULL.
    let p = unsafe { f(rc) };
    if p.is_null() {
        return format!("nvmlReturn_t {rc}");
    }
    // SAFETY: a NUL-terminated static string.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// A fixed-size C string field, up to its first NUL (or the whole array).
fn c_array_text(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}
