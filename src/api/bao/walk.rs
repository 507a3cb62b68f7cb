//! One parallel pass over a bao tree that keeps every parent: the pass that writes outboards and
//! encodings and the one that checks them while decoding.
//!
//! The tree is cut into pieces, subtrees of [`PIECE_BYTES`] of content (or one larger chunk
//! group). A piece is one rayon task on one core: it hashes its chunk groups, computes its
//! parents in a scratch of its own and writes or checks each of them in place. Above the pieces, each parent joins its two halves' tasks and
//! writes or checks its own pair. No level of the whole tree is held in memory, and no task waits
//! for a level to finish, so the pass costs a plain hash plus the parents it keeps.

use super::error::{Block, Error};
use super::layout::{Node, Order, Tree, PARENT_LEN};
use crate::backends::cpu::{as_pieces_of_large_input, copy_streaming, parent_cvs, prefetch, store_fence};
use crate::core::compress::Cv;
use crate::core::constants::IV;
use crate::tree::bao_shape::{complete_parent_index, kept, Kept};
use crate::tree::merkle::{level_sizes, reduce, split_levels};
use crate::tree::{merge_subtrees_non_root, subtree_node, Backend, Domain, TreeMode};
use std::mem::MaybeUninit;
use std::ops::Range;

/// Content per piece: below the CPU backend's threshold for its thread pool, so that a piece's
/// groups are hashed, and their chaining values read back, on one core; a 64 MiB input makes
/// hundreds of tasks. Larger pieces hashed across cores cost a k = 0 outboard about a tenth on 16
/// cores (docs/performance.md).
const PIECE_BYTES: u64 = 256 * 1024;

/// Content a decoder gathers and hashes at a time: one SIMD group of chunks, while the next
/// one's bytes are prefetched (docs/performance.md).
const GATHER_BATCH_BYTES: u64 = 16 * 1024;

/// Where each node's parents lie in the buffer a walk writes or reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Layout {
    /// An outboard's parents, in pre-order or post-order.
    Outboard(Order),
    /// A combined encoding after its size header: parents in pre-order, content between them.
    Encoded,
}

impl Layout {
    /// The length of `node`'s part of the buffer.
    pub fn len(self, tree: Tree, node: Node) -> usize {
        match self {
            Layout::Outboard(_) => (tree.groups_of(node) - 1) as usize * PARENT_LEN,
            Layout::Encoded => tree.encoded_len_of(node) as usize,
        }
    }

    /// The length of the part of the node over the `count` groups from group `first`.
    fn len_of(self, tree: Tree, first: u64, count: u64) -> usize {
        let parents = (count - 1) as usize * PARENT_LEN;
        match self {
            Layout::Outboard(_) => parents,
            Layout::Encoded => {
                let len = tree.group_len();
                parents + ((first + count) * len).min(tree.size()).saturating_sub(first * len) as usize
            }
        }
    }

    /// Where a parent's pair and its children's parts lie in its part: the pair's offset, the
    /// left child's range and the right child's.
    fn parts(self, tree: Tree, node: Node) -> (usize, Range<usize>, Range<usize>) {
        let (left, right) = node.split();
        self.arrange(self.len(tree, left), self.len(tree, right))
    }

    /// The pair's offset and the children's ranges in a parent's part whose children's parts
    /// are `l` and `r` bytes long.
    fn arrange(self, l: usize, r: usize) -> (usize, Range<usize>, Range<usize>) {
        match self {
            Layout::Outboard(Order::Post) => (l + r, 0..l, l..l + r),
            Layout::Outboard(Order::Pre) | Layout::Encoded => {
                (0, PARENT_LEN..PARENT_LEN + l, PARENT_LEN + l..PARENT_LEN + l + r)
            }
        }
    }
}

/// A node's part of a buffer that a walk hands to the tasks of the node's children.
pub(super) trait Part: Send + Sized {
    /// The bytes before `at` and those from it.
    fn split(self, at: usize) -> (Self, Self);

    /// The pair's part and the two children's parts of a parent's part.
    fn split_parent(self, layout: Layout, tree: Tree, node: Node) -> (Self, Self, Self) {
        let (_, left, right) = layout.parts(tree, node);
        let (head, rest) = self.split(left.start);
        let (left, rest) = rest.split(left.len());
        let (right, tail) = rest.split(right.len());
        // The pair comes after its children in post-order (at offset 0 too, where both children
        // are single groups, without parents of their own), before them otherwise.
        (if layout == Layout::Outboard(Order::Post) { tail } else { head }, left, right)
    }
}

impl Part for &[u8] {
    fn split(self, at: usize) -> (Self, Self) {
        self.split_at(at)
    }
}

