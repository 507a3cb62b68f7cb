//! The shape of a bao tree: the content's chunk groups, BLAKE3's left-heavy tree over them, which
//! nodes a byte range needs, and where each parent node lies in a pre-order or post-order outboard.

use super::error::Error;
use crate::core::constants::CHUNK_LEN;
pub(crate) use crate::tree::bao_shape::Place;
pub use crate::tree::bao_shape::{Order, MAX_GROUP_LOG};
use std::ops::Range;

/// The length of the size header (little-endian `u64`) of encodings, slices and pre-order
/// outboard files, and of the size trailer of post-order outboard files.
pub const HEADER_LEN: usize = 8;

/// The length of a parent node in an encoding or outboard: its two children's chaining values.
pub const PARENT_LEN: usize = 64;

/// The geometry of a bao tree: the content's size and its chunk group size, 2^`group_log`
/// chunks (group log 0 is bao's format, 4 iroh's 16 KiB groups). The tree's leaves are the
/// chunk groups; its parent nodes are BLAKE3's, over the groups.
///
/// ```
/// use b3accel::bao::Tree;
/// let tree = Tree::new(100_000, 4)?; // 16 KiB groups
/// assert_eq!(tree.groups(), 7);
/// assert_eq!(tree.outboard_len(), 6 * 64);
/// assert_eq!(tree.encoded_len(), 8 + 100_000 + 6 * 64);
/// # Ok::<(), b3accel::bao::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tree {
    size: u64,
    group_log: u8,
}

impl Tree {
    /// The tree of `size` content bytes in groups of 2^`group_log` chunks; an error for a group
    /// log above [`MAX_GROUP_LOG`], or a size whose encoding's length does not fit in a `u64` (a
    /// corrupt size header: the offsets of its nodes would overflow).
    ///
    /// ```
    /// assert!(b3accel::bao::Tree::new(5, 21).is_err());
    /// assert!(b3accel::bao::Tree::new(u64::MAX, 0).is_err());
    /// ```
    pub fn new(size: u64, group_log: u8) -> Result<Tree, Error> {
        if group_log > MAX_GROUP_LOG {
            return Err(Error::Invalid(format!(
                "a chunk group log of {group_log} is above the largest accepted, {MAX_GROUP_LOG}"
            )));
        }
        let tree = Tree { size, group_log };
        if size.checked_add(HEADER_LEN as u64 + tree.outboard_len()).is_none() {
            return Err(Error::Invalid(format!(
                "a content of {size} bytes has an encoding too long for 64-bit offsets"
            )));
        }
        Ok(tree)
    }

    /// The content's length in bytes.
    ///
    /// ```
    /// assert_eq!(b3accel::bao::Tree::new(5, 0)?.size(), 5);
    /// # Ok::<(), b3accel::bao::Error>(())
    /// ```
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The chunk group size's base-2 logarithm, in chunks.
    ///
    /// ```
    /// assert_eq!(b3accel::bao::Tree::new(5, 4)?.group_log(), 4);
    /// # Ok::<(), b3accel::bao::Error>(())
    /// ```
    pub fn group_log(&self) -> u8 {
        self.group_log
    }

    /// The chunk group size in bytes.
    ///
    /// ```
    /// assert_eq!(b3accel::bao::Tree::new(0, 4)?.group_len(), 16384);
    /// # Ok::<(), b3accel::bao::Error>(())
    /// ```
    pub fn group_len(&self) -> u64 {
        (CHUNK_LEN as u64) << self.group_log
    }

    /// The number of chunk groups (leaves): at least one, the empty content's.
    ///
    /// ```
    /// assert_eq!(b3accel::bao::Tree::new(0, 0)?.groups(), 1);
    /// assert_eq!(b3accel::bao::Tree::new(1025, 0)?.groups(), 2);
    /// # Ok::<(), b3accel::bao::Error>(())
    /// ```
    pub fn groups(&self) -> u64 {
        self.size.div_ceil(self.group_len()).max(1)
    }

