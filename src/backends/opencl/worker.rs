//! A worker: what one call in flight needs of its own (queues, kernel objects, scratch buffers),
//! and the dispatch sequence that turns a run of chunks on the device into subtree CVs.

use super::device::OpenDevice;
use super::errors::cl_err;
use super::profile::{Prof, Stage};
use super::staging::StreamBuffers;
use crate::backends::gpu::capped::{cap_level, capped_cvs, capped_passes};
use crate::backends::gpu::layout::TAIL_AT;
use crate::backends::gpu::pieces::{pieces_of, read_pieces};
use crate::core::compress::Cv;
use crate::core::constants::CHUNK_LEN;
use crate::tree::{Device, Domain, Error, Result};
use ocl::core::{self, ArgVal, CommandQueue, Event, Kernel, MapFlags, Mem, MemFlags, MemMap};
use std::time::{Duration, Instant};

/// The longest a waiting host polls a command's status before it blocks in the driver.
const SPIN_MAX: Duration = Duration::from_millis(50);

/// The device's subtree CVs (the pieces), then room for an input's last chunk at `TAIL_AT`,
/// fetched in the same read.
const RESULT_BYTES: usize = TAIL_AT + CHUNK_LEN;
/// Host result slots: one per streaming slot in flight (at most this many staging slots).
pub(crate) const RESULT_SLOTS: usize = 4;

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
    /// No subtree larger than this (a power of two; `MAX_SUBTREE` for no cap).
    pub max_chunks: u64,
    /// Where a cap that splits the run leaves its level-k CVs: copied into this buffer at this
    /// byte, on the device, instead of read back (`None`: read back, see [`Worker::pieces`]).
    pub capped_to: Option<(&'a Mem, u64)>,
}

/// The events of one enqueued dispatch sequence.
pub(crate) struct Enqueued {
    /// The only command that reads the input buffer (where asked for: an event costs the driver
    /// time on every call).
    pub chunk_kernel: Option<Event>,
    /// The read of the results: complete means everything is.
    pub read: Event,
}

/// What one run's dispatches left, before anything is read back.
pub(crate) struct Passes {
    /// The chunk kernel's event, where asked for.
    pub chunk_kernel: Option<Event>,
    /// A cap that splits the run and has no `capped_to`: the buffer holding its level-k CVs
    /// from byte 0, and their count.
    pub capped: Option<(Mem, u64)>,
}

/// A device buffer that grows on demand.
pub(crate) struct Scratch {
    mem: Option<Mem>,
    bytes: usize,
    flags: MemFlags,
}

impl Scratch {
    fn new(flags: MemFlags) -> Scratch {
        Scratch { mem: None, bytes: 0, flags }
    }

    /// Lets a buffer over `max` bytes go (after a large call), so that an idle worker does not
    /// hold on to it.
    pub fn trim(&mut self, max: usize) {
        if self.bytes > max {
            self.mem = None;
            self.bytes = 0;
        }
    }

