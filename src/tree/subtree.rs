//! BLAKE3's subtrees as a tool: where a subtree may start and how long it may be, the mode as key
//! references ([`Mode`], the hazmat `Mode`, which the crate calls `TreeMode` beside the owned
//! `tree::Mode`), parent merges of two chaining values, and the root of an input from pieces that
//! cover it. The public `hazmat` module re-exports these; the hasher, the device-resident forms
//! and `b3accel merge` all check subtrees here, once.

use super::context::context_key;
use super::error::{Error, Result};
use super::mode::Domain;
use super::output::{Output, OutputReader};
use super::stack::CvStack;
use crate::core::constants::{CHUNK_LEN, KEY_LEN, OUT_LEN};
use blake3::Hash;
use std::fmt;

/// A chaining value: the non-root hash of a chunk or a subtree, 32 bytes.
///
/// ```
/// use b3accel::hazmat::{ChainingValue, HasherExt};
/// let cv: ChainingValue = b3accel::Hasher::new().update(&[1; 1024])?.finalize_non_root()?;
/// assert_ne!(cv, *blake3::hash(&[1; 1024]).as_bytes()); // not the root hash
/// # Ok::<(), b3accel::Error>(())
/// ```
pub type ChainingValue = [u8; OUT_LEN];

/// The key of key derivation's material hashing, made from a context string by
/// [`hash_derive_key_context`] (its only valid source).
///
/// ```
/// use b3accel::hazmat::{hash_derive_key_context, ContextKey};
/// let key: ContextKey = hash_derive_key_context("example.com 2026 session keys");
/// assert_eq!(key, blake3::hazmat::hash_derive_key_context("example.com 2026 session keys"));
/// ```
pub type ContextKey = [u8; KEY_LEN];

/// The mode of the merge functions ([`merge_subtrees_root`] and friends): the hazmat `Mode` of
/// upstream BLAKE3, with the key or the context key by reference. Subtrees merged in one mode
/// must have been hashed in it: with [`Hasher::new`](crate::Hasher::new) (or `new_on`) for
/// `Hash`, a keyed hasher for `KeyedHash`, and a derive-key hasher or
/// `new_from_context_key` for `DeriveKeyMaterial`.
///
/// Its `Debug` form never shows the key: `KeyedHash(<redacted>)`.
///
/// ```
/// use b3accel::hazmat::{hash_derive_key_context, Mode};
/// let key = [7u8; 32];
/// let ctx = hash_derive_key_context("example 2026 derive");
/// let modes = [Mode::Hash, Mode::KeyedHash(&key), Mode::DeriveKeyMaterial(&ctx)];
/// assert_eq!(format!("{:?}", modes[1]), "KeyedHash(<redacted>)");
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode<'a> {
    /// The plain hash.
    Hash,
    /// The keyed hash, with its 32-byte key.
    KeyedHash(&'a [u8; KEY_LEN]),
    /// Key derivation, with the context key from [`hash_derive_key_context`].
    DeriveKeyMaterial(&'a ContextKey),
}

impl Mode<'_> {
    /// The key words and flags of this mode.
    pub(crate) fn domain(&self) -> Domain {
        match self {
            Mode::Hash => Domain::HASH,
            Mode::KeyedHash(key) => Domain::keyed(key),
            Mode::DeriveKeyMaterial(context_key) => Domain::from_context_key(context_key),
        }
    }
}

impl fmt::Debug for Mode<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mode::Hash => f.write_str("Hash"),
            Mode::KeyedHash(_) => f.write_str("KeyedHash(<redacted>)"),
            Mode::DeriveKeyMaterial(_) => f.write_str("DeriveKeyMaterial(<redacted>)"),
        }
    }
}

