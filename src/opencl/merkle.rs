//! Merkle trees and batches of equal-length messages on an OpenCL device (`merkle_levels`,
//! `many_chunks` and `many_merge` in shaders/blake3.cl), for data in host memory (the
//! [`Backend`](crate::Backend) overrides) and for data already in device buffers.
//!
//! A Merkle tree takes a few dispatches, each reducing several levels inside its work-groups
//! (five for 2^25 leaves: 3 levels each while a level has 2^18 nodes or more, then 8), and only
//! the root comes back unless the inner levels are asked for. On an H200 the root of 2^25
//! device-resident leaves took 1.315 ms per call (kernels 1.287 ms), and 2^24 device-resident
//! 64-byte messages 676 us (24.8 G hashes/s; kernels 662 us).
//! Messages of one chunk or less take one work-item each and one dispatch; longer messages one
//! work-item per chunk, then one per message merging its chunks.

use super::worker::{Prof, Worker};
use super::{OpenClBackend, Profile};
use crate::compress::{flags, Cv, CHUNK_LEN, IV};
use crate::error::{Error, Result};
use crate::merkle::{check_many_args, check_merkle_args, hash_many_on, reduce_on};
use crate::tree::{hash_small, Domain};
use crate::{Hash, Mode};
use ocl::core::{self, ArgVal, CommandQueue, Event, Mem};
use std::time::Instant;

