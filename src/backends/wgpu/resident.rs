//! [`Resident`] on a wgpu device: data in a `wgpu::Buffer` is hashed where it lies, and host
//! inputs stream through the device in segments.

use super::device::Gpu;
use super::errors::scoped;
use super::merkle::MERKLE_FLAGS;
use super::options::WgpuOptions;
use super::passes::{check_buffer, upload};
use super::pipelines::{Params, PARAMS_STRIDE, PIECES_BYTES};
use super::segment::{Scratch, MAX_PASSES, QUERIES_PER_SEG};
use super::stream::{stream_host, stream_pool, StreamPool};
use super::wait::MapTicket;
use crate::backends::gpu::bao;
use crate::backends::gpu::pieces::pieces_of;
use crate::backends::gpu::resident::{range_len, MerkleInner, OutboardDest, Resident};
use crate::core::compress::Cv;
use crate::core::constants::CHUNK_LEN;
use crate::tree::bao_shape::Order;
use crate::tree::{
    check_subtree, chunk_output, hash_resident, last_chunk_len, merge_segments, timed, ChainingValue, Device, Domain,
    Error, Mode, Output, OutputReader, Result, Timed, Timings, TreeMode, MAX_SUBTREE,
};
use blake3::Hash;
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The default bytes of host input per segment. Host-resident hashing is bound by host memory
/// traffic (the copy into mapped staging memory reads and writes each byte, the device's upload
/// reads it again), not by the passes: fewer, larger segments pay fewer submissions and waits
/// (docs/performance.md). Streams are sized to the input, so small inputs never allocate this.
const DEFAULT_SEGMENT_BYTES: u64 = 256 << 20;

/// A wgpu device's [`Resident`] calls: on `wgpu::Buffer`s of yours (created on your own
/// `wgpu::Device` with `BufferUsages::STORAGE`; [`new`](Self::new)), or of a
/// [`WgpuBackend`](super::WgpuBackend)'s device ([`WgpuBackend::resident`](super::WgpuBackend::resident)).
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
/// use b3accel::{wgpu::ResidentHasher, Mode, Resident};
/// # let (device, queue): (wgpu::Device, wgpu::Queue) = unimplemented!();
/// let hasher = ResidentHasher::new(&device, &queue)?;
/// let buf = device.create_buffer(&wgpu::BufferDescriptor {
///     label: Some("data"), size: 1 << 20,
///     usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false,
/// });
/// queue.write_buffer(&buf, 0, &vec![9u8; 1 << 20]);
/// let hash = hasher.hash(&buf, 0..1 << 20, &Mode::Hash)?.value;
/// assert_eq!(hash, blake3::hash(&vec![9u8; 1 << 20]));
/// # Ok::<(), b3accel::Error>(())
/// ```
#[derive(Clone)]
pub struct ResidentHasher {
    pub(super) gpu: Arc<Gpu>,
    /// Host inputs' segment buffers, reused across calls.
    streams: Arc<StreamPool>,
    /// Chunks per segment of host input.
    pub(super) segment_chunks: u64,
}

/// Where the time of one resident hash went: the host's phases by the wall clock, and the
/// device's by its timestamp queries (zero without them). `wait` holds the device's whole span
/// (`before_passes + passes + after_passes`) plus what neither clock sees: the time from the
/// submission to the device's first command, and from its last command until the host notices.
#[derive(Default)]
struct Breakdown {
    /// Argument checks, error scopes, buffers from the pool, parameters, bind groups and
    /// encoding, up to the submission.
    encode: Duration,
    /// `Queue::submit` (and `map_async` on the readback buffer).
    submit: Duration,
    /// From the submission until the readback buffer is mapped.
    wait: Duration,
    /// Reading the mapped CVs, last chunk and timestamps, and unmapping.
    read: Duration,
    /// Device: from the submission's first timestamp to the start of the first hashing pass.
    before_passes: Duration,
    /// Device: the hashing passes, summed over segments.
    passes: Duration,
    /// Device: from the end of the last hashing pass to the submission's last timestamp (the
    /// copies into the readback buffer).
    after_passes: Duration,
}

