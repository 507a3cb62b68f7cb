//! Binary Merkle trees of 32-byte leaves with BLAKE3 as the 2-to-1 hash, and many independent
//! messages hashed at once.
//!
//! # The tree
//!
//! A parent is the plain BLAKE3 hash of the 64 bytes `left || right`: one block compressed with
//! `CHUNK_START | CHUNK_END | ROOT`, exactly [`Backend::hash_blocks`]. Levels are reduced from the
//! leaves up, pairing nodes 0 and 1, 2 and 3, ...; when a level has an odd number of nodes, its
//! last node is carried up to the next level unchanged (it is not hashed and not stored again).
//! This gives the left-balanced shape of RFC 6962's Merkle Tree Hash: the left subtree of every
//! node holds the largest power of two of leaves that is smaller than its leaf count. One leaf is
//! its own root; zero leaves is an error.
//!
//! A tree of `n` leaves has exactly `n - 1` inner nodes (each hash turns two nodes into one).
//! [`MerkleTree`] keeps them level by level, bottom up: first the parents of the leaves, then
//! their parents, ..., the root last; [`level_sizes`] gives the number of nodes of each level.
//! `b3accel merkle --tree OUT` writes the same sequence as raw bytes.
//!
//! # Proofs: the verifier fixes the tree size
//!
//! A root does not commit to the number of leaves: the root of `[a, b, c, d]` is also the root
//! of the two-leaf tree `[blake3(a || b), blake3(c || d)]` and of the one-leaf tree `[root]`, and
//! the root of `[a, b, c]` is the root of `[blake3(a || b), c]`. So [`verify`] takes the leaf
//! count from the verifier, who must know it from a source it trusts (committed or signed next
//! to the root), and rejects a proof made for any other count, index or root. A proof is checked
//! against the exact path that leaf `index` of a tree of `leaf_count` leaves has: a leaf that is
//! not the one at `index` verifies only through a BLAKE3 collision.
//!
//! # No domain separation: read this before building trees
//!
//! As in the source document this follows (merklize-blake3), **leaves and inner nodes are not
//! domain-separated**: a leaf is any 32 bytes, and a parent is `blake3(left || right)` with no
//! prefix, flag or key telling it apart from a hash of other data. Consequences:
//!
//! - An inner node is itself a valid 32-byte leaf value: the same root is the root of trees of
//!   several sizes (above). A verifier that did not fix the size would accept the inner node
//!   `P = blake3(a || b)` as a leaf of a smaller tree; [`verify`] refuses that by taking the size
//!   from the verifier. This is the second-preimage confusion that RFC 6962 avoids with its
//!   `0x00` leaf and `0x01` node prefixes.
//! - If leaves are plain BLAKE3 hashes of records, the leaf of a 64-byte record `a || b` *is* the
//!   parent of the nodes `a` and `b`: the record and the subtree cannot be told apart, and two
//!   lists of records of different lengths can have one root.
//!
//! How to use it safely:
//! - **Give [`verify`] the tree size you trust**, never one taken from the proof or from the
//!   prover: the size is as much part of the commitment as the root.
//! - **Make leaves that no parent computation can produce, and have the verifier compute the
//!   leaf from the record itself** (never accept a leaf value as given). Hash records in another
//!   BLAKE3 mode than the plain hash used for parents: `keyed_hash` with a key of your
//!   application, or `derive_key` with a context string of your own ([`hash_many_with`] and
//!   [`hash_each_with`] take a [`Mode`] for exactly this). A plain hash of a prefixed record
//!   separates domains only if the prefixed input can never be exactly 64 bytes long; the other
//!   modes do not depend on that.
//! - If you control both ends and need neither compatibility with the source document nor GPU
//!   speed for the parents, a construction with separated domains (RFC 6962's prefixes, or
//!   BLAKE3's own tree) avoids the question altogether.
//!
//! # The proof's byte format
//!
//! [`Proof::to_bytes`] writes, and [`Proof::from_bytes`] reads:
//!
//! | bytes | content |
//! |---|---|
//! | 0..8 | the leaf count of the tree the proof was made for, a little-endian `u64` |
//! | 8.. | the siblings, 32 bytes each, from the leaf's level up to the level below the root |
//!
//! There is no other header, version or padding. The number of siblings is not written: it is
//! the number of levels at which the path of leaf `index` has a sibling (a level where the
//! path's node is the odd last node is carried up and has none), so it depends on the leaf count
//! and the index; [`verify`] rejects a proof with fewer or more. At each level the sibling is on
//! the left when the path's index at that level is odd, on the right otherwise.
//!
//! ```
//! use b3accel::{merkle, merkle_tree, Device};
//! let leaves: Vec<[u8; 32]> = (0..5u8).map(|i| *blake3::hash(&[i]).as_bytes()).collect();
//! let tree = merkle_tree(Device::Cpu, &leaves)?;
//! let proof = tree.proof(3)?;
//! assert!(merkle::verify(&tree.root(), &leaves[3], 3, &proof, 5));
//! assert!(!merkle::verify(&tree.root(), &leaves[2], 3, &proof, 5));
//! // The same proof for a verifier that expects another tree size: rejected.
//! assert!(!merkle::verify(&tree.root(), &leaves[3], 3, &proof, 4));
//! # Ok::<(), b3accel::Error>(())
//! ```
//!
//! # Many messages
//!
//! [`hash_many`] hashes a batch of messages of one length laid end to end (the layout a GPU
//! wants: one upload, one dispatch); [`hash_each`] takes messages of any lengths, groups equal
//! lengths and hashes each group as one batch. On the CPU backend each SIMD lane hashes its own
//! message; large batches are spread over cores.

