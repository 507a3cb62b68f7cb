//! What the bao tests ask of their oracles: the chunks bao's slices hold, and bao-tree's encoding
//! of chunk ranges.

use bao_tree::io::outboard::PreOrderMemOutboard;
use bao_tree::{ChunkNum, ChunkRanges};

/// The chunk length.
pub const CHUNK: u64 = 1024;

/// bao's chunks for a slice of `len` bytes from `start` (at least one byte; the last chunk past
/// the end), as chunk numbers.
pub fn slice_chunks(size: u64, start: u64, len: u64) -> ChunkRanges {
    let chunks = size.div_ceil(CHUNK).max(1);
    let first = (start / CHUNK).min(chunks - 1);
    let last = start.saturating_add(len.max(1)).div_ceil(CHUNK).clamp(first + 1, chunks);
    ChunkRanges::from(ChunkNum(first)..ChunkNum(last))
}

/// bao-tree's response for `ranges` from `data` and its outboard `ob`, after the size header.
pub fn bao_tree_response(data: &[u8], ob: &PreOrderMemOutboard, ranges: &ChunkRanges) -> Vec<u8> {
    let mut out = (data.len() as u64).to_le_bytes().to_vec();
    bao_tree::io::sync::encode_ranges_validated(data, ob, ranges, &mut out).unwrap();
    out
}
