//! The CPU backend's Merkle trees and batches of messages: SIMD across nodes or messages (one per
//! lane, the kernel of `lanes/`) and rayon across cores for large jobs.
//!
//! Merkle trees are reduced in blocks of [`BLOCK_LEAVES`] leaves: a block is a complete subtree
//! whose levels all fit in the core's cache, so it is reduced to its root in one task (blocks in
//! parallel) instead of one pass over memory per level. What the blocks leave (their roots, and
//! the leaves after the last whole block) is reduced by the `merkle` module's level-by-level code,
//! which alone knows the rule for an odd node.

use super::backend::CpuBackend;
use super::lanes::{prefetch_for, Job, Prefetch};
use super::threads::use_threads;
use crate::core::compress::Cv;
use crate::core::constants::{flags, BLOCK_LEN, CHUNK_LEN, IV};
use crate::core::platform::Kernel;
use crate::tree::merkle::{check_many_args, check_merkle_args, level_sizes, reduce, split_levels};
use crate::tree::{root_from_chunk_cvs, root_hash_all, Backend, Domain, Result};
use rayon::prelude::*;

/// Levels of a block of leaves reduced in one task.
const BLOCK_LEVELS: usize = 11;
/// Leaves of such a block: 64 KiB of leaves, 64 KiB of inner nodes.
const BLOCK_LEAVES: usize = 1 << BLOCK_LEVELS;
/// Bytes of messages per task of `hash_many`, parallel or not (it bounds the scratch of chunk
/// CVs as well).
const MANY_TASK_BYTES: usize = 64 * 1024;
/// Messages of up to this many chunks are hashed one per lane, chunk by chunk; longer messages
/// fill the lanes with their own chunks instead (through the tree code and `chunk_subtrees`).
const ACROSS_MAX_CHUNKS: usize = 16;

const ZERO: Cv = [0; 32];

/// A Merkle parent: the 64-byte block `left || right` hashed as a whole message.
const PAIR_JOB: Job<'static> = Job {
    key: &IV,
    counter: 0,
    increment_counter: false,
    flags: flags::CHUNK_START | flags::CHUNK_END | flags::ROOT,
    flags_start: 0,
    flags_end: 0,
    last_block_len: BLOCK_LEN,
    // Every level: the leaves may come from beyond the caches (`prefetch_for` decides
    // elsewhere; the levels above, in L2, keep it for simplicity).
    prefetch: Prefetch::NextGroup,
};

impl CpuBackend {
    /// The parents of consecutive pairs of `nodes`, on this thread.
    fn hash_pairs(&self, nodes: &[Cv], out: &mut [Cv]) {
        debug_assert_eq!(nodes.len(), 2 * out.len());
        // The inherent SIMD dispatcher of `mod.rs` (not the trait method of the same name).
        CpuBackend::hash_lanes(self, nodes.as_flattened(), BLOCK_LEN, 1, &PAIR_JOB, out);
    }

    /// Reduces a complete block of [`BLOCK_LEAVES`] leaves to its root, writing its levels to
    /// `levels` when they are kept, or else through `scratch`.
    fn block_root(&self, leaves: &[Cv], levels: Option<Vec<&mut [Cv]>>, scratch: &mut Vec<Cv>) -> Cv {
        debug_assert_eq!(leaves.len(), BLOCK_LEAVES);
        match levels {
            Some(levels) => {
                let mut cur = leaves;
                for out in levels {
                    self.hash_pairs(cur, out);
                    cur = out;
                }
                cur[0]
            }
            None => {
                scratch.resize(BLOCK_LEAVES / 2 + BLOCK_LEAVES / 4, ZERO);
                let (mut next, mut spare) = scratch.split_at_mut(BLOCK_LEAVES / 2);
                let mut n = BLOCK_LEAVES / 2;
                self.hash_pairs(leaves, &mut next[..n]);
                while n > 1 {
                    std::mem::swap(&mut next, &mut spare);
                    self.hash_pairs(&spare[..n], &mut next[..n / 2]);
                    n /= 2;
                }
                next[0]
            }
        }
    }
}

