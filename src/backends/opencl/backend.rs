//! The OpenCL backend itself: opening a device (context, kernels built for it, a pool of
//! workers) and the `Backend` trait on host memory.

use super::context::{self, BuildConfig, Limits};
use super::device::{HostUploads, OpenDevice};
use super::errors::cl_err;
use super::options::OpenClOptions;
use super::profile::Prof;
use super::worker::{Worker, RESULT_SLOTS};
use crate::backends::gpu::pool::Pool;
use crate::core::compress::Cv;
use crate::core::constants::CHUNK_LEN;
use crate::tree::{check_blocks_args, check_subtree_args, Backend, Device, DeviceInfo, Domain, Error, Result};
use ocl::core;
use std::sync::Mutex;

/// An OpenCL device, ready to hash: its context, kernels built once, and a pool of workers
/// (queues and buffers) so that several threads can hash on it at once.
///
/// [`backend`](crate::backend)`(Device::OpenCl(i))` opens and caches one per device; open one
/// yourself for the device-resident entry points or non-default [`OpenClOptions`].
///
/// ```no_run
/// use b3accel::opencl::OpenClBackend;
/// use b3accel::{Mode, Resident};
/// let gpu = OpenClBackend::open(0)?;
/// let t = gpu.hash_from_host(&vec![1u8; 1 << 30], &Mode::Hash)?;
/// println!("{}: upload {:?}, kernels {:?}, total {:?}", t.value, t.upload, t.kernel, t.total);
/// # Ok::<(), b3accel::Error>(())
/// ```
pub struct OpenClBackend {
    // Workers first: their buffers are released before the context goes.
    pool: Pool<Worker>,
    /// The opened device, which the workers read.
    pub(super) dev: OpenDevice,
    build_log: String,
    /// PoCL: calls are serialised, see [`OpenClBackend::with_worker`].
    serialize: bool,
}

impl std::fmt::Debug for OpenClBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenClBackend")
            .field("device", &self.dev.info.device)
            .field("name", &self.dev.info.name)
            .field("chunk_work_group", &self.dev.config.chunk_wg)
            .field("parent_work_group", &self.dev.config.parent_wg)
            .field("merkle_work_group", &self.dev.config.merkle_wg)
            .field("staged_loads", &self.dev.config.staged)
            .field("chunk_levels", &self.dev.config.chunk_levels)
            .field("segment_bytes", &self.dev.segment_bytes)
            .finish()
    }
}

/// The environment variable that picks how host inputs reach an OpenCL device by default:
/// `host` (wrapped in place) or `staging` (copied into pinned buffers first).
pub(crate) const UPLOAD_ENV: &str = "B3ACCEL_OPENCL_UPLOAD";

/// The option, else [`UPLOAD_ENV`], else per call.
fn host_uploads(options: &OpenClOptions) -> Result<HostUploads> {
    if let Some(b) = options.host_ptr_uploads {
        return Ok(if b { HostUploads::Wrap } else { HostUploads::Stage });
    }
    match std::env::var(UPLOAD_ENV).as_deref() {
        Err(_) => Ok(HostUploads::Auto),
        Ok("host") => Ok(HostUploads::Wrap),
        Ok("staging") => Ok(HostUploads::Stage),
        Ok(other) => Err(Error::InvalidInput(format!("{UPLOAD_ENV}={other:?}: expected `host` or `staging`"))),
    }
}

/// At most this many bytes take the direct path (one blocking write from the caller's memory);
/// more go through the pinned staging buffers.
const DIRECT_MAX: usize = 1 << 20;

impl OpenClBackend {
    /// Opens the `index`-th OpenCL device (counting every platform's devices in order) with the
    /// default options, building its kernels.
    ///
    /// ```
    /// use b3accel::{opencl::OpenClBackend, Error};
    /// assert!(matches!(OpenClBackend::open(1000), Err(Error::NoSuchDevice { .. } | Error::Unavailable { .. })));
    /// ```
    pub fn open(index: usize) -> Result<OpenClBackend> {
        OpenClBackend::with_options(index, &OpenClOptions::default())
    }

