//! AVX2: eight inputs per vector.

#[cfg(target_arch = "x86")]
use core::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::*;

use super::lanes::{hash_groups, lane_ptr, prefetch_address, Job, Lanes};
use crate::core::compress::{Cv, Word};

impl Word for __m256i {
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        // SAFETY: only reached from functions compiled with AVX2 enabled.
        unsafe { _mm256_add_epi32(self, o) }
    }
    #[inline(always)]
    fn xor(self, o: Self) -> Self {
        // SAFETY: as above.
        unsafe { _mm256_xor_si256(self, o) }
    }
    #[inline(always)]
    fn rotr16(self) -> Self {
        // SAFETY: as above.
        unsafe {
            _mm256_shuffle_epi8(
                self,
                _mm256_set_epi8(
                    13, 12, 15, 14, 9, 8, 11, 10, 5, 4, 7, 6, 1, 0, 3, 2, 13, 12, 15, 14, 9, 8, 11, 10, 5, 4, 7, 6, 1,
                    0, 3, 2,
                ),
            )
        }
    }
    #[inline(always)]
    fn rotr12(self) -> Self {
        // SAFETY: as above.
        unsafe { _mm256_or_si256(_mm256_srli_epi32(self, 12), _mm256_slli_epi32(self, 20)) }
    }
    #[inline(always)]
    fn rotr8(self) -> Self {
        // SAFETY: as above.
        unsafe {
            _mm256_shuffle_epi8(
                self,
                _mm256_set_epi8(
                    12, 15, 14, 13, 8, 11, 10, 9, 4, 7, 6, 5, 0, 3, 2, 1, 12, 15, 14, 13, 8, 11, 10, 9, 4, 7, 6, 5, 0,
                    3, 2, 1,
                ),
            )
        }
    }
    #[inline(always)]
    fn rotr7(self) -> Self {
        // SAFETY: as above.
        unsafe { _mm256_or_si256(_mm256_srli_epi32(self, 7), _mm256_slli_epi32(self, 25)) }
    }
}

/// Transposes eight vectors of eight words: lane j of output i is lane i of input j.
#[inline(always)]
unsafe fn transpose8(r: [__m256i; 8]) -> [__m256i; 8] {
    // SAFETY: the caller guarantees AVX2.
    unsafe {
        // Pairs of rows interleaved by word, then by word pair, within each 128-bit half...
        let a = _mm256_unpacklo_epi32(r[0], r[1]);
        let b = _mm256_unpackhi_epi32(r[0], r[1]);
        let c = _mm256_unpacklo_epi32(r[2], r[3]);
        let d = _mm256_unpackhi_epi32(r[2], r[3]);
        let e = _mm256_unpacklo_epi32(r[4], r[5]);
        let f = _mm256_unpackhi_epi32(r[4], r[5]);
        let g = _mm256_unpacklo_epi32(r[6], r[7]);
        let h = _mm256_unpackhi_epi32(r[6], r[7]);
        let ac0 = _mm256_unpacklo_epi64(a, c); // words 0 | 4 of rows 0-3
        let ac1 = _mm256_unpackhi_epi64(a, c); // words 1 | 5
        let bd0 = _mm256_unpacklo_epi64(b, d); // words 2 | 6
        let bd1 = _mm256_unpackhi_epi64(b, d); // words 3 | 7
        let eg0 = _mm256_unpacklo_epi64(e, g); // the same for rows 4-7
        let eg1 = _mm256_unpackhi_epi64(e, g);
        let fh0 = _mm256_unpacklo_epi64(f, h);
        let fh1 = _mm256_unpackhi_epi64(f, h);
        // ...then the 128-bit halves of rows 0-3 and rows 4-7 joined.
        [
            _mm256_permute2x128_si256(ac0, eg0, 0x20),
            _mm256_permute2x128_si256(ac1, eg1, 0x20),
            _mm256_permute2x128_si256(bd0, fh0, 0x20),
            _mm256_permute2x128_si256(bd1, fh1, 0x20),
            _mm256_permute2x128_si256(ac0, eg0, 0x31),
            _mm256_permute2x128_si256(ac1, eg1, 0x31),
            _mm256_permute2x128_si256(bd0, fh0, 0x31),
            _mm256_permute2x128_si256(bd1, fh1, 0x31),
        ]
    }
}

