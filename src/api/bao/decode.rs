//! Verified decoding, streamed: a combined encoding, a slice, or content with its outboard is read
//! in order, each node checked against the chaining value its verified parent (or the root hash)
//! gives, and content released only once the block that holds it has verified. The first node
//! that does not verify stops the decode with its offset.
//!
//! A subtree of up to [`WINDOW_BYTES`] of content that the decode needs whole is read at once and
//! checked by the parallel walk (`walk.rs`) before any of it is released; where that check fails,
//! the subtree is decoded again from memory, in order, to stop at the right node with everything
//! before it released, as a decode in order does.

use super::encode::Outboard;
use super::error::{Block, Error};
use super::layout::{Node, Place, Tree, HEADER_LEN, PARENT_LEN};
use super::walk::{children, Check, Layout};
use crate::core::compress::Cv;
use crate::dispatch::cpu_backend;
use crate::tree::{merge_subtrees_non_root, merge_subtrees_root, subtree_node, Domain, TreeMode};
use blake3::Hash;
use std::io::{Cursor, Read, Write};
use std::ops::Range;

/// The most content a decoder reads ahead of what it has verified, to check it on every core: a
/// subtree this large has enough of the walk's pieces for the threads, and the decoder's memory
/// stays two such buffers.
const WINDOW_BYTES: u64 = 16 << 20;

/// A stream read from the front, counting its bytes so that errors can say where they are.
struct Stream<R> {
    inner: R,
    pos: u64,
}

impl<R: Read> Stream<R> {
    /// Reads `len` bytes into `buf` (replacing its contents); returns the offset they started
    /// at. The buffer grows as bytes arrive, so a corrupt size asks for no memory it never fills.
    fn read(&mut self, len: usize, buf: &mut Vec<u8>) -> Result<u64, Error> {
        let at = self.read_up_to(len, buf)?;
        if buf.len() < len {
            return Err(Error::Truncated { offset: self.pos });
        }
        Ok(at)
    }

    /// Reads up to `len` bytes into `buf` (replacing its contents), fewer only where the stream
    /// ends; returns the offset they started at.
    fn read_up_to(&mut self, len: usize, buf: &mut Vec<u8>) -> Result<u64, Error> {
        let at = self.pos;
        buf.clear();
        self.pos += (&mut self.inner).take(len as u64).read_to_end(buf)? as u64;
        Ok(at)
    }

    /// Reads one parent pair; returns it and its offset.
    fn pair(&mut self) -> Result<([u8; PARENT_LEN], u64), Error> {
        let mut buf = Vec::with_capacity(PARENT_LEN);
        let at = self.read(PARENT_LEN, &mut buf)?;
        Ok((buf.try_into().expect("64 bytes"), at))
    }
}

/// Where a decoder's nodes come from.
enum Nodes<'a, R> {
    /// One stream with everything in pre-order: a combined encoding or a slice.
    Encoded(Stream<R>),
    /// The content as a stream and the parents from an outboard.
    Outboard { data: Stream<R>, outboard: &'a Outboard },
}

/// A decode in progress: the tree, the nodes, the chunks to verify, the content bytes to release
/// and where they go.
struct Decode<'a, R, W> {
    tree: Tree,
    nodes: Nodes<'a, R>,
    query: Range<u64>,
    release: Range<u64>,
    out: W,
    written: u64,
    buf: Vec<u8>,
    /// A window's content, when the nodes come from an encoding.
    content: Vec<u8>,
    /// Whether whole subtrees are read ahead and checked in parallel (not when decoding again).
    windows: bool,
}