/// [`Backend::merkle`] on the CPU.
pub(super) fn merkle(cpu: &CpuBackend, leaves: &[Cv], inner: Option<&mut [Cv]>) -> Result<Cv> {
    check_merkle_args(leaves, inner.as_deref())?;
    let n = leaves.len();
    let blocks = n / BLOCK_LEAVES;
    let (full, tail) = leaves.split_at(blocks * BLOCK_LEAVES);
    let parallel = blocks > 1 && use_threads(full.len() * 32);
    // Levels outside the blocks: `hash_blocks` spreads large ones over cores.
    let mut pairs = |b: &[[u8; BLOCK_LEN]], o: &mut [Cv]| cpu.hash_blocks(b, o);
    if blocks == 0 {
        return reduce(leaves, None, inner.map(|i| split_levels(i, n)), &mut pairs);
    }

    let Some(inner) = inner else {
        let mut roots = vec![ZERO; blocks];
        if parallel {
            roots
                .par_iter_mut()
                .zip(full.par_chunks_exact(BLOCK_LEAVES))
                .for_each_init(Vec::new, |scratch, (root, block)| *root = cpu.block_root(block, None, scratch));
        } else {
            let mut scratch = Vec::new();
            for (root, block) in roots.iter_mut().zip(full.chunks_exact(BLOCK_LEAVES)) {
                *root = cpu.block_root(block, None, &mut scratch);
            }
        }
        let tail_root = match tail {
            [] => None,
            _ => Some(reduce(tail, None, None, &mut pairs)?),
        };
        return reduce(&roots, tail_root, None, &mut pairs);
    };

    // Keeping every level: level l (l < BLOCK_LEVELS) is each block's nodes of that level, side
    // by side, then those of the tail, which pairs as a tree of its own (the blocks leave an even
    // number of nodes before it).
    let tail_depth = level_sizes(tail.len()).count();
    let mut levels = split_levels(inner, n);
    let top = levels.split_off(BLOCK_LEVELS);
    let mut per_block: Vec<Vec<&mut [Cv]>> = (0..blocks).map(|_| Vec::with_capacity(BLOCK_LEVELS)).collect();
    let mut tail_levels = Vec::with_capacity(tail_depth);
    for (l, level) in levels.iter_mut().enumerate() {
        let width = BLOCK_LEAVES >> (l + 1);
        let (block_part, tail_part) = level.split_at_mut(blocks * width);
        for (mine, piece) in per_block.iter_mut().zip(block_part.chunks_exact_mut(width)) {
            mine.push(piece);
        }
        if l < tail_depth {
            tail_levels.push(tail_part);
        } else {
            debug_assert!(tail_part.is_empty());
        }
    }
    if parallel {
        per_block.into_par_iter().zip(full.par_chunks_exact(BLOCK_LEAVES)).for_each(|(mine, block)| {
            cpu.block_root(block, Some(mine), &mut Vec::new());
        });
    } else {
        for (mine, block) in per_block.into_iter().zip(full.chunks_exact(BLOCK_LEAVES)) {
            cpu.block_root(block, Some(mine), &mut Vec::new());
        }
    }
    let tail_root = match tail {
        [] => None,
        _ => Some(reduce(tail, None, Some(tail_levels), &mut pairs)?),
    };
    // The level above the blocks: their roots, then the tail's root, which is stored among them
    // when the tail is deep enough to reach this level, and is carried up to it otherwise.
    let carry = if tail_depth < BLOCK_LEVELS { tail_root } else { None };
    reduce(&*levels[BLOCK_LEVELS - 1], carry, Some(top), &mut pairs)
}