use crate::core::constants::BLOCK_LEN;
use crate::dispatch::backend;
use crate::tree::merkle::check_merkle_args;
pub use crate::tree::merkle::{level_sizes, Node};
use crate::tree::{hash_small, Backend, Device, Domain, Error, Mode, Result};
use blake3::Hash;
use std::borrow::Cow;

/// The parent of two nodes, on the CPU: `blake3(left || right)`.
fn parent(left: &Node, right: &Node) -> Node {
    let mut block = [0u8; BLOCK_LEN];
    block[..32].copy_from_slice(left);
    block[32..].copy_from_slice(right);
    hash_small(&block, Domain::HASH)
}

/// The root of the Merkle tree over `leaves`, computed on `device` (see the [module
/// docs](self) for the shape, and for what the lack of domain separation means).
///
/// ```
/// use b3accel::{merkle_root, Device};
/// let leaves = [[1u8; 32], [2u8; 32], [3u8; 32]];
/// let root = merkle_root(Device::Cpu, &leaves)?;
/// let pair = |l: &[u8; 32], r: &[u8; 32]| *blake3::hash(&[&l[..], &r[..]].concat()).as_bytes();
/// assert_eq!(*root.as_bytes(), pair(&pair(&leaves[0], &leaves[1]), &leaves[2]));
/// assert!(merkle_root(Device::Cpu, &[]).is_err());
/// # Ok::<(), b3accel::Error>(())
/// ```
pub fn merkle_root(device: Device, leaves: &[Node]) -> Result<Hash> {
    merkle_root_with(&*backend(device)?, leaves)
}

/// [`merkle_root`] on a backend you hold.
///
/// ```
/// use b3accel::cpu::{CpuBackend, SimdLevel};
/// let portable = CpuBackend::with_level(SimdLevel::Portable)?;
/// let leaves = vec![[9u8; 32]; 100];
/// let root = b3accel::merkle::merkle_root_with(&portable, &leaves)?;
/// assert_eq!(root, b3accel::merkle_root(b3accel::Device::Cpu, &leaves)?);
/// # Ok::<(), b3accel::Error>(())
/// ```
pub fn merkle_root_with(backend: &dyn Backend, leaves: &[Node]) -> Result<Hash> {
    Ok(Hash::from_bytes(backend.merkle(leaves, None)?))
}

/// The whole Merkle tree over `leaves`, computed on `device`: every inner node is kept, so that
/// proofs can be made.
///
/// ```
/// use b3accel::{merkle_tree, Device};
/// let leaves = vec![[0u8; 32]; 6];
/// let tree = merkle_tree(Device::Cpu, &leaves)?;
/// assert_eq!(tree.inner_nodes().len(), 5);
/// # Ok::<(), b3accel::Error>(())
/// ```
pub fn merkle_tree(device: Device, leaves: &[Node]) -> Result<MerkleTree<'_>> {
    MerkleTree::build_with(&*backend(device)?, leaves)
}

