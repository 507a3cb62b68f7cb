//! Merkle trees on an OpenCL device (`merkle_levels` in shaders/blake3.cl), for leaves in host
//! memory (the [`Backend`](crate::Backend) override) and for leaves already in a device buffer.
//!
//! A Merkle tree takes a few dispatches, each reducing several levels inside its work-groups
//! (five for 2^25 leaves: 3 levels each while a level has 2^18 nodes or more, then 8), and only
//! the root comes back unless the inner levels are asked for.

use super::backend::OpenClBackend;
use super::profile::{Prof, Profile, Stage};
use super::worker::Worker;
use crate::backends::gpu::merkle_plan::{levels_by_size, merkle_passes};
use crate::backends::gpu::policy;
use crate::core::compress::Cv;
use crate::core::constants::{flags, IV};
use crate::tree::{Error, Result};
use blake3::Hash;
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
        let wg = be.dev.config.merkle_wg as u64;
        let span = (2 * wg).trailing_zeros();
        let key = IV;
        let flags = MERKLE_FLAGS;
        let keep = u32::from(inner.is_some());
        let passes = merkle_passes(n, |count| levels_by_size(count, be.dev.merkle_levels, span));
        let mut cur = leaves.clone();
        for (i, pass) in passes.iter().enumerate() {
            let out = self.levels[i % 2].get(self.device, &self.context, (pass.out * 32) as usize)?;
            let k = &self.merkle;
            let set = |i, v| core::set_kernel_arg(k, i, v);
            // SAFETY (key argument): `uint8` is 32 bytes, as `key` is; the value is copied at once.
            let key_arg = unsafe { ArgVal::from_raw(32, key.as_ptr().cast(), false) };
            set(0, ArgVal::mem(&cur))
                .and_then(|_| set(1, ArgVal::scalar(&pass.count)))
                .and_then(|_| set(2, ArgVal::scalar(&pass.levels)))
                .and_then(|_| set(3, key_arg))
                .and_then(|_| set(4, ArgVal::scalar(&flags)))
                .and_then(|_| set(5, ArgVal::mem(&out)))
                // Without `inner` the kernel writes nothing there; any buffer does.
                .and_then(|_| set(6, ArgVal::mem(inner.unwrap_or(&out))))
                .and_then(|_| set(7, ArgVal::scalar(&pass.inner_at)))
                .and_then(|_| set(8, ArgVal::scalar(&keep)))
                .map_err(|e| self.err("setting kernel arguments", e))?;
            let groups = pass.count.div_ceil(2 * wg);
            let mut ev = Event::null();
            // SAFETY: every argument is set, the buffers outlive the command (OpenCL retains
            // them), the work-group size is the one the kernel was compiled for, and the kernel
            // reads `count` nodes of `cur`, writes `out` nodes of `out` and, with `keep`, nodes
            // below `n - 1` of `inner`, which the callers size so.
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
            Prof::push(prof, Stage::Kernel, &ev);
            core::flush(queue).map_err(|e| self.err("flushing the queue", e))?;
            cur = out;
        }
        Ok(cur)
    }
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
        let device = self.dev.info.device;
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
        self.with_worker(|w| {
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
            MerkleInner::Host(_) => Some(w.output.get(self.dev.info.device, &w.context, ((n - 1) * 32) as usize)?),
            MerkleInner::Device(b) => Some(b.as_core().clone()),
        };
        let top = w.enqueue_merkle(self, queue, leaves, n, inner_mem.as_ref(), prof)?;
        if let (MerkleInner::Host(h), Some(mem)) = (inner, &inner_mem) {
            // The root is the last inner node.
            w.read_into(queue, mem, h.as_flattened_mut())?;
            return Ok(h[h.len() - 1]);
        }
        let read = w.enqueue_read_small(queue, &top, 0, 32, ROOT_SLOT, prof)?;
        w.wait(&read)?;
        Ok(w.result(ROOT_SLOT, 32).try_into().expect("32 bytes"))
    }

    /// [`Backend::merkle`](crate::Backend::merkle) on an OpenCL device: the leaves are uploaded once
    /// and reduced there. Leaves larger than the device can hold in one buffer take the default
    /// level-by-level reduction (through `hash_blocks`, in pieces), as does a device out of memory.
    pub(super) fn merkle_host(&self, leaves: &[Cv], inner: Option<&mut [Cv]>) -> Result<Cv> {
        let fits = leaves.len() as u64 * 32 <= self.dev.limits.max_alloc.min(self.dev.max_alloc_bytes);
        policy::merkle_host(self, leaves, inner, fits, |leaves, inner| {
            let n = leaves.len() as u64;
            self.with_worker(|w| {
                let queue = w.compute.clone();
                let buf = w.input.get(self.dev.info.device, &w.context, leaves.len() * 32)?;
                // SAFETY: a blocking write: `leaves` is read before the call returns.
                unsafe {
                    core::enqueue_write_buffer(
                        &queue,
                        &buf,
                        true,
                        0,
                        leaves.as_flattened(),
                        None::<&Event>,
                        None::<&mut Event>,
                    )
                }
                .map_err(|e| w.err("uploading leaves", e))?;
                let mut dest = match inner {
                    Some(h) => MerkleInner::Host(h),
                    None => MerkleInner::None,
                };
                let root = self.merkle_on(w, &queue, &buf, n, &mut dest, &mut None)?;
                w.trim();
                Ok(root)
            })
        })
    }
}
