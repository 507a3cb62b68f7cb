//! What the row form on several inputs runs on: [`RowVector`] (a vector of 128-bit lanes, one
//! input's row in each; for 512-bit vectors, and for one input's 128-bit rows), and the rows
//! built on it, [`MultiRow`] and [`TwoChains`].

#[cfg(target_arch = "x86")]
use core::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::*;

use crate::core::compress::{Cv, Word};
use crate::core::rows::{all_rounds, opaque512, InLane, Row, Vl, A2};

/// Most inputs side by side on rows: two 512-bit chains of four.
pub(super) const MAX_N: usize = 8;

/// A vector of 128-bit lanes, each holding one row of one input's state: what the row form on
/// several inputs ([`MultiRow`]) needs of it. Implemented for 512-bit vectors (four inputs),
/// 256-bit ones (two inputs) and pairs of 256-bit ones (four inputs), all with AVX-512VL's
/// one-instruction rotations.
pub(super) trait RowVector: Word + InLane {
    /// Inputs side by side: 128-bit lanes.
    const N: usize;
    /// The seven rounds on [`MultiRow`]'s rows, from a block's quarters: [`all_rounds`], unless
    /// `Self` has a form of its own.
    ///
    /// # Safety
    /// As for `load`.
    #[inline(always)]
    unsafe fn multi_rounds(rows: &mut [MultiRow<Self>; 4], q: [MultiRow<Self>; 4]) {
        // SAFETY: as the caller guarantees.
        unsafe { all_rounds(rows, q) }
    }
    /// [`RowVector::multi_rounds`] for `TwoChains<Self>`.
    ///
    /// # Safety
    /// As for `load`.
    #[inline(always)]
    unsafe fn pair_rounds(rows: &mut [MultiRow<TwoChains<Self>>; 4], q: [MultiRow<TwoChains<Self>>; 4]) {
        // SAFETY: as the caller guarantees.
        unsafe { all_rounds(rows, q) }
    }
    /// Words `0..4 * N` of `words`, word i in position i.
    ///
    /// # Safety
    /// The CPU must support AVX-512F and VL (for every method of this trait); `words` holds at
    /// least `4 * N` words.
    unsafe fn load(words: &[u32]) -> Self;
    /// `words` in every 128-bit lane.
    ///
    /// # Safety
    /// As for `load`.
    unsafe fn broadcast(words: &[u32; 4]) -> Self;
    /// `words` in every 128-bit lane, made in registers (no load of words just stored).
    ///
    /// # Safety
    /// As for `load`.
    unsafe fn broadcast_words(words: [u32; 4]) -> Self;
    /// Lane i: the 16 bytes at `p[i]` (i below `N`).
    ///
    /// # Safety
    /// As for `load`, and 16 bytes are readable at each of the first `N` pointers.
    unsafe fn lanes(p: [*const u8; MAX_N]) -> Self;
    /// The positions of `mask` set to `x` (bit i: word i).
    ///
    /// # Safety
    /// As for `load`.
    unsafe fn mask_set(self, mask: u32, x: u32) -> Self;
    /// Each 128-bit lane's words permuted (a `pshufd` immediate).
    ///
    /// # Safety
    /// As for `load`.
    unsafe fn shuffle<const IMM: i32>(self) -> Self;
    /// Writes input i's chaining value (lane i of `lo`, then of `hi`) to `out[i]`, for each of
    /// the `out.len()` (at most `N`) first inputs: each CV joined in registers and written with
    /// one 32-byte store (two 16-byte ones for [`Vl`]). A load of a CV, or of a quarter of it,
    /// then reads what one store wrote, which the CPU forwards at once; a 32-byte load that
    /// spans two stores waits until both reach the cache.
    ///
    /// # Safety
    /// As for `load`.
    unsafe fn store_cvs(lo: Self, hi: Self, out: &mut [Cv]);
}

