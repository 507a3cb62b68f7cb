//! The CPU kernel, written once: `N` independent inputs hashed side by side, each state word held
//! in one SIMD vector whose lanes are the inputs (BLAKE3 specification, section 5.3).
//!
//! Each instruction set provides a [`Lanes`] vector type (the portable one is plain `u32`, one
//! lane; the others in `sse41.rs`, `avx2.rs` and `avx512.rs` here, 4, 8 and 16 lanes);
//! [`hash_group`] is the same code for all of them. A group is `N` equal-length inputs laid
//! out at a fixed stride: consecutive chunks of one input, consecutive CV pairs (parents), or
//! consecutive messages of up to one chunk each (whose last block may be partial).

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
pub(super) mod avx2;
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
pub(super) mod avx512;
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
pub(super) mod sse41;

use crate::core::compress::{block_words, rounds, words_to_cv, Cv, Word};
use crate::core::constants::{flags, BLOCK_LEN, CHUNK_LEN, IV};
use crate::core::platform::{compress_blocks, compress_bytes};

/// A vector of `N` 32-bit lanes that the compression runs on, one input per lane.
pub(crate) trait Lanes: Word {
    /// Lanes per vector.
    const N: usize;
    /// Every lane set to `x`.
    ///
    /// # Safety
    /// The CPU must support the vector type's instruction set.
    unsafe fn splat(x: u32) -> Self;
    /// Lane i set to `words[i]`; `words` has at least `N` entries.
    ///
    /// # Safety
    /// As for `splat`.
    unsafe fn load(words: &[u32]) -> Self;
    /// Writes lane i to `out[i]`; `out` has at least `N` entries.
    ///
    /// # Safety
    /// As for `splat`.
    unsafe fn store(self, out: &mut [u32]);
    /// The 16 message words of the block at `input + lane * stride` for each lane, transposed so
    /// that vector `w` holds word `w` of every lane's block. Lanes from `valid` on repeat the
    /// last valid lane's block (their results are discarded), so a partial group reads nothing
    /// past its inputs. Each lane also prefetches as `PREFETCH` says (a [`Prefetch`] as `u8`;
    /// [`prefetch_address`]).
    ///
    /// # Safety
    /// As for `splat`, and `input + lane * stride .. + 64` must be readable for every lane below
    /// `valid` (1 to `N`).
    unsafe fn load_msg<const PREFETCH: u8>(input: *const u8, stride: usize, valid: usize) -> [Self; 16];
    /// The seven rounds on state `v` with message `m`: by default [`rounds`].
    ///
    /// # Safety
    /// As for `splat`.
    #[inline(always)]
    unsafe fn rounds(v: &mut [Self; 16], m: &[Self; 16]) {
        rounds(v, m)
    }
    /// Writes lane i's chaining value (word w in `h[w]`) to `out[i]` for every lane below
    /// `valid`. By default through a stack array, word by word; a vector type may transpose the
    /// words in registers and write each CV whole (see `store_cvs_words`).
    ///
    /// # Safety
    /// As for `splat`; `out` has at least `valid <= N` entries.
    #[inline(always)]
    unsafe fn store_cvs(h: [Self; 8], out: &mut [Cv], valid: usize) {
        // SAFETY: as the caller guarantees.
        unsafe { store_cvs_words(h, out, valid) }
    }
}

impl Lanes for u32 {
    const N: usize = 1;
    #[inline(always)]
    unsafe fn splat(x: u32) -> Self {
        x
    }
    #[inline(always)]
    unsafe fn load(words: &[u32]) -> Self {
        words[0]
    }
    #[inline(always)]
    unsafe fn store(self, out: &mut [u32]) {
        out[0] = self;
    }
    #[inline(always)]
    unsafe fn load_msg<const PREFETCH: u8>(input: *const u8, _stride: usize, _valid: usize) -> [Self; 16] {
        // SAFETY: the caller guarantees 64 readable bytes at `input`.
        let block = unsafe { &*(input as *const [u8; BLOCK_LEN]) };
        block_words(block)
    }
}

/// What a group hashes: the key words, the counter of lane 0 (and whether lane i adds i to it),
/// the mode flags, the extra flags of the first and last block, how many bytes of the last
/// block are input (`BLOCK_LEN` for inputs of full blocks; less, down to 0 for an empty message,
/// when each input is a whole message whose last block is partial), and how the kernels
/// prefetch (see [`prefetch_for`]).
#[derive(Clone, Copy)]
pub(crate) struct Job<'a> {
    pub key: &'a [u32; 8],
    pub counter: u64,
    pub increment_counter: bool,
    pub flags: u32,
    pub flags_start: u32,
    pub flags_end: u32,
    pub last_block_len: usize,
    pub prefetch: Prefetch,
}

