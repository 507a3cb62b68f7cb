//! Slices: the part of an encoding that proves a byte range, from a combined encoding or from the
//! content and its outboard. Parents of chunk groups are copied; a group the range covers only in
//! part is split down to its chunks, the parents inside it hashed from its content, as bao-tree
//! does.

use super::encode::Outboard;
use super::error::Error;
use super::layout::{Node, Place, Tree, HEADER_LEN, PARENT_LEN};
use crate::dispatch::cpu_backend;
use crate::tree::{subtree_node, Domain};
use std::ops::Range;

/// Where a slice's nodes come from.
enum Source<'a> {
    /// A combined encoding, its size header removed.
    Encoded(&'a [u8]),
    /// The content and its outboard.
    Outboard { data: &'a [u8], outboard: &'a Outboard },
}

/// What the extraction walks with: the tree, where the nodes come from, the chunks wanted and
/// the slice being written.
struct Extract<'a> {
    tree: Tree,
    source: Source<'a>,
    query: Range<u64>,
    out: Vec<u8>,
}

impl Extract<'_> {
    /// The content of `node`, which starts at byte `enc` of the encoding when it comes from one.
    fn content(&self, node: Node, enc: u64) -> &[u8] {
        let bytes = self.tree.bytes(node);
        let (from, len) = match self.source {
            Source::Encoded(e) => (e, enc),
            Source::Outboard { data, .. } => (data, bytes.start),
        };
        &from[len as usize..(len + bytes.end - bytes.start) as usize]
    }

    /// Appends what `node` (at `place` in the outboard, at byte `enc` of the encoding) gives the
    /// slice: its parent pair and its children that hold wanted chunks, or its content.
    fn node(&mut self, node: Node, place: Place, enc: u64) -> Result<(), Error> {
        if self.tree.is_outboard_parent(node) {
            let (left, right) = node.split();
            match self.source {
                Source::Encoded(e) => self.out.extend_from_slice(&e[enc as usize..enc as usize + PARENT_LEN]),
                Source::Outboard { outboard, .. } => {
                    let (l, r) = outboard.pair(node, place);
                    self.out.extend_from_slice(&l);
                    self.out.extend_from_slice(&r);
                }
            }
            let (lp, rp) = place.children(self.tree.groups_of(left));
            let left_enc = enc + PARENT_LEN as u64;
            if left.meets(&self.query) {
                self.node(left, lp, left_enc)?;
            }
            if right.meets(&self.query) {
                self.node(right, rp, left_enc + self.tree.encoded_len_of(left))?;
            }
        } else if node.within(&self.query) {
            let content = self.content(node, enc).to_vec();
            self.out.extend_from_slice(&content);
        } else {
            // A group, or a node inside one, that the range covers in part: its parent pair is
            // hashed from its content (it is no node of the outboard).
            let (left, right) = node.split();
            let content = self.content(node, enc);
            let split = (self.tree.bytes(left).end - self.tree.bytes(left).start) as usize;
            let cpu = &**cpu_backend();
            let l = subtree_node(cpu, &content[..split], left.start, Domain::HASH)?.chaining_value();
            let r = subtree_node(cpu, &content[split..], right.start, Domain::HASH)?.chaining_value();
            self.out.extend_from_slice(&l);
            self.out.extend_from_slice(&r);
            if left.meets(&self.query) {
                self.node(left, place, enc)?;
            }
            if right.meets(&self.query) {
                self.node(right, place, enc + split as u64)?;
            }
        }
        Ok(())
    }
}

/// Walks `tree` from the root into a slice of `len` bytes from byte `start`.
fn extract(tree: Tree, source: Source, start: u64, len: u64) -> Result<Vec<u8>, Error> {
    let mut walk = Extract { tree, source, query: tree.query(start, len), out: Vec::new() };
    walk.out.extend_from_slice(&tree.header());
    walk.node(tree.root(), Place::ROOT, 0)?;
    Ok(walk.out)
}

/// The slice of the combined encoding `encoded` (groups of 2^`group_log` chunks) that proves
/// `len` bytes from byte `start` of the content: the size, then in pre-order every parent on the
/// way to those bytes and the chunks that hold them. As bao's `SliceExtractor`, at least one
/// byte is included, and a start at or past the end gives the last chunk (which proves the
/// size). For group log 0 the bytes are bao's; otherwise the size followed by bao-tree's
/// response for the chunks holding the range.
///
/// No content is hashed for group log 0; for larger groups only the groups that the range covers
/// in part (to make the parents inside them). Decoding the slice verifies it.
///
/// ```
/// use b3accel::bao::{decode_slice, encode_on, slice};
/// let data = vec![3u8; 10_000];
/// let (encoded, hash) = encode_on(b3accel::Device::Cpu, &data, 0)?;
/// let s = slice(&encoded, 0, 5000, 100)?;
/// let mut out = Vec::new();
/// decode_slice(&s[..], &hash, 0, 5000, 100, &mut out)?;
/// assert_eq!(out, &data[5000..5100]);
/// # Ok::<(), b3accel::bao::Error>(())
/// ```
pub fn slice(encoded: &[u8], group_log: u8, start: u64, len: u64) -> Result<Vec<u8>, Error> {
    let Some(header) = encoded.first_chunk::<HEADER_LEN>() else {
        return Err(Error::Truncated { offset: encoded.len() as u64 });
    };
    let tree = Tree::new(u64::from_le_bytes(*header), group_log)?;
    if ((encoded.len() - HEADER_LEN) as u64) < tree.encoded_len() - HEADER_LEN as u64 {
        return Err(Error::Truncated { offset: encoded.len() as u64 });
    }
    extract(tree, Source::Encoded(&encoded[HEADER_LEN..]), start, len)
}

/// [`slice`] from the content `data` and its outboard (either order): the same bytes as from
/// the combined encoding.
///
/// ```
/// use b3accel::bao::{encode_on, outboard_on, slice, slice_outboard, Order};
/// use b3accel::Device;
/// let data = vec![9u8; 70_000];
/// let (ob, _) = outboard_on(Device::Cpu, &data, 2, Order::Post)?;
/// let (encoded, _) = encode_on(Device::Cpu, &data, 2)?;
/// assert_eq!(slice_outboard(&data, &ob, 1234, 20_000)?, slice(&encoded, 2, 1234, 20_000)?);
/// # Ok::<(), b3accel::bao::Error>(())
/// ```
pub fn slice_outboard(data: &[u8], outboard: &Outboard, start: u64, len: u64) -> Result<Vec<u8>, Error> {
    let tree = outboard.tree();
    if data.len() as u64 != tree.size() {
        return Err(Error::Invalid(format!(
            "the content has {} bytes but its outboard is for {}",
            data.len(),
            tree.size()
        )));
    }
    extract(tree, Source::Outboard { data, outboard }, start, len)
}
