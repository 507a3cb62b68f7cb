//! The single-block compression with the state's four rows in four 128-bit vectors (x86): the
//! form that is fastest for one block at a time (the last chunk, parents merged by the tree, XOF blocks and
//! every input of one chunk or less), where the lane kernels have nothing to run side by side.
//! The quarter-round is `compress::g`, the same code the lane kernels use; only the diagonal
//! shuffles are particular to this form. It is latency-bound, so AVX-512VL's one-instruction
//! rotations are worth a second instantiation. The CPU backend's forms on two and four inputs
//! (`MultiRow`, in `backends/cpu/multi_rows/`) are the same rounds on 256- and 512-bit rows: they build
//! on [`Row`] and [`all_rounds`] here.

#[cfg(target_arch = "x86")]
use core::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::*;

use super::compress::{g_carry, seven_rounds, Word};
use super::constants::{IV, ROW_FROM_DIAGONALS, ROW_TO_DIAGONALS};

/// A `pshufd`/`shufps` immediate: output word i takes source word `wi` (for `shufps`, words 0
/// and 1 from the first source, 2 and 3 from the second).
pub(crate) const fn sel(w0: i32, w1: i32, w2: i32, w3: i32) -> i32 {
    w0 | w1 << 2 | w2 << 4 | w3 << 6
}

/// Word moves within each 128-bit lane (the same on 128-, 256- and 512-bit vectors): what moving
/// the message rows from one round to the next takes ([`permute_msg`]).
pub(crate) trait InLane: Copy {
    /// Word i takes this vector's word `IMM >> 2i & 3` (`pshufd`).
    ///
    /// # Safety
    /// The CPU must support the instruction set (for every method of this trait).
    unsafe fn pshufd<const IMM: i32>(self) -> Self;
    /// Words 0 and 1 from `self`, 2 and 3 from `hi`, picked by `IMM` as for `pshufd` (`shufps`).
    ///
    /// # Safety
    /// As for `pshufd`.
    unsafe fn shufps<const IMM: i32>(self, hi: Self) -> Self;
    /// Words `self[0], o[0], self[1], o[1]` (`punpckldq`).
    ///
    /// # Safety
    /// As for `pshufd`.
    unsafe fn unpacklo(self, o: Self) -> Self;
    /// Word i from `o` where bit i of `MASK` is set, else from `self`.
    ///
    /// # Safety
    /// As for `pshufd`.
    unsafe fn blend<const MASK: i32>(self, o: Self) -> Self;
}

/// `opaque*(x)` is `x`, through an empty `asm!` that LLVM cannot see into: the in-lane moves
/// of [`permute_msg`] stay the instructions written, one each. Left to itself, LLVM merges each
/// chain of them into one two-source permute (`vpermt2d`: three cycles on port 5 on Intel, where
/// each of these takes one), which is what the in-place moves are there to avoid.
macro_rules! opaque {
    ($name:ident, $t:ty, $class:ident, $feature:literal) => {
        /// See [`opaque`].
        ///
        /// # Safety
        /// The CPU must support the instruction set named.
        #[inline]
        #[target_feature(enable = $feature)]
        pub(crate) unsafe fn $name(mut x: $t) -> $t {
            // SAFETY: an empty instruction string: `x` is left as it is.
            unsafe { core::arch::asm!("/* {0} */", inout($class) x, options(pure, nomem, nostack, preserves_flags)) };
            x
        }
    };
}
opaque!(opaque128, __m128i, xmm_reg, "sse2");
opaque!(opaque256, __m256i, ymm_reg, "avx");
opaque!(opaque512, __m512i, zmm_reg, "avx512f");

/// Round 0's message rows from the block's quarters (`q[k]` holds words 4k..4k+3), in the order
/// the row form consumes them: the columns' first words, their second words, then the
/// diagonals' first and second words, diagonal i in lane (i + 1) % 4 (see [`round`]).
#[inline(always)]
pub(crate) unsafe fn first_msg<L: InLane>(q: [L; 4]) -> [L; 4] {
    // SAFETY: as the caller guarantees.
    unsafe {
        let diag_x = q[2].shufps::<{ sel(0, 2, 0, 2) }>(q[3]);
        let diag_y = q[2].shufps::<{ sel(1, 3, 1, 3) }>(q[3]);
        [
            q[0].shufps::<{ sel(0, 2, 0, 2) }>(q[1]),
            q[0].shufps::<{ sel(1, 3, 1, 3) }>(q[1]),
            diag_x.pshufd::<{ sel(3, 0, 1, 2) }>(),
            diag_y.pshufd::<{ sel(3, 0, 1, 2) }>(),
        ]
    }
}

