//! The WGSL compute-shader backend, through `wgpu` (Vulkan, Metal, DX12, GL), cargo feature `wgpu`.
//!
//! Adapters: every adapter wgpu finds on any backend it was built with (Vulkan, Metal, DX12,
//! GL), in a stable order, except those that cannot run the shaders or cannot open a device
//! (NVIDIA's GL through headless EGL, for one); `backend_status()` says why when none is left.
//! A software adapter (llvmpipe, lavapipe) is listed as [`DeviceKind::Cpu`](crate::DeviceKind),
//! works when asked for and is never what `Device::Auto` picks.
//!
//! - [`WgpuBackend`]: hashes host memory on one adapter (`Device::Wgpu(i)`), streaming inputs of
//!   any length through the device in segments, the upload of the next segment overlapping the
//!   hashing of the current one.
//! - [`ResidentHasher`]: hashes a `wgpu::Buffer` that already lies on a device, your own
//!   `wgpu::Device` or the backend's, reading back only the few chaining values and the last
//!   chunk (at most 1024 bytes); and Merkle roots and trees of leaves, and batches of
//!   equal-length messages, that lie in a `wgpu::Buffer` ([`ResidentHasher::merkle_root`],
//!   [`ResidentHasher::hash_many`]).
//!
//! Merkle trees reduce 4 levels per dispatch inside a workgroup by default (2^25 leaves: 7
//! dispatches in one submission; [`WgpuOptions::merkle_levels`] takes 1 to 9) and copy inner
//! levels back only when asked; `hash_many` hashes each message of up to one chunk in one
//! invocation, with whole 16-byte loads where the length allows (`merkle_pass`, `many_vec4` and
//! `many_chunks` in the shader, driven by `src/wgpu/merkle.rs`), back to the host
//! ([`ResidentHasher::hash_many`]) or into a device buffer ([`ResidentHasher::hash_many_into`]).
//! A device keeps the buffers these calls need (and the resident passes' parameters and bind
//! groups) between calls, so a warm call allocates nothing.
//!
//! The shaders (shaders/blake3.wgsl) compute one chunk per invocation and reduce the tree inside
//! each 256-invocation workgroup (the chunk pass 3 levels, the later passes 8), so a segment of n
//! chunks takes about (log2(n) - 3) / 8 + 2 dispatches, in one compute pass.
//! Everything BLAKE3 does beyond complete subtrees (the last chunk, merging the few subtree CVs,
//! the root, XOF) is the crate's tree module, on the CPU, as for every backend.
//!
//! ```no_run
//! use b3accel::{hash_on, Device};
//! // Device::Wgpu(0) is the first adapter `b3accel::devices()` lists with api Vulkan, GL, ...
//! let data = vec![0u8; 64 << 20];
//! assert_eq!(hash_on(Device::Wgpu(0), &data)?, blake3::hash(&data));
//! # Ok::<(), b3accel::Error>(())
//! ```

mod adapter;
mod buffers;
mod merkle;
mod pipelines;
mod resident;

pub use resident::{ResidentBreakdown, ResidentHasher};

use crate::backend::{check_blocks_args, check_subtree_args, subtree_count, Backend, Timings, MAX_SUBTREE};
use crate::compress::{Cv, CHUNK_LEN};
use crate::device::{Device, DeviceInfo};
use crate::error::{Error, Result};
use crate::tree::{self, CvStack, Domain};
use crate::{Hash, Mode};
use buffers::StreamPool;
use pipelines::{Params, Pipelines, LOG_WORKGROUP, PARAMS_BYTES, PARAMS_STRIDE, PIECES_BYTES};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(crate) use adapter::enumerate;

/// How the chunk pass loads its input.
///
/// ```
/// assert_eq!(b3accel::wgpu::Loads::default(), b3accel::wgpu::Loads::Direct);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Loads {
    /// Each invocation reads its own chunk, 16 bytes at a time.
    #[default]
    Direct,
    /// The workgroup loads block b of all its chunks together (neighbouring invocations read
    /// neighbouring words) and transposes it through workgroup memory.
    Staged,
}

/// Whether wgpu keeps its run-time bounds checks in the shaders.
///
/// Measured on an NVIDIA H200 through Vulkan (driver 580.159.04; `examples/wgpu_report.rs` at
/// commit 6bae0d5, device-resident input, median of the hashing passes by timestamp queries):
///
/// | loads  | checks        | 1 GiB              | 64 MiB           |
/// |--------|---------------|--------------------|------------------|
/// | direct | bounds-checked| 687.3 µs 1.56 TB/s | 73.8 µs 909 GB/s |
/// | direct | trusted       | 695.2 µs 1.54 TB/s | 79.0 µs 849 GB/s |
/// | staged | bounds-checked| 1953 µs 0.55 TB/s  | 155 µs 432 GB/s  |
/// | staged | trusted       | 1148 µs 0.94 TB/s  | 103 µs 654 GB/s  |
///
/// With direct loads the unchecked module is no faster (1 % slower at 1 GiB, 7 % at 64 MiB; an
/// earlier build had it 0.5 % faster, within run-to-run noise): the driver (robust buffer access)
/// and naga's analysis already make the checks nearly free, since every index is the
/// invocation's chunk times a constant plus a constant. The default therefore stays
/// [`BoundsChecked`](Self::BoundsChecked): no gain is worth an `unsafe` promise that every future
/// edit of the shader must keep. Staged loads gain much more from trusted modules (their
/// workgroup-array indexing is checked too) but lose to direct loads either way, so
/// [`Loads::Direct`] is the default.
///
/// ```
/// assert_eq!(b3accel::wgpu::ShaderChecks::default(), b3accel::wgpu::ShaderChecks::BoundsChecked);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ShaderChecks {
    /// `create_shader_module`: wgpu (naga) clamps every buffer index it cannot prove in bounds.
    #[default]
    BoundsChecked,
    /// `create_shader_module_trusted` with `ShaderRuntimeChecks::unchecked()`: no injected
    /// checks. Sound for blake3.wgsl, whose every access is in bounds by construction (see
    /// `pipelines.rs`); kept as an option for measurement.
    Trusted,
}