/// Where [`OpenClBackend::merkle_buffer`] puts a tree's inner nodes.
///
/// ```no_run
/// use b3accel::opencl::{MerkleInner, OpenClBackend};
/// let gpu = OpenClBackend::open(0)?;
/// let leaves = vec![[7u8; 32]; 1000];
/// let buf = ocl::Buffer::<u8>::builder()
///     .queue(gpu.queue().clone())
///     .len(32 * leaves.len())
///     .copy_host_slice(leaves.as_flattened())
///     .build()
///     .unwrap();
/// let mut inner = vec![[0u8; 32]; leaves.len() - 1];
/// let root = gpu.merkle_buffer(&buf, leaves.len(), MerkleInner::Host(&mut inner))?;
/// assert_eq!(root.as_bytes(), &inner[998]);
/// # Ok::<(), b3accel::Error>(())
/// ```
#[derive(Debug)]
pub enum MerkleInner<'a> {
    /// Nowhere: only the root is wanted, and no level leaves the device.
    None,
    /// Into host memory: exactly `leaf_count - 1` nodes, level by level from the leaves up, in
    /// the layout of [`merkle::level_sizes`](crate::merkle::level_sizes).
    Host(&'a mut [[u8; 32]]),
    /// Into a device buffer of the backend's context, at byte 0, in the same layout: it must hold
    /// at least `(leaf_count - 1) * 32` bytes. The tree stays on the device.
    Device(&'a ocl::Buffer<u8>),
}

/// A Merkle parent is the plain BLAKE3 hash of `left || right`: one block, the IV as key.
const MERKLE_FLAGS: u32 = flags::CHUNK_START | flags::CHUNK_END | flags::ROOT;
/// A level of at least this many nodes is reduced by the backend's `merkle_levels` per dispatch
/// (every level of a group keeps whole SIMD units at work); smaller ones as far as a group goes,
/// where one dispatch less saves more than the idle work-items of the group's last levels cost.
const LARGE_LEVEL: u64 = 1 << 18;
/// Messages of at most this many chunks from host memory go through the `many_*` kernels; longer
/// ones one at a time through the chunk kernels, which spread one message over the device.
const MANY_MAX_CHUNKS: u64 = 64;
/// How many work-items one `many_chunks` dispatch has at most: `items` for messages of one chunk,
/// `scratch_items` for longer ones, whose chunk CVs go to scratch memory.
#[derive(Clone, Copy)]
struct ManyCaps {
    items: u64,
    scratch_items: u64,
}

/// 2^26 one-chunk messages per dispatch; 2^22 chunk CVs (128 MiB) of longer ones.
const MANY_CAPS: ManyCaps = ManyCaps { items: 1 << 26, scratch_items: 1 << 22 };
/// Bytes of host messages uploaded at once.
const HOST_BATCH_BYTES: usize = 64 << 20;

/// Host memory the Merkle reduction reads its root into (a worker's result slot).
const ROOT_SLOT: usize = 1;

impl Worker {
    /// Enqueues on `queue` the reduction of the `n >= 2` nodes in `leaves` to their root, and with
    /// `inner` the writing of every inner node there (the layout of `merkle::level_sizes`).
    /// Returns the buffer whose node 0 will hold the root.
    fn enqueue_merkle(
        &mut self,
        be: &OpenClBackend,
        queue: &CommandQueue,
        leaves: &Mem,
        n: u64,
        inner: Option<&Mem>,
        prof: &mut Option<&mut Prof>,
    ) -> Result<Mem> {
        debug_assert!(n >= 2);
        let wg = be.config.merkle_wg as u64;
        let span = (2 * wg).trailing_zeros();
        let key = IV;
        let flags = MERKLE_FLAGS;
        let keep = u32::from(inner.is_some());
        let mut cur = leaves.clone();
        let mut count = n;
        let mut inner_at = 0u64;
        let mut which = 0;
        while count > 1 {
            // Levels left to the root: ceil(log2(count)).
            let left = u64::BITS - (count - 1).leading_zeros();
            let levels = if count >= LARGE_LEVEL { be.merkle_levels } else { span }.min(left);
            let out_count = count.div_ceil(1 << levels);
            let out = self.levels[which].get(self.device, &self.context, (out_count * 32) as usize)?;
            let k = &self.merkle;
            let set = |i, v| core::set_kernel_arg(k, i, v);
            // SAFETY (key argument): `uint8` is 32 bytes, as `key` is; the value is copied at once.
            let key_arg = unsafe { ArgVal::from_raw(32, key.as_ptr().cast(), false) };
            set(0, ArgVal::mem(&cur))
                .and_then(|_| set(1, ArgVal::scalar(&count)))
                .and_then(|_| set(2, ArgVal::scalar(&levels)))
                .and_then(|_| set(3, key_arg))
                .and_then(|_| set(4, ArgVal::scalar(&flags)))
                .and_then(|_| set(5, ArgVal::mem(&out)))
                // Without `inner` the kernel writes nothing there; any buffer does.
                .and_then(|_| set(6, ArgVal::mem(inner.unwrap_or(&out))))
                .and_then(|_| set(7, ArgVal::scalar(&inner_at)))
                .and_then(|_| set(8, ArgVal::scalar(&keep)))
                .map_err(|e| self.err("setting kernel arguments", e))?;
            let groups = count.div_ceil(2 * wg);
            let mut ev = Event::null();
            // SAFETY: every argument is set, the buffers outlive the command (OpenCL retains
            // them), the work-group size is the one the kernel was compiled for, and the kernel
            // reads `count` nodes of `cur`, writes `out_count` nodes of `out` and, with `keep`,
            // nodes below `n - 1` of `inner`, which the callers size so.
            Prof::begin(prof);
            unsafe {
                core::enqueue_kernel(
                    queue,
                    &self.merkle,
                    1,
                    None,
                    &[(groups * wg) as usize, 1, 1],
                    Some([wg as usize, 1, 1]),
                    None::<&Event>,
                    Some(&mut ev),
                )
            }
            .map_err(|e| self.err("running the Merkle kernel", e))?;
            Prof::push(prof, super::worker::Stage::Kernel, &ev);
            core::flush(queue).map_err(|e| self.err("flushing the queue", e))?;
            let mut c = count;
            for _ in 0..levels {
                inner_at += c / 2;
                c = c.div_ceil(2);
            }
            count = out_count;
            cur = out;
            which ^= 1;
        }
        Ok(cur)
    }

    /// Enqueues on `queue` the hashing of `count` messages of `msg_len >= 1` bytes, the first
    /// being message `first_msg` of `data`, into nodes `out_at..` of `out`. Returns the last
    /// command's event.
    #[allow(clippy::too_many_arguments)]
    fn enqueue_many(
        &mut self,
        queue: &CommandQueue,
        data: &Mem,
        msg_len: u64,
        first_msg: u64,
        count: u64,
        domain: Domain,
        out: &Mem,
        out_at: u64,
        caps: ManyCaps,
        prof: &mut Option<&mut Prof>,
    ) -> Result<Event> {
        debug_assert!(msg_len >= 1 && count >= 1);
        let chunks = msg_len.div_ceil(CHUNK_LEN as u64);
        let chunks_arg = u32::try_from(chunks)
            .map_err(|_| Error::InvalidInput(format!("hash_many: messages of {msg_len} bytes are too long")))?;
        // The alignment every message (and so every block) starts at, given an aligned buffer.
        let align: u32 = match msg_len {
            l if l % 16 == 0 => 16,
            l if l % 4 == 0 => 4,
            _ => 1,
        };
        let per_dispatch = if chunks == 1 { caps.items } else { (caps.scratch_items / chunks).max(1) };
        let cvs = if chunks == 1 {
            None
        } else {
            let msgs = per_dispatch.min(count);
            Some(self.levels[0].get(self.device, &self.context, (msgs * chunks * 32) as usize)?)
        };
        let wg = self.many_wg as u64;
        let mut last = Event::null();
        let mut done = 0u64;
        while done < count {
            let msgs = per_dispatch.min(count - done);
            let items = msgs * chunks;
            let items_arg = items as u32;
            let (dst, dst_at) = match &cvs {
                Some(c) => (c, 0u64),
                None => (out, out_at + done),
            };
            let first = first_msg + done;
            // many_one for messages of one chunk; many_chunks, with one more argument (the chunk
            // count, fourth), for longer ones.
            let k = if chunks == 1 { &self.many_one } else { &self.many_chunks };
            let set = |i, v| core::set_kernel_arg(k, i, v);
            let at = |i: u32| if chunks == 1 { i } else { i + 1 };
            // SAFETY (key argument): as in `enqueue_merkle`.
            let key_arg = unsafe { ArgVal::from_raw(32, domain.key.as_ptr().cast(), false) };
            set(0, ArgVal::mem(data))
                .and_then(|_| set(1, ArgVal::scalar(&msg_len)))
                .and_then(|_| set(2, ArgVal::scalar(&first)))
                .and_then(|_| set(3, ArgVal::scalar(&items_arg)))
                .and_then(|_| if chunks == 1 { Ok(()) } else { set(4, ArgVal::scalar(&chunks_arg)) })
                .and_then(|_| set(at(4), ArgVal::scalar(&align)))
                .and_then(|_| set(at(5), key_arg))
                .and_then(|_| set(at(6), ArgVal::scalar(&domain.flags)))
                .and_then(|_| set(at(7), ArgVal::mem(dst)))
                .and_then(|_| set(at(8), ArgVal::scalar(&dst_at)))
                .map_err(|e| self.err("setting kernel arguments", e))?;
            let mut ev = Event::null();
            // SAFETY: every argument is set; the kernel checks its index against `items`, reads
            // messages `first..first + msgs` of `data` and writes `items` nodes of `dst` from
            // `dst_at`, which the callers size so.
            Prof::begin(prof);
            unsafe {
                core::enqueue_kernel(
                    queue,
                    k,
                    1,
                    None,
                    &[(items.div_ceil(wg) * wg) as usize, 1, 1],
                    Some([wg as usize, 1, 1]),
                    None::<&Event>,
                    Some(&mut ev),
                )
            }
            .map_err(|e| self.err("running the message kernel", e))?;
            Prof::push(prof, super::worker::Stage::Kernel, &ev);
            last = ev;
            if let Some(c) = &cvs {
                let k = &self.many_merge;
                let set = |i, v| core::set_kernel_arg(k, i, v);
                let msgs_arg = msgs as u32;
                let at = out_at + done;
                // SAFETY (key argument): as above.
                let key_arg = unsafe { ArgVal::from_raw(32, domain.key.as_ptr().cast(), false) };
                set(0, ArgVal::mem(c))
                    .and_then(|_| set(1, ArgVal::scalar(&msgs_arg)))
                    .and_then(|_| set(2, ArgVal::scalar(&chunks_arg)))
                    .and_then(|_| set(3, key_arg))
                    .and_then(|_| set(4, ArgVal::scalar(&domain.flags)))
                    .and_then(|_| set(5, ArgVal::mem(out)))
                    .and_then(|_| set(6, ArgVal::scalar(&at)))
                    .map_err(|e| self.err("setting kernel arguments", e))?;
                let mut ev = Event::null();
                // SAFETY: as above; the kernel reads `msgs * chunks` CVs of `c` and writes `msgs`
                // nodes of `out` from `at`.
                unsafe {
                    core::enqueue_kernel(
                        queue,
                        &self.many_merge,
                        1,
                        None,
                        &[(msgs.div_ceil(wg) * wg) as usize, 1, 1],
                        Some([wg as usize, 1, 1]),
                        None::<&Event>,
                        Some(&mut ev),
                    )
                }
                .map_err(|e| self.err("running the merge kernel", e))?;
                Prof::push(prof, super::worker::Stage::Kernel, &ev);
                last = ev;
            }
            core::flush(queue).map_err(|e| self.err("flushing the queue", e))?;
            done += msgs;
        }
        Ok(last)
    }
}

/// A blocking read of `out.len()` bytes of `mem` from byte 0, on `queue`.
fn read_into(w: &Worker, queue: &CommandQueue, mem: &Mem, out: &mut [u8]) -> Result<()> {
    // SAFETY: a blocking read: `out` is written before the call returns.
    unsafe { core::enqueue_read_buffer(queue, mem, true, 0, out, None::<&Event>, None::<&mut Event>) }
        .map_err(|e| w.err("reading results", e))
}

impl OpenClBackend {
    /// The root of the Merkle tree (see [`merkle`](crate::merkle)) over the first `leaf_count`
    /// 32-byte leaves of a device buffer, computed where they lie: several levels per dispatch
    /// inside work-groups, and only the root comes back to the host, unless `inner` asks for the
    /// inner nodes (in host memory, or in another device buffer).
    ///
    /// The buffers must belong to this backend's [`context`](Self::context); commands that write
    /// the leaves must be complete or enqueued on [`queue`](Self::queue), after which the
    /// reduction runs. Zero leaves, more leaves than the buffer holds, or an `inner` of the wrong
    /// size are errors.
    ///
    /// ```no_run
    /// use b3accel::opencl::{MerkleInner, OpenClBackend};
    /// let gpu = OpenClBackend::open(0)?;
    /// let leaves: Vec<[u8; 32]> = (0..1u32 << 20).map(|i| *blake3::hash(&i.to_le_bytes()).as_bytes()).collect();
    /// let buf = ocl::Buffer::<u8>::builder()
    ///     .queue(gpu.queue().clone())
    ///     .len(32 * leaves.len())
    ///     .copy_host_slice(leaves.as_flattened())
    ///     .build()
    ///     .unwrap();
    /// let root = gpu.merkle_buffer(&buf, leaves.len(), MerkleInner::None)?;
    /// assert_eq!(root, b3accel::merkle_root(b3accel::Device::Cpu, &leaves)?);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn merkle_buffer(&self, leaves: &ocl::Buffer<u8>, leaf_count: usize, inner: MerkleInner<'_>) -> Result<Hash> {
        Ok(Hash::from_bytes(self.merkle_resident(leaves, leaf_count, inner, &mut None)?))
    }

    /// [`merkle_buffer`](Self::merkle_buffer), reporting where the wall time went (see
    /// [`Profile`]).
    ///
    /// ```no_run
    /// use b3accel::opencl::{MerkleInner, OpenClBackend};
    /// let gpu = OpenClBackend::open(0)?;
    /// let buf = ocl::Buffer::<u8>::builder().context(gpu.context()).len(32 << 25).build().unwrap();
    /// let (_root, p) = gpu.merkle_buffer_profiled(&buf, 1 << 25, MerkleInner::None)?;
    /// println!("2^25 leaves: kernels {:?}, wall {:?}", p.kernel, p.total);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn merkle_buffer_profiled(
        &self,
        leaves: &ocl::Buffer<u8>,
        leaf_count: usize,
        inner: MerkleInner<'_>,
    ) -> Result<(Hash, Profile)> {
        let start = Instant::now();
        let mut prof = Prof::default();
        let root = self.merkle_resident(leaves, leaf_count, inner, &mut Some(&mut prof))?;
        Ok((Hash::from_bytes(root), prof.profile(start, Instant::now())))
    }

    fn merkle_resident(
        &self,
        leaves: &ocl::Buffer<u8>,
        leaf_count: usize,
        mut inner: MerkleInner<'_>,
        prof: &mut Option<&mut Prof>,
    ) -> Result<Cv> {
        let device = self.info.device;
        let n = leaf_count as u64;
        if leaf_count == 0 {
            return Err(Error::InvalidInput("a Merkle tree needs at least one leaf".to_string()));
        }
        if n.checked_mul(32).is_none_or(|b| b > leaves.len() as u64) {
            return Err(Error::InvalidInput(format!(
                "{device}: {leaf_count} leaves of 32 bytes do not fit in a {}-byte buffer",
                leaves.len()
            )));
        }
        self.check_context(leaves.as_core())?;
        match &inner {
            MerkleInner::None => {}
            MerkleInner::Host(h) => {
                if h.len() != leaf_count - 1 {
                    return Err(Error::InvalidInput(format!(
                        "merkle: {leaf_count} leaves have {} inner nodes, but inner has room for {}",
                        leaf_count - 1,
                        h.len()
                    )));
                }
            }
            MerkleInner::Device(b) => {
                if (b.len() as u64) < (n - 1) * 32 {
                    return Err(Error::InvalidInput(format!(
                        "{device}: {leaf_count} leaves have {} inner nodes, which do not fit in a {}-byte buffer",
                        leaf_count - 1,
                        b.len()
                    )));
                }
                self.check_context(b.as_core())?;
            }
        }
        self.pool.with_worker(self, |w| {
            let queue = w.main.clone();
            let root = if n == 1 {
                let read = w.enqueue_read_small(&queue, leaves.as_core(), 0, 32, ROOT_SLOT, prof)?;
                w.wait(&read)?;
                w.result(ROOT_SLOT, 32).try_into().expect("32 bytes")
            } else {
                self.merkle_on(w, &queue, leaves.as_core(), n, &mut inner, prof)?
            };
            w.trim();
            Ok(root)
        })
    }

    /// The reduction of `n >= 2` leaves in `leaves` on worker `w`, on `queue`.
    fn merkle_on(
        &self,
        w: &mut Worker,
        queue: &CommandQueue,
        leaves: &Mem,
        n: u64,
        inner: &mut MerkleInner<'_>,
        prof: &mut Option<&mut Prof>,
    ) -> Result<Cv> {
        let inner_mem = match inner {
            MerkleInner::None => None,
            MerkleInner::Host(_) => Some(w.output.get(self.info.device, &w.context, ((n - 1) * 32) as usize)?),
            MerkleInner::Device(b) => Some(b.as_core().clone()),
        };
        let top = w.enqueue_merkle(self, queue, leaves, n, inner_mem.as_ref(), prof)?;
        if let (MerkleInner::Host(h), Some(mem)) = (inner, &inner_mem) {
            // The root is the last inner node.
            read_into(w, queue, mem, h.as_flattened_mut())?;
            return Ok(h[h.len() - 1]);
        }
        let read = w.enqueue_read_small(queue, &top, 0, 32, ROOT_SLOT, prof)?;
        w.wait(&read)?;
        Ok(w.result(ROOT_SLOT, 32).try_into().expect("32 bytes"))
    }

    /// Hashes `count` messages of `msg_len` bytes each, laid end to end from byte 0 of the
    /// device buffer `data`, in `mode`, into the device buffer `out`: message i's hash at bytes
    /// `32 * i..32 * i + 32`. Nothing goes through host memory; the call returns once the hashes
    /// are written.
    ///
    /// Messages of up to a chunk take one work-item each; longer ones one per chunk, then one per
    /// message to merge its chunks (a message of many chunks is merged by one work-item: hash a
    /// few long messages with [`hash_buffer`](Self::hash_buffer) instead). The buffers must
    /// belong to the backend's [`context`](Self::context); commands that write `data` must be
    /// complete or enqueued on [`queue`](Self::queue).
    ///
    /// ```no_run
    /// use b3accel::{opencl::OpenClBackend, Mode};
    /// let gpu = OpenClBackend::open(0)?;
    /// let data: Vec<u8> = (0..64 * 1000).map(|i| i as u8).collect();
    /// let input = ocl::Buffer::<u8>::builder()
    ///     .queue(gpu.queue().clone())
    ///     .len(data.len())
    ///     .copy_host_slice(&data)
    ///     .build()
    ///     .unwrap();
    /// let out = ocl::Buffer::<u8>::builder().queue(gpu.queue().clone()).len(32 * 1000).build().unwrap();
    /// gpu.hash_many_buffer(&input, 64, 1000, &Mode::Hash, &out)?;
    /// let mut hashes = vec![0u8; 32 * 1000];
    /// out.read(&mut hashes).enq().unwrap();
    /// assert_eq!(hashes[32..64], *blake3::hash(&data[64..128]).as_bytes());
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn hash_many_buffer(
        &self,
        data: &ocl::Buffer<u8>,
        msg_len: usize,
        count: usize,
        mode: &Mode,
        out: &ocl::Buffer<u8>,
    ) -> Result<()> {
        self.many_resident(data, msg_len, count, mode.domain(), out, &mut None)
    }

    /// [`hash_many_buffer`](Self::hash_many_buffer), reporting where the wall time went (see
    /// [`Profile`]).
    ///
    /// ```no_run
    /// use b3accel::{opencl::OpenClBackend, Mode};
    /// let gpu = OpenClBackend::open(0)?;
    /// let input = ocl::Buffer::<u8>::builder().context(gpu.context()).len(64 << 24).build().unwrap();
    /// let out = ocl::Buffer::<u8>::builder().context(gpu.context()).len(32 << 24).build().unwrap();
    /// let p = gpu.hash_many_buffer_profiled(&input, 64, 1 << 24, &Mode::Hash, &out)?;
    /// println!("{:.1} G hashes/s", (1u64 << 24) as f64 / p.total.as_secs_f64() / 1e9);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn hash_many_buffer_profiled(
        &self,
        data: &ocl::Buffer<u8>,
        msg_len: usize,
        count: usize,
        mode: &Mode,
        out: &ocl::Buffer<u8>,
    ) -> Result<Profile> {
        let start = Instant::now();
        let mut prof = Prof::default();
        self.many_resident(data, msg_len, count, mode.domain(), out, &mut Some(&mut prof))?;
        Ok(prof.profile(start, Instant::now()))
    }

    fn many_resident(
        &self,
        data: &ocl::Buffer<u8>,
        msg_len: usize,
        count: usize,
        domain: Domain,
        out: &ocl::Buffer<u8>,
        prof: &mut Option<&mut Prof>,
    ) -> Result<()> {
        let device = self.info.device;
        if msg_len.checked_mul(count).is_none_or(|b| b > data.len()) {
            return Err(Error::InvalidInput(format!(
                "{device}: {count} messages of {msg_len} bytes do not fit in a {}-byte buffer",
                data.len()
            )));
        }
        if count.checked_mul(32).is_none_or(|b| b > out.len()) {
            return Err(Error::InvalidInput(format!(
                "{device}: {count} hashes do not fit in a {}-byte output buffer",
                out.len()
            )));
        }
        self.check_context(data.as_core())?;
        self.check_context(out.as_core())?;
        if count == 0 {
            return Ok(());
        }
        self.pool.with_worker(self, |w| {
            let queue = w.main.clone();
            let last = if msg_len == 0 {
                // Every message is the empty one: its hash, written count times.
                let hash = hash_small(&[], domain);
                // The 32 bytes as four little-endian 64-bit words: a 32-byte pattern type.
                let words: [u64; 4] =
                    std::array::from_fn(|i| u64::from_le_bytes(hash[8 * i..8 * i + 8].try_into().expect("8 bytes")));
                let pattern = core::Ulong4::from(words);
                let mut ev = Event::null();
                Prof::begin(prof);
                core::enqueue_fill_buffer(
                    &queue,
                    out.as_core(),
                    pattern,
                    0,
                    count,
                    None::<&Event>,
                    Some(&mut ev),
                    Some(&self.queue.device_version()),
                )
                .map_err(|e| w.err("filling the output", e))?;
                Prof::push(prof, super::worker::Stage::Kernel, &ev);
                core::flush(&queue).map_err(|e| w.err("flushing the queue", e))?;
                ev
            } else {
                let (n, len) = (count as u64, msg_len as u64);
                w.enqueue_many(&queue, data.as_core(), len, 0, n, domain, out.as_core(), 0, MANY_CAPS, prof)?
            };
            w.wait(&last)?;
            w.trim();
            Ok(())
        })
    }
}

