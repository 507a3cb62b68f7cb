//! Merkle trees on an OpenCL device (`merkle_levels` in shaders/blake3.cl), for leaves in host
//! memory (the [`Backend`](crate::Backend) override) and for leaves already in a device buffer.
//!
//! A Merkle tree takes a few dispatches, each reducing several levels inside its work-groups
//! (five for 2^25 leaves: 3 levels each while a level has 2^18 nodes or more, then 8), and only
//! the root comes back unless the inner levels are asked for.

use super::backend::OpenClBackend;
use super::profile::{Prof, Stage};
use super::worker::Worker;
use crate::backends::gpu::merkle_plan::{levels_by_size, merkle_passes};
use crate::backends::gpu::policy;
use crate::backends::gpu::resident::MerkleInner;
use crate::core::compress::Cv;
use crate::core::constants::{flags, IV};
use crate::tree::{Error, Result};
use ocl::core::{self, ArgVal, CommandQueue, Event, Mem};

/// Where a tree's inner nodes go, on this backend.
type Inner<'a> = MerkleInner<'a, ocl::Buffer<u8>>;

/// A Merkle parent is the plain BLAKE3 hash of `left || right`: one block, the IV as key.
const MERKLE_FLAGS: u32 = flags::CHUNK_START | flags::CHUNK_END | flags::ROOT;
/// Host memory the Merkle reduction reads its root into (a worker's result slot).
const ROOT_SLOT: usize = 1;

impl Worker {
    /// Enqueues on `queue` the reduction of the `n >= 2` nodes in `leaves` to their root, each
    /// parent the compression of its children with the IV and `flags`, and with `inner` the
    /// writing of every inner node there (the layout of `merkle::level_sizes`).
    /// Returns the buffer whose node 0 will hold the root.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn enqueue_merkle(
        &mut self,
        be: &OpenClBackend,
        queue: &CommandQueue,
        leaves: &Mem,
        n: u64,
        inner: Option<&Mem>,
        flags: u32,
        prof: &mut Option<&mut Prof>,
    ) -> Result<Mem> {
        debug_assert!(n >= 2);
        let wg = be.dev.config.merkle_wg as u64;
        let span = (2 * wg).trailing_zeros();
        let key = IV;
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
                    prof.is_some().then_some(&mut ev),
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
    /// The root of the Merkle tree over the `count` 32-byte leaves of `leaves` from byte
    /// `offset` ([`Resident::merkle_root`](crate::Resident::merkle_root)), on the backend's own
    /// queue.
    pub(super) fn merkle_resident(
        &self,
        leaves: &ocl::Buffer<u8>,
        offset: u64,
        count: usize,
        mut inner: Inner<'_>,
        prof: &mut Option<&mut Prof>,
    ) -> Result<Cv> {
        let device = self.dev.info.device;
        let n = count as u64;
        if count == 0 {
            return Err(Error::InvalidInput("a Merkle tree needs at least one leaf".to_string()));
        }
        let bytes = n.checked_mul(32).ok_or_else(|| Error::InvalidInput(format!("{count} leaves overflow")))?;
        let leaves = self.region("merkle leaves", leaves, offset, bytes)?;
        match &inner {
            MerkleInner::None => {}
            MerkleInner::Host(h) => {
                if h.len() != count - 1 {
                    return Err(Error::InvalidInput(format!(
                        "merkle: {count} leaves have {} inner nodes, but inner has room for {}",
                        count - 1,
                        h.len()
                    )));
                }
            }
            MerkleInner::Device(b) => {
                if (b.len() as u64) < (n - 1) * 32 {
                    return Err(Error::InvalidInput(format!(
                        "{device}: {count} leaves have {} inner nodes, which do not fit in a {}-byte buffer",
                        count - 1,
                        b.len()
                    )));
                }
                self.check_context(b.as_core())?;
            }
        }
        self.with_worker(|w| {
            let queue = w.main.clone();
            let root = if n == 1 {
                let read = w.enqueue_read_small(&queue, &leaves, 0, 32, ROOT_SLOT, prof)?;
                w.wait(&read)?;
                w.result(ROOT_SLOT, 32).try_into().expect("32 bytes")
            } else {
                self.merkle_on(w, &queue, &leaves, n, &mut inner, prof)?
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
        inner: &mut Inner<'_>,
        prof: &mut Option<&mut Prof>,
    ) -> Result<Cv> {
        let inner_mem = match inner {
            MerkleInner::None => None,
            MerkleInner::Host(_) => Some(w.output.get(self.dev.info.device, &w.context, ((n - 1) * 32) as usize)?),
            MerkleInner::Device(b) => Some(b.as_core().clone()),
        };
        let top = w.enqueue_merkle(self, queue, leaves, n, inner_mem.as_ref(), MERKLE_FLAGS, prof)?;
        if let (MerkleInner::Host(h), Some(mem)) = (inner, &inner_mem) {
            // The root is the last inner node.
            w.read_into(queue, mem, h.as_flattened_mut(), prof)?;
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
                let mut dest: Inner<'_> = match inner {
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
