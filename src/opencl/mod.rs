//! The OpenCL backend (cargo feature `opencl`): BLAKE3's bulk work in OpenCL C kernels
//! (`shaders/blake3.cl`) on every OpenCL platform's devices, through the `ocl` crate.
//!
//! - One work-item per chunk; each work-group reduces its chunks' chaining values to the CV of one
//!   subtree in local memory, so an input takes a few dispatches (three for 1 GiB), not one per
//!   tree level. A ragged last work-group produces the CV of each complete subtree in the binary
//!   decomposition of its chunk count, so every chunk count takes the same few dispatches.
//! - Host inputs of any size, larger than the device's memory too, stream through two fixed
//!   device buffers in power-of-two segments, a three-stage pipeline: while the CPU copies
//!   segment k+1 into pinned, mapped staging memory, the DMA engine uploads segment k (on a
//!   queue of its own) and the device hashes segment k-1. The segments' CVs merge by the crate's
//!   one tree code. A device short of memory gets smaller segments, down to 64 KiB, then
//!   [`Error::OutOfMemory`].
//! - Data already on the device ([`OpenClBackend::hash_buffer`]) is hashed where it lies, on the
//!   backend's own queue: the chunk kernel also copies the last chunk (at most 1024 bytes) next to
//!   the subtree CVs, and one read into pinned host memory brings both back.
//! - Merkle trees of 32-byte leaves ([`Backend::merkle`], [`OpenClBackend::merkle_buffer`]): a
//!   few dispatches, each reducing several levels inside its work-groups in local memory; inner
//!   levels leave the device only when asked for. Batches of equal-length messages
//!   ([`Backend::hash_many`], [`OpenClBackend::hash_many_buffer`]): one work-item per message of
//!   up to a chunk, one per chunk of longer ones and then one per message to merge its chunks.
//!
//! Measured on an NVIDIA H200 (OpenCL 3.0, driver 580.159.04) with `examples/opencl_bench.rs`,
//! wall time per call with everything in it, kernel time from profiling events:
//! - device-resident 1 GiB: 707 us per call (1.52 TB/s), of which kernels 684 us (1.57 TB/s);
//!   64 MiB: 82 us (0.81 TB/s), kernels 66 us. The rest is mostly the driver's enqueue call and
//!   the first kernel's start; events are made only where needed (each cost the driver time).
//!   In one `b3accel bench` run: 1.51 TB/s at 1 GiB, 0.79 TB/s at 64 MiB;
//! - Merkle root of 2^25 device-resident leaves: 1.315 ms per call, kernels 1.287 ms;
//! - 2^24 device-resident 64-byte messages: 676 us per call (24.8 G hashes/s), kernels 662 us;
//! - 1 GiB from host memory end to end in 22 to 24 ms (45 to 48 GB/s) in `opencl_bench`, of which
//!   the upload takes 20 to 21 ms and the kernels 1.3 ms; `b3accel bench` measured only 38 GB/s
//!   in the same build (its uploads ran at 40 GB/s there, not 53), which is not understood yet.
//!
//! ```no_run
//! use b3accel::opencl::OpenClBackend;
//! use b3accel::{xof_reader_with, Mode};
//! let gpu = OpenClBackend::open(0)?;
//! let data = vec![7u8; 100 << 20];
//! let mut hash = [0u8; 32];
//! xof_reader_with(&gpu, &Mode::Hash, &data)?.fill(&mut hash);
//! assert_eq!(hash, *blake3::hash(&data).as_bytes());
//! # Ok::<(), b3accel::Error>(())
//! ```

mod context;
mod merkle;
mod resident;
mod stream;
mod worker;

pub use merkle::MerkleInner;

use crate::backend::{capped_by_pieces, check_blocks_args, check_subtree_args, Backend, Timings, MAX_SUBTREE};
use crate::compress::{Cv, CHUNK_LEN};
use crate::device::{Device, DeviceInfo};
use crate::error::{Error, Result};
use crate::tree::{chunk_output, CvStack, Domain};
use crate::{Hash, Mode};
use context::{BuildConfig, Limits};
use ocl::core;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};
use worker::{Prof, Worker};