impl Part for &mut [u8] {
    fn split(self, at: usize) -> (Self, Self) {
        self.split_at_mut(at)
    }
}

impl Part for &mut [MaybeUninit<u8>] {
    fn split(self, at: usize) -> (Self, Self) {
        self.split_at_mut(at)
    }
}

/// Writes `src` into `dest`, of the same length.
pub(super) fn put(dest: &mut [MaybeUninit<u8>], src: &[u8]) {
    assert_eq!(dest.len(), src.len(), "put: lengths differ");
    for (d, s) in dest.iter_mut().zip(src) {
        d.write(*s);
    }
}

/// What a walk does with the nodes it computes: write them ([`Write`]) or check them ([`Check`]).
pub(super) trait Side: Sync {
    /// The buffer of parents (and, for an encoding, content) being written or read.
    type Nodes: Part;
    /// The content being hashed.
    type Content: Part;

    /// The tree and where its parents lie.
    fn shape(&self) -> (Tree, Layout);

    /// The chaining values of the chunk groups of `node` (one piece), whose parts are `nodes` and
    /// `content`; for [`Layout::Encoded`], the groups' content first moved between their places
    /// in the encoding and `content`.
    fn group_cvs(
        &self,
        node: Node,
        nodes: &mut Self::Nodes,
        content: &mut Self::Content,
        out: &mut [Cv],
    ) -> Result<(), Error>;

    /// Writes or checks the pair of a parent at `nodes[at..]`, its children's chaining values as
    /// computed from the content.
    fn pair(&self, nodes: &mut Self::Nodes, at: usize, left: &Cv, right: &Cv) -> Result<(), Error>;
}

/// The children's chaining values of the parent `node`, every pair below it (and its own) written
/// or checked; `nodes` and `content` are the node's parts.
pub(super) fn children<S: Side>(side: &S, node: Node, nodes: S::Nodes, content: S::Content) -> Result<(Cv, Cv), Error> {
    let (tree, layout) = side.shape();
    if is_piece(side, node) {
        return Ok(piece(side, node, nodes, content)?.children(tree, node));
    }
    let (left, right) = node.split();
    let (mut pair, left_part, right_part) = nodes.split_parent(layout, tree, node);
    let (left_content, right_content) = content.split((tree.bytes(left).end - tree.bytes(left).start) as usize);
    let (l, r) = rayon::join(
        || node_cv(side, left, left_part, left_content),
        || node_cv(side, right, right_part, right_content),
    );
    let (l, r) = (l?, r?);
    side.pair(&mut pair, 0, &l, &r)?;
    Ok((l, r))
}

/// The chaining value of `node`, never the root, every pair under it written or checked.
fn node_cv<S: Side>(side: &S, node: Node, nodes: S::Nodes, content: S::Content) -> Result<Cv, Error> {
    if is_piece(side, node) {
        return Ok(piece(side, node, nodes, content)?.top());
    }
    let (l, r) = children(side, node, nodes, content)?;
    Ok(merge_subtrees_non_root(&l, &r, TreeMode::Hash))
}

/// Whether `node` is one task's piece: at most [`PIECE_BYTES`] of content, or one chunk group.
fn is_piece<S: Side>(side: &S, node: Node) -> bool {
    let (tree, _) = side.shape();
    tree.groups_of(node) <= (PIECE_BYTES / tree.group_len()).max(1)
}

/// One piece: its groups' content moved (encodings), its groups hashed, its parents computed and
/// each pair written or checked. Returns the piece's chaining values.
fn piece<S: Side>(side: &S, node: Node, mut nodes: S::Nodes, mut content: S::Content) -> Result<Levels, Error> {
    let (tree, layout) = side.shape();
    let mut groups = vec![[0u8; 32]; tree.groups_of(node) as usize];
    // The piece's content comes from memory, as a large input's does: the kernels prefetch ahead.
    as_pieces_of_large_input(|| side.group_cvs(node, &mut nodes, &mut content, &mut groups))?;
    let levels = Levels::new(groups, node.start >> tree.group_log())?;
    let count = levels.groups.len() as u64;
    let pair = &mut |at, l: &Cv, r: &Cv| side.pair(&mut nodes, at, l, r);
    if count.is_power_of_two() {
        levels.each_pair_complete(tree, layout, pair)?;
    } else {
        levels.each_pair(tree, layout, levels.first, count, 0, pair)?;
    }
    Ok(levels)
}

