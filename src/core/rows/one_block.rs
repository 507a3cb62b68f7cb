//! The single-block compressions on rows: the rounds, the block's words into rows, and one
//! module of compressions per instruction set (`sse41`, `avx2`, `avx512`) that
//! `core::platform` picks from.

#[cfg(target_arch = "x86")]
use core::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::*;

use super::row::*;
use crate::core::compress::{g_carry, seven_rounds};
use crate::core::constants::{IV, ROW_FROM_DIAGONALS, ROW_TO_DIAGONALS};

/// One round: columns, then diagonals, then the rows rotated back. For the diagonals, rows 0, 2
/// and 3 are rotated (by -1, +1 and +2 lanes) and row 1 is left in place, so that lane j holds
/// diagonal (j + 3) % 4: G(v[j-1], v[4+j], v[8+(j+1)], v[12+(j+2)]) (indices mod 4). Row 1 is the
/// one each G finishes with, so leaving it alone keeps the shuffles off the dependency chain.
///
/// Row b's rotations are carried in two parts from G to G (`parts`, see [`g_carry`]).
#[inline(always)]
pub(super) unsafe fn round<R: Row>(rows: &mut [R; 4], parts: &mut [R; 1], [cx, cy, dx, dy]: [R; 4]) {
    // SAFETY (whole body): as for the callers.
    unsafe {
        g_carry(rows, [[0, 1, 2, 3]], [cx], [cy], parts);
        rows[0] = rows[0].shuffle::<{ ROW_TO_DIAGONALS[0] }>();
        rows[2] = rows[2].shuffle::<{ ROW_TO_DIAGONALS[1] }>();
        rows[3] = rows[3].shuffle::<{ ROW_TO_DIAGONALS[2] }>();
        g_carry(rows, [[0, 1, 2, 3]], [dx], [dy], parts);
        rows[0] = rows[0].shuffle::<{ ROW_FROM_DIAGONALS[0] }>();
        rows[2] = rows[2].shuffle::<{ ROW_FROM_DIAGONALS[1] }>();
        rows[3] = rows[3].shuffle::<{ ROW_FROM_DIAGONALS[2] }>();
    }
}

/// The seven rounds on the block given as its quarters (`q[k]` holds words 4k..4k+3 of each
/// lane's block): round 0's message rows made by [`first_msg`], each later round's moved in place
/// from the round before's by [`permute_msg`]. Written out, not as a loop over rounds 1-6: the
/// loop is slower. AVX2's two-input rows have
/// their own rounds instead, an `asm!` loop with the state held in registers (`multi_rows::rounds_avx2_one_chain`
/// and `rounds_avx2_two_chains`).
#[inline(always)]
pub(crate) unsafe fn all_rounds<R: Row>(rows: &mut [R; 4], q: [R; 4]) {
    // SAFETY (whole body): as for the callers.
    unsafe {
        let mut m = first_msg(q);
        let mut parts = [rows[1].xor(rows[1])];
        seven_rounds!(|r| {
            if r > 0 {
                m = permute_msg(m);
            }
            round(rows, &mut parts, m);
        });
        rows[1] = rows[1].xor(parts[0]);
    }
}

/// The 16 words of a block as its four quarters.
///
/// # Safety
/// SSE2 (every instruction set here).
#[inline(always)]
pub(super) unsafe fn quarters(m: &[u32; 16]) -> [__m128i; 4] {
    // SAFETY: 16 words are readable.
    unsafe { core::array::from_fn(|k| _mm_loadu_si128(m.as_ptr().add(4 * k) as *const __m128i)) }
}

/// A block given as two 256-bit halves (two child CVs, or a short block loaded masked) as its
/// four quarters.
///
/// # Safety
/// AVX2.
#[inline(always)]
pub(super) unsafe fn halves_to_quarters(lo: __m256i, hi: __m256i) -> [__m128i; 4] {
    // SAFETY: AVX2, as the caller guarantees.
    unsafe {
        [
            _mm256_castsi256_si128(lo),
            _mm256_extracti128_si256::<1>(lo),
            _mm256_castsi256_si128(hi),
            _mm256_extracti128_si256::<1>(hi),
        ]
    }
}

#[inline(always)]
pub(super) unsafe fn compress_rows<R: Row1>(
    cv: &[u32; 8],
    q: [__m128i; 4],
    block_len: u32,
    counter: u64,
    flags: u32,
) -> [u32; 16] {
    // SAFETY (whole body): the caller's instruction set covers SSE4.1; loads and stores are
    // unaligned ones on arrays of the right length.
    unsafe {
        let cv_lo = _mm_loadu_si128(cv.as_ptr() as *const __m128i);
        let cv_hi = _mm_loadu_si128(cv.as_ptr().add(4) as *const __m128i);
        let out = compress_regs::<R>(cv_lo, cv_hi, q, block_len, counter, flags);
        let mut words = [0u32; 16];
        for (i, v) in out.iter().enumerate() {
            _mm_storeu_si128(words.as_mut_ptr().add(4 * i) as *mut __m128i, *v);
        }
        words
    }
}