/// Every OpenCL device of every platform, in order: the N-th is `Device::OpenCl(N)`.
///
/// An error ([`Error::Unavailable`]) says what is missing when there is no OpenCL platform at all.
///
/// ```
/// match b3accel::opencl::enumerate() {
///     Ok(list) => list.iter().for_each(|d| println!("{}: {} ({})", d.device, d.name, d.kind)),
///     Err(e) => println!("no OpenCL: {e}"),
/// }
/// ```
pub fn enumerate() -> Result<Vec<DeviceInfo>> {
    Ok(context::list()?.into_iter().enumerate().map(|(i, (p, d))| context::describe(i, p, d)).collect())
}

/// How an [`OpenClBackend`] is set up. `Default` picks every value from the device.
///
/// ```
/// use b3accel::opencl::OpenClOptions;
/// // Stream host inputs in 16 MiB segments, whatever the device.
/// let opts = OpenClOptions { segment_bytes: Some(16 << 20), ..Default::default() };
/// assert_eq!(opts.max_workers, 0);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpenClOptions {
    /// Size of the segments that host inputs stream through (a power of two, at least one
    /// chunk); two device buffers and two pinned staging buffers of this size are allocated per
    /// worker. Default: 64 MiB on a GPU, 16 MiB on a CPU device, less where memory is short.
    pub segment_bytes: Option<usize>,
    /// Work-items (= chunks) per work-group of the chunk kernel, a power of two. Default: 256 on
    /// a GPU, 64 on a CPU device, lowered to what the device allows.
    pub chunk_work_group: Option<usize>,
    /// Tree levels the chunk kernel reduces inside a work-group before it writes CVs out, for
    /// every call (at most log2 of the chunk work-group; `Some(0)` writes every chunk's CV). The
    /// parent kernel takes the rest. Default (`None`): chosen per call, the fewest dispatches and
    /// then the fewest levels that still keep 32 work-items busy (see `shaders/blake3.cl`).
    pub chunk_levels: Option<u32>,
    /// Work-items (= CVs) per work-group of the parent kernel, a power of two. Default as above.
    pub parent_work_group: Option<usize>,
    /// Work-items per work-group of the Merkle kernel, a power of two; each takes a pair of nodes,
    /// so a group reduces up to `2 * merkle_work_group` nodes by up to `log2` of that many levels.
    /// Default: 128 on a GPU (the fastest measured on an H200, see `merkle_levels`), 64 on a CPU
    /// device, lowered to what the device allows.
    pub merkle_work_group: Option<usize>,
    /// How many levels the Merkle kernel reduces per dispatch while a level still has many groups'
    /// worth of nodes (at least 1, at most `log2(2 * merkle_work_group)`). Default on a GPU: so
    /// many that the group's last level still has 32 work-items at work (a whole NVIDIA warp), 3
    /// with 128 work-items: levels with fewer leave most of a SIMD unit idle, which costs more
    /// than one more dispatch (on an H200, 2^25 leaves: 1.29 ms of kernel time with 128 work-items
    /// and 3 levels, 1.49 ms with 5, 1.94 ms with all 8). On a CPU device, all levels a group
    /// holds. Small levels are always reduced as far as a group goes.
    pub merkle_levels: Option<u32>,
    /// How the host waits for the device to finish a call: `Some(true)` polls the command's
    /// status in a loop (one core busy while it waits, at most 50 ms, then it blocks),
    /// `Some(false)` or `None` blocks in the driver (`clWaitForEvents`). On an H200 both came
    /// within a microsecond of each other for every device-resident call measured (hash of 1 GiB,
    /// Merkle root of 2^25 leaves, 2^24 messages), once results land in pinned memory
    /// (`pinned_results`); polling is there for drivers whose blocking wait wakes up late.
    pub spin_wait: Option<bool>,
    /// Read results (subtree CVs, the last chunk, Merkle roots) into pinned host memory
    /// (`Some(true)`, the default, where the driver gives it) or into ordinary pageable memory
    /// (`Some(false)`). NVIDIA's driver completes a read into pageable memory only after a thread
    /// of its own has copied the data on, and that thread wakes up later the longer the read
    /// waited behind the kernels: on an H200, device-resident 1 GiB took 930 us per call with
    /// pageable results against 730 us pinned (kernels 702 us), 64 MiB 118 against 93 us, and
    /// the Merkle root of 2^25 leaves 1662 against 1347 us.
    pub pinned_results: Option<bool>,
    /// Stage the chunk kernel's loads through local memory (`true`) or let each work-item read its
    /// own chunk (`false`). Default: chosen per device type from measurements.
    pub staged_loads: Option<bool>,
    /// Extra options for the OpenCL C compiler (e.g. `-cl-nv-verbose`).
    pub build_options: String,
    /// How many calls may run on the device at once, each with its own queues and buffers;
    /// further callers wait. `0` means the default, 4.
    pub max_workers: usize,
    /// Copy host data into the pinned staging buffers with non-temporal stores (x86-64): the
    /// copy then does not read the destination into the cache first. Default: off, as measured
    /// on an H200 host (1 GiB end to end: 44.3 GB/s with them, 48.3 GB/s without; the DMA engine
    /// reads a segment faster when part of it is still in the CPU's cache). Worth trying where
    /// the copy, not the bus, is the bottleneck.
    pub streaming_stores: Option<bool>,
    /// How many segments a streamed host input keeps in flight, each with its own pinned staging
    /// buffer and device buffer (2 to 4). With two, the CPU's copy of segment k+1 into staging
    /// memory must finish within the upload of segment k, or the bus waits; with more, the copy
    /// runs ahead of the uploads. Default: 2, as measured on an H200 host (1 GiB end to end,
    /// median of 5, 64 MiB segments): 45.2 GB/s with 2 slots, 44.1 to 45.9 GB/s with 3, 42.9 GB/s
    /// with 4, where the copy running ahead slowed the DMA engine's reads of pinned memory from
    /// 53 to 48 GB/s. More slots may pay where the host's memory has bandwidth to spare.
    pub staging_slots: Option<usize>,
    /// The largest device buffer the backend allocates for streaming, in bytes. A larger request
    /// is treated like a device out of memory: the backend falls back to smaller segments. Useful
    /// to bound its memory, and to test that fallback.
    pub max_alloc_bytes: Option<u64>,
}

