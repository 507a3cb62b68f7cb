//! Host inputs: streaming through the device in segments, two in flight, so that the host's copy
//! into staging memory and the device's upload of segment k+1 overlap the hashing of segment k.
//! Also `hash_blocks`.

use super::{lock, merge_segments, pieces_of, Gpu, MapTicket, Scratch, QUERIES_PER_SEG, READBACK_STRIDE};
use crate::backend::Timings;
use crate::compress::{Cv, CHUNK_LEN};
use crate::error::{Error, Result};
use crate::tree::Domain;
use std::sync::{Condvar, Mutex};
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
struct Slot {
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

/// The backend's streams: at most [`MAX_STREAMS`] alive, reused across calls.
pub(crate) struct StreamPool {
    state: Mutex<(Vec<Stream>, usize)>,
    freed: Condvar,
}

impl StreamPool {
    pub fn new() -> StreamPool {
        StreamPool { state: Mutex::new((Vec::new(), 0)), freed: Condvar::new() }
    }

    /// A stream of at least `cap` chunks per segment.
    fn take(&self, gpu: &Gpu, cap: u64) -> Stream {
        let mut st = lock(&self.state);
        loop {
            if let Some(pos) = st.0.iter().position(|s| s.cap >= cap) {
                return st.0.swap_remove(pos);
            }
            if st.1 < MAX_STREAMS {
                st.1 += 1;
                break;
            }
            if let Some(small) = st.0.pop() {
                // Replace a stream that is too small (its buffers are freed).
                drop(small);
                break;
            }
            st = self.freed.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        drop(st);
        Stream::new(gpu, cap)
    }

    fn give(&self, s: Stream) {
        lock(&self.state).0.push(s);
        self.freed.notify_one();
    }

    /// A stream that failed mid-way is dropped, not reused.
    fn forget(&self) {
        lock(&self.state).1 -= 1;
        self.freed.notify_one();
    }
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

/// One segment submitted and not yet read back.
struct Pending {
    n: u64,
    index: ::wgpu::SubmissionIndex,
    readback: MapTicket,
}

fn ticks(bytes: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&bytes[i * 8..i * 8 + 8]);
    u64::from_le_bytes(w)
}

/// Reads a finished segment's pieces (and timestamps) back and unmaps the readback buffer.
fn harvest(gpu: &Gpu, slot: &Slot, p: Pending, timings: &mut Option<&mut Timings>) -> Result<(u64, Vec<Cv>)> {
    gpu.wait(&p.index, &p.readback)?;
    let t_read = Instant::now();
    let rb = &slot.scratch.readback;
    let view = rb
        .slice(..READBACK_STRIDE)
        .get_mapped_range()
        .map_err(|e| Error::Device { device: gpu.id, detail: format!("readback buffer not mapped: {e:?}") })?;
    let pieces = pieces_of(&view, p.n);
    if let Some(t) = timings.as_deref_mut() {
        if gpu.timestamps {
            let ts = &view[super::PIECES_BYTES as usize..];
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
    Ok((p.n, pieces))
}

/// Hashes `input` (a run of full chunks whose first chunk has index `first_chunk`, aligned as
/// `Backend::chunk_subtrees_capped` requires) into `out` (subtrees of at most `max_chunks`), in
/// segments of at most `seg_chunks` chunks (a power of two no larger than `max_chunks`).
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
    let mut stream = pool.take(gpu, cap);
    let r = run_stream(gpu, &mut stream, seg, input, first_chunk, max_chunks, domain, out, &mut timings);
    match r {
        Ok(()) => pool.give(stream),
        Err(_) => pool.forget(),
    }
    r
}

#[allow(clippy::too_many_arguments)]
fn run_stream(
    gpu: &Gpu,
    stream: &mut Stream,
    seg: u64,
    input: &[u8],
    first_chunk: u64,
    max_chunks: u64,
    domain: Domain,
    out: &mut [Cv],
    timings: &mut Option<&mut Timings>,
) -> Result<()> {
    let n = (input.len() / CHUNK_LEN) as u64;
    let count = n.div_ceil(seg);
    // With timestamps, everything is pipelined and the device times itself; without, a timed
    // call runs each phase alone under the wall clock.
    let serial = timings.is_some() && !gpu.timestamps;
    let mut pending: [Option<Pending>; 2] = [None, None];
    let mut done: Vec<(u64, Vec<Cv>)> = Vec::with_capacity(count as usize);
    for k in 0..count {
        let s = (k % 2) as usize;
        if let Some(p) = pending[s].take() {
            done.push(harvest(gpu, &stream.slots[s], p, timings)?);
        }
        let slot = &mut stream.slots[s];
        if let Some((index, ticket)) = slot.remap.take() {
            gpu.wait(&index, &ticket)?;
        }
        let start = (k * seg) as usize * CHUNK_LEN;
        let n_k = seg.min(n - k * seg);
        let bytes = &input[start..start + n_k as usize * CHUNK_LEN];

        let t_host = Instant::now();
        fill_staging(&slot.staging, bytes, bytes.len(), gpu)?;
        if let Some(t) = timings.as_deref_mut() {
            t.upload += t_host.elapsed();
        }

        let queries = slot.scratch.queries.clone().filter(|_| timings.is_some());
        let queries = queries.as_ref();
        let mut enc =
            gpu.device.create_command_encoder(&::wgpu::CommandEncoderDescriptor { label: Some("b3accel segment") });
        if let Some((q, _)) = queries {
            enc.write_timestamp(q, 0);
        }
        enc.copy_buffer_to_buffer(&slot.staging, 0, &slot.input, 0, bytes.len() as u64);
        if let Some((q, _)) = queries {
            enc.write_timestamp(q, 1);
        }
        if serial {
            let t = Instant::now();
            let index = gpu.queue.submit([enc.finish()]);
            let ticket = MapTicket::begin(&slot.staging, ::wgpu::MapMode::Write);
            gpu.wait(&index, &ticket)?;
            if let Some(t_) = timings.as_deref_mut() {
                t_.upload += t.elapsed();
            }
            enc =
                gpu.device.create_command_encoder(&::wgpu::CommandEncoderDescriptor { label: Some("b3accel segment") });
        }
        gpu.encode_segment(
            &mut enc,
            &mut slot.scratch,
            0,
            &slot.input,
            true,
            0,
            n_k,
            first_chunk + k * seg,
            domain,
            queries.map(|(q, _)| (q, 2)),
            None,
        );
        if let Some((q, resolve)) = queries {
            enc.write_timestamp(q, 4);
            enc.resolve_query_set(q, 0..QUERIES_PER_SEG, resolve, 0);
            enc.copy_buffer_to_buffer(
                resolve,
                0,
                &slot.scratch.readback,
                super::PIECES_BYTES,
                QUERIES_PER_SEG as u64 * 8,
            );
        }
        let t_kernel = Instant::now();
        let index = gpu.queue.submit([enc.finish()]);
        let readback = MapTicket::begin(&slot.scratch.readback, ::wgpu::MapMode::Read);
        if !serial {
            slot.remap = Some((index.clone(), MapTicket::begin(&slot.staging, ::wgpu::MapMode::Write)));
        }
        let p = Pending { n: n_k, index, readback };
        if serial {
            gpu.wait(&p.index, &p.readback)?;
            let kernel = t_kernel.elapsed();
            let t_down = Instant::now();
            let got = harvest(gpu, &stream.slots[s], p, timings)?;
            if let Some(t) = timings.as_deref_mut() {
                t.kernel += kernel;
                t.download += t_down.elapsed();
            }
            done.push(got);
        } else {
            pending[s] = Some(p);
        }
    }
    // The last one or two segments, in order.
    for i in 0..2u64 {
        let s = ((count + i) % 2) as usize;
        if let Some(p) = pending[s].take() {
            done.push(harvest(gpu, &stream.slots[s], p, timings)?);
        }
    }
    // Leave both staging buffers mapped for the next call.
    for slot in &mut stream.slots {
        if let Some((index, ticket)) = slot.remap.take() {
            gpu.wait(&index, &ticket)?;
        }
    }
    merge_segments(&done, max_chunks, domain, out)
}

/// `Backend::hash_blocks` on the device: one invocation per block, in dispatches of at most the
/// device's dispatch and binding limits.
pub(crate) fn hash_blocks(gpu: &Gpu, blocks: &[[u8; 64]], out: &mut [[u8; 32]]) -> Result<()> {
    let limits = gpu.device.limits();
    let per_dispatch = (limits.max_compute_workgroups_per_dimension as u64 * super::pipelines::WORKGROUP as u64)
        .min(limits.max_storage_buffer_binding_size / 64)
        .min(1 << 22) as usize;
    for (blocks, out) in blocks.chunks(per_dispatch).zip(out.chunks_mut(per_dispatch)) {
        let n = blocks.len() as u64;
        let input = gpu.storage_buffer("b3accel blocks", n * 64, ::wgpu::BufferUsages::COPY_DST);
        let mut bytes = Vec::with_capacity(blocks.len() * 64);
        for b in blocks {
            bytes.extend_from_slice(b);
        }
        gpu.queue.write_buffer(&input, 0, &bytes);
        let output = gpu.storage_buffer("b3accel hashes", n * 32, ::wgpu::BufferUsages::COPY_SRC);
        let dummy = gpu.storage_buffer("b3accel unused", 32, ::wgpu::BufferUsages::empty());
        let params = gpu.device.create_buffer(&::wgpu::BufferDescriptor {
            label: Some("b3accel params"),
            size: super::PARAMS_STRIDE,
            usage: ::wgpu::BufferUsages::UNIFORM | ::wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let p = super::Params { n_items: n as u32, ..Default::default() };
        gpu.queue.write_buffer(&params, 0, &p.bytes());
        let readback = gpu.device.create_buffer(&::wgpu::BufferDescriptor {
            label: Some("b3accel readback"),
            size: n * 32,
            usage: ::wgpu::BufferUsages::MAP_READ | ::wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let bg = gpu.device.create_bind_group(&::wgpu::BindGroupDescriptor {
            label: Some("b3accel hash_blocks"),
            layout: &gpu.pipes.layout,
            entries: &[
                ::wgpu::BindGroupEntry { binding: 0, resource: input.as_entire_binding() },
                ::wgpu::BindGroupEntry { binding: 1, resource: output.as_entire_binding() },
                ::wgpu::BindGroupEntry { binding: 2, resource: dummy.as_entire_binding() },
                ::wgpu::BindGroupEntry {
                    binding: 3,
                    resource: ::wgpu::BindingResource::Buffer(::wgpu::BufferBinding {
                        buffer: &params,
                        offset: 0,
                        size: ::wgpu::BufferSize::new(super::PARAMS_BYTES),
                    }),
                },
            ],
        });
        let mut enc =
            gpu.device.create_command_encoder(&::wgpu::CommandEncoderDescriptor { label: Some("b3accel hash_blocks") });
        {
            let mut pass = enc.begin_compute_pass(&::wgpu::ComputePassDescriptor {
                label: Some("b3accel hash_blocks"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&gpu.pipes.blocks);
            pass.set_bind_group(0, &bg, &[0]);
            pass.dispatch_workgroups(n.div_ceil(super::pipelines::WORKGROUP as u64) as u32, 1, 1);
        }
        enc.copy_buffer_to_buffer(&output, 0, &readback, 0, n * 32);
        let index = gpu.queue.submit([enc.finish()]);
        let ticket = MapTicket::begin(&readback, ::wgpu::MapMode::Read);
        gpu.wait(&index, &ticket)?;
        let view = readback
            .get_mapped_range(..)
            .map_err(|e| Error::Device { device: gpu.id, detail: format!("readback buffer not mapped: {e:?}") })?;
        for (o, h) in out.iter_mut().zip(view.chunks_exact(32)) {
            o.copy_from_slice(h);
        }
    }
    Ok(())
}
