//! Host memory bound to one NUMA node: the memory endpoint of a loopback path.
//!
//! The region is an anonymous mapping bound with `mbind(MPOL_BIND, MPOL_MF_STRICT)` before
//! its pages are touched, so every page is allocated on the node; `move_pages` (with no
//! target nodes it only reports where each page lives) then verifies that they are. A probe
//! of `mem1` that silently ran on node 0 would measure the wrong path.

use std::io;

/// `MPOL_BIND` from `<linux/mempolicy.h>`.
const MPOL_BIND: libc::c_int = 2;
/// `MPOL_MF_STRICT`: fail if existing pages do not follow the policy.
const MPOL_MF_STRICT: libc::c_uint = 1;

/// Why host memory could not be placed.
#[derive(Debug, thiserror::Error)]
pub enum HostMemoryError {
    /// mmap failed.
    #[error("mmap of {bytes} B: {source}")]
    Map {
        /// Size asked for.
        bytes: usize,
        /// errno.
        source: io::Error,
    },
    /// mbind failed (the node has no memory, or is not online).
    #[error("mbind to NUMA node {node}: {source}")]
    Bind {
        /// The node.
        node: u32,
        /// errno.
        source: io::Error,
    },
    /// move_pages failed.
    #[error("move_pages (checking placement): {0}")]
    Query(io::Error),
    /// Some page is not on the node.
    #[error("page {page} of the region is on NUMA node {actual}, not {node}")]
    Misplaced {
        /// The node asked for.
        node: u32,
        /// Page index.
        page: usize,
        /// Where it is (a negative value is an errno from move_pages).
        actual: i32,
    },
}

/// A page-aligned anonymous mapping on one NUMA node, unmapped on drop.
pub struct HostRegion {
    ptr: *mut u8,
    len: usize,
    node: Option<u32>,
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

impl HostRegion {
    /// Maps `len` bytes on `node` and verifies every page is there. `node = None` leaves the
    /// placement to the kernel (a host without NUMA support).
    pub fn on_node(len: usize, node: Option<u32>) -> Result<HostRegion, HostMemoryError> {
        let len = len.max(1).next_multiple_of(page_size());
        // SAFETY: an anonymous private mapping has no preconditions.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(HostMemoryError::Map {
                bytes: len,
                source: io::Error::last_os_error(),
            });
        }
        let region = HostRegion {
            ptr: ptr.cast(),
            len,
            node,
        };
        if let Some(node) = node {
            region.bind(node)?;
        }
        // Touch every page now, so it is allocated under the policy (and not during the
        // first timed DMA).
        region.as_mut_slice().fill(0);
        if let Some(node) = node {
            region.verify(node)?;
        }
        Ok(region)
    }

    fn bind(&self, node: u32) -> Result<(), HostMemoryError> {
        let words = node as usize / 64 + 1;
        let mut mask = vec![0u64; words];
        mask[node as usize / 64] |= 1 << (node % 64);
        // The kernel reads maxnode - 1 bits.
        let maxnode = (words * 64 + 1) as libc::c_ulong;
        // SAFETY: the range is our own mapping; mask holds `words` longs.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_mbind,
                self.ptr,
                self.len,
                MPOL_BIND,
                mask.as_ptr(),
                maxnode,
                MPOL_MF_STRICT,
            )
        };
        if rc != 0 {
            return Err(HostMemoryError::Bind {
                node,
                source: io::Error::last_os_error(),
            });
        }
        Ok(())
    }

    fn verify(&self, node: u32) -> Result<(), HostMemoryError> {
        let page = page_size();
        let pages: Vec<*mut libc::c_void> = (0..self.len / page)
            // SAFETY: offsets stay inside the mapping.
            .map(|i| unsafe { self.ptr.add(i * page) }.cast())
            .collect();
        let mut status = vec![-1i32; pages.len()];
        // SAFETY: pid 0 is this process; with a null node list move_pages only reports the
        // node of each page into `status`, which has one entry per page.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_move_pages,
                0,
                pages.len() as libc::c_ulong,
                pages.as_ptr(),
                std::ptr::null::<libc::c_int>(),
                status.as_mut_ptr(),
                0,
            )
        };
        if rc != 0 {
            return Err(HostMemoryError::Query(io::Error::last_os_error()));
        }
        match status.iter().position(|&s| s != node as i32) {
            Some(page) => Err(HostMemoryError::Misplaced {
                node,
                page,
                actual: status[page],
            }),
            None => Ok(()),
        }
    }

    /// The NUMA node it is bound to.
    pub fn node(&self) -> Option<u32> {
        self.node
    }

    /// Start address.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Length in bytes (a whole number of pages).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never empty (at least one page); here for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes. The RNIC may write them while a work request is outstanding, so callers
    /// only look once every request has completed.
    #[allow(clippy::mut_from_ref)]
    pub fn as_mut_slice(&self) -> &mut [u8] {
        // SAFETY: the mapping is ours, readable and writable, for `len` bytes.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for HostRegion {
    fn drop(&mut self) {
        // SAFETY: our own mapping; MRs registered on it borrow the region and are gone.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// Which NUMA nodes this kernel supports binding to (a kernel without CONFIG_NUMA answers
/// ENOSYS, and then placement is left to it).
pub fn numa_supported() -> bool {
    let mut mode: libc::c_int = 0;
    // SAFETY: asks for this thread's policy only; no node mask.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut mode,
            std::ptr::null_mut::<libc::c_ulong>(),
            0 as libc::c_ulong,
            std::ptr::null_mut::<libc::c_void>(),
            0 as libc::c_ulong,
        )
    };
    rc == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_on_node_0_is_verified_there_and_writable() {
        if !numa_supported() {
            eprintln!("kernel without NUMA: binding is not tested here");
            return;
        }
        let r = HostRegion::on_node(3 * 4096 + 1, Some(0)).unwrap();
        assert_eq!(
            r.len(),
            4 * page_size().max(4096) / page_size().max(4096) * page_size()
        );
        r.as_mut_slice()[r.len() - 1] = 7;
        assert_eq!(r.as_mut_slice()[r.len() - 1], 7);
        assert_eq!(r.node(), Some(0));
    }

    #[test]
    fn binding_to_a_node_that_does_not_exist_fails_with_the_node_named() {
        if !numa_supported() {
            return;
        }
        let err = HostRegion::on_node(4096, Some(1000))
            .err()
            .expect("node 1000 absent");
        assert!(
            matches!(err, HostMemoryError::Bind { node: 1000, .. }),
            "{err}"
        );
        assert!(
            err.to_string().starts_with("mbind to NUMA node 1000: "),
            "{err}"
        );
    }
}
