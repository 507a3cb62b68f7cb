//! Resident bao outboards on an OpenCL device (the plan in `gpu::bao`): the groups' chaining
//! values into a device buffer (capped passes writing them in place, `bao_fold` for a group no
//! capped pass wrote), the Merkle levels over them keeping every parent, and `bao_place` writing
//! each parent's pair at its place; all on the backend's own in-order queue with no wait in
//! between, and one read at the end: the root's pair (and a host destination's parents).

use super::backend::OpenClBackend;
use super::profile::{Prof, Stage};
use super::worker::{Run, Worker};
use crate::backends::gpu::bao::{root_pair_at, steps, Step};
use crate::backends::gpu::resident::OutboardDest;
use crate::core::constants::{flags, CHUNK_LEN};
use crate::tree::bao_shape::{Order, Tree};
use crate::tree::{merge_subtrees_root, Domain, Error, Result, TreeMode, MAX_SUBTREE};
use blake3::Hash;
use ocl::core::{self, ArgVal, CommandQueue, Event, Mem};

/// Work-items per group of `bao_place`.
const PLACE_WG: u64 = 64;
/// The worker's host result slot the root's pair is read into.
const ROOT_SLOT: usize = 0;

impl OpenClBackend {
    /// The outboard of `tree` over the bytes of `buffer` from byte `at` (chunk-aligned, checked by
    /// the caller to lie in the buffer) into `out`, for two groups or more; returns the hash.
    pub(super) fn outboard_resident(
        &self,
        buffer: &ocl::Buffer<u8>,
        at: u64,
        tree: Tree,
        order: Order,
        out: OutboardDest<'_, ocl::Buffer<u8>>,
        prof: &mut Option<&mut Prof>,
    ) -> Result<Hash> {
        let n = tree.groups();
        debug_assert!(n >= 2);
        // OpenCL runs take any length: every group is in a capped run or folded, none alone.
        let steps = steps(&tree, u64::MAX);
        self.with_worker(|w| {
            let queue = w.main.clone();
            let device = self.dev.info.device;
            let groups = w.bao[0].get(device, &w.context, (n * 32) as usize)?;
            // The inner nodes, then the root's pair.
            let inner = w.bao[1].get(device, &w.context, ((n + 1) * 32) as usize)?;
            let dest = match &out {
                OutboardDest::Device(b) => b.as_core().clone(),
                OutboardDest::Host(_) => w.bao[2].get(device, &w.context, tree.outboard_len() as usize)?,
            };
            let log = tree.group_log();
            let data = buffer.as_core();
            for step in &steps {
                // A run over `chunks` chunks from group `first`: capped at a group into `groups`,
                // or uncapped (its pieces only).
                let run = |first: u64, chunks: u64, capped: bool| Run {
                    data,
                    chunk_offset: at / CHUNK_LEN as u64 + (first << log),
                    n: chunks,
                    counter: first << log,
                    domain: Domain::HASH,
                    max_chunks: if capped { 1 << log } else { MAX_SUBTREE },
                    capped_to: capped.then_some((&groups, first * 32)),
                };
                match *step {
                    Step::Capped { first, chunks, .. } => {
                        w.enqueue_passes(&queue, &self.dev, run(first, chunks, true), None, None, false, prof)?;
                    }
                    Step::Pieces { first, chunks } => {
                        w.enqueue_passes(&queue, &self.dev, run(first, chunks, false), None, None, false, prof)?;
                    }
                    Step::Fold { group, chunks, partial } => {
                        let partial_at = at + group * tree.group_len() + chunks * CHUNK_LEN as u64;
                        let counter = (group << log) + chunks;
                        enqueue_fold(w, &queue, data, &groups, group, chunks, partial_at, partial, counter, prof)?;
                    }
                    Step::Alone { .. } => {
                        return Err(Error::InvalidInput(
                            "internal: an OpenCL outboard step hashes a group alone".into(),
                        ))
                    }
                }
            }
            w.enqueue_merkle(self, &queue, &groups, n, Some(&inner), flags::PARENT, prof)?;
            enqueue_place(w, &queue, &groups, &inner, n, order, &dest, prof)?;

            let read = w.enqueue_read_small(&queue, &inner, (root_pair_at(n) * 32) as usize, 64, ROOT_SLOT, prof)?;
            if let OutboardDest::Host(h) = out {
                w.read_into(&queue, &dest, h, prof)?;
            }
            w.wait(&read)?;
            let pair = w.result(ROOT_SLOT, 64);
            let (left, right) = (pair[..32].try_into().expect("32 bytes"), pair[32..].try_into().expect("32 bytes"));
            w.trim();
            Ok(merge_subtrees_root(&left, &right, TreeMode::Hash))
        })
    }
}

