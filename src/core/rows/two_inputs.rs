//! The last two chunks of an input side by side: a whole chunk and a partial one hashed on
//! two-input rows ([`chunk_and_tail_avx512`], [`chunk_and_tail_avx2`]).

#[cfg(target_arch = "x86")]
use core::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::*;

use super::one_block::*;
use super::row::*;
use super::wide::*;
use crate::core::constants::IV;

/// Two inputs' rows in a 256-bit vector, one input in each 128-bit lane: what
/// [`chunk_and_tail`] runs a whole chunk and a partial one on, with the single-input rows
/// (`One`) the whole chunk goes on alone with.
pub(super) trait TwoInputRows: Row {
    /// One input's rows, of the same instruction set.
    type One: Row1;
    /// The vector as the row type.
    fn wrap(x: __m256i) -> Self;
    /// The row type as its vector.
    fn unwrap(self) -> __m256i;
    /// A block of 0 to 64 bytes, zero-padded, as its quarters, reading no byte past `block`.
    ///
    /// # Safety
    /// The row type's instruction sets.
    unsafe fn short_quarters(block: &[u8]) -> [__m128i; 4];
}

/// [`TwoInputRows`] for `$t`, a wrapper around `__m256i`, with single-input rows `$one` and
/// short blocks read by `$short`.
macro_rules! two_input_rows {
    ($t:ident, $one:ty, $short:ident) => {
        impl TwoInputRows for $t {
            type One = $one;
            #[inline(always)]
            fn wrap(x: __m256i) -> Self {
                $t(x)
            }
            #[inline(always)]
            fn unwrap(self) -> __m256i {
                self.0
            }
            #[inline(always)]
            unsafe fn short_quarters(block: &[u8]) -> [__m128i; 4] {
                // SAFETY: the row type's instruction sets, as the caller guarantees.
                unsafe { $short(block) }
            }
        }
    };
}

two_input_rows!(Ymm, Vl, masked_quarters);
two_input_rows!(A2x2, A2, padded_quarters);

