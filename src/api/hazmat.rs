//! BLAKE3's tree as a tool, on every device: the chaining values of chunks and subtrees at any
//! offset of an input, and their merges into parents and the root. It mirrors upstream
//! [`blake3::hazmat`](https://docs.rs/blake3/latest/blake3/hazmat/) in names and meaning, so
//! code written for it ports by changing the imports, with two differences:
//!
//! - **Errors, not panics.** Where upstream panics on misuse (an offset that is not a chunk
//!   boundary, an offset set after input, a subtree longer than [`max_subtree_len`] allows,
//!   `finalize` at a nonzero offset, an empty subtree), b3accel returns an
//!   [`Error`](crate::Error); the methods that can fail return a [`Result`](crate::Result).
//!   b3accel also refuses [`finalize_non_root`](HasherExt::finalize_non_root) at offset 0 of a
//!   length that is not a power of two of whole chunks: such a subtree can only be the whole
//!   input, whose top node is the root. [`max_subtree_len`] and [`left_subtree_len`] keep
//!   upstream's signatures and answer `Some(0)` and `0` where upstream panics.
//! - **Devices.** The subtree's bulk work runs on the hasher's device, as
//!   [`Hasher::update`](crate::Hasher::update) does; data that already lies on a GPU has
//!   device-resident forms (`OpenClBackend::subtree_cv`, `ResidentHasher::subtree_cv`, behind
//!   their cargo features).
//!
//! Beyond upstream, [`merge_pieces_root`] and [`merge_pieces_root_xof`] merge a whole cover of an
//! input (pieces in any order, each checked to be a subtree where it lies) into its root: the
//! merge step of hashing one input on many machines, which `b3accel merge` runs.
//!
//! **Warning** (as upstream's): this is hazardous material. The merge functions cannot tell
//! whether their chaining values come from the subtrees they should; a wrong split gives garbage
//! that never matches a BLAKE3 hash. Compare your results with [`hash_on`](crate::hash_on) (or
//! `b3sum`) on test inputs.
//!
//! # The rule for splitting an input
//!
//! A piece that starts at byte `offset` (a multiple of 1024) may be at most
//! [`max_subtree_len`]`(offset)` long: the largest power of two of kibibytes that divides the
//! offset. Fixed-size pieces of a power of two of KiB (say 64 MiB each, the last one shorter)
//! always satisfy it, and so does splitting recursively at [`left_subtree_len`].
//!
//! ```
//! use b3accel::hazmat::{merge_subtrees_non_root, merge_subtrees_root, HasherExt, Mode};
//! use b3accel::{Device, Hasher, CHUNK_LEN};
//!
//! let chunk0 = [b'a'; CHUNK_LEN];
//! let chunk1 = [b'b'; CHUNK_LEN];
//! let chunk2 = [b'c'; 42]; // the last chunk may be short
//! let cv = |offset: u64, bytes: &[u8]| -> b3accel::Result<[u8; 32]> {
//!     let mut h = Hasher::new_on(Device::Cpu)?;
//!     h.set_input_offset(offset)?.update(bytes)?;
//!     h.finalize_non_root()
//! };
//! let parent = merge_subtrees_non_root(&cv(0, &chunk0)?, &cv(1024, &chunk1)?, Mode::Hash);
//! let root = merge_subtrees_root(&parent, &cv(2048, &chunk2)?, Mode::Hash);
//! assert_eq!(root, blake3::hash(&[&chunk0[..], &chunk1, &chunk2].concat()));
//! # Ok::<(), b3accel::Error>(())
//! ```

use crate::api::hasher::Hasher;
use crate::dispatch::{auto_backend, backend};
use crate::tree::{Device, Domain, Result};

pub use crate::tree::{
    check_subtree, hash_derive_key_context, left_subtree_len, max_subtree_len, merge_pieces_root,
    merge_pieces_root_xof, merge_subtrees_non_root, merge_subtrees_root, merge_subtrees_root_xof, ChainingValue,
    ContextKey, Piece, TreeMode as Mode,
};