/// Everything but the key words, which may be secret.
impl std::fmt::Debug for Job<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("counter", &self.counter)
            .field("increment_counter", &self.increment_counter)
            .field("flags", &self.flags)
            .field("flags_start", &self.flags_start)
            .field("flags_end", &self.flags_end)
            .field("last_block_len", &self.last_block_len)
            .field("prefetch", &self.prefetch)
            .finish_non_exhaustive()
    }
}

impl<'a> Job<'a> {
    /// The counter of input `i`: the job's, plus `i` when each input counts on from it.
    #[inline(always)]
    pub(crate) fn input_counter(&self, i: usize) -> u64 {
        self.counter + if self.increment_counter { i as u64 } else { 0 }
    }

    /// Consecutive whole chunks, the first with index `first_chunk`, under `key` with `flags`;
    /// `prefetch` as in [`Job`].
    #[inline(always)]
    pub(crate) fn chunks(key: &'a [u32; 8], first_chunk: u64, flags: u32, prefetch: Prefetch) -> Self {
        Job {
            key,
            counter: first_chunk,
            increment_counter: true,
            flags,
            flags_start: flags::CHUNK_START,
            flags_end: flags::CHUNK_END,
            last_block_len: BLOCK_LEN,
            prefetch,
        }
    }

    /// The same job for the inputs from input `i` on.
    #[inline(always)]
    pub(crate) fn starting_at(&self, i: usize) -> Self {
        Job { counter: self.input_counter(i), ..*self }
    }

    /// The flags of block `b` of an input of `blocks` blocks.
    #[inline(always)]
    pub(crate) fn block_flags(&self, b: usize, blocks: usize) -> u32 {
        let mut f = self.flags;
        if b == 0 {
            f |= self.flags_start;
        }
        if b + 1 == blocks {
            f |= self.flags_end;
        }
        f
    }
}

/// The address of lane `lane`'s data, lanes past `valid` repeating the last valid one.
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn lane_ptr(input: *const u8, stride: usize, valid: usize, lane: usize) -> *const u8 {
    input.wrapping_add(lane.min(valid - 1) * stride)
}

/// Which blocks a kernel's lanes prefetch as they load each block (x86 only; elsewhere the
/// hardware prefetchers alone). Passed to the kernels as a `u8` const parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Prefetch {
    /// None: parents, whose children were just written, and the small-tree kernels (up to 16
    /// chunks, one group).
    None = 0,
    /// Each lane two blocks ahead in its own input, as upstream does: data in L2 reaches L1
    /// before it is hashed, where without it the message loads waited on L2 (docs/performance.md).
    /// Inputs of two blocks or fewer have nothing ahead and prefetch nothing.
    Near = 1,
    /// Each lane the block that the same lane of the next group will hash, a whole group's time
    /// ahead: data beyond the caches then arrives in time, where `Near` leaves large inputs well
    /// behind (docs/performance.md).
    NextGroup = 2,
}

/// How the kernels prefetch for a request of `len` bytes: [`Prefetch::NextGroup`] from
/// [`prefetch_min_bytes`] on or within [`as_pieces_of_large_input`], [`Prefetch::Near`] below.
#[inline(always)]
pub(crate) fn prefetch_for(len: usize) -> Prefetch {
    if len >= prefetch_min_bytes() || PIECE_OF_LARGE_INPUT.get() {
        Prefetch::NextGroup
    } else {
        Prefetch::Near
    }
}

