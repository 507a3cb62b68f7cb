//! Merkle level math, written once for every backend: the shape of a binary Merkle tree of
//! 32-byte leaves (which levels carry an odd node up), the level-by-level reduction that alone
//! knows that rule, and the argument checks of `Backend::merkle` and `Backend::hash_many`.

use super::bulk::Bulk;
use super::error::{Error, Result};
use super::mode::Domain;
use super::stack::root_hash_all;
use crate::core::compress::Cv;
use crate::core::constants::BLOCK_LEN;

/// A node of a Merkle tree: a leaf or the hash of two nodes.
pub type Node = [u8; 32];

/// The number of inner nodes of each level of a tree of `leaf_count` leaves, from the leaves'
/// parents up to the root: `leaf_count / 2`, then half of what is left (rounded up, the carried
/// node counting), and so on. The sizes add up to `leaf_count - 1`; a single leaf (or none) has no
/// levels.
///
/// ```
/// use b3accel::merkle::level_sizes;
/// assert_eq!(level_sizes(5).collect::<Vec<_>>(), [2, 1, 1]); // ((01)(23))4
/// assert_eq!(level_sizes(8).collect::<Vec<_>>(), [4, 2, 1]);
/// assert_eq!(level_sizes(1000).sum::<usize>(), 999);
/// assert_eq!(level_sizes(1).count(), 0);
/// ```
pub fn level_sizes(leaf_count: usize) -> impl Iterator<Item = usize> {
    let mut n = leaf_count;
    std::iter::from_fn(move || {
        if n <= 1 {
            return None;
        }
        let stored = n / 2;
        n = n.div_ceil(2);
        Some(stored)
    })
}

/// Checks the arguments of [`Backend::merkle`]; the default and every override call it first.
pub(crate) fn check_merkle_args(leaves: &[Cv], inner: Option<&[Cv]>) -> Result<()> {
    if leaves.is_empty() {
        return Err(Error::InvalidInput("a Merkle tree needs at least one leaf".to_string()));
    }
    if let Some(inner) = inner {
        if inner.len() != leaves.len() - 1 {
            return Err(Error::InvalidInput(format!(
                "merkle: {} leaves have {} inner nodes, but inner has room for {}",
                leaves.len(),
                leaves.len() - 1,
                inner.len()
            )));
        }
    }
    Ok(())
}

/// Checks the arguments of [`Backend::hash_many`].
pub(crate) fn check_many_args(data: &[u8], msg_len: usize, out: &[Cv]) -> Result<()> {
    if msg_len.checked_mul(out.len()) != Some(data.len()) {
        return Err(Error::InvalidInput(format!(
            "hash_many: {} bytes are not {} messages of {msg_len} bytes",
            data.len(),
            out.len()
        )));
    }
    Ok(())
}

/// Splits `inner` (the `leaf_count - 1` inner nodes of a tree) into its levels, bottom up.
pub(crate) fn split_levels(mut inner: &mut [Cv], leaf_count: usize) -> Vec<&mut [Cv]> {
    let mut levels = Vec::new();
    for size in level_sizes(leaf_count) {
        let (level, rest) = inner.split_at_mut(size);
        levels.push(level);
        inner = rest;
    }
    debug_assert!(inner.is_empty());
    levels
}

/// Hashes 64-byte blocks (`left || right` pairs) into their parents, one per block.
pub(crate) type HashPairs<'a> = dyn FnMut(&[[u8; BLOCK_LEN]], &mut [Cv]) -> Result<()> + 'a;

/// Views an even number of nodes as the 64-byte blocks of their pairs.
fn pairs_of(nodes: &[Cv]) -> &[[u8; BLOCK_LEN]] {
    debug_assert!(nodes.len().is_multiple_of(2));
    nodes.as_flattened().as_chunks::<BLOCK_LEN>().0
}

/// One level of the reduction, the only place that knows the carry rule. The level's nodes are
/// `nodes` followed by `carry` (a node carried up from below, if any): pairs of `nodes` are hashed
/// into `out`; when `nodes` has an odd count, its last node pairs with the carried one, or, when
/// there is none, becomes the carried node. `out` has exactly `(nodes.len() + carry) / 2` entries.
fn reduce_level(nodes: &[Cv], carry: &mut Option<Cv>, out: &mut [Cv], hash_pairs: &mut HashPairs) -> Result<()> {
    let pairs = nodes.len() / 2;
    hash_pairs(pairs_of(&nodes[..2 * pairs]), &mut out[..pairs])?;
    if nodes.len() % 2 == 1 {
        let last = nodes[nodes.len() - 1];
        match carry.take() {
            Some(right) => {
                let mut block = [0u8; BLOCK_LEN];
                block[..32].copy_from_slice(&last);
                block[32..].copy_from_slice(&right);
                hash_pairs(&[block], &mut out[pairs..pairs + 1])?;
            }
            None => *carry = Some(last),
        }
    }
    Ok(())
}

