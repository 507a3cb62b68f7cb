//! One wgpu device made ready to hash: its limits checked, the pipelines built, its kept buffers,
//! and what its callbacks report.

use super::errors::scoped;
use super::options::{Loads, WgpuOptions, DEFAULT_MERKLE_LEVELS, MANY_ROUND_BYTES};
use super::paths::{has_mapped_pieces, has_timestamps};
use super::pipeline_cache::DiskCache;
use super::pipelines::{self, Pipelines, LOG_WORKGROUP, PARAMS_STRIDE, PIECES_BYTES};
use crate::backends::gpu::pool::Pool;
use crate::core::constants::CHUNK_LEN;
use crate::tree::{Device, Error, Result};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// What the device's callbacks reported (our own device only): they only record, never panic.
#[derive(Default)]
pub(super) struct Health {
    pub(super) lost: Mutex<Option<String>>,
    pub(super) uncaptured: Mutex<Option<String>>,
}

/// One device's pipelines and limits: the backend's own device, or a caller's.
pub(crate) struct Gpu {
    pub(super) device: ::wgpu::Device,
    pub(super) queue: ::wgpu::Queue,
    pub(super) pipes: Pipelines,
    /// The device as errors name it.
    pub(super) id: Device,
    /// Largest segment in chunks: a power of two that one storage binding and one dispatch
    /// dimension can hold.
    pub(super) max_segment_chunks: u64,
    /// Largest storage binding, in bytes.
    pub(super) max_binding: u64,
    /// `min_storage_buffer_offset_alignment`.
    pub(super) storage_align: u64,
    /// Pass and in-encoder timestamps are both available.
    pub(super) timestamps: bool,
    /// Nanoseconds per timestamp tick.
    pub(super) timestamp_period: f64,
    /// The passes write their results where the host maps them (`paths::has_mapped_pieces`).
    pub(super) mapped_pieces: bool,
    /// The file the device's pipeline cache is kept in, where it has one (`pipeline_cache.rs`).
    pub(super) pipeline_cache: Option<PathBuf>,
    pub(super) health: Option<Arc<Health>>,
    /// Scratch buffers kept for the next call (`segment.rs`, `merkle.rs`, `many.rs`).
    pub(super) pools: ScratchPools,
    /// Levels per Merkle dispatch.
    pub(super) merkle_span: u32,
    /// Bytes of results one host-bound `hash_many` round brings back (`many.rs`).
    pub(super) many_round_bytes: u64,
}

