//! AVX2: eight inputs per vector.

#[cfg(target_arch = "x86")]
use core::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::*;

use super::{hash_groups, lane_ptr, prefetch_address, Job, Lanes, Prefetch};
use crate::core::compress::{Cv, Word};

/// The byte patterns of the two rotations done as byte shuffles, in each 128-bit lane: right by
/// 16 and by 8 bits.
pub(crate) static ROT16: [u8; 32] = rotation_pattern(2);
pub(crate) static ROT8: [u8; 32] = rotation_pattern(1);

/// The `vpshufb` pattern that rotates each 32-bit word right by `bytes` bytes.
const fn rotation_pattern(bytes: usize) -> [u8; 32] {
    let mut p = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        p[i] = (i - i % 4 + (i + bytes) % 4) as u8;
        i += 1;
    }
    p
}

/// `x`'s bytes shuffled by `pattern` (`vpshufb`), as exactly that one instruction, the pattern a
/// memory operand: [`LanesAvx2`]'s rotations by 16 and 8 bits. Left to itself, LLVM rewrites these
/// shuffles: a rotation by 16 became two (`vpshuflw` and `vpshufhw`), and a rotation of an
/// exclusive-or became the exclusive-or of two rotations, both extra work on the shuffle ports;
/// with the pattern in a register instead, the 8-lane kernel's 16 state and 16 message vectors
/// have two registers fewer and spill more (docs/performance.md).
///
/// # Safety
/// AVX2.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn shuffle_bytes(mut x: __m256i, pattern: &'static [u8; 32]) -> __m256i {
    // SAFETY: AVX2 is enabled here; the instruction reads the 32 bytes of `pattern` only.
    unsafe {
        core::arch::asm!(
            "vpshufb {x}, {x}, ymmword ptr [{p}]",
            x = inout(ymm_reg) x,
            p = in(reg) pattern.as_ptr(),
            options(pure, readonly, nostack, preserves_flags)
        )
    };
    x
}

/// The vector type of AVX-512VL functions (the 8-lane kernel in EVEX encoding, the small trees
/// of `multi_rows/`): byte shuffles by constant patterns, which LLVM makes one-instruction
/// rotations (`vprord`) there. [`LanesAvx2`] is the type of AVX2 functions.
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

/// Eight lanes in a function with AVX2 but not AVX-512: the 8-lane kernel of such CPUs, and the
/// rotations of the row form on two inputs there (`multi_rows::TwoRowsAvx2`). Its byte-shuffle
/// rotations are one `vpshufb` each ([`shuffle_bytes`]).
#[derive(Clone, Copy)]
#[repr(transparent)]
pub(crate) struct LanesAvx2(pub(crate) __m256i);

impl Word for LanesAvx2 {
    crate::core::rows::delegate_add_xor!();
    #[inline(always)]
    fn rotr16(self) -> Self {
        // SAFETY: only reached from functions compiled with AVX2 enabled.
        LanesAvx2(unsafe { shuffle_bytes(self.0, &ROT16) })
    }
    #[inline(always)]
    fn rotr12(self) -> Self {
        LanesAvx2(self.0.rotr12())
    }
    #[inline(always)]
    fn rotr8(self) -> Self {
        // SAFETY: as above.
        LanesAvx2(unsafe { shuffle_bytes(self.0, &ROT8) })
    }
    #[inline(always)]
    fn rotr7(self) -> Self {
        LanesAvx2(self.0.rotr7())
    }
}

impl Lanes for LanesAvx2 {
    const N: usize = 8;
    #[inline(always)]
    unsafe fn splat(x: u32) -> Self {
        // SAFETY: as the caller guarantees (for every method here).
        LanesAvx2(unsafe { __m256i::splat(x) })
    }
    #[inline(always)]
    unsafe fn load(words: &[u32]) -> Self {
        LanesAvx2(unsafe { __m256i::load(words) })
    }
    #[inline(always)]
    unsafe fn store(self, out: &mut [u32]) {
        unsafe { self.0.store(out) }
    }
    #[inline(always)]
    unsafe fn load_msg<const PREFETCH: u8>(input: *const u8, stride: usize, valid: usize) -> [Self; 16] {
        // (`transmute` rather than `map`: the map copies the array, a slower kernel.)
        // SAFETY: `LanesAvx2` is a transparent wrapper around `__m256i`.
        unsafe {
            core::mem::transmute::<[__m256i; 16], [LanesAvx2; 16]>(__m256i::load_msg::<PREFETCH>(input, stride, valid))
        }
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn rounds(v: &mut [Self; 16], m: &[Self; 16]) {
        // SAFETY: as the caller guarantees.
        unsafe { rounds_in_registers(v, m) }
    }
    #[inline(always)]
    unsafe fn store_cvs(h: [Self; 8], out: &mut [Cv], valid: usize) {
        // SAFETY: as above.
        unsafe { __m256i::store_cvs(core::mem::transmute::<[LanesAvx2; 8], [__m256i; 8]>(h), out, valid) }
    }
}

/// The seven rounds of the 8-lane kernel, the state in the 16 vector registers and the message
/// read from memory where it is added (`build.rs` writes the template, `lane_rounds`). Compiled
/// from the generic rounds, the kernel needed 32 registers for 16 state and 16 message vectors
/// and had 16: LLVM computed message sums early and spilled them, about 87 stack stores a
/// compression, and no ordering of the Rust source changed its schedule. Here there is one store
/// per half-round (docs/performance.md).
///
/// # Safety
/// AVX2.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn rounds_in_registers(v: &mut [LanesAvx2; 16], m: &[LanesAvx2; 16]) {
    let msg = super::Aligned(*m);
    let mut spill = core::mem::MaybeUninit::<__m256i>::uninit();
    // SAFETY: AVX2, as the caller guarantees; the template reads the 512 bytes at `m` and
    // the 32 at each pattern, and writes only the 32 bytes at `spill`.
    unsafe {
        core::arch::asm!(
            include_str!(concat!(env!("OUT_DIR"), "/avx2_rounds.s")),
            m = in(reg) msg.0.as_ptr(),
            spill = in(reg) spill.as_mut_ptr(),
            r16 = in(reg) ROT16.as_ptr(),
            r8 = in(reg) ROT8.as_ptr(),
            inout("ymm0") v[0].0,
            inout("ymm1") v[1].0,
            inout("ymm2") v[2].0,
            inout("ymm3") v[3].0,
            inout("ymm4") v[4].0,
            inout("ymm5") v[5].0,
            inout("ymm6") v[6].0,
            inout("ymm7") v[7].0,
            inout("ymm8") v[8].0,
            inout("ymm9") v[9].0,
            inout("ymm10") v[10].0,
            inout("ymm11") v[11].0,
            inout("ymm12") v[12].0,
            inout("ymm13") v[13].0,
            inout("ymm14") v[14].0,
            inout("ymm15") v[15].0,
            options(nostack, preserves_flags)
        )
    };
}