std::thread_local! {
    /// Set by [`as_pieces_of_large_input`] while its closure runs.
    static PIECE_OF_LARGE_INPUT: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

/// Runs `f`, in which the kernels prefetch the next group whatever a request's length: for
/// callers that hash a large input in pieces smaller than [`prefetch_min_bytes`] (bao's walk),
/// whose bytes come from memory, not from a cache, as a large request's do.
pub(crate) fn as_pieces_of_large_input<R>(f: impl FnOnce() -> R) -> R {
    super::threads::with_flag_set(&PIECE_OF_LARGE_INPUT, f)
}

/// The smallest request whose kernels prefetch the next group: this core's L2 cache where CPUID
/// gives its size ([`crate::core::platform::l2_cache_bytes`]), else [`PREFETCH_MIN_BYTES`].
/// Below L2's size the data of a repeated request sits in L2, a group's time ahead only costs,
/// and [`Prefetch::Near`] is enough; from it on, the next group gains or is even, depending on
/// the CPU (docs/performance.md).
#[inline(always)]
pub(crate) fn prefetch_min_bytes() -> usize {
    use core::sync::atomic::{AtomicUsize, Ordering};
    static MIN: AtomicUsize = AtomicUsize::new(0);
    match MIN.load(Ordering::Relaxed) {
        0 => {
            let min = crate::core::platform::l2_cache_bytes().unwrap_or(PREFETCH_MIN_BYTES);
            MIN.store(min, Ordering::Relaxed);
            min
        }
        min => min,
    }
}

/// The smallest request whose kernels prefetch the next group where the L2 cache's size is not
/// known ([`prefetch_min_bytes`]): larger than current CPUs' per-core L2 caches, so that data that may well sit in a cache already is not fetched a group
/// ahead.
pub(crate) const PREFETCH_MIN_BYTES: usize = 4 << 20;

/// The address that a lane whose block is at `lane_ptr` prefetches under `PREFETCH` (a
/// [`Prefetch`] other than `None`): two blocks on, or `lanes * stride` bytes on (the next
/// group's).
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn prefetch_address<const PREFETCH: u8>(lane_ptr: *const u8, stride: usize, lanes: usize) -> *const i8 {
    let ahead = if PREFETCH == Prefetch::NextGroup as u8 { stride * lanes } else { 2 * BLOCK_LEN };
    lane_ptr.wrapping_add(ahead) as *const i8
}

/// Most lanes of any vector type: the size of the staging buffer for partial last blocks.
const MAX_LANES: usize = 16;

/// Cache-line alignment for the kernel's stack buffers. It also makes the compiler align the
/// kernel's stack frame, so that the vectors it spills there never straddle two cache lines.
#[repr(C, align(64))]
pub(crate) struct Aligned<T>(pub T);

/// Bytes of each input that a group reads: `blocks - 1` full blocks and the last block's
/// `job.last_block_len` bytes.
#[inline(always)]
pub(crate) fn input_span(blocks: usize, job: &Job) -> usize {
    (blocks - 1) * BLOCK_LEN + job.last_block_len
}

/// The state words a compression starts from besides the chaining value and the flags: the IV's
/// first four words, the counter's low and high words and the block length, each as a vector,
/// made once per group.
struct Prelude<V>([V; 7]);

impl<V: Lanes> Prelude<V> {
    /// The IV's words, the counter's low and high words `lo` and `hi`, and a whole block's length.
    ///
    /// # Safety
    /// The CPU must support `V`'s instruction set.
    #[inline(always)]
    unsafe fn new(lo: V, hi: V) -> Self {
        // SAFETY: as the caller guarantees.
        unsafe {
            let iv = |i: usize| V::splat(IV[i]);
            Prelude([iv(0), iv(1), iv(2), iv(3), lo, hi, V::splat(BLOCK_LEN as u32)])
        }
    }
}

/// One compression of every lane, chaining values `h` updated in place.
///
/// # Safety
/// The CPU must support `V`'s instruction set.
#[inline(always)]
unsafe fn compress_lanes<V: Lanes>(h: &mut [V; 8], m: &[V; 16], pre: &Prelude<V>, flags: u32) {
    // SAFETY: the caller guarantees the instruction set.
    unsafe {
        // Read from memory at every compression, not held in registers across the block loop:
        // the rounds need all 32 vector registers of AVX-512 (16 state words and 16 message
        // words), and with the seven prelude vectors live as well the compiler spilled and
        // shuffled state and message words mid-round instead (93 register moves per two blocks
        // in the 16-lane kernel, 64 this way). The loads cost nothing on the vector ports
        // (docs/performance.md).
        let p = |i: usize| core::ptr::read_volatile(&pre.0[i]);
        let mut v =
            [h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], p(0), p(1), p(2), p(3), p(4), p(5), p(6), V::splat(flags)];
        V::rounds(&mut v, m);
        for i in 0..8 {
            h[i] = v[i].xor(v[i + 8]);
        }
    }
}