/// The compression from and to registers: the CV's two halves and the block's quarters in, the
/// 16 output words as four rows out (the first two are the output CV).
#[inline(always)]
pub(super) unsafe fn compress_regs<R: Row1>(
    cv_lo: __m128i,
    cv_hi: __m128i,
    q: [__m128i; 4],
    block_len: u32,
    counter: u64,
    flags: u32,
) -> [__m128i; 4] {
    // SAFETY (whole body): the caller's instruction set covers SSE4.1.
    unsafe {
        let mut rows = [
            R::wrap(cv_lo),
            R::wrap(cv_hi),
            R::wrap(_mm_loadu_si128(IV.as_ptr() as *const __m128i)),
            R::wrap(_mm_set_epi32(flags as i32, block_len as i32, (counter >> 32) as i32, counter as i32)),
        ];
        all_rounds(&mut rows, q.map(R::wrap));
        let [r0, r1, r2, r3] = rows.map(R::unwrap);
        [_mm_xor_si128(r0, r2), _mm_xor_si128(r1, r3), _mm_xor_si128(r2, cv_lo), _mm_xor_si128(r3, cv_hi)]
    }
}

/// The bytes of a block of 0 to 64 bytes (`block.len()`), zero-padded, as its quarters: a whole
/// block straight from where it lies, a short one through a zeroed copy on the stack (no byte
/// past `block` is read).
///
/// # Safety
/// SSE2 (every instruction set here).
#[inline(always)]
pub(super) unsafe fn padded_quarters(block: &[u8]) -> [__m128i; 4] {
    debug_assert!(block.len() <= 64);
    let load = |p: *const u8| -> [__m128i; 4] {
        // SAFETY: `p` points at 64 readable bytes (the caller's block or the padded copy).
        unsafe { core::array::from_fn(|k| _mm_loadu_si128(p.add(16 * k) as *const __m128i)) }
    };
    if block.len() == 64 {
        return load(block.as_ptr());
    }
    let mut padded = [0u8; 64];
    padded[..block.len()].copy_from_slice(block);
    load(padded.as_ptr())
}

/// A block of 0 to 64 bytes, zero-padded, as a message's quarters: read with two masked 256-bit
/// loads from where it lies (masked-off bytes are neither read nor able to fault). For a 64-byte
/// input, the padded copy's stores and the loads that waited on them had been a third of the
/// hash's time.
///
/// # Safety
/// AVX-512F, VL and BW.
#[inline(always)]
pub(super) unsafe fn masked_quarters(block: &[u8]) -> [__m128i; 4] {
    debug_assert!(block.len() <= 64);
    // SAFETY: as the caller guarantees; the masks cover `block.len()` bytes.
    unsafe {
        let mask = if block.is_empty() { 0 } else { u64::MAX >> (64 - block.len()) };
        let lo = _mm256_maskz_loadu_epi8(mask as u32, block.as_ptr() as *const i8);
        let hi = _mm256_maskz_loadu_epi8((mask >> 32) as u32, block.as_ptr().wrapping_add(32) as *const i8);
        halves_to_quarters(lo, hi)
    }
}

/// The whole blocks `blocks` compressed in turn into the CV at `cv` on rows of type `R` (the
/// first with `first_flags` added), the CV kept in registers from block to block: its two halves.
/// One call per chunk instead of one per block: no CV round trip through memory and no
/// instruction-set check per block (docs/performance.md).
///
/// # Safety
/// `R`'s instruction set.
#[inline(always)]
pub(super) unsafe fn blocks_in_registers<R: Row1>(
    cv: &[u32; 8],
    blocks: &[u8],
    counter: u64,
    flags: u32,
    first_flags: u32,
) -> (__m128i, __m128i) {
    // SAFETY (whole body): as the caller guarantees; every load reads 64 bytes of `blocks` or
    // 16 bytes of `cv`.
    unsafe {
        let mut lo = _mm_loadu_si128(cv.as_ptr() as *const __m128i);
        let mut hi = _mm_loadu_si128(cv.as_ptr().add(4) as *const __m128i);
        let mut f = flags | first_flags;
        for block in blocks.chunks_exact(64) {
            let q = |k: usize| _mm_loadu_si128(block.as_ptr().add(16 * k) as *const __m128i);
            let [a, b, _, _] = compress_regs::<R>(lo, hi, [q(0), q(1), q(2), q(3)], 64, counter, f);
            (lo, hi, f) = (a, b, flags);
        }
        (lo, hi)
    }
}

