//! The `Backend` trait: the seam between BLAKE3's tree (once, on the CPU) and the devices (bulk work).
//!
//! A backend hashes runs of full chunks into the chaining values of complete subtrees, and batches
//! of one-block messages. Everything else (the partial last chunk, merging the few subtree CVs, the
//! ROOT flag, XOF output) is the tree module's job, the same for every backend; a backend may be
//! asked to compress the top node of a run of full chunks itself, with the flags the tree module
//! gives.

use super::bulk::{subtree_count, MAX_SUBTREE};
use super::device::{DeviceInfo, FeaturePath};
use super::error::{Error, Result};
use super::merkle;
use crate::core::compress::Cv;
use crate::core::constants::CHUNK_LEN;
use std::time::Duration;

/// A GPU call's result, `value`, and where the call's time went, as every call of the GPU
/// backends' [`Resident`](crate::Resident) returns it. With pipelining, upload and kernel time
/// overlap, so `total` (the wall time of the whole call) can be less than the sum of the parts.
///
/// ```
/// use std::time::Duration;
/// let t = b3accel::Timed { value: 7u32, kernel: Duration::from_millis(2), ..Default::default() };
/// assert_eq!(t.clone().map(|v| v * 2).value, 14);
/// assert_eq!(t.times().kernel, Duration::from_millis(2));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timed<T> {
    /// What the call computed.
    pub value: T,
    /// Host-to-device copies, summed over segments.
    pub upload: Duration,
    /// Kernel execution, summed over dispatches.
    pub kernel: Duration,
    /// Device-to-host copies (the few chaining values), summed.
    pub download: Duration,
    /// Wall time of the whole call, end to end.
    pub total: Duration,
    /// The backend's finer breakdown of the call, named parts in the order they happen (empty
    /// where it has none): OpenCL's host work before the first command, the enqueuing, the
    /// launch, the device's span and what follows it; wgpu's host phases (encode, submit, wait,
    /// read, finish) and the device's (before, in and after the passes). Parts may overlap.
    pub detail: Vec<(&'static str, Duration)>,
}

/// The times of a [`Timed`] call without its value: what the backends sum into while a call runs.
///
/// ```
/// let t = b3accel::Timings::default();
/// assert_eq!(t.total, std::time::Duration::ZERO);
/// ```
pub type Timings = Timed<()>;

impl<T> Timed<T> {
    /// The times alone.
    ///
    /// ```
    /// let t = b3accel::Timed { value: "root", ..Default::default() };
    /// assert_eq!(t.times(), b3accel::Timings::default());
    /// ```
    pub fn times(&self) -> Timings {
        let Timed { upload, kernel, download, total, .. } = *self;
        Timed { value: (), upload, kernel, download, total, detail: self.detail.clone() }
    }

    /// The value and the times apart.
    ///
    /// ```
    /// let (value, t) = b3accel::Timed { value: 5, ..Default::default() }.into_parts();
    /// assert_eq!((value, t.total), (5, std::time::Duration::ZERO));
    /// ```
    pub fn into_parts(self) -> (T, Timings) {
        let Timed { value, upload, kernel, download, total, detail } = self;
        (value, Timed { value: (), upload, kernel, download, total, detail })
    }

    /// The same times with `f` applied to the value.
    ///
    /// ```
    /// let t = b3accel::Timed { value: [1u8; 32], ..Default::default() };
    /// assert_eq!(t.map(blake3::Hash::from_bytes).value, blake3::Hash::from_bytes([1; 32]));
    /// ```
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Timed<U> {
        let Timed { value, upload, kernel, download, total, detail } = self;
        Timed { value: f(value), upload, kernel, download, total, detail }
    }