/// A binary Merkle tree: its leaves and all its inner nodes, level by level (see the [module
/// docs](self)).
///
/// The leaves are borrowed from the caller when the tree is built from a slice;
/// [`into_owned`](MerkleTree::into_owned) copies them to make a tree with no borrow.
///
/// ```
/// use b3accel::{merkle_tree, Device};
/// let leaves: Vec<[u8; 32]> = (0..7u8).map(|i| [i; 32]).collect();
/// let tree = merkle_tree(Device::Cpu, &leaves)?;
/// let sizes: Vec<usize> = tree.levels().map(|level| level.len()).collect();
/// assert_eq!(sizes, [3, 2, 1]);
/// assert_eq!(tree.levels().last().unwrap(), [*tree.root().as_bytes()]);
/// # Ok::<(), b3accel::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MerkleTree<'a> {
    leaves: Cow<'a, [Node]>,
    /// The `n - 1` inner nodes, level by level from the leaves up.
    inner: Vec<Node>,
    /// Where each level starts in `inner`, and one more entry: `inner.len()`.
    starts: Vec<usize>,
}

impl<'a> MerkleTree<'a> {
    /// Builds the tree over `leaves` on a backend you hold (for instance each backend in turn, to
    /// compare them).
    ///
    /// ```
    /// use b3accel::cpu::{CpuBackend, SimdLevel};
    /// use b3accel::MerkleTree;
    /// let leaves = vec![[5u8; 32]; 9];
    /// let a = MerkleTree::build_with(&CpuBackend::with_level(SimdLevel::Portable)?, &leaves)?;
    /// let b = MerkleTree::build_with(&CpuBackend::new(), &leaves)?;
    /// assert_eq!(a, b);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn build_with(backend: &dyn Backend, leaves: &'a [Node]) -> Result<MerkleTree<'a>> {
        check_merkle_args(leaves, None)?;
        let mut inner = vec![[0u8; 32]; leaves.len() - 1];
        backend.merkle(leaves, Some(&mut inner))?;
        let mut starts = vec![0];
        for size in level_sizes(leaves.len()) {
            starts.push(starts[starts.len() - 1] + size);
        }
        Ok(MerkleTree { leaves: Cow::Borrowed(leaves), inner, starts })
    }

    /// The same tree, owning a copy of its leaves.
    ///
    /// ```
    /// let tree = {
    ///     let leaves = vec![[1u8; 32]; 3];
    ///     b3accel::merkle_tree(b3accel::Device::Cpu, &leaves)?.into_owned()
    /// };
    /// assert_eq!(tree.leaf_count(), 3);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn into_owned(self) -> MerkleTree<'static> {
        MerkleTree { leaves: Cow::Owned(self.leaves.into_owned()), inner: self.inner, starts: self.starts }
    }

    /// The root: the last inner node, or the leaf itself for a tree of one leaf.
    ///
    /// ```
    /// let leaf = [[7u8; 32]];
    /// let tree = b3accel::merkle_tree(b3accel::Device::Cpu, &leaf)?;
    /// assert_eq!(tree.root().as_bytes(), &leaf[0]);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn root(&self) -> Hash {
        Hash::from_bytes(*self.inner.last().unwrap_or(&self.leaves[0]))
    }

    /// How many leaves the tree has.
    ///
    /// ```
    /// let tree = b3accel::merkle_tree(b3accel::Device::Cpu, &[[0u8; 32]; 4])?;
    /// assert_eq!(tree.leaf_count(), 4);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn leaf_count(&self) -> usize {
        self.leaves.len()
    }

    /// The leaves.
    ///
    /// ```
    /// let tree = b3accel::merkle_tree(b3accel::Device::Cpu, &[[3u8; 32]; 2])?;
    /// assert_eq!(tree.leaves(), [[3u8; 32]; 2]);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn leaves(&self) -> &[Node] {
        &self.leaves
    }

    /// The inner levels, from the leaves' parents up to the root (a level of one node). A level
    /// holds only the nodes hashed at that level: a node carried up from below is not repeated.
    /// A tree of one leaf has no levels.
    ///
    /// ```
    /// let tree = b3accel::merkle_tree(b3accel::Device::Cpu, &[[0u8; 32]; 5])?;
    /// let sizes: Vec<usize> = tree.levels().map(|l| l.len()).collect();
    /// assert_eq!(sizes, b3accel::merkle::level_sizes(5).collect::<Vec<_>>());
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn levels(&self) -> impl ExactSizeIterator<Item = &[Node]> + '_ {
        self.starts.windows(2).map(|w| &self.inner[w[0]..w[1]])
    }

    /// All `leaf_count - 1` inner nodes, level by level from the bottom up, the root last: what
    /// `b3accel merkle --tree` writes.
    ///
    /// ```
    /// let tree = b3accel::merkle_tree(b3accel::Device::Cpu, &[[0u8; 32]; 4])?;
    /// assert_eq!(tree.inner_nodes().len(), 3);
    /// assert_eq!(tree.inner_nodes()[2], *tree.root().as_bytes());
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn inner_nodes(&self) -> &[Node] {
        &self.inner
    }

    /// Node `index` of level `level` (0: the leaves) as the level's pairing sees it, including a
    /// node carried up from below (the last node of the level below).
    fn node(&self, mut level: usize, mut index: usize) -> Node {
        while level > 0 {
            let stored = &self.inner[self.starts[level - 1]..self.starts[level]];
            if let Some(node) = stored.get(index) {
                return *node;
            }
            level -= 1;
            index = self.level_count(level) - 1;
        }
        self.leaves[index]
    }

    /// How many nodes level `level` has (0: the leaves), carried node included.
    fn level_count(&self, level: usize) -> usize {
        (0..level).fold(self.leaves.len(), |n, _| n.div_ceil(2))
    }

    /// The proof that leaf `index` belongs to the tree: the sibling of each node on the path to
    /// the root, bottom up, skipping the levels where the path's node is carried up without a
    /// sibling. An index out of range is an error.
    ///
    /// ```
    /// use b3accel::{merkle, merkle_tree, Device};
    /// let leaves: Vec<[u8; 32]> = (0..3u8).map(|i| [i; 32]).collect();
    /// let tree = merkle_tree(Device::Cpu, &leaves)?;
    /// // Leaf 2 is carried past the first level: its path has one sibling, the parent of 0 and 1.
    /// let proof = tree.proof(2)?;
    /// assert_eq!(proof.siblings(), [tree.levels().next().unwrap()[0]]);
    /// assert!(merkle::verify(&tree.root(), &leaves[2], 2, &proof, 3));
    /// assert!(tree.proof(3).is_err());
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn proof(&self, index: u64) -> Result<Proof> {
        let count = self.leaves.len();
        let mut i = usize::try_from(index).ok().filter(|&i| i < count).ok_or_else(|| {
            Error::InvalidInput(format!("merkle proof: leaf {index} is out of range (the tree has {count} leaves)"))
        })?;
        let mut siblings = Vec::new();
        let mut n = count;
        let mut level = 0;
        while n > 1 {
            let sibling = i ^ 1;
            if sibling < n {
                siblings.push(self.node(level, sibling));
            }
            i /= 2;
            n = n.div_ceil(2);
            level += 1;
        }
        Ok(Proof { leaf_count: count as u64, siblings })
    }
}

