//! A tree's last node and what it gives: its chaining value, or, as the root, the hash and the
//! extendable output stream ([`OutputReader`]). In the keyed and key-derivation modes a node's
//! input chaining value and block are secret (for a one-block input they are the key words and
//! the key material): neither `Debug` form shows them, and a secret node is wiped when dropped.

use super::mode::Domain;
use crate::core::compress::{block_words, words_to_cv, Cv};
use crate::core::constants::{flags, BLOCK_LEN};
use crate::core::platform::{compress, compress_cv};
use std::{fmt, io};
use zeroize::Zeroize;

/// The last node of a tree, not yet compressed with ROOT: it gives either a chaining value (when it
/// turns out not to be the root) or the root's output stream.
#[derive(Clone)]
pub(crate) struct Output {
    pub(super) input_cv: [u32; 8],
    pub(super) block: [u32; 16],
    pub(super) block_len: u32,
    pub(super) counter: u64,
    pub(super) flags: u32,
}

impl Output {
    /// Whether this node belongs to a keyed or key-derivation tree, whose nodes are secret.
    fn is_secret(&self) -> bool {
        self.flags & (flags::KEYED_HASH | flags::DERIVE_KEY_MATERIAL) != 0
    }

    /// This node's chaining value as a non-root node.
    pub fn chaining_value(&self) -> Cv {
        words_to_cv(&compress_cv(&self.input_cv, &self.block, self.block_len, self.counter, self.flags))
    }

    /// The first 32 bytes of root output: the hash.
    #[inline]
    pub fn root_hash(&self) -> [u8; 32] {
        words_to_cv(&compress_cv(&self.input_cv, &self.block, self.block_len, 0, self.flags | flags::ROOT))
    }

    /// Root output bytes starting at byte `position` of the output stream, filling `out`; bytes
    /// past 2^64 - 1 continue the stream (see [`OutputReader`]).
    pub fn root_bytes(&self, position: u64, out: &mut [u8]) {
        self.root_blocks(position / BLOCK_LEN as u64, (position % BLOCK_LEN as u64) as usize, out);
    }

    /// Root output bytes starting at byte `offset` of block `block` of the output stream (block k
    /// is the root compression with counter k), filling `out`. Returns the block and offset of the
    /// byte after the last one written.
    fn root_blocks(&self, mut block: u64, mut offset: usize, mut out: &mut [u8]) -> (u64, usize) {
        while !out.is_empty() {
            let words = compress(&self.input_cv, &self.block, self.block_len, block, self.flags | flags::ROOT);
            let mut bytes = [0u8; BLOCK_LEN];
            for (b, w) in bytes.chunks_exact_mut(4).zip(words) {
                b.copy_from_slice(&w.to_le_bytes());
            }
            let take = (BLOCK_LEN - offset).min(out.len());
            out[..take].copy_from_slice(&bytes[offset..offset + take]);
            out = &mut out[take..];
            offset += take;
            if offset == BLOCK_LEN {
                // The counter is BLOCK_LEN * 2^64 bytes long (2^70): no reader gets to its end.
                block = block.wrapping_add(1);
                offset = 0;
            }
        }
        (block, offset)
    }

    /// A parent node over two chaining values.
    pub(super) fn parent(left: &Cv, right: &Cv, domain: Domain) -> Output {
        let mut block = [0u8; BLOCK_LEN];
        block[..32].copy_from_slice(left);
        block[32..].copy_from_slice(right);
        Output {
            input_cv: domain.key,
            block: block_words(&block),
            block_len: BLOCK_LEN as u32,
            counter: 0,
            flags: domain.flags | flags::PARENT,
        }
    }
}

/// The flags and position only: the input chaining value and the block may be secret.
impl fmt::Debug for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Output")
            .field("flags", &self.flags)
            .field("counter", &self.counter)
            .field("block_len", &self.block_len)
            .finish_non_exhaustive()
    }
}

/// A node of a keyed or key-derivation tree is wiped when dropped. A node of a plain hash is
/// not: nothing in it is secret, and `hash_many` drops one per message.
impl Drop for Output {
    fn drop(&mut self) {
        if self.is_secret() {
            self.input_cv.zeroize();
            self.block.zeroize();
        }
    }
}