/// Round r + 1's message rows from round r's, both in the order of [`first_msg`]: BLAKE3's
/// message permutation done in place on the row form, by eleven in-lane moves. Derived from the
/// permutation: with round r's rows a, b, c, d, round r + 1's are the words below (`a1` is word 1
/// of row a). Rows 1-3 are each one `shufps` of two vectors that hold its words (blends or a
/// `punpckldq` of two rows); row 0 is a `shufps` of rows a and b, then a `pshufd`. The test
/// `message_moved_in_place_follows_the_schedule` checks every word of every round.
#[inline(always)]
pub(crate) unsafe fn permute_msg<L: InLane>(m: [L; 4]) -> [L; 4] {
    let [a, b, c, d] = m;
    // SAFETY: as the caller guarantees.
    unsafe {
        // [a1, a2, b1, b3] -> [a1, b1, b3, a2]
        let r0 = a.shufps::<{ sel(1, 2, 1, 3) }>(b).pshufd::<{ sel(0, 2, 3, 1) }>();
        // [a0, a1, c2, a3] and [a0, a1, a2, d3] -> [a3, c2, a0, d3]
        let r1 = a.blend::<0b0100>(c).shufps::<{ sel(3, 2, 0, 3) }>(a.blend::<0b1000>(d));
        // [d0, b0, d1, b1] and [c0, d1, c2, c3] -> [d0, b0, c3, d1]
        let r2 = d.unpacklo(b).shufps::<{ sel(0, 1, 3, 1) }>(c.blend::<0b0010>(d));
        // [c0, c1, d2, c3] and [c0, b1, b2, b3] -> [c1, d2, b2, c0]
        let r3 = c.blend::<0b0100>(d).shufps::<{ sel(1, 2, 2, 0) }>(b.blend::<0b0001>(c));
        [r0, r1, r2, r3]
    }
}

/// A row of the state: the arithmetic ([`Word`]), the diagonal rotations and the message moves
/// ([`InLane`]), within each 128-bit lane.
pub(crate) trait Row: Word + InLane {
    /// The row's words permuted within each 128-bit lane (a `pshufd` immediate), for the
    /// diagonal rotations (no `opaque` fence: there is nothing to merge them with).
    ///
    /// # Safety
    /// The CPU must support the instruction set.
    unsafe fn shuffle<const IMM: i32>(self) -> Self;
}

/// A row of one input in a 128-bit vector: SSE4.1, AVX2 (VEX encoding) or AVX-512VL (`vprord`).
trait Row1: Row {
    fn wrap(x: __m128i) -> Self;
    fn unwrap(self) -> __m128i;
}

/// [`Row1`], [`Row`] and [`InLane`] for a row type around `__m128i` (`$wrap` makes one from a
/// vector, `$unwrap` takes it back), on SSE4.1 instructions (VEX-encoded where the caller has
/// AVX).
macro_rules! row_128 {
    ($t:ty, $wrap:expr, $unwrap:expr) => {
        impl Row1 for $t {
            #[inline(always)]
            fn wrap(x: __m128i) -> Self {
                $wrap(x)
            }
            #[inline(always)]
            fn unwrap(self) -> __m128i {
                $unwrap(self)
            }
        }

        impl Row for $t {
            #[inline(always)]
            unsafe fn shuffle<const IMM: i32>(self) -> Self {
                // SAFETY: SSE2, part of every instruction set here.
                Self::wrap(unsafe { _mm_shuffle_epi32::<IMM>(self.unwrap()) })
            }
        }

        impl InLane for $t {
            #[inline(always)]
            unsafe fn pshufd<const IMM: i32>(self) -> Self {
                // SAFETY: SSE2.
                Self::wrap(unsafe { opaque128(_mm_shuffle_epi32::<IMM>(self.unwrap())) })
            }
            #[inline(always)]
            unsafe fn shufps<const IMM: i32>(self, hi: Self) -> Self {
                let (lo, hi) = (self.unwrap(), hi.unwrap());
                // SAFETY: SSE.
                Self::wrap(unsafe {
                    opaque128(_mm_castps_si128(_mm_shuffle_ps::<IMM>(_mm_castsi128_ps(lo), _mm_castsi128_ps(hi))))
                })
            }
            #[inline(always)]
            unsafe fn unpacklo(self, o: Self) -> Self {
                // SAFETY: SSE2.
                Self::wrap(unsafe { opaque128(_mm_unpacklo_epi32(self.unwrap(), o.unwrap())) })
            }
            #[inline(always)]
            unsafe fn blend<const MASK: i32>(self, o: Self) -> Self {
                let (a, b) = (self.unwrap(), o.unwrap());
                // SAFETY: SSE4.1, as the caller guarantees.
                Self::wrap(unsafe {
                    opaque128(_mm_castps_si128(_mm_blend_ps::<MASK>(_mm_castsi128_ps(a), _mm_castsi128_ps(b))))
                })
            }
        }
    };
}

