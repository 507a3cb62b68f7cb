//! A worker: what one call in flight needs of its own (queues, kernel objects, scratch buffers),
//! and the dispatch sequence that turns a run of chunks on the device into subtree CVs.

use super::stream::StreamBuffers;
use super::{cl_err, OpenClBackend, DIRECT_MAX};
use crate::backend::{Timings, MAX_SUBTREE};
use crate::compress::{Cv, CHUNK_LEN};
use crate::device::Device;
use crate::error::Result;
use crate::tree::{CvStack, Domain};
use ocl::core::{self, ArgVal, CommandQueue, Event, Kernel, Mem, MemFlags};
use std::time::Duration;

/// Slots for subtree CVs: one per possible bit of a chunk count.
const PIECE_SLOTS: usize = 64;
/// The device's subtree CVs, then room for an input's last chunk, fetched in the same read.
const PIECES_BYTES: usize = PIECE_SLOTS * 32;
const RESULT_BYTES: usize = PIECES_BYTES + CHUNK_LEN;

/// A run of full chunks in a device buffer.
pub(crate) struct Run<'a> {
    pub data: &'a Mem,
    /// Where the run starts, in chunks from the start of `data`.
    pub chunk_offset: u64,
    /// How many chunks.
    pub n: u64,
    /// The chunk counter of its first chunk.
    pub counter: u64,
    /// The key words and flags.
    pub domain: Domain,
}

/// The events of one enqueued dispatch sequence.
pub(crate) struct Enqueued {
    /// The only command that reads the input buffer.
    pub chunk_kernel: Event,
    /// The read of the results: complete means everything is.
    pub read: Event,
}

/// What a profiling event measured.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    Upload,
    Kernel,
    Download,
}

/// Profiling events collected during one call, summed into [`Timings`] once they are complete.
#[derive(Default)]
pub(crate) struct Prof {
    events: Vec<(Stage, Event)>,
}

impl Prof {
    pub fn push(prof: &mut Option<&mut Prof>, stage: Stage, event: &Event) {
        if let Some(p) = prof {
            p.events.push((stage, event.clone()));
        }
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn truncate(&mut self, len: usize) {
        self.events.truncate(len);
    }

    /// Upload, kernel and download time, each summed over its commands. Only call once every
    /// event is complete.
    pub fn timings(&self) -> Timings {
        let mut t = Timings::default();
        for (stage, ev) in &self.events {
            let ns = |what| match core::get_event_profiling_info(ev, what) {
                Ok(
                    core::ProfilingInfoResult::Start(v)
                    | core::ProfilingInfoResult::End(v)
                    | core::ProfilingInfoResult::Queued(v)
                    | core::ProfilingInfoResult::Submit(v),
                ) => Some(v),
                _ => None,
            };
            if let (Some(a), Some(b)) = (ns(core::ProfilingInfo::Start), ns(core::ProfilingInfo::End)) {
                let d = Duration::from_nanos(b.saturating_sub(a));
                match stage {
                    Stage::Upload => t.upload += d,
                    Stage::Kernel => t.kernel += d,
                    Stage::Download => t.download += d,
                }
            }
        }
        t
    }
}

/// A device buffer that grows on demand.
struct Scratch {
    mem: Option<Mem>,
    bytes: usize,
    flags: MemFlags,
}

impl Scratch {
    fn new(flags: MemFlags) -> Scratch {
        Scratch { mem: None, bytes: 0, flags }
    }

