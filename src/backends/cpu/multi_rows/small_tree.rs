//! The top of a small input's tree (2 to 16 chunks or nodes) on rows of several inputs: each
//! level's parents hashed together, their CVs moved to the level above in registers, none of it
//! through memory.

#[cfg(target_arch = "x86")]
use core::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::*;

use super::super::lanes::avx2::{transpose_in_lanes, LanesAvx2};
use super::super::lanes::{group_cvs, parents_transposed, Job, Lanes, Prefetch};
use super::{compress_multi, key_rows, multi_cvs, quarters, row3, RowVector, TwoChains, TwoRowsAvx2, FLAGS, MAX_N};
use crate::core::compress::Cv;
use crate::core::constants::flags::PARENT;
use crate::core::constants::{BLOCK_LEN, CHUNK_LEN};
use crate::core::rows::{Vl, Ymm, A2};

/// A vector of two inputs' rows ([`Ymm`], [`TwoRowsAvx2`]): its 128-bit lanes as one input's rows
/// each, and the even/odd split of two such vectors, for the levels of a small tree
/// ([`TreeLevel`]).
trait TwoInputs: RowVector {
    /// One input's rows.
    type One: TreeLevel;
    /// Lane 0, then lane 1.
    ///
    /// # Safety
    /// AVX2 (for both methods).
    unsafe fn halves(self) -> (Self::One, Self::One);
    /// Lane 0 of `self` and of `o` (nodes 0 and 2 of four: the even ones), then lane 1 of each.
    ///
    /// # Safety
    /// As for `halves`.
    unsafe fn even_odd_with(self, o: Self) -> (Self, Self);
}

/// [`TwoInputs`] and [`TreeLevel`] (for it and for a [`TwoChains`] of it) for a wrapper around
/// `__m256i` holding two inputs' rows, `$one` its single-input type.
macro_rules! two_input_levels {
    ($t:ident, $one:ident) => {
        impl TwoInputs for $t {
            type One = $one;
            #[inline(always)]
            unsafe fn halves(self) -> ($one, $one) {
                // SAFETY: AVX2.
                unsafe { ($one(_mm256_castsi256_si128(self.0)), $one(_mm256_extracti128_si256::<1>(self.0))) }
            }
            #[inline(always)]
            unsafe fn even_odd_with(self, o: Self) -> (Self, Self) {
                // SAFETY: AVX2.
                unsafe {
                    (
                        $t(_mm256_permute2x128_si256::<0x20>(self.0, o.0)),
                        $t(_mm256_permute2x128_si256::<0x31>(self.0, o.0)),
                    )
                }
            }
        }

        impl TreeLevel for $t {
            #[inline(always)]
            unsafe fn top(m: [Self; 4], key: &[u32; 8], flags: u32, top_flags: u32, split: bool) -> [__m128i; 2] {
                // SAFETY: as the caller guarantees.
                unsafe { parents_and_above(m, key, flags, top_flags, split, |v: $t| v.halves()) }
            }
        }

        impl TreeLevel for TwoChains<$t> {
            #[inline(always)]
            unsafe fn top(m: [Self; 4], key: &[u32; 8], flags: u32, top_flags: u32, split: bool) -> [__m128i; 2] {
                // SAFETY: as the caller guarantees.
                unsafe {
                    parents_and_above(m, key, flags, top_flags, split, |v: TwoChains<$t>| v.0[0].even_odd_with(v.0[1]))
                }
            }
        }
    };
}

two_input_levels!(Ymm, Vl);
two_input_levels!(TwoRowsAvx2, A2);

/// [`TreeLevel`] for a wrapper around `__m128i` holding one input's rows: the top node.
macro_rules! one_input_level {
    ($t:ident) => {
        impl TreeLevel for $t {
            #[inline(always)]
            unsafe fn top(m: [Self; 4], key: &[u32; 8], flags: u32, top_flags: u32, _split: bool) -> [__m128i; 2] {
                // SAFETY: as the caller guarantees.
                let (lo, hi) = unsafe { parents(m, key, flags | top_flags) };
                [lo.0, hi.0]
            }
        }
    };
}

one_input_level!(Vl);
one_input_level!(A2);