row_128!(__m128i, |x| x, |x| x);
row_128!(A2, A2, |x: A2| x.0);
row_128!(Vl, Vl, |x: Vl| x.0);

/// A row in an AVX2 function: the SSE4.1 arithmetic and moves, VEX-encoded.
#[derive(Clone, Copy)]
pub(crate) struct A2(pub(crate) __m128i);

/// A row in an AVX-512 function: one-instruction rotations (`vprord`). Every single-block
/// compression on AVX-512 runs on it: a chunk's blocks ([`compress_blocks_avx512`]), a last
/// block, a parent, a 64-byte input. It has no 512-bit instruction at all: on Intel's AVX-512
/// CPUs a 512-bit instruction in flight takes a port from these rows, which are latency-bound
/// (docs/performance.md). The message moves between rounds in place ([`permute_msg`]), cheaper
/// than gathering each round's words with two-source permutes, on every instruction set.
#[derive(Clone, Copy)]
pub(crate) struct Vl(pub(crate) __m128i);

/// The `Word` additions and xor of a wrapper around a vector type, done by the vector type.
macro_rules! delegate_add_xor {
    () => {
        #[inline(always)]
        fn add(self, o: Self) -> Self {
            Self(self.0.add(o.0))
        }
        #[inline(always)]
        fn xor(self, o: Self) -> Self {
            Self(self.0.xor(o.0))
        }
    };
}

/// The four `Word` rotations of a wrapper around a vector type, done by the vector type (the
/// second arm writes one method per name given).
macro_rules! delegate_rotations {
    () => {
        $crate::core::rows::delegate_rotations!(rotr16, rotr12, rotr8, rotr7);
    };
    ($($rot:ident),*) => {
        $(
            #[inline(always)]
            fn $rot(self) -> Self {
                Self(self.0.$rot())
            }
        )*
    };
}

/// `Word` for a wrapper around a vector type, every operation done by the vector type; a
/// generic wrapper names its parameter and bound after the type (`MultiRow<V>, V: RowVector`).
macro_rules! delegate_word {
    ($t:ty $(, $g:ident: $bound:path)?) => {
        impl$(<$g: $bound>)? Word for $t {
            $crate::core::rows::delegate_add_xor!();
            $crate::core::rows::delegate_rotations!();
            #[inline(always)]
            fn rotr12_parts(self) -> (Self, Self) {
                let (x, y) = self.0.rotr12_parts();
                (Self(x), Self(y))
            }
            #[inline(always)]
            fn rotr7_parts(self) -> (Self, Self) {
                let (x, y) = self.0.rotr7_parts();
                (Self(x), Self(y))
            }
        }
    };
}
pub(crate) use {delegate_add_xor, delegate_rotations, delegate_word};

