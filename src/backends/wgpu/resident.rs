//! Device-resident inputs: hashing a `wgpu::Buffer` where it lies.

use super::device::Gpu;
use super::errors::scoped;
use super::options::WgpuOptions;
use super::pipelines::{Params, PARAMS_STRIDE, PIECES_BYTES};
use super::segment::{Scratch, MAX_PASSES, QUERIES_PER_SEG};
use super::wait::MapTicket;
use crate::backends::gpu::pieces::pieces_of;
use crate::core::constants::CHUNK_LEN;
use crate::tree::merge_segments;
use crate::tree::subtree;
use crate::tree::{
    check_subtree, chunk_output, hash_resident, last_chunk_len, timed, ChainingValue, Device, Domain, Error, Mode,
    Output, OutputReader, Result, Timed, Timings, MAX_SUBTREE,
};
use blake3::Hash;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Hashes `wgpu::Buffer`s that lie on a device: yours (created on your own `wgpu::Device` with
/// `BufferUsages::STORAGE`), or a [`WgpuBackend`](super::WgpuBackend)'s
/// ([`WgpuBackend::resident`](super::WgpuBackend::resident)).
///
/// All the bulk work runs on the device; what comes back to the host is one chaining value per
/// complete subtree (a few dozen bytes per segment of up to the device's largest storage binding)
/// and the input's last chunk (at most 1024 bytes), which the crate's tree module finishes on the
/// CPU. One call is one submission.
///
/// Your device's limits decide the segment size (the default limits allow 128 MiB segments; pass
/// the adapter's `limits()` when you create the device to get the most). wgpu errors inside a call
/// are caught with error scopes and returned as [`Error`]s; your device's own error handler and
/// lost-device callback are left alone.
///
/// ```no_run
/// use b3accel::{wgpu::ResidentHasher, Mode};
/// # let (device, queue): (wgpu::Device, wgpu::Queue) = unimplemented!();
/// let hasher = ResidentHasher::new(&device, &queue)?;
/// let buf = device.create_buffer(&wgpu::BufferDescriptor {
///     label: Some("data"), size: 1 << 20,
///     usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false,
/// });
/// queue.write_buffer(&buf, 0, &vec![9u8; 1 << 20]);
/// let hash = hasher.hash(&buf, 0, 1 << 20, &Mode::Hash)?;
/// assert_eq!(hash, blake3::hash(&vec![9u8; 1 << 20]));
/// # Ok::<(), b3accel::Error>(())
/// ```
#[derive(Clone)]
pub struct ResidentHasher {
    gpu: Arc<Gpu>,
}

/// Where the time of one [`ResidentHasher::hash_breakdown`] call went: the host's phases by the
/// wall clock, and the device's by its timestamp queries (zero without them).
///
/// `wait` holds the device's whole span (`before_passes + passes + after_passes`) plus what
/// neither clock sees: the time from the submission to the device's first command, and from
/// the device's last command until the host notices; [`latency`](Self::latency) is that part.
///
/// ```no_run
/// # let (hasher, buf): (b3accel::wgpu::ResidentHasher, wgpu::Buffer) = unimplemented!();
/// let (_, b) = hasher.hash_breakdown(&buf, 0, buf.size(), &b3accel::Mode::Hash)?;
/// println!("{:?} of {:?} in the passes, {:?} launch and wake-up", b.passes, b.total, b.latency());
/// # Ok::<(), b3accel::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResidentBreakdown {
    /// Host: argument checks, error scopes, buffers from the pool, parameters, bind groups and
    /// encoding, up to the submission.
    pub encode: Duration,
    /// Host: `Queue::submit` (and `map_async` on the readback buffer).
    pub submit: Duration,
    /// Host: from the submission until the readback buffer is mapped.
    pub wait: Duration,
    /// Host: reading the mapped CVs, last chunk and timestamps, and unmapping.
    pub read: Duration,
    /// Host: merging the subtree CVs and the last chunk into the output (the tree module), and
    /// closing the error scopes.
    pub finish: Duration,
    /// Wall time of the whole call.
    pub total: Duration,
    /// Device: from the submission's first timestamp to the start of the first hashing pass.
    pub before_passes: Duration,
    /// Device: the hashing passes, summed over segments.
    pub passes: Duration,
    /// Device: from the end of the last hashing pass to the submission's last timestamp (the
    /// copies into the readback buffer).
    pub after_passes: Duration,
}