/// A Merkle proof: the tree's leaf count and the siblings on the path from a leaf to the root,
/// bottom up. The leaf count fixes the shape (which levels carry the path's node up without a
/// sibling, and how many siblings there are). It is what the prover claims: [`verify`] takes
/// the count the verifier trusts and rejects a proof that claims another. The byte format is in
/// the [module docs](self#the-proofs-byte-format).
///
/// ```
/// use b3accel::merkle::Proof;
/// let proof = Proof::new(3, vec![[1u8; 32]]);
/// let bytes = proof.to_bytes();
/// assert_eq!(bytes.len(), 8 + 32);
/// assert_eq!(Proof::from_bytes(&bytes)?, proof);
/// # Ok::<(), b3accel::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Proof {
    leaf_count: u64,
    siblings: Vec<Node>,
}

impl Proof {
    /// A proof from its parts (for instance received from elsewhere).
    ///
    /// ```
    /// let p = b3accel::merkle::Proof::new(1, vec![]);
    /// assert_eq!(p.leaf_count(), 1);
    /// ```
    pub fn new(leaf_count: u64, siblings: Vec<Node>) -> Proof {
        Proof { leaf_count, siblings }
    }

    /// The number of leaves of the tree the proof claims to come from (a claim: [`verify`]
    /// compares it with the count the verifier passes).
    ///
    /// ```
    /// let tree = b3accel::merkle_tree(b3accel::Device::Cpu, &[[0u8; 32]; 10])?;
    /// assert_eq!(tree.proof(4)?.leaf_count(), 10);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn leaf_count(&self) -> u64 {
        self.leaf_count
    }

    /// The siblings, from the leaf's level up.
    ///
    /// ```
    /// let tree = b3accel::merkle_tree(b3accel::Device::Cpu, &[[0u8; 32]; 8])?;
    /// assert_eq!(tree.proof(4)?.siblings().len(), 3);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn siblings(&self) -> &[Node] {
        &self.siblings
    }

    /// The proof as bytes: the leaf count as 8 little-endian bytes, then the siblings, 32 bytes
    /// each, bottom up (the [format](self#the-proofs-byte-format)).
    ///
    /// ```
    /// let p = b3accel::merkle::Proof::new(2, vec![[0xAA; 32]]);
    /// assert_eq!(p.to_bytes()[..8], 2u64.to_le_bytes());
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + 32 * self.siblings.len());
        out.extend_from_slice(&self.leaf_count.to_le_bytes());
        out.extend_from_slice(self.siblings.as_flattened());
        out
    }

    /// A proof from [`to_bytes`](Proof::to_bytes)'s format; a length that is not 8 bytes plus
    /// whole 32-byte siblings is an error. Whether the proof fits a tree (its leaf count and
    /// number of siblings) is for [`verify`] to check.
    ///
    /// ```
    /// assert!(b3accel::merkle::Proof::from_bytes(&[0u8; 9]).is_err());
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Proof> {
        let malformed = || {
            Error::InvalidInput(format!(
                "merkle proof: {} bytes are not 8 bytes of leaf count and whole 32-byte siblings",
                bytes.len()
            ))
        };
        if bytes.len() < 8 {
            return Err(malformed());
        }
        let (count, rest) = bytes.split_at(8);
        let (siblings, remainder) = rest.as_chunks::<32>();
        if !remainder.is_empty() {
            return Err(malformed());
        }
        let mut le = [0u8; 8];
        le.copy_from_slice(count);
        Ok(Proof::new(u64::from_le_bytes(le), siblings.to_vec()))
    }
}

