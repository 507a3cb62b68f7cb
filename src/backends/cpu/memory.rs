//! Prefetches: reading bytes into the cache before they are needed, where a hardware prefetcher
//! would not (gathers of scattered pieces).

/// Asks the CPU to start loading the cache lines of `bytes` into its caches (x86-64; elsewhere
/// nothing). A hint only: it changes no result.
#[inline]
pub(crate) fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        const LINE: usize = 64;
        let mut at = 0;
        while at < bytes.len() {
            // SAFETY: SSE is part of x86-64, and a prefetch of an address inside `bytes` reads
            // nothing that is not there.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(bytes.as_ptr().add(at).cast()) };
            at += LINE;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}