/// Reduces the level `nodes ++ carry` (at least one node in all) to the root, level by level.
/// With `levels`, the inner nodes of each following level are written there (one slice per
/// level, of the sizes [`level_sizes`] gives for `nodes.len() + carry` leaves); without, only two
/// scratch buffers are used. Backends that reduce whole subtrees themselves (the CPU backend)
/// call it for the irregular rest, so the carry rule stays here.
pub(crate) fn reduce(
    nodes: &[Cv],
    mut carry: Option<Cv>,
    levels: Option<Vec<&mut [Cv]>>,
    hash_pairs: &mut HashPairs,
) -> Result<Cv> {
    let count = nodes.len() + usize::from(carry.is_some());
    assert!(count >= 1, "reduce: a level needs at least one node");
    let mut cur = nodes;
    match levels {
        Some(levels) => {
            debug_assert!(levels.iter().map(|l| l.len()).eq(level_sizes(count)));
            for out in levels {
                reduce_level(cur, &mut carry, out, hash_pairs)?;
                cur = out;
            }
            Ok(cur.first().copied().or(carry).expect("one node is left"))
        }
        None => {
            // Two buffers in turn: level k is read from one while level k + 1 is written to the
            // other.
            let mut next = Vec::with_capacity(count / 2);
            let mut spare = Vec::with_capacity(count / 4 + 1);
            for size in level_sizes(count) {
                next.clear();
                next.resize(size, [0u8; 32]);
                reduce_level(cur, &mut carry, &mut next, hash_pairs)?;
                std::mem::swap(&mut next, &mut spare);
                cur = &spare;
            }
            Ok(cur.first().copied().or(carry).expect("one node is left"))
        }
    }
}

/// [`Backend::merkle`]'s default: the reduction above with the backend's `hash_blocks`.
pub(crate) fn reduce_on<B: Bulk + ?Sized>(backend: &B, leaves: &[Cv], inner: Option<&mut [Cv]>) -> Result<Cv> {
    check_merkle_args(leaves, inner.as_deref())?;
    let levels = inner.map(|inner| split_levels(inner, leaves.len()));
    reduce(leaves, None, levels, &mut |blocks, out| backend.hash_blocks(blocks, out))
}

/// [`Backend::hash_many`]'s default: one message at a time through the tree code.
pub(crate) fn hash_many_on<B: Bulk + ?Sized>(
    backend: &B,
    data: &[u8],
    msg_len: usize,
    key: &[u32; 8],
    flags: u32,
    out: &mut [Cv],
) -> Result<()> {
    check_many_args(data, msg_len, out)?;
    let domain = Domain { key: *key, flags };
    for (i, hash) in out.iter_mut().enumerate() {
        let msg = &data[i * msg_len..(i + 1) * msg_len];
        *hash = root_hash_all(backend, msg, domain)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::stack::hash_small;

    /// The parent of two nodes on the CPU's scalar code.
    fn parent(left: &Node, right: &Node) -> Node {
        let mut block = [0u8; BLOCK_LEN];
        block[..32].copy_from_slice(left);
        block[32..].copy_from_slice(right);
        hash_small(&block, Domain::HASH)
    }

    /// Level-by-level reduction on the CPU's scalar code, independent of any backend.
    fn scalar_root(leaves: &[Node]) -> Node {
        reduce(leaves, None, None, &mut |blocks, out| {
            for (b, o) in blocks.iter().zip(out.iter_mut()) {
                *o = hash_small(b, Domain::HASH);
            }
            Ok(())
        })
        .unwrap()
    }

    /// RFC 6962's recursive definition: split at the largest power of two below n.
    fn rfc6962_root(leaves: &[Node]) -> Node {
        if leaves.len() == 1 {
            return leaves[0];
        }
        // The largest power of two smaller than n.
        let k = 1usize << (usize::BITS - 1 - (leaves.len() - 1).leading_zeros());
        parent(&rfc6962_root(&leaves[..k]), &rfc6962_root(&leaves[k..]))
    }

    #[test]
    fn carry_rule_gives_the_rfc6962_shape() {
        for n in 1..=70usize {
            let leaves: Vec<Node> = (0..n).map(|i| [i as u8; 32]).collect();
            assert_eq!(scalar_root(&leaves), rfc6962_root(&leaves), "n = {n}");
        }
    }

    #[test]
    fn level_sizes_sum_to_inner_count() {
        for n in 1..300 {
            assert_eq!(level_sizes(n).sum::<usize>(), n - 1);
        }
    }

    #[test]
    fn reduce_from_a_carried_node_matches_the_plain_reduction() {
        // nodes ++ carry must give the same root however the level is split.
        let leaves: Vec<Node> = (0..11u8).map(|i| [i; 32]).collect();
        let mut hash = |blocks: &[[u8; 64]], out: &mut [Cv]| {
            for (b, o) in blocks.iter().zip(out.iter_mut()) {
                *o = hash_small(b, Domain::HASH);
            }
            Ok(())
        };
        let whole = reduce(&leaves, None, None, &mut hash).unwrap();
        let split = reduce(&leaves[..10], Some(leaves[10]), None, &mut hash).unwrap();
        assert_eq!(whole, split);
    }
}
