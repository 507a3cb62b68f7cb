//! Host inputs larger than the direct path stream through the device in segments: two device
//! buffers, each fed from a pinned staging buffer (`CL_MEM_ALLOC_HOST_PTR`, mapped once) on the
//! worker's transfer queue, so that the upload of segment k+1 overlaps the hashing of segment k.
//!
//! Segments are a power of two of chunks at a multiple of their size, so each full one is one
//! complete subtree; their CVs go onto the caller's [`CvStack`], which merges them by the tree's
//! rules.

use super::worker::{Prof, Stage, Worker};
use super::{cl_err, OpenClBackend};
use crate::backend::MAX_SUBTREE;
use crate::compress::CHUNK_LEN;
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
    upload: Option<Event>,
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
        let mut bufs = StreamBuffers { seg, slots: Vec::with_capacity(2), queue: w.transfer.clone() };
        for _ in 0..2 {
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
            bufs.slots.push(Slot { device: dev, staging, map: Mapped(map), upload: None });
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
/// end-to-end rate of a host input, and one core cannot keep up with the bus.
fn copy_parallel(src: &[u8], dst: &mut [u8]) {
    const PIECE: usize = 1 << 20;
    if src.len() < 4 * PIECE {
        dst.copy_from_slice(src);
        return;
    }
    dst.par_chunks_mut(PIECE).zip(src.par_chunks(PIECE)).for_each(|(d, s)| d.copy_from_slice(s));
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
    /// Streams `input` (full chunks continuing `stack`'s input; chunk counters from
    /// `counter_base + stack.chunks()`) in segments. A device short of memory gets smaller
    /// segments (the call starts again from `stack` as it was); below 64 KiB it is an error.
    pub(super) fn stream(
        &mut self,
        be: &OpenClBackend,
        stack: &mut CvStack,
        counter_base: u64,
        input: &[u8],
        domain: Domain,
        prof: Option<&mut Prof>,
    ) -> Result<()> {
        let mut prof = prof;
        let start = stack.clone();
        let prof_len = prof.as_ref().map_or(0, |p| p.len());
        let min = MIN_FALLBACK_SEGMENT.min(be.segment_bytes);
        loop {
            self.ensure_stream(be, min)?;
            let seg = self.segment_cap;
            match self.stream_segments(be, stack, counter_base, input, domain, &mut prof) {
                Err(Error::OutOfMemory { .. }) if seg / 2 >= min => {
                    self.quiesce();
                    self.stream = None;
                    self.segment_cap = seg / 2;
                    *stack = start.clone();
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
        if self.stream.as_ref().is_some_and(|s| s.seg == self.segment_cap) {
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

    fn stream_segments(
        &mut self,
        be: &OpenClBackend,
        stack: &mut CvStack,
        counter_base: u64,
        input: &[u8],
        domain: Domain,
        prof: &mut Option<&mut Prof>,
    ) -> Result<()> {
        let seg = self.stream.as_ref().expect("ensured by the caller").seg;
        let parts = segments(input, seg);
        self.upload(0, parts[0], prof)?;
        for (k, part) in parts.iter().enumerate() {
            let (dev, uploaded) = {
                let s = &self.stream.as_ref().expect("ensured").slots[k % 2];
                (s.device.clone(), s.upload.clone())
            };
            let mut next = parts.get(k + 1).map(|p| (k + 1, *p));
            let chunks = (part.len() / CHUNK_LEN) as u64;
            stack.commit_runs(chunks, MAX_SUBTREE, domain, |offset, n, first, out| {
                let read =
                    self.enqueue_subtrees(be, &dev, offset, n, counter_base + first, domain, uploaded.as_ref(), prof)?;
                // The next segment's copy and upload overlap this one's kernels.
                if let Some((j, p)) = next.take() {
                    self.upload(j, p, prof)?;
                }
                read.wait_for().map_err(|e| self.err("waiting for the kernels", e))?;
                self.take_pieces(n, out);
                Ok(())
            })?;
        }
        Ok(())
    }

    /// Copies segment `k` into its slot's staging buffer and enqueues its upload.
    fn upload(&mut self, k: usize, part: &[u8], prof: &mut Option<&mut Prof>) -> Result<()> {
        let device = self.device;
        let stream = self.stream.as_mut().expect("ensured by the caller");
        let slot = &mut stream.slots[k % 2];
        if let Some(ev) = slot.upload.take() {
            // The slot's previous upload finished long ago (its kernels ran); make sure anyway
            // before overwriting its staging memory.
            ev.wait_for().map_err(|e| cl_err(device, "waiting for an upload", e))?;
        }
        // SAFETY: the mapped region is `stream.seg >= part.len()` bytes of host memory, and no
        // command reads it now (its last upload is complete).
        let staging = unsafe { slot.map.0.as_slice_mut(part.len()) };
        copy_parallel(part, staging);
        let mut ev = Event::null();
        // SAFETY: a non-blocking write from the staging memory, which stays mapped and untouched
        // until this event completes (waited for above before the next copy, and by `quiesce`
        // or the kernels before the worker goes away).
        unsafe {
            core::enqueue_write_buffer(&self.transfer, &slot.device, false, 0, &*staging, None::<&Event>, Some(&mut ev))
        }
        .map_err(|e| cl_err(device, "uploading a segment", e))?;
        core::flush(&self.transfer).map_err(|e| cl_err(device, "flushing the queue", e))?;
        Prof::push(prof, Stage::Upload, &ev);
        slot.upload = Some(ev);
        Ok(())
    }
}
