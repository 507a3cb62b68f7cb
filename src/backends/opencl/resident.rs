//! [`Resident`] on an OpenCL device: data in an `ocl::Buffer<u8>` of the backend's context is
//! hashed where it lies, and only the last chunk (at most 1024 bytes) and the subtree CVs come
//! back to the host, where the tree module finishes the root (or a subtree's chaining value).

use super::backend::OpenClBackend;
use super::errors::cl_err;
use super::profile::{profiled, Prof, Stage};
use super::worker::Run;
use crate::backends::gpu::bao;
use crate::backends::gpu::resident::{range_len, MerkleInner, OutboardDest, Resident};
use crate::core::compress::Cv;
use crate::core::constants::CHUNK_LEN;
use crate::tree::bao_shape::Order;
use crate::tree::{
    check_subtree, hash_resident, last_chunk_len, ChainingValue, Domain, Error, Mode, Output, OutputReader, Result,
    Timed, TreeMode, MAX_SUBTREE,
};
use blake3::Hash;
use ocl::core::{self, Event, Mem};
use std::ops::Range;

/// On `ocl::Buffer<u8>`s of the backend's [`context`](OpenClBackend::context). Commands that
/// write a buffer must be complete, or enqueued on the backend's [`queue`](OpenClBackend::queue):
/// every call waits for everything enqueued there before it. A hashed range (`hash`,
/// `xof_reader`, `subtree_cv`) starts on a multiple of [`CHUNK_LEN`](crate::CHUNK_LEN); Merkle
/// leaves and `hash_many`'s messages at an offset other than 0 start on a multiple of the
/// device's base address alignment (`CL_DEVICE_MEM_BASE_ADDR_ALIGN`, 128 bytes or more), and
/// `hash_many_into`'s hashes on a multiple of 32 bytes. Messages of any length are hashed on the
/// device, one work-item per chunk of longer ones and then one per message to merge its chunks
/// (a message of many chunks is merged by one work-item: hash a few long messages with `hash`
/// instead).
///
/// ```no_run
/// use b3accel::{opencl::OpenClBackend, Mode, Resident};
/// let gpu = OpenClBackend::open(0)?;
/// let data = vec![3u8; 64 << 20];
/// let buf = ocl::Buffer::<u8>::builder()
///     .queue(gpu.queue().clone())
///     .len(data.len())
///     .copy_host_slice(&data)
///     .build()
///     .unwrap();
/// let t = gpu.hash(&buf, 0..data.len() as u64, &Mode::Keyed([1; 32]))?;
/// assert_eq!(t.value, blake3::keyed_hash(&[1; 32], &data));
/// println!("{:.2} TB/s in the kernels", data.len() as f64 / t.kernel.as_secs_f64() / 1e12);
/// # Ok::<(), b3accel::Error>(())
/// ```
impl Resident for OpenClBackend {
    type Buffer = ocl::Buffer<u8>;

    /// A buffer of `data.len()` bytes (one zero byte for empty data) in the backend's context, written
    /// by one blocking write on its queue; `upload` is that write by its profiling event.
    fn upload(&self, data: &[u8]) -> Result<Timed<ocl::Buffer<u8>>> {
        profiled(|prof| {
            let device = self.dev.info.device;
            let buffer =
                ocl::Buffer::<u8>::builder().queue(self.dev.queue.clone()).len(data.len().max(1)).build().map_err(
                    |e| match e {
                        ocl::Error::OclCore(e) => cl_err(device, "allocating a device buffer", e),
                        other => Error::Device { device, detail: format!("allocating a device buffer: {other}") },
                    },
                )?;
            let bytes: &[u8] = if data.is_empty() { &[0] } else { data };
            let mut ev = Event::null();
            Prof::begin(prof);
            // SAFETY: a blocking write: `bytes` is read before the call returns, into a buffer of
            // its length.
            unsafe {
                core::enqueue_write_buffer(
                    self.dev.queue.as_core(),
                    buffer.as_core(),
                    true,
                    0,
                    bytes,
                    None::<&Event>,
                    Some(&mut ev),
                )
            }
            .map_err(|e| cl_err(device, "uploading", e))?;
            Prof::push(prof, Stage::Upload, &ev);
            Ok(buffer)
        })
    }

    fn hash_from_host(&self, data: &[u8], mode: &Mode) -> Result<Timed<Hash>> {
        let domain = mode.domain();
        let full = data.len() - last_chunk_len(data.len() as u64) as usize;
        profiled(|prof| {
            let output = hash_resident(0, data.len() as u64, &data[full..], domain, |off, n, first, out| {
                let run = &data[off as usize * CHUNK_LEN..(off + n) as usize * CHUNK_LEN];
                self.host_subtrees(run, first, MAX_SUBTREE, domain, out, prof)
            })?;
            Ok(Hash::from_bytes(output.root_hash()))
        })
    }