/// Hashes the content of the chunk groups of the piece `node`, at their places in its part of
/// an encoding, `nodes`, into `out`, and copies it into `dest`, a batch of groups at a time. A
/// batch of several groups is gathered into a small buffer that stays in this core's cache, one
/// group is hashed where it lies; the next batch's bytes are prefetched before a batch is hashed,
/// and the content goes to `dest` by streaming stores: reading the encoding overlaps the hashing,
/// and the output is written without being read first.
fn gather_and_hash(
    backend: &dyn Backend,
    tree: Tree,
    node: Node,
    nodes: &[u8],
    dest: &mut [u8],
    out: &mut [Cv],
) -> Result<(), Error> {
    let mut places = Vec::with_capacity(out.len());
    each_group(tree, node, &mut |at, bytes| places.push((at, bytes)));
    let per_batch = (GATHER_BATCH_BYTES / tree.group_len()).max(1) as usize;
    let mut gathered = Vec::with_capacity(if per_batch > 1 { GATHER_BATCH_BYTES as usize } else { 0 });
    let fetch = |batch: &[(usize, Range<usize>)]| {
        let mut budget = GATHER_BATCH_BYTES as usize;
        for (at, bytes) in batch {
            let len = bytes.len().min(budget);
            prefetch(&nodes[*at..*at + len]);
            budget -= len;
        }
    };
    let batches: Vec<&[(usize, Range<usize>)]> = places.chunks(per_batch).collect();
    if let Some(first) = batches.first() {
        fetch(first);
    }
    for (i, batch) in batches.iter().enumerate() {
        let content = if let [(at, bytes)] = batch {
            &nodes[*at..*at + bytes.len()]
        } else {
            gathered.clear();
            for (at, bytes) in batch.iter() {
                gathered.extend_from_slice(&nodes[*at..*at + bytes.len()]);
            }
            &gathered[..]
        };
        if let Some(next) = batches.get(i + 1) {
            fetch(next);
        }
        let first_group = i * per_batch;
        let first_chunk = node.start + ((first_group as u64) << tree.group_log());
        hash_groups(backend, tree, first_chunk, content, &mut out[first_group..first_group + batch.len()])?;
        copy_streaming(&mut dest[batch[0].1.start..batch[batch.len() - 1].1.end], content);
    }
    store_fence();
    Ok(())
}

/// Calls `f` with each chunk group of the piece `node` in an encoding: the group's offset in the
/// piece's part and its content's range in the piece's content, in content order.
fn each_group(tree: Tree, node: Node, f: &mut dyn FnMut(usize, Range<usize>)) {
    fn under(tree: Tree, node: Node, at: usize, bytes_at: usize, f: &mut dyn FnMut(usize, Range<usize>)) {
        if !tree.is_outboard_parent(node) {
            let bytes = tree.bytes(node);
            return f(at, bytes_at..bytes_at + (bytes.end - bytes.start) as usize);
        }
        let (_, left_part, right_part) = Layout::Encoded.parts(tree, node);
        let (left, right) = node.split();
        let left_bytes = (tree.bytes(left).end - tree.bytes(left).start) as usize;
        under(tree, left, at + left_part.start, bytes_at, f);
        under(tree, right, at + right_part.start, bytes_at + left_bytes, f);
    }
    under(tree, node, 0, 0, f)
}

/// Every chaining value of one piece: its chunk groups' and, level by level, its parents'.
pub(super) struct Levels {
    /// The index of the piece's first group in the whole tree.
    first: u64,
    groups: Vec<Cv>,
    inner: Vec<Cv>,
    /// Where each level of parents starts in `inner`, the groups' parents first.
    starts: Vec<usize>,
}

impl Levels {
    /// The parents above `groups`, the chaining values of the groups from group `first`.
    fn new(groups: Vec<Cv>, first: u64) -> Result<Levels, Error> {
        let n = groups.len();
        let mut inner = vec![[0u8; 32]; n - 1];
        let mut starts = Vec::new();
        let mut at = 0;
        for size in level_sizes(n) {
            starts.push(at);
            at += size;
        }
        if n > 1 {
            reduce(&groups, None, Some(split_levels(&mut inner, n)), &mut |blocks, out| {
                parent_cvs(blocks.as_flattened().as_chunks::<32>().0, &IV, Domain::HASH.flags, out);
                Ok(())
            })?;
        }
        Ok(Levels { first, groups, inner, starts })
    }

    /// The chaining value of the node of `count` groups from group `first` (of the whole tree).
    fn cv(&self, first: u64, count: u64) -> Cv {
        match kept(first - self.first, count) {
            Kept::Group(g) => self.groups[g as usize],
            Kept::Inner(level, j) => self.inner[self.starts[level as usize - 1] + j as usize],
        }
    }