    /// The part of [`detail`](Self::detail) named `name`, if the backend reports it.
    ///
    /// ```
    /// use std::time::Duration;
    /// let t = b3accel::Timings { detail: vec![("wait", Duration::from_micros(5))], ..Default::default() };
    /// assert_eq!(t.part("wait"), Some(Duration::from_micros(5)));
    /// assert_eq!(t.part("encode"), None);
    /// ```
    pub fn part(&self, name: &str) -> Option<Duration> {
        self.detail.iter().find(|(n, _)| *n == name).map(|&(_, d)| d)
    }
}

/// Runs `f` with a fresh [`Timings`] to sum into, and returns its value with those times and
/// the wall time of the whole run as `total`.
#[cfg(feature = "wgpu")]
pub(crate) fn timed<T>(f: impl FnOnce(&mut Timings) -> Result<T>) -> Result<Timed<T>> {
    let start = std::time::Instant::now();
    let mut t = Timings::default();
    let value = f(&mut t)?;
    t.total = start.elapsed();
    Ok(t.with(value))
}

impl Timings {
    /// These times with `value`.
    ///
    /// ```
    /// let t = b3accel::Timings::default().with(3);
    /// assert_eq!(t.value, 3);
    /// ```
    pub fn with<T>(self, value: T) -> Timed<T> {
        self.map(|()| value)
    }
}

/// A device that does BLAKE3's bulk work.
///
/// Implemented by the CPU backend and, behind their cargo features, the OpenCL and wgpu backends.
/// Most programs never touch it: [`hash_on`](crate::hash_on) and [`Hasher`](crate::Hasher) drive it.
///
/// ```
/// use b3accel::{backend, Device, CHUNK_LEN, IV};
/// // Four full chunks at chunk index 0 form one complete subtree: one chaining value.
/// let data = vec![7u8; 4 * CHUNK_LEN];
/// let mut cvs = [[0u8; 32]; 1];
/// backend(Device::Cpu).unwrap().chunk_subtrees(&data, 0, &IV, 0, &mut cvs).unwrap();
/// ```
pub trait Backend: Send + Sync {
    /// The device this backend runs on.
    ///
    /// ```
    /// let b = b3accel::backend(b3accel::Device::Cpu).unwrap();
    /// println!("{}", b.info().name);
    /// ```
    fn info(&self) -> &DeviceInfo;

    /// How many bytes an incremental [`Hasher`](crate::Hasher) gathers before it hands them over:
    /// a power of two, at least one chunk. Larger batches amortise a GPU's dispatch and transfer
    /// costs; the hasher's memory is bounded by this figure.
    ///
    /// ```
    /// let b = b3accel::backend(b3accel::Device::Cpu).unwrap();
    /// assert!(b.batch_len().is_power_of_two() && b.batch_len() >= b3accel::CHUNK_LEN);
    /// ```
    fn batch_len(&self) -> usize {
        64 * 1024
    }

    /// Which way this device goes where an optional feature of its driver decides (timestamp
    /// queries, subgroups, ...): one entry per feature the backend looks at, in the order
    /// `b3accel devices -v` prints them. Empty for a backend that looks at none (the CPU's).
    ///
    /// ```
    /// let cpu = b3accel::backend(b3accel::Device::Cpu).unwrap();
    /// assert!(cpu.feature_paths().is_empty());
    /// for p in b3accel::backend(b3accel::Device::Auto).unwrap().feature_paths() {
    ///     println!("{p}");
    /// }
    /// ```
    fn feature_paths(&self) -> Vec<FeaturePath> {
        Vec::new()
    }