/// One level of a small tree on rows: node j of the level in lane j of `lo` and `hi` (its CV's
/// words 0-3 and 4-7). [`parents_and_above`] hashes the level's pairs into the level above, whose
/// nodes take half as many lanes, moving the message there in registers; the top level is one node,
/// on [`Vl`].
///
/// Node j of the level above hashes nodes 2j and 2j + 1, so its message quarters are lanes 2j of
/// `lo` and `hi`, then lanes 2j + 1: each level's quarters are an even/odd split of the 128-bit
/// lanes below, one or two lane shuffles per quarter.
trait TreeLevel: RowVector {
    /// This level's parents, then every level above: the top node's 16 output words' first 8
    /// (its CV, or with `top_flags` ROOT the root hash). `m` is this level's message quarters;
    /// `split` as for [`hash_on_rows_avx512vl`].
    ///
    /// # Safety
    /// AVX-512F and VL (for every method of this trait).
    unsafe fn top(m: [Self; 4], key: &[u32; 8], flags: u32, top_flags: u32, split: bool) -> [__m128i; 2];
}

/// The parents whose blocks are the quarters `m` (lane j: parent j), compressed under `key` with
/// `flags` (PARENT included): each parent's CV halves in lane j of the two vectors returned.
///
/// # Safety
/// AVX-512F and VL.
#[inline(always)]
unsafe fn parents<V: RowVector>(m: [V; 4], key: &[u32; 8], flags: u32) -> (V, V) {
    // SAFETY (whole body): as the caller guarantees.
    unsafe {
        let (mut lo, mut hi) = key_rows::<V>(key);
        compress_multi(&mut lo, &mut hi, V::broadcast_words([0, 0, BLOCK_LEN as u32, flags]), &m);
        (lo, hi)
    }
}

/// This level's parents (from its message quarters `m`), then the levels above on `U`
/// ([`levels_above`]). The same for every level but the top.
///
/// # Safety
/// AVX-512F and VL.
#[inline(always)]
unsafe fn parents_and_above<V: RowVector, U: TreeLevel>(
    m: [V; 4],
    key: &[u32; 8],
    flags: u32,
    top_flags: u32,
    split: bool,
    halve: impl Fn(V) -> (U, U),
) -> [__m128i; 2] {
    // SAFETY: as the caller guarantees.
    unsafe { levels_above(parents(m, key, flags), key, flags, top_flags, split, halve) }
}

/// The levels above a level of two or more nodes (node j's CV halves in lane j of `lo` and
/// `hi`), on `U`: `halve` splits a vector of this level's CV halves into its even and odd
/// 128-bit lanes, the left and right children of the level above.
///
/// # Safety
/// AVX-512F and VL.
#[inline(always)]
unsafe fn levels_above<V: RowVector, U: TreeLevel>(
    (lo, hi): (V, V),
    key: &[u32; 8],
    flags: u32,
    top_flags: u32,
    split: bool,
    halve: impl Fn(V) -> (U, U),
) -> [__m128i; 2] {
    // SAFETY: as the caller guarantees.
    unsafe {
        let ((lo_even, lo_odd), (hi_even, hi_odd)) = (halve(lo), halve(hi));
        U::top([lo_even, hi_even, lo_odd, hi_odd], key, flags, top_flags, split)
    }
}

/// Lanes 0 and 2 (even), then 1 and 3 (odd), of a 512-bit vector, each pair as a 256-bit one.
///
/// # Safety
/// AVX-512F.
#[inline(always)]
unsafe fn even_odd_512(v: __m512i) -> (Ymm, Ymm) {
    // SAFETY: as the caller guarantees.
    unsafe {
        (
            Ymm(_mm512_castsi512_si256(_mm512_shuffle_i32x4::<0b10_00>(v, v))),
            Ymm(_mm512_castsi512_si256(_mm512_shuffle_i32x4::<0b11_01>(v, v))),
        )
    }
}

impl TreeLevel for __m512i {
    #[inline(always)]
    unsafe fn top(m: [Self; 4], key: &[u32; 8], flags: u32, top_flags: u32, split: bool) -> [__m128i; 2] {
        // SAFETY: as the caller guarantees.
        unsafe { parents_and_above(m, key, flags, top_flags, split, |v| even_odd_512(v)) }
    }
}