/// [`Backend::merkle`](crate::Backend::merkle) on an OpenCL device: the leaves are uploaded once
/// and reduced there. Leaves larger than the device can hold in one buffer take the default
/// level-by-level reduction (through `hash_blocks`, in pieces).
pub(super) fn merkle_host(be: &OpenClBackend, leaves: &[Cv], mut inner: Option<&mut [Cv]>) -> Result<Cv> {
    check_merkle_args(leaves, inner.as_deref())?;
    let n = leaves.len() as u64;
    if n == 1 {
        return Ok(leaves[0]);
    }
    let cap = be.limits.max_alloc.min(be.max_alloc_bytes);
    if n * 32 > cap {
        return reduce_on(be, leaves, inner);
    }
    let result = be.pool.with_worker(be, |w| {
        let queue = w.compute.clone();
        let buf = w.input.get(be.info.device, &w.context, leaves.len() * 32)?;
        // SAFETY: a blocking write: `leaves` is read before the call returns.
        unsafe {
            core::enqueue_write_buffer(&queue, &buf, true, 0, leaves.as_flattened(), None::<&Event>, None::<&mut Event>)
        }
        .map_err(|e| w.err("uploading leaves", e))?;
        let mut dest = match inner.as_deref_mut() {
            Some(h) => MerkleInner::Host(h),
            None => MerkleInner::None,
        };
        let root = be.merkle_on(w, &queue, &buf, n, &mut dest, &mut None)?;
        w.trim();
        Ok(root)
    });
    match result {
        // The device could not hold the leaves and the levels after all.
        Err(Error::OutOfMemory { .. }) => reduce_on(be, leaves, inner),
        other => other,
    }
}