/// The one-block compressions of `compress.rs` on one instruction set's rows, as a module of
/// functions with the same names for every instruction set (`platform.rs` picks the module the
/// process chose): `$features` enabled, rows of type `$row`, a short block read by `$short`.
macro_rules! row_forms {
    ($(#[$doc:meta])* $isa:ident, $features:literal, $row:ty, $short:ident) => {
        $(#[$doc])*
        pub(crate) mod $isa {
            use super::*;

            /// The compression of a block given as words; the same result as
            /// `compress::compress_portable`.
            ///
            /// # Safety
            /// The CPU must support the module's instruction sets (for every function here).
            #[target_feature(enable = $features)]
            pub(crate) unsafe fn compress(
                cv: &[u32; 8],
                m: &[u32; 16],
                block_len: u32,
                counter: u64,
                flags: u32,
            ) -> [u32; 16] {
                // SAFETY: the instruction sets are enabled here.
                unsafe { compress_rows::<$row>(cv, quarters(m), block_len, counter, flags) }
            }

            /// The compression of a block given as its bytes (`block.len()` of at most 64 is the
            /// block length; the rest of the block is zeros).
            ///
            /// # Safety
            /// As for [`compress`].
            #[target_feature(enable = $features)]
            pub(crate) unsafe fn bytes(cv: &[u32; 8], block: &[u8], counter: u64, flags: u32) -> [u32; 16] {
                // SAFETY: the instruction sets are enabled here; `$short` reads `block` only.
                unsafe { compress_rows::<$row>(cv, $short(block), block.len() as u32, counter, flags) }
            }

            /// A parent node's compression (`flags` with PARENT): the block is the two child
            /// CVs, read with four 16-byte loads from where they lie. No block is assembled in
            /// memory and read back, and each load lies inside the one store that wrote its CV,
            /// so the CPU forwards it at once.
            ///
            /// # Safety
            /// As for [`compress`].
            #[target_feature(enable = $features)]
            pub(crate) unsafe fn parent(key: &[u32; 8], left: &[u8; 32], right: &[u8; 32], flags: u32) -> [u32; 16] {
                // SAFETY: the instruction sets are enabled here; each load reads 16 bytes of a CV.
                unsafe {
                    let q = |cv: &[u8; 32], k: usize| _mm_loadu_si128(cv.as_ptr().add(16 * k) as *const __m128i);
                    let m = [q(left, 0), q(left, 1), q(right, 0), q(right, 1)];
                    compress_rows::<$row>(key, m, 64, 0, flags)
                }
            }

            /// The full blocks of one chunk (`blocks.len()` a multiple of 64) compressed in turn
            /// into `cv`, the CV kept in registers from block to block; `first_flags` is added
            /// to the first block's flags.
            ///
            /// # Safety
            /// As for [`compress`].
            #[target_feature(enable = $features)]
            pub(crate) unsafe fn blocks(cv: &mut [u32; 8], blocks: &[u8], counter: u64, flags: u32, first_flags: u32) {
                debug_assert!(blocks.len().is_multiple_of(64));
                // SAFETY: the instruction sets are enabled here; the stores write 16 bytes each
                // into `cv`.
                unsafe {
                    let (lo, hi) = blocks_in_registers::<$row>(cv, blocks, counter, flags, first_flags);
                    _mm_storeu_si128(cv.as_mut_ptr() as *mut __m128i, lo);
                    _mm_storeu_si128(cv.as_mut_ptr().add(4) as *mut __m128i, hi);
                }
            }

            /// The end of one chunk, as `platform::compress_chunk_end` describes it: the CV in
            /// registers from the first block to the last, and only the 8 output words written.
            /// One call for a whole small input, where a call for the blocks and one for the
            /// last block made a CV round trip through memory (docs/performance.md).
            ///
            /// # Safety
            /// As for [`compress`].
            #[target_feature(enable = $features)]
            #[allow(clippy::too_many_arguments)]
            pub(crate) unsafe fn chunk_end(
                cv: &[u32; 8],
                body: &[u8],
                counter: u64,
                flags: u32,
                first_flags: u32,
                last: &[u8],
                last_flags: u32,
            ) -> [u32; 8] {
                debug_assert!(body.len().is_multiple_of(64) && last.len() <= 64);
                // SAFETY: the instruction sets are enabled here; `$short` reads `last` only.
                unsafe {
                    let (lo, hi) = blocks_in_registers::<$row>(cv, body, counter, flags, first_flags);
                    let [a, b, _, _] =
                        compress_regs::<$row>(lo, hi, $short(last), last.len() as u32, counter, last_flags);
                    let mut out = [0u32; 8];
                    _mm_storeu_si128(out.as_mut_ptr() as *mut __m128i, a);
                    _mm_storeu_si128(out.as_mut_ptr().add(4) as *mut __m128i, b);
                    out
                }
            }
        }
    };
}

row_forms!(
    /// SSE4.1 rows.
    sse41, "sse4.1", __m128i, padded_quarters
);
row_forms!(
    /// Rows in AVX2 functions: the SSE4.1 instructions, VEX-encoded.
    avx2, "avx2", A2, padded_quarters
);
row_forms!(
    /// AVX-512VL rows (one-instruction rotations), short blocks read by masked loads
    /// (AVX-512BW): the platform chooses them only where the CPU has F, VL and BW.
    avx512, "avx512f,avx512vl,avx512bw", Vl, masked_quarters
);