/// Hashes a key derivation context string into the [`ContextKey`] that
/// [`Mode::DeriveKeyMaterial`](Mode::DeriveKeyMaterial) and
/// [`HasherExt::new_from_context_key`](crate::hazmat::HasherExt::new_from_context_key) take. The
/// context should be hard-coded, globally unique and application-specific, as for
/// [`derive_key_on`](crate::derive_key_on).
///
/// ```
/// use b3accel::hazmat::{hash_derive_key_context, HasherExt};
/// let ctx = hash_derive_key_context("example.com 2026 file keys");
/// let mut h = b3accel::Hasher::new_from_context_key(&ctx);
/// h.update(b"material")?;
/// assert_eq!(*h.finalize()?.as_bytes(), blake3::derive_key("example.com 2026 file keys", b"material"));
/// # Ok::<(), b3accel::Error>(())
/// ```
pub fn hash_derive_key_context(context: &str) -> ContextKey {
    context_key(context)
}

/// The largest subtree, in bytes, that can start at byte `input_offset` of an input: the largest
/// power of two of chunks that divides the offset's chunk index. `None` at offset 0, where a
/// subtree may be as long as the input. Going past it would merge chunks that lie on both sides
/// of a node of BLAKE3's tree, so the result would be garbage; the hasher refuses it.
///
/// An offset that is not a multiple of [`CHUNK_LEN`] starts no subtree at all: the answer is
/// `Some(0)` (upstream BLAKE3 panics there).
///
/// ```
/// use b3accel::hazmat::max_subtree_len;
/// assert_eq!(max_subtree_len(0), None);
/// assert_eq!(max_subtree_len(3 * 1024), Some(1024)); // chunk 3: a lone chunk
/// assert_eq!(max_subtree_len(12 * 1024), Some(4096)); // chunk 12: chunks 12 to 15
/// assert_eq!(max_subtree_len(100), Some(0)); // not a chunk boundary
/// ```
pub fn max_subtree_len(input_offset: u64) -> Option<u64> {
    if input_offset == 0 {
        return None;
    }
    if !input_offset.is_multiple_of(CHUNK_LEN as u64) {
        return Some(0);
    }
    Some(CHUNK_LEN as u64 * max_subtree_chunks(input_offset / CHUNK_LEN as u64))
}

/// The largest subtree, in chunks, that can start at chunk `start` (which is not 0).
fn max_subtree_chunks(start: u64) -> u64 {
    1 << start.trailing_zeros()
}

/// How many bytes of an input (or a subtree) of `input_len` bytes belong to its left child: the
/// largest power of two of bytes below `input_len` (the left child is complete, and at least as
/// large as the right one). Splitting an input there, and each part again where this says, gives
/// pieces that [`set_input_offset`](crate::hazmat::HasherExt::set_input_offset) and
/// [`finalize_non_root`](crate::hazmat::HasherExt::finalize_non_root) accept.
///
/// An input of one chunk or less has no children: the answer is 0 there (upstream BLAKE3 gives
/// a meaningless number, or panics in a debug build).
///
/// ```
/// use b3accel::hazmat::left_subtree_len;
/// assert_eq!(left_subtree_len(1025), 1024);
/// assert_eq!(left_subtree_len(4096), 2048);
/// assert_eq!(left_subtree_len(4097), 4096);
/// assert_eq!(left_subtree_len(1024), 0); // a single chunk
/// ```
pub fn left_subtree_len(input_len: u64) -> u64 {
    if input_len <= CHUNK_LEN as u64 {
        return 0;
    }
    // The smallest power of two at least half the input (rounded up): without `input_len + 1`,
    // which would overflow at u64::MAX.
    (input_len / 2 + input_len % 2).next_power_of_two()
}

