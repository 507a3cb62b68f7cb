//! Host inputs larger than the direct path stream through the device in segments: a few device
//! buffers (`OpenClOptions::staging_slots`), each fed from a pinned staging buffer
//! (`CL_MEM_ALLOC_HOST_PTR`, mapped once) on the worker's transfer queue, so that the CPU's copy
//! into staging memory, the upload and the hashing of different segments overlap.
//!
//! Segments are a power of two of chunks at a multiple of their size, so each full one is one
//! complete subtree; their CVs go onto the caller's [`CvStack`], which merges them by the tree's
//! rules.

use super::worker::{Enqueued, Prof, Run, Stage, Worker};
use super::{cl_err, OpenClBackend};
use crate::backend::MAX_SUBTREE;
use crate::compress::{Cv, CHUNK_LEN};
use crate::error::{Error, Result};
use crate::tree::{CvStack, Domain};
use ocl::core::{self, CommandQueue, Event, MapFlags, Mem, MemFlags, MemMap};
use rayon::prelude::*;

/// Below this a worker short of memory gives up rather than halve its segments again.
const MIN_FALLBACK_SEGMENT: usize = 64 << 10;

/// A mapped staging buffer's host pointer.
struct Mapped(MemMap<u8>);

// SAFETY: the pointer is to pinned host memory owned by the slot's staging buffer, which lives as
// long as the `Mapped` does; only the worker holding it (one thread at a time, through the pool's
// mutex) writes through it.
unsafe impl Send for Mapped {}

struct Slot {
    device: Mem,
    staging: Mem,
    map: Mapped,
    /// The last upload from the staging buffer.
    upload: Option<Event>,
    /// The last kernel that read the device buffer.
    reader: Option<Event>,
}

/// A worker's segment buffers.
pub(crate) struct StreamBuffers {
    pub seg: usize,
    slots: Vec<Slot>,
    queue: CommandQueue,
}

impl Drop for StreamBuffers {
    fn drop(&mut self) {
        for s in &self.slots {
            let _ =
                core::enqueue_unmap_mem_object(&self.queue, &s.staging, &s.map.0, None::<&Event>, None::<&mut Event>);
        }
        let _ = core::finish(&self.queue);
    }
}

impl StreamBuffers {
    fn new(w: &Worker, be: &OpenClBackend, seg: usize) -> Result<StreamBuffers> {
        let device = w.device;
        let oom = |detail: String| Error::OutOfMemory { device, detail };
        if seg as u64 > be.max_alloc_bytes {
            return Err(oom(format!(
                "a {seg}-byte segment buffer is over the backend's limit of {} bytes",
                be.max_alloc_bytes
            )));
        }
        if seg as u64 > be.limits.max_alloc {
            return Err(oom(format!(
                "a {seg}-byte segment buffer is over the device's largest allocation, {} bytes",
                be.limits.max_alloc
            )));
        }
        let count = be.staging_slots;
        let mut bufs = StreamBuffers { seg, slots: Vec::with_capacity(count), queue: w.transfer.clone() };
        for _ in 0..count {
            let alloc = |flags| {
                // SAFETY: a plain allocation with no host pointer.
                unsafe { core::create_buffer::<_, u8>(&w.context, flags, seg, None) }
                    .map_err(|e| cl_err(device, "allocating a segment buffer", e))
            };
            let dev = alloc(MemFlags::READ_ONLY)?;
            let staging = alloc(MemFlags::READ_ONLY | MemFlags::ALLOC_HOST_PTR)?;
            // SAFETY: a blocking map of the whole buffer; it stays mapped until `drop` unmaps it.
            let map = unsafe {
                core::enqueue_map_buffer::<u8, _, _, _>(
                    &w.transfer,
                    &staging,
                    true,
                    MapFlags::WRITE_INVALIDATE_REGION,
                    0,
                    seg,
                    None::<&Event>,
                    None::<&mut Event>,
                )
            }
            .map_err(|e| cl_err(device, "mapping a staging buffer", e))?;
            bufs.slots.push(Slot { device: dev, staging, map: Mapped(map), upload: None, reader: None });
            // Touch the device buffer so that a driver that allocates lazily fails here, where
            // a smaller segment can still be tried, and not in the middle of a hash.
            let zeros = [0u8; 16];
            let last = bufs.slots.last().expect("pushed above");
            // SAFETY: a blocking write of a local array.
            unsafe {
                core::enqueue_write_buffer(
                    &w.transfer,
                    &last.device,
                    true,
                    seg.saturating_sub(16),
                    &zeros[..seg.min(16)],
                    None::<&Event>,
                    None::<&mut Event>,
                )
            }
            .map_err(|e| cl_err(device, "allocating a segment buffer", e))?;
        }
        Ok(bufs)
    }
}