impl TreeLevel for TwoChains<__m512i> {
    #[inline(always)]
    unsafe fn top(m: [Self; 4], key: &[u32; 8], flags: u32, top_flags: u32, split: bool) -> [__m128i; 2] {
        // SAFETY: as the caller guarantees.
        unsafe {
            if split {
                // The four parents above on two chains of 256-bit rows.
                parents_and_above(m, key, flags, top_flags, split, |v: TwoChains<__m512i>| {
                    let ((a_even, a_odd), (b_even, b_odd)) = (even_odd_512(v.0[0]), even_odd_512(v.0[1]));
                    (TwoChains([a_even, b_even]), TwoChains([a_odd, b_odd]))
                })
            } else {
                // Lanes 0 and 2 of the first vector then of the second (even), 1 and 3 (odd).
                parents_and_above(m, key, flags, top_flags, split, |v: TwoChains<__m512i>| {
                    (
                        _mm512_shuffle_i32x4::<0b10_00_10_00>(v.0[0], v.0[1]),
                        _mm512_shuffle_i32x4::<0b11_01_11_01>(v.0[0], v.0[1]),
                    )
                })
            }
        }
    }
}

/// The top node of the complete subtree over `cvs` (2, 4, 8 or 16 chaining values, in order),
/// compressed under `key` with `flags | PARENT`, the top node with `top_flags` added too (ROOT
/// for a whole input's root hash): every parent level on rows, the lowest loaded from `cvs`, each
/// one above moved there in registers ([`TreeLevel`]). No level goes through memory, the lane
/// dispatch, or a `Job`: each level through them costs more than the compression itself
/// (docs/performance.md). `split` as for [`hash_on_rows_avx512vl`].
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512VL.
#[target_feature(enable = "avx512f,avx512vl")]
pub(crate) unsafe fn subtree_top_avx512vl(cvs: &[Cv], key: &[u32; 8], flags: u32, top_flags: u32, split: bool) -> Cv {
    assert!(matches!(cvs.len(), 2 | 4 | 8 | 16), "a small tree of {} nodes", cvs.len());
    let flags = flags | PARENT;
    // Parent j's block: CVs 2j and 2j + 1, side by side.
    let blocks = cvs.as_flattened().as_ptr();
    let ptrs: [*const u8; MAX_N] = core::array::from_fn(|j| blocks.wrapping_add(BLOCK_LEN * j.min(cvs.len() / 2 - 1)));
    // SAFETY: the instruction sets are enabled here; `quarters` reads 64 bytes at each of the
    // first `cvs.len() / 2` pointers, which lie in `cvs`.
    let [lo, hi] = unsafe {
        match cvs.len() {
            2 => Vl::top(quarters(ptrs), key, flags, top_flags, split),
            4 => Ymm::top(quarters(ptrs), key, flags, top_flags, split),
            8 if split => TwoChains::<Ymm>::top(quarters(ptrs), key, flags, top_flags, split),
            8 => __m512i::top(quarters(ptrs), key, flags, top_flags, split),
            _ => TwoChains::<__m512i>::top(quarters(ptrs), key, flags, top_flags, split),
        }
    };
    // SAFETY: SSE2, part of the instruction sets enabled here.
    unsafe { cv_of(lo, hi) }
}

/// The top node of the complete subtree over `input`, 2, 4, 8 or 16 whole chunks (the first
/// with index `first_chunk`), as [`subtree_top_avx512vl`] over their CVs would give it, with no
/// level through memory: the chunks' CVs stay in registers and the level above starts from there.
/// - 2 and 4 chunks: on rows, as [`hash_on_rows_avx512vl`] would hash them; their CVs are rows
///   already.
/// - 8 and 16 chunks: on the 8- and 16-lane kernels ([`group_cvs`]), CVs transposed (lane j of
///   vector w: word w of chunk j). Sixteen chunks' eight parents run on the 8-lane kernel
///   straight from there (a parent's block is the words of an even lane, then of the odd lane
///   after it). Eight CVs are then made rows for the four parents above ([`above_eight`]).
///
/// Against storing the chunks' CVs and calling [`subtree_top_avx512vl`], this saves the round trip
/// through memory at every size from 2 to 16 KiB (docs/performance.md).
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512VL.
#[target_feature(enable = "avx512f,avx512vl")]
pub(crate) unsafe fn chunks_top_avx512vl(
    input: &[u8],
    first_chunk: u64,
    key: &[u32; 8],
    flags: u32,
    top_flags: u32,
    split: bool,
) -> Cv {
    let (n, job) = small_tree_job(input, first_chunk, key, flags);
    let (p, blocks) = (input.as_ptr(), CHUNK_LEN / BLOCK_LEN);
    let flags = flags | PARENT;
    // SAFETY (whole body): the instruction sets are enabled here; the `n` chunks lie in `input`.
    let [lo, hi] = unsafe {
        match n {
            2 => levels_above(two_chunk_cvs(p, &job), key, flags, top_flags, split, |v: Ymm| v.halves()),
            4 if split => {
                let cvs = multi_cvs::<TwoChains<Ymm>>(p, CHUNK_LEN, blocks, 4, &job);
                levels_above(cvs, key, flags, top_flags, split, |v: TwoChains<Ymm>| v.0[0].even_odd_with(v.0[1]))
            }
            4 => {
                let cvs = multi_cvs::<__m512i>(p, CHUNK_LEN, blocks, 4, &job);
                levels_above(cvs, key, flags, top_flags, split, |v| even_odd_512(v))
            }
            8 => eight_chunks_top_avx512vl(p, &job, key, flags, top_flags, split),
            _ => sixteen_chunks_top_avx512vl(p, &job, key, flags, top_flags, split),
        }
    };
    // SAFETY: SSE2, part of the instruction sets enabled here.
    unsafe { cv_of(lo, hi) }
}