impl Breakdown {
    /// `value` with these times, for a call of wall time `total`: `kernel` is the passes,
    /// `download` the device's time after them plus the host's reading; the rest of the wall
    /// time (`finish`) is the tree module's merging and the error scopes' closing.
    fn timed<T>(&self, value: T, total: Duration) -> Timed<T> {
        let host = self.encode + self.submit + self.wait + self.read;
        let device = self.before_passes + self.passes + self.after_passes;
        let latency = if self.passes.is_zero() { Duration::ZERO } else { self.wait.saturating_sub(device) };
        Timed {
            value,
            upload: Duration::ZERO,
            kernel: self.passes,
            download: self.after_passes + self.read,
            total,
            detail: vec![
                ("encode", self.encode),
                ("submit", self.submit),
                ("wait", self.wait),
                ("read", self.read),
                ("finish", total.saturating_sub(host)),
                ("before passes", self.before_passes),
                ("passes", self.passes),
                ("after passes", self.after_passes),
                ("launch+wake", latency),
            ],
        }
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
        let options = WgpuOptions::default();
        let gpu = Gpu::new(device.clone(), queue.clone(), id, &options, None)?;
        let hasher = ResidentHasher::from_gpu(Arc::new(gpu), &options);
        hasher.warm_up()?;
        Ok(hasher)
    }

    /// A hasher on `gpu`, with host segments as `options` ask.
    pub(crate) fn from_gpu(gpu: Arc<Gpu>, options: &WgpuOptions) -> ResidentHasher {
        let wanted = match options.segment_bytes {
            Some(b) => (b as u64 / CHUNK_LEN as u64).max(1),
            None => DEFAULT_SEGMENT_BYTES / CHUNK_LEN as u64,
        };
        let segment_chunks = super::device::prev_pow2(wanted).min(gpu.max_segment_chunks);
        ResidentHasher { gpu, streams: Arc::new(stream_pool()), segment_chunks }
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
        self.root(&buf, 0, len, 0, Mode::Hash.domain()).map(drop)
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

    /// The subtree CVs of `input` (full chunks, the first with index `first_chunk`, aligned as
    /// `Backend::chunk_subtrees_capped` requires), none larger than `max_chunks`, into `out`:
    /// one pipelined stream of segments.
    pub(super) fn host_subtrees(
        &self,
        input: &[u8],
        first_chunk: u64,
        max_chunks: u64,
        domain: Domain,
        out: &mut [Cv],
        timings: Option<&mut Timings>,
    ) -> Result<()> {
        let gpu = &*self.gpu;
        gpu.check_health()?;
        scoped(&gpu.device, gpu.id, || {
            stream_host(gpu, &self.streams, self.segment_chunks, input, first_chunk, max_chunks, domain, out, timings)
        })
    }

    /// The top node of the `len` bytes of `buffer` at byte `offset`: the subtree that starts at
    /// chunk `start` of the input (0: the whole input, whose top node is the root), with where
    /// the call's time went.
    pub(super) fn root(
        &self,
        buffer: &::wgpu::Buffer,
        offset: u64,
        len: u64,
        start: u64,
        domain: Domain,
    ) -> Result<Timed<Output>> {
        let began = Instant::now();
        let gpu = &*self.gpu;
        check_buffer(gpu, "resident hash", buffer, offset, len)?;
        if len == 0 {
            let total = began.elapsed();
            return Ok(Timings { total, ..Default::default() }.with(chunk_output(&[], 0, domain)));
        }
        gpu.check_health()?;
        let mut b = Breakdown::default();
        let output =
            scoped(&gpu.device, gpu.id, || self.root_on_device(buffer, offset, len, start, domain, &mut b, began))?;
        Ok(b.timed(output, began.elapsed()))
    }
}

/// On `wgpu::Buffer`s with `BufferUsages::STORAGE` of this hasher's device. An offset is a
/// multiple of the device's `min_storage_buffer_offset_alignment` (256 at most), and the buffer
/// extends to the end of the bytes read rounded up to 4 bytes. Messages of up to one chunk take
/// one invocation each, with whole 16-byte loads where their length is a multiple of 16 bytes;
/// longer ones one invocation per chunk, their chunk chaining values merged on the host (so
/// `hash_many_into` refuses them). `kernel` is the passes by the device's timestamp queries (zero
/// without them); nothing times an upload on the device, so `upload` is the wall time of the
/// write and the wait for it.
impl Resident for ResidentHasher {
    type Buffer = ::wgpu::Buffer;

    fn upload(&self, data: &[u8]) -> Result<Timed<::wgpu::Buffer>> {
        self.gpu.check_health()?;
        let gpu = &*self.gpu;
        let t = timed(|_| {
            scoped(&gpu.device, gpu.id, || {
                let buf = upload(gpu, "b3accel upload", data);
                let index = gpu.queue.submit([]);
                gpu.wait(&index, &MapTicket::work_done(&gpu.queue))?;
                Ok(buf)
            })
        })?;
        Ok(Timed { upload: t.total, ..t })
    }