/// Whether `proof` shows that `leaf` is leaf number `index` of the tree of `leaf_count` leaves
/// whose root is `root`.
///
/// `leaf_count` is the tree size the verifier trusts (see the [module docs](self): a root alone
/// does not commit to it), never one read from the proof. False for a proof that claims another
/// leaf count, an `index` outside `0..leaf_count`, a proof with fewer or more siblings than the
/// path of leaf `index` in that tree has, or any sibling, leaf or index that does not hash up to
/// `root`. Runs on the CPU; the final comparison is in constant time.
///
/// Nodes are not domain-separated: make leaves that cannot be mistaken for inner nodes, and
/// compute each leaf from its record rather than accepting a leaf value.
///
/// ```
/// use b3accel::{merkle, merkle_tree, Device};
/// let leaves: Vec<[u8; 32]> = (0..9u8).map(|i| [i; 32]).collect();
/// let tree = merkle_tree(Device::Cpu, &leaves)?;
/// let proof = tree.proof(8)?;
/// assert!(merkle::verify(&tree.root(), &leaves[8], 8, &proof, 9));
/// assert!(!merkle::verify(&tree.root(), &leaves[8], 7, &proof, 9));
/// assert!(!merkle::verify(&tree.root(), &leaves[8], 8, &proof, 10));
/// # Ok::<(), b3accel::Error>(())
/// ```
///
/// A proof that claims a smaller tree, which the same root also fits, is refused:
///
/// ```
/// use b3accel::merkle::{self, Proof};
/// let pair = |l: &[u8; 32], r: &[u8; 32]| *blake3::hash(&[&l[..], &r[..]].concat()).as_bytes();
/// let (a, b, c) = ([1u8; 32], [2u8; 32], [3u8; 32]);
/// let root = blake3::Hash::from_bytes(pair(&pair(&a, &b), &c)); // the tree [a, b, c]
/// // "c is leaf 1 of the two-leaf tree [blake3(a || b), c]": true of the hashes, not of [a, b, c].
/// let forged = Proof::new(2, vec![pair(&a, &b)]);
/// assert!(!merkle::verify(&root, &c, 1, &forged, 3));
/// ```
pub fn verify(root: &Hash, leaf: &Node, index: u64, proof: &Proof, leaf_count: u64) -> bool {
    if proof.leaf_count != leaf_count || index >= leaf_count {
        return false;
    }
    let mut n = leaf_count;
    let mut i = index;
    let mut node = *leaf;
    let mut siblings = proof.siblings.iter();
    while n > 1 {
        if i % 2 == 1 {
            let Some(left) = siblings.next() else {
                return false;
            };
            node = parent(left, &node);
        } else if i + 1 < n {
            let Some(right) = siblings.next() else {
                return false;
            };
            node = parent(&node, right);
        }
        i /= 2;
        n = n.div_ceil(2);
    }
    siblings.next().is_none() & (*root == Hash::from_bytes(node))
}