/// Options for [`WgpuBackend::open_with`].
///
/// ```
/// let o = b3accel::wgpu::WgpuOptions { segment_bytes: Some(1 << 20), ..Default::default() };
/// assert_eq!(o.segment_bytes, Some(1 << 20));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WgpuOptions {
    /// Bytes of host input per segment (rounded down to a power-of-two number of chunks, at
    /// least one chunk, at most what the device's limits allow). `None`: 256 MiB, or less where
    /// the device's limits are lower. Small segments force streaming (tests).
    pub segment_bytes: Option<usize>,
    /// How the chunk pass loads its input.
    pub loads: Loads,
    /// Bounds-checked or trusted shader module.
    pub checks: ShaderChecks,
    /// Tree levels one Merkle dispatch reduces inside a workgroup (1 to 9). `None`: the default,
    /// [`DEFAULT_MERKLE_LEVELS`].
    pub merkle_levels: Option<u32>,
}

/// Levels one Merkle dispatch reduces by default (see [`WgpuOptions::merkle_levels`]).
///
/// Measured on an NVIDIA H200 (Vulkan, `examples/wgpu_report.rs --merkle-levels 2,3,4,5,6,9`),
/// device-resident root of 2^25 leaves, median wall / passes: 2 levels 1.619 / 1.382 ms, 3
/// levels 1.560 / 1.364 ms, 4 levels 1.554 / 1.357 ms, 5 levels 1.692 / 1.437 ms, 6 levels
/// 1.675 / 1.499 ms, 9 levels 2.040 / 1.754 ms. Deep in-workgroup trees leave most invocations
/// idle at barriers; a few levels per dispatch keep the device full at the cost of a few more
/// (cheap) dispatches.
///
/// ```
/// assert!((1..=9).contains(&b3accel::wgpu::DEFAULT_MERKLE_LEVELS));
/// ```
pub const DEFAULT_MERKLE_LEVELS: u32 = 4;

/// The default bytes of host input per segment. Host-resident hashing is bound by host memory
/// traffic (the copy into mapped staging memory reads and writes each byte, the device's upload
/// reads it again), not by the passes. On an H200 (Vulkan; two runs of `examples/wgpu_report.rs`,
/// 1 GiB end to end) 16 MiB segments gave 29.2-29.9 / 28.2-29.3 GB/s, 64 MiB 28.8-29.8 /
/// 27.9-28.3 GB/s and 256 MiB 29.5-31.3 / 30.5-30.9 GB/s: fewer, larger segments pay fewer
/// submissions and waits. Streams are sized to the input, so small inputs never allocate this.
const DEFAULT_SEGMENT_BYTES: u64 = 256 << 20;
/// Longest wait for the device before a call gives up with an error.
const WAIT_LIMIT: Duration = Duration::from_secs(300);
/// Passes (dispatches) a segment can need: the chunk pass, then 2^22 chunks >> CHUNK_LEVELS
/// reduced 256 at a time down to one workgroup's worth (3 passes), then the last.
const MAX_PASSES: u64 = 5;
/// Levels the chunk pass reduces inside its workgroup of 256 chunks (the later passes reduce 8).
///
/// Measured on an NVIDIA H200 (Vulkan, driver 580; `examples/wgpu_report.rs --resident`, the
/// hashing passes by timestamp queries, 1 GiB / 64 MiB device-resident): 2 levels 694 / 74.0 µs,
/// 3 levels 688 / 74.5 µs, 4 levels 688 / 74.8 µs, 5 levels 693 / 76.8 µs, 6 levels 699 / 76.9
/// µs. The top levels of a workgroup's tree keep 16, 8, 4, 2, 1 invocations busy between
/// barriers while the rest of the workgroup waits; handing them to the next pass, 8 times
/// smaller, costs one more small dispatch at some sizes but frees the chunk pass's workgroups
/// sooner.
const CHUNK_LEVELS: u32 = 3;
/// How long [`Gpu::wait`] polls the device without blocking before it sleeps in the driver.
///
/// A blocking wait (`PollType::Wait`) sleeps in the driver and the kernel; on an H200 (Vulkan,
/// driver 580) the host then noticed a finished submission about 50 µs late after a short wait and
/// about 95 µs late after a 0.7 ms one (the CPU core had gone into a deeper sleep state), and ran
/// the next call's host work up to twice as slowly. Polling (`PollType::Poll`, yielding the
/// thread in between) sees the end after about 30 µs: 1 GiB device-resident went from 881 to
/// 741 µs per call, 1 MiB from 105 to 83 µs. It costs one CPU core (yielding to any other
/// thread) while a call waits, for at most this long, which covers a whole 4 GiB segment on that
/// device; longer waits then block.
const SPIN_LIMIT: Duration = Duration::from_millis(4);

