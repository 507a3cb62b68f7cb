//! Resident bao outboards on a wgpu device (the plan in `gpu::bao`): the groups' chaining values
//! into a device buffer (capped segment passes writing them in place, `bao_fold` for a group no
//! capped pass wrote), the Merkle passes over them keeping every parent, and `bao_place` writing
//! each parent's pair at its place; all in one submission that also reads back the root's pair
//! (and a host destination's parents), waited for once.

use super::device::{Gpu, PooledScratch};
use super::errors::scoped;
use super::merkle::record_kept;
use super::passes::{binding, grid, mapped, max_binding, read_buffer, submit_and_map, write_params, PassTimer};
use super::pipelines::{PARAMS_BYTES, PARAMS_STRIDE, PIECES_BYTES, WORKGROUP};
use super::resident::ResidentHasher;
use crate::backends::gpu::bao::{root_pair_at, run_count, steps, Step};
use crate::backends::gpu::resident::OutboardDest;
use crate::core::compress::Cv;
use crate::core::constants::{flags, CHUNK_LEN};
use crate::tree::bao_shape::{Order, Tree};
use crate::tree::{merge_subtrees_root, Domain, Error, Result, Timings, TreeMode, MAX_SUBTREE};
use blake3::Hash;

/// Where the readback buffer holds the root's pair, the call's two timestamps, and a host
/// destination's parents.
const PAIR_AT: u64 = 0;
const STAMPS_AT: u64 = 64;
const PARENTS_AT: u64 = 80;

/// What an outboard needs on the device besides the caller's buffers and the segment and Merkle
/// scratch, kept per device between calls (so that a warm call allocates nothing): the groups'
/// chaining values, the inner nodes with the root's pair after them, the parameters of
/// `bao_place` (block 0) and `bao_fold` (one block each after it), the parents of a host
/// destination, the readback, and the call's timestamps.
pub(crate) struct BaoScratch {
    groups_cap: u64,
    params_cap: u64,
    parents_cap: u64,
    groups: ::wgpu::Buffer,
    inner: ::wgpu::Buffer,
    params: ::wgpu::Buffer,
    params_shadow: Vec<u8>,
    parents: ::wgpu::Buffer,
    readback: ::wgpu::Buffer,
    timer: Option<PassTimer>,
}

impl PooledScratch for BaoScratch {
    const MAX_IDLE: usize = 2;
    fn bytes(&self) -> u64 {
        2 * self.groups_cap * 32 + 2 * self.parents_cap
    }
}