    fn get(&mut self, device: Device, context: &core::Context, bytes: usize) -> Result<Mem> {
        if self.bytes < bytes || self.mem.is_none() {
            let size = bytes.next_power_of_two().max(1024);
            // SAFETY: a plain allocation with no host pointer.
            let mem = unsafe { core::create_buffer::<_, u8>(context, self.flags, size, None) }
                .map_err(|e| cl_err(device, "allocating a device buffer", e))?;
            self.mem = Some(mem);
            self.bytes = size;
        }
        Ok(self.mem.clone().expect("allocated above"))
    }
}

pub(crate) struct Worker {
    pub device: Device,
    pub context: core::Context,
    /// Kernels, reads of results, and the direct path's writes.
    pub compute: CommandQueue,
    /// Uploads of streamed segments, so that they overlap the kernels.
    pub transfer: CommandQueue,
    chunk: Kernel,
    parent: Kernel,
    blocks: Kernel,
    levels: [Scratch; 2],
    pieces: Mem,
    /// Two host buffers for results, so that a streamed segment's results can arrive while the
    /// previous one's are read.
    host_pieces: Box<[[u8; RESULT_BYTES]; 2]>,
    input: Scratch,
    output: Scratch,
    pub stream: Option<StreamBuffers>,
    /// The segment size this worker streams with: the backend's, or less after running short of
    /// device memory.
    pub segment_cap: usize,
}

impl Worker {
    pub fn new(be: &OpenClBackend) -> Result<Worker> {
        let device = be.info.device;
        let context = be.context.as_core().clone();
        let props = Some(core::CommandQueueProperties::PROFILING_ENABLE);
        let compute = core::create_command_queue(&context, be.device_id, props)
            .map_err(|e| cl_err(device, "creating a command queue", e))?;
        let transfer = core::create_command_queue(&context, be.device_id, props)
            .map_err(|e| cl_err(device, "creating a command queue", e))?;
        let kernel =
            |name: &str| core::create_kernel(&be.program, name).map_err(|e| cl_err(device, "creating a kernel", e));
        // SAFETY: a plain allocation with no host pointer.
        let pieces = unsafe { core::create_buffer::<_, u8>(&context, MemFlags::READ_WRITE, RESULT_BYTES, None) }
            .map_err(|e| cl_err(device, "allocating a device buffer", e))?;
        Ok(Worker {
            device,
            chunk: kernel("chunk_cvs")?,
            parent: kernel("parent_cvs")?,
            blocks: kernel("hash_blocks")?,
            context,
            compute,
            transfer,
            levels: [Scratch::new(MemFlags::READ_WRITE), Scratch::new(MemFlags::READ_WRITE)],
            pieces,
            host_pieces: Box::new([[0; RESULT_BYTES]; 2]),
            input: Scratch::new(MemFlags::READ_ONLY),
            output: Scratch::new(MemFlags::WRITE_ONLY),
            stream: None,
            segment_cap: be.segment_bytes,
        })
    }

    /// Waits for everything this worker enqueued, ignoring errors: after a failure, before its
    /// buffers go away.
    pub fn quiesce(&self) {
        let _ = core::finish(&self.transfer);
        let _ = core::finish(&self.compute);
    }

    pub fn err(&self, what: &str, e: ocl::core::Error) -> crate::error::Error {
        cl_err(self.device, what, e)
    }

