//! Groups of two to eight small inputs (short messages, a small input's chunks, a level of
//! parents) hashed on rows of several inputs, where the transposed lane kernels would leave most
//! of their lanes idle.

#[cfg(target_arch = "x86")]
use core::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::*;

use super::super::lanes::{for_groups, hash_rows, Job};
use super::{MultiRowGroup, RowVector, TwoChains, TwoRowsAvx2, MAX_N};
use crate::core::compress::Cv;
use crate::core::rows::Ymm;

/// Whether [`hash_on_rows_avx512vl`] takes a group of `inputs` inputs of `blocks` blocks as it is,
/// rather than the transposed lane kernels: four or fewer always; five to eight (as two interleaved
/// chains of 512-bit rows, `TwoChains<__m512i>`) when each is one block (the 8-parent level of 16
/// chunks).
///
/// Interleaved, each chain fills the other's latency; eight parents on the pair run at least as
/// fast as on the 8-lane kernel. Whole chunks stay on the lane kernels, which are as fast or
/// faster for five to eight of them (docs/performance.md).
pub(crate) fn avx512vl_rows_take(inputs: usize, blocks: usize) -> bool {
    inputs <= 4 || (inputs <= MAX_N && blocks == 1)
}

/// Hashes all `out.len()` inputs on rows of several inputs (see [`for_groups`] for the layout):
/// five to eight one-block inputs as two interleaved chains of 512-bit rows
/// ([`avx512vl_rows_take`]); else four at a time (a last three too) on 512-bit rows, or with
/// `split` as two chains of 256-bit rows (see `platform::prefers_256_bit_rows`); a last two on
/// 256-bit rows; a last one on 128-bit rows ([`hash_rows`]). Two inputs on 256-bit rows take about
/// the time of one on 128-bit rows, where 512-bit rows with two lanes idle take half again as long
/// (docs/performance.md).
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512VL; the input layout is as for [`for_groups`].
#[target_feature(enable = "avx512f,avx512vl")]
pub(crate) unsafe fn hash_on_rows_avx512vl(
    input: &[u8],
    stride: usize,
    blocks: usize,
    job: &Job,
    out: &mut [Cv],
    split: bool,
) {
    // SAFETY (whole body): the instruction sets are enabled here; the caller guarantees the
    // layout, and `for_groups` asserts that the inputs it is given lie inside what it is given.
    unsafe {
        if out.len() > 4 && avx512vl_rows_take(out.len(), blocks) {
            for_groups::<MultiRowGroup<TwoChains<__m512i>>>(input, stride, blocks, job, out)
        } else if split {
            in_fours::<TwoChains<Ymm>, Ymm>(input, stride, blocks, job, out)
        } else {
            in_fours::<__m512i, Ymm>(input, stride, blocks, job, out)
        }
    }
}

/// [`hash_on_rows_avx512vl`] for CPUs with AVX2 but not AVX-512VL: four inputs at a time (a last
/// three too) as two chains of 256-bit rows, a last two on 256-bit rows, a last one on 128-bit
/// rows. For the groups of two to four that the 8-lane kernel leaves: a small input's chunks (2 KiB
/// to 7 KiB) and the top levels of every tree, where the 4-lane kernel is much slower
/// (docs/performance.md).
///
/// # Safety
/// The CPU must support AVX2; the input layout is as for [`for_groups`].
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn hash_on_rows_avx2(input: &[u8], stride: usize, blocks: usize, job: &Job, out: &mut [Cv]) {
    // SAFETY: AVX2 is enabled here; the layout as the caller guarantees.
    unsafe { in_fours::<TwoChains<TwoRowsAvx2>, TwoRowsAvx2>(input, stride, blocks, job, out) }
}

/// The inputs four at a time on `F` (a last three too), then a last two on `T` or a last one on
/// 128-bit rows ([`hash_rows`]).
///
/// # Safety
/// `F`'s and `T`'s instruction sets; the input layout is as for [`for_groups`].
#[inline(always)]
unsafe fn in_fours<F: RowVector, T: RowVector>(input: &[u8], stride: usize, blocks: usize, job: &Job, out: &mut [Cv]) {
    let fours = match out.len() % 4 {
        3 => out.len(),
        r => out.len() - r,
    };
    let (four, rest) = out.split_at_mut(fours);
    // SAFETY: as the caller guarantees; `for_groups` asserts that the inputs it is given lie
    // inside what it is given.
    unsafe { for_groups::<MultiRowGroup<F>>(input, stride, blocks, job, four) };
    if rest.is_empty() {
        return;
    }
    let (input, job) = (&input[fours * stride..], &job.starting_at(fours));
    match rest.len() {
        // SAFETY: as above.
        2 => unsafe { for_groups::<MultiRowGroup<T>>(input, stride, blocks, job, rest) },
        _ => hash_rows(input, stride, blocks, job, rest),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::cpu::lanes::Prefetch;
    use crate::core::constants::BLOCK_LEN;

    #[test]
    fn groups_match_rows_one_input_at_a_time() {
        let (vl, avx2) = super::super::tests::row_sets("groups_match_rows_one_input_at_a_time");
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
                        prefetch: Prefetch::None,
                    };
                    let stride = blocks * BLOCK_LEN + 5;
                    let input = &data[..(count - 1) * stride + (blocks - 1) * BLOCK_LEN + last_block_len];
                    let mut want = vec![[0u8; 32]; count];
                    hash_rows(input, stride, blocks, &job, &mut want);
                    let what = format!("{count} inputs of {blocks} blocks, last {last_block_len}, counter {counter}");
                    for split in [false, true].into_iter().filter(|_| vl) {
                        let mut got = vec![[0u8; 32]; count];
                        unsafe { hash_on_rows_avx512vl(input, stride, blocks, &job, &mut got, split) };
                        assert_eq!(got, want, "{what}, split {split}");
                    }
                    if avx2 {
                        let mut got = vec![[0u8; 32]; count];
                        unsafe { hash_on_rows_avx2(input, stride, blocks, &job, &mut got) };
                        assert_eq!(got, want, "{what}, AVX2 rows");
                    }
                }
            }
        }
    }
}