/// Enqueues `bao_fold`: group `group`'s chaining value from the pieces of the run before (the
/// set bits of `chunks`) and the `partial` bytes at byte `partial_at` of `data`, counter
/// `counter`, into `groups`.
#[allow(clippy::too_many_arguments)]
fn enqueue_fold(
    w: &mut Worker,
    queue: &CommandQueue,
    data: &Mem,
    groups: &Mem,
    group: u64,
    chunks: u64,
    partial_at: u64,
    partial: u64,
    counter: u64,
    prof: &mut Option<&mut Prof>,
) -> Result<()> {
    let k = &w.bao_fold;
    let set = |i, v| core::set_kernel_arg(k, i, v);
    let partial = partial as u32;
    set(0, ArgVal::mem(w.pieces_buffer()))
        .and_then(|_| set(1, ArgVal::scalar(&chunks)))
        .and_then(|_| set(2, ArgVal::mem(data)))
        .and_then(|_| set(3, ArgVal::scalar(&partial_at)))
        .and_then(|_| set(4, ArgVal::scalar(&partial)))
        .and_then(|_| set(5, ArgVal::scalar(&counter)))
        .and_then(|_| set(6, ArgVal::mem(groups)))
        .and_then(|_| set(7, ArgVal::scalar(&group)))
        .map_err(|e| w.err("setting kernel arguments", e))?;
    let mut ev = Event::null();
    Prof::begin(prof);
    // SAFETY: every argument is set and the buffers outlive the command; the one work-item reads
    // the pieces' 64 slots, `partial` bytes of `data` inside the range the caller checked, and
    // writes node `group` of `groups`, which holds n nodes.
    unsafe {
        core::enqueue_kernel(
            queue,
            &w.bao_fold,
            1,
            None,
            &[1, 1, 1],
            None,
            None::<&Event>,
            prof.is_some().then_some(&mut ev),
        )
    }
    .map_err(|e| w.err("running the fold kernel", e))?;
    Prof::push(prof, Stage::Kernel, &ev);
    Ok(())
}

/// Enqueues `bao_place`: every parent of the `n` groups' tree into `dest` in `order`, and the
/// root's pair after the inner nodes.
#[allow(clippy::too_many_arguments)]
fn enqueue_place(
    w: &mut Worker,
    queue: &CommandQueue,
    groups: &Mem,
    inner: &Mem,
    n: u64,
    order: Order,
    dest: &Mem,
    prof: &mut Option<&mut Prof>,
) -> Result<()> {
    let k = &w.bao_place;
    let set = |i, v| core::set_kernel_arg(k, i, v);
    let order_arg = u32::from(order == Order::Post);
    set(0, ArgVal::mem(groups))
        .and_then(|_| set(1, ArgVal::mem(inner)))
        .and_then(|_| set(2, ArgVal::scalar(&n)))
        .and_then(|_| set(3, ArgVal::scalar(&order_arg)))
        .and_then(|_| set(4, ArgVal::mem(dest)))
        .map_err(|e| w.err("setting kernel arguments", e))?;
    let mut ev = Event::null();
    Prof::begin(prof);
    // SAFETY: every argument is set, the buffers outlive the command, and the kernel writes only
    // parents below n - 1, which `dest` holds (checked by the caller), and inner nodes below
    // n + 1, which `inner` holds.
    unsafe {
        core::enqueue_kernel(
            queue,
            &w.bao_place,
            1,
            None,
            &[((n - 1).div_ceil(PLACE_WG) * PLACE_WG) as usize, 1, 1],
            Some([PLACE_WG as usize, 1, 1]),
            None::<&Event>,
            prof.is_some().then_some(&mut ev),
        )
    }
    .map_err(|e| w.err("running the placement kernel", e))?;
    Prof::push(prof, Stage::Kernel, &ev);
    Ok(())
}
