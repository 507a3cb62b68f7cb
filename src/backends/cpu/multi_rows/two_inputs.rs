//! Two inputs' rows in one 256-bit vector as a [`RowVector`]: [`Ymm`] (AVX-512VL) and
//! [`TwoRowsAvx2`] (AVX2 only, with the 8-lane kernel's rotations and its own rounds).

#[cfg(target_arch = "x86")]
use core::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::*;

use super::super::lanes::avx2::LanesAvx2;
#[cfg(target_arch = "x86_64")]
use super::super::lanes::Aligned;
use super::vector::*;
use crate::core::compress::{Cv, Word};
#[cfg(target_arch = "x86_64")]
use crate::core::constants::ROUNDS;
use crate::core::rows::Ymm;

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
pub(super) struct TwoRowsAvx2(pub(super) __m256i);

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
pub(super) fn template_message<const CHAINS: usize>(
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
pub(super) unsafe fn rounds_avx2_one_chain(rows: &mut [MultiRow<TwoRowsAvx2>; 4], q: [MultiRow<TwoRowsAvx2>; 4]) {
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
            r16 = in(reg) super::super::lanes::avx2::ROT16.as_ptr(),
            r8 = in(reg) super::super::lanes::avx2::ROT8.as_ptr(),
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
pub(super) unsafe fn rounds_avx2_two_chains(
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
            r16 = in(reg) super::super::lanes::avx2::ROT16.as_ptr(),
            r8 = in(reg) super::super::lanes::avx2::ROT8.as_ptr(),
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