/// What the device's callbacks reported (our own device only): they only record, never panic.
#[derive(Default)]
struct Health {
    lost: Mutex<Option<String>>,
    uncaptured: Mutex<Option<String>>,
}

/// One device's pipelines and limits: the backend's own device, or a caller's.
pub(crate) struct Gpu {
    device: ::wgpu::Device,
    queue: ::wgpu::Queue,
    pipes: Pipelines,
    /// The device as errors name it.
    id: Device,
    /// Largest segment in chunks: a power of two that one storage binding and one dispatch
    /// dimension can hold.
    max_segment_chunks: u64,
    /// `min_storage_buffer_offset_alignment`.
    storage_align: u64,
    /// Pass and in-encoder timestamps are both available.
    timestamps: bool,
    /// Nanoseconds per timestamp tick.
    timestamp_period: f64,
    health: Option<Arc<Health>>,
    scratch: Mutex<Vec<Scratch>>,
    /// Levels per Merkle dispatch.
    merkle_span: u32,
    /// Kept Merkle and hash_many buffers (src/wgpu/merkle.rs).
    merkle_pool: Mutex<Vec<merkle::MerkleScratch>>,
    many_pool: Mutex<Vec<merkle::ManyScratch>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A pending `map_async`: set by wgpu's callback, which only stores the outcome.
#[derive(Clone, Default)]
pub(crate) struct MapTicket(Arc<Mutex<Option<bool>>>);

impl MapTicket {
    fn begin(buffer: &::wgpu::Buffer, mode: ::wgpu::MapMode) -> MapTicket {
        let t = MapTicket::default();
        let slot = t.0.clone();
        buffer.map_async(mode, .., move |r| {
            *lock(&slot) = Some(r.is_ok());
        });
        t
    }
    /// Done once the device has finished all work submitted to `queue` so far.
    fn work_done(queue: &::wgpu::Queue) -> MapTicket {
        let t = MapTicket::default();
        let slot = t.0.clone();
        queue.on_submitted_work_done(move || {
            *lock(&slot) = Some(true);
        });
        t
    }
    fn state(&self) -> Option<bool> {
        *lock(&self.0)
    }
}

impl Gpu {
    /// Checks the limits and builds the pipelines on `device`.
    fn new(
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
        let features = device.features();
        let timestamps =
            features.contains(::wgpu::Features::TIMESTAMP_QUERY | ::wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS);
        let timestamp_period = queue.get_timestamp_period() as f64;
        let pipes =
            scoped(&device, id, || Ok(Pipelines::new(&device, opts.loads, opts.checks))).map_err(|e| match e {
                Error::Device { device, detail } => Error::KernelBuild { device, log: detail },
                other => other,
            })?;
        Ok(Gpu {
            device,
            queue,
            pipes,
            id,
            max_segment_chunks,
            storage_align,
            timestamps,
            timestamp_period,
            health,
            scratch: Mutex::new(Vec::new()),
            merkle_span: opts.merkle_levels.unwrap_or(DEFAULT_MERKLE_LEVELS).clamp(1, LOG_WORKGROUP + 1),
            merkle_pool: Mutex::new(Vec::new()),
            many_pool: Mutex::new(Vec::new()),
        })
    }

    /// An error if the device was lost or reported an error outside our scopes.
    fn check_health(&self) -> Result<()> {
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

    /// Waits until `done()` (a map callback has run), polling the device.
    fn wait(&self, index: &::wgpu::SubmissionIndex, ticket: &MapTicket) -> Result<()> {
        let start = Instant::now();
        // First poll without blocking, for up to SPIN_LIMIT (see there).
        while ticket.state().is_none() && start.elapsed() < SPIN_LIMIT {
            if let Err(e) = self.device.poll(::wgpu::PollType::Poll) {
                return Err(Error::Device { device: self.id, detail: format!("polling the device failed: {e}") });
            }
            std::thread::yield_now();
        }
        loop {
            match ticket.state() {
                Some(true) => return Ok(()),
                Some(false) => {
                    self.check_health()?;
                    return Err(Error::Device {
                        device: self.id,
                        detail: "mapping a buffer for the host failed (device lost or out of memory?)".into(),
                    });
                }
                None => {}
            }
            self.check_health()?;
            match self.device.poll(::wgpu::PollType::Wait {
                submission_index: Some(index.clone()),
                timeout: Some(Duration::from_millis(500)),
            }) {
                Ok(_) | Err(::wgpu::PollError::Timeout) => {}
                Err(e) => {
                    return Err(Error::Device {
                        device: self.id,
                        detail: format!("waiting for the device failed: {e}"),
                    })
                }
            }
            if ticket.state().is_none() {
                if start.elapsed() > WAIT_LIMIT {
                    return Err(Error::Device {
                        device: self.id,
                        detail: format!("the device did not finish within {WAIT_LIMIT:?}"),
                    });
                }
                // Another thread's poll may be delivering our callback right now.
                std::thread::sleep(Duration::from_micros(20));
            }
        }
    }

    /// The passes that hash a segment of `n` chunks, as (items, levels): the chunk pass reduces
    /// CHUNK_LEVELS levels per workgroup, every further pass LOG_WORKGROUP, until at most one
    /// workgroup's worth of items is left for the last pass, which reduces them all into pieces.
    fn plan(&self, n: u64) -> Vec<(u64, u32)> {
        let wg = pipelines::WORKGROUP as u64;
        let mut passes = Vec::new();
        let (mut items, mut levels) = (n, CHUNK_LEVELS);
        while items > wg {
            passes.push((items, levels));
            items >>= levels;
            levels = LOG_WORKGROUP;
        }
        passes.push((items, LOG_WORKGROUP + 1));
        passes
    }

    fn storage_buffer(&self, label: &str, size: u64, extra: ::wgpu::BufferUsages) -> ::wgpu::Buffer {
        self.device.create_buffer(&::wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage: ::wgpu::BufferUsages::STORAGE | extra,
            mapped_at_creation: false,
        })
    }

