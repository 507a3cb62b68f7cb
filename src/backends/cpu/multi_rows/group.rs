//! One block of each of several inputs compressed on a [`RowVector`]: the inputs' message words
//! and counters into rows, and [`MultiRowGroup`], the lane kernels' `Group` on these rows.

use super::super::lanes::{lane_ptr, stage_last_blocks, Group, Job};
use super::vector::*;
use crate::core::compress::Cv;
use crate::core::constants::{BLOCK_LEN, IV};

/// `V::N` inputs' compression of one block each: CV halves `lo` and `hi` (input i in lane i)
/// updated in place, `row3` holding each input's counter, block length and flags.
#[inline(always)]
pub(super) unsafe fn compress_multi<V: RowVector>(lo: &mut V, hi: &mut V, row3: V, m: &[V; 4]) {
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
pub(super) unsafe fn quarters<V: RowVector>(p: [*const u8; MAX_N]) -> [V; 4] {
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
pub(super) unsafe fn row3<V: RowVector>(job: &Job) -> V {
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
pub(super) struct MultiRowGroup<V>(pub(super) core::marker::PhantomData<V>);

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
pub(super) const LEN: u32 = 0x4444_4444;
/// Word 3 of every 128-bit lane: row 3's flags.
pub(super) const FLAGS: u32 = 0x8888_8888;

/// A CV's rows before its first block: the key's two halves, each in every 128-bit lane.
///
/// # Safety
/// AVX-512F and VL.
#[inline(always)]
pub(super) unsafe fn key_rows<V: RowVector>(key: &[u32; 8]) -> (V, V) {
    // SAFETY: as the caller guarantees.
    unsafe { (V::broadcast(&[key[0], key[1], key[2], key[3]]), V::broadcast(&[key[4], key[5], key[6], key[7]])) }
}

/// [`MultiRowGroup`]'s chaining values left in registers: input i's CV halves in lane i of the two
/// vectors returned.
///
/// # Safety
/// As for [`super::lanes::hash_group`], with AVX-512F and VL.
#[inline(always)]
pub(super) unsafe fn multi_cvs<V: RowVector>(
    input: *const u8,
    stride: usize,
    blocks: usize,
    valid: usize,
    job: &Job,
) -> (V, V) {
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