impl BaoScratch {
    /// Room for `groups` groups, `blocks` parameter blocks and `parents` bytes of host parents.
    fn new(gpu: &Gpu, groups: u64, blocks: u64, parents: u64) -> BaoScratch {
        let storage = |label, size| gpu.storage_buffer(label, size, ::wgpu::BufferUsages::COPY_DST);
        BaoScratch {
            groups_cap: groups,
            params_cap: blocks,
            parents_cap: parents,
            groups: storage("b3accel bao groups", groups * 32),
            inner: gpu.storage_buffer("b3accel bao inner", (groups + 1) * 32, ::wgpu::BufferUsages::COPY_SRC),
            params: gpu.device.create_buffer(&::wgpu::BufferDescriptor {
                label: Some("b3accel bao params"),
                size: blocks * PARAMS_STRIDE,
                usage: ::wgpu::BufferUsages::UNIFORM | ::wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            params_shadow: Vec::new(),
            parents: gpu.storage_buffer("b3accel bao parents", parents.max(64), ::wgpu::BufferUsages::COPY_SRC),
            readback: read_buffer(gpu, "b3accel bao readback", PARENTS_AT + parents),
            timer: PassTimer::new(gpu, true),
        }
    }

    fn fits(&self, groups: u64, blocks: u64, parents: u64) -> bool {
        self.groups_cap >= groups && self.params_cap >= blocks && self.parents_cap >= parents
    }
}

impl ResidentHasher {
    /// The outboard of `tree` over the bytes of `buffer` from byte `offset` (checked by the
    /// caller) into `out`, for two groups or more; returns the hash. `t` gets the device's time
    /// (the submission's span by its timestamps, where the device has them).
    pub(super) fn outboard_on_device(
        &self,
        buffer: &::wgpu::Buffer,
        offset: u64,
        tree: Tree,
        order: Order,
        out: OutboardDest<'_, ::wgpu::Buffer>,
        t: &mut Timings,
    ) -> Result<Hash> {
        let gpu: &Gpu = &self.gpu;
        let n = tree.groups();
        debug_assert!(n >= 2);
        // Each pass binds the groups' chaining values or the inner nodes whole.
        if n >= 1 << 31 || (n + 1) * 32 > max_binding(gpu) {
            return Err(Error::InvalidInput(format!(
                "bao outboard: the chaining values of {n} groups do not fit in one storage binding of {}",
                gpu.id
            )));
        }
        let steps = steps(&tree, gpu.max_segment_chunks);
        // Groups larger than a segment, each a resident subtree hash of its own (a submission and
        // a wait each): only where a group is larger than the device's largest binding.
        let mut alone: Vec<(u64, Cv)> = Vec::new();
        for step in &steps {
            if let Step::Alone { group, len } = *step {
                let at = offset + group * tree.group_len();
                let node = self.root(buffer, at, len, group << tree.group_log(), Domain::HASH)?;
                t.kernel += node.kernel;
                alone.push((group, node.value.chaining_value()));
            }
        }
        let runs = run_count(&steps);
        let run_chunks = steps.iter().map(|s| match *s {
            Step::Capped { chunks, .. } | Step::Pieces { chunks, .. } => chunks,
            _ => 1,
        });
        let cap = run_chunks.max().unwrap_or(1);
        let folds = steps.iter().filter(|s| matches!(s, Step::Fold { .. })).count() as u64;
        let parents = match out {
            OutboardDest::Host(_) => tree.outboard_len(),
            OutboardDest::Device(_) => 0,
        };
        scoped(&gpu.device, gpu.id, || {
            gpu.with_scratch(cap, runs.max(1), |scr| {
                gpu.pool::<BaoScratch>().with(
                    |s| s.fits(n, folds + 1, parents),
                    || Ok(BaoScratch::new(gpu, n, folds + 1, parents)),
                    |bao| {
                        for (group, cv) in &alone {
                            gpu.queue.write_buffer(&bao.groups, group * 32, cv);
                        }
                        let enc = gpu.device.create_command_encoder(&::wgpu::CommandEncoderDescriptor {
                            label: Some("b3accel bao outboard"),
                        });
                        self.encode_outboard(enc, scr, bao, buffer, offset, &tree, &steps, order, out, t)
                    },
                )
            })
        })
    }

    /// Encodes the groups' steps, the Merkle passes and `bao_place` into `enc`, submits it, and
    /// reads back the root's pair (and host parents): the hash.
    #[allow(clippy::too_many_arguments)]
    fn encode_outboard(
        &self,
        mut enc: ::wgpu::CommandEncoder,
        scr: &mut super::segment::Scratch,
        bao: &mut BaoScratch,
        buffer: &::wgpu::Buffer,
        offset: u64,
        tree: &Tree,
        steps: &[Step],
        order: Order,
        out: OutboardDest<'_, ::wgpu::Buffer>,
        t: &mut Timings,
    ) -> Result<Hash> {
        let gpu: &Gpu = &self.gpu;
        let (n, log) = (tree.groups(), tree.group_log());
        let timer = bao.timer.as_ref().filter(|_| gpu.timestamps);
        if let Some(timer) = timer {
            timer.stamp(&mut enc, 0);
        }
        // The shader's `BaoParams`: block 0 is bao_place's, then one per fold.
        let mut blocks = vec![[n as u32, u32::from(order == Order::Post), 0, 0, 0, 0, 0, 0]];
        let mut fold_groups = Vec::new();
        let mut seg = 0;
        for step in steps {
            let at = |first: u64| offset + first * tree.group_len();
            match *step {
                Step::Capped { first, chunks, .. } => {
                    let capped_to = Some((&bao.groups, first * 32));
                    let (counter, cap) = (first << log, 1 << log);
                    gpu.encode_segment(
                        &mut enc,
                        scr,
                        seg,
                        buffer,
                        false,
                        at(first),
                        chunks,
                        counter,
                        Domain::HASH,
                        None,
                        0,
                        cap,
                        capped_to,
                    );
                    seg += 1;
                }
                Step::Pieces { first, chunks } => {
                    let counter = first << log;
                    gpu.encode_segment(
                        &mut enc,
                        scr,
                        seg,
                        buffer,
                        false,
                        at(first),
                        chunks,
                        counter,
                        Domain::HASH,
                        None,
                        0,
                        MAX_SUBTREE,
                        None,
                    );
                    seg += 1;
                }
                Step::Fold { group, chunks, partial } => {
                    let counter = (group << log) + chunks;
                    let (lo, hi) = (counter as u32, (counter >> 32) as u32);
                    blocks.push([n as u32, 0, group as u32, chunks as u32, partial as u32, lo, hi, 0]);
                    // The pieces of the run just before (any slot where there are none).
                    let pieces_at = seg.saturating_sub(1) * PIECES_BYTES;
                    // The partial chunk, from a storage-aligned byte (the range's start is one,
                    // and groups and chunks are multiples of every alignment the device may ask);
                    // without one, any word of the range, unread.
                    let (partial_at, partial_bytes) = match partial {
                        0 => (offset, 4),
                        p => (at(group) + chunks * CHUNK_LEN as u64, p.next_multiple_of(4)),
                    };
                    let bg = gpu.device.create_bind_group(&::wgpu::BindGroupDescriptor {
                        label: Some("b3accel bao_fold"),
                        layout: &gpu.pipes.fold_layout,
                        entries: &[
                            ::wgpu::BindGroupEntry {
                                binding: 0,
                                resource: binding(&scr.pieces, pieces_at, PIECES_BYTES),
                            },
                            ::wgpu::BindGroupEntry { binding: 1, resource: binding(&bao.groups, 0, n * 32) },
                            ::wgpu::BindGroupEntry { binding: 4, resource: binding(buffer, partial_at, partial_bytes) },
                            ::wgpu::BindGroupEntry { binding: 7, resource: binding(&bao.params, 0, PARAMS_BYTES) },
                        ],
                    });
                    fold_groups.push(bg);
                }
                Step::Alone { .. } => {}
            }
        }
        write_params(gpu, &bao.params, &mut bao.params_shadow, block_bytes(&blocks));
        if !fold_groups.is_empty() {
            let mut pass = enc.begin_compute_pass(&::wgpu::ComputePassDescriptor {
                label: Some("b3accel bao_fold"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&gpu.pipes.bao_fold);
            for (i, bg) in fold_groups.iter().enumerate() {
                pass.set_bind_group(0, bg, &[((i as u64 + 1) * PARAMS_STRIDE) as u32]);
                pass.dispatch_workgroups(1, 1, 1);
            }
        }
        record_kept(gpu, enc, &bao.groups, n, &bao.inner, flags::PARENT, |enc| self.place(enc, bao, tree, out, t))
    }

    /// Encodes `bao_place` into `out` and the copies back, submits, and returns the root hash
    /// from the root's pair.
    fn place(
        &self,
        mut enc: ::wgpu::CommandEncoder,
        bao: &BaoScratch,
        tree: &Tree,
        out: OutboardDest<'_, ::wgpu::Buffer>,
        t: &mut Timings,
    ) -> Result<Hash> {
        let gpu: &Gpu = &self.gpu;
        let (n, len) = (tree.groups(), tree.outboard_len());
        let dest = match &out {
            OutboardDest::Device(b) => *b,
            OutboardDest::Host(_) => &bao.parents,
        };
        let bg = gpu.device.create_bind_group(&::wgpu::BindGroupDescriptor {
            label: Some("b3accel bao_place"),
            layout: &gpu.pipes.bao_layout,
            entries: &[
                ::wgpu::BindGroupEntry { binding: 0, resource: binding(&bao.groups, 0, n * 32) },
                ::wgpu::BindGroupEntry { binding: 1, resource: binding(dest, 0, len) },
                ::wgpu::BindGroupEntry { binding: 2, resource: binding(&bao.inner, 0, (n + 1) * 32) },
                ::wgpu::BindGroupEntry { binding: 7, resource: binding(&bao.params, 0, PARAMS_BYTES) },
            ],
        });
        let (x, y) = grid(gpu, (n - 1).div_ceil(WORKGROUP as u64))?;
        {
            let mut pass = enc.begin_compute_pass(&::wgpu::ComputePassDescriptor {
                label: Some("b3accel bao_place"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&gpu.pipes.bao_place);
            pass.set_bind_group(0, &bg, &[0]);
            pass.dispatch_workgroups(x, y, 1);
        }
        // The root's pair from after the inner nodes: a caller's destination need not allow
        // copies.
        enc.copy_buffer_to_buffer(&bao.inner, root_pair_at(n) * 32, &bao.readback, PAIR_AT, 64);
        if matches!(out, OutboardDest::Host(_)) {
            enc.copy_buffer_to_buffer(&bao.parents, 0, &bao.readback, PARENTS_AT, len);
        }
        let timer = bao.timer.as_ref().filter(|_| gpu.timestamps);
        if let Some(timer) = timer {
            timer.stamp(&mut enc, 1);
            timer.finish(&mut enc, &bao.readback, STAMPS_AT);
        }
        submit_and_map(gpu, enc, &[&bao.readback])?;
        let view = mapped(gpu, &bao.readback)?;
        let pair = &view[PAIR_AT as usize..PAIR_AT as usize + 64];
        let (left, right) = (pair[..32].try_into().expect("32 bytes"), pair[32..].try_into().expect("32 bytes"));
        if timer.is_some() {
            t.kernel += PassTimer::duration(gpu, &view[STAMPS_AT as usize..STAMPS_AT as usize + 16]);
        }
        if let OutboardDest::Host(h) = out {
            h.copy_from_slice(&view[PARENTS_AT as usize..(PARENTS_AT + len) as usize]);
        }
        drop(view);
        bao.readback.unmap();
        Ok(merge_subtrees_root(&left, &right, TreeMode::Hash))
    }
}

/// The parameter blocks, each at its `PARAMS_STRIDE`.
fn block_bytes(blocks: &[[u32; 8]]) -> Vec<u8> {
    super::passes::params_bytes(blocks.iter().map(|b| &b[..]))
}