    /// Scratch for `segs` segments of up to `cap` chunks, from the pool or new.
    fn take_scratch(&self, cap: u64, segs: u64) -> Scratch {
        let mut pool = lock(&self.scratch);
        if let Some(pos) = pool.iter().position(|s| s.cap >= cap && s.segs >= segs) {
            return pool.swap_remove(pos);
        }
        drop(pool);
        Scratch::new(self, cap, segs)
    }

    fn give_scratch(&self, s: Scratch) {
        let mut pool = lock(&self.scratch);
        if pool.len() < 16 {
            pool.push(s);
        }
    }

    /// Encodes the passes that hash `n` chunks (1 <= n <= max_segment_chunks) lying in `src` at
    /// byte `offset` into the pieces of segment slot `seg` of `scr`: one CV per set bit of n
    /// (slot k = the subtree of 2^k chunks). `counter` is the first chunk's index.
    #[allow(clippy::too_many_arguments)]
    ///
    /// The parameters are written only where `scr` does not already hold them, and the bind
    /// groups that name only `scr`'s buffers (every pass after the first, and the first too when
    /// `src_ours`: `src` is a buffer that stays with `scr`) are kept in `scr` for the next call.
    fn encode_segment(
        &self,
        enc: &mut ::wgpu::CommandEncoder,
        scr: &mut Scratch,
        seg: u64,
        src: &::wgpu::Buffer,
        src_ours: bool,
        offset: u64,
        n: u64,
        counter: u64,
        domain: Domain,
        timestamps: Option<(&::wgpu::QuerySet, u32)>,
        first: Option<(&::wgpu::ComputePipeline, &::wgpu::BindGroup, u32)>,
    ) {
        debug_assert!(n >= 1 && n <= scr.cap && seg < scr.segs);
        let wg = pipelines::WORKGROUP as u64;
        let passes = self.plan(n);
        let params_base = seg * MAX_PASSES * PARAMS_STRIDE;
        let mut block = vec![0u8; (passes.len() as u64 * PARAMS_STRIDE) as usize];
        let mut piece_slot = 0;
        for (l, &(items, levels)) in passes.iter().enumerate() {
            let p = Params {
                key: domain.key,
                counter,
                n_items: items as u32,
                flags: domain.flags,
                piece_slot,
                src_word: 0,
                levels,
            };
            piece_slot += levels;
            let at = l * PARAMS_STRIDE as usize;
            block[at..at + PARAMS_BYTES as usize].copy_from_slice(&p.bytes());
        }
        scr.write_params(self, params_base, block);

        fn cvs(buf: &::wgpu::Buffer, count: u64) -> ::wgpu::BufferBinding<'_> {
            ::wgpu::BufferBinding { buffer: buf, offset: 0, size: ::wgpu::BufferSize::new((count * 32).max(32)) }
        }
        let make = |scr: &Scratch, l: usize, items: u64, levels: u32| {
            // Pass l reads the chunks (l = 0) or the CVs pass l-1 wrote, and writes its full
            // workgroups' CVs: ping-pong between cv_a and cv_b (pass l+2 needs 256^2 times
            // less room than pass l, so cv_a is always large enough).
            let (input, output) = if l.is_multiple_of(2) { (&scr.cv_b, &scr.cv_a) } else { (&scr.cv_a, &scr.cv_b) };
            let src_binding = if l == 0 {
                ::wgpu::BufferBinding { buffer: src, offset, size: ::wgpu::BufferSize::new(n * CHUNK_LEN as u64) }
            } else {
                cvs(input, items)
            };
            self.device.create_bind_group(&::wgpu::BindGroupDescriptor {
                label: Some("b3accel pass"),
                layout: &self.pipes.layout,
                entries: &[
                    ::wgpu::BindGroupEntry { binding: 0, resource: ::wgpu::BindingResource::Buffer(src_binding) },
                    ::wgpu::BindGroupEntry {
                        binding: 1,
                        resource: ::wgpu::BindingResource::Buffer(cvs(output, items >> levels.min(63))),
                    },
                    ::wgpu::BindGroupEntry {
                        binding: 2,
                        resource: ::wgpu::BindingResource::Buffer(::wgpu::BufferBinding {
                            buffer: &scr.pieces,
                            offset: seg * PIECES_BYTES,
                            size: ::wgpu::BufferSize::new(PIECES_BYTES),
                        }),
                    },
                    ::wgpu::BindGroupEntry {
                        binding: 3,
                        resource: ::wgpu::BindingResource::Buffer(::wgpu::BufferBinding {
                            buffer: &scr.params,
                            offset: 0,
                            size: ::wgpu::BufferSize::new(PARAMS_BYTES),
                        }),
                    },
                ],
            })
        };
        let mut bind_groups = Vec::with_capacity(passes.len());
        for (l, &(items, levels)) in passes.iter().enumerate() {
            if l == 0 && !src_ours {
                bind_groups.push(make(scr, l, items, levels));
                continue;
            }
            // Pass 0 over our own input binds it at `offset`, which is always 0 there.
            let key = (seg, l, items, if l == 0 { offset } else { 0 });
            let bg = match scr.groups.get(&key) {
                Some(bg) => bg.clone(),
                None => {
                    let bg = make(scr, l, items, levels);
                    if scr.groups.len() >= 256 {
                        scr.groups.clear();
                    }
                    scr.groups.insert(key, bg.clone());
                    bg
                }
            };
            bind_groups.push(bg);
        }
        {
            let mut pass = enc.begin_compute_pass(&::wgpu::ComputePassDescriptor {
                label: Some("b3accel segment"),
                timestamp_writes: timestamps.map(|(q, i)| ::wgpu::ComputePassTimestampWrites {
                    query_set: q,
                    beginning_of_pass_write_index: Some(i),
                    end_of_pass_write_index: Some(i + 1),
                }),
            });
            if let Some((pipeline, bg, dyn_offset)) = first {
                // Independent of the hashing passes (no buffer in common but the input, read
                // by both), so the device runs it alongside the chunk pass.
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, bg, &[dyn_offset]);
                pass.dispatch_workgroups(1, 1, 1);
            }
            for (l, (&(items, _), bg)) in passes.iter().zip(&bind_groups).enumerate() {
                pass.set_pipeline(if l == 0 { &self.pipes.chunk } else { &self.pipes.reduce });
                let dyn_offset = (params_base + l as u64 * PARAMS_STRIDE) as u32;
                pass.set_bind_group(0, bg, &[dyn_offset]);
                pass.dispatch_workgroups(items.div_ceil(wg) as u32, 1, 1);
            }
        }
        enc.copy_buffer_to_buffer(&scr.pieces, seg * PIECES_BYTES, &scr.readback, seg * READBACK_STRIDE, PIECES_BYTES);
    }
}

