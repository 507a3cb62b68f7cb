//! Two or four inputs at a time on 256- or 512-bit rows (AVX-512F and VL, or AVX2): the row form's rounds on
//! one input per 128-bit lane, for groups of two to four inputs (small messages, the top levels of
//! a tree).

#[cfg(target_arch = "x86")]
use core::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::*;

use super::avx2::{transpose_in_lanes, Avx2};
#[cfg(target_arch = "x86_64")]
use super::lanes::Aligned;
use super::lanes::{
    for_groups, group_cvs, hash_rows, lane_ptr, parents_transposed, stage_last_blocks, Group, Job, Lanes,
};
use crate::core::compress::{Cv, Word};
use crate::core::constants::flags::PARENT;
#[cfg(target_arch = "x86_64")]
use crate::core::constants::ROUNDS;
use crate::core::constants::{BLOCK_LEN, CHUNK_LEN, IV};
use crate::core::rows::{all_rounds, opaque512, InLane, Row, Vl, Ymm, A2};

/// Most inputs side by side on rows: two 512-bit chains of four.
const MAX_N: usize = 8;

/// A vector of 128-bit lanes, each holding one row of one input's state: what the row form on
/// several inputs ([`Multi`]) needs of it. Implemented for 512-bit vectors (four inputs),
/// 256-bit ones (two inputs) and pairs of 256-bit ones (four inputs), all with AVX-512VL's
/// one-instruction rotations.
trait Wide: Word + InLane {
    /// Inputs side by side: 128-bit lanes.
    const N: usize;
    /// The seven rounds on [`Multi`]'s rows, from a block's quarters: [`all_rounds`], unless
    /// `Self` has a form of its own.
    ///
    /// # Safety
    /// As for `load`.
    #[inline(always)]
    unsafe fn multi_rounds(rows: &mut [Multi<Self>; 4], q: [Multi<Self>; 4]) {
        // SAFETY: as the caller guarantees.
        unsafe { all_rounds(rows, q) }
    }
    /// [`Wide::multi_rounds`] for `Pair<Self>`.
    ///
    /// # Safety
    /// As for `load`.
    #[inline(always)]
    unsafe fn pair_rounds(rows: &mut [Multi<Pair<Self>>; 4], q: [Multi<Pair<Self>>; 4]) {
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

impl Wide for __m512i {
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

/// A vector of two inputs' rows ([`Ymm`], [`Y2`]): its 128-bit lanes as one input's rows each,
/// and the even/odd split of two such vectors, for the levels of a small tree ([`Level`]).
trait TwoInputs: Wide {
    /// One input's rows.
    type One: Level;
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

/// [`Wide`], [`TwoInputs`] and [`Level`] (for it and for a [`Pair`] of it) for a wrapper around
/// `__m256i` holding two inputs' rows (its single-input type `$one`), on AVX2 instructions: what
/// [`Ymm`] (AVX-512VL) and [`Y2`] (AVX2 only) share. They differ in their rotations ([`Word`])
/// alone; their [`InLane`] is `core::rows::in_lane_256!`'s.
macro_rules! two_input_rows {
    ($t:ident, $one:ident $(, $rounds:ident, $pair_rounds:ident)?) => {
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

        impl Level for $t {
            #[inline(always)]
            unsafe fn top(m: [Self; 4], key: &[u32; 8], flags: u32, top_flags: u32, split: bool) -> [__m128i; 2] {
                // SAFETY: as the caller guarantees.
                unsafe { up(m, key, flags, top_flags, split, |v: $t| v.halves()) }
            }
        }

        impl Level for Pair<$t> {
            #[inline(always)]
            unsafe fn top(m: [Self; 4], key: &[u32; 8], flags: u32, top_flags: u32, split: bool) -> [__m128i; 2] {
                // SAFETY: as the caller guarantees.
                unsafe { up(m, key, flags, top_flags, split, |v: Pair<$t>| v.0[0].even_odd_with(v.0[1])) }
            }
        }

        impl Wide for $t {
            const N: usize = 2;
            $(
            #[inline(always)]
            unsafe fn multi_rounds(rows: &mut [Multi<Self>; 4], q: [Multi<Self>; 4]) {
                // SAFETY: as the caller guarantees.
                unsafe { $rounds(rows, q) }
            }
            #[inline(always)]
            unsafe fn pair_rounds(rows: &mut [Multi<Pair<Self>>; 4], q: [Multi<Pair<Self>>; 4]) {
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

two_input_rows!(Ymm, Vl);

/// A 256-bit vector in an AVX2 function: two inputs' rows, the rotations those of the 8-lane
/// kernel ([`Avx2`]: byte shuffles and shift pairs). The row form on several inputs
/// for CPUs without AVX-512VL ([`hash_quads_avx2`]).
#[derive(Clone, Copy)]
struct Y2(__m256i);

impl Word for Y2 {
    crate::core::rows::delegate_add_xor!();
    #[inline(always)]
    fn rotr16(self) -> Self {
        Y2(Avx2(self.0).rotr16().0)
    }
    #[inline(always)]
    fn rotr12(self) -> Self {
        Y2(Avx2(self.0).rotr12().0)
    }
    #[inline(always)]
    fn rotr8(self) -> Self {
        Y2(Avx2(self.0).rotr8().0)
    }
    #[inline(always)]
    fn rotr7(self) -> Self {
        Y2(Avx2(self.0).rotr7().0)
    }
}

crate::core::rows::in_lane_256!(Y2);

#[cfg(target_arch = "x86_64")]
two_input_rows!(Y2, A2, y2_rounds, y2_pair_rounds);
#[cfg(not(target_arch = "x86_64"))]
two_input_rows!(Y2, A2);

/// The buffer the templates of `build.rs`'s `row_rounds` move the message rows in: room for
/// two rounds' rows of two chains, round 0's of each chain written here (chain h's row k at
/// `[h][k]`), the rest left for the template (not zeroed: it writes before it reads).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn y2_message<const CHAINS: usize>(
    first: [[__m256i; 4]; CHAINS],
) -> core::mem::MaybeUninit<Aligned<[[__m256i; 4]; 4]>> {
    const { assert!(CHAINS <= 2, "the templates run one or two chains") };
    let mut msg = core::mem::MaybeUninit::<Aligned<[[__m256i; 4]; 4]>>::uninit();
    // SAFETY: `CHAINS` is at most 2 (asserted above), so the rows fit in the first slots of
    // the buffer, which is aligned for `__m256i`.
    unsafe { (msg.as_mut_ptr() as *mut [[__m256i; 4]; CHAINS]).write(first) };
    msg
}

/// The seven rounds on one chain of [`Y2`] rows (two inputs: 2 KiB, the parents above four
/// chunks), the state in four registers throughout and the message moved in memory (`build.rs`
/// writes the template, `row_rounds`), as [`y2_pair_rounds`] does for two chains, with b's
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
unsafe fn y2_rounds(rows: &mut [Multi<Y2>; 4], q: [Multi<Y2>; 4]) {
    // SAFETY (whole body): AVX2, as the caller guarantees; the template reads the two 32-byte
    // patterns and reads and writes the 256 bytes of `msg`.
    unsafe {
        let first = crate::core::rows::first_msg(q);
        let mut msg = y2_message::<1>([first.map(|r| r.0 .0)]);
        let m = msg.as_mut_ptr() as *mut [__m256i; 4];
        let n = m.add(2);
        core::arch::asm!(
            include_str!(concat!(env!("OUT_DIR"), "/avx2_row_rounds_1.s")),
            m = inout(reg) m => _,
            n = inout(reg) n => _,
            k = inout(reg) ROUNDS - 1 => _,
            r16 = in(reg) super::avx2::ROT16.as_ptr(),
            r8 = in(reg) super::avx2::ROT8.as_ptr(),
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

/// The seven rounds on two chains of [`Y2`] rows (four inputs: 4 KiB, the top of 8 and 16
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
unsafe fn y2_pair_rounds(rows: &mut [Multi<Pair<Y2>>; 4], q: [Multi<Pair<Y2>>; 4]) {
    // SAFETY (whole body): AVX2, as the caller guarantees; the template reads the two 32-byte
    // patterns and reads and writes the 512 bytes of `msg`.
    unsafe {
        let first = crate::core::rows::first_msg(q);
        let mut msg = y2_message::<2>([first.map(|r| r.0 .0[0].0), first.map(|r| r.0 .0[1].0)]);
        let m = msg.as_mut_ptr() as *mut [__m256i; 4];
        let n = m.add(2);
        core::arch::asm!(
            include_str!(concat!(env!("OUT_DIR"), "/avx2_row_rounds_2.s")),
            m = inout(reg) m => _,
            n = inout(reg) n => _,
            k = inout(reg) ROUNDS - 1 => _,
            r16 = in(reg) super::avx2::ROT16.as_ptr(),
            r8 = in(reg) super::avx2::ROT8.as_ptr(),
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

/// [`Wide`] for a wrapper around `__m128i` holding one input's rows: [`Vl`] (AVX-512VL) and
/// `A2` (AVX2), the row forms of single compressions (`core::rows`), here the top node of a
/// small tree ([`subtree_top`], [`subtree_top_avx2`]).
macro_rules! one_input_rows {
    ($t:ident) => {
        impl Wide for $t {
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

        impl Level for $t {
            #[inline(always)]
            unsafe fn top(m: [Self; 4], key: &[u32; 8], flags: u32, top_flags: u32, _split: bool) -> [__m128i; 2] {
                // SAFETY: as the caller guarantees.
                let (lo, hi) = unsafe { parents(m, key, flags | top_flags) };
                [lo.0, hi.0]
            }
        }
    };
}

one_input_rows!(Vl);
one_input_rows!(A2);

/// Two [`Wide`] vectors side by side: twice as many inputs' rows, as two independent chains of
/// instructions, each half moving its message rows as `V` does. `Pair<Ymm>` runs four inputs as
/// two chains of 256-bit rows, for CPUs where they beat one chain of 512-bit rows (see
/// `platform::prefers_256_bit_rows`); `Pair<__m512i>` runs eight one-block inputs (see
/// [`hash_quads`]).
#[derive(Clone, Copy)]
struct Pair<V>([V; 2]);

impl<V: Wide> Word for Pair<V> {
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Pair([self.0[0].add(o.0[0]), self.0[1].add(o.0[1])])
    }
    #[inline(always)]
    fn xor(self, o: Self) -> Self {
        Pair([self.0[0].xor(o.0[0]), self.0[1].xor(o.0[1])])
    }
    #[inline(always)]
    fn rotr16(self) -> Self {
        Pair([self.0[0].rotr16(), self.0[1].rotr16()])
    }
    #[inline(always)]
    fn rotr12(self) -> Self {
        Pair([self.0[0].rotr12(), self.0[1].rotr12()])
    }
    #[inline(always)]
    fn rotr8(self) -> Self {
        Pair([self.0[0].rotr8(), self.0[1].rotr8()])
    }
    #[inline(always)]
    fn rotr7(self) -> Self {
        Pair([self.0[0].rotr7(), self.0[1].rotr7()])
    }
}

impl<V: Wide> InLane for Pair<V> {
    #[inline(always)]
    unsafe fn pshufd<const IMM: i32>(self) -> Self {
        // SAFETY: as the caller guarantees.
        unsafe { Pair(self.0.map(|x| x.pshufd::<IMM>())) }
    }
    #[inline(always)]
    unsafe fn shufps<const IMM: i32>(self, hi: Self) -> Self {
        // SAFETY: as the caller guarantees.
        unsafe { Pair([self.0[0].shufps::<IMM>(hi.0[0]), self.0[1].shufps::<IMM>(hi.0[1])]) }
    }
    #[inline(always)]
    unsafe fn unpacklo(self, o: Self) -> Self {
        // SAFETY: as the caller guarantees.
        unsafe { Pair([self.0[0].unpacklo(o.0[0]), self.0[1].unpacklo(o.0[1])]) }
    }
    #[inline(always)]
    unsafe fn blend<const MASK: i32>(self, o: Self) -> Self {
        // SAFETY: as the caller guarantees.
        unsafe { Pair([self.0[0].blend::<MASK>(o.0[0]), self.0[1].blend::<MASK>(o.0[1])]) }
    }
}

impl<V: Wide> Wide for Pair<V> {
    const N: usize = 2 * V::N;
    #[inline(always)]
    unsafe fn multi_rounds(rows: &mut [Multi<Self>; 4], q: [Multi<Self>; 4]) {
        // SAFETY: as the caller guarantees.
        unsafe { V::pair_rounds(rows, q) }
    }
    #[inline(always)]
    unsafe fn load(words: &[u32]) -> Self {
        // SAFETY: as the caller guarantees (`4 * N` words).
        unsafe { Pair([V::load(words), V::load(&words[4 * V::N..])]) }
    }
    #[inline(always)]
    unsafe fn broadcast(words: &[u32; 4]) -> Self {
        // SAFETY: as the caller guarantees.
        let x = unsafe { V::broadcast(words) };
        Pair([x, x])
    }
    #[inline(always)]
    unsafe fn broadcast_words(w: [u32; 4]) -> Self {
        // SAFETY: as the caller guarantees.
        let x = unsafe { V::broadcast_words(w) };
        Pair([x, x])
    }
    #[inline(always)]
    unsafe fn lanes(p: [*const u8; MAX_N]) -> Self {
        // SAFETY: as the caller guarantees (16 bytes at each of the first `N` pointers).
        unsafe { Pair([V::lanes(p), V::lanes(core::array::from_fn(|i| p[(i + V::N).min(MAX_N - 1)]))]) }
    }
    #[inline(always)]
    unsafe fn mask_set(self, mask: u32, x: u32) -> Self {
        // SAFETY: as the caller guarantees.
        unsafe { Pair([self.0[0].mask_set(mask, x), self.0[1].mask_set(mask >> (4 * V::N), x)]) }
    }
    #[inline(always)]
    unsafe fn shuffle<const IMM: i32>(self) -> Self {
        // SAFETY: as the caller guarantees.
        unsafe { Pair([self.0[0].shuffle::<IMM>(), self.0[1].shuffle::<IMM>()]) }
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

/// `N` inputs' rows side by side, one input in each 128-bit lane of a [`Wide`] vector. The row
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
struct Multi<V>(V);

crate::core::rows::delegate_word!(Multi<V>, V: Wide);

impl<V: Wide> InLane for Multi<V> {
    #[inline(always)]
    unsafe fn pshufd<const IMM: i32>(self) -> Self {
        // SAFETY: as the caller guarantees.
        Multi(unsafe { self.0.pshufd::<IMM>() })
    }
    #[inline(always)]
    unsafe fn shufps<const IMM: i32>(self, hi: Self) -> Self {
        // SAFETY: as the caller guarantees.
        Multi(unsafe { self.0.shufps::<IMM>(hi.0) })
    }
    #[inline(always)]
    unsafe fn unpacklo(self, o: Self) -> Self {
        // SAFETY: as the caller guarantees.
        Multi(unsafe { self.0.unpacklo(o.0) })
    }
    #[inline(always)]
    unsafe fn blend<const MASK: i32>(self, o: Self) -> Self {
        // SAFETY: as the caller guarantees.
        Multi(unsafe { self.0.blend::<MASK>(o.0) })
    }
}

impl<V: Wide> Row for Multi<V> {
    #[inline(always)]
    unsafe fn shuffle<const IMM: i32>(self) -> Self {
        // SAFETY: as the caller guarantees.
        Multi(unsafe { self.0.shuffle::<IMM>() })
    }
}

/// `V::N` inputs' compression of one block each: CV halves `lo` and `hi` (input i in lane i)
/// updated in place, `row3` holding each input's counter, block length and flags.
#[inline(always)]
unsafe fn compress_multi<V: Wide>(lo: &mut V, hi: &mut V, row3: V, m: &[V; 4]) {
    // SAFETY (whole body): AVX-512F and VL, as the caller guarantees.
    unsafe {
        let iv = V::broadcast(&[IV[0], IV[1], IV[2], IV[3]]);
        let mut rows = [Multi(*lo), Multi(*hi), Multi(iv), Multi(row3)];
        V::multi_rounds(&mut rows, m.map(Multi));
        *lo = rows[0].0.xor(rows[2].0);
        *hi = rows[1].0.xor(rows[3].0);
    }
}

/// `V::N` blocks as [`Multi`]'s message: quarter k holds bytes 16k..16k+16 of block i in lane i.
///
/// # Safety
/// AVX-512F and VL; 64 bytes are readable at each of the first `V::N` pointers.
#[inline(always)]
unsafe fn quarters<V: Wide>(p: [*const u8; MAX_N]) -> [V; 4] {
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
unsafe fn row3<V: Wide>(job: &Job) -> V {
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
struct MultiGroup<V>(core::marker::PhantomData<V>);

impl<V: Wide> Group for MultiGroup<V> {
    const N: usize = V::N;
    /// As [`super::lanes::hash_group`], on [`Multi`] rows.
    #[inline(always)]
    unsafe fn hash(input: *const u8, stride: usize, blocks: usize, valid: usize, job: &Job, out: &mut [Cv]) {
        // SAFETY: as the caller guarantees.
        unsafe {
            let (lo, hi) = multi_cvs::<V>(input, stride, blocks, valid, job);
            V::store_cvs(lo, hi, &mut out[..valid]);
        }
    }
}

/// Word 2 of every 128-bit lane, as a `Wide::mask_set` mask: row 3's block length.
const LEN: u32 = 0x4444_4444;
/// Word 3 of every 128-bit lane: row 3's flags.
const FLAGS: u32 = 0x8888_8888;

/// A CV's rows before its first block: the key's two halves, each in every 128-bit lane.
///
/// # Safety
/// AVX-512F and VL.
#[inline(always)]
unsafe fn key_rows<V: Wide>(key: &[u32; 8]) -> (V, V) {
    // SAFETY: as the caller guarantees.
    unsafe { (V::broadcast(&[key[0], key[1], key[2], key[3]]), V::broadcast(&[key[4], key[5], key[6], key[7]])) }
}

/// [`MultiGroup`]'s chaining values left in registers: input i's CV halves in lane i of the two
/// vectors returned.
///
/// # Safety
/// As for [`super::lanes::hash_group`], with AVX-512F and VL.
#[inline(always)]
unsafe fn multi_cvs<V: Wide>(input: *const u8, stride: usize, blocks: usize, valid: usize, job: &Job) -> (V, V) {
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

/// Whether [`hash_quads`] takes a group of `inputs` inputs of `blocks` blocks as it is, rather
/// than the transposed lane kernels: four or fewer always; five to eight (as two interleaved
/// chains of 512-bit rows, `Pair<__m512i>`) when each is one block (the 8-parent level of 16
/// chunks).
///
/// Interleaved, each chain fills the other's latency; eight parents on the pair run at least as
/// fast as on the 8-lane kernel. Whole chunks stay on the lane kernels, which are as fast or
/// faster for five to eight of them (docs/performance.md).
pub(crate) fn rows_take(inputs: usize, blocks: usize) -> bool {
    inputs <= 4 || (inputs <= MAX_N && blocks == 1)
}

/// Hashes all `out.len()` inputs on rows of several inputs (see [`for_groups`] for the layout):
/// five to eight one-block inputs as two interleaved chains of 512-bit rows ([`rows_take`]);
/// else four at a time (a last three too) on 512-bit rows, or with `split` as two chains of
/// 256-bit rows (see `platform::prefers_256_bit_rows`); a last two on 256-bit rows; a last one
/// on 128-bit rows ([`hash_rows`]). Two inputs on 256-bit rows take about the time of one on 128-bit
/// rows, where 512-bit rows with two lanes idle take half again as long (docs/performance.md).
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512VL; the input layout is as for [`for_groups`].
#[target_feature(enable = "avx512f,avx512vl")]
pub(crate) unsafe fn hash_quads(input: &[u8], stride: usize, blocks: usize, job: &Job, out: &mut [Cv], split: bool) {
    // SAFETY (whole body): the instruction sets are enabled here; the caller guarantees the
    // layout, and `for_groups` asserts that the inputs it is given lie inside what it is given.
    unsafe {
        if out.len() > 4 && rows_take(out.len(), blocks) {
            for_groups::<MultiGroup<Pair<__m512i>>>(input, stride, blocks, job, out)
        } else if split {
            fours_then_two::<Pair<Ymm>, Ymm>(input, stride, blocks, job, out)
        } else {
            fours_then_two::<__m512i, Ymm>(input, stride, blocks, job, out)
        }
    }
}

/// [`hash_quads`] for CPUs with AVX2 but not AVX-512VL: four inputs at a time (a last three
/// too) as two chains of 256-bit rows, a last two on 256-bit rows, a last one on 128-bit rows.
/// For the groups of two to four that the 8-lane kernel leaves: a small input's chunks (2 KiB
/// to 7 KiB) and the top levels of every tree, where the 4-lane kernel is much slower
/// (docs/performance.md).
///
/// # Safety
/// The CPU must support AVX2; the input layout is as for [`for_groups`].
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn hash_quads_avx2(input: &[u8], stride: usize, blocks: usize, job: &Job, out: &mut [Cv]) {
    // SAFETY: AVX2 is enabled here; the layout as the caller guarantees.
    unsafe { fours_then_two::<Pair<Y2>, Y2>(input, stride, blocks, job, out) }
}

/// The inputs four at a time on `F` (a last three too), then a last two on `T` or a last one on
/// 128-bit rows ([`hash_rows`]).
///
/// # Safety
/// `F`'s and `T`'s instruction sets; the input layout is as for [`for_groups`].
#[inline(always)]
unsafe fn fours_then_two<F: Wide, T: Wide>(input: &[u8], stride: usize, blocks: usize, job: &Job, out: &mut [Cv]) {
    let quads = match out.len() % 4 {
        3 => out.len(),
        r => out.len() - r,
    };
    let (four, rest) = out.split_at_mut(quads);
    // SAFETY: as the caller guarantees; `for_groups` asserts that the inputs it is given lie
    // inside what it is given.
    unsafe { for_groups::<MultiGroup<F>>(input, stride, blocks, job, four) };
    if rest.is_empty() {
        return;
    }
    let (input, job) = (&input[quads * stride..], &job.starting_at(quads));
    match rest.len() {
        // SAFETY: as above.
        2 => unsafe { for_groups::<MultiGroup<T>>(input, stride, blocks, job, rest) },
        _ => hash_rows(input, stride, blocks, job, rest),
    }
}

/// One level of a small tree on rows: node j of the level in lane j of `lo` and `hi` (its CV's
/// words 0-3 and 4-7). [`up`] hashes the level's pairs into the level above, whose nodes take
/// half as many lanes, moving the message there in registers; the top level is one node, on
/// [`Vl`].
///
/// Node j of the level above hashes nodes 2j and 2j + 1, so its message quarters are lanes 2j of
/// `lo` and `hi`, then lanes 2j + 1: each level's quarters are an even/odd split of the 128-bit
/// lanes below, one or two lane shuffles per quarter.
trait Level: Wide {
    /// This level's parents, then every level above: the top node's 16 output words' first 8
    /// (its CV, or with `top_flags` ROOT the root hash). `m` is this level's message quarters;
    /// `split` as for [`hash_quads`].
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
unsafe fn parents<V: Wide>(m: [V; 4], key: &[u32; 8], flags: u32) -> (V, V) {
    // SAFETY (whole body): as the caller guarantees.
    unsafe {
        let (mut lo, mut hi) = key_rows::<V>(key);
        compress_multi(&mut lo, &mut hi, V::broadcast_words([0, 0, BLOCK_LEN as u32, flags]), &m);
        (lo, hi)
    }
}

/// This level's parents (from its message quarters `m`), then the levels above on `U`
/// ([`nodes_up`]). The same for every level but the top.
///
/// # Safety
/// AVX-512F and VL.
#[inline(always)]
unsafe fn up<V: Wide, U: Level>(
    m: [V; 4],
    key: &[u32; 8],
    flags: u32,
    top_flags: u32,
    split: bool,
    halve: impl Fn(V) -> (U, U),
) -> [__m128i; 2] {
    // SAFETY: as the caller guarantees.
    unsafe { nodes_up(parents(m, key, flags), key, flags, top_flags, split, halve) }
}

/// The levels above a level of two or more nodes (node j's CV halves in lane j of `lo` and
/// `hi`), on `U`: `halve` splits a vector of this level's CV halves into its even and odd
/// 128-bit lanes, the left and right children of the level above.
///
/// # Safety
/// AVX-512F and VL.
#[inline(always)]
unsafe fn nodes_up<V: Wide, U: Level>(
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

impl Level for __m512i {
    #[inline(always)]
    unsafe fn top(m: [Self; 4], key: &[u32; 8], flags: u32, top_flags: u32, split: bool) -> [__m128i; 2] {
        // SAFETY: as the caller guarantees.
        unsafe { up(m, key, flags, top_flags, split, |v| even_odd_512(v)) }
    }
}

impl Level for Pair<__m512i> {
    #[inline(always)]
    unsafe fn top(m: [Self; 4], key: &[u32; 8], flags: u32, top_flags: u32, split: bool) -> [__m128i; 2] {
        // SAFETY: as the caller guarantees.
        unsafe {
            if split {
                // The four parents above on two chains of 256-bit rows.
                up(m, key, flags, top_flags, split, |v: Pair<__m512i>| {
                    let ((a_even, a_odd), (b_even, b_odd)) = (even_odd_512(v.0[0]), even_odd_512(v.0[1]));
                    (Pair([a_even, b_even]), Pair([a_odd, b_odd]))
                })
            } else {
                // Lanes 0 and 2 of the first vector then of the second (even), 1 and 3 (odd).
                up(m, key, flags, top_flags, split, |v: Pair<__m512i>| {
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
/// one above moved there in registers ([`Level`]). No level goes through memory, the lane
/// dispatch, or a `Job`: each level through them costs more than the compression itself
/// (docs/performance.md). `split` as for [`hash_quads`].
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512VL.
#[target_feature(enable = "avx512f,avx512vl")]
pub(crate) unsafe fn subtree_top(cvs: &[Cv], key: &[u32; 8], flags: u32, top_flags: u32, split: bool) -> Cv {
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
            8 if split => Pair::<Ymm>::top(quarters(ptrs), key, flags, top_flags, split),
            8 => __m512i::top(quarters(ptrs), key, flags, top_flags, split),
            _ => Pair::<__m512i>::top(quarters(ptrs), key, flags, top_flags, split),
        }
    };
    // SAFETY: SSE2, part of the instruction sets enabled here.
    unsafe { cv_of(lo, hi) }
}

/// The top node of the complete subtree over `input`, 2, 4, 8 or 16 whole chunks (the first
/// with index `first_chunk`), as [`subtree_top`] over their CVs would give it, with no level
/// through memory: the chunks' CVs stay in registers and the level above starts from there.
/// - 2 and 4 chunks: on rows, as [`hash_quads`] would hash them; their CVs are rows already.
/// - 8 and 16 chunks: on the 8- and 16-lane kernels ([`group_cvs`]), CVs transposed (lane j of
///   vector w: word w of chunk j). Sixteen chunks' eight parents run on the 8-lane kernel
///   straight from there (a parent's block is the words of an even lane, then of the odd lane
///   after it). Eight CVs are then made rows for the four parents above ([`eight_up`]).
///
/// Against storing the chunks' CVs and calling [`subtree_top`], this saves the round trip
/// through memory at every size from 2 to 16 KiB (docs/performance.md).
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512VL.
#[target_feature(enable = "avx512f,avx512vl")]
pub(crate) unsafe fn chunks_top(
    input: &[u8],
    first_chunk: u64,
    key: &[u32; 8],
    flags: u32,
    top_flags: u32,
    split: bool,
) -> Cv {
    let (n, job) = small_tree(input, first_chunk, key, flags);
    let (p, blocks) = (input.as_ptr(), CHUNK_LEN / BLOCK_LEN);
    let flags = flags | PARENT;
    // SAFETY (whole body): the instruction sets are enabled here; the `n` chunks lie in `input`.
    let [lo, hi] = unsafe {
        match n {
            2 => nodes_up(two_chunks(p, &job), key, flags, top_flags, split, |v: Ymm| v.halves()),
            4 if split => {
                let cvs = multi_cvs::<Pair<Ymm>>(p, CHUNK_LEN, blocks, 4, &job);
                nodes_up(cvs, key, flags, top_flags, split, |v: Pair<Ymm>| v.0[0].even_odd_with(v.0[1]))
            }
            4 => {
                let cvs = multi_cvs::<__m512i>(p, CHUNK_LEN, blocks, 4, &job);
                nodes_up(cvs, key, flags, top_flags, split, |v| even_odd_512(v))
            }
            8 => eight_chunks_up(p, &job, key, flags, top_flags, split),
            _ => sixteen_chunks_up(p, &job, key, flags, top_flags, split),
        }
    };
    // SAFETY: SSE2, part of the instruction sets enabled here.
    unsafe { cv_of(lo, hi) }
}

/// [`subtree_top`] on AVX2 alone, for CPUs without AVX-512VL: the levels of 2, 4 and 8 CVs on
/// rows of one, two and four inputs (`A2`, [`Y2`], two chains of [`Y2`]), each moved to the
/// level above in registers; the eight parents of 16 CVs on the 8-lane kernel, the CVs loaded
/// transposed as it loads message blocks, then [`eight_up_avx2`].
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
            4 => Y2::top(quarters(ptrs), key, flags, top_flags, true),
            8 => Pair::<Y2>::top(quarters(ptrs), key, flags, top_flags, true),
            _ => {
                let m = Avx2::load_msg::<false>(blocks, BLOCK_LEN, 8);
                eight_up_avx2(raw8(parents_transposed(&m, key, flags)), key, flags, top_flags)
            }
        }
    };
    // SAFETY: SSE2, part of AVX2.
    unsafe { cv_of(lo, hi) }
}

/// [`chunks_top`] on AVX2 alone, for CPUs without AVX-512VL: 2 and 4 chunks on rows of two
/// inputs ([`Y2`], two chains of them), their CVs rows already; 8 chunks on the 8-lane kernel,
/// then [`eight_up_avx2`]; 16 chunks as two groups of eight, whose eight parents run on the
/// 8-lane kernel straight from the transposed CVs.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn chunks_top_avx2(input: &[u8], first_chunk: u64, key: &[u32; 8], flags: u32, top_flags: u32) -> Cv {
    let (n, job) = small_tree(input, first_chunk, key, flags);
    let (p, blocks) = (input.as_ptr(), CHUNK_LEN / BLOCK_LEN);
    let flags = flags | PARENT;
    // SAFETY (whole body): AVX2 is enabled here; the `n` chunks lie in `input`.
    let [lo, hi] = unsafe {
        match n {
            2 => nodes_up(multi_cvs::<Y2>(p, CHUNK_LEN, blocks, 2, &job), key, flags, top_flags, true, |v: Y2| {
                v.halves()
            }),
            4 => four_chunks_up_avx2(p, &job, key, flags, top_flags),
            8 => eight_chunks_up_avx2(p, &job, key, flags, top_flags),
            _ => sixteen_chunks_up_avx2(p, &job, key, flags, top_flags),
        }
    };
    // SAFETY: SSE2, part of AVX2.
    unsafe { cv_of(lo, hi) }
}

/// The chunk count of a small tree's input (2, 4, 8 or 16 whole chunks, asserted) and the job
/// that hashes its chunks: what [`chunks_top`] and [`chunks_top_avx2`] start from.
fn small_tree<'a>(input: &[u8], first_chunk: u64, key: &'a [u32; 8], flags: u32) -> (usize, Job<'a>) {
    let n = input.len() / CHUNK_LEN;
    assert!(
        input.len().is_multiple_of(CHUNK_LEN) && matches!(n, 2 | 4 | 8 | 16),
        "a small tree of {} bytes",
        input.len()
    );
    (n, Job::chunks(key, first_chunk, flags, false))
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
fn raw8(v: [Avx2; 8]) -> [__m256i; 8] {
    // SAFETY: `Avx2` is a transparent wrapper around `__m256i`.
    unsafe { core::mem::transmute::<[Avx2; 8], [__m256i; 8]>(v) }
}

/// Four chunks on two chains of rows of two inputs, then the levels above from there. Not
/// inlined: inlined beside the other sizes, it ran 4 KiB at 0.90x upstream's speed against
/// 0.95x with the chunks' CVs stored and [`subtree_top_avx2`] after.
///
/// # Safety
/// AVX2; four whole chunks are readable at `p`.
#[target_feature(enable = "avx2")]
#[inline(never)]
unsafe fn four_chunks_up_avx2(p: *const u8, job: &Job, key: &[u32; 8], flags: u32, top_flags: u32) -> [__m128i; 2] {
    // SAFETY: as the caller guarantees.
    unsafe {
        let cvs = multi_cvs::<Pair<Y2>>(p, CHUNK_LEN, CHUNK_LEN / BLOCK_LEN, 4, job);
        nodes_up(cvs, key, flags, top_flags, true, |v: Pair<Y2>| v.0[0].even_odd_with(v.0[1]))
    }
}

/// Eight chunks on the 8-lane kernel, then the levels above ([`eight_up_avx2`]). Not inlined,
/// as [`eight_chunks_up`] is not.
///
/// # Safety
/// AVX2; eight whole chunks are readable at `p`.
#[target_feature(enable = "avx2")]
#[inline(never)]
unsafe fn eight_chunks_up_avx2(p: *const u8, job: &Job, key: &[u32; 8], flags: u32, top_flags: u32) -> [__m128i; 2] {
    // SAFETY: as the caller guarantees.
    unsafe { eight_up_avx2(raw8(group_cvs(p, CHUNK_LEN, CHUNK_LEN / BLOCK_LEN, 8, job)), key, flags, top_flags) }
}

/// Sixteen chunks as two groups on the 8-lane kernel; their eight parents on the 8-lane kernel
/// from the transposed CVs (parent k's block: the CVs in lanes 2k and 2k + 1 of the first
/// group's vectors for k < 4, of the second's after), then [`eight_up_avx2`].
///
/// # Safety
/// AVX2; sixteen whole chunks are readable at `p`.
#[target_feature(enable = "avx2")]
#[inline(never)]
unsafe fn sixteen_chunks_up_avx2(p: *const u8, job: &Job, key: &[u32; 8], flags: u32, top_flags: u32) -> [__m128i; 2] {
    const BLOCKS: usize = CHUNK_LEN / BLOCK_LEN;
    // SAFETY (whole body): as the caller guarantees.
    unsafe {
        let a = raw8(group_cvs::<Avx2>(p, CHUNK_LEN, BLOCKS, 8, job));
        let b = raw8(group_cvs::<Avx2>(p.add(8 * CHUNK_LEN), CHUNK_LEN, BLOCKS, 8, &job.starting_at(8)));
        // Each vector's even lanes (left children) in its low half, odd lanes in its high half.
        let even_odd = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
        let mut m = [Avx2(_mm256_setzero_si256()); 16];
        for w in 0..8 {
            let (x, y) = (_mm256_permutevar8x32_epi32(a[w], even_odd), _mm256_permutevar8x32_epi32(b[w], even_odd));
            m[w] = Avx2(_mm256_permute2x128_si256::<0x20>(x, y));
            m[8 + w] = Avx2(_mm256_permute2x128_si256::<0x31>(x, y));
        }
        eight_up_avx2(raw8(parents_transposed(&m, key, flags)), key, flags, top_flags)
    }
}

/// [`chunks_top`] for eight chunks at `p`: their CVs on the 8-lane kernel, then [`eight_up`].
/// A function of its own: inlined into [`chunks_top`] with the other sizes, it ran slower.
///
/// # Safety
/// AVX-512F and VL; eight whole chunks are readable at `p`.
#[target_feature(enable = "avx512f,avx512vl")]
#[inline(never)]
unsafe fn eight_chunks_up(
    p: *const u8,
    job: &Job,
    key: &[u32; 8],
    flags: u32,
    top_flags: u32,
    split: bool,
) -> [__m128i; 2] {
    // SAFETY: as the caller guarantees.
    unsafe { eight_up(group_cvs::<__m256i>(p, CHUNK_LEN, CHUNK_LEN / BLOCK_LEN, 8, job), key, flags, top_flags, split) }
}

/// [`chunks_top`] for sixteen chunks at `p`: their CVs on the 16-lane kernel, the eight parents
/// above on the 8-lane kernel from there, then [`eight_up`].
///
/// # Safety
/// AVX-512F and VL; sixteen whole chunks are readable at `p`.
#[target_feature(enable = "avx512f,avx512vl")]
#[inline(never)]
unsafe fn sixteen_chunks_up(
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
        eight_up(parents_transposed(&m, key, flags), key, flags, top_flags, split)
    }
}

/// Two whole chunks' CVs on one chain of 256-bit rows, as [`multi_cvs`] gives them, two blocks
/// a loop turn: the 2 KiB path, at upstream's speed in `b3accel bench` (docs/performance.md).
///
/// # Safety
/// AVX-512F and VL; two whole chunks are readable at `p`.
#[inline(always)]
unsafe fn two_chunks(p: *const u8, job: &Job) -> (Ymm, Ymm) {
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
/// and so on up ([`nodes_up`]). (No closures around intrinsics: a closure does not inherit
/// the caller's instruction sets here, and they became calls.)
///
/// # Safety
/// AVX-512F and VL.
#[inline(always)]
unsafe fn eight_up(p: [__m256i; 8], key: &[u32; 8], flags: u32, top_flags: u32, split: bool) -> [__m128i; 2] {
    // SAFETY (whole body): as the caller guarantees.
    unsafe {
        let order = eight_order(p);
        if split {
            let m = order.map(|(a, b)| Pair([Ymm(a), Ymm(b)]));
            up(m, key, flags, top_flags, split, |v: Pair<Ymm>| (v.0[0], v.0[1]))
        } else {
            let m = [join_256(order[0]), join_256(order[1]), join_256(order[2]), join_256(order[3])];
            up(m, key, flags, top_flags, split, |v| halves_512(v))
        }
    }
}

/// [`eight_up`] on AVX2 alone: the four parents on two chains of 256-bit rows ([`Y2`]).
///
/// # Safety
/// AVX2.
#[inline(always)]
unsafe fn eight_up_avx2(p: [__m256i; 8], key: &[u32; 8], flags: u32, top_flags: u32) -> [__m128i; 2] {
    // SAFETY: as the caller guarantees.
    unsafe {
        let m = eight_order(p).map(|(a, b)| Pair([Y2(a), Y2(b)]));
        up(m, key, flags, top_flags, true, |v: Pair<Y2>| (v.0[0], v.0[1]))
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
unsafe fn eight_order(p: [__m256i; 8]) -> [(__m256i, __m256i); 4] {
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
    use super::*;
    use crate::core::compress::{compress_portable, cv_words, words_to_cv};
    use crate::core::constants::flags::{CHUNK_END, CHUNK_START, KEYED_HASH, ROOT};

    /// A parent node's compression on the portable code: the reference for `subtree_top`.
    fn parent_portable(l: &Cv, r: &Cv, key: &[u32; 8], flags: u32) -> Cv {
        let block: [u32; 16] = core::array::from_fn(|i| if i < 8 { cv_words(l)[i] } else { cv_words(r)[i - 8] });
        let out = compress_portable(key, &block, BLOCK_LEN as u32, 0, flags | PARENT);
        words_to_cv(&core::array::from_fn(|i| out[i]))
    }

    /// Whether this CPU runs the AVX-512VL rows and the AVX2 rows; each one it lacks is
    /// reported missing from `test`.
    fn row_sets(test: &str) -> (bool, bool) {
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

    /// The AVX2 templates of the row form's rounds (`y2_rounds` on one chain of two inputs,
    /// `y2_pair_rounds` on two chains) give the rows the compiled generic rounds give, for rows
    /// and blocks of varied bits in every word.
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
            let mut rows = || -> [Y2; 4] {
                let w: [[u32; 8]; 4] = core::array::from_fn(|_| core::array::from_fn(|_| next()));
                // SAFETY: AVX2 (this function's).
                core::array::from_fn(|i| unsafe { Y2::load(&w[i]) })
            };
            let words = |v: __m256i| -> [u32; 8] {
                let mut w = [0u32; 8];
                // SAFETY: AVX; 32 bytes written into `w`.
                unsafe { _mm256_storeu_si256(w.as_mut_ptr() as *mut __m256i, v) };
                w
            };
            for _ in 0..64 {
                let (state, block) = (rows().map(Multi), rows().map(Multi));
                let (mut want, mut got) = (state, state);
                // SAFETY: AVX2.
                unsafe {
                    all_rounds(&mut want, block);
                    y2_rounds(&mut got, block);
                }
                assert_eq!(got.map(|r| words(r.0 .0)), want.map(|r| words(r.0 .0)), "one chain");

                let (other, other_block) = (rows(), rows());
                let pair = |a: [Multi<Y2>; 4], b: [Y2; 4]| -> [Multi<Pair<Y2>>; 4] {
                    core::array::from_fn(|i| Multi(Pair([a[i].0, b[i]])))
                };
                let (state, block) = (pair(state, other), pair(block, other_block));
                let (mut want, mut got) = (state, state);
                // SAFETY: AVX2.
                unsafe {
                    all_rounds(&mut want, block);
                    y2_pair_rounds(&mut got, block);
                }
                let all = |r: [Multi<Pair<Y2>>; 4]| r.map(|r| r.0 .0.map(|h| words(h.0)));
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
                    let got = unsafe { subtree_top(&nodes[..n], &key, flags, top_flags, split) };
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
                    let got = unsafe { chunks_top(data, first_chunk, &key, flags, top_flags, split) };
                    assert_eq!(got, want, "{what}, split {split}");
                }
                if avx2 {
                    let got = unsafe { chunks_top_avx2(data, first_chunk, &key, flags, top_flags) };
                    assert_eq!(got, want, "{what}, AVX2");
                }
            }
        }
    }

    #[test]
    fn quads_match_rows_one_input_at_a_time() {
        let (vl, avx2) = row_sets("quads_match_rows_one_input_at_a_time");
        use super::super::lanes::hash_rows;
        let data: Vec<u8> = (0..16 * 1024u32).map(|i| (i * 131 + (i >> 7)) as u8).collect();
        let key: [u32; 8] = core::array::from_fn(|i| 0x0123_4567u32.rotate_left(3 * i as u32));
        for (blocks, last_block_len) in [(1, 0), (1, 1), (1, 64), (2, 63), (3, 64), (16, 64), (16, 17)] {
            for count in 1..=9 {
                for (counter, increment_counter) in [(0, false), ((1 << 32) - 2, true), (7, true)] {
                    let job = Job {
                        key: &key,
                        counter,
                        increment_counter,
                        flags: 0x10,
                        flags_start: 0x01,
                        flags_end: 0x02,
                        last_block_len,
                        prefetch: false,
                    };
                    let stride = blocks * BLOCK_LEN + 5;
                    let input = &data[..(count - 1) * stride + (blocks - 1) * BLOCK_LEN + last_block_len];
                    let mut want = vec![[0u8; 32]; count];
                    hash_rows(input, stride, blocks, &job, &mut want);
                    let what = format!("{count} inputs of {blocks} blocks, last {last_block_len}, counter {counter}");
                    for split in [false, true].into_iter().filter(|_| vl) {
                        let mut got = vec![[0u8; 32]; count];
                        unsafe { hash_quads(input, stride, blocks, &job, &mut got, split) };
                        assert_eq!(got, want, "{what}, split {split}");
                    }
                    if avx2 {
                        let mut got = vec![[0u8; 32]; count];
                        unsafe { hash_quads_avx2(input, stride, blocks, &job, &mut got) };
                        assert_eq!(got, want, "{what}, AVX2 rows");
                    }
                }
            }
        }
    }
}