/// Checks that bytes `input_offset..input_offset + len` of an input can be hashed as one subtree
/// and finalized as a chaining value: the offset is a chunk boundary, the subtree is not empty,
/// and it fits there. At offset 0 the subtree is the left child of a larger input, so it must be
/// a power of two of whole chunks; any other length there is the whole input, whose top node is
/// the root, not a chaining value. Elsewhere it may be up to [`max_subtree_len`] long, and one
/// that ends the input may end in a partial chunk.
///
/// ```
/// use b3accel::hazmat::check_subtree;
/// assert!(check_subtree(4096, 3000).is_ok()); // may end the input in a partial chunk
/// assert!(check_subtree(0, 2048).is_ok()); // the left child of a longer input
/// assert!(check_subtree(0, 3000).is_err()); // only ever the whole input: a root
/// assert!(check_subtree(1024, 2048).is_err()); // at most one chunk starts at chunk 1
/// assert!(check_subtree(100, 1).is_err()); // not a chunk boundary
/// ```
pub fn check_subtree(input_offset: u64, len: u64) -> Result<()> {
    check_input_offset(input_offset)?;
    if len == 0 {
        return Err(Error::InvalidInput("an empty subtree: subtrees are never empty".into()));
    }
    if input_offset.checked_add(len).is_none() {
        return Err(Error::InvalidInput(format!(
            "{len} bytes at offset {input_offset} run past the longest input, 2^64 - 1 bytes"
        )));
    }
    if input_offset == 0 {
        if !is_complete(len) {
            return Err(Error::InvalidInput(format!(
                "{len} bytes at offset 0 are not a power of two of whole chunks (1024, 2048, 4096, ... bytes), so \
                 they can only be the whole input, whose top node is the root, not a chaining value: finalize \
                 it as a root, or split it where left_subtree_len says"
            )));
        }
        return Ok(());
    }
    check_fits(input_offset, len)
}

/// Checks that `input_offset` can start a subtree: a multiple of [`CHUNK_LEN`]. Returns its
/// chunk index.
pub(crate) fn check_input_offset(input_offset: u64) -> Result<u64> {
    if !input_offset.is_multiple_of(CHUNK_LEN as u64) {
        return Err(Error::InvalidInput(format!(
            "input offset {input_offset} is not a multiple of the chunk length ({CHUNK_LEN}): subtrees start on \
             chunk boundaries"
        )));
    }
    Ok(input_offset / CHUNK_LEN as u64)
}

/// Checks that a subtree at `input_offset` (a chunk boundary) may be `len` bytes long: at most
/// [`max_subtree_len`] (no limit at offset 0).
pub(crate) fn check_fits(input_offset: u64, len: u64) -> Result<()> {
    match max_subtree_len(input_offset) {
        Some(max) if len > max => Err(Error::InvalidInput(format!(
            "{len} bytes at offset {input_offset} go past the largest subtree that can start there ({max} bytes, \
             see max_subtree_len)"
        ))),
        _ => Ok(()),
    }
}

/// Whether `len` bytes are a power of two of whole chunks: a complete subtree.
fn is_complete(len: u64) -> bool {
    len.is_multiple_of(CHUNK_LEN as u64) && (len / CHUNK_LEN as u64).is_power_of_two()
}

/// The chaining value of the parent of two subtrees (non-root): for merging pieces of a larger
/// tree. The children's chaining values come from
/// [`finalize_non_root`](crate::hazmat::HasherExt::finalize_non_root) or from this function.
///
/// Like upstream's, the merge functions do not know the children's shapes and cannot catch a
/// wrong split; [`merge_pieces_root`] checks a whole cover.
///
/// ```
/// use b3accel::hazmat::{merge_subtrees_non_root, merge_subtrees_root, HasherExt, Mode};
/// use b3accel::Hasher;
/// let data = vec![9u8; 4096 + 10];
/// let cv = |at: usize, len: usize| -> b3accel::Result<[u8; 32]> {
///     Hasher::new().set_input_offset(at as u64)?.update(&data[at..at + len])?.finalize_non_root()
/// };
/// let left = merge_subtrees_non_root(&cv(0, 2048)?, &cv(2048, 2048)?, Mode::Hash);
/// let root = merge_subtrees_root(&left, &cv(4096, 10)?, Mode::Hash);
/// assert_eq!(root, blake3::hash(&data));
/// # Ok::<(), b3accel::Error>(())
/// ```
pub fn merge_subtrees_non_root(left_child: &ChainingValue, right_child: &ChainingValue, mode: Mode) -> ChainingValue {
    Output::parent(left_child, right_child, mode.domain()).chaining_value()
}

