//! The shape of a bao tree, for every layer: the content's chunk groups, BLAKE3's left-heavy tree
//! over them ([`Tree`], [`Node`]), where each parent lies in a pre-order or post-order outboard,
//! and how the parents map onto the levels of a Merkle reduction that keeps every node (the layout
//! of `merkle::level_sizes`), which is how a GPU computes them.
//!
//! Over `n` chunk groups, pairing each level's nodes with the odd last one carried up (BLAKE3
//! parents: the IV as key, flags `PARENT`) builds exactly BLAKE3's left-heavy tree over the
//! groups. The node of level `h` index `j` covers groups `[j << h, min((j + 1) << h, n))`; it is
//! stored (hashed) where it has a right child, and then it is a parent of the outboard. A carried
//! node is the node of a lower level over the same groups.

use super::error::{Error, Result};
#[cfg(test)]
use crate::core::compress::Cv;
use crate::core::constants::CHUNK_LEN;
use std::ops::Range;

/// The largest chunk group accepted: 2^20 chunks (1 GiB). A decoder holds one group in memory.
pub const MAX_GROUP_LOG: u8 = 20;

/// The length of the size header (little-endian `u64`) of encodings, slices and pre-order
/// outboard files, and of the size trailer of post-order outboard files.
pub const HEADER_LEN: usize = 8;

/// The length of a parent node in an encoding or outboard: its two children's chaining values.
pub const PARENT_LEN: usize = 64;