/// [`subtree_top_avx512vl`] on AVX2 alone, for CPUs without AVX-512VL: the levels of 2, 4 and 8 CVs
/// on rows of one, two and four inputs (`A2`, [`TwoRowsAvx2`], two chains of [`TwoRowsAvx2`]), each
/// moved to the level above in registers; the eight parents of 16 CVs on the 8-lane kernel, the CVs
/// loaded transposed as it loads message blocks, then [`above_eight_avx2`].
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn subtree_top_avx2(cvs: &[Cv], key: &[u32; 8], flags: u32, top_flags: u32) -> Cv {
    assert!(matches!(cvs.len(), 2 | 4 | 8 | 16), "a small tree of {} nodes", cvs.len());
    let flags = flags | PARENT;
    // Parent j's block: CVs 2j and 2j + 1, side by side.
    let blocks = cvs.as_flattened().as_ptr();
    let ptrs: [*const u8; MAX_N] = core::array::from_fn(|j| blocks.wrapping_add(BLOCK_LEN * j.min(cvs.len() / 2 - 1)));
    // SAFETY: AVX2 is enabled here; `quarters` and `load_msg` read 64 bytes at each of the
    // first `cvs.len() / 2` pointers or parent blocks, which lie in `cvs`.
    let [lo, hi] = unsafe {
        match cvs.len() {
            2 => A2::top(quarters(ptrs), key, flags, top_flags, true),
            4 => TwoRowsAvx2::top(quarters(ptrs), key, flags, top_flags, true),
            8 => TwoChains::<TwoRowsAvx2>::top(quarters(ptrs), key, flags, top_flags, true),
            _ => {
                let m = LanesAvx2::load_msg::<{ Prefetch::None as u8 }>(blocks, BLOCK_LEN, 8);
                above_eight_avx2(as_m256i(parents_transposed(&m, key, flags)), key, flags, top_flags)
            }
        }
    };
    // SAFETY: SSE2, part of AVX2.
    unsafe { cv_of(lo, hi) }
}

/// [`chunks_top_avx512vl`] on AVX2 alone, for CPUs without AVX-512VL: 2 and 4 chunks on rows of two
/// inputs ([`TwoRowsAvx2`], two chains of them), their CVs rows already; 8 chunks on the 8-lane
/// kernel, then [`above_eight_avx2`]; 16 chunks as two groups of eight, whose eight parents run on
/// the 8-lane kernel straight from the transposed CVs.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn chunks_top_avx2(input: &[u8], first_chunk: u64, key: &[u32; 8], flags: u32, top_flags: u32) -> Cv {
    let (n, job) = small_tree_job(input, first_chunk, key, flags);
    let (p, blocks) = (input.as_ptr(), CHUNK_LEN / BLOCK_LEN);
    let flags = flags | PARENT;
    // SAFETY (whole body): AVX2 is enabled here; the `n` chunks lie in `input`.
    let [lo, hi] = unsafe {
        match n {
            2 => levels_above(
                multi_cvs::<TwoRowsAvx2>(p, CHUNK_LEN, blocks, 2, &job),
                key,
                flags,
                top_flags,
                true,
                |v: TwoRowsAvx2| v.halves(),
            ),
            4 => four_chunks_top_avx2(p, &job, key, flags, top_flags),
            8 => eight_chunks_top_avx2(p, &job, key, flags, top_flags),
            _ => sixteen_chunks_top_avx2(p, &job, key, flags, top_flags),
        }
    };
    // SAFETY: SSE2, part of AVX2.
    unsafe { cv_of(lo, hi) }
}