    /// Enqueues the dispatches that hash `run.n >= 1` full chunks lying `run.chunk_offset` chunks
    /// into `run.data`, the first with chunk counter `run.counter`, after `wait`; then one read of
    /// the subtree CVs (and, with `tail`, of that many bytes of `run.data` from that offset: the
    /// input's last chunk) into host buffer `slot`. Once the returned read event is complete,
    /// [`take_pieces`](Self::take_pieces) and [`tail`](Self::tail) give the results.
    ///
    /// Dispatch 1 (`chunk_cvs`) reduces each work-group's chunks; each further one (`parent_cvs`)
    /// reduces the previous one's group CVs, until one CV or none is left (see shaders/blake3.cl).
    pub fn enqueue_subtrees(
        &mut self,
        be: &OpenClBackend,
        run: Run<'_>,
        wait: Option<&Event>,
        slot: usize,
        tail: Option<(usize, usize)>,
        prof: &mut Option<&mut Prof>,
    ) -> Result<Enqueued> {
        let Run { data, chunk_offset, n, counter, domain } = run;
        debug_assert!(n >= 1 && slot < 2);
        let w1 = be.config.chunk_wg as u64;
        let w2 = be.config.parent_wg as u64;
        let q1 = n / w1;
        let level0 = self.levels[0].get(self.device, &self.context, (q1.max(1) * 32) as usize)?;
        let level1 = self.levels[1].get(self.device, &self.context, ((q1 / w2).max(1) * 32) as usize)?;
        let key = domain.key;
        let flags = domain.flags;
        let device = self.device;
        let err = move |what: &str, e| cl_err(device, what, e);
        // SAFETY (key argument): `uint8` is 32 bytes, as `key` is; the value is copied at once.
        let key_arg = unsafe { ArgVal::from_raw(32, key.as_ptr().cast(), false) };
        let k = &self.chunk;
        let set = |i, v| core::set_kernel_arg(k, i, v);
        set(0, ArgVal::mem(data))
            .and_then(|_| set(1, ArgVal::scalar(&chunk_offset)))
            .and_then(|_| set(2, ArgVal::scalar(&n)))
            .and_then(|_| set(3, ArgVal::scalar(&counter)))
            .and_then(|_| set(4, key_arg))
            .and_then(|_| set(5, ArgVal::scalar(&flags)))
            .and_then(|_| set(6, ArgVal::mem(&level0)))
            .and_then(|_| set(7, ArgVal::mem(&self.pieces)))
            .map_err(|e| err("setting kernel arguments", e))?;
        let groups = n.div_ceil(w1);
        let mut chunk_kernel = Event::null();
        // SAFETY: every argument is set, the buffers outlive the command (OpenCL retains them),
        // and the work-group size is the one the kernel was compiled for.
        unsafe {
            core::enqueue_kernel(
                &self.compute,
                &self.chunk,
                1,
                None,
                &[(groups * w1) as usize, 1, 1],
                Some([w1 as usize, 1, 1]),
                wait,
                Some(&mut chunk_kernel),
            )
        }
        .map_err(|e| err("running the chunk kernel", e))?;
        Prof::push(prof, Stage::Kernel, &chunk_kernel);
        // Let the device start while the rest is enqueued.
        core::flush(&self.compute).map_err(|e| err("flushing the queue", e))?;

        let mut count = q1;
        let mut level = w1.trailing_zeros();
        let mut bufs = [level0, level1];
        while count > 1 {
            let p = &self.parent;
            let set = |i, v| core::set_kernel_arg(p, i, v);
            // SAFETY: as above.
            let key_arg = unsafe { ArgVal::from_raw(32, key.as_ptr().cast(), false) };
            set(0, ArgVal::mem(&bufs[0]))
                .and_then(|_| set(1, ArgVal::scalar(&count)))
                .and_then(|_| set(2, key_arg))
                .and_then(|_| set(3, ArgVal::scalar(&flags)))
                .and_then(|_| set(4, ArgVal::mem(&bufs[1])))
                .and_then(|_| set(5, ArgVal::mem(&self.pieces)))
                .and_then(|_| set(6, ArgVal::scalar(&level)))
                .map_err(|e| err("setting kernel arguments", e))?;
            let groups = count.div_ceil(w2);
            let mut ev = Event::null();
            // SAFETY: as above.
            unsafe {
                core::enqueue_kernel(
                    &self.compute,
                    &self.parent,
                    1,
                    None,
                    &[(groups * w2) as usize, 1, 1],
                    Some([w2 as usize, 1, 1]),
                    None::<&Event>,
                    Some(&mut ev),
                )
            }
            .map_err(|e| err("running the parent kernel", e))?;
            Prof::push(prof, Stage::Kernel, &ev);
            count /= w2;
            level += w2.trailing_zeros();
            bufs.swap(0, 1);
        }
        if count == 1 {
            // One full group's CV is the subtree of the top set bit: move it to its slot.
            core::enqueue_copy_buffer::<u8, _, _, _>(
                &self.compute,
                &bufs[0],
                &self.pieces,
                0,
                level as usize * 32,
                32,
                None::<&Event>,
                None::<&mut Event>,
            )
            .map_err(|e| err("copying a subtree CV", e))?;
        }
        let mut read_len = PIECES_BYTES;
        if let Some((offset, len)) = tail {
            debug_assert!(len <= CHUNK_LEN);
            core::enqueue_copy_buffer::<u8, _, _, _>(
                &self.compute,
                data,
                &self.pieces,
                offset,
                PIECES_BYTES,
                len,
                None::<&Event>,
                None::<&mut Event>,
            )
            .map_err(|e| err("copying the last chunk", e))?;
            read_len += len;
        }
        let mut read = Event::null();
        // SAFETY: the host buffer lives in this worker, which waits for the read (or finishes its
        // queues on failure) before the buffer can go away.
        unsafe {
            core::enqueue_read_buffer(
                &self.compute,
                &self.pieces,
                false,
                0,
                &mut self.host_pieces[slot][..read_len],
                None::<&Event>,
                Some(&mut read),
            )
        }
        .map_err(|e| err("reading subtree CVs", e))?;
        Prof::push(prof, Stage::Download, &read);
        core::flush(&self.compute).map_err(|e| err("flushing the queue", e))?;
        Ok(Enqueued { chunk_kernel, read })
    }

    /// The subtree CVs of the `n` chunks last dispatched into host buffer `slot`, largest first:
    /// one per set bit of `n`. Only once that dispatch's read event is complete.
    pub fn take_pieces(&self, slot: usize, n: u64, out: &mut [Cv]) {
        let host = &self.host_pieces[slot];
        for (cv, b) in out.iter_mut().zip((0..PIECE_SLOTS).rev().filter(|b| n >> b & 1 == 1)) {
            // The kernels store little-endian words: the CV's bytes as they are.
            cv.copy_from_slice(&host[b * 32..b * 32 + 32]);
        }
    }

    /// The `len` bytes a dispatch with a `tail` fetched into host buffer `slot`.
    pub fn tail(&self, slot: usize, len: usize) -> &[u8] {
        &self.host_pieces[slot][PIECES_BYTES..PIECES_BYTES + len]
    }

    /// Waits for a dispatch's results.
    pub fn wait(&self, ev: &Event) -> Result<()> {
        ev.wait_for().map_err(|e| self.err("waiting for the kernels", e))
    }

