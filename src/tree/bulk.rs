//! What the tree's algorithms (`stack.rs`, `merkle.rs`) ask of a device, and the shape of its
//! answers: the bulk methods of the `Backend` trait, seen from below, and how many subtrees a run
//! of chunks forms. Every backend has [`Bulk`] through one blanket implementation beside the
//! trait, so the trait's provided methods use the algorithms, and the algorithms this, in one
//! direction only.

use super::error::Result;
use crate::core::compress::Cv;

/// A device's bulk work as the tree's algorithms call it: the `Backend` methods of the same names
/// (their docs say what each does).
pub(crate) trait Bulk {
    /// `Backend::chunk_subtrees_capped`.
    fn chunk_subtrees_capped(
        &self,
        input: &[u8],
        first_chunk: u64,
        max_chunks: u64,
        key: &[u32; 8],
        flags: u32,
        out: &mut [Cv],
    ) -> Result<()>;

    /// `Backend::subtree_top`.
    fn subtree_top(&self, input: &[u8], first_chunk: u64, key: &[u32; 8], flags: u32, top_flags: u32) -> Result<Cv>;

    /// `Backend::hash_blocks`.
    fn hash_blocks(&self, blocks: &[[u8; 64]], out: &mut [[u8; 32]]) -> Result<()>;
}

/// The largest subtree a backend is ever asked for: no cap at all.
pub(crate) const MAX_SUBTREE: u64 = 1 << 63;

/// How many subtrees `n` full chunks form when none may be larger than `max_chunks` (a power of
/// two): `n / max_chunks` of that size, then one per set bit of the rest.
///
/// ```
/// use b3accel::subtree_count;
/// assert_eq!(subtree_count(6, 1 << 20), 2); // 4 + 2
/// assert_eq!(subtree_count(16, 8), 2); // 8 + 8
/// assert_eq!(subtree_count(21, 8), 4); // 8 + 8 + 4 + 1
/// ```
pub fn subtree_count(n: u64, max_chunks: u64) -> usize {
    (n / max_chunks) as usize + (n % max_chunks).count_ones() as usize
}

/// The sizes in chunks of the subtrees that `n` full chunks form when none may be larger than
/// `max_chunks` (a power of two), in order: [`subtree_count`] of them, as
/// `Backend::chunk_subtrees_capped` returns their CVs.
pub(crate) fn subtree_sizes(n: u64, max_chunks: u64) -> impl Iterator<Item = u64> {
    std::iter::repeat_n(max_chunks, (n / max_chunks) as usize)
        .chain((0..64).rev().map(|b| 1u64 << b).filter(move |b| (n % max_chunks) & b != 0))
}
