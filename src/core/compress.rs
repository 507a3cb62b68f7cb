//! BLAKE3's compression function, written once: the one source of truth for every backend.
//!
//! The quarter-round `g`, the round and the message schedule are written once, generically over
//! [`Word`]. The scalar compression below instantiates them with `u32`; the CPU backend's SIMD
//! kernels instantiate the same code with vectors whose lanes are independent inputs, and the row
//! form (`rows/`) with one block's four rows. Which form a compression runs on is chosen above
//! both, in `platform.rs` (as upstream's `platform.rs` does). The constants live in
//! `constants.rs`, which `build.rs` also reads to write the GPU kernels' preludes, so the shaders
//! in `shaders/` never carry a copy of their own.

#[cfg(test)]
use super::constants::flags;
use super::constants::{BLOCK_LEN, G_COLUMNS, G_DIAGONALS, IV, MSG_SCHEDULE};

/// A chaining value: the 32-byte output of a chunk or a parent node, as little-endian bytes.
pub type Cv = [u8; 32];

/// A 32-bit word, or a vector of independent 32-bit lanes, that the compression can run on.
///
/// Implemented for `u32` (the scalar compression) and for the CPU backend's SIMD vectors.
pub(crate) trait Word: Copy {
    /// Lane-wise wrapping addition.
    fn add(self, o: Self) -> Self;
    /// Lane-wise exclusive or.
    fn xor(self, o: Self) -> Self;
    /// Lane-wise rotation right by 16 bits.
    fn rotr16(self) -> Self;
    /// Lane-wise rotation right by 12 bits.
    fn rotr12(self) -> Self;
    /// Lane-wise rotation right by 8 bits.
    fn rotr8(self) -> Self;
    /// Lane-wise rotation right by 7 bits.
    fn rotr7(self) -> Self;
    /// [`Word::rotr12`] as two parts whose exclusive or (and sum, and or: no bit is set in
    /// both) is the rotation, for `g` to join later ([`g_carry`]). By default the rotation
    /// and zero, which the compiler folds away; a word type whose rotation is two shifts and an
    /// `or`, and whose use is latency-bound, returns the two shifts (see `A2` in `rows/row.rs`).
    #[inline(always)]
    fn rotr12_parts(self) -> (Self, Self) {
        (self.rotr12(), self.xor(self))
    }
    /// [`Word::rotr7`] in two parts, as [`Word::rotr12_parts`].
    #[inline(always)]
    fn rotr7_parts(self) -> (Self, Self) {
        (self.rotr7(), self.xor(self))
    }
}

impl Word for u32 {
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
    #[inline(always)]
    fn xor(self, o: Self) -> Self {
        self ^ o
    }
    #[inline(always)]
    fn rotr16(self) -> Self {
        self.rotate_right(16)
    }
    #[inline(always)]
    fn rotr12(self) -> Self {
        self.rotate_right(12)
    }
    #[inline(always)]
    fn rotr8(self) -> Self {
        self.rotate_right(8)
    }
    #[inline(always)]
    fn rotr7(self) -> Self {
        self.rotate_right(7)
    }
}

/// The quarter-round G, on `K` disjoint quadruples of state words side by side: `q[i]` is the
/// (a, b, c, d) of the i-th, `x[i]` and `y[i]` its message words, and each step is taken for all
/// of them before the next (the four independent G's of a half-round, in step, is the order that
/// measured fastest in the lane kernels). The state is the 16 words (or word vectors) of the
/// lane-parallel kernels, or the four rows of the row-parallel single-block compression (`K` 1,
/// through [`g_carry`]).
#[inline(always)]
pub(crate) fn g<W: Word, const N: usize, const K: usize>(v: &mut [W; N], q: [[usize; 4]; K], x: [W; K], y: [W; K]) {
    // Zero parts to start from (no `map` with a closure here: see `seven_rounds!`).
    let zero = v[q[0][1]].xor(v[q[0][1]]);
    let mut parts = [zero; K];
    g_carry(v, q, x, y, &mut parts);
    for ([_, b, _, _], part) in q.into_iter().zip(parts) {
        v[b] = v[b].xor(part);
    }
}

/// [`g`] with b's rotations left in two parts ([`Word::rotr12_parts`]): quadruple i's b is
/// `v[b] ^ parts[i]`, on the way in and on the way out. Each half adds the two parts into a one
/// after the other and joins them off the dependency chain, which runs from b's rotation into
/// a's addition: with the parts two shifts, that saves the `or` between them and the cycle lost
/// where both shifts become ready at once (docs/performance.md).
/// The row form carries the parts from G to G (its b row is never turned).
#[inline(always)]
pub(crate) fn g_carry<W: Word, const N: usize, const K: usize>(
    v: &mut [W; N],
    q: [[usize; 4]; K],
    x: [W; K],
    y: [W; K],
    parts: &mut [W; K],
) {
    g_half(v, q, x, parts, W::rotr16, W::rotr12_parts);
    g_half(v, q, y, parts, W::rotr8, W::rotr7_parts);
}

