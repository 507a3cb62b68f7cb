//! The options an [`OpenClBackend`](super::OpenClBackend) is opened with.

/// How an [`OpenClBackend`](super::OpenClBackend) is set up. `Default` picks every value from the device.
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
    /// Default: 128 on a GPU (the fastest measured, docs/performance.md), 64 on a CPU
    /// device, lowered to what the device allows.
    pub merkle_work_group: Option<usize>,
    /// How many levels the Merkle kernel reduces per dispatch while a level still has many groups'
    /// worth of nodes (at least 1, at most `log2(2 * merkle_work_group)`). Default on a GPU: so
    /// many that the group's last level still has 32 work-items at work (a whole NVIDIA warp), 3
    /// with 128 work-items: levels with fewer leave most of a SIMD unit idle, which costs more
    /// than one more dispatch (docs/performance.md). On a CPU device, all levels a group
    /// holds. Small levels are always reduced as far as a group goes.
    pub merkle_levels: Option<u32>,
    /// How the host waits for the device to finish a call: `Some(true)` polls the command's
    /// status in a loop (one core busy while it waits, at most 50 ms, then it blocks),
    /// `Some(false)` or `None` blocks in the driver (`clWaitForEvents`). On NVIDIA both are
    /// equally fast once results land in pinned memory (`pinned_results`); polling is there for
    /// drivers whose blocking wait wakes up late.
    pub spin_wait: Option<bool>,
    /// Read results (subtree CVs, the last chunk, Merkle roots) into pinned host memory
    /// (`Some(true)`, the default, where the driver gives it) or into ordinary pageable memory
    /// (`Some(false)`). NVIDIA's driver completes a read into pageable memory only after a thread
    /// of its own has copied the data on, and that thread wakes up later the longer the read
    /// waited behind the kernels: pinned results make device-resident calls faster
    /// (docs/performance.md).
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
    /// copy then does not read the destination into the cache first. Default: off, slower end
    /// to end with them (the DMA engine reads a segment faster when part of it is still
    /// in the CPU's cache; docs/performance.md). Worth trying where the copy, not the bus, is the
    /// bottleneck.
    pub streaming_stores: Option<bool>,
    /// How many segments a streamed host input keeps in flight, each with its own pinned staging
    /// buffer and device buffer (2 to 4). With two, the CPU's copy of segment k+1 into staging
    /// memory must finish within the upload of segment k, or the bus waits; with more, the copy
    /// runs ahead of the uploads. Default: 2, as fast as 3 and faster than 4, whose copies slow
    /// the DMA engine's reads (docs/performance.md). More slots may pay where the host's memory
    /// has bandwidth to spare.
    pub staging_slots: Option<usize>,
    /// How a streamed host input reaches the device: `Some(true)` wraps the caller's memory,
    /// segment by segment, in buffers over its pages (`CL_MEM_USE_HOST_PTR`), which the driver
    /// reads or copies with its own DMA, so that no CPU thread copies a byte; `Some(false)`
    /// copies each segment into a pinned staging buffer first (see `staging_slots`), on the
    /// calling thread pool. Default (`None`): `$B3ACCEL_OPENCL_UPLOAD` (`host` or `staging`)
    /// where set, else in place on a CPU device and for a GPU in a device list with the CPU
    /// (whose copies would take cores from the CPU's share), staged otherwise: the driver's copy of
    /// wrapped memory is slower than staging on a many-core pool (docs/performance.md).
    pub host_ptr_uploads: Option<bool>,
    /// The largest device buffer the backend allocates for streaming, in bytes. A larger request
    /// is treated like a device out of memory: the backend falls back to smaller segments. Useful
    /// to bound its memory, and to test that fallback.
    pub max_alloc_bytes: Option<u64>,
}
