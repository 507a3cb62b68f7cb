//! AVX-512: sixteen inputs per vector.

#[cfg(target_arch = "x86")]
use core::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::*;

use super::{hash_groups, lane_ptr, prefetch_address, Job, Lanes, Prefetch};
use crate::core::compress::{Cv, Word};

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
    unsafe fn load_msg<const PREFETCH: u8>(input: *const u8, stride: usize, valid: usize) -> [Self; 16] {
        // SAFETY (whole body): the caller guarantees 64 readable bytes for each valid lane;
        // lanes past `valid` read the last valid lane's; prefetches never fault.
        unsafe {
            let mut ptrs = [input; 16];
            for (lane, p) in ptrs.iter_mut().enumerate() {
                *p = lane_ptr(input, stride, valid, lane);
                if PREFETCH != Prefetch::None as u8 {
                    _mm_prefetch::<_MM_HINT_T0>(prefetch_address::<PREFETCH>(*p, stride, Self::N));
                }
            }
            let mut m = [_mm512_setzero_si512(); 16];
            for half in 0..2 {
                // Row i: lane i's eight words of this half in the low 256 bits, lane i + 8's in
                // the high 256 bits.
                let mut r = [_mm512_setzero_si512(); 8];
                for (i, row) in r.iter_mut().enumerate() {
                    let lo = _mm256_loadu_si256(ptrs[i].add(32 * half) as *const __m256i);
                    let hi = _mm256_loadu_si256(ptrs[i + 8].add(32 * half) as *const __m256i);
                    *row = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi);
                }
                // Within each 128-bit lane, word j of rows 4g..4g+3 gathered (two unpack steps);
                // then a two-source qword permute puts rows 0-3, 4-7, 8-11, 12-15 in order.
                let mut q = [[_mm512_setzero_si512(); 4]; 2];
                for g in 0..2 {
                    let (a, b, c, d) = (r[4 * g], r[4 * g + 1], r[4 * g + 2], r[4 * g + 3]);
                    let ab_lo = _mm512_unpacklo_epi32(a, b);
                    let ab_hi = _mm512_unpackhi_epi32(a, b);
                    let cd_lo = _mm512_unpacklo_epi32(c, d);
                    let cd_hi = _mm512_unpackhi_epi32(c, d);
                    q[g] = [
                        _mm512_unpacklo_epi64(ab_lo, cd_lo),
                        _mm512_unpackhi_epi64(ab_lo, cd_lo),
                        _mm512_unpacklo_epi64(ab_hi, cd_hi),
                        _mm512_unpackhi_epi64(ab_hi, cd_hi),
                    ];
                }
                // q[g][j], 128-bit lane L: word j + 4 * (L % 2) of lanes 4g..4g+3 (+ 8 if L >= 2).
                let even = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0);
                let odd = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
                for j in 0..4 {
                    m[8 * half + j] = _mm512_permutex2var_epi64(q[0][j], even, q[1][j]);
                    m[8 * half + 4 + j] = _mm512_permutex2var_epi64(q[0][j], odd, q[1][j]);
                }
            }
            m
        }
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn rounds(v: &mut [Self; 16], m: &[Self; 16]) {
        // SAFETY: as the caller guarantees.
        unsafe { rounds_in_registers(v, m) }
    }
    /// The sixteen CVs transposed in registers and written with one 32-byte store each, as for
    /// `__m256i`: words 0-3 and 4-7 of four lanes gathered within each 128-bit lane (two unpack
    /// steps), then each lane's two halves joined.
    #[inline(always)]
    unsafe fn store_cvs(h: [Self; 8], out: &mut [Cv], valid: usize) {
        // SAFETY (whole body): AVX-512F, as the caller guarantees; each store writes 32 bytes
        // of one CV below `valid`.
        unsafe {
            // q[k][g]: in 128-bit lane L, words 4g..4g+3 of input 4L + k.
            let mut q = [[_mm512_setzero_si512(); 2]; 4];
            for g in 0..2 {
                let r = &h[4 * g..4 * g + 4];
                let ab_lo = _mm512_unpacklo_epi32(r[0], r[1]);
                let ab_hi = _mm512_unpackhi_epi32(r[0], r[1]);
                let cd_lo = _mm512_unpacklo_epi32(r[2], r[3]);
                let cd_hi = _mm512_unpackhi_epi32(r[2], r[3]);
                q[0][g] = _mm512_unpacklo_epi64(ab_lo, cd_lo);
                q[1][g] = _mm512_unpackhi_epi64(ab_lo, cd_lo);
                q[2][g] = _mm512_unpacklo_epi64(ab_hi, cd_hi);
                q[3][g] = _mm512_unpackhi_epi64(ab_hi, cd_hi);
            }
            // Inputs 4L + k for L = 0, 1 (the first permute) and L = 2, 3 (the second): each
            // input's low then high half, side by side.
            let first = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
            let second = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
            for (k, [lo, hi]) in q.into_iter().enumerate() {
                let pairs = [_mm512_permutex2var_epi64(lo, first, hi), _mm512_permutex2var_epi64(lo, second, hi)];
                for (p, pair) in pairs.into_iter().enumerate() {
                    for half in 0..2 {
                        let lane = 4 * (2 * p + half) + k;
                        if lane < valid {
                            let cv = if half == 0 {
                                _mm512_castsi512_si256(pair)
                            } else {
                                _mm512_extracti64x4_epi64::<1>(pair)
                            };
                            _mm256_storeu_si256(out[lane].as_mut_ptr() as *mut __m256i, cv);
                        }
                    }
                }
            }
        }
    }
}