/// [`Backend::hash_many`](crate::Backend::hash_many) on an OpenCL device: batches of messages of
/// up to 64 chunks are uploaded and hashed by the `many_*` kernels; longer messages go one at a
/// time through the chunk kernels.
pub(super) fn hash_many_host(
    be: &OpenClBackend,
    data: &[u8],
    msg_len: usize,
    domain: Domain,
    out: &mut [Cv],
) -> Result<()> {
    check_many_args(data, msg_len, out)?;
    if out.is_empty() {
        return Ok(());
    }
    if msg_len == 0 {
        out.fill(hash_small(&[], domain));
        return Ok(());
    }
    if msg_len.div_ceil(CHUNK_LEN) as u64 > MANY_MAX_CHUNKS {
        return hash_many_on(be, data, msg_len, &domain.key, domain.flags, out);
    }
    let per_batch = (HOST_BATCH_BYTES / msg_len).max(1);
    be.pool.with_worker(be, |w| {
        let queue = w.compute.clone();
        for (i, hashes) in out.chunks_mut(per_batch).enumerate() {
            let start = i * per_batch * msg_len;
            let msgs = &data[start..start + hashes.len() * msg_len];
            let input = w.input.get(be.info.device, &w.context, msgs.len())?;
            let output = w.output.get(be.info.device, &w.context, hashes.len() * 32)?;
            // SAFETY: a blocking write: `msgs` is read before the call returns.
            unsafe { core::enqueue_write_buffer(&queue, &input, true, 0, msgs, None::<&Event>, None::<&mut Event>) }
                .map_err(|e| w.err("uploading messages", e))?;
            let (n, len) = (hashes.len() as u64, msg_len as u64);
            w.enqueue_many(&queue, &input, len, 0, n, domain, &output, 0, MANY_CAPS, &mut None)?;
            read_into(w, &queue, &output, hashes.as_flattened_mut())?;
        }
        w.trim();
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuBackend;
    use crate::Backend;

    /// Many dispatches per call, with tiny caps: every dispatch's messages and outputs must land
    /// at the right offsets, for one-chunk and longer messages.
    #[test]
    fn many_dispatches_per_call_land_at_their_offsets() {
        let Ok(list) = super::super::enumerate() else {
            assert!(std::env::var("CI").is_err(), "CI=true: the OpenCL backend must have a device");
            eprintln!("*** no OpenCL device: many_dispatches_per_call_land_at_their_offsets did NOT run ***");
            return;
        };
        let domain = Domain::keyed(&[7; 32]);
        for (i, info) in list.iter().enumerate() {
            let be = OpenClBackend::open(i).unwrap();
            for (msg_len, count) in [(64usize, 23usize), (5, 31), (1500, 9), (3000, 7)] {
                let data: Vec<u8> = (0..msg_len * count).map(|k| (k * 31 % 251) as u8).collect();
                let mut want = vec![[0u8; 32]; count];
                CpuBackend::new().hash_many(&data, msg_len, &domain.key, domain.flags, &mut want).unwrap();
                let caps = ManyCaps { items: 5, scratch_items: 7 };
                let got = be
                    .pool
                    .with_worker(&be, |w| {
                        let queue = w.compute.clone();
                        let input = w.input.get(w.device, &w.context, data.len())?;
                        let output = w.output.get(w.device, &w.context, (count + 3) * 32)?;
                        // SAFETY: blocking write and read of local vectors.
                        unsafe {
                            core::enqueue_write_buffer(
                                &queue,
                                &input,
                                true,
                                0,
                                &data,
                                None::<&Event>,
                                None::<&mut Event>,
                            )
                        }
                        .unwrap();
                        // Messages 2.. of the buffer, to nodes 3.. of the output.
                        let (n, len) = ((count - 2) as u64, msg_len as u64);
                        let last = w.enqueue_many(&queue, &input, len, 2, n, domain, &output, 3, caps, &mut None)?;
                        w.wait(&last)?;
                        let mut out = vec![[0u8; 32]; count + 1];
                        read_into(w, &queue, &output, out.as_flattened_mut())?;
                        Ok(out)
                    })
                    .unwrap();
                assert_eq!(got[3..], want[2..], "{}: {count} x {msg_len} bytes", info.name);
            }
        }
    }
}
