//! Host inputs through a wgpu device in segments, two in flight: the host's copy into mapped
//! staging memory and the device's upload of one segment overlap the hashing of the other (the
//! pipeline and the merge are `gpu::segments`, shared with the OpenCL backend).

use super::device::Gpu;
use super::segment::{Scratch, QUERIES_PER_SEG};
use super::wait::MapTicket;
use crate::backends::gpu::capped::{cap_level, capped_cvs};
use crate::backends::gpu::pieces::pieces_of;
use crate::backends::gpu::pool::Pool;
use crate::backends::gpu::segments::{self, plan_segments, SegmentSlots};
use crate::core::compress::Cv;
use crate::core::constants::CHUNK_LEN;
use crate::tree::{merge_segments, Domain, Error, Result, Timings};
use std::time::{Duration, Instant};

/// Streams (sets of segment buffers) alive at once per backend. More threads than this wait for
/// a free stream: one queue runs their work in turn anyway, and each stream holds four
/// segment-sized buffers.
const MAX_STREAMS: usize = 4;
/// Smallest stream capacity in chunks, so that tiny inputs do not each allocate anew.
const MIN_STREAM_CHUNKS: u64 = 64;
/// Host copies into staging memory above this size are split across threads.
const PARALLEL_COPY_BYTES: usize = 4 << 20;

/// One segment buffer set: staging (host-visible), input (device) and scratch.
pub(crate) struct Slot {
    staging: ::wgpu::Buffer,
    /// Set while the staging buffer is being mapped again after its last upload.
    remap: Option<(::wgpu::SubmissionIndex, MapTicket)>,
    input: ::wgpu::Buffer,
    scratch: Scratch,
}

/// Two slots, so that two segments are in flight.
pub(crate) struct Stream {
    cap: u64,
    slots: [Slot; 2],
}

impl Stream {
    fn new(gpu: &Gpu, cap: u64) -> Stream {
        let bytes = cap * CHUNK_LEN as u64;
        let slot = |i: usize| Slot {
            staging: gpu.device.create_buffer(&::wgpu::BufferDescriptor {
                label: Some(if i == 0 { "b3accel staging 0" } else { "b3accel staging 1" }),
                size: bytes,
                usage: ::wgpu::BufferUsages::MAP_WRITE | ::wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: true,
            }),
            remap: None,
            input: gpu.storage_buffer("b3accel input", bytes, ::wgpu::BufferUsages::COPY_DST),
            scratch: Scratch::new(gpu, cap, 1),
        };
        Stream { cap, slots: [slot(0), slot(1)] }
    }
}

/// A backend's streams: at most [`MAX_STREAMS`] alive, reused across calls; one too small for a
/// call is replaced.
pub(crate) type StreamPool = Pool<Stream>;

/// A new, empty pool of streams.
pub(crate) fn stream_pool() -> StreamPool {
    Pool::new(MAX_STREAMS, MAX_STREAMS, |s| s.cap)
}

/// Copies `src` into a mapped staging buffer, in parallel for large segments, and zeros the bytes
/// after it up to `pad_to` (>= `src.len()`); unmaps the staging buffer.
fn fill_staging(staging: &::wgpu::Buffer, src: &[u8], pad_to: usize, gpu: &Gpu) -> Result<()> {
    let mut view = staging
        .slice(..pad_to as u64)
        .get_mapped_range_mut()
        .map_err(|e| Error::Device { device: gpu.id, detail: format!("staging buffer not mapped: {e:?}") })?;
    if pad_to > src.len() {
        view.slice(src.len()..).copy_from_slice(&vec![0u8; pad_to - src.len()]);
    }
    let mut dst = view.slice(..src.len());
    if src.len() < PARALLEL_COPY_BYTES {
        dst.copy_from_slice(src);
    } else {
        // `WriteOnly<[u8]>` is not `Send`; its raw pointer is the documented way to write from
        // several threads.
        struct Dst(*mut u8);
        // SAFETY: each task below writes a disjoint range of the mapped view, which outlives
        // the scope; the pointer is only written through, never read.
        unsafe impl Send for Dst {}
        unsafe impl Sync for Dst {}
        let base = Dst(dst.as_raw_element_ptr().as_ptr());
        let parts = rayon::current_num_threads().clamp(1, 16);
        let step = src.len().div_ceil(parts).next_multiple_of(64);
        rayon::scope(|s| {
            for (i, chunk) in src.chunks(step).enumerate() {
                let base = &base;
                s.spawn(move |_| {
                    // SAFETY: `i * step + chunk.len() <= src.len()`, the view's length; the
                    // ranges of different tasks are disjoint.
                    unsafe { std::ptr::copy_nonoverlapping(chunk.as_ptr(), base.0.add(i * step), chunk.len()) }
                });
            }
        });
    }
    drop(view);
    staging.unmap();
    Ok(())
}