    /// Hashes `input`, a whole number `n >= 1` of full 1024-byte chunks whose first chunk has
    /// index `first_chunk`, into the chaining values of the complete subtrees those chunks form in
    /// BLAKE3's left-heavy tree: one per set bit of `n`, largest subtree first. `out` has exactly
    /// `n.count_ones()` entries.
    ///
    /// `first_chunk` must be a multiple of `n.next_power_of_two()`, so that each of those
    /// subtrees is complete. `key` is the key words (the IV, or the key, or the derived context
    /// key) and `flags` the mode flags (`0`, `KEYED_HASH`, `DERIVE_KEY_MATERIAL`); none of the
    /// returned CVs is a root.
    ///
    /// ```
    /// use b3accel::{backend, Device, CHUNK_LEN, IV};
    /// // 6 chunks = a 4-chunk subtree and a 2-chunk subtree.
    /// let data = vec![1u8; 6 * CHUNK_LEN];
    /// let mut cvs = [[0u8; 32]; 2];
    /// backend(Device::Cpu).unwrap().chunk_subtrees(&data, 0, &IV, 0, &mut cvs).unwrap();
    /// assert_ne!(cvs[0], cvs[1]);
    /// ```
    ///
    /// Provided: [`chunk_subtrees_capped`](Self::chunk_subtrees_capped) with no cap.
    fn chunk_subtrees(&self, input: &[u8], first_chunk: u64, key: &[u32; 8], flags: u32, out: &mut [Cv]) -> Result<()> {
        self.chunk_subtrees_capped(input, first_chunk, MAX_SUBTREE, key, flags, out)
    }

    /// Like [`chunk_subtrees`](Self::chunk_subtrees), but no subtree is larger than
    /// `max_chunks` (a power of two): `out` gets `n / max_chunks` CVs of `max_chunks`-chunk
    /// subtrees, then one per set bit of `n % max_chunks` ([`subtree_count`] of them). The tree
    /// module asks for this where it needs the children of what would otherwise be the root (an
    /// input of exactly a power of two chunks), and `first_chunk` must be a multiple of
    /// `max_chunks` or of `n.next_power_of_two()`, whichever is smaller. `max_chunks` is
    /// `1 << 63` for no cap.
    ///
    /// The one bulk method every backend implements.
    ///
    /// ```
    /// use b3accel::{backend, Device, CHUNK_LEN, IV};
    /// // 4 chunks, no subtree larger than 2: two 2-chunk subtrees.
    /// let data = vec![5u8; 4 * CHUNK_LEN];
    /// let mut cvs = [[0u8; 32]; 2];
    /// backend(Device::Cpu).unwrap().chunk_subtrees_capped(&data, 0, 2, &IV, 0, &mut cvs).unwrap();
    /// ```
    fn chunk_subtrees_capped(
        &self,
        input: &[u8],
        first_chunk: u64,
        max_chunks: u64,
        key: &[u32; 8],
        flags: u32,
        out: &mut [Cv],
    ) -> Result<()>;

    /// The top node of a run of `n >= 2` full chunks that is one node of the tree, compressed:
    /// `input` starts at chunk `first_chunk`, a multiple of the power of two at or above `n`
    /// (the run fits in the largest subtree that can start there). For `n = 2^k` that node is
    /// the parent of the two halves, each hashed as
    /// [`chunk_subtrees_capped`](Self::chunk_subtrees_capped) would; for another `n` it is the
    /// run's subtrees (as [`chunk_subtrees`](Self::chunk_subtrees) returns them, largest first)
    /// merged from the right, as at the right edge of an input. The top parent is compressed
    /// with `flags | PARENT | top_flags`, those below it with `flags | PARENT`. The tree module
    /// asks for this with `ROOT` in `top_flags` for a whole input of full chunks, whose root hash
    /// it is; with `0` it is the node's CV.
    ///
    /// The default asks `chunk_subtrees_capped` for the halves or subtrees and compresses the
    /// parents above them here; a backend overrides it where it can take the levels up to the
    /// top at once (the CPU backend does, for up to 16 chunks without writing a level to memory,
    /// and for runs of one or two complete subtrees with the last levels in registers).
    ///
    /// ```
    /// use b3accel::{backend, flags::ROOT, Device, CHUNK_LEN, IV};
    /// let cpu = backend(Device::Cpu).unwrap();
    /// let data = vec![9u8; 4 * CHUNK_LEN];
    /// assert_eq!(cpu.subtree_top(&data, 0, &IV, 0, ROOT).unwrap(), *blake3::hash(&data).as_bytes());
    /// let data = vec![9u8; 24 * CHUNK_LEN]; // 16 + 8 chunks
    /// assert_eq!(cpu.subtree_top(&data, 0, &IV, 0, ROOT).unwrap(), *blake3::hash(&data).as_bytes());
    /// ```
    fn subtree_top(&self, input: &[u8], first_chunk: u64, key: &[u32; 8], flags: u32, top_flags: u32) -> Result<Cv> {
        let n = check_subtree_top_args(input, first_chunk)?;
        super::stack::top_by_subtrees(self, input, first_chunk, n, key, flags, top_flags)
    }