/// One half of G: the message word and `b` into `a`, then `d` and `b` mixed and rotated by
/// `rot_d` and `rot_b` (b's rotation left in two parts, see [`g_carry`]).
#[inline(always)]
fn g_half<W: Word, const N: usize, const K: usize>(
    v: &mut [W; N],
    q: [[usize; 4]; K],
    m: [W; K],
    parts: &mut [W; K],
    rot_d: impl Fn(W) -> W,
    rot_b: impl Fn(W) -> (W, W),
) {
    // The message word is added first: it is ready long before v[b], which the previous step has
    // just produced, so the dependency chain is one addition shorter per half.
    for (([a, b, _, _], m), part) in q.into_iter().zip(m).zip(parts.iter()) {
        v[a] = v[a].add(m).add(*part).add(v[b]);
        v[b] = v[b].xor(*part);
    }
    for [a, _, _, d] in q {
        v[d] = rot_d(v[d].xor(v[a]));
    }
    for [_, _, c, d] in q {
        v[c] = v[c].add(v[d]);
    }
    for ([_, b, c, _], part) in q.into_iter().zip(parts.iter_mut()) {
        (v[b], *part) = rot_b(v[b].xor(v[c]));
    }
}

/// Round `r`: four column G's, then four diagonal G's.
#[inline(always)]
fn round<W: Word>(v: &mut [W; 16], m: &[W; 16], r: usize) {
    let s = &MSG_SCHEDULE[r];
    let m = |i: usize| m[s[i]];
    g(v, G_COLUMNS, [m(0), m(2), m(4), m(6)], [m(1), m(3), m(5), m(7)]);
    g(v, G_DIAGONALS, [m(8), m(10), m(12), m(14)], [m(9), m(11), m(13), m(15)]);
}

/// The seven rounds on a prepared state (`v[0..8]` the input CV, `v[8..12]` the IV, then the
/// counter's low and high words, the block length and the flags).
#[inline(always)]
pub(crate) fn rounds<W: Word>(v: &mut [W; 16], m: &[W; 16]) {
    seven_rounds!(|r| round(v, m, r));
}

/// `$body` for each round `$r` from 0 to 6, written out so that every schedule index is a
/// constant. No closure: a closure does not inherit the instruction sets of the function it is
/// in, and where the compiler does not inline it (the tests' lightly optimised builds), every
/// intrinsic in it became a call (the 8-lane kernel then ran many times slower than upstream).
macro_rules! seven_rounds {
    (|$r:ident| $body:expr) => {{
        {
            let $r = 0;
            $body;
        }
        {
            let $r = 1;
            $body;
        }
        {
            let $r = 2;
            $body;
        }
        {
            let $r = 3;
            $body;
        }
        {
            let $r = 4;
            $body;
        }
        {
            let $r = 5;
            $body;
        }
        {
            let $r = 6;
            $body;
        }
    }};
}
pub(crate) use seven_rounds;

/// Reads a block's 16 little-endian message words.
#[inline(always)]
pub(crate) fn block_words(block: &[u8; BLOCK_LEN]) -> [u32; 16] {
    core::array::from_fn(|i| u32::from_le_bytes([block[4 * i], block[4 * i + 1], block[4 * i + 2], block[4 * i + 3]]))
}

/// Reads a chaining value or key's 8 little-endian words.
#[inline(always)]
pub(crate) fn cv_words(cv: &[u8; 32]) -> [u32; 8] {
    core::array::from_fn(|i| u32::from_le_bytes([cv[4 * i], cv[4 * i + 1], cv[4 * i + 2], cv[4 * i + 3]]))
}

/// Writes 8 words as a 32-byte little-endian chaining value.
#[inline(always)]
pub(crate) fn words_to_cv(w: &[u32; 8]) -> Cv {
    let mut out = [0u8; 32];
    for (o, w) in out.chunks_exact_mut(4).zip(w) {
        o.copy_from_slice(&w.to_le_bytes());
    }
    out
}

/// The compression in plain Rust, one word at a time.
#[inline]
pub(crate) fn compress_portable(
    cv: &[u32; 8],
    block: &[u32; 16],
    block_len: u32,
    counter: u64,
    flags: u32,
) -> [u32; 16] {
    let mut v = [
        cv[0],
        cv[1],
        cv[2],
        cv[3],
        cv[4],
        cv[5],
        cv[6],
        cv[7],
        IV[0],
        IV[1],
        IV[2],
        IV[3],
        counter as u32,
        (counter >> 32) as u32,
        block_len,
        flags,
    ];
    rounds(&mut v, block);
    for i in 0..8 {
        v[i] ^= v[i + 8];
        v[i + 8] ^= cv[i];
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_rows_are_permutations_applied_in_turn() {
        use crate::core::constants::MSG_PERMUTATION;
        assert_eq!(MSG_SCHEDULE[0], core::array::from_fn::<usize, 16, _>(|i| i));
        assert_eq!(MSG_SCHEDULE[1], MSG_PERMUTATION);
        // The sixth row as published in the BLAKE3 specification.
        assert_eq!(MSG_SCHEDULE[6], [11, 15, 5, 0, 1, 9, 8, 6, 14, 10, 2, 12, 3, 4, 7, 13]);
    }

    #[test]
    fn one_block_root_matches_upstream() {
        use crate::core::platform::compress_cv;
        // "abc" as a single chunk: CHUNK_START | CHUNK_END | ROOT.
        let mut block = [0u8; 64];
        block[..3].copy_from_slice(b"abc");
        let f = flags::CHUNK_START | flags::CHUNK_END | flags::ROOT;
        let out = words_to_cv(&compress_cv(&IV, &block_words(&block), 3, 0, f));
        assert_eq!(out, *blake3::hash(b"abc").as_bytes());
    }
}