    fn xof_reader(&self, buffer: &ocl::Buffer<u8>, range: Range<u64>, mode: &Mode) -> Result<Timed<OutputReader>> {
        let len = range_len(&range)?;
        profiled(|prof| Ok(OutputReader::new(self.resident(buffer, range.start, len, 0, mode.domain(), prof)?)))
    }

    fn subtree_cv(
        &self,
        buffer: &ocl::Buffer<u8>,
        range: Range<u64>,
        input_offset: u64,
        mode: TreeMode<'_>,
    ) -> Result<Timed<ChainingValue>> {
        let len = range_len(&range)?;
        check_subtree(input_offset, len)?;
        let start = input_offset / CHUNK_LEN as u64;
        profiled(|prof| Ok(self.resident(buffer, range.start, len, start, mode.domain(), prof)?.chaining_value()))
    }

    fn merkle_root(
        &self,
        leaves: &ocl::Buffer<u8>,
        offset: u64,
        count: usize,
        inner: MerkleInner<'_, ocl::Buffer<u8>>,
    ) -> Result<Timed<Hash>> {
        profiled(|prof| Ok(Hash::from_bytes(self.merkle_resident(leaves, offset, count, inner, prof)?)))
    }

    fn bao_outboard(
        &self,
        buffer: &ocl::Buffer<u8>,
        range: Range<u64>,
        group_log: u8,
        order: Order,
        out: OutboardDest<'_, ocl::Buffer<u8>>,
    ) -> Result<Timed<Hash>> {
        let len = range_len(&range)?;
        let tree = bao::tree(len, group_log)?;
        bao::check_dest(&tree, &out, |b| b.len() as u64)?;
        if let OutboardDest::Device(b) = &out {
            self.check_context(b.as_core())?;
        }
        if tree.groups() == 1 {
            return self.hash(buffer, range, &Mode::Hash);
        }
        // The checks `resident` makes for a plain hash, before anything is enqueued.
        self.region("bao outboard", buffer, 0, range.end)?;
        if !range.start.is_multiple_of(CHUNK_LEN as u64) {
            return Err(Error::InvalidInput(format!(
                "{}: byte {} of the buffer is not a multiple of the chunk length ({CHUNK_LEN})",
                self.dev.info.device, range.start
            )));
        }
        profiled(|prof| self.outboard_resident(buffer, range.start, tree, order, out, prof))
    }

    fn hash_many(
        &self,
        data: &ocl::Buffer<u8>,
        offset: u64,
        count: usize,
        msg_len: usize,
        mode: &Mode,
    ) -> Result<Timed<Vec<Hash>>> {
        let mut out = vec![[0u8; 32]; count];
        let t = profiled(|prof| self.many_to_host(data, offset, msg_len, mode.domain(), &mut out, prof))?;
        Ok(t.map(|()| out.into_iter().map(Hash::from_bytes).collect()))
    }

    fn hash_many_into(
        &self,
        data: &ocl::Buffer<u8>,
        offset: u64,
        count: usize,
        msg_len: usize,
        mode: &Mode,
        out: &ocl::Buffer<u8>,
        out_offset: u64,
    ) -> Result<Timed<()>> {
        profiled(|prof| self.many_into(data, offset, count, msg_len, mode.domain(), out, out_offset, prof))
    }
}

impl OpenClBackend {
    /// Checks that `mem` belongs to this backend's context.
    pub(crate) fn check_context(&self, mem: &core::Mem) -> Result<()> {
        let device = self.dev.info.device;
        match core::get_mem_object_info(mem, core::MemInfo::Context) {
            Ok(core::MemInfoResult::Context(c)) if c == *self.dev.context.as_core() => Ok(()),
            Ok(_) => Err(Error::InvalidInput(format!(
                "{device}: the buffer belongs to another OpenCL context; create it in the backend's context()"
            ))),
            Err(e) => Err(self.domain_err("inspecting the buffer", e)),
        }
    }

