//! Finding adapters (once per process, in a stable order) and opening a device on one of them with
//! the adapter's real limits; every driver call inside `stderr::quiet`.

use super::pipelines::{WORKGROUP, WORKGROUP_BYTES};
use crate::backends::stderr::quiet;
use crate::tree::{BackendKind, Device, DeviceInfo, DeviceKind, Error, Result};
use std::sync::OnceLock;

/// What a usable adapter must offer: compute shaders, our 256-invocation workgroups and the four
/// buffers a pass binds (three storage, one uniform).
fn usable(adapter: &::wgpu::Adapter) -> std::result::Result<(), String> {
    let caps = adapter.get_downlevel_capabilities();
    let limits = adapter.limits();
    if !caps.flags.contains(::wgpu::DownlevelFlags::COMPUTE_SHADERS) {
        return Err("no compute shaders".into());
    }
    if limits.max_compute_invocations_per_workgroup < WORKGROUP || limits.max_compute_workgroup_size_x < WORKGROUP {
        return Err(format!(
            "workgroups of at most {} invocations (need {})",
            limits.max_compute_invocations_per_workgroup, WORKGROUP
        ));
    }
    if limits.max_storage_buffers_per_shader_stage < 3 {
        return Err("fewer than 3 storage buffers per shader stage".into());
    }
    if limits.max_compute_workgroup_storage_size < WORKGROUP_BYTES {
        return Err(format!(
            "{} bytes of workgroup memory (need {})",
            limits.max_compute_workgroup_storage_size, WORKGROUP_BYTES
        ));
    }
    Ok(())
}

/// Every usable adapter, sorted, with its listing.
pub(crate) struct Registry {
    pub adapters: Vec<(::wgpu::Adapter, DeviceInfo)>,
    /// Adapters found but unusable, and why (for the error message when none is usable).
    pub skipped: Vec<String>,
}

/// The wgpu backend's name as `DeviceInfo::api` shows it.
pub(crate) fn api_name(backend: ::wgpu::Backend) -> &'static str {
    match backend {
        ::wgpu::Backend::Vulkan => "Vulkan",
        ::wgpu::Backend::Metal => "Metal",
        ::wgpu::Backend::Dx12 => "DX12",
        ::wgpu::Backend::Gl => "GL",
        ::wgpu::Backend::BrowserWebGpu => "WebGPU",
        ::wgpu::Backend::Noop => "noop",
    }
}

fn backend_rank(backend: ::wgpu::Backend) -> u8 {
    match backend {
        ::wgpu::Backend::Vulkan => 0,
        ::wgpu::Backend::Metal => 1,
        ::wgpu::Backend::Dx12 => 2,
        ::wgpu::Backend::Gl => 3,
        ::wgpu::Backend::BrowserWebGpu => 4,
        ::wgpu::Backend::Noop => 5,
    }
}

/// The hardware kind. A GPU API implemented on the CPU (llvmpipe, lavapipe, SwiftShader, WARP)
/// is `DeviceKind::Cpu` whatever type the driver reports, so `Device::Auto` never picks it.
pub(crate) fn device_kind(info: &::wgpu::AdapterInfo) -> DeviceKind {
    let name = info.name.to_ascii_lowercase();
    let software = ["llvmpipe", "lavapipe", "softpipe", "swiftshader", "microsoft basic render"];
    if software.iter().any(|s| name.contains(s)) {
        return DeviceKind::Cpu;
    }
    match info.device_type {
        ::wgpu::DeviceType::Cpu => DeviceKind::Cpu,
        ::wgpu::DeviceType::DiscreteGpu => DeviceKind::DiscreteGpu,
        ::wgpu::DeviceType::IntegratedGpu => DeviceKind::IntegratedGpu,
        ::wgpu::DeviceType::VirtualGpu => DeviceKind::VirtualGpu,
        ::wgpu::DeviceType::Other => DeviceKind::Other,
    }
}

fn kind_rank(kind: DeviceKind) -> u8 {
    match kind {
        DeviceKind::DiscreteGpu => 0,
        DeviceKind::IntegratedGpu => 1,
        DeviceKind::VirtualGpu => 2,
        DeviceKind::Other => 3,
        DeviceKind::Cpu => 4,
    }
}