/// Bytes of readback per segment: the pieces, then up to 32 timestamps' worth of room.
const READBACK_STRIDE: u64 = PIECES_BYTES + 256;

/// Largest power of two <= x (0 for 0).
fn prev_pow2(x: u64) -> u64 {
    if x == 0 {
        0
    } else {
        1 << (63 - x.leading_zeros())
    }
}

/// Runs `f` inside out-of-memory, validation and internal error scopes on `device`, so that wgpu
/// reports its errors to us as values (never through the default handler, which panics).
fn scoped<T>(device: &::wgpu::Device, id: Device, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let oom = device.push_error_scope(::wgpu::ErrorFilter::OutOfMemory);
    let validation = device.push_error_scope(::wgpu::ErrorFilter::Validation);
    let internal = device.push_error_scope(::wgpu::ErrorFilter::Internal);
    let r = f();
    let internal = pollster::block_on(internal.pop());
    let validation = pollster::block_on(validation.pop());
    let oom = pollster::block_on(oom.pop());
    if let Some(e) = oom {
        return Err(Error::OutOfMemory { device: id, detail: e.to_string() });
    }
    if let Some(e) = validation.or(internal) {
        return Err(Error::Device { device: id, detail: format!("wgpu error: {e}") });
    }
    r
}

/// Per-segment scratch on the device: the CVs between passes, the pieces, the pass parameters,
/// the readback buffer, and timestamp queries where the device has them.
pub(crate) struct Scratch {
    cap: u64,
    segs: u64,
    cv_a: ::wgpu::Buffer,
    cv_b: ::wgpu::Buffer,
    pieces: ::wgpu::Buffer,
    params: ::wgpu::Buffer,
    readback: ::wgpu::Buffer,
    /// copy_tail's output (resident inputs).
    tail: ::wgpu::Buffer,
    queries: Option<(::wgpu::QuerySet, ::wgpu::Buffer)>,
    /// What each parameter block of `params` (by byte offset) last had written to it.
    params_shadow: HashMap<u64, Vec<u8>>,
    /// Bind groups naming only this scratch's buffers, by (segment, pass, items, source offset).
    groups: HashMap<(u64, usize, u64, u64), ::wgpu::BindGroup>,
}

impl Scratch {
    /// Writes `bytes` at byte `at` of `params` unless they are there already.
    fn write_params(&mut self, gpu: &Gpu, at: u64, bytes: Vec<u8>) {
        if self.params_shadow.get(&at) != Some(&bytes) {
            gpu.queue.write_buffer(&self.params, at, &bytes);
            self.params_shadow.insert(at, bytes);
        }
    }
}

/// Timestamps per segment: upload begin/end, pass begin/end, readback copy end.
const QUERIES_PER_SEG: u32 = 5;