impl Lanes for __m256i {
    const N: usize = 8;
    #[inline(always)]
    unsafe fn splat(x: u32) -> Self {
        unsafe { _mm256_set1_epi32(x as i32) }
    }
    #[inline(always)]
    unsafe fn load(words: &[u32]) -> Self {
        assert!(words.len() >= 8);
        unsafe { _mm256_loadu_si256(words.as_ptr() as *const __m256i) }
    }
    #[inline(always)]
    unsafe fn store(self, out: &mut [u32]) {
        assert!(out.len() >= 8);
        unsafe { _mm256_storeu_si256(out.as_mut_ptr() as *mut __m256i, self) }
    }
    #[inline(always)]
    unsafe fn load_msg<const PREFETCH: bool>(input: *const u8, stride: usize, valid: usize) -> [Self; 16] {
        // SAFETY (whole body): the caller guarantees 64 readable bytes for each valid lane;
        // lanes past `valid` read the last valid lane's; prefetches never fault.
        unsafe {
            let mut ptrs = [input; 8];
            for (lane, p) in ptrs.iter_mut().enumerate() {
                *p = lane_ptr(input, stride, valid, lane);
                if PREFETCH {
                    _mm_prefetch::<_MM_HINT_T0>(prefetch_address(*p, stride, Self::N));
                }
            }
            let mut m = [_mm256_setzero_si256(); 16];
            for half in 0..2 {
                let mut rows = [_mm256_setzero_si256(); 8];
                for (row, p) in rows.iter_mut().zip(ptrs) {
                    *row = _mm256_loadu_si256(p.add(32 * half) as *const __m256i);
                }
                m[8 * half..8 * half + 8].copy_from_slice(&transpose8(rows));
            }
            m
        }
    }
    /// The eight CVs transposed in registers and written with one 32-byte store each. Left to
    /// the default (words through a stack array), the compiler wrote them with eight
    /// `vpscatterdd` in the AVX-512 build, and the parent level that reads them next had to
    /// wait for 64 four-byte stores. With the 16-lane kernel's `store_cvs`, on the H200
    /// machine's Xeon, one thread against upstream (`examples/cpu_small.rs`, medians of ten
    /// interleaved runs): 8 KiB 0.929x -> 0.941x, 256 KiB 0.967x -> 0.984x.
    #[inline(always)]
    unsafe fn store_cvs(h: [Self; 8], out: &mut [Cv], valid: usize) {
        // SAFETY: AVX2, as the caller guarantees; each store writes one 32-byte CV.
        unsafe {
            for (cv, row) in out[..valid].iter_mut().zip(transpose8(h)) {
                _mm256_storeu_si256(cv.as_mut_ptr() as *mut __m256i, row);
            }
        }
    }
}

/// Hashes all `out.len()` inputs, eight at a time.
///
/// # Safety
/// The CPU must support AVX2; the input layout is as for [`hash_groups`].
#[target_feature(enable = "avx2")]
pub(super) unsafe fn hash_many(input: &[u8], stride: usize, blocks: usize, job: &Job, out: &mut [Cv]) {
    // SAFETY: AVX2 is enabled here; the caller guarantees the layout.
    unsafe { hash_groups::<__m256i>(input, stride, blocks, job, out) }
}

/// The same kernel in EVEX encoding, for the partial groups of a CPU with AVX-512: 32 vector
/// registers hold all 16 state and 16 message vectors, and rotations are one instruction.
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512VL; the input layout is as for [`hash_groups`].
#[target_feature(enable = "avx2,avx512f,avx512vl")]
pub(super) unsafe fn hash_many_evex(input: &[u8], stride: usize, blocks: usize, job: &Job, out: &mut [Cv]) {
    // SAFETY: AVX2, AVX-512F and VL are enabled here; the caller guarantees the layout.
    unsafe { hash_groups::<__m256i>(input, stride, blocks, job, out) }
}