/// Hashes `valid` (1 to `V::N`) inputs of `blocks` blocks each (`blocks >= 1`; all full but the
/// last, which holds `job.last_block_len` bytes), input i starting at `input + i * stride`, and
/// writes input i's chaining value to `out[i]`. A partial last block is staged, zero-padded,
/// through a buffer on the stack, so no byte past an input's end is ever read.
///
/// # Safety
/// The CPU must support `V`'s instruction set; `input[i * stride .. i * stride + input_span]` (see
/// [`input_span`]) must be readable for every `i < valid` and `out` must have room for `valid` CVs.
#[inline(always)]
pub(crate) unsafe fn hash_group<V: Lanes>(
    input: *const u8,
    stride: usize,
    blocks: usize,
    valid: usize,
    job: &Job,
    out: &mut [Cv],
) {
    // SAFETY: as the caller guarantees.
    unsafe { V::store_cvs(group_cvs::<V>(input, stride, blocks, valid, job), out, valid) }
}

/// [`hash_group`]'s chaining values left in registers, transposed: word w of input i in lane i of
/// vector w (lanes from `valid` on hold the last valid input's).
///
/// # Safety
/// As for [`hash_group`].
#[inline(always)]
pub(crate) unsafe fn group_cvs<V: Lanes>(
    input: *const u8,
    stride: usize,
    blocks: usize,
    valid: usize,
    job: &Job,
) -> [V; 8] {
    debug_assert!(blocks >= 1 && job.last_block_len <= BLOCK_LEN && V::N <= MAX_LANES && valid <= V::N);
    let flags_of = |b: usize| job.block_flags(b, blocks);
    // SAFETY (whole body): the caller guarantees the instruction set and the ranges read.
    unsafe {
        let (lo, hi) = counter_words::<V>(job);
        let mut pre = Prelude::new(lo, hi);
        let mut h = [V::splat(0); 8];
        for (h, k) in h.iter_mut().zip(job.key) {
            *h = V::splat(*k);
        }
        // Full blocks straight from the input, in a loop of their own: a message source chosen
        // per block would keep the message vectors from staying in registers (a slower chunk
        // path: docs/performance.md).
        let full = if job.last_block_len == BLOCK_LEN { blocks } else { blocks - 1 };
        // A whole group of chunks, the case of every large input, with its stride and lane
        // count as constants: each lane's block is then an address with a constant offset from
        // one register. Left variable, the compiler recomputed every lane's address (a multiply
        // and a conditional move each) at every block, for want of registers to keep them in:
        // about 200 scalar instructions a block in the 16-lane kernel, 28 this way
        // (docs/performance.md).
        let whole = valid == V::N && stride == CHUNK_LEN;
        let prefetch = match job.prefetch {
            Prefetch::Near if blocks <= 2 => Prefetch::None,
            p => p,
        };
        const NONE: u8 = Prefetch::None as u8;
        const NEAR: u8 = Prefetch::Near as u8;
        const NEXT: u8 = Prefetch::NextGroup as u8;
        match (prefetch, whole) {
            (Prefetch::None, true) => full_blocks::<V, NONE>(&mut h, &pre, input, CHUNK_LEN, V::N, full, flags_of),
            (Prefetch::None, false) => full_blocks::<V, NONE>(&mut h, &pre, input, stride, valid, full, flags_of),
            (Prefetch::Near, true) => full_blocks::<V, NEAR>(&mut h, &pre, input, CHUNK_LEN, V::N, full, flags_of),
            (Prefetch::Near, false) => full_blocks::<V, NEAR>(&mut h, &pre, input, stride, valid, full, flags_of),
            (Prefetch::NextGroup, true) => full_blocks::<V, NEXT>(&mut h, &pre, input, CHUNK_LEN, V::N, full, flags_of),
            (Prefetch::NextGroup, false) => full_blocks::<V, NEXT>(&mut h, &pre, input, stride, valid, full, flags_of),
        }
        if full < blocks {
            let staged = stage_last_blocks::<MAX_LANES>(input, stride, valid, full, job);
            let m = V::load_msg::<{ Prefetch::None as u8 }>(staged.0.as_ptr().cast(), BLOCK_LEN, valid);
            pre.0[6] = V::splat(job.last_block_len as u32);
            compress_lanes(&mut h, &m, &pre, flags_of(full));
        }
        h
    }
}