impl RowVector for __m512i {
    const N: usize = 4;
    #[inline(always)]
    unsafe fn load(words: &[u32]) -> Self {
        // SAFETY: AVX-512F; the caller guarantees 16 readable words.
        unsafe { _mm512_loadu_si512(words.as_ptr() as *const __m512i) }
    }
    #[inline(always)]
    unsafe fn broadcast(words: &[u32; 4]) -> Self {
        // SAFETY: AVX-512F; 4 words are readable.
        unsafe { _mm512_broadcast_i32x4(_mm_loadu_si128(words.as_ptr() as *const __m128i)) }
    }
    #[inline(always)]
    unsafe fn broadcast_words(w: [u32; 4]) -> Self {
        // SAFETY: AVX-512F.
        unsafe { _mm512_broadcast_i32x4(_mm_set_epi32(w[3] as i32, w[2] as i32, w[1] as i32, w[0] as i32)) }
    }
    #[inline(always)]
    unsafe fn lanes(p: [*const u8; MAX_N]) -> Self {
        // SAFETY: AVX-512F; the caller guarantees 16 readable bytes at the first four pointers.
        unsafe {
            let q = |i: usize| _mm_loadu_si128(p[i] as *const __m128i);
            let x = _mm512_castsi128_si512(q(0));
            let x = _mm512_inserti32x4::<1>(x, q(1));
            let x = _mm512_inserti32x4::<2>(x, q(2));
            _mm512_inserti32x4::<3>(x, q(3))
        }
    }
    #[inline(always)]
    unsafe fn mask_set(self, mask: u32, x: u32) -> Self {
        // SAFETY: AVX-512F.
        unsafe { _mm512_mask_set1_epi32(self, mask as u16, x as i32) }
    }
    #[inline(always)]
    unsafe fn shuffle<const IMM: i32>(self) -> Self {
        // SAFETY: AVX-512F.
        unsafe { _mm512_shuffle_epi32::<IMM>(self) }
    }
    #[inline(always)]
    unsafe fn store_cvs(lo: Self, hi: Self, out: &mut [Cv]) {
        // SAFETY: AVX-512F; each store writes one CV of `out`.
        unsafe {
            // CVs 0 and 1, then 2 and 3, side by side.
            let pairs = [
                _mm512_permutex2var_epi64(lo, _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0), hi),
                _mm512_permutex2var_epi64(lo, _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4), hi),
            ];
            for (i, cv) in out.iter_mut().enumerate().take(4) {
                let pair = pairs[i / 2];
                let x = if i % 2 == 0 { _mm512_castsi512_si256(pair) } else { _mm512_extracti64x4_epi64::<1>(pair) };
                _mm256_storeu_si256(cv.as_mut_ptr() as *mut __m256i, x);
            }
        }
    }
}

impl InLane for __m512i {
    #[inline(always)]
    unsafe fn pshufd<const IMM: i32>(self) -> Self {
        // SAFETY: AVX-512F.
        unsafe { opaque512(_mm512_shuffle_epi32::<IMM>(self)) }
    }
    #[inline(always)]
    unsafe fn shufps<const IMM: i32>(self, hi: Self) -> Self {
        // SAFETY: AVX-512F.
        unsafe {
            opaque512(_mm512_castps_si512(_mm512_shuffle_ps::<IMM>(_mm512_castsi512_ps(self), _mm512_castsi512_ps(hi))))
        }
    }
    #[inline(always)]
    unsafe fn unpacklo(self, o: Self) -> Self {
        // SAFETY: AVX-512F.
        unsafe { opaque512(_mm512_unpacklo_epi32(self, o)) }
    }
    #[inline(always)]
    unsafe fn blend<const MASK: i32>(self, o: Self) -> Self {
        // SAFETY: AVX-512F.
        unsafe { opaque512(_mm512_mask_blend_epi32(MASK as u16 * 0x1111, self, o)) }
    }
}

