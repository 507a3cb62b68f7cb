//! Outboards and combined encodings: the tree's parents laid out in pre-order or post-order, with
//! or without the content between them, written by one parallel walk (`walk.rs`).

use super::error::Error;
use super::layout::{Node, Order, Place, Tree, HEADER_LEN, PARENT_LEN};
use super::walk::{children, hash_groups, put, Groups, Layout, Write};
use crate::core::compress::Cv;
use crate::tree::{merge_subtrees_root, subtree_node, Backend, Domain, TreeMode};
use blake3::Hash;
use std::mem::MaybeUninit;

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

    /// The parents of the subtree under the outboard parent `node` at `place`: its own part of
    /// the outboard, the node's pair first (pre-order) or last (post-order).
    pub(crate) fn parents_of(&self, node: Node, place: Place) -> &[u8] {
        let first = match self.order {
            Order::Pre => place.pre,
            Order::Post => place.post_base,
        } as usize;
        let count = (self.tree.groups_of(node) - 1) as usize;
        &self.parents[first * PARENT_LEN..(first + count) * PARENT_LEN]
    }

    /// The byte offset of `node`'s pair in the outboard file.
    pub(crate) fn file_offset(&self, node: Node, place: Place) -> u64 {
        let header = if self.order == Order::Pre { HEADER_LEN as u64 } else { 0 };
        header + place.index(self.order, self.tree.groups_of(node)) * PARENT_LEN as u64
    }
}

/// The hash of `data` and its tree's parents written into `nodes` in `layout` (for an encoding,
/// with the content between them), on `backend`: a GPU hashes every chunk group in one bulk call
/// before the walk; on the CPU each piece of the walk hashes its own groups.
fn write(
    backend: &dyn Backend,
    data: &[u8],
    tree: Tree,
    layout: Layout,
    nodes: &mut [MaybeUninit<u8>],
) -> Result<Hash, Error> {
    if tree.groups() == 1 {
        put(nodes, if layout == Layout::Encoded { data } else { &[] });
        return Ok(Hash::from_bytes(subtree_node(backend, data, 0, Domain::HASH)?.root_hash()));
    }
    let given;
    let groups = if backend.info().backend.id().is_gpu() {
        let mut all = vec![[0u8; 32]; tree.groups() as usize];
        hash_groups(backend, tree, 0, data, &mut all)?;
        given = all;
        Groups::Given(&given)
    } else {
        Groups::Hashed(backend)
    };
    let (left, right) = children(&Write { tree, layout, groups }, tree.root(), nodes, data)?;
    Ok(merge_subtrees_root(&left, &right, TreeMode::Hash))
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
    // Not zeroed first: the walk writes every byte, and a zeroing pass over fresh memory would
    // cost a k = 0 outboard about a quarter of its time on 16 cores (docs/performance.md).
    let len = tree.outboard_len() as usize;
    let mut parents = Vec::with_capacity(len);
    let hash = write(backend, data, tree, Layout::Outboard(order), &mut parents.spare_capacity_mut()[..len])?;
    // SAFETY: `write` succeeded, so it wrote each of the first `len` bytes.
    unsafe { parents.set_len(len) };
    Ok((Outboard { tree, order, parents }, hash))
}

/// [`outboard_with`] into `parents`, a buffer the caller keeps (one reused from call to call, or
/// a map of the outboard file) of exactly [`Tree::outboard_len`] bytes: the parent nodes in
/// `order`, without size header or trailer ([`Outboard::parents`]). Returns the hash. A buffer of
/// another size is an error, and nothing is written into it.
///
/// ```
/// use b3accel::bao::{outboard_into, outboard_with, Order, Tree};
/// use b3accel::{backend, Device};
/// let cpu = backend(Device::Cpu)?;
/// let data = vec![9u8; 100_000];
/// let mut parents = vec![0u8; Tree::new(data.len() as u64, 0)?.outboard_len() as usize];
/// let hash = outboard_into(&*cpu, &data, 0, Order::Pre, &mut parents)?;
/// let (ob, _) = outboard_with(&*cpu, &data, 0, Order::Pre)?;
/// assert_eq!((hash, &parents[..]), (blake3::hash(&data), ob.parents()));
/// assert!(outboard_into(&*cpu, &data, 0, Order::Pre, &mut parents[1..]).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn outboard_into(
    backend: &dyn Backend,
    data: &[u8],
    group_log: u8,
    order: Order,
    parents: &mut [u8],
) -> Result<Hash, Error> {
    let tree = Tree::new(data.len() as u64, group_log)?;
    if parents.len() as u64 != tree.outboard_len() {
        return Err(Error::Invalid(format!(
            "outboard_into: {} bytes in groups of {} bytes have {} bytes of parents, but the buffer holds {}",
            data.len(),
            tree.group_len(),
            tree.outboard_len(),
            parents.len()
        )));
    }
    // SAFETY: `MaybeUninit<u8>` has `u8`'s layout, and the walk writes only initialized bytes
    // through this view, so `parents` stays initialized.
    let nodes = unsafe { &mut *(parents as *mut [u8] as *mut [MaybeUninit<u8>]) };
    write(backend, data, tree, Layout::Outboard(order), nodes)
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
    let len = tree.encoded_len() as usize;
    let mut out = Vec::with_capacity(len);
    let (header, nodes) = out.spare_capacity_mut()[..len].split_at_mut(HEADER_LEN);
    put(header, &tree.header());
    let hash = write(backend, data, tree, Layout::Encoded, nodes)?;
    // SAFETY: the header is written, and `write` succeeded, so it wrote each byte after it.
    unsafe { out.set_len(len) };
    Ok((out, hash))
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