    /// Hashes each 64-byte block as a complete one-block BLAKE3 message (`hash(block)`): the
    /// 2-to-1 compression of Merkle trees, and `hash_many` of 64-byte messages.
    ///
    /// ```
    /// let b = b3accel::backend(b3accel::Device::Cpu).unwrap();
    /// let blocks = [[3u8; 64]; 5];
    /// let mut out = [[0u8; 32]; 5];
    /// b.hash_blocks(&blocks, &mut out).unwrap();
    /// assert_eq!(out[4], *blake3::hash(&[3u8; 64]).as_bytes());
    /// ```
    fn hash_blocks(&self, blocks: &[[u8; 64]], out: &mut [[u8; 32]]) -> Result<()>;

    /// The root of the binary Merkle tree over `leaves` (at least one), each parent being
    /// `hash(left || right)` as in [`hash_blocks`](Backend::hash_blocks), an odd last node carried
    /// up unchanged. With `inner`, which then has exactly `leaves.len() - 1` entries, it also
    /// writes every inner node there, level by level from the leaves up, in the layout of
    /// [`merkle::level_sizes`](crate::merkle::level_sizes).
    ///
    /// The default reduces one level at a time through `hash_blocks`, with the carry rule of the
    /// `merkle` module (written once, there). A GPU backend overrides it to reduce several levels
    /// per dispatch and to copy inner levels back only when `inner` asks for them. Arguments are
    /// checked by `merkle::check_merkle_args`, which an override should call first.
    ///
    /// ```
    /// let b = b3accel::backend(b3accel::Device::Cpu).unwrap();
    /// let leaves = [[1u8; 32], [2u8; 32], [3u8; 32]];
    /// let mut inner = [[0u8; 32]; 2];
    /// let root = b.merkle(&leaves, Some(&mut inner)).unwrap();
    /// assert_eq!(root, inner[1]); // the root is the last inner node
    /// assert_eq!(root, b.merkle(&leaves, None).unwrap());
    /// ```
    fn merkle(&self, leaves: &[Cv], inner: Option<&mut [Cv]>) -> Result<Cv> {
        merkle::reduce_on(self, leaves, inner)
    }

    /// Hashes `out.len()` independent messages of `msg_len` bytes each (0 allowed), laid end to
    /// end in `data` (`msg_len * out.len()` bytes), into `out`: each message's BLAKE3 hash (the
    /// first 32 bytes of its output) in the mode given by `key` and `flags` as for
    /// [`chunk_subtrees`](Backend::chunk_subtrees).
    ///
    /// The default hashes one message at a time through the crate's tree code (its full chunks
    /// through this backend's `chunk_subtrees`). Backends override it to hash many messages side
    /// by side; messages of at most one chunk are the main case. Arguments are checked by
    /// `merkle::check_many_args`, which an override should call first.
    ///
    /// ```
    /// let b = b3accel::backend(b3accel::Device::Cpu).unwrap();
    /// let data = b"abcdef";
    /// let mut out = [[0u8; 32]; 3];
    /// b.hash_many(data, 2, &b3accel::IV, 0, &mut out).unwrap();
    /// assert_eq!(out[2], *blake3::hash(b"ef").as_bytes());
    /// ```
    fn hash_many(&self, data: &[u8], msg_len: usize, key: &[u32; 8], flags: u32, out: &mut [Cv]) -> Result<()> {
        merkle::hash_many_on(self, data, msg_len, key, flags, out)
    }
}