/// AVX2's rows: SSE4.1's arithmetic, with the 12- and 7-bit rotations in two parts, the two
/// shifts (see `compress::g_carry`). The right shift goes through [`opaque128`], so that LLVM
/// does not join the parts back into a rotation: a 1 KiB input about 7% faster on Zen 3
/// (docs/performance.md). Not for `__m128i` itself: the
/// SSE4.1 lane kernel, which is bound by its instruction count and not by latency, would pay an
/// addition more per G.
impl Word for A2 {
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        A2(self.0.add(o.0))
    }
    /// Through [`opaque128`]: LLVM may not reassociate these rows' `xor`s. Left free, it could
    /// turn the join of b's two parts and the `xor` with c that follows, `(shl ^ shr) ^ c`,
    /// into `(c ^ shr) ^ shl`, two `xor`s on the chain from c to b instead of one; whether it
    /// did depended on code elsewhere in the crate, and one chunk on these rows was 7% slower
    /// when it did. The fence is here rather than on the join in the generic `g`, which would
    /// change the 8-lane kernel's code too.
    #[inline(always)]
    fn xor(self, o: Self) -> Self {
        // SAFETY: only reached from functions compiled with AVX2.
        A2(unsafe { opaque128(_mm_xor_si128(self.0, o.0)) })
    }
    delegate_rotations!();
    #[inline(always)]
    fn rotr12_parts(self) -> (Self, Self) {
        // SAFETY: only reached from functions compiled with AVX2.
        unsafe { (A2(_mm_slli_epi32::<20>(self.0)), A2(opaque128(_mm_srli_epi32::<12>(self.0)))) }
    }
    #[inline(always)]
    fn rotr7_parts(self) -> (Self, Self) {
        // SAFETY: as above.
        unsafe { (A2(_mm_slli_epi32::<25>(self.0)), A2(opaque128(_mm_srli_epi32::<7>(self.0)))) }
    }
}

impl Word for Vl {
    delegate_add_xor!();
    #[inline(always)]
    fn rotr16(self) -> Self {
        // SAFETY: only reached from functions compiled with AVX-512F and VL (`compress_avx512`
        // and the CPU backend's small trees, `multi_rows::small_tree`).
        Vl(unsafe { _mm_ror_epi32::<16>(self.0) })
    }
    #[inline(always)]
    fn rotr12(self) -> Self {
        // SAFETY: as above.
        Vl(unsafe { _mm_ror_epi32::<12>(self.0) })
    }
    #[inline(always)]
    fn rotr8(self) -> Self {
        // SAFETY: as above.
        Vl(unsafe { _mm_ror_epi32::<8>(self.0) })
    }
    #[inline(always)]
    fn rotr7(self) -> Self {
        // SAFETY: as above.
        Vl(unsafe { _mm_ror_epi32::<7>(self.0) })
    }
}

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
const fn rotr_pattern(bytes: usize) -> [u8; 32] {
    let mut p = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        p[i] = ((i % 16) & !3 | (i + bytes) & 3) as u8;
        i += 1;
    }
    p
}

/// [`A2x2`]'s rotations by 16 and 8 bits.
static ROTR16_BYTES: [u8; 32] = rotr_pattern(2);
static ROTR8_BYTES: [u8; 32] = rotr_pattern(1);

