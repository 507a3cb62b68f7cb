//! Outboards and combined encodings: the chunk groups' chaining values from a backend (all groups
//! in one bulk call, in parallel), every parent above them level by level, then the parents laid
//! out in pre-order or post-order, with or without the content between them.

use super::error::Error;
use super::layout::{Node, Order, Place, Tree, HEADER_LEN, PARENT_LEN};
use crate::backends::cpu::parent_cvs;
use crate::core::compress::Cv;
use crate::core::constants::IV;
use crate::tree::merkle::{reduce, split_levels};
use crate::tree::{merge_subtrees_root, subtree_node, Backend, Domain, TreeMode};
use blake3::Hash;
use rayon::prelude::*;

/// Parents per rayon task when a level is wide enough to share out.
const PARENTS_PER_TASK: usize = 4096;

/// Subtrees of at least this many chunk groups write their two halves' parents on two rayon
/// tasks.
const GROUPS_PER_TASK: u64 = 4096;

/// An outboard: a content's parent nodes apart from the content, in pre-order or post-order.
/// [`to_bytes`](Outboard::to_bytes) gives the file bao and bao-tree write; the hash is kept
/// apart, as both do.
///
/// ```
/// use b3accel::bao::{outboard_on, Order, Outboard};
/// use b3accel::Device;
/// let data = vec![7u8; 5000];
/// let (ob, hash) = outboard_on(Device::Cpu, &data, 0, Order::Pre)?;
/// assert_eq!(hash, blake3::hash(&data));
/// let file = ob.to_bytes();
/// assert_eq!(Outboard::from_bytes(&file, 0, Order::Pre)?, ob);
/// # Ok::<(), b3accel::bao::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outboard {
    tree: Tree,
    order: Order,
    parents: Vec<u8>,
}

impl Outboard {
    /// The tree's geometry.
    ///
    /// ```
    /// # use b3accel::bao::{outboard_on, Order};
    /// let (ob, _) = outboard_on(b3accel::Device::Cpu, &[1u8; 3000], 1, Order::Post)?;
    /// assert_eq!((ob.tree().size(), ob.tree().group_log()), (3000, 1));
    /// # Ok::<(), b3accel::bao::Error>(())
    /// ```
    pub fn tree(&self) -> Tree {
        self.tree
    }

    /// The order of the parent nodes.
    ///
    /// ```
    /// # use b3accel::bao::{outboard_on, Order};
    /// let (ob, _) = outboard_on(b3accel::Device::Cpu, b"abc", 0, Order::Post)?;
    /// assert_eq!(ob.order(), Order::Post);
    /// # Ok::<(), b3accel::bao::Error>(())
    /// ```
    pub fn order(&self) -> Order {
        self.order
    }

    /// The parent nodes, 64 bytes each, without size header or trailer: bao-tree's
    /// `PreOrderOutboard::data` or `PostOrderOutboard::data`.
    ///
    /// ```
    /// # use b3accel::bao::{outboard_on, Order};
    /// let (ob, _) = outboard_on(b3accel::Device::Cpu, &[0u8; 2048], 0, Order::Pre)?;
    /// assert_eq!(ob.parents().len(), 64);
    /// # Ok::<(), b3accel::bao::Error>(())
    /// ```
    pub fn parents(&self) -> &[u8] {
        &self.parents
    }