/// The tree's algorithms (`stack.rs`, `merkle.rs`) reach every backend through
/// [`Bulk`](super::bulk::Bulk): its methods are these.
impl<B: Backend + ?Sized> super::bulk::Bulk for B {
    fn chunk_subtrees_capped(
        &self,
        input: &[u8],
        first_chunk: u64,
        max_chunks: u64,
        key: &[u32; 8],
        flags: u32,
        out: &mut [Cv],
    ) -> Result<()> {
        Backend::chunk_subtrees_capped(self, input, first_chunk, max_chunks, key, flags, out)
    }

    fn subtree_top(&self, input: &[u8], first_chunk: u64, key: &[u32; 8], flags: u32, top_flags: u32) -> Result<Cv> {
        Backend::subtree_top(self, input, first_chunk, key, flags, top_flags)
    }

    fn hash_blocks(&self, blocks: &[[u8; 64]], out: &mut [[u8; 32]]) -> Result<()> {
        Backend::hash_blocks(self, blocks, out)
    }
}

/// Checks the arguments of [`Backend::chunk_subtrees`] and
/// [`Backend::chunk_subtrees_capped`] (with `max_chunks` [`MAX_SUBTREE`] for the former); every
/// backend calls it first, so a malformed call is an error in each of them alike. Returns the
/// number of chunks.
pub(crate) fn check_subtree_args(input: &[u8], first_chunk: u64, max_chunks: u64, out: &[Cv]) -> Result<u64> {
    if input.is_empty() || !input.len().is_multiple_of(CHUNK_LEN) {
        return Err(Error::InvalidInput(format!(
            "chunk_subtrees: input of {} bytes is not a positive whole number of chunks",
            input.len()
        )));
    }
    if !max_chunks.is_power_of_two() {
        return Err(Error::InvalidInput(format!("chunk_subtrees: a cap of {max_chunks} chunks is not a power of two")));
    }
    let n = (input.len() / CHUNK_LEN) as u64;
    let align = n.next_power_of_two().min(max_chunks);
    if !first_chunk.is_multiple_of(align) {
        return Err(Error::InvalidInput(format!(
            "chunk_subtrees: {n} chunks cannot start at chunk {first_chunk} (must be a multiple of {align})"
        )));
    }
    let count = subtree_count(n, max_chunks);
    if out.len() != count {
        return Err(Error::InvalidInput(format!(
            "chunk_subtrees: {n} chunks form {count} subtrees, but out has {} entries",
            out.len()
        )));
    }
    Ok(n)
}

/// Checks the arguments of [`Backend::subtree_top`]: at least two full chunks, starting at a
/// multiple of the power of two at or above their number. Returns the number of chunks.
pub(crate) fn check_subtree_top_args(input: &[u8], first_chunk: u64) -> Result<u64> {
    let n = (input.len() / CHUNK_LEN) as u64;
    if !input.len().is_multiple_of(CHUNK_LEN) || n < 2 {
        return Err(Error::InvalidInput(format!(
            "subtree_top: input of {} bytes is not two or more whole chunks",
            input.len()
        )));
    }
    let align = n.next_power_of_two();
    if !first_chunk.is_multiple_of(align) {
        return Err(Error::InvalidInput(format!(
            "subtree_top: {n} chunks cannot start at chunk {first_chunk} (must be a multiple of {align})"
        )));
    }
    Ok(n)
}

/// Checks the arguments of [`Backend::hash_blocks`].
pub(crate) fn check_blocks_args(blocks: &[[u8; 64]], out: &[[u8; 32]]) -> Result<()> {
    if blocks.len() != out.len() {
        return Err(Error::InvalidInput(format!("hash_blocks: {} blocks but {} outputs", blocks.len(), out.len())));
    }
    Ok(())
}
