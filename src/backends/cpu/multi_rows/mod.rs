//! The row form on several inputs at once: one input's rows per 128-bit lane of a 256- or 512-bit
//! vector (AVX-512F and VL, or AVX2), the rounds of `core::rows` on all of them together. Two
//! uses, one file each: hashing groups of two to eight small inputs (`groups.rs`), and the top
//! levels of a small input's tree, kept in registers from level to level (`small_tree.rs`).

pub(super) mod groups;
pub(super) mod small_tree;

#[cfg(target_arch = "x86")]
use core::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::*;

use super::lanes::avx2::LanesAvx2;
#[cfg(target_arch = "x86_64")]
use super::lanes::Aligned;
use super::lanes::{lane_ptr, stage_last_blocks, Group, Job};
use crate::core::compress::{Cv, Word};
#[cfg(target_arch = "x86_64")]
use crate::core::constants::ROUNDS;
use crate::core::constants::{BLOCK_LEN, IV};
use crate::core::rows::{all_rounds, opaque512, InLane, Row, Vl, Ymm, A2};

/// Most inputs side by side on rows: two 512-bit chains of four.
const MAX_N: usize = 8;

/// A vector of 128-bit lanes, each holding one row of one input's state: what the row form on
/// several inputs ([`MultiRow`]) needs of it. Implemented for 512-bit vectors (four inputs),
/// 256-bit ones (two inputs) and pairs of 256-bit ones (four inputs), all with AVX-512VL's
/// one-instruction rotations.
trait RowVector: Word + InLane {
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

/// [`RowVector`] for a wrapper around `__m256i` holding two inputs' rows, on AVX2 instructions:
/// what [`Ymm`] (AVX-512VL) and [`TwoRowsAvx2`] (AVX2 only) share. They differ in their rotations
/// ([`Word`]) alone; their [`InLane`] is `core::rows::in_lane_256!`'s.
macro_rules! two_input_rows {
    ($t:ident $(, $rounds:ident, $pair_rounds:ident)?) => {
        impl RowVector for $t {
            const N: usize = 2;
            $(
            #[inline(always)]
            unsafe fn multi_rounds(rows: &mut [MultiRow<Self>; 4], q: [MultiRow<Self>; 4]) {
                // SAFETY: as the caller guarantees.
                unsafe { $rounds(rows, q) }
            }
            #[inline(always)]
            unsafe fn pair_rounds(rows: &mut [MultiRow<TwoChains<Self>>; 4], q: [MultiRow<TwoChains<Self>>; 4]) {
                // SAFETY: as the caller guarantees.
                unsafe { $pair_rounds(rows, q) }
            }
            )?
            #[inline(always)]
            unsafe fn load(words: &[u32]) -> Self {
                // SAFETY: AVX; the caller guarantees 8 readable words.
                $t(unsafe { _mm256_loadu_si256(words.as_ptr() as *const __m256i) })
            }
            #[inline(always)]
            unsafe fn broadcast(words: &[u32; 4]) -> Self {
                // SAFETY: AVX2; 4 words are readable.
                $t(unsafe { _mm256_broadcastsi128_si256(_mm_loadu_si128(words.as_ptr() as *const __m128i)) })
            }
            #[inline(always)]
            unsafe fn broadcast_words(w: [u32; 4]) -> Self {
                // SAFETY: AVX2.
                $t(unsafe {
                    _mm256_broadcastsi128_si256(_mm_set_epi32(w[3] as i32, w[2] as i32, w[1] as i32, w[0] as i32))
                })
            }
            #[inline(always)]
            unsafe fn lanes(p: [*const u8; MAX_N]) -> Self {
                // SAFETY: AVX2; the caller guarantees 16 readable bytes at the first two pointers.
                unsafe {
                    let q = |i: usize| _mm_loadu_si128(p[i] as *const __m128i);
                    $t(_mm256_inserti128_si256::<1>(_mm256_castsi128_si256(q(0)), q(1)))
                }
            }
            #[inline(always)]
            unsafe fn mask_set(self, mask: u32, x: u32) -> Self {
                // SAFETY: AVX2. With `mask` a constant, as everywhere here, the compiler makes
                // this one `vpblendd`.
                unsafe {
                    let bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
                    let sel = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(mask as i32), bits), bits);
                    $t(_mm256_blendv_epi8(self.0, _mm256_set1_epi32(x as i32), sel))
                }
            }
            #[inline(always)]
            unsafe fn shuffle<const IMM: i32>(self) -> Self {
                // SAFETY: AVX2.
                $t(unsafe { _mm256_shuffle_epi32::<IMM>(self.0) })
            }
            #[inline(always)]
            unsafe fn store_cvs(lo: Self, hi: Self, out: &mut [Cv]) {
                // SAFETY: AVX2; each store writes one CV of `out`.
                unsafe {
                    let cvs =
                        [_mm256_permute2x128_si256::<0x20>(lo.0, hi.0), _mm256_permute2x128_si256::<0x31>(lo.0, hi.0)];
                    for (cv, x) in out.iter_mut().zip(cvs) {
                        _mm256_storeu_si256(cv.as_mut_ptr() as *mut __m256i, x);
                    }
                }
            }
        }
    };
}

