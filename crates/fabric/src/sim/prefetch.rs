//! A cache hint the engine's hot path gives ahead of its loads (the event loop for the
//! events coming next, `links` for a link's two lines).

/// Asks the CPU to bring `value`'s cache line closer; a hint with no effect on the program.
#[inline(always)]
pub(crate) fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing the program can observe and cannot fault; the pointer
    // comes from a live reference anyway.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