    /// The outboard file: for pre-order, the size (little-endian `u64`) then the parents, as
    /// bao writes it; for post-order, the parents then the size, as bao-tree's
    /// `PostOrderMemOutboard::into_inner_with_suffix`.
    ///
    /// ```
    /// # use b3accel::bao::{outboard_on, Order};
    /// let (ob, _) = outboard_on(b3accel::Device::Cpu, b"abc", 0, Order::Pre)?;
    /// assert_eq!(ob.to_bytes(), 3u64.to_le_bytes());
    /// # Ok::<(), b3accel::bao::Error>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + self.parents.len());
        match self.order {
            Order::Pre => {
                out.extend_from_slice(&self.tree.header());
                out.extend_from_slice(&self.parents);
            }
            Order::Post => {
                out.extend_from_slice(&self.parents);
                out.extend_from_slice(&self.tree.header());
            }
        }
        out
    }

    /// An outboard read from its file (see [`to_bytes`](Outboard::to_bytes)); an error where its
    /// length does not match the size it records.
    ///
    /// ```
    /// use b3accel::bao::{Order, Outboard};
    /// assert!(Outboard::from_bytes(&[1, 2, 3], 0, Order::Pre).is_err());
    /// ```
    pub fn from_bytes(file: &[u8], group_log: u8, order: Order) -> Result<Outboard, Error> {
        if file.len() < HEADER_LEN {
            return Err(Error::Invalid(format!("an outboard of {} bytes has no size field", file.len())));
        }
        let (size, parents) = match order {
            Order::Pre => {
                let (size, rest) = file.split_at(HEADER_LEN);
                (size, rest)
            }
            Order::Post => {
                let (rest, size) = file.split_at(file.len() - HEADER_LEN);
                (size, rest)
            }
        };
        let size = u64::from_le_bytes(size.try_into().expect("eight bytes"));
        let tree = Tree::new(size, group_log)?;
        if parents.len() as u64 != tree.outboard_len() {
            return Err(Error::Invalid(format!(
                "an outboard for {size} bytes in groups of {} bytes has {} bytes of parents, not {}",
                tree.group_len(),
                tree.outboard_len(),
                parents.len()
            )));
        }
        Ok(Outboard { tree, order, parents: parents.to_vec() })
    }

    /// The parent pair of the outboard parent `node` at `place`, as two chaining values.
    pub(crate) fn pair(&self, node: Node, place: Place) -> (Cv, Cv) {
        let at = place.index(self.order, self.tree.groups_of(node)) as usize * PARENT_LEN;
        let pair = &self.parents[at..at + PARENT_LEN];
        (pair[..32].try_into().expect("32 bytes"), pair[32..].try_into().expect("32 bytes"))
    }

    /// The byte offset of `node`'s pair in the outboard file.
    pub(crate) fn file_offset(&self, node: Node, place: Place) -> u64 {
        let header = if self.order == Order::Pre { HEADER_LEN as u64 } else { 0 };
        header + place.index(self.order, self.tree.groups_of(node)) * PARENT_LEN as u64
    }
}

/// Every chaining value of a content's bao tree: the chunk groups' and, level by level from
/// the groups up, every parent's (as non-root nodes: the root's hash is apart).
struct Cvs {
    groups: Vec<Cv>,
    inner: Vec<Cv>,
    /// Where each level of parents starts in `inner`, level 1 (the groups' parents) first.
    levels: Vec<usize>,
    hash: Hash,
}

impl Cvs {
    /// The chaining value of the node of `count` groups from group `first`.
    fn cv(&self, first: u64, count: u64) -> Cv {
        if count == 1 {
            return self.groups[first as usize];
        }
        let level = 64 - (count - 1).leading_zeros();
        self.inner[self.levels[level as usize - 1] + (first >> level) as usize]
    }
}

/// The parents of one level: each 64-byte block `left || right` compressed as a non-root parent,
/// many at a time on the CPU's SIMD kernels, on several cores where the level is wide.
fn parents_of(blocks: &[[u8; 64]], out: &mut [Cv]) {
    let children = blocks.as_flattened().as_chunks::<32>().0;
    let flags = Domain::HASH.flags;
    if blocks.len() >= 2 * PARENTS_PER_TASK {
        children
            .par_chunks(2 * PARENTS_PER_TASK)
            .zip(out.par_chunks_mut(PARENTS_PER_TASK))
            .for_each(|(children, out)| parent_cvs(children, &IV, flags, out));
    } else {
        parent_cvs(children, &IV, flags, out);
    }
}