impl Scratch {
    fn new(gpu: &Gpu, cap: u64, segs: u64) -> Scratch {
        let queries = gpu.timestamps.then(|| {
            (
                gpu.device.create_query_set(&::wgpu::QuerySetDescriptor {
                    label: Some("b3accel timestamps"),
                    ty: ::wgpu::QueryType::Timestamp,
                    count: QUERIES_PER_SEG * segs as u32,
                }),
                gpu.device.create_buffer(&::wgpu::BufferDescriptor {
                    label: Some("b3accel timestamps"),
                    size: 256 * segs,
                    usage: ::wgpu::BufferUsages::QUERY_RESOLVE | ::wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                }),
            )
        });
        Scratch {
            cap,
            segs,
            // Pass 0 writes cap >> CHUNK_LEVELS CVs to cv_a, pass 1 256 times fewer to cv_b,
            // pass 2 fewer still to cv_a.
            cv_a: gpu.storage_buffer("b3accel cv_a", (cap >> CHUNK_LEVELS).max(1) * 32, ::wgpu::BufferUsages::empty()),
            cv_b: gpu.storage_buffer(
                "b3accel cv_b",
                (cap >> CHUNK_LEVELS >> LOG_WORKGROUP).max(1) * 32,
                ::wgpu::BufferUsages::empty(),
            ),
            pieces: gpu.storage_buffer("b3accel pieces", PIECES_BYTES * segs, ::wgpu::BufferUsages::COPY_SRC),
            params: gpu.device.create_buffer(&::wgpu::BufferDescriptor {
                label: Some("b3accel params"),
                // One block of pass parameters per segment, then copy_tail's.
                size: MAX_PASSES * PARAMS_STRIDE * segs + PARAMS_STRIDE,
                usage: ::wgpu::BufferUsages::UNIFORM | ::wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            readback: gpu.device.create_buffer(&::wgpu::BufferDescriptor {
                label: Some("b3accel readback"),
                size: READBACK_STRIDE * segs + CHUNK_LEN as u64,
                usage: ::wgpu::BufferUsages::MAP_READ | ::wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            tail: gpu.storage_buffer("b3accel tail", CHUNK_LEN as u64, ::wgpu::BufferUsages::COPY_SRC),
            queries,
            params_shadow: HashMap::new(),
            groups: HashMap::new(),
        }
    }
}

/// The pieces of a segment of `n` chunks from its readback bytes: one CV per set bit, largest
/// first.
fn pieces_of(readback: &[u8], n: u64) -> Vec<Cv> {
    (0..64u64)
        .rev()
        .filter(|b| n >> b & 1 == 1)
        .map(|b| {
            let at = (b * 32) as usize;
            let mut cv = [0u8; 32];
            cv.copy_from_slice(&readback[at..at + 32]);
            cv
        })
        .collect()
}

/// Commits consecutive segments' pieces to fresh stacks: the CVs of the complete subtrees of the
/// whole run, none larger than `max_chunks`, as [`Backend::chunk_subtrees_capped`] returns them.
/// Every segment lies inside one `max_chunks`-aligned block of the run (segments are no larger
/// than the cap, both powers of two); each block's segments merge on a stack of their own. All
/// merging is the tree module's.
fn merge_segments(segments: &[(u64, Vec<Cv>)], max_chunks: u64, domain: Domain, out: &mut [Cv]) -> Result<()> {
    let total: u64 = segments.iter().map(|s| s.0).sum();
    if out.len() != subtree_count(total, max_chunks) {
        return Err(Error::InvalidInput(format!(
            "internal: {} outputs for {total} chunks capped at {max_chunks}",
            out.len()
        )));
    }
    let mut written = 0;
    let mut block = CvStack::new();
    let mut in_block = 0u64;
    let mut rest = segments.iter().peekable();
    while let Some((n, pieces)) = rest.next() {
        block.commit_runs(*n, MAX_SUBTREE, domain, |_, m, _, o| {
            if m != *n || o.len() != pieces.len() {
                return Err(Error::InvalidInput(format!("internal: segment of {n} chunks committed as a run of {m}")));
            }
            o.copy_from_slice(pieces);
            Ok(())
        })?;
        in_block += n;
        if in_block == max_chunks || rest.peek().is_none() {
            let k = in_block.count_ones() as usize;
            if written + k > out.len() {
                return Err(Error::InvalidInput(format!("internal: more subtrees than the {} outputs", out.len())));
            }
            block.subtree_cvs(domain, &mut out[written..written + k]);
            written += k;
            block = CvStack::new();
            in_block = 0;
        }
    }
    debug_assert_eq!(written, out.len());
    Ok(())
}

/// The wgpu backend on one adapter: `Device::Wgpu(i)`.
///
/// `Send + Sync`: any number of threads may hash through one backend at once; each call takes
/// its own buffers from a small pool (at most four sets alive, each two host-visible staging
/// buffers and two device buffers of one segment, sized down to the input; more callers wait
/// for a set, since one queue runs their work in turn anyway).
///
/// ```no_run
/// use b3accel::wgpu::WgpuBackend;
/// use b3accel::{xof_reader_with, Mode};
/// let gpu = WgpuBackend::open(0)?;
/// println!("{} ({})", gpu.info().name, gpu.info().api);
/// let data = vec![7u8; 10 << 20];
/// let mut out = [0u8; 32];
/// xof_reader_with(&gpu, &Mode::Hash, &data)?.fill(&mut out);
/// assert_eq!(out, *blake3::hash(&data).as_bytes());
/// # use b3accel::Backend;
/// # Ok::<(), b3accel::Error>(())
/// ```
pub struct WgpuBackend {
    info: DeviceInfo,
    gpu: Arc<Gpu>,
    segment_chunks: u64,
    streams: StreamPool,
    resident: ResidentHasher,
}

impl std::fmt::Debug for WgpuBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WgpuBackend")
            .field("device", &self.info.device)
            .field("name", &self.info.name)
            .field("api", &self.info.api)
            .field("segment_bytes", &(self.segment_chunks * CHUNK_LEN as u64))
            .field("loads", &self.gpu.pipes.loads)
            .field("checks", &self.gpu.pipes.checks)
            .finish()
    }
}

impl WgpuBackend {
    /// Opens adapter `index` (as `Device::Wgpu(index)`, in the order [`devices`](crate::devices)
    /// lists them) with the default options.
    ///
    /// ```
    /// // A missing adapter is an error, never a panic.
    /// assert!(b3accel::wgpu::WgpuBackend::open(1000).is_err());
    /// ```
    pub fn open(index: usize) -> Result<WgpuBackend> {
        WgpuBackend::open_with(index, WgpuOptions::default())
    }

    /// Opens adapter `index` with `options` (segment size, load style, shader checks).
    ///
    /// ```no_run
    /// use b3accel::wgpu::{WgpuBackend, WgpuOptions};
    /// // 64 KiB segments: a 1 MiB input streams through the device in 16 segments.
    /// let small = WgpuBackend::open_with(0, WgpuOptions { segment_bytes: Some(64 << 10), ..Default::default() })?;
    /// assert_eq!(small.segment_bytes(), 64 << 10);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn open_with(index: usize, options: WgpuOptions) -> Result<WgpuBackend> {
        let (adapter, info) = adapter::adapter(index)?;
        let id = info.device;
        let (device, queue) = adapter::open_device(&adapter, id)?;
        let health = Arc::new(Health::default());
        {
            let h = health.clone();
            device.set_device_lost_callback(move |reason, msg| {
                *lock(&h.lost) = Some(format!("{reason:?}: {msg}"));
            });
            let h = health.clone();
            device.on_uncaptured_error(Arc::new(move |e: ::wgpu::Error| {
                let mut slot = lock(&h.uncaptured);
                if slot.is_none() {
                    *slot = Some(format!("wgpu error: {e}"));
                }
            }));
        }
        let gpu = Arc::new(Gpu::new(device, queue, id, &options, Some(health))?);
        let wanted = match options.segment_bytes {
            Some(b) => (b as u64 / CHUNK_LEN as u64).max(1),
            None => DEFAULT_SEGMENT_BYTES / CHUNK_LEN as u64,
        };
        let segment_chunks = prev_pow2(wanted).min(gpu.max_segment_chunks);
        Ok(WgpuBackend {
            info,
            resident: ResidentHasher::from_gpu(gpu.clone()),
            streams: StreamPool::new(),
            gpu,
            segment_chunks,
        })
    }

    /// Bytes of host input per segment.
    ///
    /// ```no_run
    /// let gpu = b3accel::wgpu::WgpuBackend::open(0)?;
    /// assert!(gpu.segment_bytes().is_power_of_two());
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn segment_bytes(&self) -> u64 {
        self.segment_chunks * CHUNK_LEN as u64
    }

    /// The backend's `wgpu::Device`: create buffers on it to hash them with [`resident`](Self::resident).
    ///
    /// ```no_run
    /// let gpu = b3accel::wgpu::WgpuBackend::open(0)?;
    /// println!("{:?}", gpu.device().limits().max_storage_buffer_binding_size);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn device(&self) -> &::wgpu::Device {
        &self.gpu.device
    }

