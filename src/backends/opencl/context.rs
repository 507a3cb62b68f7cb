//! Finding OpenCL devices, describing them, and building the kernels for one of them (or loading
//! the program binary cached when they were last built).

use super::binaries;
use super::errors::cl_err;
use super::program::{compile, SOURCE};
use crate::backends::gpu::groups::chunk_group_shift;
use crate::backends::stderr::quiet;
use crate::tree::{BackendKind, Device, DeviceInfo, DeviceKind, Error, Result};
use ocl::core::{
    self, DeviceId, DeviceInfo as ClInfo, DeviceInfoResult as ClRes, DeviceType, PlatformId, PlatformInfo,
};
use std::ffi::CString;
use std::sync::OnceLock;

/// `CL_PLATFORM_NOT_FOUND_KHR`: the ICD loader found no driver.
const PLATFORM_NOT_FOUND: i32 = -1001;

/// Every OpenCL device, every platform's in order: the N-th is `Device::OpenCl(N)`.
///
/// Listed once per process: drivers initialise their devices on the first listing, and PoCL
/// crashes when two threads do that at once (seen with PoCL 3.1). Devices do not come and go
/// while a process runs. Their start-up chatter, if any, is kept off stderr.
pub(crate) fn list() -> Result<Vec<(PlatformId, DeviceId)>> {
    static LIST: OnceLock<std::result::Result<Vec<(PlatformId, DeviceId)>, String>> = OnceLock::new();
    LIST.get_or_init(|| quiet(list_uncached))
        .clone()
        .map_err(|reason| Error::Unavailable { device: Device::OpenCl(0), reason })
}

fn list_uncached() -> std::result::Result<Vec<(PlatformId, DeviceId)>, String> {
    let unavailable = |reason: String| reason;
    // Ask the loader directly first: `ocl` retries a missing platform list for ten seconds (and
    // its `Platform::list` panics), but a machine without a driver should be told so at once.
    let mut count: u32 = 0;
    // SAFETY: a count query with no output array, as the OpenCL specification allows.
    let status = unsafe { core::ffi::clGetPlatformIDs(0, std::ptr::null_mut(), &mut count) };
    if status == PLATFORM_NOT_FOUND || (status == 0 && count == 0) {
        return Err(unavailable(
            "no OpenCL platform: the OpenCL loader found no driver (install one, such as \
             pocl-opencl-icd or a GPU vendor's driver, and check /etc/OpenCL/vendors)"
                .into(),
        ));
    }
    if status != 0 {
        return Err(unavailable(format!("the OpenCL loader failed to list platforms (error {status})")));
    }
    let platforms = core::get_platform_ids().map_err(|e| unavailable(format!("listing OpenCL platforms: {e}")))?;
    let mut all = Vec::new();
    for p in platforms {
        // A platform with no device answers CL_DEVICE_NOT_FOUND: it simply adds none.
        if let Ok(devices) = core::get_device_ids(p, Some(DeviceType::ALL), None) {
            all.extend(devices.into_iter().map(|d| (p, d)));
        }
    }
    Ok(all)
}

/// A string property of a device, read raw (ocl's parsed `Version` drops the vendor text).
fn device_string(d: DeviceId, what: u32) -> String {
    match core::get_device_info_raw(d, what) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).trim_end_matches('\0').trim().to_string(),
        Err(_) => String::new(),
    }
}

fn platform_string(p: PlatformId, what: PlatformInfo) -> String {
    match core::get_platform_info(p, what) {
        Ok(r) => r.to_string().trim().trim_end_matches('\0').to_string(),
        Err(_) => String::new(),
    }
}

/// What the rest of the backend needs to know about a device.
#[derive(Clone, Debug)]
pub(crate) struct Limits {
    pub max_work_group: usize,
    pub local_mem: u64,
    pub max_alloc: u64,
    pub global_mem: u64,
    pub little_endian: bool,
    pub is_cpu: bool,
    /// The Portable Computing Language (PoCL) platform.
    pub is_pocl: bool,
    /// Where a sub-buffer may start: a multiple of this many bytes.
    pub base_align: u64,
}