/// An OpenCL device, ready to hash: its context, kernels built once, and a pool of workers
/// (queues and buffers) so that several threads can hash on it at once.
///
/// [`backend`](crate::backend)`(Device::OpenCl(i))` opens and caches one per device; open one
/// yourself for the device-resident entry points or non-default [`OpenClOptions`].
///
/// ```no_run
/// use b3accel::opencl::OpenClBackend;
/// use b3accel::Mode;
/// let gpu = OpenClBackend::open(0)?;
/// let (hash, t) = gpu.hash_timed(&vec![1u8; 1 << 30], &Mode::Hash)?;
/// println!("{hash}: upload {:?}, kernels {:?}, total {:?}", t.upload, t.kernel, t.total);
/// # Ok::<(), b3accel::Error>(())
/// ```
pub struct OpenClBackend {
    // Workers first: their buffers are released before the context goes.
    pool: Pool,
    info: DeviceInfo,
    device_id: core::DeviceId,
    context: ocl::Context,
    queue: ocl::Queue,
    program: core::Program,
    config: BuildConfig,
    build_log: String,
    limits: Limits,
    segment_bytes: usize,
    max_alloc_bytes: u64,
    streaming_stores: bool,
    /// Segments in flight when streaming host inputs.
    staging_slots: usize,
    /// PoCL: calls are serialised, see [`Pool::with_worker`].
    serialize: bool,
    /// Levels per Merkle dispatch while levels are large.
    merkle_levels: u32,
    /// Poll events instead of blocking on them.
    spin_wait: bool,
    /// Read results into pinned host memory.
    pinned_results: bool,
}