    /// Opens the `index`-th OpenCL device with `options`.
    ///
    /// ```no_run
    /// use b3accel::opencl::{OpenClBackend, OpenClOptions};
    /// let opts = OpenClOptions { segment_bytes: Some(1 << 20), ..Default::default() };
    /// let small_segments = OpenClBackend::with_options(0, &opts)?;
    /// assert_eq!(small_segments.segment_bytes(), 1 << 20);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn with_options(index: usize, options: &OpenClOptions) -> Result<OpenClBackend> {
        let device = Device::OpenCl(index);
        let all = context::list().map_err(|e| match e {
            Error::Unavailable { reason, .. } => Error::Unavailable { device, reason },
            other => other,
        })?;
        let Some(&(platform, device_id)) = all.get(index) else {
            return Err(Error::NoSuchDevice { device, available: all.len() });
        };
        let info = context::describe(index, platform, device_id);
        let limits = context::limits(platform, device_id);
        if !limits.little_endian {
            return Err(Error::Unavailable {
                device,
                reason: format!("{} is big-endian; BLAKE3's kernels expect little-endian words", info.name),
            });
        }
        let props = core::ContextProperties::new().platform(platform);
        let context = core::create_context(Some(&props), &[device_id], None, None)
            .map_err(|e| cl_err(device, "creating an OpenCL context", e))?;
        let context = ocl::Context::from(context);
        let queue = ocl::Queue::new(
            &context,
            ocl::Device::from(device_id),
            Some(core::CommandQueueProperties::PROFILING_ENABLE),
        )
        .map_err(|e| Error::Device { device, detail: format!("creating a command queue: {e}") })?;

        let mut config = initial_config(device, &limits, options)?;
        let user_sized = options.chunk_work_group.is_some()
            || options.parent_work_group.is_some()
            || options.merkle_work_group.is_some();
        let (program, build_log) = loop {
            let (program, log) = context::build(device, context.as_core(), platform, device_id, &config)?;
            // The compiler may allow fewer work-items per group than the device (registers).
            let fits = |name: &str, wg: usize| -> Result<bool> {
                let k = core::create_kernel(&program, name).map_err(|e| cl_err(device, "creating a kernel", e))?;
                Ok(match core::get_kernel_work_group_info(&k, device_id, core::KernelWorkGroupInfo::WorkGroupSize) {
                    Ok(core::KernelWorkGroupInfoResult::WorkGroupSize(n)) => n >= wg,
                    _ => true,
                })
            };
            let chunk_fits = fits("chunk_cvs", config.chunk_wg)?;
            let parent_fits = fits("parent_cvs", config.parent_wg)?;
            let merkle_fits = fits("merkle_levels", config.merkle_wg)?;
            if chunk_fits && parent_fits && merkle_fits {
                break (program, log);
            }
            if user_sized || (config.chunk_wg == 1 && config.parent_wg == 1 && config.merkle_wg == 1) {
                return Err(Error::InvalidInput(format!(
                    "{device}: the kernels cannot run {} / {} / {} work-items per group on {}",
                    config.chunk_wg, config.parent_wg, config.merkle_wg, info.name
                )));
            }
            if !chunk_fits {
                config.chunk_wg = (config.chunk_wg / 2).max(1);
            }
            if !parent_fits {
                config.parent_wg = (config.parent_wg / 2).max(1);
            }
            if !merkle_fits {
                config.merkle_wg = (config.merkle_wg / 2).max(1);
            }
        };