pub(crate) fn limits(p: PlatformId, d: DeviceId) -> Limits {
    let max_work_group = match core::get_device_info(d, ClInfo::MaxWorkGroupSize) {
        Ok(ClRes::MaxWorkGroupSize(n)) => n,
        _ => 1,
    };
    let local_mem = match core::get_device_info(d, ClInfo::LocalMemSize) {
        Ok(ClRes::LocalMemSize(n)) => n,
        _ => 0,
    };
    let max_alloc = match core::get_device_info(d, ClInfo::MaxMemAllocSize) {
        Ok(ClRes::MaxMemAllocSize(n)) => n,
        _ => 0,
    };
    let global_mem = match core::get_device_info(d, ClInfo::GlobalMemSize) {
        Ok(ClRes::GlobalMemSize(n)) => n,
        _ => 0,
    };
    let little_endian = !matches!(core::get_device_info(d, ClInfo::EndianLittle), Ok(ClRes::EndianLittle(false)));
    let is_cpu = matches!(
        core::get_device_info(d, ClInfo::Type),
        Ok(ClRes::Type(t)) if t.contains(DeviceType::CPU)
    );
    let is_pocl = platform_string(p, PlatformInfo::Name).contains("Portable Computing Language");
    // Reported in bits; 1024 bits where the driver says nothing.
    let base_align = match core::get_device_info(d, ClInfo::MemBaseAddrAlign) {
        Ok(ClRes::MemBaseAddrAlign(bits)) if bits >= 8 => bits as u64 / 8,
        _ => 128,
    };
    Limits { max_work_group, local_mem, max_alloc, global_mem, little_endian, is_cpu, is_pocl, base_align }
}

/// The description `devices()` lists for the `index`-th OpenCL device.
pub(crate) fn describe(index: usize, p: PlatformId, d: DeviceId) -> DeviceInfo {
    let kind = match core::get_device_info(d, ClInfo::Type) {
        Ok(ClRes::Type(t)) if t.contains(DeviceType::CPU) => DeviceKind::Cpu,
        Ok(ClRes::Type(t)) if t.contains(DeviceType::GPU) => {
            match core::get_device_info(d, ClInfo::HostUnifiedMemory) {
                Ok(ClRes::HostUnifiedMemory(true)) => DeviceKind::IntegratedGpu,
                _ => DeviceKind::DiscreteGpu,
            }
        }
        _ => DeviceKind::Other,
    };
    let memory_bytes = match core::get_device_info(d, ClInfo::GlobalMemSize) {
        Ok(ClRes::GlobalMemSize(n)) => Some(n),
        _ => None,
    };
    let compute_units = match core::get_device_info(d, ClInfo::MaxComputeUnits) {
        Ok(ClRes::MaxComputeUnits(n)) => Some(n),
        _ => None,
    };
    let platform = platform_string(p, PlatformInfo::Name);
    let driver_version = device_string(d, core::ffi::CL_DRIVER_VERSION);
    DeviceInfo {
        device: Device::OpenCl(index),
        backend: BackendKind::OpenCl,
        kind,
        name: device_string(d, core::ffi::CL_DEVICE_NAME),
        api: device_string(d, core::ffi::CL_DEVICE_VERSION),
        driver: format!("{platform} {driver_version}").trim().to_string(),
        memory_bytes,
        compute_units,
    }
}

/// How the kernels are compiled for one device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BuildConfig {
    pub chunk_wg: usize,
    pub parent_wg: usize,
    pub merkle_wg: usize,
    pub staged: bool,
    /// Tree levels the chunk kernel reduces inside a work-group, for every call (capped at log2
    /// of `chunk_wg`); `None`: chosen per call (see [`levels_for`](Self::levels_for)).
    pub chunk_levels: Option<u32>,
    pub extra_options: String,
}