impl<R: Read, W: Write> Decode<'_, R, W> {
    /// Verifies `node` (at `place` in the outboard) against `expected` (the root hash when
    /// `is_root`) and everything under it that the query needs, releasing content as it
    /// verifies.
    fn node(&mut self, node: Node, place: Place, expected: &Cv, is_root: bool) -> Result<(), Error> {
        let tree = self.tree;
        let content_start = tree.bytes(node).start;
        let outboard_parent = tree.is_outboard_parent(node);
        let whole = node.within(&self.query);
        if self.windows && outboard_parent && whole && tree.bytes(node).end - content_start <= WINDOW_BYTES {
            return self.window(node, place, expected, is_root);
        }
        if outboard_parent || !whole {
            let (pair, offset) = match &mut self.nodes {
                Nodes::Encoded(stream) => stream.pair()?,
                Nodes::Outboard { outboard, .. } => {
                    let (l, r) = outboard.pair(node, place);
                    ([l, r].concat().try_into().expect("64 bytes"), outboard.file_offset(node, place))
                }
            };
            let left_cv: Cv = pair[..32].try_into().expect("32 bytes");
            let right_cv: Cv = pair[32..].try_into().expect("32 bytes");
            let got = if is_root {
                *merge_subtrees_root(&left_cv, &right_cv, TreeMode::Hash).as_bytes()
            } else {
                merge_subtrees_non_root(&left_cv, &right_cv, TreeMode::Hash)
            };
            if Hash::from_bytes(got) != Hash::from_bytes(*expected) {
                return Err(Error::Corrupt { block: Block::Parent, offset, content: content_start });
            }
            let (left, right) = node.split();
            let (lp, rp) = if outboard_parent { place.children(tree.groups_of(left)) } else { (place, place) };
            if left.meets(&self.query) {
                self.node(left, lp, &left_cv, false)?;
            }
            if right.meets(&self.query) {
                self.node(right, rp, &right_cv, false)?;
            }
            return Ok(());
        }
        let bytes = tree.bytes(node);
        let len = (bytes.end - bytes.start) as usize;
        let stream = match &mut self.nodes {
            Nodes::Encoded(stream) => stream,
            Nodes::Outboard { data, .. } => data,
        };
        let offset = stream.read(len, &mut self.buf)?;
        let top = subtree_node(&**cpu_backend(), &self.buf, node.start, Domain::HASH)?;
        let got = if is_root { top.root_hash() } else { top.chaining_value() };
        if Hash::from_bytes(got) != Hash::from_bytes(*expected) {
            return Err(Error::Corrupt { block: Block::Data, offset, content: content_start });
        }
        let buf = std::mem::take(&mut self.buf);
        self.release(bytes, &buf)?;
        self.buf = buf;
        Ok(())
    }

    /// Writes the part of `content` (the content bytes `bytes`, verified) that is to be released.
    fn release(&mut self, bytes: Range<u64>, content: &[u8]) -> Result<(), Error> {
        let from = self.release.start.clamp(bytes.start, bytes.end);
        let to = self.release.end.clamp(bytes.start, bytes.end);
        if from < to {
            self.out.write_all(&content[(from - bytes.start) as usize..(to - bytes.start) as usize])?;
            self.written += to - from;
        }
        Ok(())
    }

    /// Verifies the parent `node`, needed whole, as [`node`](Self::node) does, reading all of it
    /// first and checking it with the parallel walk; where that check fails, decodes what was
    /// read again in order.
    fn window(&mut self, node: Node, place: Place, expected: &Cv, is_root: bool) -> Result<(), Error> {
        let tree = self.tree;
        let bytes = tree.bytes(node);
        let len = (bytes.end - bytes.start) as usize;
        let cpu = cpu_backend();
        let (mut buf, mut content) = (std::mem::take(&mut self.buf), std::mem::take(&mut self.content));
        let (offset, checked) = match &mut self.nodes {
            Nodes::Encoded(stream) => {
                let offset = stream.read_up_to(tree.encoded_len_of(node) as usize, &mut buf)?;
                content.resize(len, 0);
                let check = Check { tree, layout: Layout::Encoded, backend: &**cpu };
                let complete = buf.len() == tree.encoded_len_of(node) as usize;
                (offset, complete.then(|| children(&check, node, &buf[..], &mut content[..])))
            }
            Nodes::Outboard { data, outboard } => {
                let offset = data.read_up_to(len, &mut buf)?;
                let parents = outboard.parents_of(node, place);
                let check = Check { tree, layout: Layout::Outboard(outboard.order()), backend: &**cpu };
                (offset, (buf.len() == len).then(|| children(&check, node, parents, &mut buf[..])))
            }
        };
        let verified = match checked {
            Some(Ok((left, right))) => {
                let got = if is_root {
                    *merge_subtrees_root(&left, &right, TreeMode::Hash).as_bytes()
                } else {
                    merge_subtrees_non_root(&left, &right, TreeMode::Hash)
                };
                Hash::from_bytes(got) == Hash::from_bytes(*expected)
            }
            _ => false,
        };
        let result = if verified {
            let content_of = if matches!(self.nodes, Nodes::Encoded(_)) { &content } else { &buf };
            self.release(bytes, content_of)
        } else {
            self.again(node, place, expected, is_root, offset, &buf)
        };
        (self.buf, self.content) = (buf, content);
        result
    }

    /// Decodes `node` again, in order, from `read` (what the stream gave for it, from `offset`),
    /// releasing what verifies and stopping at the first node that does not.
    fn again(
        &mut self,
        node: Node,
        place: Place,
        expected: &Cv,
        is_root: bool,
        offset: u64,
        read: &[u8],
    ) -> Result<(), Error> {
        let stream = Stream { inner: read, pos: offset };
        let nodes = match &self.nodes {
            Nodes::Encoded(_) => Nodes::Encoded(stream),
            Nodes::Outboard { outboard, .. } => Nodes::Outboard { data: stream, outboard },
        };
        let mut serial = Decode {
            tree: self.tree,
            nodes,
            query: self.query.clone(),
            release: self.release.clone(),
            out: &mut self.out as &mut dyn Write,
            written: 0,
            buf: Vec::new(),
            content: Vec::new(),
            windows: false,
        };
        let result = serial.node(node, place, expected, is_root);
        self.written += serial.written;
        result
    }
}