        let segment_bytes = match options.segment_bytes {
            Some(s) if s.is_power_of_two() && s >= CHUNK_LEN => s,
            Some(s) => {
                return Err(Error::InvalidInput(format!(
                    "OpenCL segment size {s} is not a power of two of at least {CHUNK_LEN} bytes"
                )))
            }
            None => default_segment(&limits),
        };
        let max_workers = if options.max_workers == 0 { 4 } else { options.max_workers };
        let staging_slots = match options.staging_slots {
            None => 2,
            Some(n) if (2..=RESULT_SLOTS).contains(&n) => n,
            Some(n) => {
                return Err(Error::InvalidInput(format!(
                    "{device}: {n} staging slots is not between 2 and {}",
                    RESULT_SLOTS
                )))
            }
        };
        let merkle_span = (2 * config.merkle_wg).trailing_zeros();
        let merkle_levels = match options.merkle_levels {
            Some(l) if (1..=merkle_span).contains(&l) => l,
            Some(l) => {
                return Err(Error::InvalidInput(format!(
                    "{device}: {l} Merkle levels per dispatch is not between 1 and {merkle_span}"
                )))
            }
            // On a CPU device idle work-items cost next to nothing: a group goes as far as it can.
            None if limits.is_cpu => merkle_span,
            // The last level a group makes keeps 32 work-items busy.
            None => merkle_span.saturating_sub(5).max(1),
        };
        let spin_wait = options.spin_wait.unwrap_or(false);
        let dev = OpenDevice {
            info,
            device_id,
            context,
            queue,
            program,
            config,
            limits,
            segment_bytes,
            max_alloc_bytes: options.max_alloc_bytes.unwrap_or(u64::MAX),
            streaming_stores: options.streaming_stores.unwrap_or(false),
            staging_slots,
            host_uploads: host_uploads(options)?,
            merkle_levels,
            spin_wait,
            pinned_results: options.pinned_results.unwrap_or(true),
        };
        Ok(OpenClBackend {
            // Workers are kept as long as the backend lives; all are alike.
            pool: Pool::new(max_workers, max_workers, |_| 0),
            serialize: dev.limits.is_pocl,
            dev,
            build_log,
        })
    }

    /// The OpenCL context the backend's buffers and kernels live in: create device buffers for
    /// its [`Resident`](crate::Resident) calls in it.
    ///
    /// ```no_run
    /// let gpu = b3accel::opencl::OpenClBackend::open(0)?;
    /// let buf = ocl::Buffer::<u8>::builder().context(gpu.context()).len(4096).build().unwrap();
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn context(&self) -> &ocl::Context {
        &self.dev.context
    }

    /// An in-order queue on the backend's device, for your own commands (filling buffers to
    /// hash). Every [`Resident`](crate::Resident) call waits for everything enqueued here before
    /// it reads a buffer, so data written through it is always seen.
    ///
    /// ```no_run
    /// use b3accel::Resident;
    /// let gpu = b3accel::opencl::OpenClBackend::open(0)?;
    /// let data = vec![5u8; 10_000];
    /// let buf = ocl::Buffer::<u8>::builder()
    ///     .queue(gpu.queue().clone())
    ///     .len(data.len())
    ///     .copy_host_slice(&data)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(gpu.hash(&buf, 0..10_000, &b3accel::Mode::Hash)?.value, blake3::hash(&data));
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn queue(&self) -> &ocl::Queue {
        &self.dev.queue
    }

    /// The OpenCL device.
    ///
    /// ```no_run
    /// let gpu = b3accel::opencl::OpenClBackend::open(0)?;
    /// println!("{}", gpu.cl_device().name().unwrap());
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn cl_device(&self) -> ocl::Device {
        ocl::Device::from(self.dev.device_id)
    }

    /// The segment size host inputs stream through, in bytes (a worker may fall back to smaller
    /// segments where the device runs short of memory).
    ///
    /// ```no_run
    /// let gpu = b3accel::opencl::OpenClBackend::open(0)?;
    /// assert!(gpu.segment_bytes().is_power_of_two());
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn segment_bytes(&self) -> usize {
        self.dev.segment_bytes
    }

    /// The kernels' configuration: chunk and parent work-group sizes and whether loads are staged
    /// through local memory.
    ///
    /// ```no_run
    /// let gpu = b3accel::opencl::OpenClBackend::open(0)?;
    /// let (chunk_wg, parent_wg, staged) = gpu.kernel_config();
    /// println!("{chunk_wg} chunks per work-group, staged loads: {staged}");
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn kernel_config(&self) -> (usize, usize, bool) {
        (self.dev.config.chunk_wg, self.dev.config.parent_wg, self.dev.config.staged)
    }

    /// The tree levels the chunk kernel reduces inside a work-group for a run of `chunks` full
    /// chunks (each CV it writes stands for 2^this many chunks); the parent kernel reduces the
    /// rest.
    ///
    /// ```no_run
    /// let gpu = b3accel::opencl::OpenClBackend::open(0)?;
    /// assert!(1usize << gpu.chunk_levels(1 << 20) <= gpu.kernel_config().0);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn chunk_levels(&self, chunks: u64) -> u32 {
        self.dev.config.levels_for(chunks)
    }

    /// The compiler's log from building the kernels (empty where the driver said nothing; with
    /// `-cl-nv-verbose` in [`OpenClOptions::build_options`], NVIDIA's register counts).
    ///
    /// ```no_run
    /// let gpu = b3accel::opencl::OpenClBackend::open(0)?;
    /// println!("{}", gpu.build_log());
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn build_log(&self) -> &str {
        &self.build_log
    }

    /// The subtree CVs of `input` (full chunks, the first with index `first_chunk`, aligned as
    /// `Backend::chunk_subtrees_capped` requires), none larger than `max_chunks`, into `out`:
    /// a small input in one write from the caller's memory, anything else streamed in segments
    /// through pinned staging buffers; either way the passes stop at the cap's level.
    pub(super) fn host_subtrees(
        &self,
        input: &[u8],
        first_chunk: u64,
        max_chunks: u64,
        domain: Domain,
        out: &mut [Cv],
        prof: &mut Option<&mut Prof>,
    ) -> Result<()> {
        if input.len() <= DIRECT_MAX.min(self.dev.segment_bytes) {
            return self
                .with_worker(|w| w.hash_run_direct(&self.dev, input, first_chunk, max_chunks, domain, out, prof));
        }
        self.with_worker(|w| w.stream(self, input, first_chunk, max_chunks, domain, out, prof))
    }

    /// Whether a host input streamed now is wrapped in place (`CL_MEM_USE_HOST_PTR`) rather than
    /// copied into pinned staging buffers. Unless the options or [`UPLOAD_ENV`] say, in place
    /// on a CPU device (PoCL then reads the caller's memory and nothing is copied at all), and
    /// where the call runs on a pool of at most an eighth of the machine's threads, as a GPU in a
    /// device list with the CPU does (`spread::copy_threads`).
    ///
    /// Staging copies on the calling pool's threads, wrapping leaves the copy to the driver:
    /// staging is faster for the GPU alone, wrapping leaves the cores to the CPU's share when
    /// both hash (docs/performance.md).
    pub(super) fn wraps_in_place(&self) -> bool {
        match self.dev.host_uploads {
            HostUploads::Wrap => true,
            HostUploads::Stage => false,
            HostUploads::Auto => {
                let machine = crate::core::platform::machine_threads();
                self.dev.limits.is_cpu || rayon::current_num_threads() * 8 <= machine
            }
        }
    }

    /// Runs `f` on a worker of its own (see [`Pool`]): at most `max_workers` calls run on the
    /// device at once, and a worker whose call failed is dropped, since its queues may hold
    /// commands that failed half-way.
    pub(super) fn with_worker<T>(&self, f: impl FnOnce(&mut Worker) -> Result<T>) -> Result<T> {
        self.pool.with(
            |_| true,
            || Worker::new(&self.dev),
            |w| {
                // PoCL's CPU drivers cache each kernel's compiled work-group function per
                // (kernel, local size), and also key it by the widest grid it was launched with;
                // when one kernel runs concurrently with different grid sizes (two threads
                // hashing different lengths), the release at the end of a launch can decrement
                // the wrong entry and PoCL aborts (`pocl_release_dlhandle_cache: Assertion
                // found->ref_count > 0`, seen with PoCL 5.0). A CPU device gains nothing from
                // concurrent calls anyway: they take turns there.
                static POCL_TURN: Mutex<()> = Mutex::new(());
                let _turn = self.serialize.then(|| POCL_TURN.lock().unwrap_or_else(|p| p.into_inner()));
                f(w)
            },
        )
    }

    pub(super) fn domain_err(&self, what: &str, e: ocl::core::Error) -> Error {
        cl_err(self.dev.info.device, what, e)
    }
}