    /// The chaining values of the children of the parent `node`.
    fn children(&self, tree: Tree, node: Node) -> (Cv, Cv) {
        let (left, right) = node.split();
        let k = tree.group_log();
        (self.cv(left.start >> k, tree.groups_of(left)), self.cv(right.start >> k, tree.groups_of(right)))
    }

    /// Calls `f(at, left, right)` for every parent over the `count` groups from group `first`
    /// (a node of the piece whose part of the buffer starts at `at`), with its pair's offset and
    /// its children's chaining values. Group arithmetic only: a 64 MiB outboard in 1 KiB groups
    /// has 65,535 parents, and per-parent work shows in its time (docs/performance.md).
    fn each_pair<F>(
        &self,
        tree: Tree,
        layout: Layout,
        first: u64,
        count: u64,
        at: usize,
        f: &mut F,
    ) -> Result<(), Error>
    where
        F: FnMut(usize, &Cv, &Cv) -> Result<(), Error>,
    {
        if count < 2 {
            return Ok(());
        }
        if count == 2 {
            let g = (first - self.first) as usize;
            return f(at, &self.groups[g], &self.groups[g + 1]);
        }
        let left = 1u64 << (63 - (count - 1).leading_zeros());
        let (l, r) = (self.cv(first, left), self.cv(first + left, count - left));
        let (l_len, r_len) = (layout.len_of(tree, first, left), layout.len_of(tree, first + left, count - left));
        let (pair, l_part, r_part) = layout.arrange(l_len, r_len);
        f(at + pair, &l, &r)?;
        self.each_pair(tree, layout, first, left, at + l_part.start, f)?;
        self.each_pair(tree, layout, first + left, count - left, at + r_part.start, f)
    }

    /// [`each_pair`](Levels::each_pair) for a piece of 2^h groups, a complete tree: level by level,
    /// each pair straight from the level below, where its two children lie side by side, to its
    /// place in the layout.
    fn each_pair_complete<F>(&self, tree: Tree, layout: Layout, f: &mut F) -> Result<(), Error>
    where
        F: FnMut(usize, &Cv, &Cv) -> Result<(), Error>,
    {
        let height = self.groups.len().trailing_zeros();
        let (order, group_len) = match layout {
            Layout::Outboard(order) => (order, 0),
            Layout::Encoded => (Order::Pre, tree.group_len()),
        };
        for level in 1..=height {
            let below = if level == 1 { &self.groups[..] } else { &self.inner[self.starts[level as usize - 2]..] };
            for j in 0..(self.groups.len() >> level) as u64 {
                let index = complete_parent_index(order, height, level, j);
                // In an encoding, the content of the groups before the parent's comes first.
                let at = index * PARENT_LEN as u64 + (j << level) * group_len;
                f(at as usize, &below[2 * j as usize], &below[2 * j as usize + 1])?;
            }
        }
        Ok(())
    }

    /// The chaining value of the whole piece.
    fn top(&self) -> Cv {
        self.cv(self.first, self.groups.len() as u64)
    }
}

/// The chaining values of the chunk groups that `content` (the content of the nodes from chunk
/// `first_chunk`, starting on a group) holds, computed on `backend`: the full groups in one call,
/// a partial last group apart.
pub(super) fn hash_groups(
    backend: &dyn Backend,
    tree: Tree,
    first_chunk: u64,
    content: &[u8],
    out: &mut [Cv],
) -> Result<(), Error> {
    let group_len = tree.group_len() as usize;
    let full = content.len() / group_len;
    if full > 0 {
        let chunks = 1u64 << tree.group_log();
        backend.chunk_subtrees_capped(&content[..full * group_len], first_chunk, chunks, &IV, 0, &mut out[..full])?;
    }
    if full < out.len() {
        let first = first_chunk + ((full as u64) << tree.group_log());
        out[full] = subtree_node(backend, &content[full * group_len..], first, Domain::HASH)?.chaining_value();
    }
    Ok(())
}

/// Where a writing walk's group chaining values come from.
pub(super) enum Groups<'a> {
    /// Every group's, computed beforehand (a GPU: one bulk call for the whole content).
    Given(&'a [Cv]),
    /// Hashed by each piece on this backend (the CPU: each piece's content while it is in cache).
    Hashed(&'a dyn Backend),
}

/// A walk that writes an outboard's parents or an encoding (parents and content) into a buffer
/// that need not be initialized: every byte of it is written once.
pub(super) struct Write<'a> {
    pub tree: Tree,
    pub layout: Layout,
    pub groups: Groups<'a>,
}

impl<'a> Side for Write<'a> {
    type Nodes = &'a mut [MaybeUninit<u8>];
    type Content = &'a [u8];