/// [`RowVector`] for a wrapper around `__m128i` holding one input's rows: [`Vl`] (AVX-512VL) and
/// `A2` (AVX2), the row forms of single compressions (`core::rows`), here the top node of a
/// small tree ([`subtree_top_avx512vl`], [`subtree_top_avx2`]).
macro_rules! one_input_rows {
    ($t:ident) => {
        impl RowVector for $t {
            const N: usize = 1;
            #[inline(always)]
            unsafe fn load(words: &[u32]) -> Self {
                // SAFETY: SSE2; the caller guarantees 4 readable words.
                $t(unsafe { _mm_loadu_si128(words.as_ptr() as *const __m128i) })
            }
            #[inline(always)]
            unsafe fn broadcast(words: &[u32; 4]) -> Self {
                // SAFETY: as for `load`.
                unsafe { Self::load(words) }
            }
            #[inline(always)]
            unsafe fn broadcast_words(w: [u32; 4]) -> Self {
                // SAFETY: SSE2.
                $t(unsafe { _mm_set_epi32(w[3] as i32, w[2] as i32, w[1] as i32, w[0] as i32) })
            }
            #[inline(always)]
            unsafe fn lanes(p: [*const u8; MAX_N]) -> Self {
                // SAFETY: SSE2; the caller guarantees 16 readable bytes at the first pointer.
                $t(unsafe { _mm_loadu_si128(p[0] as *const __m128i) })
            }
            #[inline(always)]
            unsafe fn mask_set(self, mask: u32, x: u32) -> Self {
                // SAFETY: SSE4.1. With `mask` a constant, as everywhere here, the compiler makes
                // this one blend.
                unsafe {
                    let bits = _mm_setr_epi32(1, 2, 4, 8);
                    let sel = _mm_cmpeq_epi32(_mm_and_si128(_mm_set1_epi32(mask as i32), bits), bits);
                    $t(_mm_blendv_epi8(self.0, _mm_set1_epi32(x as i32), sel))
                }
            }
            #[inline(always)]
            unsafe fn shuffle<const IMM: i32>(self) -> Self {
                // SAFETY: SSE2.
                $t(unsafe { _mm_shuffle_epi32::<IMM>(self.0) })
            }
            #[inline(always)]
            unsafe fn store_cvs(lo: Self, hi: Self, out: &mut [Cv]) {
                if let Some(cv) = out.first_mut() {
                    // SAFETY: SSE2; two 16-byte stores into one CV.
                    unsafe {
                        _mm_storeu_si128(cv.as_mut_ptr() as *mut __m128i, lo.0);
                        _mm_storeu_si128(cv.as_mut_ptr().add(16) as *mut __m128i, hi.0);
                    }
                }
            }
        }
    };
}

one_input_rows!(Vl);
one_input_rows!(A2);

/// Two [`RowVector`] vectors side by side: twice as many inputs' rows, as two independent chains of
/// instructions, each half moving its message rows as `V` does. `TwoChains<Ymm>` runs four inputs
/// as two chains of 256-bit rows, for CPUs where they beat one chain of 512-bit rows (see
/// `platform::prefers_256_bit_rows`); `TwoChains<__m512i>` runs eight one-block inputs (see
/// [`hash_on_rows_avx512vl`]).
#[derive(Clone, Copy)]
pub(super) struct TwoChains<V>(pub(super) [V; 2]);

impl<V: RowVector> Word for TwoChains<V> {
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        TwoChains([self.0[0].add(o.0[0]), self.0[1].add(o.0[1])])
    }
    #[inline(always)]
    fn xor(self, o: Self) -> Self {
        TwoChains([self.0[0].xor(o.0[0]), self.0[1].xor(o.0[1])])
    }
    #[inline(always)]
    fn rotr16(self) -> Self {
        TwoChains([self.0[0].rotr16(), self.0[1].rotr16()])
    }
    #[inline(always)]
    fn rotr12(self) -> Self {
        TwoChains([self.0[0].rotr12(), self.0[1].rotr12()])
    }
    #[inline(always)]
    fn rotr8(self) -> Self {
        TwoChains([self.0[0].rotr8(), self.0[1].rotr8()])
    }
    #[inline(always)]
    fn rotr7(self) -> Self {
        TwoChains([self.0[0].rotr7(), self.0[1].rotr7()])
    }
}

impl<V: RowVector> InLane for TwoChains<V> {
    #[inline(always)]
    unsafe fn pshufd<const IMM: i32>(self) -> Self {
        // SAFETY: as the caller guarantees.
        unsafe { TwoChains(self.0.map(|x| x.pshufd::<IMM>())) }
    }
    #[inline(always)]
    unsafe fn shufps<const IMM: i32>(self, hi: Self) -> Self {
        // SAFETY: as the caller guarantees.
        unsafe { TwoChains([self.0[0].shufps::<IMM>(hi.0[0]), self.0[1].shufps::<IMM>(hi.0[1])]) }
    }
    #[inline(always)]
    unsafe fn unpacklo(self, o: Self) -> Self {
        // SAFETY: as the caller guarantees.
        unsafe { TwoChains([self.0[0].unpacklo(o.0[0]), self.0[1].unpacklo(o.0[1])]) }
    }
    #[inline(always)]
    unsafe fn blend<const MASK: i32>(self, o: Self) -> Self {
        // SAFETY: as the caller guarantees.
        unsafe { TwoChains([self.0[0].blend::<MASK>(o.0[0]), self.0[1].blend::<MASK>(o.0[1])]) }
    }
}

