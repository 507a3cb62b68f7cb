//! What the Merkle and `hash_many` passes on a wgpu device share: binding limits and 2D grids,
//! checks of a caller's buffers, parameter blocks, pass timestamps, and submit-and-map.

use super::device::Gpu;
use super::pipelines::PARAMS_STRIDE;
use super::wait::MapTicket;
use crate::tree::{Error, Result};
use std::time::Duration;

/// The largest storage binding this code uses: the device's limit, kept below 2^31 bytes so that
/// every byte index in the shaders fits in 32 bits.
pub(super) fn max_binding(gpu: &Gpu) -> u64 {
    let l = gpu.device.limits();
    l.max_storage_buffer_binding_size.min(l.max_buffer_size).min(1 << 31)
}

/// A 2D grid of at least `groups` workgroups within the per-dimension limit: (x, y).
pub(super) fn grid(gpu: &Gpu, groups: u64) -> Result<(u32, u32)> {
    let max = gpu.device.limits().max_compute_workgroups_per_dimension.max(1) as u64;
    let x = groups.clamp(1, max);
    let y = groups.div_ceil(x);
    if y > max {
        return Err(Error::InvalidInput(format!("{groups} workgroups do not fit in a {max} x {max} grid")));
    }
    Ok((x as u32, y as u32))
}

/// Checks a caller's buffer: STORAGE usage, aligned offset, `len` bytes (rounded up to whole
/// words) inside it.
pub(super) fn check_buffer(gpu: &Gpu, what: &str, buffer: &::wgpu::Buffer, offset: u64, len: u64) -> Result<()> {
    if !buffer.usage().contains(::wgpu::BufferUsages::STORAGE) {
        return Err(Error::InvalidInput(format!(
            "{what}: the buffer needs STORAGE usage (it has {:?})",
            buffer.usage()
        )));
    }
    if !offset.is_multiple_of(gpu.storage_align) {
        return Err(Error::InvalidInput(format!(
            "{what}: offset {offset} is not a multiple of the device's storage offset alignment {}",
            gpu.storage_align
        )));
    }
    if offset.checked_add(len.next_multiple_of(4)).is_none_or(|end| end > buffer.size()) {
        return Err(Error::InvalidInput(format!(
            "{what}: {len} bytes at offset {offset} (rounded up to whole 4-byte words) do not fit in a buffer of {} bytes",
            buffer.size()
        )));
    }
    Ok(())
}

pub(super) fn words_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

pub(super) fn read_buffer(gpu: &Gpu, label: &str, size: u64) -> ::wgpu::Buffer {
    gpu.device.create_buffer(&::wgpu::BufferDescriptor {
        label: Some(label),
        size,
        usage: ::wgpu::BufferUsages::MAP_READ | ::wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

pub(super) fn binding(buffer: &::wgpu::Buffer, offset: u64, size: u64) -> ::wgpu::BindingResource<'_> {
    ::wgpu::BindingResource::Buffer(::wgpu::BufferBinding { buffer, offset, size: ::wgpu::BufferSize::new(size) })
}

/// Timestamps of one compute pass, where the device has them and the caller wants them.
pub(super) struct PassTimer {
    set: ::wgpu::QuerySet,
    resolve: ::wgpu::Buffer,
}

impl PassTimer {
    pub(super) fn new(gpu: &Gpu, wanted: bool) -> Option<PassTimer> {
        (wanted && gpu.timestamps).then(|| PassTimer {
            set: gpu.device.create_query_set(&::wgpu::QuerySetDescriptor {
                label: Some("b3accel pass timer"),
                ty: ::wgpu::QueryType::Timestamp,
                count: 2,
            }),
            resolve: gpu.device.create_buffer(&::wgpu::BufferDescriptor {
                label: Some("b3accel pass timer"),
                size: 16,
                usage: ::wgpu::BufferUsages::QUERY_RESOLVE | ::wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }),
        })
    }

    pub(super) fn writes(&self) -> ::wgpu::ComputePassTimestampWrites<'_> {
        ::wgpu::ComputePassTimestampWrites {
            query_set: &self.set,
            beginning_of_pass_write_index: Some(0),
            end_of_pass_write_index: Some(1),
        }
    }

    /// Writes timestamp `i` (0 or 1) between commands of `enc` (the device has in-encoder
    /// timestamps wherever `Gpu::timestamps`), for a span longer than one pass.
    pub(super) fn stamp(&self, enc: &mut ::wgpu::CommandEncoder, i: u32) {
        enc.write_timestamp(&self.set, i);
    }

    /// Resolves the two timestamps into `readback` at byte `at` (a multiple of 8).
    pub(super) fn finish(&self, enc: &mut ::wgpu::CommandEncoder, readback: &::wgpu::Buffer, at: u64) {
        enc.resolve_query_set(&self.set, 0..2, &self.resolve, 0);
        enc.copy_buffer_to_buffer(&self.resolve, 0, readback, at, 16);
    }

    /// The pass's duration from the 16 resolved bytes.
    pub(super) fn duration(gpu: &Gpu, bytes: &[u8]) -> Duration {
        let tick = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[8 * i..8 * i + 8]);
            u64::from_le_bytes(w)
        };
        Duration::from_nanos((tick(1).saturating_sub(tick(0)) as f64 * gpu.timestamp_period) as u64)
    }
}

