//! [`Resident`]: the one shape of both GPU backends' calls on data that lies on their device, each
//! returning its value with where its time went.

use crate::core::compress::Cv;
use crate::tree::bao_shape::Order;
use crate::tree::{ChainingValue, Mode, OutputReader, Result, Timed, TreeMode};
use blake3::Hash;
use std::ops::Range;

/// Where [`Resident::merkle_root`] puts a tree's inner nodes: every node above the leaves, level
/// by level from the leaves up, in the layout of [`merkle::level_sizes`](crate::merkle::level_sizes).
///
/// ```
/// let mut inner = vec![[0u8; 32]; 3];
/// // `B` is the backend's buffer type; `()` where no device buffer is named.
/// let host: b3accel::MerkleInner<'_, ()> = b3accel::MerkleInner::Host(&mut inner);
/// assert!(matches!(host, b3accel::MerkleInner::Host(nodes) if nodes.len() == 3));
/// ```
#[derive(Debug)]
pub enum MerkleInner<'a, B> {
    /// Nowhere: only the root is wanted, and no level leaves the device.
    None,
    /// Into host memory: exactly `count - 1` nodes.
    Host(&'a mut [Cv]),
    /// Into a device buffer of the same device, from byte 0: it must hold at least
    /// `(count - 1) * 32` bytes. The tree stays on the device.
    Device(&'a B),
}

/// Where [`Resident::bao_outboard`] puts an outboard's parent nodes (64 bytes each, without
/// size header or trailer, as [`Outboard::parents`](crate::bao::Outboard::parents) has them).
///
/// ```
/// let mut parents = vec![0u8; 3 * 64];
/// // `B` is the backend's buffer type; `()` where no device buffer is named.
/// let host: b3accel::OutboardDest<'_, ()> = b3accel::OutboardDest::Host(&mut parents);
/// assert!(matches!(host, b3accel::OutboardDest::Host(p) if p.len() == 192));
/// ```
#[derive(Debug)]
pub enum OutboardDest<'a, B> {
    /// Into host memory: exactly `(groups - 1) * 64` bytes.
    Host(&'a mut [u8]),
    /// Into a device buffer of the same device, from byte 0: it must hold at least
    /// `(groups - 1) * 64` bytes. The outboard stays on the device.
    Device(&'a B),
}

/// A GPU backend's entry points for data on its device: `OpenClBackend` (on `ocl::Buffer<u8>`)
/// and `wgpu::ResidentHasher` (on `wgpu::Buffer`), behind their cargo features. The bulk work
/// runs where the data lies; only the few chaining values, the last chunk (at most 1024 bytes),
/// a root or the hashes asked for come back.
///
/// Every call returns a [`Timed`] value: `total` is the call's wall time; `upload`, `kernel` and
/// `download` are the device's own times (OpenCL's profiling events, wgpu's timestamp queries,
/// zero where the device has none), and `detail` the backend's finer breakdown of the wall time
/// where it has one. Ranges and offsets are in bytes of the buffer; each backend documents the
/// alignment it needs (OpenCL: hashed ranges start on a chunk, other offsets on the device's
/// base address alignment; wgpu: the device's storage offset alignment). A range outside the
/// buffer, a misaligned offset or a buffer of another device is an
/// [`Error::InvalidInput`](crate::Error::InvalidInput).
///
/// ```no_run
/// use b3accel::{Mode, Resident};
/// // The same code for either backend.
/// fn report<R: Resident>(gpu: &R, data: &[u8]) -> b3accel::Result<()> {
///     let buf = gpu.upload(data)?;
///     let t = gpu.hash(&buf.value, 0..data.len() as u64, &Mode::Hash)?;
///     assert_eq!(t.value, blake3::hash(data));
///     println!("upload {:?}; kernels {:?} of {:?}", buf.upload, t.kernel, t.total);
///     Ok(())
/// }
/// # #[cfg(feature = "wgpu")]
/// report(b3accel::wgpu::WgpuBackend::open(0)?.resident(), &vec![7u8; 1 << 20])?;
/// # Ok::<(), b3accel::Error>(())
/// ```
pub trait Resident {
    /// The device buffer type the calls read.
    type Buffer;

    /// Copies `data` into a new device buffer that every call here accepts (padded with zeros
    /// where the backend needs whole words or a nonzero size), and waits until it is there:
    /// `upload` is the copy as the device times it, else the wall time.
    ///
    /// ```no_run
    /// use b3accel::Resident;
    /// # let gpu: b3accel::wgpu::ResidentHasher = unimplemented!();
    /// let t = gpu.upload(&vec![1u8; 1 << 30])?;
    /// println!("{:.1} GB/s to the device", (1u64 << 30) as f64 / t.total.as_secs_f64() / 1e9);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    fn upload(&self, data: &[u8]) -> Result<Timed<Self::Buffer>>;

    /// Hashes host memory as [`hash_on`](crate::hash_on) does (segments streamed through the
    /// device, each upload overlapping the hashing before it), and says where the time went:
    /// uploads, kernels and downloads each summed over segments, so with the overlap `total` can
    /// be less than their sum.
    ///
    /// ```no_run
    /// use b3accel::{Mode, Resident};
    /// # let gpu: b3accel::wgpu::ResidentHasher = unimplemented!();
    /// let data = vec![9u8; 256 << 20];
    /// let t = gpu.hash_from_host(&data, &Mode::Hash)?;
    /// assert_eq!(t.value, blake3::hash(&data));
    /// println!("upload {:?} kernel {:?} download {:?} total {:?}", t.upload, t.kernel, t.download, t.total);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    fn hash_from_host(&self, data: &[u8], mode: &Mode) -> Result<Timed<Hash>>;

    /// The hash, in `mode`, of the bytes of `buffer` in `range`.
    ///
    /// Buffer writes must be complete or ordered before the call (see the backend).
    ///
    /// ```no_run
    /// use b3accel::{Mode, Resident};
    /// # let (gpu, buf): (b3accel::wgpu::ResidentHasher, wgpu::Buffer) = unimplemented!();
    /// let mac = gpu.hash(&buf, 0..4096, &Mode::Keyed([7; 32]))?.value;
    /// println!("{mac}");
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    ///
    /// Provided: the first 32 bytes of [`xof_reader`](Self::xof_reader).
    fn hash(&self, buffer: &Self::Buffer, range: Range<u64>, mode: &Mode) -> Result<Timed<Hash>> {
        Ok(self.xof_reader(buffer, range, mode)?.map(|mut reader| {
            let mut hash = [0u8; 32];
            reader.fill(&mut hash);
            Hash::from_bytes(hash)
        }))
    }

    /// An extendable-output reader (any output length, any position) over the bytes of `buffer`
    /// in `range`, in `mode`.
    ///
    /// ```no_run
    /// use b3accel::{Mode, Resident};
    /// # let (gpu, buf): (b3accel::wgpu::ResidentHasher, wgpu::Buffer) = unimplemented!();
    /// let mut okm = [0u8; 64];
    /// gpu.xof_reader(&buf, 0..1000, &Mode::DeriveKey("app v1 keys".into()))?.value.fill(&mut okm);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    fn xof_reader(&self, buffer: &Self::Buffer, range: Range<u64>, mode: &Mode) -> Result<Timed<OutputReader>>;

    /// The chaining value of the bytes of `buffer` in `range`, as the subtree that starts at byte
    /// `input_offset` of a larger input (see [`hazmat`](crate::hazmat)): a piece to merge with
    /// [`merge_subtrees_non_root`](crate::hazmat::merge_subtrees_non_root) and friends or
    /// [`merge_pieces_root`](crate::hazmat::merge_pieces_root). `input_offset` and the range's
    /// length must form a subtree ([`check_subtree`](crate::hazmat::check_subtree)).
    ///
    /// ```no_run
    /// use b3accel::hazmat::{merge_pieces_root, Mode, Piece};
    /// use b3accel::Resident;
    /// # let (gpu, buf): (b3accel::wgpu::ResidentHasher, wgpu::Buffer) = unimplemented!();
    /// // A buffer of 3 MiB + 10 bytes, hashed as two pieces and merged.
    /// let (half, len) = (2u64 << 20, (3u64 << 20) + 10);
    /// let pieces = [
    ///     Piece { offset: 0, len: half, cv: gpu.subtree_cv(&buf, 0..half, 0, Mode::Hash)?.value },
    ///     Piece { offset: half, len: len - half, cv: gpu.subtree_cv(&buf, half..len, half, Mode::Hash)?.value },
    /// ];
    /// println!("{}", merge_pieces_root(&pieces, Mode::Hash)?);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    fn subtree_cv(
        &self,
        buffer: &Self::Buffer,
        range: Range<u64>,
        input_offset: u64,
        mode: TreeMode<'_>,
    ) -> Result<Timed<ChainingValue>>;

    /// The root of the binary Merkle tree (see [`merkle`](crate::merkle)) over `count` 32-byte
    /// leaves lying end to end in `leaves` from byte `offset`, several levels per dispatch; only
    /// the root comes back, and the inner nodes where `inner` asks for them. Zero leaves or an
    /// `inner` of the wrong size is an error.
    ///
    /// ```no_run
    /// use b3accel::{MerkleInner, Resident};
    /// # let gpu: b3accel::wgpu::ResidentHasher = unimplemented!();
    /// let leaves = vec![[5u8; 32]; 1000];
    /// let buf = gpu.upload(leaves.as_flattened())?.value;
    /// let mut inner = vec![[0u8; 32]; 999];
    /// let root = gpu.merkle_root(&buf, 0, 1000, MerkleInner::Host(&mut inner))?.value;
    /// assert_eq!(root, b3accel::merkle_root(b3accel::Device::Cpu, &leaves)?);
    /// assert_eq!(root.as_bytes(), &inner[998]); // the root is the last inner node
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    fn merkle_root(
        &self,
        leaves: &Self::Buffer,
        offset: u64,
        count: usize,
        inner: MerkleInner<'_, Self::Buffer>,
    ) -> Result<Timed<Hash>>;

    /// The parents of the bao outboard (see [`bao`](crate::bao)) of the bytes of `buffer` in
    /// `range`, in chunk groups of 2^`group_log` chunks and in `order`, into `out`, and the
    /// range's BLAKE3 hash: the bytes of [`Outboard::parents`](crate::bao::Outboard::parents)
    /// for the same content, computed where the content lies (the groups' chaining values, every
    /// parent above them, each written at its place), so that a device destination never
    /// leaves the device. One group (no parents) is a plain [`hash`](Self::hash). A destination
    /// of the wrong size or a group log above [`MAX_GROUP_LOG`](crate::bao::MAX_GROUP_LOG) is an
    /// error.
    ///
    /// ```no_run
    /// use b3accel::bao::{outboard_on, Order};
    /// use b3accel::{Device, OutboardDest, Resident};
    /// # let gpu: b3accel::wgpu::ResidentHasher = unimplemented!();
    /// let data = vec![4u8; 1 << 20];
    /// let buf = gpu.upload(&data)?.value;
    /// let mut parents = vec![0u8; 63 * 64]; // 64 groups of 16 KiB
    /// let hash = gpu.bao_outboard(&buf, 0..1 << 20, 4, Order::Pre, OutboardDest::Host(&mut parents))?.value;
    /// let (want, want_hash) = outboard_on(Device::Cpu, &data, 4, Order::Pre)?;
    /// assert_eq!((&parents[..], hash), (want.parents(), want_hash));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn bao_outboard(
        &self,
        buffer: &Self::Buffer,
        range: Range<u64>,
        group_log: u8,
        order: Order,
        out: OutboardDest<'_, Self::Buffer>,
    ) -> Result<Timed<Hash>>;

    /// Hashes `count` independent messages of `msg_len` bytes each (0 allowed) lying end to end in
    /// `data` from byte `offset`, in `mode`: element i is the hash of message i.
    ///
    /// ```no_run
    /// use b3accel::{Mode, Resident};
    /// # let (gpu, buf): (b3accel::wgpu::ResidentHasher, wgpu::Buffer) = unimplemented!();
    /// // 1000 records of 100 bytes each.
    /// let t = gpu.hash_many(&buf, 0, 1000, 100, &Mode::Hash)?;
    /// println!("{} hashes, {:?} in the kernels", t.value.len(), t.kernel);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    fn hash_many(
        &self,
        data: &Self::Buffer,
        offset: u64,
        count: usize,
        msg_len: usize,
        mode: &Mode,
    ) -> Result<Timed<Vec<Hash>>>;

    /// [`hash_many`](Self::hash_many) into the device buffer `out`: message i's hash at bytes
    /// `out_offset + 32 * i..out_offset + 32 * i + 32`. Nothing passes through host memory; the
    /// call returns once the hashes are written. A backend may refuse messages longer than one
    /// chunk here (wgpu does: its `hash_many` takes them).
    ///
    /// ```no_run
    /// use b3accel::{Mode, Resident};
    /// # let (gpu, data, out): (b3accel::wgpu::ResidentHasher, wgpu::Buffer, wgpu::Buffer) = unimplemented!();
    /// // 2^20 records of 64 bytes each, hashed into `out` on the device.
    /// let t = gpu.hash_many_into(&data, 0, 1 << 20, 64, &Mode::Hash, &out, 0)?;
    /// println!("{:.1} G hashes/s", (1u64 << 20) as f64 / t.total.as_secs_f64() / 1e9);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    fn hash_many_into(
        &self,
        data: &Self::Buffer,
        offset: u64,
        count: usize,
        msg_len: usize,
        mode: &Mode,
        out: &Self::Buffer,
        out_offset: u64,
    ) -> Result<Timed<()>>;
}

/// Checks that `range` is a forward range and returns its length.
pub(crate) fn range_len(range: &Range<u64>) -> Result<u64> {
    range.end.checked_sub(range.start).ok_or_else(|| {
        crate::tree::Error::InvalidInput(format!("the range {}..{} runs backwards", range.start, range.end))
    })
}