/// The root hash of an input whose two children have these chaining values (the input is longer
/// than one chunk: a single chunk has no children, and its root comes from
/// [`Hasher::finalize`](crate::Hasher::finalize)).
///
/// ```
/// use b3accel::hazmat::{left_subtree_len, merge_subtrees_root, HasherExt, Mode};
/// use b3accel::Hasher;
/// let key = [3u8; 32];
/// let data = vec![1u8; 5000];
/// let split = left_subtree_len(5000) as usize;
/// let left = Hasher::new_keyed_on(b3accel::Device::Cpu, &key)?.update(&data[..split])?.finalize_non_root()?;
/// let mut right = Hasher::new_keyed_on(b3accel::Device::Cpu, &key)?;
/// right.set_input_offset(split as u64)?.update(&data[split..])?;
/// let root = merge_subtrees_root(&left, &right.finalize_non_root()?, Mode::KeyedHash(&key));
/// assert_eq!(root, blake3::keyed_hash(&key, &data));
/// # Ok::<(), b3accel::Error>(())
/// ```
pub fn merge_subtrees_root(left_child: &ChainingValue, right_child: &ChainingValue, mode: Mode) -> Hash {
    Hash::from_bytes(Output::parent(left_child, right_child, mode.domain()).root_hash())
}

/// The root's output reader (BLAKE3's extendable output) of an input whose two children have
/// these chaining values; as [`merge_subtrees_root`], for any output length.
///
/// ```
/// use b3accel::hazmat::{merge_subtrees_root_xof, HasherExt, Mode};
/// use b3accel::Hasher;
/// let left = Hasher::new().update(&[42; 1024])?.finalize_non_root()?;
/// let right = Hasher::new().set_input_offset(1024)?.update(b"hello world")?.finalize_non_root()?;
/// let mut out = [0u8; 100];
/// merge_subtrees_root_xof(&left, &right, Mode::Hash).fill(&mut out);
/// let mut expected = [0u8; 100];
/// blake3::Hasher::new().update(&[42; 1024]).update(b"hello world").finalize_xof().fill(&mut expected);
/// assert_eq!(out, expected);
/// # Ok::<(), b3accel::Error>(())
/// ```
pub fn merge_subtrees_root_xof(left_child: &ChainingValue, right_child: &ChainingValue, mode: Mode) -> OutputReader {
    OutputReader::new(Output::parent(left_child, right_child, mode.domain()))
}

/// One piece of an input: bytes `offset..offset + len`, hashed as a subtree into `cv` (with
/// [`set_input_offset`](crate::hazmat::HasherExt::set_input_offset) and
/// [`finalize_non_root`](crate::hazmat::HasherExt::finalize_non_root), `b3accel subtree`, or a
/// device-resident form).
///
/// ```
/// let piece = b3accel::hazmat::Piece { offset: 4096, len: 100, cv: [0; 32] };
/// assert_eq!(piece.offset + piece.len, 4196);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// Where the piece starts in the input, in bytes.
    pub offset: u64,
    /// Its length in bytes.
    pub len: u64,
    /// Its chaining value.
    pub cv: ChainingValue,
}

