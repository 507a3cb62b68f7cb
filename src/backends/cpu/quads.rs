//! Four inputs at a time on 512-bit rows (AVX-512F and VL): the row form's rounds on one input per
//! 128-bit lane, for groups of two to four inputs (small messages, the top levels of a tree).

#[cfg(target_arch = "x86")]
use core::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::*;

use super::lanes::{for_groups, lane_ptr, stage_last_blocks, Aligned, Group, Job};
use crate::core::compress::{words_to_cv, Cv, Word};
use crate::core::constants::{BLOCK_LEN, IV};
use crate::core::rows::{all_rounds, delegate_add_xor, delegate_word, Row, ROW_ORDER};

/// Four inputs' rows side by side, one input in each 128-bit lane of a 512-bit vector. The row
/// form's shuffles stay within 128-bit lanes, so one compression's instructions compress four
/// blocks, in about the time of one: the row form is latency-bound and leaves the ports room.
/// For groups of two to four inputs (small messages, the top levels of a tree) this beats the
/// four-lane transposed kernel, which runs its 900 instructions per block at full throughput.
/// The block is loaded as quarters (one 128-bit load per input and quarter) and each round's rows
/// are gathered from them with one to three lane-preserving `vpermt2d` ([`QUAD_GATHER`]): seven
/// per round instead of the twelve that permuting each input's block and transposing took
/// (2-4 KiB inputs 5-7% faster). Four blocks still take about 1.3x upstream's time for the same
/// work, which permutes the previous round's message in place with in-lane shuffles.
#[derive(Clone, Copy)]
struct Quad(__m512i);

delegate_word!(Quad);

/// How [`Quad`] gathers row `j` of round `r` from the block held as quarters (`Q[k]` holds words
/// 4k..4k+3 of input i in lane i): a two-source permute of quarters `src[0]` and `src[1]`, then,
/// for words in a third or fourth quarter, a masked permute from each. Every index stays within its
/// 128-bit lane, so the four inputs never mix.
#[derive(Clone, Copy)]
struct Gather {
    src: [usize; 4],
    sources: usize,
    idx: [[u32; 16]; 3],
    mask: [u16; 2],
}