/// Decodes from the root of `tree`, verifying the chunks `query` and releasing the content bytes
/// `release`; returns the number of bytes written.
fn run<R: Read, W: Write>(
    tree: Tree,
    nodes: Nodes<R>,
    query: Range<u64>,
    release: Range<u64>,
    hash: &Hash,
    out: W,
) -> Result<u64, Error> {
    let mut d =
        Decode { tree, nodes, query, release, out, written: 0, buf: Vec::new(), content: Vec::new(), windows: true };
    d.node(tree.root(), Place::ROOT, hash.as_bytes(), true)?;
    d.out.flush()?;
    Ok(d.written)
}

/// Reads a size header and makes the tree it gives.
fn header<R: Read>(stream: &mut Stream<R>, group_log: u8) -> Result<Tree, Error> {
    let mut buf = Vec::with_capacity(HEADER_LEN);
    stream.read(HEADER_LEN, &mut buf)?;
    Tree::new(u64::from_le_bytes(buf.try_into().expect("8 bytes")), group_log)
}

/// Decodes the combined encoding read from `encoded` (groups of 2^`group_log` chunks) against
/// `hash`, writing the content to `out` as it verifies: each chunk group is checked before any
/// of it is written, and the first node that does not verify ends the decode with
/// [`Error::Corrupt`] (what came before it is written and verified). Returns the content's
/// length. Bytes after the encoding are not read.
///
/// ```
/// use b3accel::bao::{decode, encode_on, Error};
/// let data = vec![1u8; 5000];
/// let (mut encoded, hash) = encode_on(b3accel::Device::Cpu, &data, 0)?;
/// let mut out = Vec::new();
/// assert_eq!(decode(&encoded[..], &hash, 0, &mut out)?, 5000);
/// assert_eq!(out, data);
/// encoded[4000] ^= 1;
/// assert!(matches!(decode(&encoded[..], &hash, 0, &mut Vec::new()), Err(Error::Corrupt { .. })));
/// # Ok::<(), b3accel::bao::Error>(())
/// ```
pub fn decode<R: Read, W: Write>(encoded: R, hash: &Hash, group_log: u8, out: W) -> Result<u64, Error> {
    let mut stream = Stream { inner: encoded, pos: 0 };
    let tree = header(&mut stream, group_log)?;
    run(tree, Nodes::Encoded(stream), 0..tree.chunks(), 0..tree.size(), hash, out)
}