/// The chunk count of a small tree's input (2, 4, 8 or 16 whole chunks, asserted) and the job
/// that hashes its chunks: what [`chunks_top_avx512vl`] and [`chunks_top_avx2`] start from.
fn small_tree_job<'a>(input: &[u8], first_chunk: u64, key: &'a [u32; 8], flags: u32) -> (usize, Job<'a>) {
    let n = input.len() / CHUNK_LEN;
    assert!(
        input.len().is_multiple_of(CHUNK_LEN) && matches!(n, 2 | 4 | 8 | 16),
        "a small tree of {} bytes",
        input.len()
    );
    (n, Job::chunks(key, first_chunk, flags, Prefetch::None))
}

/// A CV from its two halves in registers, written with two 16-byte stores.
///
/// # Safety
/// SSE2.
#[inline(always)]
unsafe fn cv_of(lo: __m128i, hi: __m128i) -> Cv {
    let mut out = [0u8; 32];
    // SAFETY: SSE2, as the caller guarantees; two 16-byte stores into `out`.
    unsafe {
        _mm_storeu_si128(out.as_mut_ptr() as *mut __m128i, lo);
        _mm_storeu_si128(out.as_mut_ptr().add(16) as *mut __m128i, hi);
    }
    out
}

/// The 8-lane kernel's vectors as plain `__m256i`.
#[inline(always)]
fn as_m256i(v: [LanesAvx2; 8]) -> [__m256i; 8] {
    // SAFETY: `LanesAvx2` is a transparent wrapper around `__m256i`.
    unsafe { core::mem::transmute::<[LanesAvx2; 8], [__m256i; 8]>(v) }
}

/// Four chunks on two chains of rows of two inputs, then the levels above from there. Not
/// inlined: inlined beside the other sizes, it ran 4 KiB slower than storing the chunks' CVs and
/// running [`subtree_top_avx2`] after (docs/performance.md).
///
/// # Safety
/// AVX2; four whole chunks are readable at `p`.
#[target_feature(enable = "avx2")]
#[inline(never)]
unsafe fn four_chunks_top_avx2(p: *const u8, job: &Job, key: &[u32; 8], flags: u32, top_flags: u32) -> [__m128i; 2] {
    // SAFETY: as the caller guarantees.
    unsafe {
        let cvs = multi_cvs::<TwoChains<TwoRowsAvx2>>(p, CHUNK_LEN, CHUNK_LEN / BLOCK_LEN, 4, job);
        levels_above(cvs, key, flags, top_flags, true, |v: TwoChains<TwoRowsAvx2>| v.0[0].even_odd_with(v.0[1]))
    }
}

/// Eight chunks on the 8-lane kernel, then the levels above ([`above_eight_avx2`]). Not inlined,
/// as [`eight_chunks_top_avx512vl`] is not.
///
/// # Safety
/// AVX2; eight whole chunks are readable at `p`.
#[target_feature(enable = "avx2")]
#[inline(never)]
unsafe fn eight_chunks_top_avx2(p: *const u8, job: &Job, key: &[u32; 8], flags: u32, top_flags: u32) -> [__m128i; 2] {
    // SAFETY: as the caller guarantees.
    unsafe { above_eight_avx2(as_m256i(group_cvs(p, CHUNK_LEN, CHUNK_LEN / BLOCK_LEN, 8, job)), key, flags, top_flags) }
}

/// Sixteen chunks as two groups on the 8-lane kernel; their eight parents on the 8-lane kernel
/// from the transposed CVs (parent k's block: the CVs in lanes 2k and 2k + 1 of the first
/// group's vectors for k < 4, of the second's after), then [`above_eight_avx2`].
///
/// # Safety
/// AVX2; sixteen whole chunks are readable at `p`.
#[target_feature(enable = "avx2")]
#[inline(never)]
unsafe fn sixteen_chunks_top_avx2(p: *const u8, job: &Job, key: &[u32; 8], flags: u32, top_flags: u32) -> [__m128i; 2] {
    const BLOCKS: usize = CHUNK_LEN / BLOCK_LEN;
    // SAFETY (whole body): as the caller guarantees.
    unsafe {
        let a = as_m256i(group_cvs::<LanesAvx2>(p, CHUNK_LEN, BLOCKS, 8, job));
        let b = as_m256i(group_cvs::<LanesAvx2>(p.add(8 * CHUNK_LEN), CHUNK_LEN, BLOCKS, 8, &job.starting_at(8)));
        // Each vector's even lanes (left children) in its low half, odd lanes in its high half.
        let even_odd = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
        let mut m = [LanesAvx2(_mm256_setzero_si256()); 16];
        for w in 0..8 {
            let (x, y) = (_mm256_permutevar8x32_epi32(a[w], even_odd), _mm256_permutevar8x32_epi32(b[w], even_odd));
            m[w] = LanesAvx2(_mm256_permute2x128_si256::<0x20>(x, y));
            m[8 + w] = LanesAvx2(_mm256_permute2x128_si256::<0x31>(x, y));
        }
        above_eight_avx2(as_m256i(parents_transposed(&m, key, flags)), key, flags, top_flags)
    }
}