/// The root hash of an input from pieces that cover it, in any order: see
/// [`merge_pieces_root_xof`], whose first 32 bytes this is.
///
/// ```
/// use b3accel::hazmat::{merge_pieces_root, HasherExt, Mode, Piece};
/// use b3accel::Hasher;
/// let data = vec![5u8; 3 * 1024 + 1];
/// let piece = |offset: u64, len: u64| -> b3accel::Result<Piece> {
///     let bytes = &data[offset as usize..(offset + len) as usize];
///     let cv = Hasher::new().set_input_offset(offset)?.update(bytes)?.finalize_non_root()?;
///     Ok(Piece { offset, len, cv })
/// };
/// let pieces = [piece(2048, 1024)?, piece(0, 2048)?, piece(3072, 1)?];
/// assert_eq!(merge_pieces_root(&pieces, Mode::Hash)?, blake3::hash(&data));
/// # Ok::<(), b3accel::Error>(())
/// ```
pub fn merge_pieces_root(pieces: &[Piece], mode: Mode) -> Result<Hash> {
    let mut out = [0u8; OUT_LEN];
    merge_pieces_root_xof(pieces, mode)?.fill(&mut out);
    Ok(Hash::from_bytes(out))
}

/// The root's output reader of an input from pieces that cover it, in any order: BLAKE3's merges
/// of the pieces' chaining values, exactly as if the whole input had been hashed at once.
///
/// The pieces must cover bytes `0..total` with no gap and no overlap, each a subtree of BLAKE3's
/// tree: each starts at a multiple of [`CHUNK_LEN`]; a piece that another follows is a power of
/// two of whole chunks starting at a multiple of its length; the last may be any length up to
/// [`max_subtree_len`] of its offset. A lone piece is the whole input, whose chaining value is
/// not the root, so a cover has at least two pieces. Anything else is
/// [`Error::InvalidPiece`] naming the piece at fault; an empty slice is
/// [`Error::InvalidInput`]. What cannot be checked: that each chaining value is really that of its
/// piece, in `mode`.
///
/// ```
/// use b3accel::hazmat::{merge_pieces_root_xof, Mode, Piece};
/// use b3accel::Error;
/// let pieces = [Piece { offset: 0, len: 2048, cv: [1; 32] }, Piece { offset: 3072, len: 10, cv: [2; 32] }];
/// match merge_pieces_root_xof(&pieces, Mode::Hash) {
///     Err(Error::InvalidPiece { index: 1, reason, .. }) => assert!(reason.contains("gap")),
///     _ => unreachable!("bytes 2048..3072 are in no piece"),
/// }
/// ```
pub fn merge_pieces_root_xof(pieces: &[Piece], mode: Mode) -> Result<OutputReader> {
    let order = check_cover(pieces)?;
    let domain = mode.domain();
    let (&last, rest) = order.split_last().expect("a cover has at least two pieces");
    let mut stack = CvStack::new();
    for &i in rest {
        stack.push(pieces[i].cv, pieces[i].len / CHUNK_LEN as u64, domain);
    }
    Ok(OutputReader::new(stack.finalize_cv(&pieces[last].cv, domain)))
}

