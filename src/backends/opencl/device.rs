//! An opened OpenCL device: its context, queue, built program and settings, which the backend,
//! its workers and its buffers read. A leaf: it names no worker or backend type.

use super::context::{BuildConfig, Limits};
use crate::tree::DeviceInfo;
use ocl::core;

/// How host inputs reach the device (`OpenClOptions::host_ptr_uploads`): wrapped in place,
/// always, or per call ([`HostUploads::Auto`], see `OpenClBackend::wraps_in_place`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum HostUploads {
    Wrap,
    Stage,
    Auto,
}

/// What an [`OpenClBackend`](super::OpenClBackend) opened: everything but its workers.
pub(super) struct OpenDevice {
    pub(super) info: DeviceInfo,
    pub(super) device_id: core::DeviceId,
    pub(super) context: ocl::Context,
    pub(super) queue: ocl::Queue,
    pub(super) program: core::Program,
    pub(super) config: BuildConfig,
    pub(super) limits: Limits,
    pub(super) segment_bytes: usize,
    pub(super) max_alloc_bytes: u64,
    pub(super) streaming_stores: bool,
    /// Segments in flight when streaming host inputs.
    pub(super) staging_slots: usize,
    /// How host inputs reach the device.
    pub(super) host_uploads: HostUploads,
    /// Levels per Merkle dispatch while levels are large.
    pub(super) merkle_levels: u32,
    /// Poll events instead of blocking on them.
    pub(super) spin_wait: bool,
    /// Read results into pinned host memory.
    pub(super) pinned_results: bool,
}