    /// The `len` bytes of `buffer` from byte `offset` as a buffer that starts with them (a
    /// sub-buffer, or the buffer itself), checked to lie inside it, in this backend's context and
    /// (a sub-buffer's start) on the device's base address alignment; `what` names them in
    /// errors.
    pub(super) fn region(&self, what: &str, buffer: &ocl::Buffer<u8>, offset: u64, len: u64) -> Result<Mem> {
        let device = self.dev.info.device;
        if offset.checked_add(len).is_none_or(|end| end > buffer.len() as u64) {
            return Err(Error::InvalidInput(format!(
                "{device}: {what}: {len} bytes at byte {offset} do not fit in a {}-byte buffer",
                buffer.len()
            )));
        }
        self.check_context(buffer.as_core())?;
        // At offset 0, or for no bytes at all (nothing is read), the buffer itself.
        if offset == 0 || len == 0 {
            return Ok(buffer.as_core().clone());
        }
        let align = self.dev.limits.base_align;
        if !offset.is_multiple_of(align) {
            return Err(Error::InvalidInput(format!(
                "{device}: {what}: offset {offset} is not a multiple of the device's base address alignment ({align} bytes)"
            )));
        }
        let region = core::BufferRegion::<u8>::new(offset as usize, len as usize);
        core::create_sub_buffer(buffer.as_core(), core::MemFlags::new(), &region)
            .map_err(|e| cl_err(device, &format!("{what}: a sub-buffer at byte {offset}"), e))
    }

    /// The top node of the `len` bytes at byte `at` of `buffer` (a multiple of `CHUNK_LEN`), the
    /// subtree that starts at chunk `start` of the input (0: the whole input, whose top node is
    /// the root).
    pub(super) fn resident(
        &self,
        buffer: &ocl::Buffer<u8>,
        at: u64,
        len: u64,
        start: u64,
        domain: Domain,
        prof: &mut Option<&mut Prof>,
    ) -> Result<Output> {
        let device = self.dev.info.device;
        if !at.is_multiple_of(CHUNK_LEN as u64) {
            return Err(Error::InvalidInput(format!(
                "{device}: byte {at} of the buffer is not a multiple of the chunk length ({CHUNK_LEN})"
            )));
        }
        if at.checked_add(len).is_none_or(|end| end > buffer.len() as u64) {
            return Err(Error::InvalidInput(format!(
                "{device}: cannot hash {len} bytes from byte {at} of a {}-byte buffer",
                buffer.len()
            )));
        }
        let mem = buffer.as_core();
        self.check_context(mem)?;
        // Everything goes on the backend's own in-order queue: after whatever the caller enqueued
        // there (writes of the buffer), with no marker or cross-queue wait in between.
        let queue = self.dev.queue.as_core();
        let last_len = last_chunk_len(len) as usize;
        let full_chunks = (len - last_len as u64) / CHUNK_LEN as u64;
        self.with_worker(|w| {
            // Everything on one in-order queue, ending in one read that brings back the subtree
            // CVs and the last chunk together.
            let first_chunk = at / CHUNK_LEN as u64;
            let tail_at = (at + len - last_len as u64) as usize;
            let mut last = vec![0u8; last_len];
            let mut whole: Vec<Cv> = vec![[0; 32]; full_chunks.count_ones() as usize];
            if full_chunks > 0 {
                let run = Run {
                    data: mem,
                    chunk_offset: first_chunk,
                    n: full_chunks,
                    counter: start,
                    domain,
                    max_chunks: MAX_SUBTREE,
                    capped_to: None,
                };
                let done =
                    w.enqueue_subtrees_on(queue, &self.dev, run, None, 0, Some((tail_at, last_len)), false, prof)?;
                w.wait(&done.read)?;
                w.take_pieces(0, full_chunks, &mut whole);
                last.copy_from_slice(w.tail(0, last_len));
            } else if last_len > 0 {
                let mut ev = Event::null();
                Prof::begin(prof);
                // SAFETY: a blocking read into a local vector of the right length.
                unsafe {
                    core::enqueue_read_buffer(queue, mem, true, tail_at, &mut last[..], None::<&Event>, Some(&mut ev))
                }
                .map_err(|e| w.err("reading the last chunk", e))?;
                Prof::push(prof, Stage::Download, &ev);
            }
            hash_resident(start, len, &last, domain, |offset, n, first, out| {
                if (offset, n, first) == (0, full_chunks, start) {
                    // The run dispatched above: a fresh stack takes all full chunks at once.
                    out.copy_from_slice(&whole);
                    return Ok(());
                }
                let run = Run {
                    data: mem,
                    chunk_offset: first_chunk + offset,
                    n,
                    counter: first,
                    domain,
                    max_chunks: MAX_SUBTREE,
                    capped_to: None,
                };
                let done = w.enqueue_subtrees_on(queue, &self.dev, run, None, 0, None, false, prof)?;
                w.wait(&done.read)?;
                w.take_pieces(0, n, out);
                Ok(())
            })
        })
    }
}
