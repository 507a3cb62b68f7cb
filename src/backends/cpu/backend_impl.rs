//! The `Backend` trait on the CPU backend: each method's arguments checked, then routed to the
//! kernel that serves it (`backend.rs`, `many.rs`, `upstream.rs`).

use super::backend::{plan, CpuBackend};
use super::lanes::{prefetch_for, Job};
use super::many;
use super::threads::use_threads;
use super::upstream;
use crate::core::compress::Cv;
use crate::core::constants::{flags, BLOCK_LEN, IV};
use crate::core::platform::Kernel;
use crate::tree::{
    check_blocks_args, check_subtree_args, check_subtree_top_args, top_by_subtrees, Backend, DeviceInfo, Result,
};

/// One-block messages per parallel task in `hash_blocks`.
const BLOCKS_PER_TASK: usize = 4096;

impl Backend for CpuBackend {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn chunk_subtrees_capped(
        &self,
        input: &[u8],
        first_chunk: u64,
        max_chunks: u64,
        key: &[u32; 8],
        flags: u32,
        out: &mut [Cv],
    ) -> Result<()> {
        check_subtree_args(input, first_chunk, max_chunks, out)?;
        if self.kernel == Kernel::Upstream && upstream::chunk_subtrees(input, first_chunk, max_chunks, key, flags, out)
        {
            return Ok(());
        }
        self.subtrees(input, first_chunk, max_chunks, key, flags, plan(input.len()), out);
        Ok(())
    }

    fn subtree_top(&self, input: &[u8], first_chunk: u64, key: &[u32; 8], flags: u32, top_flags: u32) -> Result<Cv> {
        let n = check_subtree_top_args(input, first_chunk)?;
        // At most 16 KiB: no level through memory, no pool and no scratch.
        if let Some(cv) = self.small_chunks_top(input, first_chunk, key, flags, top_flags) {
            return Ok(cv);
        }
        // Up to a leaf of one or two subtrees: one pass, its last levels in registers.
        if let Some(cv) = self.leaf_top(input, first_chunk, key, flags, top_flags, plan(input.len())) {
            return Ok(cv);
        }
        top_by_subtrees(self, input, first_chunk, n, key, flags, top_flags)
    }

    fn hash_blocks(&self, blocks: &[[u8; 64]], out: &mut [[u8; 32]]) -> Result<()> {
        check_blocks_args(blocks, out)?;
        let bytes = blocks.len() * BLOCK_LEN;
        let job = Job {
            key: &IV,
            counter: 0,
            increment_counter: false,
            flags: flags::CHUNK_START | flags::CHUNK_END | flags::ROOT,
            flags_start: 0,
            flags_end: 0,
            last_block_len: BLOCK_LEN,
            prefetch: prefetch_for(bytes),
        };
        if use_threads(bytes) {
            use rayon::prelude::*;
            blocks.par_chunks(BLOCKS_PER_TASK).zip(out.par_chunks_mut(BLOCKS_PER_TASK)).for_each(|(b, o)| {
                self.hash_lanes(b.as_flattened(), BLOCK_LEN, 1, &job, o);
            });
        } else {
            self.hash_lanes(blocks.as_flattened(), BLOCK_LEN, 1, &job, out);
        }
        Ok(())
    }

    fn merkle(&self, leaves: &[Cv], inner: Option<&mut [Cv]>) -> Result<Cv> {
        many::merkle(self, leaves, inner)
    }

    fn hash_many(&self, data: &[u8], msg_len: usize, key: &[u32; 8], flags: u32, out: &mut [Cv]) -> Result<()> {
        many::hash_many(self, data, msg_len, key, flags, out)
    }
}
