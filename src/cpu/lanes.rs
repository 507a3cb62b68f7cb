//! The CPU kernel, written once: `N` independent inputs hashed side by side, each state word held
//! in one SIMD vector whose lanes are the inputs (BLAKE3 specification, section 5.3).
//!
//! Each instruction set provides a [`Lanes`] vector type (the portable one is plain `u32`, one
//! lane); [`hash_group`] is the same code for all of them. A group is `N` equal-length inputs laid
//! out at a fixed stride: consecutive chunks of one input, consecutive CV pairs (parents), or
//! consecutive messages of up to one chunk each (whose last block may be partial).

use crate::compress::{rounds, words_to_cv, Cv, Word, BLOCK_LEN, IV};

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
    /// that vector `w` holds word `w` of every lane's block.
    ///
    /// # Safety
    /// As for `splat`, and `input + lane * stride .. + 64` must be readable for every lane.
    unsafe fn load_msg(input: *const u8, stride: usize) -> [Self; 16];
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
    unsafe fn load_msg(input: *const u8, _stride: usize) -> [Self; 16] {
        // SAFETY: the caller guarantees 64 readable bytes at `input`.
        let block = unsafe { &*(input as *const [u8; BLOCK_LEN]) };
        crate::compress::block_words(block)
    }
}

/// What a group hashes: the key words, the counter of lane 0 (and whether lane i adds i to it),
/// the mode flags, the extra flags of the first and last block, and how many bytes of the last
/// block are input (`BLOCK_LEN` for inputs of full blocks; less, down to 0 for an empty message,
/// when each input is a whole message whose last block is partial).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Job<'a> {
    pub key: &'a [u32; 8],
    pub counter: u64,
    pub increment_counter: bool,
    pub flags: u32,
    pub flags_start: u32,
    pub flags_end: u32,
    pub last_block_len: usize,
}

/// Most lanes of any vector type: the size of the staging buffer for partial last blocks.
const MAX_LANES: usize = 16;

/// Bytes of each input that a group reads: `blocks - 1` full blocks and the last block's
/// `job.last_block_len` bytes.
#[inline(always)]
pub(crate) fn input_span(blocks: usize, job: &Job) -> usize {
    (blocks - 1) * BLOCK_LEN + job.last_block_len
}

/// One compression of every lane, chaining value `h` updated in place.
///
/// # Safety
/// The CPU must support `V`'s instruction set.
#[inline(always)]
unsafe fn compress_lanes<V: Lanes>(
    h: &mut [V; 8],
    m: &[V; 16],
    counter_lo: V,
    counter_hi: V,
    block_len: usize,
    flags: u32,
) {
    // SAFETY: the caller guarantees the instruction set.
    let splat = |x: u32| unsafe { V::splat(x) };
    let mut v = [
        h[0],
        h[1],
        h[2],
        h[3],
        h[4],
        h[5],
        h[6],
        h[7],
        splat(IV[0]),
        splat(IV[1]),
        splat(IV[2]),
        splat(IV[3]),
        counter_lo,
        counter_hi,
        splat(block_len as u32),
        splat(flags),
    ];
    rounds(&mut v, m);
    for i in 0..8 {
        h[i] = v[i].xor(v[i + 8]);
    }
}

/// Hashes `V::N` inputs of `blocks` blocks each (`blocks >= 1`; all full but the last, which holds
/// `job.last_block_len` bytes), input i starting at `input + i * stride`, and writes input i's
/// chaining value to `out[i]`. A partial last block is staged, zero-padded, through a buffer on
/// the stack, so no byte past an input's end is ever read.
///
/// # Safety
/// The CPU must support `V`'s instruction set; `input[i * stride .. i * stride + input_span]` (see
/// [`input_span`]) must be readable for every lane and `out` must have room for `V::N` CVs.
#[inline(always)]
pub(crate) unsafe fn hash_group<V: Lanes>(
    input: *const u8,
    stride: usize,
    blocks: usize,
    job: &Job,
    out: &mut [Cv],
) {
    debug_assert!(blocks >= 1 && job.last_block_len <= BLOCK_LEN && V::N <= MAX_LANES);
    let mut lo = [0u32; 16];
    let mut hi = [0u32; 16];
    for lane in 0..V::N {
        let c = job.counter
            + if job.increment_counter {
                lane as u64
            } else {
                0
            };
        lo[lane] = c as u32;
        hi[lane] = (c >> 32) as u32;
    }
    // SAFETY (whole body): the caller guarantees the instruction set and the ranges read.
    unsafe {
        let counter_lo = V::load(&lo);
        let counter_hi = V::load(&hi);
        let mut h: [V; 8] = core::array::from_fn(|i| V::splat(job.key[i]));
        let flags_of = |b: usize| {
            let mut f = job.flags;
            if b == 0 {
                f |= job.flags_start;
            }
            if b + 1 == blocks {
                f |= job.flags_end;
            }
            f
        };
        // Full blocks straight from the input, in a loop of their own: a message source chosen
        // per block would keep the message vectors from staying in registers (measured: the
        // chunk path lost 15-30% that way).
        let full = if job.last_block_len == BLOCK_LEN {
            blocks
        } else {
            blocks - 1
        };
        for b in 0..full {
            let m = V::load_msg(input.add(b * BLOCK_LEN), stride);
            compress_lanes(&mut h, &m, counter_lo, counter_hi, BLOCK_LEN, flags_of(b));
        }
        if full < blocks {
            // The partial last block, staged zero-padded so that nothing past a message is read.
            let mut staged = [[0u8; BLOCK_LEN]; MAX_LANES];
            for (lane, dst) in staged[..V::N].iter_mut().enumerate() {
                core::ptr::copy_nonoverlapping(
                    input.add(lane * stride + full * BLOCK_LEN),
                    dst.as_mut_ptr(),
                    job.last_block_len,
                );
            }
            let m = V::load_msg(staged.as_ptr().cast(), BLOCK_LEN);
            let (len, f) = (job.last_block_len, flags_of(full));
            compress_lanes(&mut h, &m, counter_lo, counter_hi, len, f);
        }
        let mut words = [[0u32; 16]; 8];
        for (w, v) in words.iter_mut().zip(h) {
            v.store(w);
        }
        for (lane, cv) in out[..V::N].iter_mut().enumerate() {
            *cv = words_to_cv(&core::array::from_fn(|i| words[i][lane]));
        }
    }
}

/// Hashes as many whole groups of `V::N` inputs as `out.len()` allows; returns how many inputs
/// were hashed (a multiple of `V::N`). The remainder is left for a narrower instruction set.
///
/// # Safety
/// The CPU must support `V`'s instruction set; `input` holds `out.len()` inputs of `blocks` blocks
/// (the last one `job.last_block_len` bytes long) at stride `stride` bytes.
#[inline(always)]
pub(crate) unsafe fn hash_groups<V: Lanes>(
    input: &[u8],
    stride: usize,
    blocks: usize,
    job: &Job,
    out: &mut [Cv],
) -> usize {
    debug_assert!(
        out.is_empty() || input.len() >= (out.len() - 1) * stride + input_span(blocks, job)
    );
    let mut done = 0;
    while out.len() - done >= V::N {
        let counter = job.counter
            + if job.increment_counter {
                done as u64
            } else {
                0
            };
        let job = Job { counter, ..*job };
        // SAFETY: lanes done..done+N lie inside `input` (checked above) and `out`.
        unsafe {
            hash_group::<V>(
                input.as_ptr().add(done * stride),
                stride,
                blocks,
                &job,
                &mut out[done..],
            )
        };
        done += V::N;
    }
    done
}