/// [`Gather`] for every row of every round, from [`ROW_ORDER`].
const QUAD_GATHER: [[Gather; 4]; 7] = {
    let empty = Gather { src: [0; 4], sources: 0, idx: [[0; 16]; 3], mask: [0; 2] };
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
                while lane < 4 {
                    let at = 4 * lane + t;
                    let word = (4 * lane + w % 4) as u32;
                    if s < 2 {
                        g.idx[0][at] = word + 16 * s as u32;
                    } else {
                        g.idx[s - 1][at] = word + 16;
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
};

impl Row for Quad {
    /// The four inputs' blocks as quarters: `m[k]` holds words 4k..4k+3 of input i in lane i.
    type Msg = [__m512i; 4];
    #[inline(always)]
    unsafe fn round_msg(m: &[__m512i; 4], r: usize) -> [Self; 4] {
        // SAFETY (whole body): AVX-512F.
        unsafe {
            let mut rows = [Quad(_mm512_setzero_si512()); 4];
            for (out, g) in rows.iter_mut().zip(&QUAD_GATHER[r]) {
                let idx = |n: usize| g.idx[n].as_ptr() as *const __m512i;
                let mut x = _mm512_permutex2var_epi32(m[g.src[0]], _mm512_loadu_si512(idx(0)), m[g.src[1]]);
                if g.sources > 2 {
                    x = _mm512_mask_permutex2var_epi32(x, g.mask[0], _mm512_loadu_si512(idx(1)), m[g.src[2]]);
                }
                if g.sources > 3 {
                    x = _mm512_mask_permutex2var_epi32(x, g.mask[1], _mm512_loadu_si512(idx(2)), m[g.src[3]]);
                }
                *out = Quad(x);
            }
            rows
        }
    }
    #[inline(always)]
    unsafe fn shuffle<const IMM: i32>(self) -> Self {
        // SAFETY: AVX-512F.
        Quad(unsafe { _mm512_shuffle_epi32::<IMM>(self.0) })
    }
}

/// Four inputs' compression of one block each: CV halves `lo` and `hi` (input i in lane i)
/// updated in place, `row3` holding each input's counter, block length and flags.
#[inline(always)]
unsafe fn compress_quad(lo: &mut __m512i, hi: &mut __m512i, row3: __m512i, m: &[__m512i; 4]) {
    // SAFETY (whole body): AVX-512F, as the caller guarantees.
    unsafe {
        let iv = _mm512_broadcast_i32x4(_mm_loadu_si128(IV.as_ptr() as *const __m128i));
        let mut rows = [Quad(*lo), Quad(*hi), Quad(iv), Quad(row3)];
        all_rounds(&mut rows, m);
        *lo = _mm512_xor_si512(rows[0].0, rows[2].0);
        *hi = _mm512_xor_si512(rows[1].0, rows[3].0);
    }
}

/// Four blocks as [`Quad`]'s message: quarter k holds bytes 16k..16k+16 of block i in lane i.
///
/// # Safety
/// AVX-512F; 64 bytes are readable at each pointer.
#[inline(always)]
unsafe fn quarters(p: [*const u8; 4]) -> [__m512i; 4] {
    // SAFETY: as the caller guarantees.
    unsafe {
        let q = |k: usize, i: usize| _mm_loadu_si128(p[i].add(16 * k) as *const __m128i);
        let mut out = [_mm512_setzero_si512(); 4];
        for (k, o) in out.iter_mut().enumerate() {
            let x = _mm512_castsi128_si512(q(k, 0));
            let x = _mm512_inserti32x4::<1>(x, q(k, 1));
            let x = _mm512_inserti32x4::<2>(x, q(k, 2));
            *o = _mm512_inserti32x4::<3>(x, q(k, 3));
        }
        out
    }
}

/// The row form on four inputs at a time as a [`Group`].
pub(crate) struct QuadGroup;

impl Group for QuadGroup {
    const N: usize = 4;
    /// As [`super::lanes::hash_group`], on [`Quad`] rows.
    #[inline(always)]
    unsafe fn hash(input: *const u8, stride: usize, blocks: usize, valid: usize, job: &Job, out: &mut [Cv]) {
        debug_assert!(blocks >= 1 && job.last_block_len <= BLOCK_LEN && (1..=4).contains(&valid));
        let ptr = |lane: usize| lane_ptr(input, stride, valid, lane);
        // Row 3 of each lane: counter (low, high), block length, flags (added per block).
        let mut row3 = [0u32; 16];
        for lane in 0..4 {
            let c = job.input_counter(lane);
            row3[4 * lane..4 * lane + 3].copy_from_slice(&[c as u32, (c >> 32) as u32, BLOCK_LEN as u32]);
        }
        // SAFETY (whole body): AVX-512F, as the caller guarantees; every load reads a full block
        // of an input below `valid` (the caller guarantees those bytes) or of the stack.
        unsafe {
            let mut counters = _mm512_loadu_si512(row3.as_ptr() as *const __m512i);
            let mut lo = _mm512_broadcast_i32x4(_mm_loadu_si128(job.key.as_ptr() as *const __m128i));
            let mut hi = _mm512_broadcast_i32x4(_mm_loadu_si128(job.key.as_ptr().add(4) as *const __m128i));
            // (No closures around intrinsics here: see `Row for __m128i`.)
            let full = if job.last_block_len == BLOCK_LEN { blocks } else { blocks - 1 };
            for b in 0..full {
                let at = b * BLOCK_LEN;
                let m = quarters([ptr(0).add(at), ptr(1).add(at), ptr(2).add(at), ptr(3).add(at)]);
                let flags = _mm512_set4_epi32(job.block_flags(b, blocks) as i32, 0, 0, 0);
                compress_quad(&mut lo, &mut hi, _mm512_or_si512(counters, flags), &m);
            }
            if full < blocks {
                let staged = stage_last_blocks::<4>(input, stride, valid, full, job);
                let block = |lane: usize| staged.0[lane.min(valid - 1)].as_ptr();
                let m = quarters([block(0), block(1), block(2), block(3)]);
                counters = _mm512_mask_set1_epi32(counters, 0x4444, job.last_block_len as i32);
                let flags = _mm512_set4_epi32(job.block_flags(full, blocks) as i32, 0, 0, 0);
                compress_quad(&mut lo, &mut hi, _mm512_or_si512(counters, flags), &m);
            }
            let mut words = Aligned([[0u32; 16]; 2]);
            _mm512_store_si512(words.0[0].as_mut_ptr() as *mut __m512i, lo);
            _mm512_store_si512(words.0[1].as_mut_ptr() as *mut __m512i, hi);
            for (lane, cv) in out[..valid].iter_mut().enumerate() {
                *cv = words_to_cv(&core::array::from_fn(|w| words.0[w / 4][4 * lane + w % 4]));
            }
        }
    }
}

/// Hashes all `out.len()` inputs four at a time on [`Quad`] rows (see [`for_groups`] for the
/// layout).
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512VL; the input layout is as for [`for_groups`].
#[target_feature(enable = "avx512f,avx512vl")]
pub(crate) unsafe fn hash_quads(input: &[u8], stride: usize, blocks: usize, job: &Job, out: &mut [Cv]) {
    // SAFETY: the instruction sets are enabled here; the caller guarantees the layout.
    unsafe { for_groups::<QuadGroup>(input, stride, blocks, job, out) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quads_match_rows_one_input_at_a_time() {
        if !(std::is_x86_feature_detected!("avx512vl") && std::is_x86_feature_detected!("avx512f")) {
            crate::core::expect::missing("avx512vl", "quads_match_rows_one_input_at_a_time");
            return;
        }
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
                    };
                    let stride = blocks * BLOCK_LEN + 5;
                    let input = &data[..(count - 1) * stride + (blocks - 1) * BLOCK_LEN + last_block_len];
                    let mut want = vec![[0u8; 32]; count];
                    hash_rows(input, stride, blocks, &job, &mut want);
                    let mut got = vec![[0u8; 32]; count];
                    unsafe { hash_quads(input, stride, blocks, &job, &mut got) };
                    assert_eq!(
                        got, want,
                        "{count} inputs of {blocks} blocks, last {last_block_len}, counter {counter}"
                    );
                }
            }
        }
    }
}
