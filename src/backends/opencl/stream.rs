//! Host inputs larger than the direct path stream through the device in segments: a few device
//! buffers (`OpenClOptions::staging_slots`), each fed from a pinned staging buffer
//! (`CL_MEM_ALLOC_HOST_PTR`, mapped once) on the worker's transfer queue, so that the CPU's copy
//! into staging memory, the upload and the hashing of different segments overlap (the pipeline
//! and the merge of the segments' CVs are `gpu::segments`, shared with the wgpu backend).

use super::backend::OpenClBackend;
use super::errors::cl_err;
use super::profile::{Prof, Stage};
use super::staging::StreamBuffers;
use super::worker::{Enqueued, Run, Worker};
use crate::backends::gpu::segments::{self, plan_segments, SegmentSlots};
use crate::core::compress::Cv;
use crate::core::constants::CHUNK_LEN;
use crate::tree::{merge_segments, Domain, Error, Result};
use ocl::core::{self, Event, Mem, MemFlags};
use rayon::prelude::*;

/// Below this a worker short of memory gives up rather than halve its segments again.
const MIN_FALLBACK_SEGMENT: usize = 64 << 10;

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

impl Worker {
    /// The subtree CVs of `input` (full chunks, the first with chunk counter `first_chunk`,
    /// aligned as `Backend::chunk_subtrees_capped` requires), none larger than `max_chunks`,
    /// into `out`, streamed in segments of at most the worker's segment size, the first two 1/32
    /// of that (so the pipeline fills after a small first copy); a segment's passes stop at the
    /// cap's level and bring back every capped subtree's CV (`gpu::capped`). A device
    /// short of memory gets smaller segments (the call starts again); below 64 KiB it is an
    /// error.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn stream(
        &mut self,
        be: &OpenClBackend,
        input: &[u8],
        first_chunk: u64,
        max_chunks: u64,
        domain: Domain,
        out: &mut [Cv],
        prof: &mut Option<&mut Prof>,
    ) -> Result<()> {
        let prof_len = prof.as_ref().map_or(0, |p| p.len());
        let min = MIN_FALLBACK_SEGMENT.min(be.dev.segment_bytes);
        let n = (input.len() / CHUNK_LEN) as u64;
        // A wrapped segment is a device allocation too: within the limits, or staged (which
        // shrinks its segments to fit, or says why it cannot).
        let wrap_fits = self.segment_cap as u64 <= be.dev.max_alloc_bytes.min(be.dev.limits.max_alloc);
        if wrap_fits && be.wraps_in_place() {
            let seg = (self.segment_cap / CHUNK_LEN) as u64;
            // Segments of one size: no CPU copy has to come first, so there is nothing to ramp up.
            let plan = plan_segments(n, seg, seg);
            let mut slots =
                HostPtrSlots { w: &mut *self, be, domain, max_chunks, prof: &mut *prof, bufs: vec![None, None] };
            match segments::stream(&mut slots, input, &plan, first_chunk) {
                Ok(done) => return merge_segments(&done, max_chunks, domain, out),
                // The driver could not wrap or place the caller's memory: staging, which also
                // halves its segments while memory is short, takes the input.
                Err(Error::OutOfMemory { .. }) => {
                    drop(slots);
                    if let Some(p) = prof.as_deref_mut() {
                        p.truncate(prof_len);
                    }
                }
                Err(e) => return Err(e),
            }
        }
        loop {
            self.ensure_stream(be, min)?;
            let seg_bytes = self.segment_cap;
            let seg = (seg_bytes / CHUNK_LEN) as u64;
            let plan = plan_segments(n, seg, (seg / 32).max(1));
            let mut slots = Slots { w: &mut *self, be, domain, max_chunks, prof: &mut *prof };
            let streamed = segments::stream(&mut slots, input, &plan, first_chunk);
            match streamed {
                Ok(done) => return merge_segments(&done, max_chunks, domain, out),
                Err(Error::OutOfMemory { .. }) if seg_bytes / 2 >= min => {
                    self.quiesce();
                    self.stream = None;
                    self.segment_cap = seg_bytes / 2;
                    if let Some(p) = prof.as_deref_mut() {
                        p.truncate(prof_len);
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Makes sure this worker has segment buffers, halving the segment size while the device
    /// cannot hold them.
    fn ensure_stream(&mut self, be: &OpenClBackend, min: usize) -> Result<()> {
        if self.stream.as_ref().is_some_and(|s| s.seg == self.segment_cap && s.slots.len() == be.dev.staging_slots) {
            return Ok(());
        }
        self.stream = None;
        loop {
            match StreamBuffers::new(self.device, &self.context, &self.transfer, &be.dev, self.segment_cap) {
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

    /// Enqueues the kernels for the segment in `slot`, once its upload is done, into host
    /// result slot `slot`.
    #[allow(clippy::too_many_arguments)]
    fn dispatch_segment(
        &mut self,
        be: &OpenClBackend,
        slot: usize,
        n: u64,
        counter: u64,
        domain: Domain,
        max_chunks: u64,
        prof: &mut Option<&mut Prof>,
    ) -> Result<Enqueued> {
        let (dev, uploaded) = {
            let s = &self.stream.as_ref().expect("ensured").slots[slot];
            (s.device.clone(), s.upload.clone())
        };
        let run = Run { data: &dev, chunk_offset: 0, n, counter, domain, max_chunks, capped_to: None };
        let done = self.enqueue_subtrees(&be.dev, run, uploaded.as_ref(), slot, None, prof)?;
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

/// A worker's segment buffers as the shared pipeline's slots: `fill` copies into pinned staging
/// memory and enqueues the upload on the transfer queue, `dispatch` the kernels on the compute
/// queue once that upload is done, `collect` waits for the read of the pieces.
struct Slots<'a, 'p> {
    w: &'a mut Worker,
    be: &'a OpenClBackend,
    domain: Domain,
    max_chunks: u64,
    prof: &'a mut Option<&'p mut Prof>,
}

impl SegmentSlots for Slots<'_, '_> {
    type Pending = Enqueued;

    fn slots(&self) -> usize {
        self.w.stream.as_ref().map_or(1, |s| s.slots.len())
    }

    fn fill(&mut self, slot: usize, bytes: &[u8]) -> Result<()> {
        self.w.upload(slot, bytes, self.be.dev.streaming_stores, self.prof)
    }

    fn dispatch(&mut self, slot: usize, chunks: u64, counter: u64) -> Result<Enqueued> {
        self.w.dispatch_segment(self.be, slot, chunks, counter, self.domain, self.max_chunks, self.prof)
    }

    fn collect(&mut self, slot: usize, pending: Enqueued, chunks: u64) -> Result<Vec<Cv>> {
        self.w.wait(&pending.read)?;
        Ok(self.w.pieces(slot, chunks, self.max_chunks))
    }
}

/// The caller's memory as the device's input, segment by segment: each segment is wrapped in a
/// buffer over the caller's pages (`CL_MEM_USE_HOST_PTR`), which the driver reads (or copies
/// with its own DMA) itself, so that no CPU thread copies a byte (see
/// `OpenClOptions::host_ptr_uploads`). A segment's buffer is released when the slot takes the
/// next one (the driver keeps it until the commands that use it are done); dropping the slots
/// waits for every command, so no command reads the caller's memory after the call returns.
struct HostPtrSlots<'a, 'p> {
    w: &'a mut Worker,
    be: &'a OpenClBackend,
    domain: Domain,
    max_chunks: u64,
    prof: &'a mut Option<&'p mut Prof>,
    bufs: Vec<Option<Mem>>,
}

impl Drop for HostPtrSlots<'_, '_> {
    fn drop(&mut self) {
        self.w.quiesce();
    }
}

impl SegmentSlots for HostPtrSlots<'_, '_> {
    type Pending = Enqueued;

    fn slots(&self) -> usize {
        self.bufs.len()
    }

    fn fill(&mut self, slot: usize, bytes: &[u8]) -> Result<()> {
        // SAFETY: the buffer reads `bytes` (never writes: READ_ONLY, and kernels only read their
        // input), which outlive it: it is released at the latest when these slots are dropped,
        // after `quiesce` has waited for every command that uses it, and `bytes` is borrowed from
        // the caller's input for the whole call.
        let mem = unsafe {
            core::create_buffer(&self.w.context, MemFlags::READ_ONLY | MemFlags::USE_HOST_PTR, bytes.len(), Some(bytes))
        }
        .map_err(|e| cl_err(self.w.device, "wrapping host memory in a buffer", e))?;
        self.bufs[slot] = Some(mem);
        Ok(())
    }

    fn dispatch(&mut self, slot: usize, chunks: u64, counter: u64) -> Result<Enqueued> {
        let mem =
            self.bufs[slot].clone().ok_or_else(|| Error::InvalidInput("internal: a slot without input".into()))?;
        let run = Run {
            data: &mem,
            chunk_offset: 0,
            n: chunks,
            counter,
            domain: self.domain,
            max_chunks: self.max_chunks,
            capped_to: None,
        };
        self.w.enqueue_subtrees(&self.be.dev, run, None, slot, None, self.prof)
    }

    fn collect(&mut self, slot: usize, pending: Enqueued, chunks: u64) -> Result<Vec<Cv>> {
        self.w.wait(&pending.read)?;
        Ok(self.w.pieces(slot, chunks, self.max_chunks))
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