/// The hazmat methods of [`Hasher`]: upstream's `HasherExt`, with errors for misuse and devices.
///
/// ```
/// use b3accel::hazmat::{left_subtree_len, merge_subtrees_root, HasherExt, Mode};
/// use b3accel::{Device, Hasher};
/// let data = vec![7u8; 100_000];
/// let split = left_subtree_len(data.len() as u64);
/// let left = Hasher::new_on(Device::Cpu)?.update(&data[..split as usize])?.finalize_non_root()?;
/// let mut right = Hasher::new_on(Device::Cpu)?;
/// right.set_input_offset(split)?.update(&data[split as usize..])?;
/// let root = merge_subtrees_root(&left, &right.finalize_non_root()?, Mode::Hash);
/// assert_eq!(root, blake3::hash(&data));
/// # Ok::<(), b3accel::Error>(())
/// ```
pub trait HasherExt: Sized {
    /// A derive-key hasher on `Device::Auto` from a [`ContextKey`] (the hashed context string,
    /// from [`hash_derive_key_context`], its only valid source): `new_derive_key` without hashing
    /// the context again.
    ///
    /// ```
    /// use b3accel::hazmat::{hash_derive_key_context, HasherExt};
    /// let ctx = hash_derive_key_context("example 2026 keys");
    /// let mut h = b3accel::Hasher::new_from_context_key(&ctx);
    /// h.update(b"bar")?;
    /// assert_eq!(*h.finalize()?.as_bytes(), blake3::derive_key("example 2026 keys", b"bar"));
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    fn new_from_context_key(context_key: &ContextKey) -> Self;

    /// [`new_from_context_key`](Self::new_from_context_key) on `device`.
    ///
    /// ```
    /// use b3accel::hazmat::{hash_derive_key_context, HasherExt};
    /// let ctx = hash_derive_key_context("example 2026 keys");
    /// let h = b3accel::Hasher::new_from_context_key_on(b3accel::Device::Cpu, &ctx)?;
    /// assert_eq!(h.device(), b3accel::Device::Cpu);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    fn new_from_context_key_on(device: Device, context_key: &ContextKey) -> Result<Self>;

    /// Makes the hasher hash the chunk or subtree that starts at byte `offset` of the whole
    /// input (a multiple of [`CHUNK_LEN`](crate::CHUNK_LEN)), before any input. The offset
    /// bounds the subtree's length ([`max_subtree_len`]): [`update`](Hasher::update) refuses
    /// input beyond it. Finalize such a hasher with
    /// [`finalize_non_root`](Self::finalize_non_root): `finalize` and `finalize_xof` are errors
    /// at a nonzero offset.
    ///
    /// An offset that is not a chunk boundary, or one set after input, is an error (upstream
    /// panics).
    ///
    /// ```
    /// use b3accel::hazmat::HasherExt;
    /// let mut h = b3accel::Hasher::new();
    /// h.set_input_offset(4096)?.update(&[1; 4096])?;
    /// assert!(h.update(b"one byte too many").is_err());
    /// assert!(b3accel::Hasher::new().set_input_offset(100).is_err());
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    fn set_input_offset(&mut self, offset: u64) -> Result<&mut Self>;

    /// The input offset set by [`set_input_offset`](Self::set_input_offset) (0 by default).
    ///
    /// ```
    /// use b3accel::hazmat::HasherExt;
    /// let mut h = b3accel::Hasher::new();
    /// assert_eq!(h.set_input_offset(8192)?.input_offset(), 8192);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    fn input_offset(&self) -> u64;

    /// The chaining value (the non-root hash) of the chunk or subtree hashed so far, to merge with
    /// [`merge_subtrees_non_root`] and finally [`merge_subtrees_root`] or
    /// [`merge_subtrees_root_xof`] (or [`merge_pieces_root`]). More input may follow.
    ///
    /// An empty subtree is an error, and so is a subtree at offset 0 whose length is not a power
    /// of two of whole chunks: that can only be the whole input, whose top node is the root (see
    /// [`check_subtree`]).
    ///
    /// ```
    /// use b3accel::hazmat::{merge_subtrees_root, HasherExt, Mode};
    /// let mut left = b3accel::Hasher::new();
    /// left.update(&[1; 1024])?;
    /// let mut right = b3accel::Hasher::new();
    /// right.set_input_offset(1024)?.update(b"tail")?;
    /// let root = merge_subtrees_root(&left.finalize_non_root()?, &right.finalize_non_root()?, Mode::Hash);
    /// assert_eq!(root, blake3::hash(&[&[1; 1024][..], b"tail"].concat()));
    /// assert!(b3accel::Hasher::new().update(b"alone")?.finalize_non_root().is_err());
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    fn finalize_non_root(&self) -> Result<ChainingValue>;
}

impl HasherExt for Hasher {
    fn new_from_context_key(context_key: &ContextKey) -> Hasher {
        Hasher::on_backend(auto_backend(), Domain::from_context_key(context_key))
    }

    fn new_from_context_key_on(device: Device, context_key: &ContextKey) -> Result<Hasher> {
        Ok(Hasher::on_backend(backend(device)?, Domain::from_context_key(context_key)))
    }

    fn set_input_offset(&mut self, offset: u64) -> Result<&mut Hasher> {
        self.set_offset(offset)?;
        Ok(self)
    }

    fn input_offset(&self) -> u64 {
        self.offset()
    }

    fn finalize_non_root(&self) -> Result<ChainingValue> {
        self.non_root()
    }
}