two_input_rows!(Ymm);

/// A 256-bit vector in an AVX2 function: two inputs' rows, the rotations those of the 8-lane
/// kernel ([`LanesAvx2`]: byte shuffles and shift pairs). The row form on several inputs
/// for CPUs without AVX-512VL ([`hash_on_rows_avx2`]).
#[derive(Clone, Copy)]
struct TwoRowsAvx2(__m256i);

impl Word for TwoRowsAvx2 {
    crate::core::rows::delegate_add_xor!();
    #[inline(always)]
    fn rotr16(self) -> Self {
        TwoRowsAvx2(LanesAvx2(self.0).rotr16().0)
    }
    #[inline(always)]
    fn rotr12(self) -> Self {
        TwoRowsAvx2(LanesAvx2(self.0).rotr12().0)
    }
    #[inline(always)]
    fn rotr8(self) -> Self {
        TwoRowsAvx2(LanesAvx2(self.0).rotr8().0)
    }
    #[inline(always)]
    fn rotr7(self) -> Self {
        TwoRowsAvx2(LanesAvx2(self.0).rotr7().0)
    }
}

crate::core::rows::in_lane_256!(TwoRowsAvx2);

#[cfg(target_arch = "x86_64")]
two_input_rows!(TwoRowsAvx2, rounds_avx2_one_chain, rounds_avx2_two_chains);
#[cfg(not(target_arch = "x86_64"))]
two_input_rows!(TwoRowsAvx2);

/// The buffer the templates of `build.rs`'s `row_rounds` move the message rows in: room for
/// two rounds' rows of two chains, round 0's of each chain written here (chain h's row k at
/// `[h][k]`), the rest left for the template (not zeroed: it writes before it reads).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn template_message<const CHAINS: usize>(
    first: [[__m256i; 4]; CHAINS],
) -> core::mem::MaybeUninit<Aligned<[[__m256i; 4]; 4]>> {
    const { assert!(CHAINS <= 2, "the templates run one or two chains") };
    let mut msg = core::mem::MaybeUninit::<Aligned<[[__m256i; 4]; 4]>>::uninit();
    // SAFETY: `CHAINS` is at most 2 (asserted above), so the rows fit in the first slots of
    // the buffer, which is aligned for `__m256i`.
    unsafe { (msg.as_mut_ptr() as *mut [[__m256i; 4]; CHAINS]).write(first) };
    msg
}

/// The seven rounds on one chain of [`TwoRowsAvx2`] rows (two inputs: 2 KiB, the parents above four
/// chunks), the state in four registers throughout and the message moved in memory (`build.rs`
/// writes the template, `row_rounds`), as [`rounds_avx2_two_chains`] does for two chains, with b's
/// rotations left in two parts as `compress::g_carry` does.
///
/// One chain is bound by its latency, and a rotation by two shifts and an `or` costs more than
/// the two parts it is split into here (docs/performance.md).
///
/// # Safety
/// AVX2.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn rounds_avx2_one_chain(rows: &mut [MultiRow<TwoRowsAvx2>; 4], q: [MultiRow<TwoRowsAvx2>; 4]) {
    // SAFETY (whole body): AVX2, as the caller guarantees; the template reads the two 32-byte
    // patterns and reads and writes the 256 bytes of `msg`.
    unsafe {
        let first = crate::core::rows::first_msg(q);
        let mut msg = template_message::<1>([first.map(|r| r.0 .0)]);
        let m = msg.as_mut_ptr() as *mut [__m256i; 4];
        let n = m.add(2);
        core::arch::asm!(
            include_str!(concat!(env!("OUT_DIR"), "/avx2_row_rounds_1.s")),
            m = inout(reg) m => _,
            n = inout(reg) n => _,
            k = inout(reg) ROUNDS - 1 => _,
            r16 = in(reg) super::lanes::avx2::ROT16.as_ptr(),
            r8 = in(reg) super::lanes::avx2::ROT8.as_ptr(),
            inout("ymm0") rows[0].0 .0,
            inout("ymm1") rows[1].0 .0,
            inout("ymm2") rows[2].0 .0,
            inout("ymm3") rows[3].0 .0,
            out("ymm8") _,
            out("ymm10") _,
            out("ymm11") _,
            out("ymm12") _,
            options(nostack)
        )
    };
}