/// BLAKE3's extendable output: any number of bytes from any position.
///
/// The stream goes on past byte 2^64 - 1, as upstream's reader does: its block counter is 64
/// bits wide, the byte position is not. A position there does not fit a `u64`:
/// [`position`](Self::position) gives it modulo 2^64 (as upstream's does), and a relative seek
/// from it that does not land within `0..2^64` is an error.
///
/// Its `Debug` form shows the position only: the state behind it (in the keyed and
/// key-derivation modes, secret) is never printed, and it is wiped when the reader is dropped.
///
/// ```
/// use std::io::{Read, Seek, SeekFrom};
/// let mut h = b3accel::Hasher::new();
/// h.update(b"stream").unwrap();
/// let mut reader = h.finalize_xof().unwrap();
/// reader.seek(SeekFrom::Start(1000)).unwrap();
/// let mut out = [0u8; 10];
/// reader.read_exact(&mut out).unwrap();
/// let mut expected = [0u8; 1010];
/// blake3::Hasher::new().update(b"stream").finalize_xof().fill(&mut expected);
/// assert_eq!(out, expected[1000..]);
/// assert_eq!(format!("{reader:?}"), "OutputReader { position: 1010, .. }");
/// ```
#[derive(Clone)]
pub struct OutputReader {
    output: Output,
    /// The block of the stream the next byte is in, and its offset there (below `BLOCK_LEN`).
    block: u64,
    offset: usize,
}

impl OutputReader {
    pub(crate) fn new(output: Output) -> OutputReader {
        OutputReader { output, block: 0, offset: 0 }
    }

    /// Fills `buf` with the next output bytes.
    ///
    /// ```
    /// let mut r = b3accel::Hasher::new().finalize_xof().unwrap();
    /// let (mut a, mut b) = ([0u8; 40], [0u8; 24]);
    /// r.fill(&mut a);
    /// r.fill(&mut b);
    /// assert_eq!(a[..32], *blake3::hash(b"").as_bytes());
    /// ```
    pub fn fill(&mut self, buf: &mut [u8]) {
        (self.block, self.offset) = self.output.root_blocks(self.block, self.offset, buf);
    }

    /// The position of the next byte in the output stream, modulo 2^64 (see [`OutputReader`]).
    ///
    /// ```
    /// let mut r = b3accel::Hasher::new().finalize_xof().unwrap();
    /// r.fill(&mut [0u8; 7]);
    /// assert_eq!(r.position(), 7);
    /// ```
    pub fn position(&self) -> u64 {
        self.exact_position() as u64
    }

    /// The position of the next byte in the output stream, past 2^64 - 1 too.
    fn exact_position(&self) -> u128 {
        self.block as u128 * BLOCK_LEN as u128 + self.offset as u128
    }

    /// Moves to byte `position` of the output stream.
    ///
    /// ```
    /// let mut r = b3accel::Hasher::new().finalize_xof().unwrap();
    /// r.set_position(64);
    /// assert_eq!(r.position(), 64);
    /// ```
    pub fn set_position(&mut self, position: u64) {
        self.block = position / BLOCK_LEN as u64;
        self.offset = (position % BLOCK_LEN as u64) as usize;
    }
}

impl fmt::Debug for OutputReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutputReader").field("position", &self.exact_position()).finish_non_exhaustive()
    }
}

impl io::Read for OutputReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.fill(buf);
        Ok(buf.len())
    }
}

impl io::Seek for OutputReader {
    fn seek(&mut self, pos: io::SeekFrom) -> io::Result<u64> {
        let target = match pos {
            io::SeekFrom::Start(p) => Some(p),
            io::SeekFrom::Current(d) => u64::try_from(self.exact_position() as i128 + d as i128).ok(),
            io::SeekFrom::End(_) => {
                return Err(io::Error::new(io::ErrorKind::Unsupported, "the XOF output stream has no end to seek from"))
            }
        };
        let target =
            target.ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek outside the XOF output stream"))?;
        self.set_position(target);
        Ok(target)
    }
}