impl ResidentBreakdown {
    /// The part of `wait` that the device's timestamps do not cover: submission to the first
    /// command, and the last command to the host's wake-up (zero without timestamps).
    ///
    /// ```
    /// let b = b3accel::wgpu::ResidentBreakdown::default();
    /// assert_eq!(b.latency(), std::time::Duration::ZERO);
    /// ```
    pub fn latency(&self) -> Duration {
        if self.passes.is_zero() {
            return Duration::ZERO;
        }
        self.wait.saturating_sub(self.before_passes + self.passes + self.after_passes)
    }
}

/// One line: the host's phases, the device's, and the latency neither clock sees (what
/// `benches/probes/wgpu_probe.rs` and `benches/probes/wgpu_report.rs` print).
///
/// ```
/// let b = b3accel::wgpu::ResidentBreakdown::default();
/// assert!(b.to_string().starts_with("host: encode"));
/// ```
impl std::fmt::Display for ResidentBreakdown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "host: encode {:.3?} submit {:.3?} wait {:.3?} read {:.3?} finish {:.3?} | device: before passes {:.3?} \
             passes {:.3?} after {:.3?} | launch+wake {:.3?}",
            self.encode,
            self.submit,
            self.wait,
            self.read,
            self.finish,
            self.before_passes,
            self.passes,
            self.after_passes,
            self.latency()
        )
    }
}

impl std::fmt::Debug for ResidentHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResidentHasher")
            .field("device", &self.gpu.id)
            .field("max_segment_bytes", &(self.gpu.max_segment_chunks * CHUNK_LEN as u64))
            .finish()
    }
}

impl ResidentHasher {
    /// Builds the BLAKE3 pipelines on your device and hashes 2 KiB of zeros there once: a
    /// device's first submission can be slow (docs/performance.md), and this pays
    /// it here rather than in your first call. The device needs compute shaders, 256 invocations
    /// and 8 KiB of memory per workgroup and three storage buffers per stage (the WebGPU
    /// defaults).
    ///
    /// ```no_run
    /// # let (device, queue): (wgpu::Device, wgpu::Queue) = unimplemented!();
    /// let hasher = b3accel::wgpu::ResidentHasher::new(&device, &queue)?;
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn new(device: &::wgpu::Device, queue: &::wgpu::Queue) -> Result<ResidentHasher> {
        // Name the device as `devices()` lists it where its adapter is one of ours.
        let info = device.adapter_info();
        let id = super::adapter::device_of(&info).unwrap_or(Device::Wgpu(usize::MAX));
        let gpu = Gpu::new(device.clone(), queue.clone(), id, &WgpuOptions::default(), None)?;
        let hasher = ResidentHasher { gpu: Arc::new(gpu) };
        hasher.warm_up()?;
        Ok(hasher)
    }

    pub(crate) fn from_gpu(gpu: Arc<Gpu>) -> ResidentHasher {
        ResidentHasher { gpu }
    }

    /// Hashes two chunks and a byte of zeros on the device, so that what a device's first
    /// submission costs is paid while it opens, not by the caller's first call.
    ///
    /// A device's first submission that runs a compute pass and maps a result can take tens of
    /// milliseconds whatever it runs (docs/performance.md).
    pub(super) fn warm_up(&self) -> Result<()> {
        let len = 2 * CHUNK_LEN as u64 + 1;
        // Never written: wgpu zero-fills it before its first use.
        let buf = self.gpu.storage_buffer("b3accel warm-up", len.next_multiple_of(4), ::wgpu::BufferUsages::empty());
        self.root(&buf, 0, len, 0, Mode::Hash.domain(), None).map(drop)
    }