/// Splits `data` into `data.len() / msg_len` messages of `msg_len` bytes and hashes each one on
/// `device`: element i is `blake3::hash(&data[i * msg_len..(i + 1) * msg_len])`. A `msg_len` of 0,
/// or a length of `data` that is not a multiple of it, is an error (use [`hash_each`] for empty
/// messages).
///
/// This is the layout for batches of equal-length messages (Merkle leaves, records of a fixed
/// size): one buffer, no per-message bookkeeping, and on a GPU one upload and one dispatch.
///
/// ```
/// use b3accel::{hash_many, Device};
/// let records = [[1u8; 100], [2u8; 100], [3u8; 100]].concat();
/// let hashes = hash_many(Device::Cpu, &records, 100)?;
/// assert_eq!(hashes[1], blake3::hash(&[2u8; 100]));
/// assert!(hash_many(Device::Cpu, &records, 0).is_err());
/// assert!(hash_many(Device::Cpu, &records, 7).is_err());
/// # Ok::<(), b3accel::Error>(())
/// ```
pub fn hash_many(device: Device, data: &[u8], msg_len: usize) -> Result<Vec<Hash>> {
    hash_many_with(&*backend(device)?, &Mode::Hash, data, msg_len)
}

/// [`hash_many`] on a backend you hold, in any of BLAKE3's modes.
///
/// ```
/// use b3accel::{merkle::hash_many_with, Mode};
/// let key = [7u8; 32];
/// let macs = hash_many_with(&b3accel::cpu::CpuBackend::new(), &Mode::Keyed(key), b"abcd", 2)?;
/// assert_eq!(macs[0], blake3::keyed_hash(&key, b"ab"));
/// # Ok::<(), b3accel::Error>(())
/// ```
pub fn hash_many_with(backend: &dyn Backend, mode: &Mode, data: &[u8], msg_len: usize) -> Result<Vec<Hash>> {
    check_many(data, msg_len)?;
    let mut out = vec![[0u8; 32]; data.len() / msg_len];
    hash_many_into(backend, mode, data, msg_len, &mut out)?;
    Ok(out.into_iter().map(Hash::from_bytes).collect())
}

/// [`hash_many_with`] into a buffer you provide (one you allocated fallibly, or memory another
/// runtime owns): `out` must hold exactly `data.len() / msg_len` hashes, else an error.
///
/// ```
/// use b3accel::{merkle::hash_many_into, Mode};
/// let mut out = [[0u8; 32]; 2];
/// hash_many_into(&b3accel::cpu::CpuBackend::new(), &Mode::Hash, b"abcd", 2, &mut out)?;
/// assert_eq!(out[1], *blake3::hash(b"cd").as_bytes());
/// assert!(hash_many_into(&b3accel::cpu::CpuBackend::new(), &Mode::Hash, b"abcd", 4, &mut out).is_err());
/// # Ok::<(), b3accel::Error>(())
/// ```
pub fn hash_many_into(backend: &dyn Backend, mode: &Mode, data: &[u8], msg_len: usize, out: &mut [Node]) -> Result<()> {
    check_many(data, msg_len)?;
    if out.len() != data.len() / msg_len {
        return Err(Error::InvalidInput(format!(
            "hash_many: room for {} hashes, but {} bytes are {} messages of {msg_len} bytes",
            out.len(),
            data.len(),
            data.len() / msg_len
        )));
    }
    let domain = mode.domain();
    backend.hash_many(data, msg_len, &domain.key, domain.flags, out)
}