impl std::fmt::Debug for OpenClBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenClBackend")
            .field("device", &self.info.device)
            .field("name", &self.info.name)
            .field("chunk_work_group", &self.config.chunk_wg)
            .field("parent_work_group", &self.config.parent_wg)
            .field("merkle_work_group", &self.config.merkle_wg)
            .field("staged_loads", &self.config.staged)
            .field("chunk_levels", &self.config.chunk_levels)
            .field("segment_bytes", &self.segment_bytes)
            .finish()
    }
}

/// Where the wall time of one call on device-resident data went, from the driver's profiling
/// events and the host's clock (the `*_profiled` methods of [`OpenClBackend`]). The parts of
/// `total` are `before_device` (the host's work up to the first command), `enqueue` (the driver
/// call that enqueued it), `launch` (from its queuing to its start on the device), `device_span`
/// (from the first command's start to the last one's end: the kernels, and the gaps between
/// commands) and `after_device` (from the device's last command to the return: the host noticing,
/// and its own finishing). The driver stamps the first command as queued somewhere inside the
/// enqueuing call, and the last part relates the device's clock to the host's at the end of that
/// call, so `enqueue`, `launch` and `after_device` overlap by up to the enqueuing call's length.
///
/// ```
/// let p = b3accel::opencl::Profile::default();
/// assert_eq!(p.kernel, std::time::Duration::ZERO);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    /// Host-to-device copies, summed.
    pub upload: Duration,
    /// Kernel execution, summed over dispatches.
    pub kernel: Duration,
    /// Device-to-host copies, summed.
    pub download: Duration,
    /// Wall time of the whole call.
    pub total: Duration,
    /// From the call's start to the first command's enqueuing: the host's own work.
    pub before_device: Duration,
    /// The driver call that enqueued the first command.
    pub enqueue: Duration,
    /// From the first command's queuing to its start on the device.
    pub launch: Duration,
    /// From the first command's start to the last command's end, on the device.
    pub device_span: Duration,
    /// From the last command's end to the call's return.
    pub after_device: Duration,
    /// How many commands the call enqueued.
    pub commands: usize,
}