/// Hashes all `out.len()` inputs, sixteen at a time.
///
/// # Safety
/// The CPU must support AVX-512F; the input layout is as for [`hash_groups`].
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn hash_many(input: &[u8], stride: usize, blocks: usize, job: &Job, out: &mut [Cv]) {
    // SAFETY: AVX-512F is enabled here; the caller guarantees the layout.
    unsafe { hash_groups::<__m512i>(input, stride, blocks, job, out) }
}

/// The seven rounds of the 16-lane kernel, all 32 vector registers named: the state in `zmm0` to
/// `zmm15`, the message in `zmm16` to `zmm31` (`build.rs` writes the template, `lane_rounds`).
/// Compiled from the generic rounds, LLVM kept copies of some vectors and moved them between
/// registers; named registers avoid those moves (docs/performance.md).
///
/// # Safety
/// AVX-512F.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn rounds_in_registers(v: &mut [__m512i; 16], m: &[__m512i; 16]) {
    // SAFETY: AVX-512F, as the caller guarantees; the template touches registers only.
    unsafe {
        core::arch::asm!(
            include_str!(concat!(env!("OUT_DIR"), "/avx512_rounds.s")),
            inout("zmm0") v[0],
            inout("zmm1") v[1],
            inout("zmm2") v[2],
            inout("zmm3") v[3],
            inout("zmm4") v[4],
            inout("zmm5") v[5],
            inout("zmm6") v[6],
            inout("zmm7") v[7],
            inout("zmm8") v[8],
            inout("zmm9") v[9],
            inout("zmm10") v[10],
            inout("zmm11") v[11],
            inout("zmm12") v[12],
            inout("zmm13") v[13],
            inout("zmm14") v[14],
            inout("zmm15") v[15],
            in("zmm16") m[0],
            in("zmm17") m[1],
            in("zmm18") m[2],
            in("zmm19") m[3],
            in("zmm20") m[4],
            in("zmm21") m[5],
            in("zmm22") m[6],
            in("zmm23") m[7],
            in("zmm24") m[8],
            in("zmm25") m[9],
            in("zmm26") m[10],
            in("zmm27") m[11],
            in("zmm28") m[12],
            in("zmm29") m[13],
            in("zmm30") m[14],
            in("zmm31") m[15],
            options(pure, nomem, nostack, preserves_flags)
        )
    };
}