fn ticks(bytes: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&bytes[i * 8..i * 8 + 8]);
    u64::from_le_bytes(w)
}

/// Reads a finished segment's pieces (and timestamps, and a capped segment's level-k CVs) back
/// and unmaps the readback buffers.
#[allow(clippy::too_many_arguments)]
fn harvest(
    gpu: &Gpu,
    slot: &Slot,
    n: u64,
    max_chunks: u64,
    index: ::wgpu::SubmissionIndex,
    readback: MapTicket,
    capped: Option<MapTicket>,
    timings: &mut Option<&mut Timings>,
) -> Result<Vec<Cv>> {
    gpu.wait(&index, &readback)?;
    if let Some(ticket) = &capped {
        gpu.wait(&index, ticket)?;
    }
    let t_read = Instant::now();
    let rb = &slot.scratch.readback;
    let not_mapped = |e| Error::Device { device: gpu.id, detail: format!("readback buffer not mapped: {e:?}") };
    let view = rb.slice(..).get_mapped_range().map_err(not_mapped)?;
    let pieces = match (cap_level(n, max_chunks), &slot.scratch.capped) {
        (Some(k), Some(c)) => {
            let full = c.readback.slice(..).get_mapped_range().map_err(not_mapped)?;
            let cvs = capped_cvs(&full, &view, n, k);
            drop(full);
            c.readback.unmap();
            cvs
        }
        _ => pieces_of(&view, n),
    };
    if let Some(t) = timings.as_deref_mut() {
        if gpu.timestamps {
            let ts = &view[slot.scratch.stamps_at(0) as usize..];
            let ns = |a: usize, b: usize| {
                let d = ticks(ts, b).saturating_sub(ticks(ts, a));
                Duration::from_nanos((d as f64 * gpu.timestamp_period) as u64)
            };
            t.upload += ns(0, 1);
            t.kernel += ns(2, 3);
            // The device's copy of the CVs into host-visible memory, then the host's read.
            t.download += ns(3, 4) + t_read.elapsed();
        }
    }
    drop(view);
    rb.unmap();
    Ok(pieces)
}

/// One segment submitted: waited for when collected, or already read (a timed call on a device
/// without timestamps runs each phase alone).
enum Pending {
    Submitted { n: u64, index: ::wgpu::SubmissionIndex, readback: MapTicket, capped: Option<MapTicket> },
    Read(Vec<Cv>),
}

/// A stream's two slots as the shared pipeline's slots: `fill` copies into mapped staging memory,
/// `dispatch` encodes the upload copy and the passes in one submission (and maps the readback and
/// the staging buffer again for later), `collect` reads the pieces back.
struct Slots<'a, 'b> {
    gpu: &'a Gpu,
    stream: &'a mut Stream,
    domain: Domain,
    max_chunks: u64,
    timings: &'a mut Option<&'b mut Timings>,
    /// With timings but no timestamp queries: each phase submitted and waited for alone, under
    /// the wall clock; otherwise everything pipelined and the device times itself.
    serial: bool,
}

impl SegmentSlots for Slots<'_, '_> {
    type Pending = Pending;

    fn slots(&self) -> usize {
        self.stream.slots.len()
    }

    fn fill(&mut self, s: usize, bytes: &[u8]) -> Result<()> {
        let slot = &mut self.stream.slots[s];
        if let Some((index, ticket)) = slot.remap.take() {
            self.gpu.wait(&index, &ticket)?;
        }
        let t_host = Instant::now();
        fill_staging(&slot.staging, bytes, bytes.len(), self.gpu)?;
        if let Some(t) = self.timings.as_deref_mut() {
            t.upload += t_host.elapsed();
        }
        Ok(())
    }