/// Checks that `data` splits into whole messages of `msg_len` bytes.
fn check_many(data: &[u8], msg_len: usize) -> Result<()> {
    if msg_len == 0 {
        return Err(Error::InvalidInput(
            "hash_many: a message length of 0 cannot split input into messages (hash_each hashes empty messages)"
                .into(),
        ));
    }
    if !data.len().is_multiple_of(msg_len) {
        return Err(Error::InvalidInput(format!(
            "hash_many: {} bytes cannot be split into messages of {msg_len} bytes",
            data.len()
        )));
    }
    Ok(())
}

/// Bytes gathered into one [`Backend::hash_many`] call by [`hash_each`] (a group of equal-length
/// messages longer than this is cut into several calls).
const GATHER_BYTES: usize = 64 << 20;

/// Hashes each of `inputs`, of any lengths (0 included), on `device`: element i is
/// `blake3::hash(inputs[i])`. Messages of equal length are gathered into one buffer and hashed
/// as one batch, as [`hash_many`] does; a length that occurs once is hashed where it lies.
///
/// ```
/// use b3accel::{hash_each, Device};
/// let inputs: [&[u8]; 4] = [b"", b"abc", b"xyz", &[0u8; 5000]];
/// let hashes = hash_each(Device::Cpu, &inputs)?;
/// for (h, input) in hashes.iter().zip(inputs) {
///     assert_eq!(*h, blake3::hash(input));
/// }
/// # Ok::<(), b3accel::Error>(())
/// ```
pub fn hash_each<T: AsRef<[u8]>>(device: Device, inputs: &[T]) -> Result<Vec<Hash>> {
    hash_each_with(&*backend(device)?, &Mode::Hash, inputs)
}

/// [`hash_each`] on a backend you hold, in any of BLAKE3's modes.
///
/// ```
/// use b3accel::{merkle::hash_each_with, Mode};
/// let cpu = b3accel::cpu::CpuBackend::new();
/// let out = hash_each_with(&cpu, &Mode::DeriveKey("ctx".into()), &[b"a".to_vec(), vec![]])?;
/// assert_eq!(*out[1].as_bytes(), blake3::derive_key("ctx", b""));
/// # Ok::<(), b3accel::Error>(())
/// ```
pub fn hash_each_with<T: AsRef<[u8]>>(backend: &dyn Backend, mode: &Mode, inputs: &[T]) -> Result<Vec<Hash>> {
    let domain = mode.domain();
    let len = |i: usize| inputs[i].as_ref().len();
    let mut order: Vec<usize> = (0..inputs.len()).collect();
    order.sort_by_key(|&i| len(i));
    let mut out = vec![[0u8; 32]; inputs.len()];
    let mut gathered = Vec::new();
    let mut hashes = Vec::new();
    for group in order.chunk_by(|&a, &b| len(a) == len(b)) {
        let msg_len = len(group[0]);
        let per_call = (GATHER_BYTES / msg_len.max(1)).max(1);
        for part in group.chunks(per_call) {
            hashes.clear();
            hashes.resize(part.len(), [0u8; 32]);
            if let [only] = part {
                let msg = inputs[*only].as_ref();
                backend.hash_many(msg, msg_len, &domain.key, domain.flags, &mut hashes)?;
            } else {
                gathered.clear();
                for &i in part {
                    gathered.extend_from_slice(inputs[i].as_ref());
                }
                backend.hash_many(&gathered, msg_len, &domain.key, domain.flags, &mut hashes)?;
            }
            for (&i, hash) in part.iter().zip(&hashes) {
                out[i] = *hash;
            }
        }
    }
    Ok(out.into_iter().map(Hash::from_bytes).collect())
}
