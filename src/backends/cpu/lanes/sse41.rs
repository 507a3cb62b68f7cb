//! SSE4.1: four inputs per vector.

#[cfg(target_arch = "x86")]
use core::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::*;

use super::{hash_groups, lane_ptr, prefetch_address, Job, Lanes, Prefetch};
use crate::core::compress::{Cv, Word};
use crate::core::rows::opaque128;

impl Word for __m128i {
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        // SAFETY: only reached from functions compiled with SSE4.1 enabled.
        unsafe { _mm_add_epi32(self, o) }
    }
    #[inline(always)]
    fn xor(self, o: Self) -> Self {
        // SAFETY: as above.
        unsafe { _mm_xor_si128(self, o) }
    }
    /// The byte pattern goes through `opaque128`, so that LLVM sees a `pshufb` by an unknown
    /// pattern: by a known one, it made this rotation two shuffles (`pshuflw` and `pshufhw`,
    /// one after the other on the row form's critical path) and moved rotations through
    /// exclusive-ors, which cost small inputs several percent (docs/performance.md).
    #[inline(always)]
    fn rotr16(self) -> Self {
        // SAFETY: as above.
        unsafe { _mm_shuffle_epi8(self, opaque128(_mm_set_epi8(13, 12, 15, 14, 9, 8, 11, 10, 5, 4, 7, 6, 1, 0, 3, 2))) }
    }
    #[inline(always)]
    fn rotr12(self) -> Self {
        // SAFETY: as above.
        unsafe { _mm_or_si128(_mm_srli_epi32(self, 12), _mm_slli_epi32(self, 20)) }
    }
    #[inline(always)]
    fn rotr8(self) -> Self {
        // SAFETY: as above.
        unsafe { _mm_shuffle_epi8(self, opaque128(_mm_set_epi8(12, 15, 14, 13, 8, 11, 10, 9, 4, 7, 6, 5, 0, 3, 2, 1))) }
    }
    #[inline(always)]
    fn rotr7(self) -> Self {
        // SAFETY: as above.
        unsafe { _mm_or_si128(_mm_srli_epi32(self, 7), _mm_slli_epi32(self, 25)) }
    }
}

/// Transposes four vectors of four words: lane j of output i is lane i of input j.
#[inline(always)]
unsafe fn transpose4(r: [__m128i; 4]) -> [__m128i; 4] {
    // SAFETY: SSE2 is part of SSE4.1, which the caller guarantees.
    unsafe {
        let ab_lo = _mm_unpacklo_epi32(r[0], r[1]);
        let ab_hi = _mm_unpackhi_epi32(r[0], r[1]);
        let cd_lo = _mm_unpacklo_epi32(r[2], r[3]);
        let cd_hi = _mm_unpackhi_epi32(r[2], r[3]);
        [
            _mm_unpacklo_epi64(ab_lo, cd_lo),
            _mm_unpackhi_epi64(ab_lo, cd_lo),
            _mm_unpacklo_epi64(ab_hi, cd_hi),
            _mm_unpackhi_epi64(ab_hi, cd_hi),
        ]
    }
}

impl Lanes for __m128i {
    const N: usize = 4;
    #[inline(always)]
    unsafe fn splat(x: u32) -> Self {
        unsafe { _mm_set1_epi32(x as i32) }
    }
    #[inline(always)]
    unsafe fn load(words: &[u32]) -> Self {
        assert!(words.len() >= 4);
        unsafe { _mm_loadu_si128(words.as_ptr() as *const __m128i) }
    }
    #[inline(always)]
    unsafe fn store(self, out: &mut [u32]) {
        assert!(out.len() >= 4);
        unsafe { _mm_storeu_si128(out.as_mut_ptr() as *mut __m128i, self) }
    }
    #[inline(always)]
    unsafe fn load_msg<const PREFETCH: u8>(input: *const u8, stride: usize, valid: usize) -> [Self; 16] {
        // SAFETY (whole body): the caller guarantees 64 readable bytes for each valid lane;
        // lanes past `valid` read the last valid lane's; prefetches never fault.
        unsafe {
            let mut ptrs = [input; 4];
            for (lane, p) in ptrs.iter_mut().enumerate() {
                *p = lane_ptr(input, stride, valid, lane);
                if PREFETCH != Prefetch::None as u8 {
                    _mm_prefetch::<_MM_HINT_T0>(prefetch_address::<PREFETCH>(*p, stride, Self::N));
                }
            }
            let mut m = [_mm_setzero_si128(); 16];
            for q in 0..4 {
                let rows = [
                    _mm_loadu_si128(ptrs[0].add(16 * q) as *const __m128i),
                    _mm_loadu_si128(ptrs[1].add(16 * q) as *const __m128i),
                    _mm_loadu_si128(ptrs[2].add(16 * q) as *const __m128i),
                    _mm_loadu_si128(ptrs[3].add(16 * q) as *const __m128i),
                ];
                m[4 * q..4 * q + 4].copy_from_slice(&transpose4(rows));
            }
            m
        }
    }
}

/// Hashes all `out.len()` inputs, four at a time.
///
/// # Safety
/// The CPU must support SSE4.1; the input layout is as for [`hash_groups`].
#[target_feature(enable = "sse4.1")]
pub(crate) unsafe fn hash_many(input: &[u8], stride: usize, blocks: usize, job: &Job, out: &mut [Cv]) {
    // SAFETY: SSE4.1 is enabled here; the caller guarantees the layout.
    unsafe { hash_groups::<__m128i>(input, stride, blocks, job, out) }
}