/// Submits `enc`, maps `readbacks` and waits for all of them.
pub(super) fn submit_and_map(gpu: &Gpu, enc: ::wgpu::CommandEncoder, readbacks: &[&::wgpu::Buffer]) -> Result<()> {
    let index = gpu.queue.submit([enc.finish()]);
    let tickets: Vec<MapTicket> = readbacks.iter().map(|b| MapTicket::begin(b, ::wgpu::MapMode::Read)).collect();
    for t in &tickets {
        gpu.wait(&index, t)?;
    }
    Ok(())
}

pub(super) fn mapped(gpu: &Gpu, buffer: &::wgpu::Buffer) -> Result<::wgpu::BufferView> {
    buffer
        .get_mapped_range(..)
        .map_err(|e| Error::Device { device: gpu.id, detail: format!("readback buffer not mapped: {e:?}") })
}

/// Writes `bytes` at the start of `params` unless it already holds them.
pub(super) fn write_params(gpu: &Gpu, params: &::wgpu::Buffer, shadow: &mut Vec<u8>, bytes: Vec<u8>) {
    if *shadow != bytes {
        gpu.queue.write_buffer(params, 0, &bytes);
        *shadow = bytes;
    }
}

pub(super) fn params_bytes<'a>(blocks: impl ExactSizeIterator<Item = &'a [u32]>) -> Vec<u8> {
    let mut bytes = vec![0u8; blocks.len() * PARAMS_STRIDE as usize];
    for (i, words) in blocks.enumerate() {
        let at = i * PARAMS_STRIDE as usize;
        bytes[at..at + 4 * words.len()].copy_from_slice(&words_bytes(words));
    }
    bytes
}

/// An error for a broken internal invariant.
pub(super) fn internal(what: &str) -> Error {
    Error::InvalidInput(format!("internal: {what}"))
}

/// Uploads `bytes` into a new STORAGE buffer (padded to whole words, at least one).
pub(super) fn upload(gpu: &Gpu, label: &str, bytes: &[u8]) -> ::wgpu::Buffer {
    let size = (bytes.len() as u64).next_multiple_of(4).max(4);
    let buf = gpu.storage_buffer(label, size, ::wgpu::BufferUsages::COPY_DST);
    let whole = bytes.len() / 4 * 4;
    if whole > 0 {
        gpu.queue.write_buffer(&buf, 0, &bytes[..whole]);
    }
    if whole < bytes.len() {
        let mut last = [0u8; 4];
        last[..bytes.len() - whole].copy_from_slice(&bytes[whole..]);
        gpu.queue.write_buffer(&buf, whole as u64, &last);
    }
    buf
}