/// The chaining values of two chunks side by side on two-input rows `R`: a whole chunk `chunk`
/// (1024 bytes, index `counter`) in the low lanes and the partial chunk `tail` after it (1 to
/// 1023 bytes, index `counter + 1`) in the high ones, as `[chunk's CV, tail's CV]`. The two
/// chains run together for the tail's blocks (its last one zero-padded, with its length and
/// CHUNK_END); the whole chunk's remaining blocks then go on alone on `R::One`'s rows. An input
/// of 1025 to 2047 bytes is these two chunks and their parent: one chunk's 16 compressions on
/// the critical path instead of 17 to 31, since these row forms are bound by latency and the
/// 256-bit ones have that of the 128-bit ones. See `tree/stack.rs`, `top_of_run`, for what it
/// gained.
///
/// # Safety
/// `R`'s instruction sets (AVX2 at least); `chunk` holds at least 1024 bytes and `tail` 1 to
/// 1023.
#[inline(always)]
pub(super) unsafe fn chunk_and_tail<R: TwoInputRows>(
    key: &[u32; 8],
    chunk: &[u8],
    tail: &[u8],
    counter: u64,
    flags: u32,
) -> [[u8; 32]; 2] {
    use crate::core::constants::flags::{CHUNK_END, CHUNK_START};
    const BLOCKS: usize = 16;
    debug_assert!(chunk.len() >= 64 * BLOCKS && (1..64 * BLOCKS).contains(&tail.len()));
    let together = tail.len().div_ceil(64);
    let next = counter + 1;
    // SAFETY (whole body): as the caller guarantees; every load reads 16 bytes of `chunk`'s
    // first 1024, of a whole block of `tail`, of `key` or of `IV`, and `short_quarters` no byte
    // past `tail`; every store writes 16 bytes of `out`.
    unsafe {
        // (No closures around AVX2 intrinsics: a closure does not inherit the instruction sets
        // of the function it is in.)
        let mut lo = R::wrap(_mm256_broadcastsi128_si256(_mm_loadu_si128(key.as_ptr() as *const __m128i)));
        let mut hi = R::wrap(_mm256_broadcastsi128_si256(_mm_loadu_si128(key.as_ptr().add(4) as *const __m128i)));
        let iv = R::wrap(_mm256_broadcastsi128_si256(_mm_loadu_si128(IV.as_ptr() as *const __m128i)));
        for b in 0..together {
            let last = b + 1 == together;
            let at = 64 * b;
            let q1 = if last { R::short_quarters(&tail[at..]) } else { quarters_at(tail.as_ptr().add(at)) };
            let q0 = quarters_at(chunk.as_ptr().add(at));
            let q: [R; 4] = [
                R::wrap(_mm256_inserti128_si256::<1>(_mm256_castsi128_si256(q0[0]), q1[0])),
                R::wrap(_mm256_inserti128_si256::<1>(_mm256_castsi128_si256(q0[1]), q1[1])),
                R::wrap(_mm256_inserti128_si256::<1>(_mm256_castsi128_si256(q0[2]), q1[2])),
                R::wrap(_mm256_inserti128_si256::<1>(_mm256_castsi128_si256(q0[3]), q1[3])),
            ];
            let start = if b == 0 { CHUNK_START } else { 0 };
            let f0 = flags | start | if b + 1 == BLOCKS { CHUNK_END } else { 0 };
            let (len1, f1) = if last { (tail.len() - at, flags | start | CHUNK_END) } else { (64, flags | start) };
            let row3 = R::wrap(_mm256_setr_epi32(
                counter as i32,
                (counter >> 32) as i32,
                64,
                f0 as i32,
                next as i32,
                (next >> 32) as i32,
                len1 as i32,
                f1 as i32,
            ));
            let mut rows = [lo, hi, iv, row3];
            all_rounds(&mut rows, q);
            lo = rows[0].xor(rows[2]);
            hi = rows[1].xor(rows[3]);
        }
        let (lo, hi) = (lo.unwrap(), hi.unwrap());
        let mut out = [[0u8; 32]; 2];
        _mm_storeu_si128(out[1].as_mut_ptr() as *mut __m128i, _mm256_extracti128_si256::<1>(lo));
        _mm_storeu_si128(out[1].as_mut_ptr().add(16) as *mut __m128i, _mm256_extracti128_si256::<1>(hi));
        let (mut lo, mut hi) = (_mm256_castsi256_si128(lo), _mm256_castsi256_si128(hi));
        for b in together..BLOCKS {
            let f = flags | if b + 1 == BLOCKS { CHUNK_END } else { 0 };
            let q = quarters_at(chunk.as_ptr().add(64 * b));
            let [a, c, _, _] = compress_regs::<R::One>(lo, hi, q, 64, counter, f);
            (lo, hi) = (a, c);
        }
        _mm_storeu_si128(out[0].as_mut_ptr() as *mut __m128i, lo);
        _mm_storeu_si128(out[0].as_mut_ptr().add(16) as *mut __m128i, hi);
        out
    }
}

/// [`chunk_and_tail`] on AVX-512VL rows ([`Ymm`], then [`Vl`]), the tail's last block read
/// masked.
///
/// # Safety
/// The CPU must support AVX-512F, VL and BW; the lengths are as for [`chunk_and_tail`].
#[target_feature(enable = "avx512f,avx512vl,avx512bw")]
pub(crate) unsafe fn chunk_and_tail_avx512(
    key: &[u32; 8],
    chunk: &[u8],
    tail: &[u8],
    counter: u64,
    flags: u32,
) -> [[u8; 32]; 2] {
    // SAFETY: the instruction sets are enabled here; the lengths as the caller guarantees.
    unsafe { chunk_and_tail::<Ymm>(key, chunk, tail, counter, flags) }
}

/// [`chunk_and_tail`] on AVX2 rows ([`A2x2`], then [`A2`]).
///
/// # Safety
/// The CPU must support AVX2; the lengths are as for [`chunk_and_tail`].
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn chunk_and_tail_avx2(
    key: &[u32; 8],
    chunk: &[u8],
    tail: &[u8],
    counter: u64,
    flags: u32,
) -> [[u8; 32]; 2] {
    // SAFETY: AVX2 is enabled here; the lengths as the caller guarantees.
    unsafe { chunk_and_tail::<A2x2>(key, chunk, tail, counter, flags) }
}

/// The 64 bytes at `p` as a block's quarters.
///
/// # Safety
/// SSE2; 64 bytes are readable at `p`.
#[inline(always)]
pub(super) unsafe fn quarters_at(p: *const u8) -> [__m128i; 4] {
    // SAFETY: as the caller guarantees.
    unsafe { core::array::from_fn(|k| _mm_loadu_si128(p.add(16 * k) as *const __m128i)) }
}
