//! GPU memory through the CUDA driver API, loaded at run time (`libcuda.so.1`, installed by
//! the NVIDIA driver), so the binary has no CUDA dependency and a host without GPUs or
//! driver reports GPU paths as "unavailable: <reason>".
//!
//! The RNIC reaches GPU memory by GPUDirect RDMA, registered one of two ways
//! (linux-counters.md section 5):
//! 1. dma-buf: `cuMemGetHandleForAddressRange` exports the allocation as a dma-buf fd and
//!    `ibv_reg_dmabuf_mr` registers it (CUDA >= 11.7, the open kernel module, kernel >= 5.12,
//!    rdma-core >= 34). Preferred: it needs no out-of-tree module.
//! 2. peer memory: with the `nvidia_peermem` module loaded, plain `ibv_reg_mr` on the device
//!    pointer works.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::Arc;

type CuResult = c_int;
type CuDevice = c_int;
type CuContext = *mut c_void;
type CuDevicePtr = u64;

/// `CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED` (cuda.h, CUDA 11.7).
const ATTR_DMA_BUF_SUPPORTED: c_int = 124;
/// `CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD`.
const HANDLE_TYPE_DMA_BUF_FD: c_int = 1;
/// `CU_POINTER_ATTRIBUTE_SYNC_MEMOPS`: makes copies to and from the buffer synchronous
/// with RDMA to it, as GPUDirect RDMA requires.
const POINTER_ATTR_SYNC_MEMOPS: c_int = 6;

struct Symbols {
    init: unsafe extern "C" fn(c_uint) -> CuResult,
    get_error_string: unsafe extern "C" fn(CuResult, *mut *const c_char) -> CuResult,
    device_get_by_pci_bus_id: unsafe extern "C" fn(*mut CuDevice, *const c_char) -> CuResult,
    device_get_attribute: unsafe extern "C" fn(*mut c_int, c_int, CuDevice) -> CuResult,
    primary_ctx_retain: unsafe extern "C" fn(*mut CuContext, CuDevice) -> CuResult,
    primary_ctx_release: unsafe extern "C" fn(CuDevice) -> CuResult,
    ctx_set_current: unsafe extern "C" fn(CuContext) -> CuResult,
    mem_alloc: unsafe extern "C" fn(*mut CuDevicePtr, usize) -> CuResult,
    mem_free: unsafe extern "C" fn(CuDevicePtr) -> CuResult,
    memcpy_htod: unsafe extern "C" fn(CuDevicePtr, *const c_void, usize) -> CuResult,
    memcpy_dtoh: unsafe extern "C" fn(*mut c_void, CuDevicePtr, usize) -> CuResult,
    pointer_set_attribute: unsafe extern "C" fn(*const c_void, c_int, CuDevicePtr) -> CuResult,
    /// CUDA 11.7: absent from older drivers (then only peer memory can register).
    get_handle_for_address_range:
        Option<unsafe extern "C" fn(*mut c_void, CuDevicePtr, usize, c_int, u64) -> CuResult>,
}

/// The loaded CUDA driver.
pub struct Cuda {
    sym: Symbols,
    _lib: libloading::Library,
}

/// GPU memory cannot be used (no driver, no such GPU, no way to register it).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct GpuUnavailable(pub String);

impl Cuda {
    /// Loads `libcuda.so.1` and initialises the driver.
    pub fn load() -> Result<Arc<Cuda>, GpuUnavailable> {
        // SAFETY: the NVIDIA driver library's constructors have no Rust-visible effects.
        let lib = unsafe { libloading::Library::new("libcuda.so.1") }.map_err(|e| {
            GpuUnavailable(format!("no CUDA driver (libcuda.so.1 not loadable: {e})"))
        })?;
        macro_rules! sym {
            ($s:literal) => {
                // SAFETY: the left-hand type is the prototype of this symbol in cuda.h.
                *unsafe { lib.get(concat!($s, "\0").as_bytes()) }
                    .map_err(|e| GpuUnavailable(format!("libcuda.so.1 has no {}: {e}", $s)))?
            };
        }
        let sym = Symbols {
            init: sym!("cuInit"),
            get_error_string: sym!("cuGetErrorString"),
            device_get_by_pci_bus_id: sym!("cuDeviceGetByPCIBusId"),
            device_get_attribute: sym!("cuDeviceGetAttribute"),
            primary_ctx_retain: sym!("cuDevicePrimaryCtxRetain"),
            primary_ctx_release: sym!("cuDevicePrimaryCtxRelease_v2"),
            ctx_set_current: sym!("cuCtxSetCurrent"),
            mem_alloc: sym!("cuMemAlloc_v2"),
            mem_free: sym!("cuMemFree_v2"),
            memcpy_htod: sym!("cuMemcpyHtoD_v2"),
            memcpy_dtoh: sym!("cuMemcpyDtoH_v2"),
            pointer_set_attribute: sym!("cuPointerSetAttribute"),
            // SAFETY: as above; absence is allowed.
            get_handle_for_address_range: unsafe { lib.get(b"cuMemGetHandleForAddressRange\0") }
                .ok()
                .map(|s| *s),
        };
        let cuda = Cuda { sym, _lib: lib };
        // SAFETY: cuInit(0) may be called any number of times.
        cuda.check("cuInit", unsafe { (cuda.sym.init)(0) })?;
        Ok(Arc::new(cuda))
    }

