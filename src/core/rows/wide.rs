//! Two inputs' rows in one 256-bit vector, one input per 128-bit lane: [`Ymm`] (AVX-512VL) and
//! [`A2x2`] (AVX2).

#[cfg(target_arch = "x86")]
use core::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::*;

use super::row::*;
use crate::core::compress::Word;

/// Two inputs' rows in a 256-bit vector in an AVX-512VL function, one input in each 128-bit
/// lane: rotations in one instruction (`vprord`), no 512-bit instruction at all. The tree's
/// last two chunks run side by side on it ([`chunk_and_tail_avx512`]), and so do the CPU
/// backend's pairs of inputs (`backends/cpu/multi_rows/`).
#[derive(Clone, Copy)]
pub(crate) struct Ymm(pub(crate) __m256i);

impl Word for Ymm {
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        // SAFETY: only reached from functions compiled with AVX-512F and VL, which have AVX2.
        Ymm(unsafe { _mm256_add_epi32(self.0, o.0) })
    }
    #[inline(always)]
    fn xor(self, o: Self) -> Self {
        // SAFETY: as above.
        Ymm(unsafe { _mm256_xor_si256(self.0, o.0) })
    }
    #[inline(always)]
    fn rotr16(self) -> Self {
        // SAFETY: only reached from functions compiled with AVX-512F and VL.
        Ymm(unsafe { _mm256_ror_epi32::<16>(self.0) })
    }
    #[inline(always)]
    fn rotr12(self) -> Self {
        // SAFETY: as above.
        Ymm(unsafe { _mm256_ror_epi32::<12>(self.0) })
    }
    #[inline(always)]
    fn rotr8(self) -> Self {
        // SAFETY: as above.
        Ymm(unsafe { _mm256_ror_epi32::<8>(self.0) })
    }
    #[inline(always)]
    fn rotr7(self) -> Self {
        // SAFETY: as above.
        Ymm(unsafe { _mm256_ror_epi32::<7>(self.0) })
    }
}

impl Row for Ymm {
    #[inline(always)]
    unsafe fn shuffle<const IMM: i32>(self) -> Self {
        // SAFETY: AVX2, as the caller guarantees.
        Ymm(unsafe { _mm256_shuffle_epi32::<IMM>(self.0) })
    }
}

/// Words of `b` where bit i % 4 of `MASK` is set, else of `a`: the same four-word mask in both
/// 128-bit lanes, `vpblendd` with the immediate `MASK * 0x11`, written out for each mask that
/// `permute_msg` uses (a generic parameter cannot be computed into an immediate).
///
/// # Safety
/// AVX2.
#[inline(always)]
pub(crate) unsafe fn blend_256<const MASK: i32>(a: __m256i, b: __m256i) -> __m256i {
    // SAFETY: AVX2, as the caller guarantees.
    unsafe {
        match MASK {
            0b0001 => _mm256_blend_epi32::<0x11>(a, b),
            0b0010 => _mm256_blend_epi32::<0x22>(a, b),
            0b0100 => _mm256_blend_epi32::<0x44>(a, b),
            0b1000 => _mm256_blend_epi32::<0x88>(a, b),
            _ => unreachable!("no blend with mask {MASK:#b}"),
        }
    }
}

/// [`InLane`] for a wrapper `$t` around `__m256i` holding two inputs' rows, on AVX2
/// instructions, each behind [`opaque256`] (see [`opaque`]): [`Ymm`]'s, and the CPU backend's
/// AVX2-only two-input rows'.
macro_rules! in_lane_256 {
    ($t:ident) => {
        impl $crate::core::rows::InLane for $t {
            #[inline(always)]
            unsafe fn pshufd<const IMM: i32>(self) -> Self {
                // SAFETY: AVX2.
                $t(unsafe { $crate::core::rows::opaque256(_mm256_shuffle_epi32::<IMM>(self.0)) })
            }
            #[inline(always)]
            unsafe fn shufps<const IMM: i32>(self, hi: Self) -> Self {
                // SAFETY: AVX.
                $t(unsafe {
                    $crate::core::rows::opaque256(_mm256_castps_si256(_mm256_shuffle_ps::<IMM>(
                        _mm256_castsi256_ps(self.0),
                        _mm256_castsi256_ps(hi.0),
                    )))
                })
            }
            #[inline(always)]
            unsafe fn unpacklo(self, o: Self) -> Self {
                // SAFETY: AVX2.
                $t(unsafe { $crate::core::rows::opaque256(_mm256_unpacklo_epi32(self.0, o.0)) })
            }
            #[inline(always)]
            unsafe fn blend<const MASK: i32>(self, o: Self) -> Self {
                // SAFETY: AVX2.
                $t(unsafe { $crate::core::rows::opaque256($crate::core::rows::blend_256::<MASK>(self.0, o.0)) })
            }
        }
    };
}
pub(crate) use in_lane_256;

