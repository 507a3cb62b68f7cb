//! The options a [`WgpuBackend`](super::WgpuBackend) is opened with: segment size, how the
//! chunk pass loads, bounds-checked or trusted shaders, Merkle levels per dispatch.

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
/// With direct loads the unchecked module is no faster (docs/performance.md): the driver (robust buffer access)
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

/// Options for [`WgpuBackend::open_with`](super::WgpuBackend::open_with).
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
    /// Tree levels one Merkle dispatch reduces inside a workgroup (1 to 9) while a level has at
    /// least 2^18 nodes; smaller levels are reduced as far as a workgroup goes (9 levels).
    /// `None`: the default, [`DEFAULT_MERKLE_LEVELS`].
    pub merkle_levels: Option<u32>,
}

/// Levels one Merkle dispatch reduces by default (see [`WgpuOptions::merkle_levels`]).
/// Deep in-workgroup trees leave most invocations idle at barriers; a few levels per dispatch
/// keep the device full at the cost of a few more (cheap) dispatches; 3 and 4 are the fastest
/// (docs/performance.md).
///
/// ```
/// assert!((1..=9).contains(&b3accel::wgpu::DEFAULT_MERKLE_LEVELS));
/// ```
pub const DEFAULT_MERKLE_LEVELS: u32 = 4;

/// Bytes of chunk CVs (or hashes) one host-bound `hash_many` round brings back by default;
/// larger batches take several rounds through two sets of kept buffers, the device filling one
/// while the host copies out of the other.
pub(super) const MANY_ROUND_BYTES: u64 = 64 << 20;