/// Computes every chaining value of `data`'s tree: the full chunk groups in one call to
/// `backend` (which spreads them over its cores or work-items), a partial last group and the
/// parents here.
fn compute(backend: &dyn Backend, data: &[u8], tree: Tree) -> Result<Cvs, Error> {
    let groups = tree.groups();
    if groups == 1 {
        let hash = subtree_node(backend, data, 0, Domain::HASH)?.root_hash();
        return Ok(Cvs { groups: Vec::new(), inner: Vec::new(), levels: Vec::new(), hash: Hash::from_bytes(hash) });
    }
    let group_len = tree.group_len() as usize;
    let full = data.len() / group_len;
    let mut cvs = vec![[0u8; 32]; groups as usize];
    if full > 0 {
        let chunks = 1u64 << tree.group_log();
        backend.chunk_subtrees_capped(&data[..full * group_len], 0, chunks, &IV, 0, &mut cvs[..full])?;
    }
    if full < groups as usize {
        let first_chunk = (full as u64) << tree.group_log();
        cvs[full] = subtree_node(backend, &data[full * group_len..], first_chunk, Domain::HASH)?.chaining_value();
    }
    let mut inner = vec![[0u8; 32]; groups as usize - 1];
    let mut levels = Vec::new();
    let mut at = 0;
    for size in crate::tree::merkle::level_sizes(groups as usize) {
        levels.push(at);
        at += size;
    }
    reduce(&cvs, None, Some(split_levels(&mut inner, groups as usize)), &mut |blocks, out| {
        parents_of(blocks, out);
        Ok(())
    })?;
    let mut all = Cvs { groups: cvs, inner, levels, hash: Hash::from_bytes([0; 32]) };
    let (left, _) = tree.root().split();
    let left_groups = tree.groups_of(left);
    all.hash = merge_subtrees_root(&all.cv(0, left_groups), &all.cv(left_groups, groups - left_groups), TreeMode::Hash);
    Ok(all)
}

/// Writes the outboard parent `node` and those below it into `out`, the subtree's own part of
/// the outboard: its groups less one parents, the node first (pre-order) or last (post-order),
/// each half's parents together. Large halves are written on two rayon tasks.
fn write_parents(tree: Tree, cvs: &Cvs, node: Node, order: Order, out: &mut [u8]) {
    if !tree.is_outboard_parent(node) {
        return;
    }
    let (left, right) = node.split();
    let k = tree.group_log();
    let (lg, rg) = (tree.groups_of(left), tree.groups_of(right));
    let (left_len, right_len) = ((lg - 1) as usize * PARENT_LEN, (rg - 1) as usize * PARENT_LEN);
    let (pair, left_out, right_out) = match order {
        Order::Pre => {
            let (pair, rest) = out.split_at_mut(PARENT_LEN);
            let (left_out, right_out) = rest.split_at_mut(left_len);
            (pair, left_out, right_out)
        }
        Order::Post => {
            let (rest, pair) = out.split_at_mut(left_len + right_len);
            let (left_out, right_out) = rest.split_at_mut(left_len);
            (pair, left_out, right_out)
        }
    };
    pair[..32].copy_from_slice(&cvs.cv(left.start >> k, lg));
    pair[32..].copy_from_slice(&cvs.cv(right.start >> k, rg));
    if lg + rg >= GROUPS_PER_TASK {
        rayon::join(
            || write_parents(tree, cvs, left, order, left_out),
            || write_parents(tree, cvs, right, order, right_out),
        );
    } else {
        write_parents(tree, cvs, left, order, left_out);
        write_parents(tree, cvs, right, order, right_out);
    }
}

/// Appends the combined encoding of `node` (its parents before its children, content at the
/// leaves) to `out`.
fn write_encoded(tree: Tree, cvs: &Cvs, data: &[u8], node: Node, out: &mut Vec<u8>) {
    if !tree.is_outboard_parent(node) {
        let bytes = tree.bytes(node);
        out.extend_from_slice(&data[bytes.start as usize..bytes.end as usize]);
        return;
    }
    let (left, right) = node.split();
    let k = tree.group_log();
    out.extend_from_slice(&cvs.cv(left.start >> k, tree.groups_of(left)));
    out.extend_from_slice(&cvs.cv(right.start >> k, tree.groups_of(right)));
    write_encoded(tree, cvs, data, left, out);
    write_encoded(tree, cvs, data, right, out);
}