in_lane_256!(Ymm);

/// Two inputs' rows in a 256-bit vector in an AVX2 function: [`A2`]'s arithmetic on both
/// 128-bit lanes (byte-shuffle rotations by 16 and 8, the others as two shifts carried in parts,
/// every `xor` and right shift behind [`opaque256`], for the reasons given on `A2`). The tree's
/// last two chunks run side by side on it where the CPU has AVX2 but not AVX-512VL.
#[derive(Clone, Copy)]
pub(crate) struct A2x2(pub(crate) __m256i);

impl Word for A2x2 {
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        // SAFETY: only reached from functions compiled with AVX2.
        A2x2(unsafe { _mm256_add_epi32(self.0, o.0) })
    }
    #[inline(always)]
    fn xor(self, o: Self) -> Self {
        // SAFETY: as above.
        A2x2(unsafe { opaque256(_mm256_xor_si256(self.0, o.0)) })
    }
    #[inline(always)]
    fn rotr16(self) -> Self {
        // SAFETY: as above.
        A2x2(unsafe { rotr_bytes(self.0, &ROTR16_BYTES) })
    }
    #[inline(always)]
    fn rotr12(self) -> Self {
        // SAFETY: as above.
        A2x2(unsafe { _mm256_or_si256(_mm256_srli_epi32::<12>(self.0), _mm256_slli_epi32::<20>(self.0)) })
    }
    #[inline(always)]
    fn rotr8(self) -> Self {
        // SAFETY: as above.
        A2x2(unsafe { rotr_bytes(self.0, &ROTR8_BYTES) })
    }
    #[inline(always)]
    fn rotr7(self) -> Self {
        // SAFETY: as above.
        A2x2(unsafe { _mm256_or_si256(_mm256_srli_epi32::<7>(self.0), _mm256_slli_epi32::<25>(self.0)) })
    }
    #[inline(always)]
    fn rotr12_parts(self) -> (Self, Self) {
        // SAFETY: as above.
        unsafe { (A2x2(_mm256_slli_epi32::<20>(self.0)), A2x2(opaque256(_mm256_srli_epi32::<12>(self.0)))) }
    }
    #[inline(always)]
    fn rotr7_parts(self) -> (Self, Self) {
        // SAFETY: as above.
        unsafe { (A2x2(_mm256_slli_epi32::<25>(self.0)), A2x2(opaque256(_mm256_srli_epi32::<7>(self.0)))) }
    }
}

/// The `vpshufb` pattern that rotates each 32-bit word right by `bytes` bytes (in each 128-bit
/// lane: byte i of a word takes byte i + `bytes` of the same word).
pub(super) const fn rotr_pattern(bytes: usize) -> [u8; 32] {
    let mut p = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        p[i] = ((i % 16) & !3 | (i + bytes) & 3) as u8;
        i += 1;
    }
    p
}

/// [`A2x2`]'s rotations by 16 and 8 bits.
pub(super) static ROTR16_BYTES: [u8; 32] = rotr_pattern(2);
pub(super) static ROTR8_BYTES: [u8; 32] = rotr_pattern(1);

/// Each word of `x` rotated by whole bytes with `pattern` ([`rotr_pattern`]), the pattern
/// behind [`opaque256`]: LLVM, seeing it, may make the rotation two shuffles in a row (as on
/// SSE4.1: see `Word for __m128i` in `backends/cpu/lanes/sse41.rs`).
///
/// # Safety
/// AVX2.
#[inline(always)]
pub(super) unsafe fn rotr_bytes(x: __m256i, pattern: &[u8; 32]) -> __m256i {
    // SAFETY: AVX2, as the caller guarantees; 32 bytes are read from `pattern`.
    unsafe { _mm256_shuffle_epi8(x, opaque256(_mm256_loadu_si256(pattern.as_ptr() as *const __m256i))) }
}

impl Row for A2x2 {
    #[inline(always)]
    unsafe fn shuffle<const IMM: i32>(self) -> Self {
        // SAFETY: AVX2, as the caller guarantees.
        A2x2(unsafe { _mm256_shuffle_epi32::<IMM>(self.0) })
    }
}

in_lane_256!(A2x2);