    /// Largest segment, in bytes, that one storage binding of this device holds (a power of two).
    /// Longer inputs are hashed in several segments, still in one submission.
    ///
    /// ```no_run
    /// # let hasher: b3accel::wgpu::ResidentHasher = unimplemented!();
    /// assert!(hasher.max_segment_bytes().is_power_of_two());
    /// ```
    pub fn max_segment_bytes(&self) -> u64 {
        self.gpu.max_segment_chunks * CHUNK_LEN as u64
    }

    /// The hash, in `mode`, of the `len` bytes of `buffer` that start at byte `offset`.
    ///
    /// `buffer` needs `BufferUsages::STORAGE` and must belong to this hasher's device; `offset`
    /// must be a multiple of the device's `min_storage_buffer_offset_alignment` (256 at most),
    /// and the buffer must extend to `offset + len` rounded up to 4 bytes.
    ///
    /// ```no_run
    /// # let (hasher, buf): (b3accel::wgpu::ResidentHasher, wgpu::Buffer) = unimplemented!();
    /// let key = [7u8; 32];
    /// let mac = hasher.hash(&buf, 0, buf.size(), &b3accel::Mode::Keyed(key))?;
    /// println!("{mac}");
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn hash(&self, buffer: &::wgpu::Buffer, offset: u64, len: u64, mode: &Mode) -> Result<Hash> {
        Ok(Hash::from_bytes(self.root(buffer, offset, len, 0, mode.domain(), None)?.root_hash()))
    }

