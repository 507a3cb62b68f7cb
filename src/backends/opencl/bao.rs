//! Resident bao outboards on an OpenCL device (the plan in `gpu::bao`): the groups' chaining
//! values into a device buffer, the Merkle levels over them keeping every parent, and
//! `bao_place` writing each parent's pair at its place; all on the backend's own queue, waited
//! for once, with only the root's two children (or a host destination's parents) read back.

use super::backend::OpenClBackend;
use super::profile::{Prof, Stage};
use super::worker::Run;
use crate::backends::gpu::bao::{root_children, runs, GroupRun};
use crate::backends::gpu::resident::OutboardDest;
use crate::core::compress::Cv;
use crate::core::constants::flags;
use crate::tree::bao_shape::{Order, Tree};
use crate::tree::{merge_subtrees_root, Domain, Result, TreeMode};
use blake3::Hash;
use ocl::core::{self, ArgVal, Event};

/// Work-items per group of `bao_place`.
const PLACE_WG: u64 = 64;

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
        let (n, log, group_len) = (tree.groups(), tree.group_log(), tree.group_len());
        debug_assert!(n >= 2);
        let domain = Domain::HASH;
        let runs = runs(&tree, u64::MAX);
        // Groups alone first (at most a partial last one here): each is a resident subtree hash,
        // which takes a worker of its own.
        let mut alone: Vec<(u64, Cv)> = Vec::new();
        for run in &runs {
            if let GroupRun::Alone { index, len } = *run {
                let start = index << log;
                let cv = self.resident(buffer, at + index * group_len, len, start, domain, prof)?;
                alone.push((index, cv.chaining_value()));
            }
        }
        let mem = buffer.as_core();
        self.with_worker(|w| {
            let queue = w.main.clone();
            let device = self.dev.info.device;
            let groups = w.bao[0].get(device, &w.context, (n * 32) as usize)?;
            let inner = w.bao[1].get(device, &w.context, ((n - 1) * 32) as usize)?;
            let dest = match &out {
                OutboardDest::Device(b) => b.as_core().clone(),
                OutboardDest::Host(_) => w.bao[2].get(device, &w.context, tree.outboard_len() as usize)?,
            };
            for (index, cv) in &alone {
                // SAFETY: a blocking write of 32 bytes inside a buffer of n CVs.
                unsafe {
                    core::enqueue_write_buffer(
                        &queue,
                        &groups,
                        true,
                        (index * 32) as usize,
                        &cv[..],
                        None::<&Event>,
                        None::<&mut Event>,
                    )
                }
                .map_err(|e| w.err("writing a group's chaining value", e))?;
            }
            for run in &runs {
                if let GroupRun::Capped { first, groups: count } = *run {
                    let run = Run {
                        data: mem,
                        chunk_offset: at / 1024 + (first << log),
                        n: count << log,
                        counter: first << log,
                        domain,
                        max_chunks: 1 << log,
                        capped_to: Some((&groups, first * 32)),
                    };
                    w.enqueue_subtrees_on(&queue, &self.dev, run, None, 0, None, false, prof)?;
                }
            }
            w.enqueue_merkle(self, &queue, &groups, n, Some(&inner), flags::PARENT, prof)?;

            let k = &w.bao_place;
            let set = |i, v| core::set_kernel_arg(k, i, v);
            let order_arg = u32::from(order == Order::Post);
            set(0, ArgVal::mem(&groups))
                .and_then(|_| set(1, ArgVal::mem(&inner)))
                .and_then(|_| set(2, ArgVal::scalar(&n)))
                .and_then(|_| set(3, ArgVal::scalar(&order_arg)))
                .and_then(|_| set(4, ArgVal::mem(&dest)))
                .map_err(|e| w.err("setting kernel arguments", e))?;
            let mut ev = Event::null();
            Prof::begin(prof);
            // SAFETY: every argument is set, the buffers outlive the command, and the kernel
            // writes only parents below n - 1, which `dest` holds (checked by the caller).
            unsafe {
                core::enqueue_kernel(
                    &queue,
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

            // The root's children, from the group and inner buffers (the destination may be
            // written by the kernel alone).
            let mut pair = [[0u8; 32]; 2];
            for (cv, (in_groups, offset)) in pair.iter_mut().zip(root_children(&tree)) {
                let src = if in_groups { &groups } else { &inner };
                let mut ev = Event::null();
                Prof::begin(prof);
                // SAFETY: a blocking read of 32 bytes inside the buffer.
                unsafe {
                    core::enqueue_read_buffer(
                        &queue,
                        src,
                        true,
                        offset as usize,
                        &mut cv[..],
                        None::<&Event>,
                        prof.is_some().then_some(&mut ev),
                    )
                }
                .map_err(|e| w.err("reading the root's children", e))?;
                Prof::push(prof, Stage::Download, &ev);
            }
            if let OutboardDest::Host(h) = out {
                w.read_into(&queue, &dest, h, prof)?;
            }
            w.trim();
            Ok(merge_subtrees_root(&pair[0], &pair[1], TreeMode::Hash))
        })
    }
}