    fn hash_from_host(&self, data: &[u8], mode: &Mode) -> Result<Timed<Hash>> {
        let domain = mode.domain();
        let full = data.len() - last_chunk_len(data.len() as u64) as usize;
        timed(|t| {
            let output = hash_resident(0, data.len() as u64, &data[full..], domain, |off, n, first, out| {
                let run = &data[off as usize * CHUNK_LEN..(off + n) as usize * CHUNK_LEN];
                self.host_subtrees(run, first, MAX_SUBTREE, domain, out, Some(&mut *t))
            })?;
            Ok(Hash::from_bytes(output.root_hash()))
        })
    }

    fn xof_reader(&self, buffer: &::wgpu::Buffer, range: Range<u64>, mode: &Mode) -> Result<Timed<OutputReader>> {
        let len = range_len(&range)?;
        Ok(self.root(buffer, range.start, len, 0, mode.domain())?.map(OutputReader::new))
    }

    fn subtree_cv(
        &self,
        buffer: &::wgpu::Buffer,
        range: Range<u64>,
        input_offset: u64,
        mode: TreeMode<'_>,
    ) -> Result<Timed<ChainingValue>> {
        let len = range_len(&range)?;
        check_subtree(input_offset, len)?;
        let start = input_offset / CHUNK_LEN as u64;
        Ok(self.root(buffer, range.start, len, start, mode.domain())?.map(|out| out.chaining_value()))
    }

    fn merkle_root(
        &self,
        leaves: &::wgpu::Buffer,
        offset: u64,
        count: usize,
        inner: MerkleInner<'_, ::wgpu::Buffer>,
    ) -> Result<Timed<Hash>> {
        let gpu = &*self.gpu;
        timed(|t| {
            super::merkle::merkle(gpu, leaves, offset, count as u64, inner, MERKLE_FLAGS, Some(t)).map(Hash::from_bytes)
        })
    }

    fn bao_outboard(
        &self,
        buffer: &::wgpu::Buffer,
        range: Range<u64>,
        group_log: u8,
        order: Order,
        out: OutboardDest<'_, ::wgpu::Buffer>,
    ) -> Result<Timed<Hash>> {
        let len = range_len(&range)?;
        let tree = bao::tree(len, group_log)?;
        bao::check_dest(&tree, &out, |b| b.size())?;
        let gpu = &*self.gpu;
        if let OutboardDest::Device(b) = &out {
            check_buffer(gpu, "bao outboard destination", b, 0, tree.outboard_len())?;
        }
        if tree.groups() == 1 {
            return self.hash(buffer, range, &Mode::Hash);
        }
        check_buffer(gpu, "bao outboard", buffer, range.start, len)?;
        gpu.check_health()?;
        timed(|t| self.outboard_on_device(buffer, range.start, tree, order, out, t))
    }

    fn hash_many(
        &self,
        data: &::wgpu::Buffer,
        offset: u64,
        count: usize,
        msg_len: usize,
        mode: &Mode,
    ) -> Result<Timed<Vec<Hash>>> {
        let mut out = vec![[0u8; 32]; count];
        let (gpu, domain) = (&*self.gpu, mode.domain());
        let t = timed(|t| super::many::hash_many(gpu, data, offset, msg_len as u64, domain, &mut out, Some(t)))?;
        Ok(t.map(|()| out.into_iter().map(Hash::from_bytes).collect()))
    }

    fn hash_many_into(
        &self,
        data: &::wgpu::Buffer,
        offset: u64,
        count: usize,
        msg_len: usize,
        mode: &Mode,
        out: &::wgpu::Buffer,
        out_offset: u64,
    ) -> Result<Timed<()>> {
        let (gpu, domain, count, msg_len) = (&*self.gpu, mode.domain(), count as u64, msg_len as u64);
        timed(|t| super::many::hash_many_into(gpu, data, offset, count, msg_len, domain, out, out_offset, Some(t)))
    }
}

impl ResidentHasher {
    #[allow(clippy::too_many_arguments)]
    fn root_on_device(
        &self,
        buffer: &::wgpu::Buffer,
        offset: u64,
        len: u64,
        start: u64,
        domain: Domain,
        b: &mut Breakdown,
        began: Instant,
    ) -> Result<Output> {
        let gpu = &*self.gpu;
        let last = last_chunk_len(len);
        let full = (len - last) / CHUNK_LEN as u64;
        let seg = gpu.max_segment_chunks.min(full.next_power_of_two()).max(1);
        let count = full.div_ceil(seg);
        let (segments, tail) = gpu.with_scratch(seg, count.max(1), |scr| {
            let queries = scr.queries.clone();
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
                    MAX_SUBTREE,
                    None,
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
            b.encode = t_submit - began;
            b.submit = t_wait - t_submit;
            b.wait = t_read - t_wait;
            b.read = t_read.elapsed();
            if let Some((before, passes, after)) = times {
                b.before_passes = before;
                b.passes = passes;
                b.after_passes = after;
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