/// The seven rounds on two chains of [`TwoRowsAvx2`] rows (four inputs: 4 KiB, the top of 8 and 16
/// KiB, groups of four short messages), the state in eight registers throughout and the message
/// moved in memory (`build.rs` writes the template, `row_rounds`).
///
/// Compiled from the generic rounds, two chains need 8 state rows, 8 message rows and the
/// temporaries of the rotations and message moves, and AVX2 has 16 registers: LLVM spills state
/// rows, putting a reload on the rounds' dependency chain. Here the state never leaves its
/// registers, the message rows go through memory (their moves are off the chain, and loads and
/// stores are what the vector ports have to spare), and the rounds are a loop. Each chain holds
/// one message row in a register across two of the next rows it makes, so that their blends
/// read the other row straight from memory (docs/performance.md).
///
/// # Safety
/// AVX2.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn rounds_avx2_two_chains(
    rows: &mut [MultiRow<TwoChains<TwoRowsAvx2>>; 4],
    q: [MultiRow<TwoChains<TwoRowsAvx2>>; 4],
) {
    // SAFETY (whole body): AVX2, as the caller guarantees; the template reads the two 32-byte
    // patterns and reads and writes the 512 bytes of `msg`.
    unsafe {
        let first = crate::core::rows::first_msg(q);
        let mut msg = template_message::<2>([first.map(|r| r.0 .0[0].0), first.map(|r| r.0 .0[1].0)]);
        let m = msg.as_mut_ptr() as *mut [__m256i; 4];
        let n = m.add(2);
        core::arch::asm!(
            include_str!(concat!(env!("OUT_DIR"), "/avx2_row_rounds_2.s")),
            m = inout(reg) m => _,
            n = inout(reg) n => _,
            k = inout(reg) ROUNDS - 1 => _,
            r16 = in(reg) super::lanes::avx2::ROT16.as_ptr(),
            r8 = in(reg) super::lanes::avx2::ROT8.as_ptr(),
            inout("ymm0") rows[0].0 .0[0].0,
            inout("ymm1") rows[1].0 .0[0].0,
            inout("ymm2") rows[2].0 .0[0].0,
            inout("ymm3") rows[3].0 .0[0].0,
            inout("ymm4") rows[0].0 .0[1].0,
            inout("ymm5") rows[1].0 .0[1].0,
            inout("ymm6") rows[2].0 .0[1].0,
            inout("ymm7") rows[3].0 .0[1].0,
            out("ymm8") _,
            out("ymm9") _,
            out("ymm10") _,
            out("ymm11") _,
            out("ymm12") _,
            out("ymm13") _,
            out("ymm14") _,
            out("ymm15") _,
            options(nostack)
        )
    };
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
struct TwoChains<V>([V; 2]);

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
/// `vpermt2d` (three cycles each, on port 5 on Intel) at every size from 2 to 16 KiB; the
/// transposed 4-lane kernel, with 112 instructions a round against these rows' 41, is slower
/// still (docs/performance.md).
#[derive(Clone, Copy)]
struct MultiRow<V>(V);

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

/// `V::N` inputs' compression of one block each: CV halves `lo` and `hi` (input i in lane i)
/// updated in place, `row3` holding each input's counter, block length and flags.
#[inline(always)]
unsafe fn compress_multi<V: RowVector>(lo: &mut V, hi: &mut V, row3: V, m: &[V; 4]) {
    // SAFETY (whole body): AVX-512F and VL, as the caller guarantees.
    unsafe {
        let iv = V::broadcast(&[IV[0], IV[1], IV[2], IV[3]]);
        let mut rows = [MultiRow(*lo), MultiRow(*hi), MultiRow(iv), MultiRow(row3)];
        V::multi_rounds(&mut rows, m.map(MultiRow));
        *lo = rows[0].0.xor(rows[2].0);
        *hi = rows[1].0.xor(rows[3].0);
    }
}

/// `V::N` blocks as [`MultiRow`]'s message: quarter k holds bytes 16k..16k+16 of block i in lane i.
///
/// # Safety
/// AVX-512F and VL; 64 bytes are readable at each of the first `V::N` pointers.
#[inline(always)]
unsafe fn quarters<V: RowVector>(p: [*const u8; MAX_N]) -> [V; 4] {
    // SAFETY: as the caller guarantees.
    unsafe {
        [V::lanes(p), V::lanes(p.map(|p| p.add(16))), V::lanes(p.map(|p| p.add(32))), V::lanes(p.map(|p| p.add(48)))]
    }
}

/// Row 3 of each input's state but the flags: counter (low, high words), `BLOCK_LEN`, 0. Made in
/// registers, from four words in every lane plus each lane's counter step from a constant,
/// unless a lane's low counter word wraps (see `lanes::counter_words`).
///
/// # Safety
/// AVX-512F and VL.
#[inline(always)]
unsafe fn row3<V: RowVector>(job: &Job) -> V {
    /// Lane i's counter step in its first word.
    static STEP: [u32; 4 * MAX_N] = {
        let mut x = [0; 4 * MAX_N];
        let mut i = 0;
        while i < MAX_N {
            x[4 * i] = i as u32;
            i += 1;
        }
        x
    };
    let (lo, hi) = (job.counter as u32, (job.counter >> 32) as u32);
    // SAFETY (whole body): as the caller guarantees.
    unsafe {
        let base = V::broadcast_words([lo, hi, BLOCK_LEN as u32, 0]);
        if !job.increment_counter {
            return base;
        }
        if lo.checked_add(V::N as u32 - 1).is_some() {
            return base.add(V::load(&STEP));
        }
        let mut row3 = [0u32; 4 * MAX_N];
        for lane in 0..V::N {
            let c = job.input_counter(lane);
            row3[4 * lane..4 * lane + 3].copy_from_slice(&[c as u32, (c >> 32) as u32, BLOCK_LEN as u32]);
        }
        V::load(&row3)
    }
}

/// The row form on `V::N` inputs at a time as a [`Group`].
struct MultiRowGroup<V>(core::marker::PhantomData<V>);

impl<V: RowVector> Group for MultiRowGroup<V> {
    const N: usize = V::N;
    /// As [`super::lanes::hash_group`], on [`MultiRow`] rows.
    #[inline(always)]
    unsafe fn hash(input: *const u8, stride: usize, blocks: usize, valid: usize, job: &Job, out: &mut [Cv]) {
        // SAFETY: as the caller guarantees.
        unsafe {
            let (lo, hi) = multi_cvs::<V>(input, stride, blocks, valid, job);
            V::store_cvs(lo, hi, &mut out[..valid]);
        }
    }
}

/// Word 2 of every 128-bit lane, as a `RowVector::mask_set` mask: row 3's block length.
const LEN: u32 = 0x4444_4444;
/// Word 3 of every 128-bit lane: row 3's flags.
const FLAGS: u32 = 0x8888_8888;

/// A CV's rows before its first block: the key's two halves, each in every 128-bit lane.
///
/// # Safety
/// AVX-512F and VL.
#[inline(always)]
unsafe fn key_rows<V: RowVector>(key: &[u32; 8]) -> (V, V) {
    // SAFETY: as the caller guarantees.
    unsafe { (V::broadcast(&[key[0], key[1], key[2], key[3]]), V::broadcast(&[key[4], key[5], key[6], key[7]])) }
}

/// [`MultiRowGroup`]'s chaining values left in registers: input i's CV halves in lane i of the two
/// vectors returned.
///
/// # Safety
/// As for [`super::lanes::hash_group`], with AVX-512F and VL.
#[inline(always)]
unsafe fn multi_cvs<V: RowVector>(input: *const u8, stride: usize, blocks: usize, valid: usize, job: &Job) -> (V, V) {
    debug_assert!(blocks >= 1 && job.last_block_len <= BLOCK_LEN && (1..=V::N).contains(&valid));
    let ptr = |lane: usize| lane_ptr(input, stride, valid, lane);
    // SAFETY (whole body): AVX-512F and VL, as the caller guarantees; every load reads a full
    // block of an input below `valid` (the caller guarantees those bytes) or of the stack.
    unsafe {
        // Row 3 of each lane: counter (low, high), block length; the flags' word is set per
        // block. Made in registers, as `lanes::counter_words` does for the lane kernels.
        let mut counters = row3::<V>(job);
        let (mut lo, mut hi) = key_rows::<V>(job.key);
        // (No closures around intrinsics in the loop: see `Row for __m128i`.)
        let full = if job.last_block_len == BLOCK_LEN { blocks } else { blocks - 1 };
        for b in 0..full {
            let at = b * BLOCK_LEN;
            let m = quarters::<V>(core::array::from_fn(|lane| ptr(lane).add(at)));
            compress_multi(&mut lo, &mut hi, counters.mask_set(FLAGS, job.block_flags(b, blocks)), &m);
        }
        if full < blocks {
            let staged = stage_last_blocks::<MAX_N>(input, stride, valid, full, job);
            let m = quarters::<V>(core::array::from_fn(|lane| staged.0[lane.min(valid - 1)].as_ptr()));
            counters = counters.mask_set(LEN, job.last_block_len as u32);
            compress_multi(&mut lo, &mut hi, counters.mask_set(FLAGS, job.block_flags(full, blocks)), &m);
        }
        (lo, hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether this CPU runs the AVX-512VL rows and the AVX2 rows; each one it lacks is
    /// reported missing from `test`.
    pub(super) fn row_sets(test: &str) -> (bool, bool) {
        let vl = std::is_x86_feature_detected!("avx512vl") && std::is_x86_feature_detected!("avx512f");
        let avx2 = std::is_x86_feature_detected!("avx2");
        if !vl {
            crate::core::expect::missing("avx512vl", &format!("{test} on AVX-512VL rows"));
        }
        if !avx2 {
            crate::core::expect::missing("simd:avx2", &format!("{test} on AVX2 rows"));
        }
        (vl, avx2)
    }

    /// The AVX2 templates of the row form's rounds (`rounds_avx2_one_chain` on one chain of two
    /// inputs, `rounds_avx2_two_chains` on two chains) give the rows the compiled generic rounds
    /// give, for rows and blocks of varied bits in every word.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn row_templates_match_compiled_rounds() {
        /// 64 random states and blocks through both, on one chain and on two.
        #[target_feature(enable = "avx2")]
        unsafe fn check() {
            let mut x = 0x2545_F491u32;
            let mut next = move || {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x
            };
            let mut rows = || -> [TwoRowsAvx2; 4] {
                let w: [[u32; 8]; 4] = core::array::from_fn(|_| core::array::from_fn(|_| next()));
                // SAFETY: AVX2 (this function's).
                core::array::from_fn(|i| unsafe { TwoRowsAvx2::load(&w[i]) })
            };
            let words = |v: __m256i| -> [u32; 8] {
                let mut w = [0u32; 8];
                // SAFETY: AVX; 32 bytes written into `w`.
                unsafe { _mm256_storeu_si256(w.as_mut_ptr() as *mut __m256i, v) };
                w
            };
            for _ in 0..64 {
                let (state, block) = (rows().map(MultiRow), rows().map(MultiRow));
                let (mut want, mut got) = (state, state);
                // SAFETY: AVX2.
                unsafe {
                    all_rounds(&mut want, block);
                    rounds_avx2_one_chain(&mut got, block);
                }
                assert_eq!(got.map(|r| words(r.0 .0)), want.map(|r| words(r.0 .0)), "one chain");

                let (other, other_block) = (rows(), rows());
                let pair =
                    |a: [MultiRow<TwoRowsAvx2>; 4], b: [TwoRowsAvx2; 4]| -> [MultiRow<TwoChains<TwoRowsAvx2>>; 4] {
                        core::array::from_fn(|i| MultiRow(TwoChains([a[i].0, b[i]])))
                    };
                let (state, block) = (pair(state, other), pair(block, other_block));
                let (mut want, mut got) = (state, state);
                // SAFETY: AVX2.
                unsafe {
                    all_rounds(&mut want, block);
                    rounds_avx2_two_chains(&mut got, block);
                }
                let all = |r: [MultiRow<TwoChains<TwoRowsAvx2>>; 4]| r.map(|r| r.0 .0.map(|h| words(h.0)));
                assert_eq!(all(got), all(want), "two chains");
            }
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2.
            unsafe { check() };
        } else {
            crate::core::expect::missing("simd:avx2", "row_templates_match_compiled_rounds");
        }
    }
}