fn initial_config(device: Device, limits: &Limits, options: &OpenClOptions) -> Result<BuildConfig> {
    let pick = |asked: Option<usize>, what: &str, gpu_default: usize| -> Result<usize> {
        match asked {
            Some(n) if n.is_power_of_two() && n <= limits.max_work_group => Ok(n),
            Some(n) => Err(Error::InvalidInput(format!(
                "{device}: {what} work-group size {n} must be a power of two of at most {}",
                limits.max_work_group
            ))),
            None => {
                let want = if limits.is_cpu { 64 } else { gpu_default };
                let cap = limits.max_work_group.max(1);
                Ok(want.min(1 << cap.ilog2()))
            }
        }
    };
    let mut config = BuildConfig {
        chunk_wg: pick(options.chunk_work_group, "chunk", 256)?,
        parent_wg: pick(options.parent_work_group, "parent", 256)?,
        // 128 work-items (256 nodes) and 3 levels per dispatch on large levels: the fastest
        // Merkle root of the shapes measured (docs/performance.md).
        merkle_wg: pick(options.merkle_work_group, "merkle", 128)?,
        // Direct loads: each work-item's 64-byte block reads use whole 32-byte sectors, and the L1
        // cache serves the rest of the line: faster than staging through local memory
        // (docs/performance.md).
        staged: options.staged_loads.unwrap_or(false),
        chunk_levels: options.chunk_levels,
        extra_options: options.build_options.clone(),
    };
    // Local memory: shrink the groups until the kernels' arrays fit.
    while config.chunk_local_bytes() > limits.local_mem && config.chunk_wg > 1 {
        if options.chunk_work_group.is_some() {
            return Err(Error::InvalidInput(format!(
                "{device}: a chunk work-group of {} needs {} bytes of local memory; the device has {}",
                config.chunk_wg,
                config.chunk_local_bytes(),
                limits.local_mem
            )));
        }
        config.chunk_wg /= 2;
    }
    while config.merkle_wg as u64 * 48 > limits.local_mem && config.merkle_wg > 1 {
        config.merkle_wg /= 2;
    }
    while config.parent_wg as u64 * 48 > limits.local_mem && config.parent_wg > 1 {
        config.parent_wg /= 2;
    }
    Ok(config)
}