/// [`chunks_top_avx512vl`] for eight chunks at `p`: their CVs on the 8-lane kernel, then
/// [`above_eight`]. A function of its own: inlined into [`chunks_top_avx512vl`] with the other
/// sizes, it ran slower.
///
/// # Safety
/// AVX-512F and VL; eight whole chunks are readable at `p`.
#[target_feature(enable = "avx512f,avx512vl")]
#[inline(never)]
unsafe fn eight_chunks_top_avx512vl(
    p: *const u8,
    job: &Job,
    key: &[u32; 8],
    flags: u32,
    top_flags: u32,
    split: bool,
) -> [__m128i; 2] {
    // SAFETY: as the caller guarantees.
    unsafe {
        above_eight(group_cvs::<__m256i>(p, CHUNK_LEN, CHUNK_LEN / BLOCK_LEN, 8, job), key, flags, top_flags, split)
    }
}

/// [`chunks_top_avx512vl`] for sixteen chunks at `p`: their CVs on the 16-lane kernel, the eight
/// parents above on the 8-lane kernel from there, then [`above_eight`].
///
/// # Safety
/// AVX-512F and VL; sixteen whole chunks are readable at `p`.
#[target_feature(enable = "avx512f,avx512vl")]
#[inline(never)]
unsafe fn sixteen_chunks_top_avx512vl(
    p: *const u8,
    job: &Job,
    key: &[u32; 8],
    flags: u32,
    top_flags: u32,
    split: bool,
) -> [__m128i; 2] {
    // SAFETY (whole body): as the caller guarantees.
    unsafe {
        let chunks: [__m512i; 8] = group_cvs(p, CHUNK_LEN, CHUNK_LEN / BLOCK_LEN, 16, job);
        // Each vector's even lanes (left children) in its low half, odd lanes in its high half.
        let even_odd = _mm512_set_epi32(15, 13, 11, 9, 7, 5, 3, 1, 14, 12, 10, 8, 6, 4, 2, 0);
        let mut m = [_mm256_setzero_si256(); 16];
        for (w, cv_word) in chunks.into_iter().enumerate() {
            let x = _mm512_permutexvar_epi32(even_odd, cv_word);
            m[w] = _mm512_castsi512_si256(x);
            m[8 + w] = _mm512_extracti64x4_epi64::<1>(x);
        }
        above_eight(parents_transposed(&m, key, flags), key, flags, top_flags, split)
    }
}

/// Two whole chunks' CVs on one chain of 256-bit rows, as [`multi_cvs`] gives them, two blocks
/// a loop turn: the 2 KiB path, at upstream's speed in `b3accel bench` (docs/performance.md).
///
/// # Safety
/// AVX-512F and VL; two whole chunks are readable at `p`.
#[inline(always)]
unsafe fn two_chunk_cvs(p: *const u8, job: &Job) -> (Ymm, Ymm) {
    const BLOCKS: usize = CHUNK_LEN / BLOCK_LEN;
    // SAFETY (whole body): as the caller guarantees; every load reads a block of one of the two
    // chunks.
    unsafe {
        let counters = row3::<Ymm>(job);
        let (mut lo, mut hi) = key_rows::<Ymm>(job.key);
        let mut ptrs = [p; MAX_N];
        ptrs[1] = p.add(CHUNK_LEN);
        for b in (0..BLOCKS).step_by(2) {
            let m = quarters::<Ymm>(ptrs.map(|q| q.add(b * BLOCK_LEN)));
            compress_multi(&mut lo, &mut hi, counters.mask_set(FLAGS, job.block_flags(b, BLOCKS)), &m);
            let m = quarters::<Ymm>(ptrs.map(|q| q.add((b + 1) * BLOCK_LEN)));
            compress_multi(&mut lo, &mut hi, counters.mask_set(FLAGS, job.block_flags(b + 1, BLOCKS)), &m);
        }
        (lo, hi)
    }
}

