//! Probe memory on an endpoint: host memory on a NUMA node ([`host`]) or GPU memory
//! ([`cuda`]), behind one type the loopback engine registers, fills and checks.

pub mod cuda;
pub mod host;

use crate::verbs::{Mr, Pd, VerbsError};
use cuda::{GpuRegion, GpuRegistration, GpuUnavailable};
use host::HostRegion;

/// The memory of one endpoint for one probe; freed on drop (after the MRs on it, which the
/// engine declares later so they drop first).
pub enum EndpointMemory {
    /// Host memory on a NUMA node.
    Host(HostRegion),
    /// GPU memory and how it is registered.
    Gpu(GpuRegion, GpuRegistration),
}

impl EndpointMemory {
    /// The address the RNIC uses for byte 0 (a virtual address, or the GPU's device
    /// address as the MR's iova).
    pub fn base(&self) -> u64 {
        match self {
            EndpointMemory::Host(h) => h.as_ptr() as u64,
            EndpointMemory::Gpu(g, _) => g.device_ptr(),
        }
    }

    /// Bytes.
    pub fn len(&self) -> usize {
        match self {
            EndpointMemory::Host(h) => h.len(),
            EndpointMemory::Gpu(g, _) => g.len(),
        }
    }

    /// Never empty; for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Registers `len` bytes at `offset` with `pd`.
    pub fn register<'p>(
        &self,
        pd: &'p Pd<'_>,
        offset: usize,
        len: usize,
    ) -> Result<Mr<'p>, VerbsError> {
        assert!(offset + len <= self.len(), "region inside the allocation");
        match self {
            // SAFETY: the region outlives the MR: the engine drops MRs before memory.
            EndpointMemory::Host(h) => unsafe { pd.reg_mr(h.as_ptr().add(offset), len) },
            EndpointMemory::Gpu(g, GpuRegistration::PeerMem) => {
                // SAFETY: as above; nvidia_peermem resolves the device address.
                unsafe { pd.reg_mr((g.device_ptr() + offset as u64) as *mut u8, len) }
            }
            EndpointMemory::Gpu(g, GpuRegistration::DmaBuf) => {
                let fd = g
                    .dmabuf_fd()
                    .map_err(|e| VerbsError::call("dma-buf export", std::io::Error::other(e.0)))?;
                let iova = g.device_ptr() + offset as u64;
                // The MR holds its own reference to the dma-buf; our fd closes on return.
                pd.reg_dmabuf_mr(
                    std::os::fd::AsRawFd::as_raw_fd(&fd),
                    offset as u64,
                    len,
                    iova,
                )
            }
        }
    }

    /// Writes `data` at `offset`. Only GPU memory can fail (a CUDA copy, named in the
    /// error).
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<(), GpuUnavailable> {
        match self {
            EndpointMemory::Host(h) => {
                h.as_mut_slice()[offset..offset + data.len()].copy_from_slice(data);
                Ok(())
            }
            EndpointMemory::Gpu(g, _) => g.write(offset, data),
        }
    }

    /// Reads `out.len()` bytes at `offset`.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), GpuUnavailable> {
        match self {
            EndpointMemory::Host(h) => {
                out.copy_from_slice(&h.as_mut_slice()[offset..offset + out.len()]);
                Ok(())
            }
            EndpointMemory::Gpu(g, _) => g.read(offset, out),
        }
    }
}