    /// [`hash`](Self::hash) with timestamp queries, and where each part of the call's time went
    /// (see [`ResidentBreakdown`]).
    ///
    /// ```no_run
    /// # let (hasher, buf): (b3accel::wgpu::ResidentHasher, wgpu::Buffer) = unimplemented!();
    /// let (hash, b) = hasher.hash_breakdown(&buf, 0, buf.size(), &b3accel::Mode::Hash)?;
    /// println!("{hash}: encode {:?} submit {:?} wait {:?}", b.encode, b.submit, b.wait);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn hash_breakdown(
        &self,
        buffer: &::wgpu::Buffer,
        offset: u64,
        len: u64,
        mode: &Mode,
    ) -> Result<(Hash, ResidentBreakdown)> {
        let start = Instant::now();
        let mut b = ResidentBreakdown::default();
        let out = self.root(buffer, offset, len, 0, mode.domain(), Some(&mut b))?;
        let hash = Hash::from_bytes(out.root_hash());
        b.total = start.elapsed();
        b.finish = b.total.saturating_sub(b.encode + b.submit + b.wait + b.read);
        Ok((hash, b))
    }

    /// [`hash`](Self::hash), and where the time went: `kernel` is the hashing passes as the
    /// device's timestamp queries measure them, `download` the device's time after the passes
    /// (copying the CVs and the last chunk out, by timestamps) plus the host's reading of them,
    /// `total` the wall time of the call; what `total` has beyond the others is the host's and
    /// the driver's (encoding, submission, waiting). `upload` is zero: the data is already
    /// there. Without timestamp queries `kernel` is zero and `download` the host's part only.
    ///
    /// ```no_run
    /// # let (hasher, buf): (b3accel::wgpu::ResidentHasher, wgpu::Buffer) = unimplemented!();
    /// let t = hasher.hash_timed(&buf, 0, buf.size(), &b3accel::Mode::Hash)?;
    /// println!("{}: {:.1} GB/s in the kernel", t.value, buf.size() as f64 / t.kernel.as_secs_f64() / 1e9);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn hash_timed(&self, buffer: &::wgpu::Buffer, offset: u64, len: u64, mode: &Mode) -> Result<Timed<Hash>> {
        let (value, b) = self.hash_breakdown(buffer, offset, len, mode)?;
        let download = b.after_passes + b.read;
        Ok(Timed { value, upload: Duration::ZERO, kernel: b.passes, download, total: b.total })
    }

    /// An extendable-output reader over the `len` bytes of `buffer` at `offset`, in `mode`
    /// (requirements as for [`hash`](Self::hash)).
    ///
    /// ```no_run
    /// # let (hasher, buf): (b3accel::wgpu::ResidentHasher, wgpu::Buffer) = unimplemented!();
    /// let mut okm = [0u8; 64];
    /// hasher
    ///     .xof_reader(&buf, 0, 1000, &b3accel::Mode::DeriveKey("app v1 keys".into()))?
    ///     .fill(&mut okm);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn xof_reader(&self, buffer: &::wgpu::Buffer, offset: u64, len: u64, mode: &Mode) -> Result<OutputReader> {
        Ok(OutputReader::new(self.root(buffer, offset, len, 0, mode.domain(), None)?))
    }

    /// The chaining value of the `len` bytes of `buffer` at byte `offset`, as the subtree that
    /// starts at byte `input_offset` of a larger input (see [`hazmat`](crate::hazmat)), computed
    /// where the data lies: a piece to merge with
    /// [`merge_subtrees_non_root`](crate::hazmat::merge_subtrees_non_root) and friends or
    /// [`merge_pieces_root`](crate::hazmat::merge_pieces_root). Requirements on `buffer` and
    /// `offset` as for [`hash`](Self::hash); `input_offset` and `len` must form a subtree
    /// ([`check_subtree`](crate::hazmat::check_subtree)).
    ///
    /// ```no_run
    /// use b3accel::hazmat::{merge_pieces_root, Mode, Piece};
    /// # let (hasher, buf): (b3accel::wgpu::ResidentHasher, wgpu::Buffer) = unimplemented!();
    /// // A buffer of 3 MiB + 10 bytes, hashed as two pieces and merged.
    /// let (half, rest) = (2u64 << 20, (1u64 << 20) + 10);
    /// let pieces = [
    ///     Piece { offset: 0, len: half, cv: hasher.subtree_cv(&buf, 0, half, 0, Mode::Hash)? },
    ///     Piece { offset: half, len: rest, cv: hasher.subtree_cv(&buf, half, rest, half, Mode::Hash)? },
    /// ];
    /// println!("{}", merge_pieces_root(&pieces, Mode::Hash)?);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn subtree_cv(
        &self,
        buffer: &::wgpu::Buffer,
        offset: u64,
        len: u64,
        input_offset: u64,
        mode: subtree::Mode,
    ) -> Result<ChainingValue> {
        check_subtree(input_offset, len)?;
        let start = input_offset / CHUNK_LEN as u64;
        Ok(self.root(buffer, offset, len, start, mode.domain(), None)?.chaining_value())
    }

    /// The root of the binary Merkle tree (see [`merkle`](crate::merkle)) over `count` 32-byte
    /// leaves lying end to end in `leaves` from byte `offset`, computed where they lie: no leaf
    /// passes through host memory and only the root (32 bytes) comes back. With `inner` (exactly
    /// `count - 1` entries) every inner node is copied back too, level by level in the layout of
    /// [`merkle::level_sizes`](crate::merkle::level_sizes).
    ///
    /// Requirements on `leaves` as for [`hash`](Self::hash); zero leaves, a range outside the
    /// buffer or a wrong `inner` length is an error.
    ///
    /// ```no_run
    /// # let (hasher, queue): (b3accel::wgpu::ResidentHasher, wgpu::Queue) = unimplemented!();
    /// # let device: wgpu::Device = unimplemented!();
    /// let leaves = vec![[5u8; 32]; 1000];
    /// let buf = device.create_buffer(&wgpu::BufferDescriptor {
    ///     label: Some("leaves"), size: 32 * 1000,
    ///     usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false,
    /// });
    /// queue.write_buffer(&buf, 0, leaves.as_flattened());
    /// let root = hasher.merkle_root(&buf, 0, 1000, None)?;
    /// assert_eq!(root, b3accel::merkle_root(b3accel::Device::Cpu, &leaves)?);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn merkle_root(
        &self,
        leaves: &::wgpu::Buffer,
        offset: u64,
        count: u64,
        inner: Option<&mut [[u8; 32]]>,
    ) -> Result<Hash> {
        Ok(Hash::from_bytes(super::merkle::merkle(&self.gpu, leaves, offset, count, inner, None)?))
    }

    /// [`merkle_root`](Self::merkle_root) without inner nodes, and where the time went:
    /// `kernel` is the one compute pass of all the Merkle dispatches by the device's timestamp
    /// queries (zero without them), `download` the host's reading of the root, `total` the wall
    /// time of the call.
    ///
    /// ```no_run
    /// # let (hasher, buf): (b3accel::wgpu::ResidentHasher, wgpu::Buffer) = unimplemented!();
    /// let t = hasher.merkle_root_timed(&buf, 0, buf.size() / 32)?;
    /// println!("{}: {:?} on the device, {:?} in all", t.value, t.kernel, t.total);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn merkle_root_timed(&self, leaves: &::wgpu::Buffer, offset: u64, count: u64) -> Result<Timed<Hash>> {
        timed(|t| super::merkle::merkle(&self.gpu, leaves, offset, count, None, Some(t)).map(Hash::from_bytes))
    }

    /// Hashes `count` independent messages of `msg_len` bytes each (0 allowed) lying end to end
    /// in `data` from byte `offset`, in `mode`, where they lie: element i is the hash of message
    /// i. Messages of up to one chunk take one invocation each; longer ones one per chunk, their
    /// chunk chaining values merged on the host. Requirements on `data` as for
    /// [`hash`](Self::hash) (messages need not start on a word boundary).
    ///
    /// ```no_run
    /// # let (hasher, buf): (b3accel::wgpu::ResidentHasher, wgpu::Buffer) = unimplemented!();
    /// // 1000 records of 100 bytes each.
    /// let hashes = hasher.hash_many(&buf, 0, 1000, 100, &b3accel::Mode::Hash)?;
    /// assert_eq!(hashes.len(), 1000);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn hash_many(
        &self,
        data: &::wgpu::Buffer,
        offset: u64,
        count: usize,
        msg_len: u64,
        mode: &Mode,
    ) -> Result<Vec<Hash>> {
        self.many(data, offset, count, msg_len, mode, None)
    }

    /// [`hash_many`](Self::hash_many), and where the time went: `kernel` is the device's time in
    /// the hashing passes (timestamps; zero without them), `download` the host's reading of the
    /// results (and merging, for messages longer than a chunk), `total` the wall time.
    ///
    /// ```no_run
    /// # let (hasher, buf): (b3accel::wgpu::ResidentHasher, wgpu::Buffer) = unimplemented!();
    /// let t = hasher.hash_many_timed(&buf, 0, 1 << 20, 64, &b3accel::Mode::Hash)?;
    /// println!("{:.2} G hashes/s on the device", t.value.len() as f64 / t.kernel.as_secs_f64() / 1e9);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn hash_many_timed(
        &self,
        data: &::wgpu::Buffer,
        offset: u64,
        count: usize,
        msg_len: u64,
        mode: &Mode,
    ) -> Result<Timed<Vec<Hash>>> {
        timed(|t| self.many(data, offset, count, msg_len, mode, Some(t)))
    }

    /// The one implementation of [`hash_many`](Self::hash_many), timed where `timings` asks.
    fn many(
        &self,
        data: &::wgpu::Buffer,
        offset: u64,
        count: usize,
        msg_len: u64,
        mode: &Mode,
        timings: Option<&mut Timings>,
    ) -> Result<Vec<Hash>> {
        let mut out = vec![[0u8; 32]; count];
        super::many::hash_many(&self.gpu, data, offset, msg_len, mode.domain(), &mut out, timings)?;
        Ok(out.into_iter().map(Hash::from_bytes).collect())
    }

    /// Hashes `count` independent messages of `msg_len` bytes each (at most one chunk, 1024
    /// bytes; 0 allowed) lying end to end in `data` from byte `offset`, in `mode`, into the device
    /// buffer `out`: message i's hash at bytes `out_offset + 32 * i..out_offset + 32 * i + 32`.
    /// Nothing passes through host memory; the call returns once the hashes are written (one
    /// submission). Requirements on `data` as for [`hash`](Self::hash); `out` needs
    /// `BufferUsages::STORAGE`, an aligned `out_offset` and room for the hashes. Longer messages
    /// are an error here: [`hash_many`](Self::hash_many) takes them.
    ///
    /// Messages whose length is a multiple of 16 bytes (64-byte records, 1 KiB, ...) take the
    /// fastest path (whole 16-byte loads).
    ///
    /// ```no_run
    /// # let (hasher, data, device): (b3accel::wgpu::ResidentHasher, wgpu::Buffer, wgpu::Device) = unimplemented!();
    /// let out = device.create_buffer(&wgpu::BufferDescriptor {
    ///     label: Some("hashes"), size: 32 * 1000,
    ///     usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC, mapped_at_creation: false,
    /// });
    /// // 1000 records of 64 bytes each, hashed into `out` on the device.
    /// hasher.hash_many_into(&data, 0, 1000, 64, &b3accel::Mode::Hash, &out, 0)?;
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn hash_many_into(
        &self,
        data: &::wgpu::Buffer,
        offset: u64,
        count: usize,
        msg_len: u64,
        mode: &Mode,
        out: &::wgpu::Buffer,
        out_offset: u64,
    ) -> Result<()> {
        let domain = mode.domain();
        super::many::hash_many_into(&self.gpu, data, offset, count as u64, msg_len, domain, out, out_offset, None)
    }

    /// [`hash_many_into`](Self::hash_many_into), and where the time went: `kernel` is the pass's
    /// device time by timestamp queries (zero without them), `total` the wall time of the call.
    ///
    /// ```no_run
    /// # let (hasher, data, out): (b3accel::wgpu::ResidentHasher, wgpu::Buffer, wgpu::Buffer) = unimplemented!();
    /// let t = hasher.hash_many_into_timed(&data, 0, 1 << 24, 64, &b3accel::Mode::Hash, &out, 0)?;
    /// println!("{:.1} G hashes/s", (1u64 << 24) as f64 / t.total.as_secs_f64() / 1e9);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn hash_many_into_timed(
        &self,
        data: &::wgpu::Buffer,
        offset: u64,
        count: usize,
        msg_len: u64,
        mode: &Mode,
        out: &::wgpu::Buffer,
        out_offset: u64,
    ) -> Result<Timings> {
        let domain = mode.domain();
        let (gpu, count) = (&self.gpu, count as u64);
        timed(|t| super::many::hash_many_into(gpu, data, offset, count, msg_len, domain, out, out_offset, Some(t)))
    }

    /// The top node of the `len` bytes of `buffer` at byte `offset`: the subtree that starts at
    /// chunk `start` of the input (0: the whole input, whose top node is the root).
    fn root(
        &self,
        buffer: &::wgpu::Buffer,
        offset: u64,
        len: u64,
        start: u64,
        domain: Domain,
        breakdown: Option<&mut ResidentBreakdown>,
    ) -> Result<Output> {
        let began = Instant::now();
        let gpu = &*self.gpu;
        if !buffer.usage().contains(::wgpu::BufferUsages::STORAGE) {
            return Err(Error::InvalidInput(format!(
                "device-resident hashing needs a buffer with STORAGE usage (it has {:?})",
                buffer.usage()
            )));
        }
        if !offset.is_multiple_of(gpu.storage_align) {
            return Err(Error::InvalidInput(format!(
                "offset {offset} is not a multiple of the device's storage offset alignment {}",
                gpu.storage_align
            )));
        }
        let end = offset.checked_add(len.next_multiple_of(4)).filter(|&e| e <= buffer.size());
        if end.is_none() {
            return Err(Error::InvalidInput(format!(
                "{len} bytes at offset {offset} (rounded up to whole 4-byte words) do not fit in a buffer of {} bytes",
                buffer.size()
            )));
        }
        if len == 0 {
            return Ok(chunk_output(&[], 0, domain));
        }
        gpu.check_health()?;
        scoped(&gpu.device, gpu.id, || self.root_on_device(buffer, offset, len, start, domain, breakdown, began))
    }

    #[allow(clippy::too_many_arguments)]
    fn root_on_device(
        &self,
        buffer: &::wgpu::Buffer,
        offset: u64,
        len: u64,
        start: u64,
        domain: Domain,
        breakdown: Option<&mut ResidentBreakdown>,
        began: Instant,
    ) -> Result<Output> {
        let gpu = &*self.gpu;
        let last = last_chunk_len(len);
        let full = (len - last) / CHUNK_LEN as u64;
        let seg = gpu.max_segment_chunks.min(full.next_power_of_two()).max(1);
        let count = full.div_ceil(seg);
        let (segments, tail) = gpu.with_scratch(seg, count.max(1), |scr| {
            let queries = scr.queries.clone().filter(|_| breakdown.is_some());
            let queries = queries.as_ref();
            let mut enc = gpu
                .device
                .create_command_encoder(&::wgpu::CommandEncoderDescriptor { label: Some("b3accel resident") });
            if let Some((q, _)) = queries {
                // Queries 0 and 1 (unused by a resident segment, which has no upload) bracket the
                // whole submission.
                enc.write_timestamp(q, 0);
            }
            // The last chunk, copied out by a shader so that the buffer needs no COPY_SRC usage, to
            // right after the last segment's pieces, which come back with it: by the last
            // segment's chunk pass in whole 16-byte words (no bind group or dispatch of its own),
            // or by copy_tail, word by word, where there is no chunk pass, or where those words
            // would overrun the buffer or the largest binding; the chunk pass saves a bind group
            // and a dispatch (docs/performance.md).
            //
            // All of it is one submission: a chunk pass submitted alone first grows the device's
            // passes by more than the host encoding it would hide (docs/performance.md).
            let tail_start = offset + full * CHUNK_LEN as u64;
            let words = last.div_ceil(4);
            let vec4s = last.div_ceil(16);
            let last_seg = full - count.saturating_sub(1) * seg;
            let in_pass = count > 0
                && tail_start + vec4s * 16 <= buffer.size()
                && last_seg * CHUNK_LEN as u64 + vec4s * 16 <= gpu.max_binding;
            for k in 0..count {
                let n_k = seg.min(full - k * seg);
                gpu.encode_segment(
                    &mut enc,
                    scr,
                    k,
                    buffer,
                    false,
                    offset + k * seg * CHUNK_LEN as u64,
                    n_k,
                    start + k * seg,
                    domain,
                    queries.map(|(q, _)| (q, k as u32 * QUERIES_PER_SEG + 2)),
                    if in_pass && k + 1 == count { vec4s } else { 0 },
                );
            }
            if !in_pass {
                let aligned = tail_start / gpu.storage_align * gpu.storage_align;
                let src_word = (tail_start - aligned) / 4;
                let tail_params_at = MAX_PASSES * PARAMS_STRIDE * scr.segs;
                let p = Params { n_items: words as u32, src_word: src_word as u32, ..Default::default() };
                scr.write_params(gpu, tail_params_at, p.bytes().to_vec());
                let bg = gpu.device.create_bind_group(&::wgpu::BindGroupDescriptor {
                    label: Some("b3accel copy_tail"),
                    layout: &gpu.pipes.tail_layout,
                    entries: &[
                        ::wgpu::BindGroupEntry {
                            binding: 1,
                            resource: ::wgpu::BindingResource::Buffer(::wgpu::BufferBinding {
                                buffer: &scr.pieces,
                                offset: Scratch::tail_at(count),
                                size: ::wgpu::BufferSize::new(CHUNK_LEN as u64),
                            }),
                        },
                        scr.params_entry(),
                        ::wgpu::BindGroupEntry {
                            binding: 4,
                            resource: ::wgpu::BindingResource::Buffer(::wgpu::BufferBinding {
                                buffer,
                                offset: aligned,
                                size: ::wgpu::BufferSize::new((src_word + words) * 4),
                            }),
                        },
                    ],
                });
                let mut pass = enc.begin_compute_pass(&::wgpu::ComputePassDescriptor {
                    label: Some("b3accel copy_tail"),
                    timestamp_writes: None,
                });
                pass.set_pipeline(&gpu.pipes.tail);
                pass.set_bind_group(0, &bg, &[tail_params_at as u32]);
                pass.dispatch_workgroups(1, 1, 1);
            }
            let tail_at = Scratch::tail_at(count);
            scr.copy_back(&mut enc, count, vec4s * 16);
            if let Some((q, resolve)) = queries {
                enc.write_timestamp(q, 1);
                enc.resolve_query_set(q, 0..count.max(1) as u32 * QUERIES_PER_SEG, resolve, 0);
                // Each segment's timestamps into their room in the readback buffer: read back with
                // the pieces, no second submission.
                let seg_bytes = QUERIES_PER_SEG as u64 * 8;
                for k in 0..count.max(1) {
                    enc.copy_buffer_to_buffer(resolve, k * seg_bytes, &scr.readback, scr.stamps_at(k), seg_bytes);
                }
            }
            let cmd = enc.finish();
            let t_submit = Instant::now();
            let index = gpu.queue.submit([cmd]);
            let ticket = MapTicket::begin(&scr.readback, ::wgpu::MapMode::Read);
            let t_wait = Instant::now();
            gpu.wait(&index, &ticket)?;
            let t_read = Instant::now();

            let view = scr
                .readback
                .get_mapped_range(..)
                .map_err(|e| Error::Device { device: gpu.id, detail: format!("readback buffer not mapped: {e:?}") })?;
            let segments: Vec<_> = (0..count)
                .map(|k| {
                    let n_k = seg.min(full - k * seg);
                    let at = (k * PIECES_BYTES) as usize;
                    (n_k, pieces_of(&view[at..], n_k))
                })
                .collect();
            let tail: Vec<u8> = view[tail_at as usize..(tail_at + last) as usize].to_vec();
            let times = queries.map(|_| pass_times(gpu, scr, &view, count));
            drop(view);
            scr.readback.unmap();
            if let Some(b) = breakdown {
                b.encode = t_submit - began;
                b.submit = t_wait - t_submit;
                b.wait = t_read - t_wait;
                b.read = t_read.elapsed();
                if let Some((before, passes, after)) = times {
                    b.before_passes = before;
                    b.passes = passes;
                    b.after_passes = after;
                }
            }
            Ok((segments, tail))
        })?;

        hash_resident(start, len, &tail, domain, |off, n, _first, out| {
            if off != 0 || n != full {
                return Err(Error::InvalidInput(format!(
                    "internal: a resident input of {full} full chunks committed as a run of {n} at {off}"
                )));
            }
            merge_segments(&segments, MAX_SUBTREE, domain, out)
        })
    }
}

