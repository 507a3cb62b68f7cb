//! The wgpu backend itself: opening an adapter's device and the `Backend` trait on host memory.

use super::adapter;
use super::device::{lock, Gpu, Health};
use super::errors::scoped;
use super::merkle::Inner;
use super::options::WgpuOptions;
use super::passes::upload;
use super::resident::ResidentHasher;
use crate::backends::gpu::policy::{self, plan_many, ManyPlan};
use crate::backends::gpu::resident::MerkleInner;
use crate::core::compress::Cv;
use crate::core::constants::CHUNK_LEN;
use crate::tree::merkle::hash_many_on;
use crate::tree::{check_blocks_args, check_subtree_args, Backend, DeviceInfo, Domain, FeaturePath, Result};
use std::sync::Arc;
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
    /// The adapter's optional features and its wgpu backend, for `feature_paths`.
    adapter_features: ::wgpu::Features,
    adapter_backend: ::wgpu::Backend,
    gpu: Arc<Gpu>,
    resident: ResidentHasher,
}

impl std::fmt::Debug for WgpuBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WgpuBackend")
            .field("device", &self.info.device)
            .field("name", &self.info.name)
            .field("api", &self.info.api)
            .field("segment_bytes", &self.segment_bytes())
            .field("loads", &self.gpu.pipes.loads)
            .field("checks", &self.gpu.pipes.checks)
            .finish()
    }
}

impl WgpuBackend {
    /// Opens adapter `index` (as `Device::Wgpu(index)`, in the order [`devices`](crate::devices)
    /// lists them) with the default options, and hashes 2 KiB of zeros on it once, so that the
    /// device's first submission, slow on some drivers (docs/performance.md), is paid while it
    /// opens.
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
        let resident = ResidentHasher::from_gpu(gpu.clone(), &options);
        resident.warm_up()?;
        Ok(WgpuBackend {
            info,
            adapter_features: adapter.features(),
            adapter_backend: adapter.get_info().backend,
            resident,
            gpu,
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
        self.resident.segment_chunks * CHUNK_LEN as u64
    }

    /// The backend's `wgpu::Device`: create buffers on it to hash them with [`resident`](Self::resident)
    /// (or let its [`upload`](crate::Resident::upload) make them).
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

    /// A [`ResidentHasher`] on the backend's own device (sharing its pipelines and host
    /// segments): its [`Resident`](crate::Resident) calls, for buffers created on
    /// [`device`](Self::device).
    ///
    /// ```no_run
    /// use b3accel::{Mode, Resident};
    /// let gpu = b3accel::wgpu::WgpuBackend::open(0)?;
    /// let buf = gpu.device().create_buffer(&wgpu::BufferDescriptor {
    ///     label: None, size: 4096, usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
    ///     mapped_at_creation: false,
    /// });
    /// gpu.queue().write_buffer(&buf, 0, &[1u8; 4096]);
    /// assert_eq!(gpu.resident().hash(&buf, 0..4096, &Mode::Hash)?.value, blake3::hash(&[1u8; 4096]));
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn resident(&self) -> &ResidentHasher {
        &self.resident
    }

    /// True when this device has timestamp queries (in passes and in encoders), so that its
    /// [`Resident`](crate::Resident) calls time the device's work itself.
    ///
    /// With them, [`hash_from_host`](crate::Resident::hash_from_host) pipelines its segments as
    /// any other call does: `upload` is the host's copy into mapped staging memory (wall clock)
    /// plus the device's copy to its own memory (timestamps), `kernel` the hashing passes
    /// (timestamps), `download` the copy of the CVs back (timestamps) plus reading them (wall
    /// clock). Without them each phase of each segment is submitted and waited for alone and
    /// timed by the wall clock, so `total` is then their sum plus host work.
    ///
    /// ```no_run
    /// let gpu = b3accel::wgpu::WgpuBackend::open(0)?;
    /// println!("timestamps: {}", gpu.has_timestamps());
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn has_timestamps(&self) -> bool {
        self.gpu.timestamps
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

    /// Timestamp queries (the device times itself, or the wall clock does), mappable storage (the
    /// results are read where the passes write them, or copied after the passes), the pipeline cache
    /// (used where the device has one: its file, kept between processes), subgroups and 64-bit
    /// atomics (what the adapter has; the shaders need neither today).
    ///
    /// ```no_run
    /// use b3accel::Backend;
    /// let gpu = b3accel::wgpu::WgpuBackend::open(0)?;
    /// for p in gpu.feature_paths() {
    ///     println!("{p}"); // "timestamps: yes (the device times its own passes and copies ...)"
    /// }
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    fn feature_paths(&self) -> Vec<FeaturePath> {
        super::paths::feature_paths(
            self.adapter_features,
            self.adapter_backend,
            self.gpu.timestamps,
            self.gpu.mapped_pieces,
            self.gpu.pipeline_cache.as_deref(),
        )
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
        self.resident.host_subtrees(input, first_chunk, max_chunks, Domain { key: *key, flags }, out, None)
    }

    fn hash_blocks(&self, blocks: &[[u8; 64]], out: &mut [[u8; 32]]) -> Result<()> {
        check_blocks_args(blocks, out)?;
        if blocks.is_empty() {
            return Ok(());
        }
        self.gpu.check_health()?;
        let gpu = &*self.gpu;
        scoped(&gpu.device, gpu.id, || super::blocks::hash_blocks(gpu, blocks, out))
    }

    /// On the device, several levels per dispatch (`merkle_pass`): the leaves go up in one
    /// upload, and only the root comes back unless `inner` asks for the whole tree. A tree too
    /// large for this device's buffers is reduced by the default instead.
    fn merkle(&self, leaves: &[Cv], inner: Option<&mut [Cv]>) -> Result<Cv> {
        let n = leaves.len() as u64;
        let limits = self.gpu.device.limits();
        let bind = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
        let fits = n * 32 <= limits.max_buffer_size && n < 1 << 31 && (inner.is_none() || (n - 1) * 32 <= bind);
        policy::merkle_host(self, leaves, inner, fits, |leaves, inner| {
            self.gpu.check_health()?;
            let buf = upload(&self.gpu, "b3accel leaves", leaves.as_flattened());
            let inner: Inner<'_> = inner.map_or(MerkleInner::None, MerkleInner::Host);
            super::merkle::merkle(&self.gpu, &buf, 0, n, inner, super::merkle::MERKLE_FLAGS, None)
        })
    }

    /// Messages of up to 64 chunks on the device (`many_chunks`), in batches of about 64 MiB;
    /// longer ones one at a time through the chunk passes (the default), which spread a long
    /// message over the whole device (the host policy of `gpu::policy`).
    fn hash_many(&self, data: &[u8], msg_len: usize, key: &[u32; 8], flags: u32, out: &mut [Cv]) -> Result<()> {
        let domain = Domain { key: *key, flags };
        let per_batch = match plan_many(data, msg_len, domain, out)? {
            ManyPlan::Done => return Ok(()),
            ManyPlan::OneAtATime => return hash_many_on(self, data, msg_len, key, flags, out),
            ManyPlan::Batches(per_batch) => per_batch,
        };
        for (i, part) in out.chunks_mut(per_batch).enumerate() {
            let at = i * per_batch * msg_len;
            let bytes = &data[at..at + part.len() * msg_len];
            self.gpu.check_health()?;
            let buf = upload(&self.gpu, "b3accel messages", bytes);
            super::many::hash_many(&self.gpu, &buf, 0, msg_len as u64, domain, part, None)?;
        }
        Ok(())
    }
}
