//! Memory traffic the CPU's caches would not arrange well alone: prefetches (reading bytes into
//! the cache before they are needed, where a hardware prefetcher would not: gathers of scattered
//! pieces) and streaming copies (writing output that is not read again soon).

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

/// Copies `src` into `dest` (of the same length) with non-temporal stores on x86-64: the lines
/// written are neither read first nor kept in the cache, which halves the memory traffic of
/// writing output that is not read again soon and leaves the cache to what is still being hashed.
/// The stores are weakly ordered: call [`store_fence`] before another thread reads `dest`.
/// Elsewhere, a plain copy.
pub(crate) fn copy_streaming(dest: &mut [u8], src: &[u8]) {
    assert_eq!(dest.len(), src.len(), "copy_streaming: lengths differ");
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        // The unaligned head up to a 16-byte boundary of `dest` and the tail after the last whole
        // 64-byte step are copied as usual.
        let head = dest.as_ptr().align_offset(16).min(dest.len());
        let body = (dest.len() - head) / 64 * 64;
        dest[..head].copy_from_slice(&src[..head]);
        let (d, s) = (dest[head..].as_mut_ptr(), src[head..].as_ptr());
        let mut at = 0;
        while at < body {
            // SAFETY: SSE2 is part of x86-64; `at + 64 <= body` keeps every access inside both
            // slices, and `d + at` is 16-byte aligned (`head` aligned `d`, `at` is a multiple of 64).
            unsafe {
                for i in (0..64).step_by(16) {
                    let v = _mm_loadu_si128(s.add(at + i).cast::<__m128i>());
                    _mm_stream_si128(d.add(at + i).cast::<__m128i>(), v);
                }
            }
            at += 64;
        }
        dest[head + body..].copy_from_slice(&src[head + body..]);
    }
    #[cfg(not(target_arch = "x86_64"))]
    dest.copy_from_slice(src);
}

/// Orders the [`copy_streaming`] stores before every later store of this thread (x86-64's
/// `sfence`; elsewhere nothing is needed): once it returns, a thread that sees a later store
/// sees the copied bytes too.
pub(crate) fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of x86-64; a fence has no other effect.
    unsafe {
        core::arch::x86_64::_mm_sfence()
    };
}