fn scan() -> Registry {
    // Every backend wgpu was built with; WGPU_BACKEND and friends still narrow it, as in every
    // wgpu program.
    let mut desc = ::wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = ::wgpu::Backends::all();
    let desc = desc.with_env();
    let instance = ::wgpu::Instance::new(desc);
    let found = pollster::block_on(instance.enumerate_adapters(::wgpu::Backends::all()));
    let mut keyed = Vec::new();
    let mut skipped = Vec::new();
    for adapter in found {
        let info = adapter.get_info();
        if let Err(why) = usable(&adapter) {
            skipped.push(format!("{} ({}): {why}", info.name, api_name(info.backend)));
            continue;
        }
        // Some adapters are listed but cannot open a device (NVIDIA's GL through headless EGL:
        // "Parent device is lost"). Only adapters that open one are listed; the probe's device
        // is dropped at once (every backend opens a fresh one, as was verified on NVIDIA).
        if let Err(e) = open_device(&adapter, Device::Wgpu(0)) {
            let why = match e {
                Error::Unavailable { reason, .. } => reason,
                other => other.to_string(),
            };
            skipped.push(format!("{} ({}): {why}", info.name, api_name(info.backend)));
            continue;
        }
        let kind = device_kind(&info);
        let key = (
            backend_rank(info.backend),
            kind_rank(kind),
            info.name.clone(),
            info.device_pci_bus_id.clone(),
            info.vendor,
            info.device,
        );
        keyed.push((key, adapter, info, kind));
    }
    // Stable order: the same machine lists the same adapters under the same indices every run,
    // whatever order the drivers answered in.
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    let adapters = keyed
        .into_iter()
        .enumerate()
        .map(|(i, (_, adapter, info, kind))| {
            let driver = match (info.driver.is_empty(), info.driver_info.is_empty()) {
                (false, false) => format!("{} {}", info.driver, info.driver_info),
                (false, true) => info.driver.clone(),
                (true, false) => info.driver_info.clone(),
                (true, true) => String::new(),
            };
            let listing = DeviceInfo {
                device: Device::Wgpu(i),
                backend: BackendKind::Wgpu,
                kind,
                name: info.name.clone(),
                api: api_name(info.backend).to_string(),
                driver,
                memory_bytes: None,
                compute_units: None,
            };
            (adapter, listing)
        })
        .collect();
    Registry { adapters, skipped }
}

/// The process's adapters, found on first use (with the drivers' start-up chatter kept off
/// stderr).
pub(crate) fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| quiet(scan))
}

/// The usable adapters' listings, or why there are none.
pub(crate) fn enumerate() -> Result<Vec<DeviceInfo>> {
    let reg = registry();
    if reg.adapters.is_empty() {
        let reason = if reg.skipped.is_empty() {
            "wgpu found no adapter (no Vulkan, Metal, DX12 or GL driver)".to_string()
        } else {
            format!("wgpu found no adapter that can run the BLAKE3 shaders: {}", reg.skipped.join("; "))
        };
        return Err(Error::Unavailable { device: Device::Wgpu(0), reason });
    }
    Ok(reg.adapters.iter().map(|(_, info)| info.clone()).collect())
}

/// The adapter `Device::Wgpu(index)` names.
pub(crate) fn adapter(index: usize) -> Result<(::wgpu::Adapter, DeviceInfo)> {
    let reg = registry();
    if reg.adapters.is_empty() {
        // Same message as `enumerate`, but about the device asked for.
        return Err(match enumerate() {
            Err(Error::Unavailable { reason, .. }) => Error::Unavailable { device: Device::Wgpu(index), reason },
            _ => Error::NoSuchDevice { device: Device::Wgpu(index), available: 0 },
        });
    }
    reg.adapters
        .get(index)
        .cloned()
        .ok_or(Error::NoSuchDevice { device: Device::Wgpu(index), available: reg.adapters.len() })
}

/// The optional features we use where the adapter has them.
pub(crate) fn wanted_features(adapter: &::wgpu::Adapter) -> ::wgpu::Features {
    adapter.features() & (::wgpu::Features::TIMESTAMP_QUERY | ::wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS)
}

/// Opens a device on `adapter` with the adapter's real limits (not wgpu's conservative
/// defaults): the largest buffers and bindings it allows decide the segment sizes.
pub(crate) fn open_device(adapter: &::wgpu::Adapter, device: Device) -> Result<(::wgpu::Device, ::wgpu::Queue)> {
    let desc = ::wgpu::DeviceDescriptor {
        label: Some("b3accel"),
        required_features: wanted_features(adapter),
        required_limits: adapter.limits(),
        experimental_features: ::wgpu::ExperimentalFeatures::default(),
        memory_hints: ::wgpu::MemoryHints::Performance,
        trace: ::wgpu::Trace::Off,
    };
    quiet(|| pollster::block_on(adapter.request_device(&desc)))
        .map_err(|e| Error::Unavailable { device, reason: format!("the adapter refused to open a device: {e}") })
}