    /// Hashes full chunks in host memory that continue `stack`'s input, the first with chunk
    /// counter `counter_base + stack.chunks()`: small inputs in one write from the caller's
    /// memory, larger ones streamed in segments through pinned staging buffers.
    pub fn commit_host(
        &mut self,
        be: &OpenClBackend,
        stack: &mut CvStack,
        counter_base: u64,
        input: &[u8],
        domain: Domain,
        prof: Option<&mut Prof>,
    ) -> Result<()> {
        let mut prof = prof;
        if input.is_empty() {
            return Ok(());
        }
        if input.len() <= DIRECT_MAX.min(be.segment_bytes) {
            let buf = self.input.get(self.device, &self.context, input.len())?;
            let mut ev = Event::null();
            // SAFETY: a blocking write: `input` is read before the call returns.
            unsafe { core::enqueue_write_buffer(&self.compute, &buf, true, 0, input, None::<&Event>, Some(&mut ev)) }
                .map_err(|e| self.err("uploading input", e))?;
            Prof::push(&mut prof, Stage::Upload, &ev);
            let chunks = (input.len() / CHUNK_LEN) as u64;
            return stack.commit_runs(chunks, MAX_SUBTREE, domain, |offset, n, first, out| {
                let run = Run { data: &buf, chunk_offset: offset, n, counter: counter_base + first, domain };
                let done = self.enqueue_subtrees(be, run, None, 0, None, &mut prof)?;
                self.wait(&done.read)?;
                self.take_pieces(0, n, out);
                Ok(())
            });
        }
        self.stream(be, stack, counter_base, input, domain, prof)
    }

    /// The subtree CVs of `input`'s full chunks (the first with chunk counter `counter`),
    /// uploaded with one blocking write from the caller's memory.
    pub fn hash_run_direct(
        &mut self,
        be: &OpenClBackend,
        input: &[u8],
        counter: u64,
        domain: Domain,
        out: &mut [Cv],
    ) -> Result<()> {
        let buf = self.input.get(self.device, &self.context, input.len())?;
        // SAFETY: a blocking write: `input` is read before the call returns.
        unsafe { core::enqueue_write_buffer(&self.compute, &buf, true, 0, input, None::<&Event>, None::<&mut Event>) }
            .map_err(|e| self.err("uploading input", e))?;
        let run = Run { data: &buf, chunk_offset: 0, n: (input.len() / CHUNK_LEN) as u64, counter, domain };
        let done = self.enqueue_subtrees(be, run, None, 0, None, &mut None)?;
        self.wait(&done.read)?;
        self.take_pieces(0, (input.len() / CHUNK_LEN) as u64, out);
        Ok(())
    }

    /// Hashes 64-byte blocks as one-block messages, in dispatches of at most 2^20 blocks.
    pub fn hash_blocks(&mut self, _be: &OpenClBackend, blocks: &[[u8; 64]], out: &mut [[u8; 32]]) -> Result<()> {
        const PER_DISPATCH: usize = 1 << 20;
        for (src, dst) in blocks.chunks(PER_DISPATCH).zip(out.chunks_mut(PER_DISPATCH)) {
            let input = self.input.get(self.device, &self.context, src.len() * 64)?;
            let output = self.output.get(self.device, &self.context, src.len() * 32)?;
            let n = src.len() as u64;
            let k = &self.blocks;
            let set = |i, v| core::set_kernel_arg(k, i, v);
            set(0, ArgVal::mem(&input))
                .and_then(|_| set(1, ArgVal::scalar(&n)))
                .and_then(|_| set(2, ArgVal::mem(&output)))
                .map_err(|e| self.err("setting kernel arguments", e))?;
            const WG: usize = 64;
            // SAFETY: a blocking write and a blocking read of caller memory; the kernel's
            // arguments are all set and it checks its index against `n`.
            unsafe {
                core::enqueue_write_buffer(
                    &self.compute,
                    &input,
                    true,
                    0,
                    src.as_flattened(),
                    None::<&Event>,
                    None::<&mut Event>,
                )
                .map_err(|e| self.err("uploading blocks", e))?;
                core::enqueue_kernel(
                    &self.compute,
                    &self.blocks,
                    1,
                    None,
                    &[src.len().div_ceil(WG) * WG, 1, 1],
                    Some([WG, 1, 1]),
                    None::<&Event>,
                    None::<&mut Event>,
                )
                .map_err(|e| self.err("running the block kernel", e))?;
                core::enqueue_read_buffer(
                    &self.compute,
                    &output,
                    true,
                    0,
                    dst.as_flattened_mut(),
                    None::<&Event>,
                    None::<&mut Event>,
                )
                .map_err(|e| self.err("reading hashes", e))?;
            }
        }
        Ok(())
    }
}