/// The converse of a driver error: out of memory where the driver says so, else a device error.
pub(crate) fn cl_err(device: Device, what: &str, e: ocl::core::Error) -> Error {
    use ocl::core::Status::*;
    match e.api_status() {
        Some(
            CL_MEM_OBJECT_ALLOCATION_FAILURE | CL_OUT_OF_RESOURCES | CL_OUT_OF_HOST_MEMORY | CL_INVALID_BUFFER_SIZE,
        ) => Error::OutOfMemory { device, detail: format!("{what}: {e}") },
        _ => Error::Device { device, detail: format!("{what}: {e}") },
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
            let (program, log) = context::build(device, context.as_core(), device_id, &config)?;
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
            Some(n) if (2..=worker::RESULT_SLOTS).contains(&n) => n,
            Some(n) => {
                return Err(Error::InvalidInput(format!(
                    "{device}: {n} staging slots is not between 2 and {}",
                    worker::RESULT_SLOTS
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
        Ok(OpenClBackend {
            pool: Pool::new(max_workers),
            info,
            device_id,
            context,
            queue,
            program,
            config,
            build_log,
            serialize: limits.is_pocl,
            limits,
            segment_bytes,
            max_alloc_bytes: options.max_alloc_bytes.unwrap_or(u64::MAX),
            streaming_stores: options.streaming_stores.unwrap_or(false),
            staging_slots,
            merkle_levels,
            spin_wait,
            pinned_results: options.pinned_results.unwrap_or(true),
        })
    }

    /// The OpenCL context the backend's buffers and kernels live in: create device buffers for
    /// [`hash_buffer`](Self::hash_buffer) in it.
    ///
    /// ```no_run
    /// let gpu = b3accel::opencl::OpenClBackend::open(0)?;
    /// let buf = ocl::Buffer::<u8>::builder().context(gpu.context()).len(4096).build().unwrap();
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn context(&self) -> &ocl::Context {
        &self.context
    }

    /// An in-order queue on the backend's device, for your own commands (filling buffers to
    /// hash). [`hash_buffer`](Self::hash_buffer) waits for everything enqueued here before it
    /// reads a buffer, so data written through it is always seen.
    ///
    /// ```no_run
    /// let gpu = b3accel::opencl::OpenClBackend::open(0)?;
    /// let data = vec![5u8; 10_000];
    /// let buf = ocl::Buffer::<u8>::builder()
    ///     .queue(gpu.queue().clone())
    ///     .len(data.len())
    ///     .copy_host_slice(&data)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(gpu.hash_buffer(&buf, &b3accel::Mode::Hash)?, blake3::hash(&data));
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn queue(&self) -> &ocl::Queue {
        &self.queue
    }

    /// The OpenCL device.
    ///
    /// ```no_run
    /// let gpu = b3accel::opencl::OpenClBackend::open(0)?;
    /// println!("{}", gpu.cl_device().name().unwrap());
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn cl_device(&self) -> ocl::Device {
        ocl::Device::from(self.device_id)
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
        self.segment_bytes
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
        (self.config.chunk_wg, self.config.parent_wg, self.config.staged)
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
        self.config.levels_for(chunks)
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

    /// Hashes host memory like [`hash_on`](crate::hash_on), and reports where the time went:
    /// upload, kernel and download time from the driver's profiling events (summed; upload and
    /// kernels overlap), and the wall time of the whole call.
    ///
    /// ```no_run
    /// use b3accel::{opencl::OpenClBackend, Mode};
    /// let gpu = OpenClBackend::open(0)?;
    /// let data = vec![9u8; 256 << 20];
    /// let (hash, t) = gpu.hash_timed(&data, &Mode::Hash)?;
    /// assert_eq!(hash, blake3::hash(&data));
    /// println!("{:.1} GB/s", data.len() as f64 / t.total.as_secs_f64() / 1e9);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn hash_timed(&self, data: &[u8], mode: &Mode) -> Result<(Hash, Timings)> {
        let start = Instant::now();
        let domain = mode.domain();
        let mut prof = Prof::default();
        let output = if data.len() <= CHUNK_LEN {
            chunk_output(data, 0, domain)
        } else {
            let full = (data.len() - 1) / CHUNK_LEN * CHUNK_LEN;
            let mut stack = CvStack::new();
            self.pool
                .with_worker(self, |w| w.commit_host(self, &mut stack, 0, &data[..full], domain, Some(&mut prof)))?;
            stack.finalize(&data[full..], domain)
        };
        let hash = Hash::from_bytes(output.root_hash());
        let mut timings = prof.timings();
        timings.total = start.elapsed();
        Ok((hash, timings))
    }

    fn domain_err(&self, what: &str, e: ocl::core::Error) -> Error {
        cl_err(self.info.device, what, e)
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
        // 128 work-items (256 nodes) and 3 levels per dispatch on large levels: on an H200 the root
        // of 2^25 device-resident leaves took 1.287 ms of kernel time, against 1.306 ms with 256
        // work-items and 3 levels, 1.319 ms with 256 and 4, and 1.681 ms with 64 and 2.
        merkle_wg: pick(options.merkle_work_group, "merkle", 128)?,
        // Direct loads: each work-item's 64-byte block reads use whole 32-byte sectors, and the L1
        // cache serves the rest of the line. Measured on an H200 (NVIDIA OpenCL, driver 580) at
        // 1 GiB: 1.51 TB/s direct against 1.29 TB/s staged through local memory (256-chunk groups).
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
        &self.info
    }

    /// A GPU pays per dispatch and per transfer, so the incremental hasher hands over large
    /// batches: a segment, at most 32 MiB.
    fn batch_len(&self) -> usize {
        self.segment_bytes.clamp(64 << 10, 32 << 20)
    }

    fn chunk_subtrees(&self, input: &[u8], first_chunk: u64, key: &[u32; 8], flags: u32, out: &mut [Cv]) -> Result<()> {
        check_subtree_args(input, first_chunk, MAX_SUBTREE, out)?;
        let domain = Domain { key: *key, flags };
        // A stack of its own, counting from this call's first chunk: the segments' CVs merge
        // there into the subtrees of this call's chunk count.
        let mut stack = CvStack::new();
        self.pool.with_worker(self, |w| w.commit_host(self, &mut stack, first_chunk, input, domain, None))?;
        stack.subtree_cvs(domain, out);
        Ok(())
    }

    /// One pipeline for the whole run: the tree module caps the subtrees where an input is
    /// exactly a power of two of chunks (it needs the root's two children), and the default, one
    /// `chunk_subtrees` call per capped piece, would drain and refill the streaming pipeline
    /// between the pieces. Each piece gets its own stack instead, fed by the one stream (with
    /// segments no longer than a piece). On an H200, 1 GiB from host memory through `hash_on`:
    /// 23.4 ms (45.9 GB/s, median of 7) in one stream, against 41.5 GB/s as two.
    fn chunk_subtrees_capped(
        &self,
        input: &[u8],
        first_chunk: u64,
        max_chunks: u64,
        key: &[u32; 8],
        flags: u32,
        out: &mut [Cv],
    ) -> Result<()> {
        let n = check_subtree_args(input, first_chunk, max_chunks, out)?;
        if n <= max_chunks {
            return self.chunk_subtrees(input, first_chunk, key, flags, out);
        }
        if input.len() <= DIRECT_MAX || max_chunks < 16 {
            // Small inputs take the direct path anyway; tiny caps would make tiny segments.
            return capped_by_pieces(self, input, first_chunk, max_chunks, key, flags, out);
        }
        let domain = Domain { key: *key, flags };
        let mut stacks = vec![CvStack::new(); n.div_ceil(max_chunks) as usize];
        self.pool.with_worker(self, |w| w.stream(self, &mut stacks, max_chunks, first_chunk, input, domain, None))?;
        let mut at = 0;
        for (r, stack) in stacks.iter().enumerate() {
            let chunks = (n - r as u64 * max_chunks).min(max_chunks);
            let count = chunks.count_ones() as usize;
            stack.subtree_cvs(domain, &mut out[at..at + count]);
            at += count;
        }
        Ok(())
    }

    fn hash_blocks(&self, blocks: &[[u8; 64]], out: &mut [[u8; 32]]) -> Result<()> {
        check_blocks_args(blocks, out)?;
        if blocks.is_empty() {
            return Ok(());
        }
        self.pool.with_worker(self, |w| w.hash_blocks(self, blocks, out))
    }

    /// Uploads the leaves once and reduces them on the device, several levels per dispatch
    /// (see `shaders/blake3.cl`); the inner levels come back only when `inner` asks for them.
    fn merkle(&self, leaves: &[Cv], inner: Option<&mut [Cv]>) -> Result<Cv> {
        merkle::merkle_host(self, leaves, inner)
    }

    /// Messages of up to 64 chunks: one work-item per chunk of each message, then, for messages
    /// longer than a chunk, one per message to merge its chunks. Longer ones one at a time
    /// through the chunk kernels.
    fn hash_many(&self, data: &[u8], msg_len: usize, key: &[u32; 8], flags: u32, out: &mut [Cv]) -> Result<()> {
        merkle::hash_many_host(self, data, msg_len, Domain { key: *key, flags }, out)
    }
}

/// A worker out of the pool for one call.
struct Lease<'a> {
    pool: &'a Pool,
    worker: Option<Worker>,
    ok: bool,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        match self.worker.take() {
            Some(w) if self.ok => self.pool.release(Some(w)),
            Some(w) => {
                w.quiesce();
                drop(w);
                self.pool.release(None);
            }
            None => self.pool.release(None),
        }
    }
}

/// Workers (queues, kernels, buffers), one per call in flight, created on demand up to a limit.
struct Pool {
    state: Mutex<PoolState>,
    freed: Condvar,
    max: usize,
}

struct PoolState {
    idle: Vec<Worker>,
    live: usize,
}

impl Pool {
    fn new(max: usize) -> Pool {
        Pool { state: Mutex::new(PoolState { idle: Vec::new(), live: 0 }), freed: Condvar::new(), max }
    }

    /// Runs `f` on a worker of its own, made on demand up to the pool's limit; over it, callers
    /// wait for one to come back.
    fn with_worker<T>(&self, backend: &OpenClBackend, f: impl FnOnce(&mut Worker) -> Result<T>) -> Result<T> {
        let mut worker = {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                if let Some(w) = state.idle.pop() {
                    break Some(w);
                }
                if state.live < self.max {
                    state.live += 1;
                    break None;
                }
                state = self.freed.wait(state).unwrap_or_else(|p| p.into_inner());
            }
        };
        if worker.is_none() {
            match Worker::new(backend) {
                Ok(w) => worker = Some(w),
                Err(e) => {
                    self.release(None);
                    return Err(e);
                }
            }
        }
        // Back to the pool when done; dropped (after its queues drain) when the call failed or
        // panicked, since its queues may hold commands that failed half-way.
        let mut lease = Lease { pool: self, worker, ok: false };
        // PoCL's CPU drivers cache each kernel's compiled work-group function per (kernel, local
        // size), and also key it by the widest grid it was launched with; when one kernel runs
        // concurrently with different grid sizes (two threads hashing different lengths), the
        // release at the end of a launch can decrement the wrong entry and PoCL aborts
        // (`pocl_release_dlhandle_cache: Assertion found->ref_count > 0`, seen with PoCL 5.0).
        // A CPU device gains nothing from concurrent calls anyway: they take turns there.
        static POCL_TURN: Mutex<()> = Mutex::new(());
        let turn = backend.serialize.then(|| POCL_TURN.lock().unwrap_or_else(|p| p.into_inner()));
        let result = f(lease.worker.as_mut().expect("a worker was taken or made"));
        lease.ok = result.is_ok();
        drop(lease);
        drop(turn);
        result
    }

    fn release(&self, worker: Option<Worker>) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match worker {
            Some(w) => state.idle.push(w),
            None => state.live -= 1,
        }
        drop(state);
        self.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuBackend;

    /// Streaming onto a stack that already holds chunks: the segments were dispatched for a
    /// stack starting at chunk 0, so the merge must notice the other cut and hash again.
    #[test]
    fn streaming_onto_a_stack_that_did_not_start_at_zero() {
        let Ok(list) = enumerate() else {
            assert!(std::env::var("CI").is_err(), "CI=true: the OpenCL backend must have a device");
            eprintln!("*** no OpenCL device: streaming_onto_a_stack_that_did_not_start_at_zero did NOT run ***");
            return;
        };
        let data: Vec<u8> = (0..(40 * CHUNK_LEN + 5)).map(|i| (i % 251) as u8).collect();
        let domain = Domain::keyed(&[9; 32]);
        for info in list {
            let Device::OpenCl(i) = info.device else { unreachable!() };
            let opts = OpenClOptions { segment_bytes: Some(4 * CHUNK_LEN), ..Default::default() };
            let be = OpenClBackend::with_options(i, &opts).unwrap();
            let mut stack = CvStack::new();
            stack.commit_chunks(&CpuBackend::new(), &data[..3 * CHUNK_LEN], MAX_SUBTREE, domain).unwrap();
            let rest = &data[3 * CHUNK_LEN..40 * CHUNK_LEN];
            be.pool.with_worker(&be, |w| w.commit_host(&be, &mut stack, 0, rest, domain, None)).unwrap();
            let root = stack.finalize(&data[40 * CHUNK_LEN..], domain);
            assert_eq!(root.root_hash(), *blake3::keyed_hash(&[9; 32], &data).as_bytes(), "{}", info.name);
        }
    }
}
