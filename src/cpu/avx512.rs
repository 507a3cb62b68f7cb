//! AVX-512: sixteen inputs per vector.

#[cfg(target_arch = "x86")]
use core::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::*;

use super::lanes::{hash_groups, lane_ptr, Job, Lanes, PREFETCH_AHEAD};
use crate::compress::{Cv, Word};

impl Word for __m512i {
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        // SAFETY: only reached from functions compiled with AVX-512F enabled.
        unsafe { _mm512_add_epi32(self, o) }
    }
    #[inline(always)]
    fn xor(self, o: Self) -> Self {
        // SAFETY: as above.
        unsafe { _mm512_xor_si512(self, o) }
    }
    #[inline(always)]
    fn rotr16(self) -> Self {
        // SAFETY: as above.
        unsafe { _mm512_ror_epi32::<16>(self) }
    }
    #[inline(always)]
    fn rotr12(self) -> Self {
        // SAFETY: as above.
        unsafe { _mm512_ror_epi32::<12>(self) }
    }
    #[inline(always)]
    fn rotr8(self) -> Self {
        // SAFETY: as above.
        unsafe { _mm512_ror_epi32::<8>(self) }
    }
    #[inline(always)]
    fn rotr7(self) -> Self {
        // SAFETY: as above.
        unsafe { _mm512_ror_epi32::<7>(self) }
    }
}

/// Transposes sixteen vectors of sixteen words: lane j of output i is lane i of input j.
#[inline(always)]
unsafe fn transpose16(r: [__m512i; 16]) -> [__m512i; 16] {
    // SAFETY: the caller guarantees AVX-512F.
    unsafe {
        // Within each 128-bit lane L (words 4L..4L+3): rows interleaved by word, then by word pair,
        // so that c[g][j] holds, in lane L, word 4L+j of the four rows 4g..4g+3.
        let mut c = [[_mm512_setzero_si512(); 4]; 4];
        for g in 0..4 {
            let lo01 = _mm512_unpacklo_epi32(r[4 * g], r[4 * g + 1]);
            let hi01 = _mm512_unpackhi_epi32(r[4 * g], r[4 * g + 1]);
            let lo23 = _mm512_unpacklo_epi32(r[4 * g + 2], r[4 * g + 3]);
            let hi23 = _mm512_unpackhi_epi32(r[4 * g + 2], r[4 * g + 3]);
            c[g] = [
                _mm512_unpacklo_epi64(lo01, lo23),
                _mm512_unpackhi_epi64(lo01, lo23),
                _mm512_unpacklo_epi64(hi01, hi23),
                _mm512_unpackhi_epi64(hi01, hi23),
            ];
        }
        // Then a 4x4 transpose of 128-bit lanes across the four row groups: word 4L+j gathers
        // lane L of c[0][j], c[1][j], c[2][j], c[3][j].
        let mut out = [_mm512_setzero_si512(); 16];
        for j in 0..4 {
            let t0 = _mm512_shuffle_i32x4::<0x44>(c[0][j], c[1][j]); // c0.0 c0.1 c1.0 c1.1
            let t1 = _mm512_shuffle_i32x4::<0xEE>(c[0][j], c[1][j]); // c0.2 c0.3 c1.2 c1.3
            let t2 = _mm512_shuffle_i32x4::<0x44>(c[2][j], c[3][j]);
            let t3 = _mm512_shuffle_i32x4::<0xEE>(c[2][j], c[3][j]);
            out[j] = _mm512_shuffle_i32x4::<0x88>(t0, t2); // lane 0 of each group
            out[4 + j] = _mm512_shuffle_i32x4::<0xDD>(t0, t2); // lane 1
            out[8 + j] = _mm512_shuffle_i32x4::<0x88>(t1, t3); // lane 2
            out[12 + j] = _mm512_shuffle_i32x4::<0xDD>(t1, t3); // lane 3
        }
        out
    }
}

impl Lanes for __m512i {
    const N: usize = 16;
    #[inline(always)]
    unsafe fn splat(x: u32) -> Self {
        unsafe { _mm512_set1_epi32(x as i32) }
    }
    #[inline(always)]
    unsafe fn load(words: &[u32]) -> Self {
        assert!(words.len() >= 16);
        unsafe { _mm512_loadu_si512(words.as_ptr() as *const __m512i) }
    }
    #[inline(always)]
    unsafe fn store(self, out: &mut [u32]) {
        assert!(out.len() >= 16);
        unsafe { _mm512_storeu_si512(out.as_mut_ptr() as *mut __m512i, self) }
    }
    #[inline(always)]
    unsafe fn load_msg(input: *const u8, stride: usize, valid: usize) -> [Self; 16] {
        // SAFETY (whole body): the caller guarantees 64 readable bytes for each valid lane;
        // lanes past `valid` read the last valid lane's; prefetches never fault.
        unsafe {
            let mut rows = [_mm512_setzero_si512(); 16];
            for (lane, row) in rows.iter_mut().enumerate() {
                let p = lane_ptr(input, stride, valid, lane);
                _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(PREFETCH_AHEAD) as *const i8);
                *row = _mm512_loadu_si512(p as *const __m512i);
            }
            transpose16(rows)
        }
    }
}

/// Hashes all `out.len()` inputs, sixteen at a time.
///
/// # Safety
/// The CPU must support AVX-512F; the input layout is as for [`hash_groups`].
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn hash_many(input: &[u8], stride: usize, blocks: usize, job: &Job, out: &mut [Cv]) {
    // SAFETY: AVX-512F is enabled here; the caller guarantees the layout.
    unsafe { hash_groups::<__m512i>(input, stride, blocks, job, out) }
}
