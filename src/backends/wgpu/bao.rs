//! Resident bao outboards on a wgpu device (the plan in `gpu::bao`): the groups' chaining values
//! into a device buffer (capped segment passes, a submission each), the Merkle passes over them
//! keeping every parent, and `bao_place` writing each parent's pair at its place, in the
//! submission that reads back the root's two children (and a host destination's parents).

use super::device::Gpu;
use super::errors::scoped;
use super::merkle::merkle;
use super::passes::{binding, grid, mapped, read_buffer, submit_and_map};
use super::pipelines::{PARAMS_BYTES, WORKGROUP};
use super::resident::ResidentHasher;
use crate::backends::gpu::bao::{root_children, runs, GroupRun};
use crate::backends::gpu::resident::{MerkleInner, OutboardDest};
use crate::core::constants::flags;
use crate::tree::bao_shape::{Order, Tree};
use crate::tree::{merge_subtrees_root, Domain, Result, Timings, TreeMode};
use blake3::Hash;

impl ResidentHasher {
    /// The outboard of `tree` over the bytes of `buffer` from byte `offset` (checked by the
    /// caller) into `out`, for two groups or more; returns the hash. `t` gets the device's kernel times.
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
        let (n, log, group_len) = (tree.groups(), tree.group_log(), tree.group_len());
        debug_assert!(n >= 2);
        let usage = ::wgpu::BufferUsages::COPY_SRC | ::wgpu::BufferUsages::COPY_DST;
        let groups = gpu.storage_buffer("b3accel bao groups", n * 32, usage);
        let inner = gpu.storage_buffer("b3accel bao inner", (n - 1) * 32, usage);
        for run in runs(&tree, gpu.max_segment_chunks) {
            match run {
                GroupRun::Alone { index, len } => {
                    let at = offset + index * group_len;
                    let node = self.root(buffer, at, len, index << log, Domain::HASH)?;
                    t.kernel += node.kernel;
                    gpu.queue.write_buffer(&groups, index * 32, &node.value.chaining_value());
                }
                GroupRun::Capped { first, groups: count } => scoped(&gpu.device, gpu.id, || {
                    // One submission per run: its parameters are written before it is submitted.
                    let chunks = count << log;
                    gpu.with_scratch(chunks, 1, |scr| {
                        let mut enc = gpu.device.create_command_encoder(&::wgpu::CommandEncoderDescriptor {
                            label: Some("b3accel bao groups"),
                        });
                        let at = offset + first * group_len;
                        let (counter, cap) = (first << log, 1 << log);
                        gpu.encode_segment(
                            &mut enc,
                            scr,
                            0,
                            buffer,
                            false,
                            at,
                            chunks,
                            counter,
                            Domain::HASH,
                            None,
                            0,
                            cap,
                            None,
                        );
                        let cvs = &scr.capped.as_ref().expect("a capped segment's CVs").cvs;
                        enc.copy_buffer_to_buffer(cvs, 0, &groups, first * 32, count * 32);
                        gpu.queue.submit([enc.finish()]);
                        Ok(())
                    })
                })?,
            }
        }
        merkle(gpu, &groups, 0, n, MerkleInner::Device(&inner), flags::PARENT, Some(&mut *t))?;
        scoped(&gpu.device, gpu.id, || self.place(&groups, &inner, tree, order, out))
    }

    /// `bao_place` into `out`, and the root hash from the root's children.
    fn place(
        &self,
        groups: &::wgpu::Buffer,
        inner: &::wgpu::Buffer,
        tree: Tree,
        order: Order,
        out: OutboardDest<'_, ::wgpu::Buffer>,
    ) -> Result<Hash> {
        let gpu: &Gpu = &self.gpu;
        let (n, len) = (tree.groups(), tree.outboard_len());
        let own = matches!(out, OutboardDest::Host(_))
            .then(|| gpu.storage_buffer("b3accel bao parents", len, ::wgpu::BufferUsages::COPY_SRC));
        let dest = match &out {
            OutboardDest::Device(b) => *b,
            OutboardDest::Host(_) => own.as_ref().expect("made above"),
        };
        let params = gpu.device.create_buffer(&::wgpu::BufferDescriptor {
            label: Some("b3accel bao params"),
            size: PARAMS_BYTES,
            usage: ::wgpu::BufferUsages::UNIFORM | ::wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let words = [n as u32, u32::from(order == Order::Post), 0, 0];
        gpu.queue.write_buffer(&params, 0, &words.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<_>>());
        let bg = gpu.device.create_bind_group(&::wgpu::BindGroupDescriptor {
            label: Some("b3accel bao_place"),
            layout: &gpu.pipes.bao_layout,
            entries: &[
                ::wgpu::BindGroupEntry { binding: 0, resource: binding(groups, 0, n * 32) },
                ::wgpu::BindGroupEntry { binding: 1, resource: binding(dest, 0, len) },
                ::wgpu::BindGroupEntry { binding: 2, resource: inner.as_entire_binding() },
                ::wgpu::BindGroupEntry { binding: 7, resource: binding(&params, 0, PARAMS_BYTES) },
            ],
        });
        let (x, y) = grid(gpu, (n - 1).div_ceil(WORKGROUP as u64))?;
        let readback = read_buffer(gpu, "b3accel bao readback", 64 + own.as_ref().map_or(0, |_| len));
        let mut enc =
            gpu.device.create_command_encoder(&::wgpu::CommandEncoderDescriptor { label: Some("b3accel bao_place") });
        {
            let mut pass = enc.begin_compute_pass(&::wgpu::ComputePassDescriptor {
                label: Some("b3accel bao_place"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&gpu.pipes.bao_place);
            pass.set_bind_group(0, &bg, &[0]);
            pass.dispatch_workgroups(x, y, 1);
        }
        // The root's children from the groups and inner nodes: a caller's destination need not
        // allow copies.
        for (i, (in_groups, at)) in root_children(&tree).into_iter().enumerate() {
            enc.copy_buffer_to_buffer(if in_groups { groups } else { inner }, at, &readback, i as u64 * 32, 32);
        }
        if let Some(own) = &own {
            enc.copy_buffer_to_buffer(own, 0, &readback, 64, len);
        }
        submit_and_map(gpu, enc, &[&readback])?;
        let view = mapped(gpu, &readback)?;
        let (left, right) = (view[..32].try_into().expect("32 bytes"), view[32..64].try_into().expect("32 bytes"));
        if let OutboardDest::Host(h) = out {
            h.copy_from_slice(&view[64..]);
        }
        drop(view);
        readback.unmap();
        Ok(merge_subtrees_root(&left, &right, TreeMode::Hash))
    }
}
