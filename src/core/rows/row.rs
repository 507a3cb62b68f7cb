//! One block's state rows in 128-bit vectors: the [`Row`] trait, the in-lane message moves
//! ([`InLane`], [`first_msg`], [`permute_msg`]) and the row types of each instruction set
//! (`__m128i` for SSE4.1, [`A2`] for AVX2, [`Vl`] for AVX-512VL).

#[cfg(target_arch = "x86")]
use core::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::*;

use crate::core::compress::Word;

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
pub(super) trait Row1: Row {
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
/// does not join the parts back into a rotation (faster: docs/performance.md). Not for `__m128i`
/// itself: the SSE4.1 lane kernel, which is bound by its instruction count and not by latency, would pay an
/// addition more per G.
impl Word for A2 {
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        A2(self.0.add(o.0))
    }
    /// Through [`opaque128`]: LLVM may not reassociate these rows' `xor`s. Left free, it could
    /// turn the join of b's two parts and the `xor` with c that follows, `(shl ^ shr) ^ c`,
    /// into `(c ^ shr) ^ shl`, two `xor`s on the chain from c to b instead of one; whether it
    /// did depended on code elsewhere in the crate, and these rows were slower when it did
    /// (docs/performance.md). The fence is here rather than on the join in the generic `g`, which would
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