/// The parents of `V::N` pairs of chaining values given transposed (`m[w]`, lane j: word w of
/// parent j's block), under `key` with `flags` (PARENT included): each parent's CV, transposed.
///
/// # Safety
/// The CPU must support `V`'s instruction set.
#[cfg_attr(not(any(target_arch = "x86", target_arch = "x86_64")), allow(dead_code))]
#[inline(always)]
pub(crate) unsafe fn parents_transposed<V: Lanes>(m: &[V; 16], key: &[u32; 8], flags: u32) -> [V; 8] {
    // SAFETY (whole body): as the caller guarantees.
    unsafe {
        let pre = Prelude::new(V::splat(0), V::splat(0));
        let mut h = key.map(|k| V::splat(k));
        compress_lanes(&mut h, m, &pre, flags);
        h
    }
}

/// The first `full` blocks of each lane, straight from the input: `hash_group`'s main loop, one
/// per way of prefetching (rather than a test per lane and block).
///
/// # Safety
/// As for [`hash_group`].
#[inline(always)]
unsafe fn full_blocks<V: Lanes, const PREFETCH: u8>(
    h: &mut [V; 8],
    pre: &Prelude<V>,
    input: *const u8,
    stride: usize,
    valid: usize,
    full: usize,
    flags_of: impl Fn(usize) -> u32,
) {
    for b in 0..full {
        // SAFETY: as the caller guarantees.
        unsafe {
            let m = V::load_msg::<PREFETCH>(input.add(b * BLOCK_LEN), stride, valid);
            compress_lanes(h, &m, pre, flags_of(b));
        }
    }
}

/// Each lane's index, for counters that count on from lane 0's.
static LANE_INDEX: [u32; MAX_LANES] = {
    let mut x = [0; MAX_LANES];
    let mut i = 0;
    while i < MAX_LANES {
        x[i] = i as u32;
        i += 1;
    }
    x
};

/// The low and high words of every lane's counter ([`Job::input_counter`]), as vectors. Made in
/// registers (a splat, plus the lane index from a constant) unless a lane's low word wraps:
/// written to memory word by word and loaded as one vector, they made the first compression
/// wait for those stores to reach the cache (a load that spans several stores is not forwarded
/// from them), once per group (docs/performance.md).
///
/// # Safety
/// The CPU must support `V`'s instruction set.
#[inline(always)]
unsafe fn counter_words<V: Lanes>(job: &Job) -> (V, V) {
    let (lo, hi) = (job.counter as u32, (job.counter >> 32) as u32);
    // SAFETY (whole body): as the caller guarantees; `LANE_INDEX` holds `MAX_LANES >= V::N` words.
    unsafe {
        if !job.increment_counter {
            return (V::splat(lo), V::splat(hi));
        }
        if lo.checked_add(V::N as u32 - 1).is_some() {
            return (V::splat(lo).add(V::load(&LANE_INDEX)), V::splat(hi));
        }
        let (mut lo, mut hi) = ([0u32; MAX_LANES], [0u32; MAX_LANES]);
        for lane in 0..V::N {
            let c = job.input_counter(lane);
            lo[lane] = c as u32;
            hi[lane] = (c >> 32) as u32;
        }
        (V::load(&lo), V::load(&hi))
    }
}

/// Block `full` of each of the `valid` inputs at `input + i * stride`, the partial last block of
/// `job.last_block_len` bytes, copied zero-padded into a stack buffer, so that a kernel reads
/// nothing past a message. Rows from `valid` on stay zero.
///
/// # Safety
/// `input + i * stride + full * BLOCK_LEN .. + job.last_block_len` must be readable for every
/// `i < valid <= L`.
#[inline(always)]
pub(crate) unsafe fn stage_last_blocks<const L: usize>(
    input: *const u8,
    stride: usize,
    valid: usize,
    full: usize,
    job: &Job,
) -> Aligned<[[u8; BLOCK_LEN]; L]> {
    let mut staged = Aligned([[0u8; BLOCK_LEN]; L]);
    for (lane, dst) in staged.0[..valid].iter_mut().enumerate() {
        // SAFETY: as the caller guarantees; `dst` has room for a whole block.
        unsafe {
            core::ptr::copy_nonoverlapping(
                input.add(lane * stride + full * BLOCK_LEN),
                dst.as_mut_ptr(),
                job.last_block_len,
            )
        };
    }
    staged
}