    fn check(&self, call: &str, rc: CuResult) -> Result<(), GpuUnavailable> {
        if rc == 0 {
            return Ok(());
        }
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: cuGetErrorString writes a pointer to a static string, or fails.
        let name = if unsafe { (self.sym.get_error_string)(rc, &mut text) } == 0 && !text.is_null()
        {
            // SAFETY: a static NUL-terminated string.
            unsafe { CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned()
        } else {
            format!("CUresult {rc}")
        };
        Err(GpuUnavailable(format!("{call}: {name}")))
    }

    /// Allocates `len` bytes on the GPU at PCI address `bus_id` (`0000:3b:00.0`).
    pub fn alloc(self: &Arc<Self>, bus_id: &str, len: usize) -> Result<GpuRegion, GpuUnavailable> {
        let c_bus = std::ffi::CString::new(bus_id)
            .map_err(|_| GpuUnavailable(format!("bad PCI address {bus_id:?}")))?;
        let mut dev: CuDevice = 0;
        // SAFETY: out-parameter and a NUL-terminated string.
        self.check(&format!("cuDeviceGetByPCIBusId({bus_id})"), unsafe {
            (self.sym.device_get_by_pci_bus_id)(&mut dev, c_bus.as_ptr())
        })?;
        let mut ctx: CuContext = std::ptr::null_mut();
        // SAFETY: dev is a valid ordinal; released in GpuRegion::drop.
        self.check("cuDevicePrimaryCtxRetain", unsafe {
            (self.sym.primary_ctx_retain)(&mut ctx, dev)
        })?;
        let mut region = GpuRegion {
            cuda: Arc::clone(self),
            dev,
            ctx,
            ptr: 0,
            len: len.next_multiple_of(GPU_PAGE),
        };
        region.make_current()?;
        // SAFETY: out-parameter; freed in drop.
        self.check(&format!("cuMemAlloc({} B)", region.len), unsafe {
            (self.sym.mem_alloc)(&mut region.ptr, region.len)
        })?;
        let one: c_uint = 1;
        // SAFETY: ptr is our allocation; the attribute value is an unsigned int.
        self.check("cuPointerSetAttribute(SYNC_MEMOPS)", unsafe {
            (self.sym.pointer_set_attribute)(
                (&one as *const c_uint).cast(),
                POINTER_ATTR_SYNC_MEMOPS,
                region.ptr,
            )
        })?;
        Ok(region)
    }
}

/// GPUDirect RDMA pins GPU memory in 64 KiB pages; dma-buf export wants whole pages.
const GPU_PAGE: usize = 64 * 1024;

/// How GPU memory is registered with the RNIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuRegistration {
    /// `ibv_reg_dmabuf_mr` on an exported dma-buf fd.
    DmaBuf,
    /// `ibv_reg_mr` on the device pointer, served by `nvidia_peermem`.
    PeerMem,
}

/// A GPU allocation, freed on drop.
pub struct GpuRegion {
    cuda: Arc<Cuda>,
    dev: CuDevice,
    ctx: CuContext,
    ptr: CuDevicePtr,
    len: usize,
}

impl GpuRegion {
    fn make_current(&self) -> Result<(), GpuUnavailable> {
        // SAFETY: ctx is a retained primary context.
        self.cuda.check("cuCtxSetCurrent", unsafe {
            (self.cuda.sym.ctx_set_current)(self.ctx)
        })
    }

