//! `Backend::hash_blocks` on a wgpu device: each 64-byte block hashed as a one-block message.

use super::device::Gpu;
use super::pipelines::{Params, PARAMS_BYTES, PARAMS_STRIDE, WORKGROUP};
use super::wait::MapTicket;
use crate::tree::{Error, Result};

/// `Backend::hash_blocks` on the device: one invocation per block, in dispatches of at most the
/// device's dispatch and binding limits.
pub(crate) fn hash_blocks(gpu: &Gpu, blocks: &[[u8; 64]], out: &mut [[u8; 32]]) -> Result<()> {
    let limits = gpu.device.limits();
    let per_dispatch = (limits.max_compute_workgroups_per_dimension as u64 * WORKGROUP as u64)
        .min(limits.max_storage_buffer_binding_size / 64)
        .min(1 << 22) as usize;
    for (blocks, out) in blocks.chunks(per_dispatch).zip(out.chunks_mut(per_dispatch)) {
        let n = blocks.len() as u64;
        let input = gpu.storage_buffer("b3accel blocks", n * 64, ::wgpu::BufferUsages::COPY_DST);
        let mut bytes = Vec::with_capacity(blocks.len() * 64);
        for b in blocks {
            bytes.extend_from_slice(b);
        }
        gpu.queue.write_buffer(&input, 0, &bytes);
        let output = gpu.storage_buffer("b3accel hashes", n * 32, ::wgpu::BufferUsages::COPY_SRC);
        let dummy = gpu.storage_buffer("b3accel unused", 32, ::wgpu::BufferUsages::empty());
        let params = gpu.device.create_buffer(&::wgpu::BufferDescriptor {
            label: Some("b3accel params"),
            size: PARAMS_STRIDE,
            usage: ::wgpu::BufferUsages::UNIFORM | ::wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let p = Params { n_items: n as u32, ..Default::default() };
        gpu.queue.write_buffer(&params, 0, &p.bytes());
        let readback = gpu.device.create_buffer(&::wgpu::BufferDescriptor {
            label: Some("b3accel readback"),
            size: n * 32,
            usage: ::wgpu::BufferUsages::MAP_READ | ::wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let bg = gpu.device.create_bind_group(&::wgpu::BindGroupDescriptor {
            label: Some("b3accel hash_blocks"),
            layout: &gpu.pipes.layout,
            entries: &[
                ::wgpu::BindGroupEntry { binding: 0, resource: input.as_entire_binding() },
                ::wgpu::BindGroupEntry { binding: 1, resource: output.as_entire_binding() },
                ::wgpu::BindGroupEntry { binding: 2, resource: dummy.as_entire_binding() },
                ::wgpu::BindGroupEntry {
                    binding: 3,
                    resource: ::wgpu::BindingResource::Buffer(::wgpu::BufferBinding {
                        buffer: &params,
                        offset: 0,
                        size: ::wgpu::BufferSize::new(PARAMS_BYTES),
                    }),
                },
            ],
        });
        let mut enc =
            gpu.device.create_command_encoder(&::wgpu::CommandEncoderDescriptor { label: Some("b3accel hash_blocks") });
        {
            let mut pass = enc.begin_compute_pass(&::wgpu::ComputePassDescriptor {
                label: Some("b3accel hash_blocks"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&gpu.pipes.blocks);
            pass.set_bind_group(0, &bg, &[0]);
            pass.dispatch_workgroups(n.div_ceil(WORKGROUP as u64) as u32, 1, 1);
        }
        enc.copy_buffer_to_buffer(&output, 0, &readback, 0, n * 32);
        let index = gpu.queue.submit([enc.finish()]);
        let ticket = MapTicket::begin(&readback, ::wgpu::MapMode::Read);
        gpu.wait(&index, &ticket)?;
        let view = readback
            .get_mapped_range(..)
            .map_err(|e| Error::Device { device: gpu.id, detail: format!("readback buffer not mapped: {e:?}") })?;
        for (o, h) in out.iter_mut().zip(view.chunks_exact(32)) {
            o.copy_from_slice(h);
        }
    }
    Ok(())
}