/// Each word of `x` rotated by whole bytes with `pattern` ([`rotr_pattern`]), the pattern
/// behind [`opaque256`]: LLVM, seeing it, may make the rotation two shuffles in a row (as on
/// SSE4.1: see `Word for __m128i` in `backends/cpu/lanes/sse41.rs`).
///
/// # Safety
/// AVX2.
#[inline(always)]
unsafe fn rotr_bytes(x: __m256i, pattern: &[u8; 32]) -> __m256i {
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

/// One round: columns, then diagonals, then the rows rotated back. For the diagonals, rows 0, 2
/// and 3 are rotated (by -1, +1 and +2 lanes) and row 1 is left in place, so that lane j holds
/// diagonal (j + 3) % 4: G(v[j-1], v[4+j], v[8+(j+1)], v[12+(j+2)]) (indices mod 4). Row 1 is the
/// one each G finishes with, so leaving it alone keeps the shuffles off the dependency chain.
///
/// Row b's rotations are carried in two parts from G to G (`parts`, see [`g_carry`]).
#[inline(always)]
unsafe fn round<R: Row>(rows: &mut [R; 4], parts: &mut [R; 1], [cx, cy, dx, dy]: [R; 4]) {
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
unsafe fn quarters(m: &[u32; 16]) -> [__m128i; 4] {
    // SAFETY: 16 words are readable.
    unsafe { core::array::from_fn(|k| _mm_loadu_si128(m.as_ptr().add(4 * k) as *const __m128i)) }
}

/// A block given as two 256-bit halves (two child CVs, or a short block loaded masked) as its
/// four quarters.
///
/// # Safety
/// AVX2.
#[inline(always)]
unsafe fn halves_to_quarters(lo: __m256i, hi: __m256i) -> [__m128i; 4] {
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
unsafe fn compress_rows<R: Row1>(
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
unsafe fn compress_regs<R: Row1>(
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
unsafe fn padded_quarters(block: &[u8]) -> [__m128i; 4] {
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
unsafe fn masked_quarters(block: &[u8]) -> [__m128i; 4] {
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
/// instruction-set check per block (about 9% of a 1 KiB input's time).
///
/// # Safety
/// `R`'s instruction set.
#[inline(always)]
unsafe fn blocks_in_registers<R: Row1>(
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
            /// last block made a CV round trip through memory (about 3% of a 64-byte input's
            /// time).
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

/// Two inputs' rows in a 256-bit vector, one input in each 128-bit lane: what
/// [`chunk_and_tail`] runs a whole chunk and a partial one on, with the single-input rows
/// (`One`) the whole chunk goes on alone with.
trait TwoInputRows: Row {
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
unsafe fn chunk_and_tail<R: TwoInputRows>(
    key: &[u32; 8],
    chunk: &[u8],
    tail: &[u8],
    counter: u64,
    flags: u32,
) -> [[u8; 32]; 2] {
    use super::constants::flags::{CHUNK_END, CHUNK_START};
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
unsafe fn quarters_at(p: *const u8) -> [__m128i; 4] {
    // SAFETY: as the caller guarantees.
    unsafe { core::array::from_fn(|k| _mm_loadu_si128(p.add(16 * k) as *const __m128i)) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::compress::{block_words, compress_portable};
    use crate::core::constants::MSG_SCHEDULE;
    use crate::core::platform::avx512_rows_supported;

    /// For each round, the message words in the order the row form consumes them: the columns' first
    /// and second words, then the diagonals' first and second words. Diagonal i is computed in lane
    /// (i + 1) % 4 (see `round`), so the diagonal words are rotated by one lane.
    const ROW_ORDER: [[u32; 16]; 7] = {
        let mut o = [[0u32; 16]; 7];
        let mut r = 0;
        while r < 7 {
            let mut i = 0;
            while i < 4 {
                o[r][i] = MSG_SCHEDULE[r][2 * i] as u32;
                o[r][4 + i] = MSG_SCHEDULE[r][2 * i + 1] as u32;
                let d = (i + 3) % 4;
                o[r][8 + i] = MSG_SCHEDULE[r][8 + 2 * d] as u32;
                o[r][12 + i] = MSG_SCHEDULE[r][8 + 2 * d + 1] as u32;
                i += 1;
            }
            r += 1;
        }
        o
    };

    /// Four words standing for one 128-bit lane: [`InLane`] on plain arrays.
    #[derive(Clone, Copy, PartialEq, Debug)]
    struct Model([u32; 4]);

    impl InLane for Model {
        unsafe fn pshufd<const IMM: i32>(self) -> Self {
            Model(core::array::from_fn(|i| self.0[(IMM >> (2 * i) & 3) as usize]))
        }
        unsafe fn shufps<const IMM: i32>(self, hi: Self) -> Self {
            Model(core::array::from_fn(|i| [self, hi][i / 2].0[(IMM >> (2 * i) & 3) as usize]))
        }
        unsafe fn unpacklo(self, o: Self) -> Self {
            Model([self.0[0], o.0[0], self.0[1], o.0[1]])
        }
        unsafe fn blend<const MASK: i32>(self, o: Self) -> Self {
            Model(core::array::from_fn(|i| if MASK >> i & 1 == 1 { o.0[i] } else { self.0[i] }))
        }
    }

    /// The in-place message moves give every round's rows in [`ROW_ORDER`], which is built from
    /// the scalar schedule: each word is its own index, so every position of every round is
    /// checked.
    #[test]
    fn message_moved_in_place_follows_the_schedule() {
        let quarters: [Model; 4] = core::array::from_fn(|k| Model(core::array::from_fn(|i| (4 * k + i) as u32)));
        // SAFETY: plain arrays.
        let mut rows = unsafe { first_msg(quarters) };
        for (r, order) in ROW_ORDER.iter().enumerate() {
            if r > 0 {
                // SAFETY: plain arrays.
                rows = unsafe { permute_msg(rows) };
            }
            let want: [Model; 4] = core::array::from_fn(|j| Model(core::array::from_fn(|i| order[4 * j + i])));
            assert_eq!(rows, want, "round {r}");
        }
    }

    /// Runs `$check!(module)` for each row form this CPU has (`sse41`, `avx2`, `avx512`), and
    /// reports each one it lacks as missing from test `$test`.
    macro_rules! each_form {
        ($test:literal, $check:ident) => {{
            let has = |f: &str| match f {
                "sse4.1" => std::is_x86_feature_detected!("sse4.1"),
                "avx2" => std::is_x86_feature_detected!("avx2"),
                _ => avx512_rows_supported(),
            };
            for (item, feature) in [("simd:sse41", "sse4.1"), ("simd:avx2", "avx2"), ("rows:avx512", "avx512")] {
                if !has(feature) {
                    crate::core::expect::missing(item, &format!("{} for {item}", $test));
                }
            }
            if has("sse4.1") {
                $check!(sse41);
            }
            if has("avx2") {
                $check!(avx2);
            }
            if has("avx512") {
                $check!(avx512);
            }
        }};
    }

    /// The portable compression of the first `len` bytes of `bytes`, zero-padded.
    fn portable_bytes(cv: &[u32; 8], bytes: &[u8], counter: u64, flags: u32) -> [u32; 16] {
        let mut padded = [0u8; 64];
        padded[..bytes.len()].copy_from_slice(bytes);
        compress_portable(cv, &block_words(&padded), bytes.len() as u32, counter, flags)
    }

    #[test]
    fn every_row_form_matches_portable() {
        let cv: [u32; 8] = core::array::from_fn(|i| 0x0101_0101 * i as u32 + 7);
        let block: [u32; 16] = core::array::from_fn(|i| 0x9E37_79B9u32.wrapping_mul(i as u32 + 1));
        let mut bytes = [0u8; 64];
        for (b, w) in bytes.chunks_exact_mut(4).zip(block) {
            b.copy_from_slice(&w.to_le_bytes());
        }
        macro_rules! check {
            ($isa:ident) => {
                for (len, counter, f) in [(64, 0u64, 0u32), (3, u64::MAX - 1, 11), (17, 1 << 40, 64), (0, 9, 3)] {
                    let expected = compress_portable(&cv, &block, len, counter, f);
                    assert_eq!(unsafe { $isa::compress(&cv, &block, len, counter, f) }, expected, stringify!($isa));
                    // The block's first `len` bytes; the compression sees the rest as zeros.
                    let expected = portable_bytes(&cv, &bytes[..len as usize], counter, f);
                    let got = unsafe { $isa::bytes(&cv, &bytes[..len as usize], counter, f) };
                    assert_eq!(got, expected, "{} bytes, {}", len, stringify!($isa));
                }
            };
        }
        each_form!("every_row_form_matches_portable", check);
    }

    #[test]
    fn parent_from_cvs_matches_portable() {
        let key: [u32; 8] = core::array::from_fn(|i| 0x0F1E_2D3Cu32.rotate_left(5 * i as u32));
        let left: [u8; 32] = core::array::from_fn(|i| (i * 7 + 1) as u8);
        let right: [u8; 32] = core::array::from_fn(|i| (255 - i * 3) as u8);
        let mut block = [0u8; 64];
        block[..32].copy_from_slice(&left);
        block[32..].copy_from_slice(&right);
        macro_rules! check {
            ($isa:ident) => {
                for flags in [0x04, 0x04 | 0x08, 0x04 | 0x10, 0x04 | 0x08 | 0x40] {
                    let expected = compress_portable(&key, &block_words(&block), 64, 0, flags);
                    let got = unsafe { $isa::parent(&key, &left, &right, flags) };
                    assert_eq!(got, expected, "flags {flags:#x}, {}", stringify!($isa));
                }
            };
        }
        each_form!("parent_from_cvs_matches_portable", check);
    }

    #[test]
    fn blocks_in_registers_match_block_by_block() {
        let data: Vec<u8> = (0..1024u32).map(|i| (i * 31 + (i >> 5)) as u8).collect();
        let key: [u32; 8] = core::array::from_fn(|i| 0x1234_5678u32.rotate_left(i as u32));
        macro_rules! check {
            ($isa:ident) => {
                for blocks in 0..=16 {
                    let (counter, flags, first) = (blocks as u64 * (1 << 33) + 5, 0x10, 0x01);
                    let mut expected = key;
                    for (b, block) in data[..64 * blocks].chunks_exact(64).enumerate() {
                        let words = block_words(block.try_into().unwrap());
                        let f = flags | if b == 0 { first } else { 0 };
                        expected = core::array::from_fn(|i| compress_portable(&expected, &words, 64, counter, f)[i]);
                    }
                    let mut got = key;
                    unsafe { $isa::blocks(&mut got, &data[..64 * blocks], counter, flags, first) };
                    assert_eq!(got, expected, "{blocks} blocks, {}", stringify!($isa));
                }
            };
        }
        each_form!("blocks_in_registers_match_block_by_block", check);
    }

    /// The CV of one chunk of 1 to 1024 bytes, block by block on the portable compression.
    fn portable_chunk_cv(key: &[u32; 8], chunk: &[u8], counter: u64, flags: u32) -> [u8; 32] {
        use crate::core::constants::flags::{CHUNK_END, CHUNK_START};
        let blocks = chunk.len().div_ceil(64);
        let mut cv = *key;
        for (b, block) in chunk.chunks(64).enumerate() {
            let f = flags | if b == 0 { CHUNK_START } else { 0 } | if b + 1 == blocks { CHUNK_END } else { 0 };
            let out = portable_bytes(&cv, block, counter, f);
            cv = core::array::from_fn(|i| out[i]);
        }
        crate::core::compress::words_to_cv(&cv)
    }

    /// A whole chunk and a partial one side by side: every tail length, at counters whose low
    /// word carries into the high one between the two chunks, in a keyed mode, on each form
    /// this CPU has (AVX2, AVX-512), against the portable compression chunk by chunk.
    #[test]
    fn chunk_and_tail_match_portable() {
        let data: Vec<u8> = (0..2048u32).map(|i| (i * 29 + (i >> 7)) as u8).collect();
        let key: [u32; 8] = core::array::from_fn(|i| 0x6A09_E667u32.rotate_left(7 * i as u32));
        let (chunk, rest) = data.split_at(1024);
        type Kernel = unsafe fn(&[u32; 8], &[u8], &[u8], u64, u32) -> [[u8; 32]; 2];
        let check = |name: &str, f: Kernel| {
            for counter in [0u64, (1 << 32) - 1, 1 << 40] {
                for len in 1..1024 {
                    let tail = &rest[..len];
                    let expected = [
                        portable_chunk_cv(&key, chunk, counter, 0x10),
                        portable_chunk_cv(&key, tail, counter + 1, 0x10),
                    ];
                    // SAFETY: the caller checked the instruction sets; the lengths are in range.
                    let got = unsafe { f(&key, chunk, tail, counter, 0x10) };
                    assert_eq!(got, expected, "{name}: tail of {len} bytes, counter {counter:#x}");
                }
            }
        };
        if std::is_x86_feature_detected!("avx2") {
            check("avx2", chunk_and_tail_avx2);
        } else {
            crate::core::expect::missing("simd:avx2", "chunk_and_tail_match_portable for simd:avx2");
        }
        if avx512_rows_supported() {
            check("avx512", chunk_and_tail_avx512);
        } else {
            crate::core::expect::missing("rows:avx512", "chunk_and_tail_match_portable for rows:avx512");
        }
    }

    #[test]
    fn chunk_end_in_registers_matches_portable() {
        let data: Vec<u8> = (0..1024u32).map(|i| (i * 47 + (i >> 6)) as u8).collect();
        let key: [u32; 8] = core::array::from_fn(|i| 0x9B05_688Cu32.rotate_left(3 * i as u32));
        macro_rules! check {
            ($isa:ident) => {
                for len in [0usize, 1, 31, 32, 33, 63, 64, 65, 127, 128, 129, 500, 1023, 1024] {
                    let body_len = len.saturating_sub(1) / 64 * 64;
                    let (body, last) = data[..len].split_at(body_len);
                    let (counter, flags, first, last_flags) = ((1u64 << 32) + 3, 0x10, 0x01, 0x1A);
                    let mut cv = key;
                    for (b, block) in body.chunks_exact(64).enumerate() {
                        let words = block_words(block.try_into().unwrap());
                        let f = flags | if b == 0 { first } else { 0 };
                        cv = core::array::from_fn(|i| compress_portable(&cv, &words, 64, counter, f)[i]);
                    }
                    let out = portable_bytes(&cv, last, counter, last_flags);
                    let expected: [u32; 8] = core::array::from_fn(|i| out[i]);
                    let got = unsafe { $isa::chunk_end(&key, body, counter, flags, first, last, last_flags) };
                    assert_eq!(got, expected, "{len} bytes, {}", stringify!($isa));
                }
            };
        }
        each_form!("chunk_end_in_registers_matches_portable", check);
    }
}