fn default_segment(limits: &Limits) -> usize {
    let want: u64 = if limits.is_cpu { 16 << 20 } else { 64 << 20 };
    // Two segment buffers per worker, several workers: stay well inside the device.
    let cap = (limits.max_alloc / 2).min(limits.global_mem / 16).max(CHUNK_LEN as u64);
    let s = want.min(cap);
    (1u64 << s.ilog2()) as usize
}

impl Backend for OpenClBackend {
    fn info(&self) -> &DeviceInfo {
        &self.dev.info
    }

    /// A GPU pays per dispatch and per transfer, so the incremental hasher hands over large
    /// batches: a segment, at most 32 MiB.
    fn batch_len(&self) -> usize {
        self.dev.segment_bytes.clamp(64 << 10, 32 << 20)
    }

    /// The same dispatches as without a cap: each segment's passes stop at the cap's level and
    /// bring every capped subtree's CV back (`gpu::capped`), so that a small cap (bao's chunk
    /// groups) costs no dispatch or pipeline drain per subtree.
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
        self.host_subtrees(input, first_chunk, max_chunks, Domain { key: *key, flags }, out, &mut None)
    }

    fn hash_blocks(&self, blocks: &[[u8; 64]], out: &mut [[u8; 32]]) -> Result<()> {
        check_blocks_args(blocks, out)?;
        if blocks.is_empty() {
            return Ok(());
        }
        self.with_worker(|w| w.hash_blocks(blocks, out))
    }

    /// Uploads the leaves once and reduces them on the device, several levels per dispatch
    /// (see `shaders/blake3.cl`); the inner levels come back only when `inner` asks for them.
    fn merkle(&self, leaves: &[Cv], inner: Option<&mut [Cv]>) -> Result<Cv> {
        self.merkle_host(leaves, inner)
    }

    /// Messages of up to 64 chunks: one work-item per chunk of each message, then, for messages
    /// longer than a chunk, one per message to merge its chunks. Longer ones one at a time
    /// through the chunk kernels.
    fn hash_many(&self, data: &[u8], msg_len: usize, key: &[u32; 8], flags: u32, out: &mut [Cv]) -> Result<()> {
        self.hash_many_host(data, msg_len, Domain { key: *key, flags }, out)
    }
}