    /// Device address.
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }

    /// Bytes allocated.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never empty; for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How this GPU's memory can be registered: dma-buf when the driver supports it, else
    /// peer memory when `nvidia_peermem` is loaded (`peermem_loaded`), else why neither.
    pub fn registration(
        &self,
        verbs_has_dmabuf: bool,
        peermem_loaded: bool,
    ) -> Result<GpuRegistration, GpuUnavailable> {
        let mut dmabuf: c_int = 0;
        // SAFETY: out-parameter; an unknown attribute on an old driver is an error code.
        let asked = unsafe {
            (self.cuda.sym.device_get_attribute)(&mut dmabuf, ATTR_DMA_BUF_SUPPORTED, self.dev)
        };
        let dmabuf =
            asked == 0 && dmabuf == 1 && self.cuda.sym.get_handle_for_address_range.is_some();
        match (dmabuf && verbs_has_dmabuf, peermem_loaded) {
            (true, _) => Ok(GpuRegistration::DmaBuf),
            (false, true) => Ok(GpuRegistration::PeerMem),
            (false, false) => Err(GpuUnavailable(
                "GPU memory cannot be registered with the RNIC: no dma-buf support (needs the \
                 open NVIDIA kernel module, CUDA >= 11.7 and rdma-core >= 34) and the \
                 nvidia_peermem module is not loaded"
                    .into(),
            )),
        }
    }

    /// Exports the allocation as a dma-buf; the caller closes the fd once registered.
    pub fn dmabuf_fd(&self) -> Result<std::os::fd::OwnedFd, GpuUnavailable> {
        let get = self.cuda.sym.get_handle_for_address_range.ok_or_else(|| {
            GpuUnavailable("cuMemGetHandleForAddressRange is missing (CUDA < 11.7)".into())
        })?;
        let mut fd: c_int = -1;
        // SAFETY: fd is an int out-parameter; ptr/len are our whole allocation.
        self.cuda
            .check("cuMemGetHandleForAddressRange(dma-buf)", unsafe {
                get(
                    (&mut fd as *mut c_int).cast(),
                    self.ptr,
                    self.len,
                    HANDLE_TYPE_DMA_BUF_FD,
                    0,
                )
            })?;
        // SAFETY: the driver handed us a new fd that nobody else owns.
        Ok(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
    }

    /// Copies `data` to `offset`.
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<(), GpuUnavailable> {
        self.make_current()?;
        self.check_range(offset, data.len())?;
        // SAFETY: the range was checked above.
        self.cuda.check("cuMemcpyHtoD", unsafe {
            (self.cuda.sym.memcpy_htod)(self.ptr + offset as u64, data.as_ptr().cast(), data.len())
        })
    }

    fn check_range(&self, offset: usize, len: usize) -> Result<(), GpuUnavailable> {
        if offset + len > self.len {
            return Err(GpuUnavailable(format!(
                "{len} B at {offset} is outside the {} B allocation",
                self.len
            )));
        }
        Ok(())
    }

    /// Copies `out.len()` bytes from `offset` into `out`.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), GpuUnavailable> {
        self.make_current()?;
        self.check_range(offset, out.len())?;
        // SAFETY: the range was checked above.
        self.cuda.check("cuMemcpyDtoH", unsafe {
            (self.cuda.sym.memcpy_dtoh)(
                out.as_mut_ptr().cast(),
                self.ptr + offset as u64,
                out.len(),
            )
        })
    }
}

impl Drop for GpuRegion {
    fn drop(&mut self) {
        // SAFETY: MRs on this allocation borrow the region and are gone; the primary
        // context was retained in alloc.
        unsafe {
            if self.ptr != 0 {
                (self.cuda.sym.ctx_set_current)(self.ctx);
                (self.cuda.sym.mem_free)(self.ptr);
            }
            (self.cuda.sym.primary_ctx_release)(self.dev);
        }
    }
}

/// Whether the `nvidia_peermem` (or the older `nv_peer_mem`) module is loaded, under the
/// sysfs root `sys` (normally `/sys`).
pub fn peermem_loaded(sys: &std::path::Path) -> bool {
    ["module/nvidia_peermem", "module/nv_peer_mem"]
        .iter()
        .any(|m| sys.join(m).exists())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_driver_loading_says_why() {
        // This machine (and CI) has no NVIDIA driver: the reason must name the library.
        if std::path::Path::new("/proc/driver/nvidia").exists() {
            return;
        }
        let err = Cuda::load().err().expect("no CUDA driver here");
        assert!(err.0.starts_with("no CUDA driver (libcuda.so.1"), "{err}");
    }

    #[test]
    fn peermem_is_detected_from_the_module_directory() {
        let dir = std::env::temp_dir().join(format!("hostping-peermem-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("module/ib_core")).unwrap();
        assert!(!peermem_loaded(&dir));
        std::fs::create_dir_all(dir.join("module/nvidia_peermem")).unwrap();
        assert!(peermem_loaded(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