/// The levels above eight nodes whose CVs are given transposed (lane j of `p[w]`: word w of node
/// j): the CVs made rows in registers ([`transpose_in_lanes`]), then the four parents above on rows
/// and so on up ([`levels_above`]). (No closures around intrinsics: a closure does not inherit
/// the caller's instruction sets here, and they became calls.)
///
/// # Safety
/// AVX-512F and VL.
#[inline(always)]
unsafe fn above_eight(p: [__m256i; 8], key: &[u32; 8], flags: u32, top_flags: u32, split: bool) -> [__m128i; 2] {
    // SAFETY (whole body): as the caller guarantees.
    unsafe {
        let order = eight_as_parent_rows(p);
        if split {
            let m = order.map(|(a, b)| TwoChains([Ymm(a), Ymm(b)]));
            parents_and_above(m, key, flags, top_flags, split, |v: TwoChains<Ymm>| (v.0[0], v.0[1]))
        } else {
            let m = [join_256(order[0]), join_256(order[1]), join_256(order[2]), join_256(order[3])];
            parents_and_above(m, key, flags, top_flags, split, |v| halves_512(v))
        }
    }
}

/// [`above_eight`] on AVX2 alone: the four parents on two chains of 256-bit rows ([`TwoRowsAvx2`]).
///
/// # Safety
/// AVX2.
#[inline(always)]
unsafe fn above_eight_avx2(p: [__m256i; 8], key: &[u32; 8], flags: u32, top_flags: u32) -> [__m128i; 2] {
    // SAFETY: as the caller guarantees.
    unsafe {
        let m = eight_as_parent_rows(p).map(|(a, b)| TwoChains([TwoRowsAvx2(a), TwoRowsAvx2(b)]));
        parents_and_above(m, key, flags, top_flags, true, |v: TwoChains<TwoRowsAvx2>| (v.0[0], v.0[1]))
    }
}

/// The blocks of the four parents above eight nodes given transposed (lane j of `p[w]`: word w
/// of node j), as the quarters of rows on two inputs, in pairs. Parent k of the four hashes
/// nodes 2k and 2k + 1: the lanes of nodes 0 and 4 (x[0], y[0]) with those of 2 and 6 (x[2],
/// y[2]) are the left children of parents 0, 2, 1 and 3, and x[1], x[3], y[1], y[3] the right
/// ones. In that order the lanes of parents 0 and 1 (and of 2 and 3) are the left and right
/// children of the level above, so halving it needs no shuffle.
///
/// # Safety
/// AVX2.
#[inline(always)]
unsafe fn eight_as_parent_rows(p: [__m256i; 8]) -> [(__m256i, __m256i); 4] {
    // SAFETY: as the caller guarantees.
    let (x, y) =
        unsafe { (transpose_in_lanes([p[0], p[1], p[2], p[3]]), transpose_in_lanes([p[4], p[5], p[6], p[7]])) };
    [(x[0], x[2]), (y[0], y[2]), (x[1], x[3]), (y[1], y[3])]
}

/// Two 256-bit vectors as one 512-bit one, the first in the low half.
///
/// # Safety
/// AVX-512F.
#[inline(always)]
unsafe fn join_256((lo, hi): (__m256i, __m256i)) -> __m512i {
    // SAFETY: as the caller guarantees.
    unsafe { _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi) }
}

/// The low and high halves of a 512-bit vector.
///
/// # Safety
/// AVX-512F.
#[inline(always)]
unsafe fn halves_512(v: __m512i) -> (Ymm, Ymm) {
    // SAFETY: as the caller guarantees.
    unsafe { (Ymm(_mm512_castsi512_si256(v)), Ymm(_mm512_extracti64x4_epi64::<1>(v))) }
}

#[cfg(test)]
mod tests {
    use super::super::tests::row_sets;
    use super::*;
    use crate::core::compress::{compress_portable, cv_words, words_to_cv};
    use crate::core::constants::flags::{CHUNK_END, CHUNK_START, KEYED_HASH, ROOT};

    /// A parent node's compression on the portable code: the reference for `subtree_top_avx512vl`.
    fn parent_portable(l: &Cv, r: &Cv, key: &[u32; 8], flags: u32) -> Cv {
        let block: [u32; 16] = core::array::from_fn(|i| if i < 8 { cv_words(l)[i] } else { cv_words(r)[i - 8] });
        let out = compress_portable(key, &block, BLOCK_LEN as u32, 0, flags | PARENT);
        words_to_cv(&core::array::from_fn(|i| out[i]))
    }