/// Locks a mutex, through a poisoned one too (the callbacks only record).
pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Gpu {
    /// Checks the limits and builds the pipelines on `device`.
    pub(super) fn new(
        device: ::wgpu::Device,
        queue: ::wgpu::Queue,
        id: Device,
        opts: &WgpuOptions,
        health: Option<Arc<Health>>,
    ) -> Result<Gpu> {
        let limits = device.limits();
        let need = match opts.loads {
            Loads::Direct => pipelines::WORKGROUP_BYTES,
            Loads::Staged => pipelines::STAGED_WORKGROUP_BYTES,
        };
        if limits.max_compute_workgroup_storage_size < need
            || limits.max_compute_invocations_per_workgroup < pipelines::WORKGROUP
            || limits.max_compute_workgroup_size_x < pipelines::WORKGROUP
            || limits.max_storage_buffers_per_shader_stage < 3
        {
            return Err(Error::Unavailable {
                device: id,
                reason: format!(
                    "the device's limits are too low for the BLAKE3 shaders ({:?} loads need {need} bytes of \
                     workgroup memory and {} invocations per workgroup; it has {} and {})",
                    opts.loads,
                    pipelines::WORKGROUP,
                    limits.max_compute_workgroup_storage_size,
                    limits.max_compute_invocations_per_workgroup
                ),
            });
        }
        // A segment is one storage binding (and one buffer) and at most one dispatch dimension
        // of workgroups; a power of two so segments are complete subtrees. 2^22 chunks (4 GiB)
        // keeps every index in the shader below 2^32.
        let binding = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
        let by_binding = prev_pow2(binding / CHUNK_LEN as u64);
        let by_dispatch = prev_pow2(limits.max_compute_workgroups_per_dimension as u64 * pipelines::WORKGROUP as u64);
        let max_segment_chunks = by_binding.min(by_dispatch).min(1 << 22);
        if max_segment_chunks == 0 {
            return Err(Error::Unavailable {
                device: id,
                reason: format!("storage bindings of at most {binding} bytes cannot hold a chunk"),
            });
        }
        let storage_align = (limits.min_storage_buffer_offset_alignment as u64).max(4);
        if limits.min_uniform_buffer_offset_alignment as u64 > PARAMS_STRIDE || storage_align > PIECES_BYTES {
            return Err(Error::Unavailable {
                device: id,
                reason: "buffer offset alignments above 256 bytes are not supported".into(),
            });
        }
        let timestamps = has_timestamps(device.features());
        let timestamp_period = queue.get_timestamp_period() as f64;
        let mapped_pieces = has_mapped_pieces(device.features());
        let disk = DiskCache::open(&device);
        let cache = disk.as_ref().map(DiskCache::cache);
        let pipes = scoped(&device, id, || Ok(Pipelines::new(&device, opts.loads, opts.checks, cache))).map_err(
            |e| match e {
                Error::Device { device, detail } => Error::KernelBuild { device, log: detail },
                other => other,
            },
        )?;
        if let Some(d) = &disk {
            d.save();
        }
        Ok(Gpu {
            device,
            queue,
            pipes,
            id,
            max_segment_chunks,
            max_binding: binding,
            storage_align,
            timestamps,
            timestamp_period,
            mapped_pieces,
            pipeline_cache: disk.map(|d| d.path().to_path_buf()),
            health,
            pools: ScratchPools::default(),
            merkle_span: opts.merkle_levels.unwrap_or(DEFAULT_MERKLE_LEVELS).clamp(1, LOG_WORKGROUP + 1),
            // Small segments (tests) make small hash_many rounds too.
            many_round_bytes: opts
                .segment_bytes
                .map_or(MANY_ROUND_BYTES, |s| (s as u64).clamp(1 << 10, MANY_ROUND_BYTES)),
            // Merkle and hash_many buffers kept per device: the largest sets serve every smaller
            // call too.
        })
    }

    /// An error if the device was lost or reported an error outside our scopes.
    pub(super) fn check_health(&self) -> Result<()> {
        if let Some(h) = &self.health {
            if let Some(msg) = lock(&h.lost).clone() {
                return Err(Error::Device { device: self.id, detail: format!("device lost: {msg}") });
            }
            if let Some(msg) = lock(&h.uncaptured).take() {
                return Err(Error::Device { device: self.id, detail: msg });
            }
        }
        Ok(())
    }

    /// A STORAGE buffer (plus `extra` usages) of `size` bytes.
    pub(super) fn storage_buffer(&self, label: &str, size: u64, extra: ::wgpu::BufferUsages) -> ::wgpu::Buffer {
        self.device.create_buffer(&::wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage: ::wgpu::BufferUsages::STORAGE | extra,
            mapped_at_creation: false,
        })
    }
}

/// Largest power of two <= x (0 for 0).
pub(super) fn prev_pow2(x: u64) -> u64 {
    if x == 0 {
        0
    } else {
        1 << (63 - x.leading_zeros())
    }
}

/// Device memory a kernel's host code keeps between calls (segment, Merkle and `hash_many`
/// scratch): each such type says how many to keep idle and which to let go first, so that
/// [`Gpu`] can pool it without naming it.
pub(super) trait PooledScratch: Send + 'static {
    /// How many of this type a device keeps between calls.
    const MAX_IDLE: usize;
    /// Device bytes held: the largest idle ones are let go last.
    fn bytes(&self) -> u64;
}

/// One [`Pool`] per [`PooledScratch`] type, made on first use.
#[derive(Default)]
pub(super) struct ScratchPools(Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>);

impl Gpu {
    /// This device's pool of `T`.
    pub(super) fn pool<T: PooledScratch>(&self) -> Arc<Pool<T>> {
        let any = lock(&self.pools.0)
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(Pool::<T>::new(usize::MAX, T::MAX_IDLE, T::bytes)))
            .clone();
        any.downcast::<Pool<T>>().expect("the pool kept under T's type id is a Pool<T>")
    }
}