    /// The backend's `wgpu::Queue`.
    ///
    /// ```no_run
    /// let gpu = b3accel::wgpu::WgpuBackend::open(0)?;
    /// gpu.queue().submit([]);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn queue(&self) -> &::wgpu::Queue {
        &self.gpu.queue
    }

    /// A [`ResidentHasher`] on the backend's own device (sharing its pipelines), for buffers
    /// created on [`device`](Self::device).
    ///
    /// ```no_run
    /// use b3accel::Mode;
    /// let gpu = b3accel::wgpu::WgpuBackend::open(0)?;
    /// let buf = gpu.device().create_buffer(&wgpu::BufferDescriptor {
    ///     label: None, size: 4096, usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
    ///     mapped_at_creation: false,
    /// });
    /// gpu.queue().write_buffer(&buf, 0, &[1u8; 4096]);
    /// assert_eq!(gpu.resident().hash(&buf, 0, 4096, &Mode::Hash)?, blake3::hash(&[1u8; 4096]));
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn resident(&self) -> &ResidentHasher {
        &self.resident
    }

    /// True when this device has timestamp queries (in passes and in encoders), so that
    /// [`hash_timed`](Self::hash_timed) times the device's work itself.
    ///
    /// ```no_run
    /// let gpu = b3accel::wgpu::WgpuBackend::open(0)?;
    /// println!("timestamps: {}", gpu.has_timestamps());
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn has_timestamps(&self) -> bool {
        self.gpu.timestamps
    }

    /// Hashes host memory as [`hash_on`](crate::hash_on) does, and says where the time went.
    ///
    /// With timestamp queries ([`has_timestamps`](Self::has_timestamps)) the segments are
    /// pipelined as in any other call: `upload` is the host's copy into mapped staging memory
    /// (wall clock) plus the device's copy to its own memory (timestamps), `kernel` the hashing
    /// passes (timestamps), `download` the copy of the CVs back (timestamps) plus reading them
    /// (wall clock); the phases of different segments overlap, so `total` can be less than
    /// their sum. Without timestamp queries each phase of each segment is submitted and waited
    /// for alone and timed by the wall clock, so `total` is then their sum plus host work.
    ///
    /// ```no_run
    /// use b3accel::Mode;
    /// let gpu = b3accel::wgpu::WgpuBackend::open(0)?;
    /// let data = vec![1u8; 256 << 20];
    /// let (hash, t) = gpu.hash_timed(&data, &Mode::Hash)?;
    /// assert_eq!(hash, blake3::hash(&data));
    /// println!("upload {:?} kernel {:?} download {:?} total {:?}", t.upload, t.kernel, t.download, t.total);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn hash_timed(&self, data: &[u8], mode: &Mode) -> Result<(Hash, Timings)> {
        let start = Instant::now();
        let domain = mode.domain();
        let mut t = Timings::default();
        let output = if data.len() <= CHUNK_LEN {
            tree::chunk_output(data, 0, domain)
        } else {
            let full = (data.len() - 1) / CHUNK_LEN * CHUNK_LEN;
            let mut stack = CvStack::new();
            stack.commit_runs((full / CHUNK_LEN) as u64, MAX_SUBTREE, domain, |off, n, first, out| {
                let run = &data[off as usize * CHUNK_LEN..(off + n) as usize * CHUNK_LEN];
                self.host_subtrees(run, first, MAX_SUBTREE, domain, out, Some(&mut t))
            })?;
            stack.finalize(&data[full..], domain)
        };
        t.total = start.elapsed();
        Ok((Hash::from_bytes(output.root_hash()), t))
    }

    fn host_subtrees(
        &self,
        input: &[u8],
        first_chunk: u64,
        max_chunks: u64,
        domain: Domain,
        out: &mut [Cv],
        timings: Option<&mut Timings>,
    ) -> Result<()> {
        self.gpu.check_health()?;
        let gpu = &*self.gpu;
        scoped(&gpu.device, gpu.id, || {
            buffers::stream_host(
                gpu,
                &self.streams,
                self.segment_chunks.min(max_chunks),
                input,
                first_chunk,
                max_chunks,
                domain,
                out,
                timings,
            )
        })
    }
}