    #[test]
    fn subtree_top_matches_parents_one_at_a_time() {
        let (vl, avx2) = row_sets("subtree_top_matches_parents_one_at_a_time");
        let nodes: Vec<Cv> =
            (0..16u8).map(|i| core::array::from_fn(|b| i.wrapping_mul(37) ^ (b as u8).wrapping_mul(11))).collect();
        let key: [u32; 8] = core::array::from_fn(|i| 0x6A09_E667u32.rotate_left(7 * i as u32) ^ i as u32);
        for n in [2, 4, 8, 16] {
            for (flags, top_flags) in [(0, 0), (0, ROOT), (KEYED_HASH, 0), (KEYED_HASH, ROOT)] {
                let mut level = nodes[..n].to_vec();
                while level.len() > 2 {
                    level = level.chunks(2).map(|p| parent_portable(&p[0], &p[1], &key, flags)).collect();
                }
                let want = parent_portable(&level[0], &level[1], &key, flags | top_flags);
                for split in [false, true].into_iter().filter(|_| vl) {
                    let got = unsafe { subtree_top_avx512vl(&nodes[..n], &key, flags, top_flags, split) };
                    assert_eq!(got, want, "{n} nodes, flags {flags:#x}, top {top_flags:#x}, split {split}");
                }
                if avx2 {
                    let got = unsafe { subtree_top_avx2(&nodes[..n], &key, flags, top_flags) };
                    assert_eq!(got, want, "{n} nodes, flags {flags:#x}, top {top_flags:#x}, AVX2");
                }
            }
        }
    }

    #[test]
    fn chunks_top_matches_portable_chunks_and_parents() {
        let (vl, avx2) = row_sets("chunks_top_matches_portable_chunks_and_parents");
        use crate::core::compress::block_words;
        // A whole chunk's CV on the portable code.
        let chunk_cv = |key: &[u32; 8], chunk: &[u8], counter: u64, flags: u32| {
            let mut cv = *key;
            for (b, block) in chunk.chunks(BLOCK_LEN).enumerate() {
                let f = flags | if b == 0 { CHUNK_START } else { 0 } | if b == 15 { CHUNK_END } else { 0 };
                let block = block_words(block.try_into().expect("whole blocks"));
                let out = compress_portable(&cv, &block, BLOCK_LEN as u32, counter, f);
                cv = core::array::from_fn(|i| out[i]);
            }
            words_to_cv(&cv)
        };
        let data: Vec<u8> = (0..16 * CHUNK_LEN as u32).map(|i| (i * 29 + (i >> 9)) as u8).collect();
        let key: [u32; 8] = core::array::from_fn(|i| 0x510E_527Fu32.rotate_left(5 * i as u32) ^ i as u32);
        // Counters whose low word wraps inside the tree, too.
        for (n, first_chunk) in
            [2, 4, 8, 16].into_iter().flat_map(|n| [0u64, 16, (1 << 32) - 1, 5 << 32].map(|c| (n, c)))
        {
            let data = &data[..n * CHUNK_LEN];
            for (flags, top_flags) in [(0, 0), (0, ROOT), (KEYED_HASH, 0), (KEYED_HASH, ROOT)] {
                let mut level: Vec<Cv> = data
                    .chunks(CHUNK_LEN)
                    .enumerate()
                    .map(|(i, c)| chunk_cv(&key, c, first_chunk + i as u64, flags))
                    .collect();
                while level.len() > 2 {
                    level = level.chunks(2).map(|p| parent_portable(&p[0], &p[1], &key, flags)).collect();
                }
                let want = parent_portable(&level[0], &level[1], &key, flags | top_flags);
                let what = format!("{n} chunks from {first_chunk}, flags {flags:#x}, top {top_flags:#x}");
                for split in [false, true].into_iter().filter(|_| vl) {
                    let got = unsafe { chunks_top_avx512vl(data, first_chunk, &key, flags, top_flags, split) };
                    assert_eq!(got, want, "{what}, split {split}");
                }
                if avx2 {
                    let got = unsafe { chunks_top_avx2(data, first_chunk, &key, flags, top_flags) };
                    assert_eq!(got, want, "{what}, AVX2");
                }
            }
        }
    }
}