/// Copies `src` into `dst` with several threads: pageable-to-pinned copies are what limits the
/// end-to-end rate of a host input, and one core cannot keep up with the bus. With
/// `streaming`, non-temporal stores: the destination is not read into the cache first (see
/// `OpenClOptions::streaming_stores` for when that pays).
fn copy_parallel(src: &[u8], dst: &mut [u8], streaming: bool) {
    // Pieces of 256 KiB: the pipeline's first segments are small (1/32 of a segment and up), and
    // one core copying them alone held up the start of every mid-sized input.
    const PIECE: usize = 256 << 10;
    let copy = |d: &mut [u8], s: &[u8]| {
        if streaming {
            copy_streaming(d, s)
        } else {
            d.copy_from_slice(s)
        }
    };
    if src.len() < 2 * PIECE {
        copy(dst, src);
        return;
    }
    dst.par_chunks_mut(PIECE).zip(src.par_chunks(PIECE)).for_each(|(d, s)| copy(d, s));
}

/// `dst.copy_from_slice(src)` with non-temporal 16-byte stores where the CPU has them.
fn copy_streaming(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len());
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
        let head = dst.as_ptr().align_offset(16).min(dst.len());
        dst[..head].copy_from_slice(&src[..head]);
        let body = (dst.len() - head) / 64 * 64;
        // SAFETY: SSE2 is part of x86-64. Every load reads 16 bytes inside `src[head..head +
        // body]`, every store writes 16 bytes inside `dst[head..head + body]`, at 16-byte aligned
        // addresses (`head` aligns `dst`); the fence orders the streaming stores before any later
        // store, such as the one that starts the upload.
        unsafe {
            let s = src.as_ptr().add(head);
            let d = dst.as_mut_ptr().add(head);
            for i in (0..body).step_by(64) {
                let a = _mm_loadu_si128(s.add(i).cast::<__m128i>());
                let b = _mm_loadu_si128(s.add(i + 16).cast::<__m128i>());
                let c = _mm_loadu_si128(s.add(i + 32).cast::<__m128i>());
                let e = _mm_loadu_si128(s.add(i + 48).cast::<__m128i>());
                _mm_stream_si128(d.add(i).cast::<__m128i>(), a);
                _mm_stream_si128(d.add(i + 16).cast::<__m128i>(), b);
                _mm_stream_si128(d.add(i + 32).cast::<__m128i>(), c);
                _mm_stream_si128(d.add(i + 48).cast::<__m128i>(), e);
            }
            _mm_sfence();
        }
        dst[head + body..].copy_from_slice(&src[head + body..]);
    }
    #[cfg(not(target_arch = "x86_64"))]
    dst.copy_from_slice(src);
}

/// `input` cut into segments: the first two of `seg / 32` bytes (at least a chunk), then each as
/// long as everything before it, up to `seg`. The pipeline fills after a small first copy and
/// upload instead of a whole segment's, and every segment still starts at a multiple of its
/// length (in chunks from the start of the call), so each full one is one complete subtree.
fn segments(input: &[u8], seg: usize) -> Vec<&[u8]> {
    let first = (seg / 32).max(CHUNK_LEN);
    let mut parts = Vec::new();
    let mut pos = 0;
    while pos < input.len() {
        let len = if pos == 0 { first } else { pos.min(seg) };
        let end = (pos + len).min(input.len());
        parts.push(&input[pos..end]);
        pos = end;
    }
    parts
}