    pub fn get(&mut self, device: Device, context: &core::Context, bytes: usize) -> Result<Mem> {
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

/// Host memory that results are read into: [`RESULT_SLOTS`] slots of [`RESULT_BYTES`].
///
/// Pinned where the driver gives it (a `CL_MEM_ALLOC_HOST_PTR` buffer, mapped once): NVIDIA's
/// driver then copies straight into it, and a read is complete when its copy is. A read into
/// pageable memory goes through the driver's own staging: one of its threads copies the data on
/// and only then marks the read complete, tens to hundreds of microseconds after the copy's end,
/// more the longer the kernels before it ran (docs/performance.md).
enum HostResults {
    Pinned(PinnedResults),
    Pageable(Box<[[u8; RESULT_BYTES]; RESULT_SLOTS]>),
}

/// A mapped `CL_MEM_ALLOC_HOST_PTR` buffer of [`RESULT_SLOTS`] result slots.
struct PinnedResults {
    mem: Mem,
    map: MemMap<u8>,
    /// The queue it was mapped on, to unmap it.
    queue: CommandQueue,
}

// SAFETY: the mapping points into host memory that the buffer owns for as long as the
// `PinnedResults` lives; only the worker holding it (one thread at a time, through the pool)
// reads or writes it, and the device writes it only through reads that worker enqueued and waits
// for.
unsafe impl Send for PinnedResults {}

impl Drop for PinnedResults {
    fn drop(&mut self) {
        let _ = core::enqueue_unmap_mem_object(&self.queue, &self.mem, &self.map, None::<&Event>, None::<&mut Event>);
        let _ = core::finish(&self.queue);
    }
}

impl HostResults {
    fn pageable() -> HostResults {
        HostResults::Pageable(Box::new([[0; RESULT_BYTES]; RESULT_SLOTS]))
    }

    /// Pinned slots, or `None` where the driver has no such memory to give.
    fn pinned(context: &core::Context, queue: &CommandQueue) -> Option<HostResults> {
        let len = RESULT_SLOTS * RESULT_BYTES;
        // SAFETY: a plain allocation with no host pointer.
        let mem = unsafe {
            core::create_buffer::<_, u8>(context, MemFlags::READ_WRITE | MemFlags::ALLOC_HOST_PTR, len, None)
        }
        .ok()?;
        // SAFETY: a blocking map of the whole buffer; it stays mapped until `drop` unmaps it.
        let map = unsafe {
            core::enqueue_map_buffer::<u8, _, _, _>(
                queue,
                &mem,
                true,
                MapFlags::READ | MapFlags::WRITE,
                0,
                len,
                None::<&Event>,
                None::<&mut Event>,
            )
        }
        .ok()?;
        Some(HostResults::Pinned(PinnedResults { mem, map, queue: queue.clone() }))
    }

    fn slot(&self, slot: usize) -> &[u8] {
        match self {
            // SAFETY: the mapping is RESULT_SLOTS * RESULT_BYTES bytes long and lives as long as
            // `self`.
            HostResults::Pinned(p) => unsafe {
                &p.map.as_slice(RESULT_SLOTS * RESULT_BYTES)[slot * RESULT_BYTES..][..RESULT_BYTES]
            },
            HostResults::Pageable(b) => &b[slot][..],
        }
    }

    fn slot_mut(&mut self, slot: usize) -> &mut [u8] {
        match self {
            // SAFETY: as above, and `&mut self` makes the borrow unique.
            HostResults::Pinned(p) => unsafe {
                &mut p.map.as_slice_mut(RESULT_SLOTS * RESULT_BYTES)[slot * RESULT_BYTES..][..RESULT_BYTES]
            },
            HostResults::Pageable(b) => &mut b[slot][..],
        }
    }
}

pub(crate) struct Worker {
    pub device: Device,
    pub context: core::Context,
    /// Kernels, reads of results, and the direct path's writes.
    pub compute: CommandQueue,
    /// Uploads of streamed segments, so that they overlap the kernels.
    pub transfer: CommandQueue,
    /// The backend's own queue, where calls on device-resident data run (after the commands
    /// its user enqueued there).
    pub main: CommandQueue,
    chunk: Kernel,
    parent: Kernel,
    blocks: Kernel,
    pub merkle: Kernel,
    pub bao_place: Kernel,
    pub bao_fold: Kernel,
    pub many_one: Kernel,
    pub many_chunks: Kernel,
    pub many_merge: Kernel,
    pub levels: [Scratch; 2],
    /// A bao outboard's group CVs, inner nodes (and the root's pair) and (for host memory)
    /// parents.
    pub bao: [Scratch; 3],
    pieces: Mem,
    /// Host buffers for results, one per streaming slot, so that a streamed segment's results
    /// can arrive while earlier ones' are read.
    host_pieces: HostResults,
    /// Per slot, the level-k CVs of a capped dispatch (see `gpu::capped`), read beside its pieces.
    host_capped: [Vec<u8>; RESULT_SLOTS],
    pub input: Scratch,
    pub output: Scratch,
    /// Poll events rather than block on them (`OpenClOptions::spin_wait`).
    spin: bool,
    /// Work-items per group of the `many_*` kernels.
    pub many_wg: usize,
    pub stream: Option<StreamBuffers>,
    /// The segment size this worker streams with: the backend's, or less after running short of
    /// device memory.
    pub segment_cap: usize,
}

impl Drop for Worker {
    /// A worker goes (a call failed with it, or the backend is dropped) only once its queues
    /// are drained: nothing may still be writing into its buffers.
    fn drop(&mut self) {
        self.quiesce();
    }
}

impl Worker {
    /// A worker on `be`'s device: its own queues, kernel objects and result buffers.
    pub fn new(be: &OpenDevice) -> Result<Worker> {
        let device = be.info.device;
        let context = be.context.as_core().clone();
        let props = Some(core::CommandQueueProperties::PROFILING_ENABLE);
        let compute = core::create_command_queue(&context, be.device_id, props)
            .map_err(|e| cl_err(device, "creating a command queue", e))?;
        let transfer = core::create_command_queue(&context, be.device_id, props)
            .map_err(|e| cl_err(device, "creating a command queue", e))?;
        let kernel =
            |name: &str| core::create_kernel(&be.program, name).map_err(|e| cl_err(device, "creating a kernel", e));
        let host_pieces = if be.pinned_results {
            HostResults::pinned(&context, &transfer).unwrap_or_else(HostResults::pageable)
        } else {
            HostResults::pageable()
        };
        let many_one = kernel("many_one")?;
        let many_chunks = kernel("many_chunks")?;
        let many_merge = kernel("many_merge")?;
        // At most 256 work-items per group, and no more than the kernels allow.
        let mut many_wg = 256usize;
        for k in [&many_one, &many_chunks, &many_merge] {
            if let Ok(core::KernelWorkGroupInfoResult::WorkGroupSize(n)) =
                core::get_kernel_work_group_info(k, be.device_id, core::KernelWorkGroupInfo::WorkGroupSize)
            {
                many_wg = many_wg.min(n.max(1));
            }
        }
        let many_wg = 1 << many_wg.ilog2();
        // SAFETY: a plain allocation with no host pointer.
        let pieces = unsafe { core::create_buffer::<_, u8>(&context, MemFlags::READ_WRITE, RESULT_BYTES, None) }
            .map_err(|e| cl_err(device, "allocating a device buffer", e))?;
        Ok(Worker {
            device,
            chunk: kernel("chunk_cvs")?,
            parent: kernel("parent_cvs")?,
            blocks: kernel("hash_blocks")?,
            merkle: kernel("merkle_levels")?,
            bao_place: kernel("bao_place")?,
            bao_fold: kernel("bao_fold")?,
            many_one,
            many_chunks,
            many_merge,
            many_wg,
            spin: be.spin_wait,
            context,
            compute,
            transfer,
            main: be.queue.as_core().clone(),
            levels: [Scratch::new(MemFlags::READ_WRITE), Scratch::new(MemFlags::READ_WRITE)],
            bao: [
                Scratch::new(MemFlags::READ_WRITE),
                Scratch::new(MemFlags::READ_WRITE),
                Scratch::new(MemFlags::READ_WRITE),
            ],
            pieces,
            host_pieces,
            host_capped: Default::default(),
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
        let _ = core::finish(&self.main);
    }

    /// A driver error in this worker's words.
    pub fn err(&self, what: &str, e: ocl::core::Error) -> Error {
        cl_err(self.device, what, e)
    }

    /// Enqueues the dispatches that hash `run.n >= 1` full chunks lying `run.chunk_offset` chunks
    /// into `run.data`, the first with chunk counter `run.counter`, after `wait`; then one read of
    /// the subtree CVs (and, with `tail`, of that many bytes of `run.data` from that offset: the
    /// input's last chunk) into host buffer `slot`. Once the returned read event is complete,
    /// [`take_pieces`](Self::take_pieces) and [`tail`](Self::tail) give the results.
    ///
    /// Dispatch 1 (`chunk_cvs`) reduces each work-group's chunks by the configured levels; each
    /// further one (`parent_cvs`) reduces the previous one's CVs by a whole group's levels, until
    /// one CV or none is left (see shaders/blake3.cl). A cap of 2^k chunks that splits the run
    /// stops them at level k, and the level-k CVs come back too (`gpu::capped`).
    pub fn enqueue_subtrees(
        &mut self,
        be: &OpenDevice,
        run: Run<'_>,
        wait: Option<&Event>,
        slot: usize,
        tail: Option<(usize, usize)>,
        prof: &mut Option<&mut Prof>,
    ) -> Result<Enqueued> {
        let queue = self.compute.clone();
        self.enqueue_subtrees_on(&queue, be, run, wait, slot, tail, true, prof)
    }

    /// [`enqueue_subtrees`](Self::enqueue_subtrees) on `queue`, an in-order queue of the
    /// worker's context (the backend's own queue, for data its user wrote there); with
    /// `kernel_event`, the chunk kernel's event comes back too. Events are made only where
    /// someone waits on them or profiles: NVIDIA's driver spends microseconds on each.
    #[allow(clippy::too_many_arguments)]
    pub fn enqueue_subtrees_on(
        &mut self,
        queue: &CommandQueue,
        be: &OpenDevice,
        run: Run<'_>,
        wait: Option<&Event>,
        slot: usize,
        tail: Option<(usize, usize)>,
        kernel_event: bool,
        prof: &mut Option<&mut Prof>,
    ) -> Result<Enqueued> {
        debug_assert!(slot < RESULT_SLOTS);
        let tail_len = tail.map_or(0, |(_, len)| len);
        let capped_to = run.capped_to.is_some();
        let passes = self.enqueue_passes(queue, be, run, wait, tail, kernel_event, prof)?;
        let device = self.device;
        let err = move |what: &str, e| cl_err(device, what, e);
        if let (Some((top, count)), false) = (&passes.capped, capped_to) {
            // The level-k CVs, from the buffer the last dispatch wrote, ahead of the pieces' read
            // on the same in-order queue.
            let host = &mut self.host_capped[slot];
            host.resize((count * 32) as usize, 0);
            // SAFETY: as the read below; `host_capped[slot]` is resized only by the next dispatch
            // into this slot, after this one's results are taken.
            unsafe {
                core::enqueue_read_buffer(queue, top, false, 0, &mut host[..], None::<&Event>, None::<&mut Event>)
            }
            .map_err(|e| err("reading subtree CVs", e))?;
        }
        // A last dispatch with one full group wrote that group's CV (the subtree of the top set
        // bit) to its slot itself, and the chunk kernel copied the tail: one read brings all.
        let read_len = TAIL_AT + tail_len;
        let mut read = Event::null();
        // SAFETY: the host buffer lives in this worker, which waits for the read (or finishes its
        // queues on failure) before the buffer can go away.
        unsafe {
            core::enqueue_read_buffer(
                queue,
                &self.pieces,
                false,
                0,
                &mut self.host_pieces.slot_mut(slot)[..read_len],
                None::<&Event>,
                Some(&mut read),
            )
        }
        .map_err(|e| err("reading subtree CVs", e))?;
        Prof::push(prof, Stage::Download, &read);
        core::flush(queue).map_err(|e| err("flushing the queue", e))?;
        Ok(Enqueued { chunk_kernel: passes.chunk_kernel, read })
    }

    /// The dispatches of [`enqueue_subtrees_on`](Self::enqueue_subtrees_on) alone, with nothing
    /// read back: the pieces stay in [`pieces_buffer`](Self::pieces_buffer) and the level-k CVs
    /// of a cap that splits the run in the buffer `Passes::capped` names, or in `run.capped_to`
    /// (written there by the last dispatch itself where it starts at byte 0, else copied).
    #[allow(clippy::too_many_arguments)]
    pub fn enqueue_passes(
        &mut self,
        queue: &CommandQueue,
        be: &OpenDevice,
        run: Run<'_>,
        wait: Option<&Event>,
        tail: Option<(usize, usize)>,
        kernel_event: bool,
        prof: &mut Option<&mut Prof>,
    ) -> Result<Passes> {
        let Run { data, chunk_offset, n, counter, domain, max_chunks, capped_to } = run;
        let (tail_at, tail_len) = tail.map_or((0u64, 0u32), |(at, len)| (at as u64, len as u32));
        debug_assert!(tail_len as usize <= CHUNK_LEN);
        debug_assert!(n >= 1);
        let w1 = be.config.chunk_wg as u64;
        let w2 = be.config.parent_wg as u64;
        let cap = cap_level(n, max_chunks);
        // Chunks per work-group: w1, or fewer for a small run (spread over more groups), but no
        // fewer than a cap within the group's reach takes.
        let g1 = match cap {
            Some(k) if k <= w1.ilog2() => be.config.group_chunks(n).max(1 << k),
            _ => be.config.group_chunks(n),
        };
        let g1_arg = g1 as u32;
        // The levels each dispatch reduces: the chunk kernel leaves one node per 2^l1 chunks.
        let l1 = be.config.levels_for(n);
        let passes = match cap {
            Some(k) => capped_passes(k, g1.ilog2(), l1, w2.trailing_zeros()),
            None => {
                let mut passes = vec![l1];
                let mut count = n >> l1;
                while count > 1 {
                    passes.push(w2.trailing_zeros());
                    count /= w2;
                }
                passes
            }
        };
        let l1 = passes[0];
        let q1 = n >> l1;
        let q2 = passes.get(1).map_or(1, |&l| q1 >> l);
        // The last dispatch of a capped run writes straight into `capped_to` where that starts
        // at byte 0 (kernels write from node 0 of their output).
        let direct = match (cap, capped_to) {
            (Some(_), Some((dst, 0))) => Some(dst),
            _ => None,
        };
        let last = passes.len() - 1;
        let q1_room = if direct.is_some() && last == 0 { 1 } else { q1.max(1) };
        let level0 = self.levels[0].get(self.device, &self.context, (q1_room * 32) as usize)?;
        let level1 = self.levels[1].get(self.device, &self.context, (q2.max(1) * 32) as usize)?;
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
            .and_then(|_| set(6, ArgVal::mem(direct.filter(|_| last == 0).unwrap_or(&level0))))
            .and_then(|_| set(7, ArgVal::mem(&self.pieces)))
            .and_then(|_| set(8, ArgVal::scalar(&tail_at)))
            .and_then(|_| set(9, ArgVal::scalar(&tail_len)))
            .and_then(|_| set(10, ArgVal::scalar(&l1)))
            .and_then(|_| set(11, ArgVal::scalar(&g1_arg)))
            .map_err(|e| err("setting kernel arguments", e))?;
        let groups = n.div_ceil(g1);
        let events = prof.is_some();
        let mut chunk_kernel = Event::null();
        // SAFETY: every argument is set, the buffers outlive the command (OpenCL retains them),
        // and the work-group size is the one the kernel was compiled for.
        Prof::begin(prof);
        unsafe {
            core::enqueue_kernel(
                queue,
                &self.chunk,
                1,
                None,
                &[(groups * w1) as usize, 1, 1],
                Some([w1 as usize, 1, 1]),
                wait,
                (events || kernel_event).then_some(&mut chunk_kernel),
            )
        }
        .map_err(|e| err("running the chunk kernel", e))?;
        Prof::push(prof, Stage::Kernel, &chunk_kernel);
        // Let the device start while the rest is enqueued.
        core::flush(queue).map_err(|e| err("flushing the queue", e))?;

        let mut count = q1;
        let mut level = l1;
        let mut bufs = [level0, level1];
        for (i, &levels) in passes.iter().enumerate().skip(1) {
            let p = &self.parent;
            let set = |i, v| core::set_kernel_arg(p, i, v);
            // SAFETY: as above.
            let key_arg = unsafe { ArgVal::from_raw(32, key.as_ptr().cast(), false) };
            set(0, ArgVal::mem(&bufs[0]))
                .and_then(|_| set(1, ArgVal::scalar(&count)))
                .and_then(|_| set(2, key_arg))
                .and_then(|_| set(3, ArgVal::scalar(&flags)))
                .and_then(|_| set(4, ArgVal::mem(direct.filter(|_| i == last).unwrap_or(&bufs[1]))))
                .and_then(|_| set(5, ArgVal::mem(&self.pieces)))
                .and_then(|_| set(6, ArgVal::scalar(&level)))
                .and_then(|_| set(7, ArgVal::scalar(&levels)))
                .map_err(|e| err("setting kernel arguments", e))?;
            let groups = count.div_ceil(w2);
            let mut ev = Event::null();
            // SAFETY: as above.
            unsafe {
                core::enqueue_kernel(
                    queue,
                    &self.parent,
                    1,
                    None,
                    &[(groups * w2) as usize, 1, 1],
                    Some([w2 as usize, 1, 1]),
                    None::<&Event>,
                    events.then_some(&mut ev),
                )
            }
            .map_err(|e| err("running the parent kernel", e))?;
            Prof::push(prof, Stage::Kernel, &ev);
            count >>= levels;
            level += levels;
            bufs.swap(0, 1);
        }
        let capped = match (cap, capped_to) {
            (Some(_), Some((dst, at))) if direct.is_none() => {
                // SAFETY: both buffers outlive the command (OpenCL retains them); the caller sizes
                // `dst` for `count` CVs from byte `at`.
                core::enqueue_copy_buffer::<u8, _, _, _>(
                    queue,
                    &bufs[0],
                    dst,
                    0,
                    at as usize,
                    (count * 32) as usize,
                    None::<&Event>,
                    None::<&mut Event>,
                )
                .map_err(|e| err("copying subtree CVs", e))?;
                None
            }
            (Some(_), None) => Some((bufs[0].clone(), count)),
            _ => None,
        };
        Ok(Passes { chunk_kernel: kernel_event.then_some(chunk_kernel), capped })
    }

    /// The device buffer the dispatches leave their pieces in (the subtree CVs, slot `b` for the
    /// subtree of 2^b chunks): valid until the next run on this worker.
    pub fn pieces_buffer(&self) -> &Mem {
        &self.pieces
    }

    /// The subtree CVs of the `n` chunks last dispatched into host buffer `slot`, largest first:
    /// one per set bit of `n`. Only once that dispatch's read event is complete.
    pub fn take_pieces(&self, slot: usize, n: u64, out: &mut [Cv]) {
        read_pieces(self.host_pieces.slot(slot), n, out);
    }

    /// The subtree CVs, none larger than `max_chunks`, of the `n` chunks last dispatched into
    /// host buffer `slot` with that cap: as `Backend::chunk_subtrees_capped` returns them. Only
    /// once that dispatch's read event is complete.
    pub fn pieces(&self, slot: usize, n: u64, max_chunks: u64) -> Vec<Cv> {
        let pieces = self.host_pieces.slot(slot);
        match cap_level(n, max_chunks) {
            Some(k) => capped_cvs(&self.host_capped[slot], pieces, n, k),
            None => pieces_of(pieces, n),
        }
    }

    /// Enqueues a read of `len` (at most a chunk) bytes of `mem` from byte `offset` into host
    /// buffer `slot`, after everything before it on `queue`; once the returned event is complete,
    /// [`result`](Self::result) gives them.
    pub fn enqueue_read_small(
        &mut self,
        queue: &CommandQueue,
        mem: &Mem,
        offset: usize,
        len: usize,
        slot: usize,
        prof: &mut Option<&mut Prof>,
    ) -> Result<Event> {
        debug_assert!(len <= CHUNK_LEN);
        let mut read = Event::null();
        Prof::begin(prof);
        // SAFETY: the host buffer lives in this worker, which waits for the read (or finishes its
        // queues on failure) before the buffer can go away.
        unsafe {
            core::enqueue_read_buffer(
                queue,
                mem,
                false,
                offset,
                &mut self.host_pieces.slot_mut(slot)[..len],
                None::<&Event>,
                Some(&mut read),
            )
        }
        .map_err(|e| self.err("reading results", e))?;
        Prof::push(prof, Stage::Download, &read);
        core::flush(queue).map_err(|e| self.err("flushing the queue", e))?;
        Ok(read)
    }

    /// The first `len` bytes of host buffer `slot`, as [`enqueue_read_small`](Self::enqueue_read_small) left them.
    pub fn result(&self, slot: usize, len: usize) -> &[u8] {
        &self.host_pieces.slot(slot)[..len]
    }

    /// The `len` bytes a dispatch with a `tail` fetched into host buffer `slot`.
    pub fn tail(&self, slot: usize, len: usize) -> &[u8] {
        &self.host_pieces.slot(slot)[TAIL_AT..TAIL_AT + len]
    }

    /// Waits for a command (a dispatch's results): by polling its status where the backend
    /// spins, for at most [`SPIN_MAX`], else in the driver.
    pub fn wait(&self, ev: &Event) -> Result<()> {
        if self.spin {
            let start = Instant::now();
            loop {
                match core::event_status(ev) {
                    Ok(core::CommandExecutionStatus::Complete) => return Ok(()),
                    // Still on its way; an error status does not convert: the driver's wait says
                    // what it was.
                    Ok(_) if start.elapsed() < SPIN_MAX => std::hint::spin_loop(),
                    _ => break,
                }
            }
        }
        ev.wait_for().map_err(|e| self.err("waiting for the kernels", e))
    }

    /// Lets large scratch buffers go after a call that needed them.
    pub fn trim(&mut self) {
        const KEEP: usize = 256 << 20;
        let [a, b] = &mut self.levels;
        let [c, d, e] = &mut self.bao;
        for s in [&mut self.input, &mut self.output, a, b, c, d, e] {
            s.trim(KEEP);
        }
    }

    /// The subtree CVs of `input`'s full chunks (one run; the first chunk has counter
    /// `counter`, aligned as `Backend::chunk_subtrees_capped` requires), none larger than
    /// `max_chunks`, uploaded with one blocking write from the caller's memory.
    #[allow(clippy::too_many_arguments)]
    pub fn hash_run_direct(
        &mut self,
        be: &OpenDevice,
        input: &[u8],
        counter: u64,
        max_chunks: u64,
        domain: Domain,
        out: &mut [Cv],
        prof: &mut Option<&mut Prof>,
    ) -> Result<()> {
        let buf = self.input.get(self.device, &self.context, input.len())?;
        let mut ev = Event::null();
        Prof::begin(prof);
        // SAFETY: a blocking write: `input` is read before the call returns.
        unsafe {
            core::enqueue_write_buffer(
                &self.compute,
                &buf,
                true,
                0,
                input,
                None::<&Event>,
                prof.is_some().then_some(&mut ev),
            )
        }
        .map_err(|e| self.err("uploading input", e))?;
        Prof::push(prof, Stage::Upload, &ev);
        let n = (input.len() / CHUNK_LEN) as u64;
        let run = Run { data: &buf, chunk_offset: 0, n, counter, domain, max_chunks, capped_to: None };
        let done = self.enqueue_subtrees(be, run, None, 0, None, prof)?;
        self.wait(&done.read)?;
        out.copy_from_slice(&self.pieces(0, n, max_chunks));
        Ok(())
    }

    /// Hashes 64-byte blocks as one-block messages, in dispatches of at most 2^20 blocks.
    pub fn hash_blocks(&mut self, blocks: &[[u8; 64]], out: &mut [[u8; 32]]) -> Result<()> {
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

    /// A blocking read of `out.len()` bytes of `mem` from byte 0, on `queue`.
    pub fn read_into(
        &self,
        queue: &CommandQueue,
        mem: &Mem,
        out: &mut [u8],
        prof: &mut Option<&mut Prof>,
    ) -> Result<()> {
        let mut ev = Event::null();
        Prof::begin(prof);
        // SAFETY: a blocking read: `out` is written before the call returns.
        unsafe {
            core::enqueue_read_buffer(queue, mem, true, 0, out, None::<&Event>, prof.is_some().then_some(&mut ev))
        }
        .map_err(|e| self.err("reading results", e))?;
        Prof::push(prof, Stage::Download, &ev);
        Ok(())
    }
}