/// [`Backend::hash_many`] on the CPU.
pub(super) fn hash_many(
    cpu: &CpuBackend,
    data: &[u8],
    msg_len: usize,
    key: &[u32; 8],
    mode_flags: u32,
    out: &mut [Cv],
) -> Result<()> {
    check_many_args(data, msg_len, out)?;
    let domain = Domain { key: *key, flags: mode_flags };
    let chunks = msg_len.div_ceil(CHUNK_LEN).max(1);
    // Under upstream's kernel a message of several chunks goes through `chunk_subtrees`, so that
    // upstream's SIMD hashes its chunks side by side; across messages the lanes would be the
    // portable code's single one.
    let across_max = if cpu.kernel() == Kernel::Upstream { 1 } else { ACROSS_MAX_CHUNKS };
    if chunks > across_max {
        let one = |(msg, hash): (&[u8], &mut Cv)| -> Result<()> {
            *hash = root_hash_all(cpu, msg, domain)?;
            Ok(())
        };
        return if use_threads(data.len()) {
            data.par_chunks_exact(msg_len).zip(out.par_iter_mut()).try_for_each(one)
        } else {
            data.chunks_exact(msg_len).zip(out.iter_mut()).try_for_each(one)
        };
    }
    let prefetch = prefetch_for(data.len());
    // Tasks of a whole number of SIMD groups (16 lanes at most).
    let per_task = (MANY_TASK_BYTES / msg_len.max(1)).next_multiple_of(16);
    let tasks = out.len().div_ceil(per_task);
    if tasks > 1 && use_threads(data.len()) {
        data.par_chunks(per_task * msg_len)
            .zip(out.par_chunks_mut(per_task))
            .for_each_init(Vec::new, |cvs, (d, o)| across(cpu, d, msg_len, chunks, &domain, prefetch, o, cvs));
    } else {
        let mut cvs = Vec::new();
        for (i, o) in out.chunks_mut(per_task).enumerate() {
            let start = i * per_task * msg_len;
            let d = &data[start..start + o.len() * msg_len];
            across(cpu, d, msg_len, chunks, &domain, prefetch, o, &mut cvs);
        }
    }
    Ok(())
}

/// Hashes `out.len()` messages of `msg_len` bytes (`chunks` chunks, at most
/// [`ACROSS_MAX_CHUNKS`]) laid end to end in `data`, one message per SIMD lane: chunk `j` of
/// every message at once, then each message's chunk CVs merged by the tree code. A message of
/// one chunk is its own root, hashed in a single pass. `prefetch` as in [`Job`], for the whole
/// request.
#[allow(clippy::too_many_arguments)]
fn across(
    cpu: &CpuBackend,
    data: &[u8],
    msg_len: usize,
    chunks: usize,
    domain: &Domain,
    prefetch: Prefetch,
    out: &mut [Cv],
    cvs: &mut Vec<Cv>,
) {
    let count = out.len();
    let base = (chunks - 1) * CHUNK_LEN;
    let last_len = msg_len - base;
    let last_blocks = last_len.div_ceil(BLOCK_LEN).max(1);
    let last_job = Job {
        key: &domain.key,
        counter: (chunks - 1) as u64,
        increment_counter: false,
        flags: domain.flags,
        flags_start: flags::CHUNK_START,
        flags_end: flags::CHUNK_END | if chunks == 1 { flags::ROOT } else { 0 },
        last_block_len: last_len - (last_blocks - 1) * BLOCK_LEN,
        prefetch,
    };
    if chunks == 1 {
        CpuBackend::hash_lanes(cpu, data, msg_len, last_blocks, &last_job, out);
        return;
    }
    // Chunk-major: the CVs of chunk j of every message are cvs[j * count..(j + 1) * count].
    cvs.clear();
    cvs.resize(chunks * count, ZERO);
    for (j, cvs_j) in cvs.chunks_exact_mut(count).enumerate() {
        if j + 1 < chunks {
            let job = Job { counter: j as u64, flags_end: flags::CHUNK_END, last_block_len: BLOCK_LEN, ..last_job };
            let blocks = CHUNK_LEN / BLOCK_LEN;
            CpuBackend::hash_lanes(cpu, &data[j * CHUNK_LEN..], msg_len, blocks, &job, cvs_j);
        } else {
            CpuBackend::hash_lanes(cpu, &data[base..], msg_len, last_blocks, &last_job, cvs_j);
        }
    }
    let mut mine = [ZERO; ACROSS_MAX_CHUNKS];
    for (i, hash) in out.iter_mut().enumerate() {
        for (j, cv) in mine[..chunks].iter_mut().enumerate() {
            *cv = cvs[j * count + i];
        }
        *hash = root_from_chunk_cvs(&mine[..chunks], *domain).root_hash();
    }
}