    fn shape(&self) -> (Tree, Layout) {
        (self.tree, self.layout)
    }

    fn group_cvs(
        &self,
        node: Node,
        nodes: &mut &'a mut [MaybeUninit<u8>],
        content: &mut &'a [u8],
        out: &mut [Cv],
    ) -> Result<(), Error> {
        if self.layout == Layout::Encoded {
            each_group(self.tree, node, &mut |at, bytes| {
                let len = bytes.len();
                put(&mut nodes[at..at + len], &content[bytes]);
            });
        }
        match self.groups {
            Groups::Given(all) => {
                let first = (node.start >> self.tree.group_log()) as usize;
                out.copy_from_slice(&all[first..first + out.len()]);
                Ok(())
            }
            Groups::Hashed(backend) => hash_groups(backend, self.tree, node.start, content, out),
        }
    }

    fn pair(&self, nodes: &mut &'a mut [MaybeUninit<u8>], at: usize, left: &Cv, right: &Cv) -> Result<(), Error> {
        put(&mut nodes[at..at + 32], left);
        put(&mut nodes[at + 32..at + PARENT_LEN], right);
        Ok(())
    }
}

/// A walk that checks an outboard's parents or an encoding against the content, gathering an
/// encoding's content into `Content` as it goes. A pair that does not match ends the walk with
/// [`Error::Corrupt`]; a decoder then decodes the part again in order, to report the first node
/// that does not verify, where a top-down decode meets it, and release what came before.
pub(super) struct Check<'a> {
    pub tree: Tree,
    pub layout: Layout,
    pub backend: &'a dyn Backend,
}

impl<'a> Side for Check<'a> {
    type Nodes = &'a [u8];
    type Content = &'a mut [u8];

    fn shape(&self) -> (Tree, Layout) {
        (self.tree, self.layout)
    }

    fn group_cvs(
        &self,
        node: Node,
        nodes: &mut &'a [u8],
        content: &mut &'a mut [u8],
        out: &mut [Cv],
    ) -> Result<(), Error> {
        if self.layout != Layout::Encoded {
            return hash_groups(self.backend, self.tree, node.start, content, out);
        }
        gather_and_hash(self.backend, self.tree, node, nodes, content, out)
    }

    fn pair(&self, nodes: &mut &'a [u8], at: usize, left: &Cv, right: &Cv) -> Result<(), Error> {
        if nodes[at..at + 32] == left[..] && nodes[at + 32..at + PARENT_LEN] == right[..] {
            return Ok(());
        }
        Err(Error::Corrupt { block: Block::Parent, offset: at as u64, content: 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::bao::encode::outboard_with;
    use crate::tree::bao_shape::place_parents;

    /// The outboard the walk writes for `len` bytes in groups of 2^`k` chunks, both orders, is
    /// the placement the GPU kernels do from the groups' level reduction.
    fn walk_matches_placement(cpu: &dyn Backend, k: u8, len: usize) {
        let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let tree = Tree::new(len as u64, k).unwrap();
        let mut cvs = vec![[0u8; 32]; tree.groups() as usize];
        hash_groups(cpu, tree, 0, &data, &mut cvs).unwrap();
        let levels = Levels::new(cvs, 0).unwrap();
        for order in [Order::Pre, Order::Post] {
            let mut want = vec![0u8; tree.outboard_len() as usize];
            place_parents(&levels.groups, &levels.inner, order, &mut want);
            let (got, hash) = outboard_with(cpu, &data, k, order).unwrap();
            assert!(got.parents() == want, "k = {k}, {len} bytes, {order:?}");
            assert_eq!(hash, blake3::hash(&data));
        }
    }

    /// Group counts around powers of two, at group logs 0, 1 and 4.
    #[test]
    fn placing_the_level_reduction_gives_the_outboard() {
        let cpu = &**crate::dispatch::cpu_backend();
        for k in [0u8, 1, 4] {
            for groups in (1..40u64).chain([63, 64, 65, 100, 257]) {
                walk_matches_placement(cpu, k, ((groups - 1) << k) as usize * 1024 + 700);
            }
        }
    }

    /// Groups as large as a piece or larger: nodes of two single-group children are split above
    /// the pieces, and their post-order pair lies at offset 0 of their part, after no parents.
    #[test]
    fn groups_larger_than_a_piece() {
        let cpu = &**crate::dispatch::cpu_backend();
        for (k, len) in [(8u8, (3usize << 18) + 1000), (9, (5 << 19) + 7), (10, 2 << 20)] {
            walk_matches_placement(cpu, k, len);
        }
    }
}