impl<V: RowVector> RowVector for TwoChains<V> {
    const N: usize = 2 * V::N;
    #[inline(always)]
    unsafe fn multi_rounds(rows: &mut [MultiRow<Self>; 4], q: [MultiRow<Self>; 4]) {
        // SAFETY: as the caller guarantees.
        unsafe { V::pair_rounds(rows, q) }
    }
    #[inline(always)]
    unsafe fn load(words: &[u32]) -> Self {
        // SAFETY: as the caller guarantees (`4 * N` words).
        unsafe { TwoChains([V::load(words), V::load(&words[4 * V::N..])]) }
    }
    #[inline(always)]
    unsafe fn broadcast(words: &[u32; 4]) -> Self {
        // SAFETY: as the caller guarantees.
        let x = unsafe { V::broadcast(words) };
        TwoChains([x, x])
    }
    #[inline(always)]
    unsafe fn broadcast_words(w: [u32; 4]) -> Self {
        // SAFETY: as the caller guarantees.
        let x = unsafe { V::broadcast_words(w) };
        TwoChains([x, x])
    }
    #[inline(always)]
    unsafe fn lanes(p: [*const u8; MAX_N]) -> Self {
        // SAFETY: as the caller guarantees (16 bytes at each of the first `N` pointers).
        unsafe { TwoChains([V::lanes(p), V::lanes(core::array::from_fn(|i| p[(i + V::N).min(MAX_N - 1)]))]) }
    }
    #[inline(always)]
    unsafe fn mask_set(self, mask: u32, x: u32) -> Self {
        // SAFETY: as the caller guarantees.
        unsafe { TwoChains([self.0[0].mask_set(mask, x), self.0[1].mask_set(mask >> (4 * V::N), x)]) }
    }
    #[inline(always)]
    unsafe fn shuffle<const IMM: i32>(self) -> Self {
        // SAFETY: as the caller guarantees.
        unsafe { TwoChains([self.0[0].shuffle::<IMM>(), self.0[1].shuffle::<IMM>()]) }
    }
    #[inline(always)]
    unsafe fn store_cvs(lo: Self, hi: Self, out: &mut [Cv]) {
        let (first, second) = out.split_at_mut(out.len().min(V::N));
        // SAFETY: as the caller guarantees.
        unsafe {
            V::store_cvs(lo.0[0], hi.0[0], first);
            V::store_cvs(lo.0[1], hi.0[1], second);
        }
    }
}

/// `N` inputs' rows side by side, one input in each 128-bit lane of a [`RowVector`] vector. The row
/// form's shuffles stay within 128-bit lanes, so one compression's instructions compress `N`
/// blocks, in about the time of one: the row form is latency-bound and leaves the ports room.
/// For groups of two to four inputs (small messages, the top levels of a tree) this beats the
/// transposed lane kernels, which run their 900 instructions per block at full throughput.
/// The block is loaded as quarters (one 128-bit load per input and quarter); round 0's rows are
/// made from them by six in-lane shuffles ([`first_msg`]) and each later round's are moved in
/// place from the round before's by eleven ([`permute_msg`]: six `shufps`/`pshufd`/`punpckldq`,
/// one cycle each, and five blends, which need not take the shuffle port).
///
/// Moving the message in place beats gathering each round's rows from the quarters with
/// two-source permutes (`vpermt2d`), and the transposed 4-lane kernel is slower still
/// (docs/performance.md).
#[derive(Clone, Copy)]
pub(super) struct MultiRow<V>(pub(super) V);

crate::core::rows::delegate_word!(MultiRow<V>, V: RowVector);

impl<V: RowVector> InLane for MultiRow<V> {
    #[inline(always)]
    unsafe fn pshufd<const IMM: i32>(self) -> Self {
        // SAFETY: as the caller guarantees.
        MultiRow(unsafe { self.0.pshufd::<IMM>() })
    }
    #[inline(always)]
    unsafe fn shufps<const IMM: i32>(self, hi: Self) -> Self {
        // SAFETY: as the caller guarantees.
        MultiRow(unsafe { self.0.shufps::<IMM>(hi.0) })
    }
    #[inline(always)]
    unsafe fn unpacklo(self, o: Self) -> Self {
        // SAFETY: as the caller guarantees.
        MultiRow(unsafe { self.0.unpacklo(o.0) })
    }
    #[inline(always)]
    unsafe fn blend<const MASK: i32>(self, o: Self) -> Self {
        // SAFETY: as the caller guarantees.
        MultiRow(unsafe { self.0.blend::<MASK>(o.0) })
    }
}

impl<V: RowVector> Row for MultiRow<V> {
    #[inline(always)]
    unsafe fn shuffle<const IMM: i32>(self) -> Self {
        // SAFETY: as the caller guarantees.
        MultiRow(unsafe { self.0.shuffle::<IMM>() })
    }
}