/// Writes lane i's chaining value (word w in `h[w]`) to `out[i]` for every lane below `valid`,
/// through a stack array, word by word: [`Lanes::store_cvs`]'s default.
///
/// # Safety
/// The CPU must support `V`'s instruction set; `out` has at least `valid <= V::N` entries.
#[inline(always)]
pub(crate) unsafe fn store_cvs_words<V: Lanes>(h: [V; 8], out: &mut [Cv], valid: usize) {
    let mut words = Aligned([[0u32; MAX_LANES]; 8]);
    for (w, v) in words.0.iter_mut().zip(h) {
        // SAFETY: as the caller guarantees.
        unsafe { v.store(w) };
    }
    for (lane, cv) in out[..valid].iter_mut().enumerate() {
        *cv = words_to_cv(&core::array::from_fn(|w| words.0[w][lane]));
    }
}

/// Hashes all `out.len()` inputs in groups of `V::N`, the last group partial if need be.
///
/// # Safety
/// The CPU must support `V`'s instruction set; `input` holds `out.len()` inputs of `blocks` blocks
/// (the last one `job.last_block_len` bytes long) at stride `stride` bytes.
#[inline(always)]
pub(crate) unsafe fn hash_groups<V: Lanes>(input: &[u8], stride: usize, blocks: usize, job: &Job, out: &mut [Cv]) {
    // SAFETY: as the caller guarantees.
    unsafe { for_groups::<LaneGroup<V>>(input, stride, blocks, job, out) }
}

/// A kernel that hashes up to `N` inputs side by side.
pub(crate) trait Group {
    /// Inputs per group.
    const N: usize;
    /// Hashes `valid` (1 to `N`) inputs of `blocks` blocks each, as [`hash_group`] does.
    ///
    /// # Safety
    /// As for [`hash_group`], with the kernel's instruction set.
    unsafe fn hash(input: *const u8, stride: usize, blocks: usize, valid: usize, job: &Job, out: &mut [Cv]);
}

/// The lane kernel on vectors of type `V` as a [`Group`].
pub(crate) struct LaneGroup<V>(core::marker::PhantomData<V>);

impl<V: Lanes> Group for LaneGroup<V> {
    const N: usize = V::N;
    #[inline(always)]
    unsafe fn hash(input: *const u8, stride: usize, blocks: usize, valid: usize, job: &Job, out: &mut [Cv]) {
        // SAFETY: as the caller guarantees.
        unsafe { hash_group::<V>(input, stride, blocks, valid, job, out) }
    }
}

/// Hashes all `out.len()` inputs with kernel `G`, `G::N` at a time, the last group partial if need
/// be, the job's counter advanced to each group's first input.
///
/// # Safety
/// The CPU must support `G`'s instruction set; `input` holds `out.len()` inputs of `blocks` blocks
/// (the last one `job.last_block_len` bytes long) at stride `stride` bytes.
#[inline(always)]
pub(crate) unsafe fn for_groups<G: Group>(input: &[u8], stride: usize, blocks: usize, job: &Job, out: &mut [Cv]) {
    assert!(out.is_empty() || input.len() >= (out.len() - 1) * stride + input_span(blocks, job));
    let mut done = 0;
    while done < out.len() {
        let valid = (out.len() - done).min(G::N);
        let job = job.starting_at(done);
        // SAFETY: lanes done..done+valid lie inside `input` (asserted above) and `out`.
        unsafe { G::hash(input.as_ptr().add(done * stride), stride, blocks, valid, &job, &mut out[done..]) };
        done += valid;
    }
}

/// Hashes the inputs one at a time in the row form ([`compress_blocks`] and [`compress_bytes`]:
/// one block's four rows side by side in SIMD registers), for the last input that the vector
/// groups leave on a CPU with SIMD: cheaper than the portable kernel's single lane.
pub(crate) fn hash_rows(input: &[u8], stride: usize, blocks: usize, job: &Job, out: &mut [Cv]) {
    let span = input_span(blocks, job);
    let body = (blocks - 1) * BLOCK_LEN;
    for (i, cv_out) in out.iter_mut().enumerate() {
        let data = &input[i * stride..i * stride + span];
        let counter = job.input_counter(i);
        let mut cv = *job.key;
        compress_blocks(&mut cv, &data[..body], counter, job.flags, job.flags_start);
        let first = if blocks == 1 { job.flags_start } else { 0 };
        let state = compress_bytes(&cv, &data[body..], counter, job.flags | first | job.flags_end);
        *cv_out = words_to_cv(&core::array::from_fn(|w| state[w]));
    }
}