    fn dispatch(&mut self, s: usize, n: u64, counter: u64) -> Result<Pending> {
        let gpu = self.gpu;
        let serial = self.serial;
        let slot = &mut self.stream.slots[s];
        let bytes = n * CHUNK_LEN as u64;
        let queries = slot.scratch.queries.clone().filter(|_| self.timings.is_some());
        let queries = queries.as_ref();
        let label = Some("b3accel segment");
        let mut enc = gpu.device.create_command_encoder(&::wgpu::CommandEncoderDescriptor { label });
        if let Some((q, _)) = queries {
            enc.write_timestamp(q, 0);
        }
        enc.copy_buffer_to_buffer(&slot.staging, 0, &slot.input, 0, bytes);
        if let Some((q, _)) = queries {
            enc.write_timestamp(q, 1);
        }
        if serial {
            let t = Instant::now();
            let index = gpu.queue.submit([enc.finish()]);
            let ticket = MapTicket::begin(&slot.staging, ::wgpu::MapMode::Write);
            gpu.wait(&index, &ticket)?;
            if let Some(t_) = self.timings.as_deref_mut() {
                t_.upload += t.elapsed();
            }
            enc = gpu.device.create_command_encoder(&::wgpu::CommandEncoderDescriptor { label });
        }
        gpu.encode_segment(
            &mut enc,
            &mut slot.scratch,
            0,
            &slot.input,
            true,
            0,
            n,
            counter,
            self.domain,
            queries.map(|(q, _)| (q, 2)),
            0,
            self.max_chunks,
            None,
        );
        slot.scratch.copy_back(&mut enc, 1, 0);
        let cap = cap_level(n, self.max_chunks);
        if let Some(k) = cap {
            slot.scratch.copy_capped_back(&mut enc, n >> k);
        }
        if let Some((q, resolve)) = queries {
            enc.write_timestamp(q, 4);
            enc.resolve_query_set(q, 0..QUERIES_PER_SEG, resolve, 0);
            let at = slot.scratch.stamps_at(0);
            enc.copy_buffer_to_buffer(resolve, 0, &slot.scratch.readback, at, QUERIES_PER_SEG as u64 * 8);
        }
        let t_kernel = Instant::now();
        let index = gpu.queue.submit([enc.finish()]);
        let capped = match (cap, &slot.scratch.capped) {
            (Some(_), Some(c)) => Some(MapTicket::begin(&c.readback, ::wgpu::MapMode::Read)),
            _ => None,
        };
        let readback = MapTicket::begin(&slot.scratch.readback, ::wgpu::MapMode::Read);
        if !serial {
            slot.remap = Some((index.clone(), MapTicket::begin(&slot.staging, ::wgpu::MapMode::Write)));
            return Ok(Pending::Submitted { n, index, readback, capped });
        }
        gpu.wait(&index, &readback)?;
        let kernel = t_kernel.elapsed();
        let t_down = Instant::now();
        let got = harvest(gpu, slot, n, self.max_chunks, index, readback, capped, self.timings)?;
        if let Some(t) = self.timings.as_deref_mut() {
            t.kernel += kernel;
            t.download += t_down.elapsed();
        }
        Ok(Pending::Read(got))
    }

    fn collect(&mut self, s: usize, pending: Pending, _chunks: u64) -> Result<Vec<Cv>> {
        match pending {
            Pending::Submitted { n, index, readback, capped } => {
                harvest(self.gpu, &self.stream.slots[s], n, self.max_chunks, index, readback, capped, self.timings)
            }
            Pending::Read(pieces) => Ok(pieces),
        }
    }
}

/// Hashes `input` (a run of full chunks whose first chunk has index `first_chunk`, aligned as
/// `Backend::chunk_subtrees_capped` requires) into `out` (subtrees of at most `max_chunks`), in
/// segments of at most `seg_chunks` chunks (a power of two); a segment's passes stop at the cap's
/// level and bring back every capped subtree's CV (`gpu::capped`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn stream_host(
    gpu: &Gpu,
    pool: &StreamPool,
    seg_chunks: u64,
    input: &[u8],
    first_chunk: u64,
    max_chunks: u64,
    domain: Domain,
    out: &mut [Cv],
    mut timings: Option<&mut Timings>,
) -> Result<()> {
    let n = (input.len() / CHUNK_LEN) as u64;
    let seg = seg_chunks.min(n.next_power_of_two()).max(1);
    let cap = seg.max(MIN_STREAM_CHUNKS.min(seg_chunks));
    let serial = timings.is_some() && !gpu.timestamps;
    pool.with(
        |s| s.cap >= cap,
        || Ok(Stream::new(gpu, cap)),
        |stream| {
            let plan = plan_segments(n, seg, seg);
            let mut slots = Slots { gpu, stream: &mut *stream, domain, max_chunks, timings: &mut timings, serial };
            let done = segments::stream(&mut slots, input, &plan, first_chunk)?;
            // Leave both staging buffers mapped for the next call.
            for slot in &mut stream.slots {
                if let Some((index, ticket)) = slot.remap.take() {
                    gpu.wait(&index, &ticket)?;
                }
            }
            merge_segments(&done, max_chunks, domain, out)
        },
    )
}