    /// The length of the outboard's parent nodes (without size header or trailer).
    ///
    /// ```
    /// assert_eq!(b3accel::bao::Tree::new(4096, 0)?.outboard_len(), 3 * 64);
    /// # Ok::<(), b3accel::bao::Error>(())
    /// ```
    pub fn outboard_len(&self) -> u64 {
        (self.groups() - 1) * PARENT_LEN as u64
    }

    /// The length of the combined (pre-order) encoding, size header included.
    ///
    /// ```
    /// assert_eq!(b3accel::bao::Tree::new(0, 0)?.encoded_len(), 8);
    /// # Ok::<(), b3accel::bao::Error>(())
    /// ```
    pub fn encoded_len(&self) -> u64 {
        HEADER_LEN as u64 + self.size + self.outboard_len()
    }

    /// The number of chunks: at least one, the empty content's.
    pub(crate) fn chunks(&self) -> u64 {
        self.size.div_ceil(CHUNK_LEN as u64).max(1)
    }

    /// The root node, covering every chunk.
    pub(crate) fn root(&self) -> Node {
        Node { start: 0, chunks: self.chunks() }
    }

    /// The chunks a slice of `len` bytes from byte `start` holds, as bao chooses them: at least
    /// one byte; a start at or past the end gives the last chunk, which proves the size.
    pub(crate) fn query(&self, start: u64, len: u64) -> Range<u64> {
        let chunks = self.chunks();
        let end = start.saturating_add(len.max(1));
        let first = (start / CHUNK_LEN as u64).min(chunks - 1);
        let last = end.div_ceil(CHUNK_LEN as u64).clamp(first + 1, chunks);
        first..last
    }

    /// Whether `node` is a parent of the outboard: it holds more than one chunk group.
    pub(crate) fn is_outboard_parent(&self, node: Node) -> bool {
        node.chunks > 1 << self.group_log
    }

    /// The chunk groups `node` covers (it starts on a group boundary).
    pub(crate) fn groups_of(&self, node: Node) -> u64 {
        node.chunks.div_ceil(1 << self.group_log)
    }

    /// The content bytes of `node`.
    pub(crate) fn bytes(&self, node: Node) -> Range<u64> {
        let start = node.start * CHUNK_LEN as u64;
        start..(node.end() * CHUNK_LEN as u64).min(self.size)
    }

    /// The length of `node`'s part of a combined encoding: its bytes and its outboard parents.
    pub(crate) fn encoded_len_of(&self, node: Node) -> u64 {
        let bytes = self.bytes(node);
        let parents = if node.start.is_multiple_of(1 << self.group_log) { self.groups_of(node) - 1 } else { 0 };
        bytes.end - bytes.start + parents * PARENT_LEN as u64
    }

    /// The size header (or trailer) of this tree.
    pub(crate) fn header(&self) -> [u8; HEADER_LEN] {
        self.size.to_le_bytes()
    }
}

/// A node of BLAKE3's tree over a content's chunks: `chunks` chunks from chunk `start`, as the
/// left-heavy splits make them (at least one chunk; the empty content's root is one empty chunk).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Node {
    pub start: u64,
    pub chunks: u64,
}

impl Node {
    /// One past the last chunk.
    pub fn end(&self) -> u64 {
        self.start + self.chunks
    }

    /// The two children of a node of two or more chunks: the left one holds the largest power
    /// of two of chunks that leaves at least one on the right.
    pub fn split(&self) -> (Node, Node) {
        debug_assert!(self.chunks >= 2);
        let left = 1u64 << (63 - (self.chunks - 1).leading_zeros());
        (Node { start: self.start, chunks: left }, Node { start: self.start + left, chunks: self.chunks - left })
    }

    /// Whether the chunks `query` and this node share one.
    pub fn meets(&self, query: &Range<u64>) -> bool {
        query.start < self.end() && self.start < query.end
    }

    /// Whether `query` holds all of this node's chunks.
    pub fn within(&self, query: &Range<u64>) -> bool {
        query.start <= self.start && self.end() <= query.end
    }
}
