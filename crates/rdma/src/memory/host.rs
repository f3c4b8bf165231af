//! Host memory bound to one NUMA node: the memory endpoint of a loopback path.
//!
//! The region is an anonymous mapping bound with `mbind(MPOL_BIND, MPOL_MF_STRICT)` before
//! its pages are touched, so every page is allocated on the node; `move_pages` (with no
//! target nodes it only reports where each page lives) then verifies that they are. A probe
//! of `mem1` that silently ran on node 0 would measure the wrong path.
//!
//! A region is in base pages, or in 2 MiB huge pages from the hugetlb pool (`MAP_HUGETLB`)
//! for the IOTLB sweep's 2 MiB curve (HotNets'22 3.1: huge pages shrink the working set in
//! IOTLB entries 512x). A huge-page fault with no free page on the node kills the process
//! (SIGBUS), so the node's free pool is checked before the mapping is touched.

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
    /// The node has too few free 2 MiB huge pages.
    #[error(
        "{needed} free 2 MiB huge pages needed on {place}, {free} there: reserve them first \
         (sysctl vm.nr_hugepages, or {path})"
    )]
    NoHugePages {
        /// Pages the region needs.
        needed: usize,
        /// Free pages found.
        free: usize,
        /// `NUMA node N` or `this host`.
        place: String,
        /// The sysfs file that counts (and reserves) them.
        path: String,
    },
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

/// The pages a region is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pages {
    /// The system's base pages (4 KiB on x86-64).
    Base,
    /// 2 MiB huge pages from the hugetlb pool.
    Huge2M,
}

/// Bytes of a 2 MiB huge page.
pub const HUGE_2M: usize = 2 << 20;

/// `MAP_HUGE_2MB`: log2(2 MiB) in the mmap flags' size field (`MAP_HUGE_SHIFT` is 26).
const MAP_HUGE_2MB: libc::c_int = 21 << 26;

/// Free 2 MiB huge pages on `node` (or on the host), and the file that counts them.
fn free_huge_pages(node: Option<u32>) -> (usize, String) {
    let path = match node {
        Some(n) => {
            format!("/sys/devices/system/node/node{n}/hugepages/hugepages-2048kB/free_hugepages")
        }
        None => "/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages".to_string(),
    };
    let free = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0);
    (free, path.replace("free_hugepages", "nr_hugepages"))
}

/// A page-aligned anonymous mapping on one NUMA node, unmapped on drop.
pub struct HostRegion {
    ptr: *mut u8,
    len: usize,
    node: Option<u32>,
    /// Bytes of one of its pages.
    page: usize,
}

/// Bytes of a base page (what `sysconf(_SC_PAGESIZE)` says; 4096 if it says nothing).
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// A private anonymous read-write mapping of `len` bytes (a multiple of its pages), with
/// `flags` added to `MAP_PRIVATE | MAP_ANONYMOUS` (`MAP_HUGETLB`, ...). The caller unmaps it.
pub(crate) fn map_anonymous(len: usize, flags: libc::c_int) -> io::Result<*mut u8> {
    // SAFETY: an anonymous private mapping has no preconditions.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | flags,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        Err(io::Error::last_os_error())
    } else {
        Ok(ptr.cast())
    }
}

impl HostRegion {
    /// Maps `len` bytes of `pages` on `node` and verifies every page is there. `node = None`
    /// leaves the placement to the kernel (a host without NUMA support).
    pub fn on_node(
        len: usize,
        node: Option<u32>,
        pages: Pages,
    ) -> Result<HostRegion, HostMemoryError> {
        let (page, flags) = match pages {
            Pages::Base => (page_size(), 0),
            Pages::Huge2M => (HUGE_2M, libc::MAP_HUGETLB | MAP_HUGE_2MB),
        };
        let len = len.max(1).next_multiple_of(page);
        if pages == Pages::Huge2M {
            let (free, path) = free_huge_pages(node);
            let needed = len / HUGE_2M;
            if free < needed {
                return Err(HostMemoryError::NoHugePages {
                    needed,
                    free,
                    place: node.map_or("this host".into(), |n| format!("NUMA node {n}")),
                    path,
                });
            }
        }
        let ptr = map_anonymous(len, flags)
            .map_err(|source| HostMemoryError::Map { bytes: len, source })?;
        let region = HostRegion {
            ptr,
            len,
            node,
            page,
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
        let page = self.page;
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

    /// Bytes of one of its pages.
    pub fn page_bytes(&self) -> usize {
        self.page
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
        let r = HostRegion::on_node(3 * 4096 + 1, Some(0), Pages::Base).unwrap();
        assert_eq!(
            r.len(),
            4 * page_size().max(4096) / page_size().max(4096) * page_size()
        );
        r.as_mut_slice()[r.len() - 1] = 7;
        assert_eq!(r.as_mut_slice()[r.len() - 1], 7);
        assert_eq!(r.node(), Some(0));
    }

    #[test]
    fn huge_pages_are_refused_by_name_when_the_pool_is_short() {
        // Far more than any test machine reserves: refused before mmap, never SIGBUS.
        let e = HostRegion::on_node(1 << 40, Some(0), Pages::Huge2M)
            .err()
            .unwrap();
        let text = e.to_string();
        assert!(
            text.starts_with("524288 free 2 MiB huge pages needed on NUMA node 0"),
            "{text}"
        );
        assert!(
            text.contains("node0/hugepages/hugepages-2048kB/nr_hugepages"),
            "{text}"
        );
        let e = HostRegion::on_node(1 << 40, None, Pages::Huge2M)
            .err()
            .unwrap();
        assert!(e.to_string().contains("on this host"), "{e}");
    }

    #[test]
    fn binding_to_a_node_that_does_not_exist_fails_with_the_node_named() {
        if !numa_supported() {
            return;
        }
        let err = HostRegion::on_node(4096, Some(1000), Pages::Base)
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
