//! Memory for one point of a micro-benchmark: a new anonymous mapping per point.
//!
//! Why a new mapping and not `madvise(MADV_DONTNEED)` on one kept for the whole sweep: a
//! range the RNIC has never seen is what ISPASS'21 measures (its first access is an RNIC
//! page fault), and with a new mapping and a new MR per point that holds whatever the
//! driver does: the MR's ODP page table starts empty, and its per-MR counters (RDMA netlink
//! `page_faults`) start at 0, so a point's faults are the MR's count. `MADV_DONTNEED` would
//! depend on the driver's MMU-notifier invalidation clearing its mapping, and would leave the
//! faults of earlier points in the counters.

use crate::memory::host::{map_anonymous, page_size};
use std::io;

/// A private anonymous mapping whose pages nothing has touched yet (the kernel backs them
/// on first access), unmapped on drop.
pub struct FreshPages {
    ptr: *mut u8,
    len: usize,
}

impl FreshPages {
    /// Maps `len` bytes, rounded up to whole pages.
    pub fn map(len: usize) -> io::Result<FreshPages> {
        let len = len.max(1).next_multiple_of(page_size());
        let ptr = map_anonymous(len, 0)?;
        let pages = FreshPages { ptr, len };
        // No transparent huge pages: the kernel merges adjacent anonymous mappings into one
        // area, and a CPU write into the neighbour (the remote side's data) could then
        // fault in a 2 MiB page spanning this mapping's pages too, so they would be present
        // before the RNIC ever asked for them (seen in the guest: 172 of 800 pages).
        // SAFETY: advice on our own mapping.
        if unsafe { libc::madvise(ptr.cast(), len, libc::MADV_NOHUGEPAGE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(pages)
    }

    /// The first byte (what MRs are registered at and READs address).
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// The address of byte `offset`, as verbs takes it.
    pub fn addr(&self, offset: usize) -> u64 {
        assert!(offset <= self.len, "offset inside the mapping");
        self.ptr as u64 + offset as u64
    }

    /// Bytes mapped (whole pages).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never empty; for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many of the mapping's pages are resident (`mincore`). Right after an ODP
    /// registration of pages the CPU never touched this is 0, where a pinned registration
    /// (`ib_umem_get` pins, faulting every page in) makes it all of them.
    pub fn resident_pages(&self) -> io::Result<usize> {
        let mut vec = vec![0u8; self.len / page_size()];
        // SAFETY: the range is our page-aligned mapping; vec has one byte per page.
        let rc = unsafe { libc::mincore(self.ptr.cast(), self.len, vec.as_mut_ptr()) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(vec.iter().filter(|b| *b & 1 == 1).count())
    }

    /// Pages mapped.
    pub fn pages(&self) -> usize {
        self.len / page_size()
    }

    /// Writes `data` at `offset` (the CPU touches those pages; the RNIC still has not).
    pub fn write(&self, offset: usize, data: &[u8]) {
        assert!(offset + data.len() <= self.len, "write inside the mapping");
        // SAFETY: the range is inside our mapping, which is readable and writable; no RNIC
        // writes into this side while the CPU does (the READs target the other side).
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.add(offset), data.len()) };
    }

    /// Copies `out.len()` bytes at `offset` out (after the READs completed).
    pub fn read(&self, offset: usize, out: &mut [u8]) {
        assert!(offset + out.len() <= self.len, "read inside the mapping");
        // SAFETY: as above; every READ into the range has completed, so no DMA is in flight.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(offset), out.as_mut_ptr(), out.len()) };
    }
}

impl Drop for FreshPages {
    fn drop(&mut self) {
        // SAFETY: our mapping; the MRs on it are dropped first (declared later by every
        // user).
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_mapping_has_no_resident_page_until_written() {
        let p = FreshPages::map(3 * page_size() - 7).unwrap();
        assert_eq!(p.len(), 3 * page_size());
        assert_eq!((p.pages(), p.resident_pages().unwrap()), (3, 0));
        p.write(page_size() + 5, b"abc");
        assert_eq!(p.resident_pages().unwrap(), 1);
        let mut out = [0u8; 4];
        p.read(page_size() + 4, &mut out);
        assert_eq!(&out, b"\0abc");
    }
}
