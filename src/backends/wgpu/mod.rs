//! The WGSL compute-shader backend, through `wgpu` (Vulkan, Metal, DX12, GL), cargo feature `wgpu`.
//!
//! Adapters: every adapter wgpu finds on any backend it was built with (Vulkan, Metal, DX12,
//! GL), in a stable order (by backend in that order, then discrete before integrated before
//! software), except those that cannot run the shaders or cannot open a device (NVIDIA's GL
//! through headless EGL, for one); `backend_status()` says why when none is left. Each backend's
//! driver is started only when a lookup reaches it: `Device::Wgpu(0)` on a Vulkan adapter never
//! starts GL (EGL), and the drivers' start-up chatter is kept off standard error
//! ([`stderr`](crate::stderr)). A device is opened with only the optional features the backend
//! uses; [`Backend::feature_paths`](crate::Backend::feature_paths) says which path it takes where
//! the adapter lacks one. Where the device has a pipeline cache (Vulkan), the compiled pipelines
//! are kept in the crate's cache directory and the next process starts from them.
//! A software adapter (llvmpipe, lavapipe) is listed as [`DeviceKind::Cpu`](crate::DeviceKind),
//! works when asked for and is never what `Device::Auto` picks.
//!
//! - [`WgpuBackend`]: hashes host memory on one adapter (`Device::Wgpu(i)`), streaming inputs of
//!   any length through the device in segments, the upload of the next segment overlapping the
//!   hashing of the current one.
//! - [`ResidentHasher`]: the [`Resident`](crate::Resident) calls on one device, your own
//!   `wgpu::Device` or the backend's: hashing a `wgpu::Buffer` that already lies there, reading
//!   back only the few chaining values and the last chunk (at most 1024 bytes); Merkle roots and
//!   trees of leaves, and batches of equal-length messages, that lie in a `wgpu::Buffer`; and
//!   host memory streamed through the device, each call timed.
//!
//! Merkle trees reduce 4 levels per dispatch inside a workgroup by default (2^25 leaves: 7
//! dispatches in one submission; [`WgpuOptions::merkle_levels`] takes 1 to 9) and copy inner
//! levels back only when asked; `hash_many` hashes each message of up to one chunk in one
//! invocation, with whole 16-byte loads where the length allows (`merkle_pass`, `many_vec4` and
//! `many_chunks` in the shader, driven by `merkle.rs` and `many.rs` here), back to the host
//! ([`Resident::hash_many`](crate::Resident::hash_many)) or into a device buffer
//! ([`Resident::hash_many_into`](crate::Resident::hash_many_into)).
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
mod backend;
mod bao;
mod blocks;
mod device;
mod errors;
mod many;
mod merkle;
mod options;
mod passes;
mod paths;
mod pipeline_cache;
mod pipelines;
mod resident;
mod segment;
mod stream;
mod wait;

pub(crate) use adapter::enumerate;
pub use backend::WgpuBackend;
pub use options::{Loads, ShaderChecks, WgpuOptions, DEFAULT_MERKLE_LEVELS};
pub use resident::ResidentHasher;