impl BuildConfig {
    pub fn options(&self) -> String {
        format!(
            "-cl-std=CL1.2 -D CHUNK_WG={} -D PARENT_WG={} -D MERKLE_WG={} -D STAGED={} {}",
            self.chunk_wg, self.parent_wg, self.merkle_wg, self.staged as u32, self.extra_options
        )
    }

    /// The tree levels the chunk kernel reduces inside a work-group for a run of `n` chunks: each
    /// node it writes stands for 2^this many chunks. Unless fixed by the options: the fewest
    /// dispatches in all, and among those the fewest levels, but no fewer than leave 32 nodes
    /// per group (a whole NVIDIA warp's worth of work on the last level the group reduces). With
    /// 256-chunk groups that is 3 levels for 1 GiB (2^17 nodes, then two parent dispatches as
    /// with all 8 levels) and all 8 for 64 MiB (where 3 would take a dispatch more).
    pub fn levels_for(&self, n: u64) -> u32 {
        let all = self.group_chunks(n).max(1).ilog2();
        if let Some(l) = self.chunk_levels {
            return l.min(all);
        }
        let parent = self.parent_wg.max(2) as u64;
        let rounds = |mut count: u64| {
            let mut r = 0;
            while count > 1 {
                count /= parent;
                r += 1;
            }
            r
        };
        let least = all.saturating_sub(5);
        (least..=all).min_by_key(|&l| (rounds(n >> l), l)).unwrap_or(all)
    }

    /// The chunks each work-group of the chunk kernel takes for a run of `n` chunks: `chunk_wg`,
    /// or fewer for a small run, spread over more groups (`gpu::groups`); staged loads need
    /// whole groups.
    pub fn group_chunks(&self, n: u64) -> u64 {
        let wg = self.chunk_wg.max(1) as u64;
        if self.staged {
            wg
        } else {
            wg >> chunk_group_shift(n, wg)
        }
    }

    /// Local memory the chunk kernel declares, in bytes (see shaders/blake3.cl).
    pub fn chunk_local_bytes(&self) -> u64 {
        self.chunk_wg as u64 * if self.staged { 160 } else { 48 }
    }
}

/// Compiles the kernels for `d` on platform `p`, or loads the program binary the same driver
/// built from the same source and options last time (`binaries.rs`). A compiler error comes back
/// with the driver's build log.
pub(crate) fn build(
    device: Device,
    context: &core::Context,
    p: PlatformId,
    d: DeviceId,
    config: &BuildConfig,
) -> Result<(core::Program, String)> {
    let text = config.options();
    let options = CString::new(text.as_str())
        .map_err(|_| Error::InvalidInput("OpenCL build options must not contain NUL bytes".into()))?;
    let cache = binaries::cache_file(&driver_key(p, d), &text);
    if let Some(built) = cache.as_ref().and_then(|c| binaries::load(c, device, context, d, &options)) {
        return Ok(built);
    }
    let source = CString::new(SOURCE)
        .map_err(|_| Error::KernelBuild { device, log: "the kernel source contains a NUL byte".into() })?;
    let program = core::create_program_with_source(context, &[source])
        .map_err(|e| cl_err(device, "creating the kernel program", e))?;
    let log = compile(device, &program, d, &options)?;
    if let Some(c) = &cache {
        binaries::store(c, &program, &log);
    }
    Ok((program, log))
}

/// What a compiled program depends on besides its source and options: the platform and its
/// version, the device, its OpenCL version and the driver's version.
fn driver_key(p: PlatformId, d: DeviceId) -> String {
    format!(
        "platform: {} {} | device: {} | {} | driver: {}",
        platform_string(p, PlatformInfo::Name),
        platform_string(p, PlatformInfo::Version),
        device_string(d, core::ffi::CL_DEVICE_NAME),
        device_string(d, core::ffi::CL_DEVICE_VERSION),
        device_string(d, core::ffi::CL_DRIVER_VERSION),
    )
}