/// Transposes four vectors of four words within each 128-bit half: word j of half h of output i
/// is word i of half h of input j.
///
/// # Safety
/// AVX2.
#[inline(always)]
pub(crate) unsafe fn transpose_in_lanes(r: [__m256i; 4]) -> [__m256i; 4] {
    // SAFETY: the caller guarantees AVX2.
    unsafe {
        let (lo01, hi01) = (_mm256_unpacklo_epi32(r[0], r[1]), _mm256_unpackhi_epi32(r[0], r[1]));
        let (lo23, hi23) = (_mm256_unpacklo_epi32(r[2], r[3]), _mm256_unpackhi_epi32(r[2], r[3]));
        [
            _mm256_unpacklo_epi64(lo01, lo23),
            _mm256_unpackhi_epi64(lo01, lo23),
            _mm256_unpacklo_epi64(hi01, hi23),
            _mm256_unpackhi_epi64(hi01, hi23),
        ]
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
    unsafe fn load_msg<const PREFETCH: u8>(input: *const u8, stride: usize, valid: usize) -> [Self; 16] {
        // SAFETY (whole body): the caller guarantees 64 readable bytes for each valid lane;
        // lanes past `valid` read the last valid lane's; prefetches never fault.
        unsafe {
            let mut ptrs = [input; 8];
            for (lane, p) in ptrs.iter_mut().enumerate() {
                *p = lane_ptr(input, stride, valid, lane);
                if PREFETCH != Prefetch::None as u8 {
                    _mm_prefetch::<_MM_HINT_T0>(prefetch_address::<PREFETCH>(*p, stride, Self::N));
                }
            }
            // Quarter q of the blocks (words 4q..4q + 4): lanes 0-3's in the low 128-bit halves
            // of four vectors, lanes 4-7's in the high ones, each half one 16-byte load (the
            // high one inserted from memory), then a 4x4 transpose within the halves. The
            // whole 8x8 transpose of 32-byte loads took 48 shuffles a block, 16 of them
            // lane-crossing; this takes 32, none lane-crossing but the inserts.
            let mut m = [_mm256_setzero_si256(); 16];
            for q in 0..4 {
                let rows: [__m256i; 4] = core::array::from_fn(|j| {
                    let lo = _mm_loadu_si128(ptrs[j].add(16 * q) as *const __m128i);
                    let hi = _mm_loadu_si128(ptrs[j + 4].add(16 * q) as *const __m128i);
                    _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(lo), hi)
                });
                m[4 * q..4 * q + 4].copy_from_slice(&transpose_in_lanes(rows));
            }
            m
        }
    }
    /// The eight CVs transposed in registers and written with one 32-byte store each. Left to
    /// the default (words through a stack array), the compiler wrote them with eight
    /// `vpscatterdd` in the AVX-512 build, and the parent level that reads them next had to
    /// wait for 64 four-byte stores (docs/performance.md).
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
pub(crate) unsafe fn hash_many(input: &[u8], stride: usize, blocks: usize, job: &Job, out: &mut [Cv]) {
    // SAFETY: AVX2 is enabled here; the caller guarantees the layout.
    unsafe { hash_groups::<LanesAvx2>(input, stride, blocks, job, out) }
}

/// The same kernel in EVEX encoding, for the partial groups of a CPU with AVX-512: 32 vector
/// registers hold all 16 state and 16 message vectors, and rotations are one instruction.
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512VL; the input layout is as for [`hash_groups`].
#[target_feature(enable = "avx2,avx512f,avx512vl")]
pub(crate) unsafe fn hash_many_evex(input: &[u8], stride: usize, blocks: usize, job: &Job, out: &mut [Cv]) {
    // SAFETY: AVX2, AVX-512F and VL are enabled here; the caller guarantees the layout.
    unsafe { hash_groups::<__m256i>(input, stride, blocks, job, out) }
}
