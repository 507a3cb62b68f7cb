//! The single-block compression with the state's four rows in four 128-bit vectors (x86): the
//! form that is fastest for one block at a time (the last chunk, parents merged by the tree, XOF blocks and
//! every input of one chunk or less), where the lane kernels have nothing to run side by side.
//! The quarter-round is `compress::g`, the same code the lane kernels use; only the diagonal
//! shuffles are particular to this form. It is latency-bound, so AVX-512VL's one-instruction
//! rotations are worth a second instantiation. The CPU backend's forms on two and four inputs
//! (`Multi`, in `backends/cpu/quads.rs`) are the same rounds on 256- and 512-bit rows: they build
//! on [`Row`] and [`all_rounds`] here.

#[cfg(target_arch = "x86")]
use core::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::*;

use super::compress::{g, seven_rounds, Word};
use super::constants::{BLOCK_LEN, IV, MSG_SCHEDULE};

/// For each round, the message words in the order the row form consumes them: the columns' first
/// and second words, then the diagonals' first and second words. Diagonal i is computed in lane
/// (i + 1) % 4 (see [`round`]), so the diagonal words are rotated by one lane.
pub(crate) const ROW_ORDER: [[u32; 16]; 7] = {
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

/// A permute's index vector, aligned for a 512-bit load.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub(crate) struct Idx(pub(crate) [u32; 16]);

/// How the row form on one or more inputs (one per 128-bit lane) gathers row `j` of round `r` from the block held as quarters (`Q[k]` holds words
/// 4k..4k+3 of input i in lane i): a two-source permute of quarters `src[0]` and `src[1]`, then,
/// for words in a third or fourth quarter, a masked permute from each. Every index stays within its
/// 128-bit lane, so the inputs never mix.
#[derive(Clone, Copy)]
pub(crate) struct Gather {
    pub(crate) src: [usize; 4],
    pub(crate) sources: usize,
    pub(crate) idx: [Idx; 3],
    pub(crate) mask: [u16; 2],
}

/// [`Gather`] for every row of every round, from [`ROW_ORDER`], for vectors of `inputs` 128-bit
/// lanes (a permute's second source starts at index `4 * inputs`).
pub(crate) const fn gather_table(inputs: usize) -> [[Gather; 4]; 7] {
    let empty = Gather { src: [0; 4], sources: 0, idx: [Idx([0; 16]); 3], mask: [0; 2] };
    let second = 4 * inputs as u32;
    let mut out = [[empty; 4]; 7];
    let mut r = 0;
    while r < 7 {
        let mut j = 0;
        while j < 4 {
            let mut g = empty;
            // The quarters this row reads, in order of first use.
            let mut t = 0;
            while t < 4 {
                let q = ROW_ORDER[r][4 * j + t] as usize / 4;
                let mut seen = false;
                let mut k = 0;
                while k < g.sources {
                    seen |= g.src[k] == q;
                    k += 1;
                }
                if !seen {
                    g.src[g.sources] = q;
                    g.sources += 1;
                }
                t += 1;
            }
            if g.sources == 1 {
                g.src[1] = g.src[0];
            }
            // Word t of lane i: from quarter src[s], word w % 4 of the same lane.
            let mut t = 0;
            while t < 4 {
                let w = ROW_ORDER[r][4 * j + t] as usize;
                let mut s = 0;
                while g.src[s] != w / 4 {
                    s += 1;
                }
                let mut lane = 0;
                while lane < inputs {
                    let at = 4 * lane + t;
                    let word = (4 * lane + w % 4) as u32;
                    if s < 2 {
                        g.idx[0].0[at] = word + second * s as u32;
                    } else {
                        g.idx[s - 1].0[at] = word + second;
                        g.mask[s - 2] |= 1 << at;
                    }
                    lane += 1;
                }
                t += 1;
            }
            out[r][j] = g;
            j += 1;
        }
        r += 1;
    }
    out
}

/// A row of the state, with the way its instruction set gathers each round's message words.
pub(crate) trait Row: Word {
    /// The block (or blocks) as the instruction set holds it.
    type Msg: Copy;
    /// Round `r`'s message words as four rows, in [`ROW_ORDER`].
    ///
    /// # Safety
    /// The CPU must support the instruction set.
    unsafe fn round_msg(msg: &Self::Msg, r: usize) -> [Self; 4];
    /// The row's words permuted within each 128-bit lane (a `pshufd` immediate).
    ///
    /// # Safety
    /// As for `round_msg`.
    unsafe fn shuffle<const IMM: i32>(self) -> Self;
}

/// A row of one input in a 128-bit vector. SSE4.1 inserts each round's message words one by one;
/// AVX2 and AVX-512 keep the block in wide registers and permute it, which keeps the shuffle port
/// free for the diagonal rotations.
trait Row1: Row {
    fn wrap(x: __m128i) -> Self;
    fn unwrap(self) -> __m128i;
    /// # Safety
    /// The CPU must support the instruction set.
    unsafe fn load_msg(m: &[u32; 16]) -> Self::Msg;
}

/// [`Row::shuffle`] for a [`Row1`].
macro_rules! shuffle_128 {
    () => {
        #[inline(always)]
        unsafe fn shuffle<const IMM: i32>(self) -> Self {
            // SAFETY: SSE2, part of every instruction set here.
            Self::wrap(unsafe { _mm_shuffle_epi32::<IMM>(self.unwrap()) })
        }
    };
}

impl Row1 for __m128i {
    #[inline(always)]
    fn wrap(x: __m128i) -> Self {
        x
    }
    #[inline(always)]
    fn unwrap(self) -> __m128i {
        self
    }
    #[inline(always)]
    unsafe fn load_msg(m: &[u32; 16]) -> [u32; 16] {
        *m
    }
}

impl Row for __m128i {
    type Msg = [u32; 16];
    shuffle_128!();
    #[inline(always)]
    unsafe fn round_msg(m: &[u32; 16], r: usize) -> [Self; 4] {
        let o = &ROW_ORDER[r];
        let w = |i: usize| m[o[i] as usize] as i32;
        // SAFETY: SSE2. (No closure around the intrinsics: a closure would be compiled without
        // the caller's instruction set and called, not inlined.)
        unsafe {
            [
                _mm_set_epi32(w(3), w(2), w(1), w(0)),
                _mm_set_epi32(w(7), w(6), w(5), w(4)),
                _mm_set_epi32(w(11), w(10), w(9), w(8)),
                _mm_set_epi32(w(15), w(14), w(13), w(12)),
            ]
        }
    }
}

/// A row in an AVX2 function: the SSE4.1 arithmetic (VEX-encoded), message words permuted in
/// 256-bit registers.
#[derive(Clone, Copy)]
struct A2(__m128i);

/// A row in an AVX-512 function: one-instruction rotations (`vprord`), message words gathered
/// from the block's quarters.
#[derive(Clone, Copy)]
struct Vl(__m128i);

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

/// `Word` for a wrapper around a vector type, every operation done by the vector type; a
/// generic wrapper names its parameter and bound after the type (`Multi<V>, V: Wide`).
macro_rules! delegate_word {
    ($t:ty $(, $g:ident: $bound:path)?) => {
        impl$(<$g: $bound>)? Word for $t {
            $crate::core::rows::delegate_add_xor!();
            #[inline(always)]
            fn rotr16(self) -> Self {
                Self(self.0.rotr16())
            }
            #[inline(always)]
            fn rotr12(self) -> Self {
                Self(self.0.rotr12())
            }
            #[inline(always)]
            fn rotr8(self) -> Self {
                Self(self.0.rotr8())
            }
            #[inline(always)]
            fn rotr7(self) -> Self {
                Self(self.0.rotr7())
            }
        }
    };
}
pub(crate) use {delegate_add_xor, delegate_word};

delegate_word!(A2);

impl Word for Vl {
    delegate_add_xor!();
    #[inline(always)]
    fn rotr16(self) -> Self {
        // SAFETY: only reached from `compress_avx512`, compiled with AVX-512F and VL.
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

impl Row1 for A2 {
    #[inline(always)]
    fn wrap(x: __m128i) -> Self {
        A2(x)
    }
    #[inline(always)]
    fn unwrap(self) -> __m128i {
        self.0
    }
    #[inline(always)]
    unsafe fn load_msg(m: &[u32; 16]) -> [__m256i; 2] {
        // SAFETY: AVX2; 16 words are readable.
        unsafe {
            [_mm256_loadu_si256(m.as_ptr() as *const __m256i), _mm256_loadu_si256(m.as_ptr().add(8) as *const __m256i)]
        }
    }
}

impl Row for A2 {
    type Msg = [__m256i; 2];
    shuffle_128!();
    #[inline(always)]
    unsafe fn round_msg(m: &[__m256i; 2], r: usize) -> [Self; 4] {
        // SAFETY: AVX2.
        unsafe {
            let a = pick8(m, &ROW_ORDER[r][..8]);
            let b = pick8(m, &ROW_ORDER[r][8..]);
            [
                A2(_mm256_castsi256_si128(a)),
                A2(_mm256_extracti128_si256::<1>(a)),
                A2(_mm256_castsi256_si128(b)),
                A2(_mm256_extracti128_si256::<1>(b)),
            ]
        }
    }
}

/// Eight of the block's sixteen words (held as two 256-bit halves), lane i holding word `idx[i]`.
#[inline(always)]
unsafe fn pick8(m: &[__m256i; 2], idx: &[u32]) -> __m256i {
    debug_assert!(idx.len() >= 8);
    // SAFETY: AVX2; `idx` holds eight words.
    unsafe {
        let idx = _mm256_loadu_si256(idx.as_ptr() as *const __m256i);
        let from_lo = _mm256_permutevar8x32_epi32(m[0], idx);
        let from_hi = _mm256_permutevar8x32_epi32(m[1], idx);
        // Lanes whose word index is 8 or more come from the high half.
        let high = _mm256_cmpgt_epi32(idx, _mm256_set1_epi32(7));
        _mm256_blendv_epi8(from_lo, from_hi, high)
    }
}

/// [`Gather`] for one input.
const GATHER_1: [[Gather; 4]; 7] = gather_table(1);

impl Row1 for Vl {
    #[inline(always)]
    fn wrap(x: __m128i) -> Self {
        Vl(x)
    }
    #[inline(always)]
    fn unwrap(self) -> __m128i {
        self.0
    }
    #[inline(always)]
    unsafe fn load_msg(m: &[u32; 16]) -> [__m128i; 4] {
        // SAFETY: SSE2; 16 words are readable.
        unsafe { core::array::from_fn(|k| _mm_loadu_si128(m.as_ptr().add(4 * k) as *const __m128i)) }
    }
}

/// The block as its four quarters in 128-bit registers, each round's rows gathered with 128-bit
/// two-source permutes ([`Gather`], one to three per row): no 512-bit instruction at all. On the
/// H200 machine's Xeon (Sapphire Rapids) a 512-bit instruction in flight takes port 1 from the
/// 128-bit rows, which are latency-bound and short of ports then: with the block in one 512-bit
/// register and one `vpermd` per round (four instructions a round on port 5, against seven
/// here), a 1 KiB input ran at 0.90x upstream's speed on one thread, with quarters at 1.04x
/// (medians of ten runs of 15 interleaved rounds); on the 2-core machine's EPYC 1.01x and
/// 1.05x. Two 256-bit halves and two `vpermt2d` a round ran at 0.81x on the Xeon.
impl Row for Vl {
    type Msg = [__m128i; 4];
    shuffle_128!();
    #[inline(always)]
    unsafe fn round_msg(m: &[__m128i; 4], r: usize) -> [Self; 4] {
        // SAFETY: AVX-512F and VL. (No closures around the intrinsics: see `Row for __m128i`.)
        unsafe {
            let mut rows = [Vl(m[0]); 4];
            for (out, g) in rows.iter_mut().zip(&GATHER_1[r]) {
                let idx = |n: usize| _mm_load_si128(g.idx[n].0.as_ptr() as *const __m128i);
                let mut x = _mm_permutex2var_epi32(m[g.src[0]], idx(0), m[g.src[1]]);
                if g.sources > 2 {
                    x = _mm_mask_permutex2var_epi32(x, g.mask[0] as u8, idx(1), m[g.src[2]]);
                }
                if g.sources > 3 {
                    x = _mm_mask_permutex2var_epi32(x, g.mask[1] as u8, idx(2), m[g.src[3]]);
                }
                *out = Vl(x);
            }
            rows
        }
    }
}

/// A [`Vl`] row whose block is held in two 256-bit registers and gathered with two-source
/// permutes (`vpermt2d`, two a round), with no 512-bit instruction at all: for a single
/// compression (a 64-byte input, a last block, a parent), where every round's gathers are ready
/// at once and compete with the first rounds for port 5. Measured on the 2-core machine, one
/// thread, 64-byte input: 0.91x upstream's speed with the block in one 512-bit register, 0.98x
/// with this one, 0.90x with quarters ([`Vl`]'s own form). In a chunk's loop of blocks quarters
/// are faster (see `Row for Vl`), so [`compress_blocks_avx512`] uses them.
#[derive(Clone, Copy)]
struct VlHalves(Vl);

delegate_word!(VlHalves);

impl Row1 for VlHalves {
    #[inline(always)]
    fn wrap(x: __m128i) -> Self {
        VlHalves(Vl(x))
    }
    #[inline(always)]
    fn unwrap(self) -> __m128i {
        self.0 .0
    }
    #[inline(always)]
    unsafe fn load_msg(m: &[u32; 16]) -> [__m256i; 2] {
        // SAFETY: AVX-512VL implies the AVX2 that A2's load needs.
        unsafe { A2::load_msg(m) }
    }
}

impl Row for VlHalves {
    type Msg = [__m256i; 2];
    shuffle_128!();
    #[inline(always)]
    unsafe fn round_msg(m: &[__m256i; 2], r: usize) -> [Self; 4] {
        // SAFETY: AVX-512F and VL. Word indices 0-7 pick from the low half, 8-15 from the high.
        unsafe {
            let idx = ROW_ORDER[r].as_ptr() as *const __m256i;
            let a = _mm256_permutex2var_epi32(m[0], _mm256_loadu_si256(idx), m[1]);
            let b = _mm256_permutex2var_epi32(m[0], _mm256_loadu_si256(idx.add(1)), m[1]);
            let row = |x: __m128i| VlHalves(Vl(x));
            [
                row(_mm256_castsi256_si128(a)),
                row(_mm256_extracti128_si256::<1>(a)),
                row(_mm256_castsi256_si128(b)),
                row(_mm256_extracti128_si256::<1>(b)),
            ]
        }
    }
}

/// One round: columns, then diagonals, then the rows rotated back. For the diagonals, rows 0, 2
/// and 3 are rotated (by -1, +1 and +2 lanes) and row 1 is left in place, so that lane j holds
/// diagonal (j + 3) % 4: G(v[j-1], v[4+j], v[8+(j+1)], v[12+(j+2)]) (indices mod 4). Row 1 is the
/// one each G finishes with, so leaving it alone keeps the shuffles off the dependency chain.
#[inline(always)]
unsafe fn round<R: Row>(rows: &mut [R; 4], msg: &R::Msg, r: usize) {
    // SAFETY (whole body): as for the callers.
    unsafe {
        let [cx, cy, dx, dy] = R::round_msg(msg, r);
        g(rows, [[0, 1, 2, 3]], [cx], [cy]);
        rows[0] = rows[0].shuffle::<0b10_01_00_11>();
        rows[2] = rows[2].shuffle::<0b00_11_10_01>();
        rows[3] = rows[3].shuffle::<0b01_00_11_10>();
        g(rows, [[0, 1, 2, 3]], [dx], [dy]);
        rows[0] = rows[0].shuffle::<0b00_11_10_01>();
        rows[2] = rows[2].shuffle::<0b10_01_00_11>();
        rows[3] = rows[3].shuffle::<0b01_00_11_10>();
    }
}

/// The seven rounds.
#[inline(always)]
pub(crate) unsafe fn all_rounds<R: Row>(rows: &mut [R; 4], msg: &R::Msg) {
    // SAFETY: as for the callers.
    seven_rounds!(|r| unsafe { round(rows, msg, r) });
}

#[inline(always)]
unsafe fn compress_rows<R: Row1>(cv: &[u32; 8], msg: R::Msg, block_len: u32, counter: u64, flags: u32) -> [u32; 16] {
    // SAFETY (whole body): the caller's instruction set covers SSE4.1; loads and stores are
    // unaligned ones on arrays of the right length.
    unsafe {
        let cv_lo = _mm_loadu_si128(cv.as_ptr() as *const __m128i);
        let cv_hi = _mm_loadu_si128(cv.as_ptr().add(4) as *const __m128i);
        let out = compress_regs::<R>(cv_lo, cv_hi, msg, block_len, counter, flags);
        let mut words = [0u32; 16];
        for (i, v) in out.iter().enumerate() {
            _mm_storeu_si128(words.as_mut_ptr().add(4 * i) as *mut __m128i, *v);
        }
        words
    }
}

/// The compression from and to registers: the CV's two halves in, the 16 output words as four
/// rows out (the first two are the output CV).
#[inline(always)]
unsafe fn compress_regs<R: Row1>(
    cv_lo: __m128i,
    cv_hi: __m128i,
    msg: R::Msg,
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
        all_rounds(&mut rows, &msg);
        let [r0, r1, r2, r3] = rows.map(R::unwrap);
        [_mm_xor_si128(r0, r2), _mm_xor_si128(r1, r3), _mm_xor_si128(r2, cv_lo), _mm_xor_si128(r3, cv_hi)]
    }
}

/// The compression on SSE4.1 rows; the same result as `compress::compress_portable`.
///
/// # Safety
/// The CPU must support SSE4.1.
#[target_feature(enable = "sse4.1")]
pub(crate) unsafe fn compress_sse41(
    cv: &[u32; 8],
    m: &[u32; 16],
    block_len: u32,
    counter: u64,
    flags: u32,
) -> [u32; 16] {
    // SAFETY: SSE4.1 is enabled here.
    unsafe { compress_rows::<__m128i>(cv, __m128i::load_msg(m), block_len, counter, flags) }
}

/// The compression on rows in an AVX2 function; the same result as `compress::compress_portable`.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn compress_avx2(
    cv: &[u32; 8],
    m: &[u32; 16],
    block_len: u32,
    counter: u64,
    flags: u32,
) -> [u32; 16] {
    // SAFETY: AVX2 (and so SSE4.1) is enabled here.
    unsafe { compress_rows::<A2>(cv, A2::load_msg(m), block_len, counter, flags) }
}

/// The compression on AVX-512VL rows; the same result as `compress::compress_portable`.
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512VL.
#[target_feature(enable = "avx512f,avx512vl")]
pub(crate) unsafe fn compress_avx512(
    cv: &[u32; 8],
    m: &[u32; 16],
    block_len: u32,
    counter: u64,
    flags: u32,
) -> [u32; 16] {
    // SAFETY: AVX-512F and VL (and so SSE4.1) are enabled here.
    unsafe { compress_rows::<VlHalves>(cv, VlHalves::load_msg(m), block_len, counter, flags) }
}

/// The compression of a block given as its bytes (`block.len()` of at most 64 is the block
/// length; the rest of the block is zeros) on AVX-512VL rows ([`VlHalves`]). The bytes are read
/// with two masked 256-bit loads straight from where they lie: no padded copy is made, and no load
/// waits on the stores that such a copy would take (for a 64-byte input, that wait was a third of
/// the hash's time).
///
/// # Safety
/// The CPU must support AVX-512F, AVX-512VL and AVX-512BW.
#[target_feature(enable = "avx512f,avx512vl,avx512bw")]
pub(crate) unsafe fn compress_bytes_avx512(cv: &[u32; 8], block: &[u8], counter: u64, flags: u32) -> [u32; 16] {
    debug_assert!(block.len() <= 64);
    // SAFETY: the instruction sets are enabled here; the mask covers `block.len()` bytes, and
    // masked-off bytes are neither read nor able to fault.
    unsafe {
        let mask = if block.is_empty() { 0 } else { u64::MAX >> (64 - block.len()) };
        let lo = _mm256_maskz_loadu_epi8(mask as u32, block.as_ptr() as *const i8);
        let hi = _mm256_maskz_loadu_epi8((mask >> 32) as u32, block.as_ptr().wrapping_add(32) as *const i8);
        compress_rows::<VlHalves>(cv, [lo, hi], block.len() as u32, counter, flags)
    }
}

/// A parent node's compression on AVX-512VL rows ([`VlHalves`]): the block is the two child
/// CVs, each read with one 256-bit load from where it lies. No block is assembled in memory and
/// read back, and a CV that a kernel has just written with one 256-bit store reaches the load
/// whole (a load that spans several smaller stores waits for them to reach the cache).
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512VL.
#[target_feature(enable = "avx512f,avx512vl")]
pub(crate) unsafe fn compress_parent_avx512(
    key: &[u32; 8],
    left: &[u8; 32],
    right: &[u8; 32],
    flags: u32,
) -> [u32; 16] {
    // SAFETY: the instruction sets are enabled here; each load reads one 32-byte CV.
    unsafe {
        let l = _mm256_loadu_si256(left.as_ptr() as *const __m256i);
        let r = _mm256_loadu_si256(right.as_ptr() as *const __m256i);
        compress_rows::<VlHalves>(key, [l, r], BLOCK_LEN as u32, 0, flags)
    }
}

/// The full blocks of one chunk (`blocks.len()` a multiple of 64) compressed in turn into `cv` on
/// AVX-512VL rows, the CV kept in registers from block to block; `first_flags` is added to the
/// first block's flags. One call per chunk instead of one per block: no CV round trip through
/// memory and no instruction-set check per block.
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512VL.
#[target_feature(enable = "avx512f,avx512vl")]
pub(crate) unsafe fn compress_blocks_avx512(
    cv: &mut [u32; 8],
    blocks: &[u8],
    counter: u64,
    flags: u32,
    first_flags: u32,
) {
    debug_assert!(blocks.len().is_multiple_of(64));
    // SAFETY: the instruction sets are enabled here; every load reads 64 bytes of `blocks` or
    // 16 bytes of `cv`.
    unsafe {
        let mut lo = _mm_loadu_si128(cv.as_ptr() as *const __m128i);
        let mut hi = _mm_loadu_si128(cv.as_ptr().add(4) as *const __m128i);
        let mut f = flags | first_flags;
        for block in blocks.chunks_exact(64) {
            let q = |k: usize| _mm_loadu_si128(block.as_ptr().add(16 * k) as *const __m128i);
            let [a, b, _, _] = compress_regs::<Vl>(lo, hi, [q(0), q(1), q(2), q(3)], 64, counter, f);
            (lo, hi, f) = (a, b, flags);
        }
        _mm_storeu_si128(cv.as_mut_ptr() as *mut __m128i, lo);
        _mm_storeu_si128(cv.as_mut_ptr().add(4) as *mut __m128i, hi);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::compress::{block_words, compress_portable};
    use crate::core::platform::avx512_rows_supported;

    #[test]
    fn both_row_forms_match_portable() {
        let cv: [u32; 8] = core::array::from_fn(|i| 0x0101_0101 * i as u32 + 7);
        let block: [u32; 16] = core::array::from_fn(|i| 0x9E37_79B9u32.wrapping_mul(i as u32 + 1));
        let vl = std::is_x86_feature_detected!("avx512vl") && std::is_x86_feature_detected!("avx512f");
        for (item, present) in [
            ("simd:sse41", std::is_x86_feature_detected!("sse4.1")),
            ("simd:avx2", std::is_x86_feature_detected!("avx2")),
            ("avx512vl", vl),
            ("rows:avx512", avx512_rows_supported()),
        ] {
            if !present {
                crate::core::expect::missing(item, &format!("both_row_forms_match_portable for {item}"));
            }
        }
        for (len, counter, f) in [(64, 0u64, 0u32), (3, u64::MAX - 1, 11), (17, 1 << 40, 64)] {
            let expected = compress_portable(&cv, &block, len, counter, f);
            if std::is_x86_feature_detected!("sse4.1") {
                assert_eq!(unsafe { compress_sse41(&cv, &block, len, counter, f) }, expected);
            }
            if std::is_x86_feature_detected!("avx2") {
                assert_eq!(unsafe { compress_avx2(&cv, &block, len, counter, f) }, expected);
            }
            if vl {
                assert_eq!(unsafe { compress_avx512(&cv, &block, len, counter, f) }, expected);
            }
            if avx512_rows_supported() {
                // The block's first `len` bytes; the compression sees the rest as zeros.
                let mut bytes = [0u8; 64];
                for (b, w) in bytes.chunks_exact_mut(4).zip(block) {
                    b.copy_from_slice(&w.to_le_bytes());
                }
                let mut padded = [0u8; 64];
                padded[..len as usize].copy_from_slice(&bytes[..len as usize]);
                let expected = compress_portable(&cv, &block_words(&padded), len, counter, f);
                let got = unsafe { compress_bytes_avx512(&cv, &bytes[..len as usize], counter, f) };
                assert_eq!(got, expected, "len {len}");
            }
        }
    }

    #[test]
    fn parent_from_cvs_matches_portable() {
        if !(std::is_x86_feature_detected!("avx512vl") && std::is_x86_feature_detected!("avx512f")) {
            crate::core::expect::missing("avx512vl", "parent_from_cvs_matches_portable");
            return;
        }
        let key: [u32; 8] = core::array::from_fn(|i| 0x0F1E_2D3Cu32.rotate_left(5 * i as u32));
        let left: [u8; 32] = core::array::from_fn(|i| (i * 7 + 1) as u8);
        let right: [u8; 32] = core::array::from_fn(|i| (255 - i * 3) as u8);
        let mut block = [0u8; 64];
        block[..32].copy_from_slice(&left);
        block[32..].copy_from_slice(&right);
        for flags in [0x04, 0x04 | 0x08, 0x04 | 0x10, 0x04 | 0x08 | 0x40] {
            let expected = compress_portable(&key, &block_words(&block), 64, 0, flags);
            assert_eq!(unsafe { compress_parent_avx512(&key, &left, &right, flags) }, expected, "flags {flags:#x}");
        }
    }

    #[test]
    fn blocks_in_registers_match_block_by_block() {
        if !(std::is_x86_feature_detected!("avx512vl") && std::is_x86_feature_detected!("avx512f")) {
            crate::core::expect::missing("avx512vl", "blocks_in_registers_match_block_by_block");
            return;
        }
        let data: Vec<u8> = (0..1024u32).map(|i| (i * 31 + (i >> 5)) as u8).collect();
        let key: [u32; 8] = core::array::from_fn(|i| 0x1234_5678u32.rotate_left(i as u32));
        for blocks in 0..=16 {
            let (counter, flags, first) = (blocks as u64 * (1 << 33) + 5, 0x10, 0x01);
            let mut expected = key;
            for (b, block) in data[..64 * blocks].chunks_exact(64).enumerate() {
                let words = block_words(block.try_into().unwrap());
                let f = flags | if b == 0 { first } else { 0 };
                expected = core::array::from_fn(|i| compress_portable(&expected, &words, 64, counter, f)[i]);
            }
            let mut got = key;
            unsafe { compress_blocks_avx512(&mut got, &data[..64 * blocks], counter, flags, first) };
            assert_eq!(got, expected, "{blocks} blocks");
        }
    }
}