/// Checks that `pieces` cover an input as [`merge_pieces_root_xof`] requires, and returns their
/// indices in order of their offsets.
fn check_cover(pieces: &[Piece]) -> Result<Vec<usize>> {
    if pieces.is_empty() {
        return Err(Error::InvalidInput("no pieces: an input is covered by at least two".into()));
    }
    let mut order: Vec<usize> = (0..pieces.len()).collect();
    order.sort_by_key(|&i| (pieces[i].offset, i));
    let mut end = 0u64;
    let mut previous: Option<usize> = None;
    for (k, &index) in order.iter().enumerate() {
        let Piece { offset, len, .. } = pieces[index];
        let last = k + 1 == order.len();
        let fail = |other: Option<usize>, reason: String| Err(Error::InvalidPiece { index, other, reason });
        if !offset.is_multiple_of(CHUNK_LEN as u64) {
            return fail(None, format!("offset {offset} is not a multiple of the chunk length ({CHUNK_LEN})"));
        }
        if len == 0 {
            return fail(None, format!("an empty piece at offset {offset}: pieces are never empty"));
        }
        let Some(piece_end) = offset.checked_add(len) else {
            return fail(None, format!("{len} bytes at offset {offset} run past the longest input, 2^64 - 1 bytes"));
        };
        if offset > end {
            let reason = match previous {
                Some(_) => format!("a gap: bytes {end}..{offset} are in no piece (the piece before ends at {end})"),
                None => format!("a gap: bytes 0..{offset} are in no piece (no piece starts at offset 0)"),
            };
            return fail(previous, reason);
        }
        if offset < end {
            return fail(
                previous,
                format!(
                    "an overlap: bytes {offset}..{} are also in the piece before (which ends at {end})",
                    end.min(piece_end)
                ),
            );
        }
        let complete_here = is_complete(len) && (offset / CHUNK_LEN as u64).is_multiple_of(len / CHUNK_LEN as u64);
        if !last && !complete_here {
            return fail(
                None,
                format!(
                    "{len} bytes at offset {offset} are not a complete subtree: a piece that another follows is a \
                     power of two of whole chunks starting at a multiple of its length"
                ),
            );
        }
        if last && offset == 0 {
            return fail(
                None,
                format!(
                    "the only piece is the whole input ({len} bytes): its chaining value is not the root; hash the \
                     input whole instead"
                ),
            );
        }
        if last {
            if let Err(Error::InvalidInput(reason)) = check_fits(offset, len) {
                return fail(None, reason);
            }
        }
        end = piece_end;
        previous = Some(index);
    }
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_and_left_lengths_match_upstream() {
        for chunk in [1u64, 2, 3, 4, 6, 8, 12, 1 << 20, (1 << 40) + (1 << 13), 1 << 53] {
            let offset = chunk * CHUNK_LEN as u64;
            assert_eq!(max_subtree_len(offset), blake3::hazmat::max_subtree_len(offset), "offset {offset}");
        }
        for len in [1025u64, 2047, 2048, 2049, 3 << 20, (1 << 40) + 1, u64::MAX / 2] {
            assert_eq!(left_subtree_len(len), blake3::hazmat::left_subtree_len(len), "len {len}");
        }
        assert_eq!(left_subtree_len(u64::MAX), 1 << 63);
    }

    #[test]
    fn covers_are_checked_piece_by_piece() {
        let p = |offset, len| Piece { offset, len, cv: [0; 32] };
        let blame = |pieces: &[Piece]| match check_cover(pieces) {
            Err(Error::InvalidPiece { index, other, .. }) => (index, other),
            other => panic!("{pieces:?}: {other:?}"),
        };
        assert_eq!(check_cover(&[p(1024, 5), p(0, 1024)]).unwrap(), vec![1, 0]);
        assert_eq!(blame(&[p(0, 1024), p(2048, 1)]), (1, Some(0))); // gap
        assert_eq!(blame(&[p(1024, 1024), p(2048, 1)]), (0, None)); // nothing at 0
        assert_eq!(blame(&[p(0, 2048), p(1024, 1024)]), (1, Some(0))); // overlap
        assert_eq!(blame(&[p(0, 1024), p(0, 1024)]), (1, Some(0))); // the same piece twice
        assert_eq!(blame(&[p(0, 1024), p(1024, 2048)]), (1, None)); // too long at chunk 1
        assert_eq!(blame(&[p(0, 3072), p(3072, 1)]), (0, None)); // 3 chunks are not a subtree
        assert_eq!(blame(&[p(0, 1000), p(1000, 1)]), (0, None)); // a partial chunk, then more
        assert_eq!(blame(&[p(0, 1024), p(1024, 0)]), (1, None)); // empty
        assert_eq!(blame(&[p(0, 1024), p(1500, 1)]), (1, None)); // misaligned
        assert_eq!(blame(&[p(0, 5000)]), (0, None)); // the whole input
        assert!(matches!(check_cover(&[]), Err(Error::InvalidInput(_))));
    }
}