impl Worker {
    /// Streams `input` (full chunks; chunk counters from `counter_base`) in segments onto
    /// `stacks`: run r (chunks `[r * run_chunks, (r + 1) * run_chunks)` of `input`) onto
    /// `stacks[r]`, all in one pipeline. With one stack and `run_chunks` = [`MAX_SUBTREE`] that is
    /// the whole input, continuing that stack's input (chunk counters from `counter_base +
    /// stack.chunks()`); with several, each stack is fresh and `run_chunks` (a power of two) is at
    /// least the segment length, so no segment straddles two runs. A device short of memory gets
    /// smaller segments (the call starts again from the stacks as they were); below 64 KiB it is
    /// an error.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn stream(
        &mut self,
        be: &OpenClBackend,
        stacks: &mut [CvStack],
        run_chunks: u64,
        counter_base: u64,
        input: &[u8],
        domain: Domain,
        prof: Option<&mut Prof>,
    ) -> Result<()> {
        let mut prof = prof;
        let start = stacks.to_vec();
        let prof_len = prof.as_ref().map_or(0, |p| p.len());
        let min = MIN_FALLBACK_SEGMENT.min(be.segment_bytes);
        loop {
            self.ensure_stream(be, min)?;
            let seg = self.segment_cap;
            match self.stream_segments(be, stacks, run_chunks, counter_base, input, domain, &mut prof) {
                Err(Error::OutOfMemory { .. }) if seg / 2 >= min => {
                    self.quiesce();
                    self.stream = None;
                    self.segment_cap = seg / 2;
                    stacks.clone_from_slice(&start);
                    if let Some(p) = prof.as_deref_mut() {
                        p.truncate(prof_len);
                    }
                }
                result => return result,
            }
        }
    }

    /// Makes sure this worker has segment buffers, halving the segment size while the device
    /// cannot hold them.
    fn ensure_stream(&mut self, be: &OpenClBackend, min: usize) -> Result<()> {
        if self.stream.as_ref().is_some_and(|s| s.seg == self.segment_cap && s.slots.len() == be.staging_slots) {
            return Ok(());
        }
        self.stream = None;
        loop {
            match StreamBuffers::new(self, be, self.segment_cap) {
                Ok(s) => {
                    self.stream = Some(s);
                    return Ok(());
                }
                Err(Error::OutOfMemory { .. }) if self.segment_cap / 2 >= min => {
                    self.segment_cap /= 2;
                }
                Err(Error::OutOfMemory { device, detail }) => {
                    return Err(Error::OutOfMemory {
                        device,
                        detail: format!("no segment buffers of {} bytes or more fit ({detail})", self.segment_cap),
                    })
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The pipeline over S slots (device buffer, pinned staging buffer, host result buffer):
    /// segment k lives in slot k % S. While the CPU copies segment k into its staging buffer,
    /// the DMA engine works through the uploads of segments k-S+1 .. k-1 and the device hashes
    /// what has arrived; the copy waits only for the upload of segment k-S (which used the same
    /// staging memory), so with three or more slots it may run ahead of the bus, and the DMA engine
    /// need not wait for a copy. A slot's results are collected when the slot is needed again, and
    /// merged into the stacks at the end.
    #[allow(clippy::too_many_arguments)]
    fn stream_segments(
        &mut self,
        be: &OpenClBackend,
        stacks: &mut [CvStack],
        run_chunks: u64,
        counter_base: u64,
        input: &[u8],
        domain: Domain,
        prof: &mut Option<&mut Prof>,
    ) -> Result<()> {
        let (seg, slots) = {
            let s = self.stream.as_ref().expect("ensured by the caller");
            (s.seg, s.slots.len())
        };
        // No segment may straddle two runs: segments of at most a run's length, each at a multiple
        // of its length, never do.
        let seg = seg.min(run_chunks.saturating_mul(CHUNK_LEN as u64).min(usize::MAX as u64) as usize);
        let parts = segments(input, seg);
        let chunks: Vec<u64> = parts.iter().map(|p| (p.len() / CHUNK_LEN) as u64).collect();
        let starts: Vec<u64> = chunks.iter().scan(0, |pos, &n| Some(std::mem::replace(pos, *pos + n))).collect();
        let mut results: Vec<Vec<Cv>> = chunks.iter().map(|n| vec![[0; 32]; n.count_ones() as usize]).collect();
        let mut inflight: Vec<Option<(usize, Enqueued)>> = (0..slots).map(|_| None).collect();

        for k in 0..parts.len() {
            let slot = k % slots;
            self.upload(k % slots, parts[k], be.streaming_stores, prof)?;
            // The slot's previous segment must be collected before its results are overwritten.
            if let Some((j, done)) = inflight[slot].take() {
                self.wait(&done.read)?;
                self.take_pieces(slot, chunks[j], &mut results[j]);
            }
            inflight[slot] =
                Some((k, self.dispatch_segment(be, slot, chunks[k], counter_base + starts[k], domain, prof)?));
        }
        for k in parts.len().saturating_sub(slots)..parts.len() {
            if let Some((j, done)) = inflight[k % slots].take() {
                self.wait(&done.read)?;
                self.take_pieces(k % slots, chunks[j], &mut results[j]);
            }
        }

        // Merge by the tree's rules, each segment onto the stack of its run. A fresh stack takes
        // each segment as one run, as dispatched; any other cut (a stack that did not start at
        // chunk 0) is hashed again as it asks.
        for (k, part) in parts.iter().enumerate() {
            let r = if stacks.len() == 1 { 0 } else { (starts[k] / run_chunks) as usize };
            let run_start = r as u64 * run_chunks;
            let base = counter_base + run_start;
            stacks[r].commit_runs(chunks[k], MAX_SUBTREE, domain, |offset, n, first, out| {
                if (offset, n, first) == (0, chunks[k], starts[k] - run_start) {
                    out.copy_from_slice(&results[k]);
                    return Ok(());
                }
                let run = &part[offset as usize * CHUNK_LEN..(offset + n) as usize * CHUNK_LEN];
                self.hash_run_direct(be, run, base + first, domain, out)
            })?;
        }
        Ok(())
    }

    /// Enqueues the kernels for the segment in `slot`, once its upload is done, into host
    /// result slot `slot`.
    fn dispatch_segment(
        &mut self,
        be: &OpenClBackend,
        slot: usize,
        n: u64,
        counter: u64,
        domain: Domain,
        prof: &mut Option<&mut Prof>,
    ) -> Result<Enqueued> {
        let (dev, uploaded) = {
            let s = &self.stream.as_ref().expect("ensured").slots[slot];
            (s.device.clone(), s.upload.clone())
        };
        let run = Run { data: &dev, chunk_offset: 0, n, counter, domain };
        let done = self.enqueue_subtrees(be, run, uploaded.as_ref(), slot, None, prof)?;
        self.stream.as_mut().expect("ensured").slots[slot].reader = done.chunk_kernel.clone();
        Ok(done)
    }

    /// Copies a segment into staging slot `slot` and enqueues its upload, which waits on the
    /// device for the kernel that last read the slot's device buffer.
    fn upload(&mut self, slot: usize, part: &[u8], streaming: bool, prof: &mut Option<&mut Prof>) -> Result<()> {
        let device = self.device;
        let stream = self.stream.as_mut().expect("ensured by the caller");
        let slot = &mut stream.slots[slot];
        if let Some(ev) = slot.upload.take() {
            // The staging memory is free once its previous upload is done.
            ev.wait_for().map_err(|e| cl_err(device, "waiting for an upload", e))?;
        }
        // SAFETY: the mapped region is `stream.seg >= part.len()` bytes of host memory, and no
        // command reads it now (its last upload is complete).
        let staging = unsafe { slot.map.0.as_slice_mut(part.len()) };
        copy_parallel(part, staging, streaming);
        let reader = slot.reader.take();
        let mut ev = Event::null();
        // SAFETY: a non-blocking write from the staging memory, which stays mapped and untouched
        // until this event completes (waited for above before the next copy, and by `quiesce`
        // before the worker goes away after a failure).
        unsafe {
            core::enqueue_write_buffer(
                &self.transfer,
                &slot.device,
                false,
                0,
                &*staging,
                reader.as_ref(),
                Some(&mut ev),
            )
        }
        .map_err(|e| cl_err(device, "uploading a segment", e))?;
        core::flush(&self.transfer).map_err(|e| cl_err(device, "flushing the queue", e))?;
        Prof::push(prof, Stage::Upload, &ev);
        slot.upload = Some(ev);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streaming_copy_matches_at_any_alignment_and_length() {
        let src: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 253) as u8).collect();
        for dst_off in [0, 1, 5, 15, 16] {
            for src_off in [0, 3, 16] {
                for len in [0, 1, 15, 16, 63, 64, 65, 200, 4096, 9000] {
                    let mut dst = vec![0xEEu8; 9_100];
                    copy_streaming(&mut dst[dst_off..dst_off + len], &src[src_off..src_off + len]);
                    assert_eq!(&dst[dst_off..dst_off + len], &src[src_off..src_off + len]);
                    assert!(dst[..dst_off].iter().chain(&dst[dst_off + len..]).all(|&b| b == 0xEE));
                }
            }
        }
        let big: Vec<u8> = (0..(9 << 20) + 77).map(|i| (i % 249) as u8).collect();
        let mut out = vec![0u8; big.len()];
        copy_parallel(&big, &mut out, true);
        assert!(out == big);
    }
}