/// The outboard of `data` in groups of 2^`group_log` chunks, with the parents in `order`, and
/// its BLAKE3 hash, computed on `backend`: the groups' chaining values in one bulk call, the
/// parents above them on the CPU.
///
/// ```
/// use b3accel::bao::{outboard_with, Order};
/// use b3accel::{backend, Device};
/// let cpu = backend(Device::Cpu)?;
/// let data = vec![1u8; 40_000];
/// let (ob, hash) = outboard_with(&*cpu, &data, 4, Order::Post)?;
/// assert_eq!(hash, blake3::hash(&data));
/// assert_eq!(ob.parents().len(), 2 * 64); // three 16 KiB groups: two parents
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn outboard_with(
    backend: &dyn Backend,
    data: &[u8],
    group_log: u8,
    order: Order,
) -> Result<(Outboard, Hash), Error> {
    let tree = Tree::new(data.len() as u64, group_log)?;
    let cvs = compute(backend, data, tree)?;
    let mut parents = vec![0u8; tree.outboard_len() as usize];
    write_parents(tree, &cvs, tree.root(), order, &mut parents);
    Ok((Outboard { tree, order, parents }, cvs.hash))
}

/// [`outboard_with`] on `device`.
///
/// ```
/// use b3accel::bao::{outboard_on, Order};
/// let (ob, hash) = outboard_on(b3accel::Device::Cpu, &[5u8; 4096], 0, Order::Pre)?;
/// assert_eq!(ob.to_bytes().len(), 8 + 3 * 64);
/// # Ok::<(), b3accel::bao::Error>(())
/// ```
pub fn outboard_on(
    device: crate::tree::Device,
    data: &[u8],
    group_log: u8,
    order: Order,
) -> Result<(Outboard, Hash), Error> {
    outboard_with(&*crate::dispatch::backend(device)?, data, group_log, order)
}

/// The combined encoding of `data` in groups of 2^`group_log` chunks (the size, then parents
/// in pre-order with the content between them: bao's `encode` for group log 0, and the size
/// followed by bao-tree's full-range response otherwise) and its BLAKE3 hash, computed on
/// `backend`.
///
/// ```
/// use b3accel::bao::encode_with;
/// use b3accel::{backend, Device};
/// let (encoded, hash) = encode_with(&*backend(Device::Cpu)?, b"hello", 0)?;
/// assert_eq!(encoded, [&5u64.to_le_bytes()[..], b"hello"].concat());
/// assert_eq!(hash, blake3::hash(b"hello"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn encode_with(backend: &dyn Backend, data: &[u8], group_log: u8) -> Result<(Vec<u8>, Hash), Error> {
    let tree = Tree::new(data.len() as u64, group_log)?;
    let cvs = compute(backend, data, tree)?;
    let mut out = Vec::with_capacity(tree.encoded_len() as usize);
    out.extend_from_slice(&tree.header());
    write_encoded(tree, &cvs, data, tree.root(), &mut out);
    Ok((out, cvs.hash))
}

/// [`encode_with`] on `device`.
///
/// ```
/// use b3accel::bao::encode_on;
/// let (encoded, _) = encode_on(b3accel::Device::Cpu, &[0u8; 2048], 0)?;
/// assert_eq!(encoded.len(), 8 + 64 + 2048);
/// # Ok::<(), b3accel::bao::Error>(())
/// ```
pub fn encode_on(device: crate::tree::Device, data: &[u8], group_log: u8) -> Result<(Vec<u8>, Hash), Error> {
    encode_with(&*crate::dispatch::backend(device)?, data, group_log)
}