/// The geometry of a bao tree: the content's size and its chunk group size, 2^`group_log`
/// chunks (group log 0 is bao's format, 4 iroh's 16 KiB groups). The tree's leaves are the
/// chunk groups; its parent nodes are BLAKE3's, over the groups. Made by `Tree::new` (checked).
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
    /// The tree of `size` content bytes in groups of 2^`group_log` chunks, checked as the public
    /// `Tree::new` (in `api/bao/layout.rs`, which gives this error the bao API's type) documents:
    /// a group log up to [`MAX_GROUP_LOG`], and an encoding whose length fits in a `u64`.
    pub(crate) fn checked(size: u64, group_log: u8) -> Result<Tree> {
        if group_log > MAX_GROUP_LOG {
            return Err(Error::InvalidInput(format!(
                "a chunk group log of {group_log} is above the largest accepted, {MAX_GROUP_LOG}"
            )));
        }
        let tree = Tree { size, group_log };
        if size.checked_add(HEADER_LEN as u64 + tree.outboard_len()).is_none() {
            return Err(Error::InvalidInput(format!(
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

/// The order of the parent nodes in an outboard: bao's and bao-tree's `PreOrderOutboard`
/// (parents before their children, a size header first), or bao-tree's `PostOrderOutboard`
/// (children before their parents, the root last, a size trailer).
///
/// ```
/// use b3accel::bao::Order;
/// assert_ne!(Order::Pre, Order::Post);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// Parents in pre-order, as in bao's outboards and combined encodings.
    Pre,
    /// Parents in post-order, as in bao-tree's `PostOrderOutboard`.
    Post,
}

/// Where an outboard parent lies: its index among the parents in pre-order and in post-order.
/// The children's places follow from the parent's (see [`Place::children`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Place {
    /// Index in pre-order: the node itself.
    pub pre: u64,
    /// Index in post-order of the first parent of this node's subtree.
    pub post_base: u64,
}

impl Place {
    /// The root's place.
    pub const ROOT: Place = Place { pre: 0, post_base: 0 };

    /// This node's index in `order`, for a node of `groups` chunk groups.
    pub fn index(&self, order: Order, groups: u64) -> u64 {
        match order {
            Order::Pre => self.pre,
            Order::Post => self.post_base + groups - 2,
        }
    }

    /// The places of the children of a node whose left child holds `left_groups` groups.
    pub fn children(&self, left_groups: u64) -> (Place, Place) {
        (
            Place { pre: self.pre + 1, post_base: self.post_base },
            Place { pre: self.pre + left_groups, post_base: self.post_base + left_groups - 1 },
        )
    }
}

/// Where the level reduction keeps a node of the tree over the groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kept {
    /// A chunk group: its chaining value, by group index.
    Group(u64),
    /// A stored inner node: (level >= 1, index in the level).
    Inner(u32, u64),
}

/// The node over `count >= 1` groups from group `first` (a node of the tree: `first` is a
/// multiple of the power of two at or above `count`): a group, or the stored node of level
/// `ceil(log2 count)`, where it was hashed from its two children.
pub(crate) fn kept(first: u64, count: u64) -> Kept {
    if count == 1 {
        return Kept::Group(first);
    }
    let level = 64 - (count - 1).leading_zeros();
    Kept::Inner(level, first >> level)
}

#[cfg(test)]
/// The index of the first stored node of `level` (1 or more) among the inner nodes of the tree
/// over `n` groups: the sizes of the levels below it, as `merkle::level_sizes` gives them.
pub(crate) fn level_start(n: u64, level: u32) -> u64 {
    let (mut at, mut count) = (0, n);
    for _ in 1..level {
        at += count / 2;
        count = count.div_ceil(2);
    }
    at
}

/// The index in an outboard in `order` of the parent of `level` (1 or more) index `j` in a
/// complete tree of 2^`height` groups: [`parent_index`] where every node has a right child, so
/// that a parent has `height - level` ancestors and `2^level - 2` parents below it.
#[inline]
pub(crate) fn complete_parent_index(order: Order, height: u32, level: u32, j: u64) -> u64 {
    let before = (j << level) - j.count_ones() as u64;
    match order {
        Order::Pre => before + u64::from(height - level),
        Order::Post => before + (1u64 << level) - 2,
    }
}

#[cfg(test)]
/// The stored node at index `i` of the `n - 1` inner nodes: (level, index in the level).
pub(crate) fn inner_node(n: u64, i: u64) -> (u32, u64) {
    debug_assert!(i + 1 < n);
    let (mut at, mut count, mut level) = (0, n, 1);
    while i >= at + count / 2 {
        at += count / 2;
        count = count.div_ceil(2);
        level += 1;
    }
    (level, i - at)
}

#[cfg(test)]
/// The two children of the stored node of `level` index `j` over `n` groups: the left one
/// holds `2^(level - 1)` groups, the right one the rest of the node's groups.
pub(crate) fn children(n: u64, level: u32, j: u64) -> (Kept, Kept) {
    let half = 1u64 << (level - 1);
    let right = (2 * j + 1) * half;
    (kept(2 * j * half, half), kept(right, half.min(n - right)))
}

#[cfg(test)]
/// The index in an outboard in `order` of the parent stored at `level` index `j` over `n`
/// groups: with `s` its first group, the parents wholly before it (`s - popcount(s)`: one
/// complete subtree per set bit of `s`) and, in pre-order, its ancestors (the levels above whose
/// node over `s` has a right child), or, in post-order, its own subtree's other parents.
pub(crate) fn parent_index(n: u64, level: u32, j: u64, order: Order) -> u64 {
    let s = j << level;
    let before = s - s.count_ones() as u64;
    match order {
        Order::Pre => {
            let top = 64 - (n - 1).leading_zeros();
            let ancestors = (level + 1..=top).filter(|&h| ((s >> h) << h) + (1 << (h - 1)) < n).count() as u64;
            before + ancestors
        }
        Order::Post => before + (1u64 << level).min(n - s) - 2,
    }
}

#[cfg(test)]
/// The outboard's parents in `order` from the chaining values of the `n` groups and the `n - 1`
/// inner nodes of their level reduction: what the GPU kernels `bao_place` do, one parent at a
/// time.
pub(crate) fn place_parents(groups: &[Cv], inner: &[Cv], order: Order, out: &mut [u8]) {
    let n = groups.len() as u64;
    debug_assert!(inner.len() as u64 + 1 == n && out.len() as u64 == (n - 1) * 64);
    let cv = |node| match node {
        Kept::Group(g) => groups[g as usize],
        Kept::Inner(level, j) => inner[(level_start(n, level) + j) as usize],
    };
    for i in 0..n.saturating_sub(1) {
        let (level, j) = inner_node(n, i);
        let (left, right) = children(n, level, j);
        let at = parent_index(n, level, j, order) as usize * 64;
        out[at..at + 32].copy_from_slice(&cv(left));
        out[at + 32..at + 64].copy_from_slice(&cv(right));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every parent's (first group, groups, pre index, post index), from the root down as the
    /// outboard writers walk it with [`Place`].
    fn walk(first: u64, count: u64, place: Place, out: &mut Vec<(u64, u64, u64, u64)>) {
        if count < 2 {
            return;
        }
        out.push((first, count, place.index(Order::Pre, count), place.index(Order::Post, count)));
        let left = 1u64 << (63 - (count - 1).leading_zeros());
        let (l, r) = place.children(left);
        walk(first, left, l, out);
        walk(first + left, count - left, r, out);
    }

    #[test]
    fn stored_nodes_are_the_parents_at_their_places() {
        for n in (1..300).chain([511, 512, 513, 1000, 4097, 65_537]) {
            let mut want = Vec::new();
            walk(0, n, Place::ROOT, &mut want);
            let mut got: Vec<_> = (0..n - 1)
                .map(|i| {
                    let (level, j) = inner_node(n, i);
                    let s = j << level;
                    assert_eq!(kept(s, (1 << level).min(n - s)), Kept::Inner(level, j), "n = {n}");
                    (
                        s,
                        (1 << level).min(n - s),
                        parent_index(n, level, j, Order::Pre),
                        parent_index(n, level, j, Order::Post),
                    )
                })
                .collect();
            got.sort_unstable();
            want.sort_unstable();
            assert_eq!(got, want, "n = {n}");
            assert_eq!(level_start(n, 65 - (n.max(2) - 1).leading_zeros()), n.saturating_sub(1));
        }
    }

    #[test]
    fn complete_trees_index_as_any_tree() {
        for height in 1..12 {
            let n = 1u64 << height;
            for level in 1..=height {
                for j in 0..n >> level {
                    for order in [Order::Pre, Order::Post] {
                        let want = parent_index(n, level, j, order);
                        assert_eq!(complete_parent_index(order, height, level, j), want, "{n} {level} {j} {order:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn children_are_kept_where_the_reduction_put_them() {
        // 7 groups: ((01)(23))((45)6): the right child of the root is node 1 of level 2, that
        // of (45)6 group 6, carried.
        assert_eq!(children(7, 3, 0), (Kept::Inner(2, 0), Kept::Inner(2, 1)));
        assert_eq!(children(7, 2, 1), (Kept::Inner(1, 2), Kept::Group(6)));
        assert_eq!(children(5, 3, 0), (Kept::Inner(2, 0), Kept::Group(4)));
        assert_eq!(inner_node(7, 5), (3, 0));
        assert_eq!(level_start(7, 3), 5);
    }
}