impl Backend for WgpuBackend {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// 16 MiB: a dispatch and a round trip cost tens of microseconds, which 16 MiB of hashing
    /// hides on a fast GPU; the hasher's memory stays bounded by it.
    fn batch_len(&self) -> usize {
        16 << 20
    }

    fn chunk_subtrees(&self, input: &[u8], first_chunk: u64, key: &[u32; 8], flags: u32, out: &mut [Cv]) -> Result<()> {
        self.chunk_subtrees_capped(input, first_chunk, MAX_SUBTREE, key, flags, out)
    }

    /// One pipelined stream for the whole run (segments no larger than the cap), rather than
    /// one call per capped piece.
    fn chunk_subtrees_capped(
        &self,
        input: &[u8],
        first_chunk: u64,
        max_chunks: u64,
        key: &[u32; 8],
        flags: u32,
        out: &mut [Cv],
    ) -> Result<()> {
        check_subtree_args(input, first_chunk, max_chunks, out)?;
        self.host_subtrees(input, first_chunk, max_chunks, Domain { key: *key, flags }, out, None)
    }

    fn hash_blocks(&self, blocks: &[[u8; 64]], out: &mut [[u8; 32]]) -> Result<()> {
        check_blocks_args(blocks, out)?;
        if blocks.is_empty() {
            return Ok(());
        }
        self.gpu.check_health()?;
        let gpu = &*self.gpu;
        scoped(&gpu.device, gpu.id, || buffers::hash_blocks(gpu, blocks, out))
    }

    /// On the device, several levels per dispatch (`merkle_pass`): the leaves go up in one
    /// upload, and only the root comes back unless `inner` asks for the whole tree. A tree too
    /// large for this device's buffers is reduced by the default instead.
    fn merkle(&self, leaves: &[Cv], inner: Option<&mut [Cv]>) -> Result<Cv> {
        crate::merkle::check_merkle_args(leaves, inner.as_deref())?;
        let n = leaves.len() as u64;
        let limits = self.gpu.device.limits();
        let bind = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
        let fits = n * 32 <= limits.max_buffer_size && n < 1 << 31 && (inner.is_none() || (n - 1) * 32 <= bind);
        if !fits {
            return crate::merkle::reduce_on(self, leaves, inner);
        }
        self.gpu.check_health()?;
        let buf = merkle::upload(&self.gpu, "b3accel leaves", leaves.as_flattened());
        merkle::merkle(&self.gpu, &buf, 0, n, inner, None)
    }

    /// Messages of up to 64 chunks on the device (`many_chunks`), in batches of about 64 MiB;
    /// longer ones one at a time through the chunk passes (the default), which spread a long
    /// message over the whole device.
    fn hash_many(&self, data: &[u8], msg_len: usize, key: &[u32; 8], flags: u32, out: &mut [Cv]) -> Result<()> {
        crate::merkle::check_many_args(data, msg_len, out)?;
        if msg_len > MANY_MAX_CHUNKS * CHUNK_LEN {
            return crate::merkle::hash_many_on(self, data, msg_len, key, flags, out);
        }
        let domain = Domain { key: *key, flags };
        let per_batch = (MANY_BATCH_BYTES / msg_len.max(1)).clamp(1, 1 << 21);
        for (i, part) in out.chunks_mut(per_batch).enumerate() {
            let at = i * per_batch * msg_len;
            let bytes = &data[at..at + part.len() * msg_len];
            self.gpu.check_health()?;
            let buf = merkle::upload(&self.gpu, "b3accel messages", bytes);
            merkle::hash_many(&self.gpu, &buf, 0, msg_len as u64, domain, part, None)?;
        }
        Ok(())
    }
}

/// Messages longer than this many chunks are hashed one at a time by `WgpuBackend::hash_many`.
const MANY_MAX_CHUNKS: usize = 64;
/// Bytes of host messages uploaded at once by `WgpuBackend::hash_many`.
const MANY_BATCH_BYTES: usize = 64 << 20;