/// Decodes a whole combined encoding held in memory into `out`, which has room for exactly its
/// content (the size in the encoding's first 8 bytes), checking it on every core at once. On an
/// error (as [`decode`] gives it) `out` holds the content before the first node that does not
/// verify, and zeros after it: no unverified byte is left there.
///
/// ```
/// use b3accel::bao::{decode_into, encode_on, Error};
/// let data = vec![3u8; 300_000];
/// let (mut encoded, hash) = encode_on(b3accel::Device::Cpu, &data, 0)?;
/// let mut out = vec![0u8; data.len()];
/// decode_into(&encoded, &hash, 0, &mut out)?;
/// assert_eq!(out, data);
/// encoded[200_000] ^= 1;
/// assert!(matches!(decode_into(&encoded, &hash, 0, &mut out), Err(Error::Corrupt { .. })));
/// assert!(out[190_000..].iter().all(|&b| b == 0));
/// # Ok::<(), b3accel::bao::Error>(())
/// ```
pub fn decode_into(encoded: &[u8], hash: &Hash, group_log: u8, out: &mut [u8]) -> Result<(), Error> {
    let mut stream = Stream { inner: encoded, pos: 0 };
    let tree = header(&mut stream, group_log)?;
    if out.len() as u64 != tree.size() {
        return Err(Error::Invalid(format!(
            "decode_into: the encoding holds {} content bytes, but the output has room for {}",
            tree.size(),
            out.len()
        )));
    }
    let nodes_len = (tree.encoded_len() - HEADER_LEN as u64) as usize;
    if tree.groups() > 1 && encoded.len() - HEADER_LEN >= nodes_len {
        let check = Check { tree, layout: Layout::Encoded, backend: &**cpu_backend() };
        let nodes = &encoded[HEADER_LEN..HEADER_LEN + nodes_len];
        if let Ok((left, right)) = children(&check, tree.root(), nodes, out) {
            if merge_subtrees_root(&left, &right, TreeMode::Hash) == *hash {
                return Ok(());
            }
        }
    }
    // One chunk group, a short encoding, or a node that does not verify: in order, from the top.
    let mut cursor = Cursor::new(&mut *out);
    let result = run(tree, Nodes::Encoded(stream), 0..tree.chunks(), 0..tree.size(), hash, &mut cursor);
    let written = cursor.position() as usize;
    out[written..].fill(0);
    result.map(|_| ())
}

/// Decodes a slice (see [`slice`](super::slice)) of `len` bytes from byte `start`, read from
/// `slice`, against `hash`, writing the content bytes of that range (clipped to the content) to
/// `out` as they verify; returns how many. `start`, `len` and `group_log` must be those the
/// slice was made with.
///
/// ```
/// use b3accel::bao::{decode_slice, outboard_on, slice_outboard, Order};
/// let data: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
/// let (ob, hash) = outboard_on(b3accel::Device::Cpu, &data, 4, Order::Pre)?;
/// let s = slice_outboard(&data, &ob, 40_000, 3000)?;
/// let mut out = Vec::new();
/// assert_eq!(decode_slice(&s[..], &hash, 4, 40_000, 3000, &mut out)?, 3000);
/// assert_eq!(out, &data[40_000..43_000]);
/// # Ok::<(), b3accel::bao::Error>(())
/// ```
pub fn decode_slice<R: Read, W: Write>(
    slice: R,
    hash: &Hash,
    group_log: u8,
    start: u64,
    len: u64,
    out: W,
) -> Result<u64, Error> {
    let mut stream = Stream { inner: slice, pos: 0 };
    let tree = header(&mut stream, group_log)?;
    let release = start.min(tree.size())..start.saturating_add(len).min(tree.size());
    run(tree, Nodes::Encoded(stream), tree.query(start, len), release, hash, out)
}

/// Decodes content read from `data` with its `outboard` (either order) against `hash`, writing
/// it to `out` as it verifies, as [`decode`] does for a combined encoding. A parent that does
/// not verify is reported at its offset in the outboard file, content at its offset in `data`.
///
/// ```
/// use b3accel::bao::{decode_outboard, outboard_on, Order};
/// let data = vec![4u8; 50_000];
/// let (ob, hash) = outboard_on(b3accel::Device::Cpu, &data, 1, Order::Post)?;
/// let mut out = Vec::new();
/// decode_outboard(&data[..], &ob, &hash, &mut out)?;
/// assert_eq!(out, data);
/// # Ok::<(), b3accel::bao::Error>(())
/// ```
pub fn decode_outboard<R: Read, W: Write>(data: R, outboard: &Outboard, hash: &Hash, out: W) -> Result<u64, Error> {
    let tree = outboard.tree();
    let nodes = Nodes::Outboard { data: Stream { inner: data, pos: 0 }, outboard };
    run(tree, nodes, 0..tree.chunks(), 0..tree.size(), hash, out)
}