/// From the readback of a timed resident submission of `count` segments (each segment's five
/// timestamps after its pieces): the device time from the submission's first timestamp (query
/// 0) to the start of the first pass, the summed durations of the hashing passes (queries 2 and
/// 3 of each segment), and the device time from the end of the last pass to the end of the
/// submission (query 1: the copies into the readback buffer).
fn pass_times(gpu: &Gpu, scr: &Scratch, view: &[u8], count: u64) -> (Duration, Duration, Duration) {
    let tick = |i: u64| {
        let (k, q) = (i / QUERIES_PER_SEG as u64, i % QUERIES_PER_SEG as u64);
        let at = (scr.stamps_at(k) + q * 8) as usize;
        let mut w = [0u8; 8];
        w.copy_from_slice(&view[at..at + 8]);
        u64::from_le_bytes(w)
    };
    let ns = |d: u64| Duration::from_nanos((d as f64 * gpu.timestamp_period) as u64);
    let mut kernel = Duration::ZERO;
    let mut last_end = tick(0);
    for k in 0..count {
        let base = k * QUERIES_PER_SEG as u64;
        kernel += ns(tick(base + 3).saturating_sub(tick(base + 2)));
        last_end = last_end.max(tick(base + 3));
    }
    let before = if count > 0 { ns(tick(2).saturating_sub(tick(0))) } else { Duration::ZERO };
    (before, kernel, ns(tick(1).saturating_sub(last_end)))
}
