//! Finding adapters (one wgpu backend at a time, each once per process, in a stable order) and
//! opening a device on one of them with the adapter's real limits; every driver call inside
//! `stderr::quiet`.

use super::paths::wanted_features;
use super::pipelines::{WORKGROUP, WORKGROUP_BYTES};
use crate::backends::stderr::quiet;
use crate::tree::{BackendKind, Device, DeviceInfo, DeviceKind, Error, Result};
use std::sync::atomic::{AtomicUsize, Ordering};
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

/// The backends adapters are listed from, in listing order: `Device::Wgpu(i)` counts through
/// each one's adapters in turn.
const ORDER: [::wgpu::Backend; 4] =
    [::wgpu::Backend::Vulkan, ::wgpu::Backend::Metal, ::wgpu::Backend::Dx12, ::wgpu::Backend::Gl];

/// One backend's usable adapters, sorted, with their listings (numbered within the backend; the
/// listing functions number them across backends), and the adapters it found but cannot use.
struct Found {
    adapters: Vec<(::wgpu::Adapter, DeviceInfo)>,
    /// Adapters found but unusable, and why (for the error message when none is usable).
    skipped: Vec<String>,
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

/// Instances created, per backend of [`ORDER`] (tests check that an adapter's lookup creates
/// none for the backends listed after its own).
static INSTANCES: [AtomicUsize; ORDER.len()] = [const { AtomicUsize::new(0) }; ORDER.len()];

/// Lists `backend`'s usable adapters through an instance of that backend alone, so that finding
/// a Vulkan adapter never starts GL (EGL) or any other API.
fn scan(k: usize) -> Found {
    let backend = ORDER[k];
    INSTANCES[k].fetch_add(1, Ordering::Relaxed);
    // The environment's instance flags and backend options (WGPU_DEBUG, WGPU_GL_BACKEND, ...)
    // apply as in every wgpu program; WGPU_BACKEND is applied by `listed`.
    let mut desc = ::wgpu::InstanceDescriptor::new_without_display_handle().with_env();
    desc.backends = backend.into();
    let instance = ::wgpu::Instance::new(desc);
    let found = pollster::block_on(instance.enumerate_adapters(backend.into()));
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
        let key = (kind_rank(kind), info.name.clone(), info.device_pci_bus_id.clone(), info.vendor, info.device);
        keyed.push((key, adapter, info, kind));
    }
    // Stable order: the same machine lists the same adapters under the same indices every run,
    // whatever order the driver answered in.
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
    Found { adapters, skipped }
}

/// The backends adapters may come from: those wgpu was built with, narrowed by WGPU_BACKEND as
/// in every wgpu program.
fn allowed() -> ::wgpu::Backends {
    ::wgpu::Backends::all().with_env() & ::wgpu::Instance::enabled_backend_features()
}

/// Each allowed backend with its adapters, in listing order, each backend scanned on first use
/// (with the drivers' start-up chatter kept off stderr). Lazy: a caller that stops early never
/// starts the later backends.
fn listed() -> impl Iterator<Item = (::wgpu::Backend, &'static Found)> {
    static FOUND: [OnceLock<Found>; ORDER.len()] = [const { OnceLock::new() }; ORDER.len()];
    let allowed = allowed();
    (0..ORDER.len())
        .filter(move |&k| allowed.contains(ORDER[k].into()))
        .map(|k| (ORDER[k], FOUND[k].get_or_init(|| quiet(|| scan(k)))))
}

/// A backend's listing numbered as `Device::Wgpu(index)`.
fn numbered(info: &DeviceInfo, index: usize) -> DeviceInfo {
    DeviceInfo { device: Device::Wgpu(index), ..info.clone() }
}

/// Why `device` cannot be had when no backend has a usable adapter.
fn none_usable(device: Device) -> Error {
    let skipped: Vec<&str> = listed().flat_map(|(_, f)| f.skipped.iter().map(String::as_str)).collect();
    let reason = if skipped.is_empty() {
        "wgpu found no adapter (no Vulkan, Metal, DX12 or GL driver)".to_string()
    } else {
        format!("wgpu found no adapter that can run the BLAKE3 shaders: {}", skipped.join("; "))
    };
    Error::Unavailable { device, reason }
}

/// The usable adapters' listings, or why there are none. Starts every allowed backend.
pub(crate) fn enumerate() -> Result<Vec<DeviceInfo>> {
    let mut all = Vec::new();
    for (_, found) in listed() {
        for (_, info) in &found.adapters {
            all.push(numbered(info, all.len()));
        }
    }
    if all.is_empty() {
        return Err(none_usable(Device::Wgpu(0)));
    }
    Ok(all)
}

/// The adapter `Device::Wgpu(index)` names. Starts only the backends up to the one it is on.
pub(crate) fn adapter(index: usize) -> Result<(::wgpu::Adapter, DeviceInfo)> {
    let mut base = 0;
    for (_, found) in listed() {
        if index < base + found.adapters.len() {
            let (adapter, info) = &found.adapters[index - base];
            return Ok((adapter.clone(), numbered(info, index)));
        }
        base += found.adapters.len();
    }
    if base == 0 {
        return Err(none_usable(Device::Wgpu(index)));
    }
    Err(Error::NoSuchDevice { device: Device::Wgpu(index), available: base })
}

/// The `Device::Wgpu(i)` of the adapter a caller's device was opened on, where it is one of
/// ours. Starts only the backends up to the adapter's own.
pub(crate) fn device_of(info: &::wgpu::AdapterInfo) -> Option<Device> {
    let mut base = 0;
    for (backend, found) in listed() {
        if backend == info.backend {
            let at = found.adapters.iter().position(|(a, _)| a.get_info() == *info)?;
            return Some(Device::Wgpu(base + at));
        }
        base += found.adapters.len();
    }
    None
}

/// Opens a device on `adapter` with the adapter's real limits (not wgpu's conservative
/// defaults): the largest buffers and bindings it allows decide the segment sizes. Only the
/// optional features the code uses are requested (`paths.rs`); the pipeline cache only while
/// caches are on.
pub(crate) fn open_device(adapter: &::wgpu::Adapter, device: Device) -> Result<(::wgpu::Device, ::wgpu::Queue)> {
    let desc = ::wgpu::DeviceDescriptor {
        label: Some("b3accel"),
        required_features: wanted_features(adapter.features(), super::pipeline_cache::wanted()),
        required_limits: adapter.limits(),
        experimental_features: ::wgpu::ExperimentalFeatures::default(),
        memory_hints: ::wgpu::MemoryHints::Performance,
        trace: ::wgpu::Trace::Off,
    };
    quiet(|| pollster::block_on(adapter.request_device(&desc)))
        .map_err(|e| Error::Unavailable { device, reason: format!("the adapter refused to open a device: {e}") })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether this is a CI run, where a built backend must find a device.
    fn ci() -> bool {
        std::env::var("CI").map(|v| v == "true" || v == "1").unwrap_or(false)
    }

    /// Where `backend` comes in [`ORDER`].
    fn rank(backend: ::wgpu::Backend) -> usize {
        ORDER.iter().position(|&b| b == backend).expect("a backend of ORDER")
    }

    /// The listing as it was made before backends were scanned one at a time: one instance over
    /// every allowed backend, every adapter that can run the shaders and open a device, sorted by
    /// backend, then kind, name, bus, vendor and device. Lazy scanning must give the same indices.
    #[test]
    fn lazy_listing_keeps_the_indices_of_one_instance_over_every_backend() {
        let reference = quiet(|| {
            let mut desc = ::wgpu::InstanceDescriptor::new_without_display_handle().with_env();
            desc.backends = allowed();
            let instance = ::wgpu::Instance::new(desc);
            let mut keyed: Vec<_> = pollster::block_on(instance.enumerate_adapters(allowed()))
                .into_iter()
                .filter(|a| usable(a).is_ok() && open_device(a, Device::Wgpu(0)).is_ok())
                .map(|a| {
                    let i = a.get_info();
                    let kind = device_kind(&i);
                    let listing = (i.name.clone(), api_name(i.backend).to_string(), kind);
                    ((rank(i.backend), kind_rank(kind), i.name, i.device_pci_bus_id, i.vendor, i.device), listing)
                })
                .collect();
            keyed.sort_by(|a, b| a.0.cmp(&b.0));
            keyed.into_iter().map(|(_, listing)| listing).collect::<Vec<_>>()
        });
        if reference.is_empty() {
            assert!(!ci(), "CI=true: the wgpu backend must have an adapter");
            eprintln!("*** no wgpu adapter: lazy_listing_keeps_the_indices... did NOT run ***");
            return;
        }
        let listed = enumerate().expect("adapters that the reference found");
        let got: Vec<_> = listed.iter().map(|d| (d.name.clone(), d.api.clone(), d.kind)).collect();
        assert_eq!(got, reference);
        for (i, info) in listed.iter().enumerate() {
            assert_eq!(info.device, Device::Wgpu(i));
            // Each index names the same adapter when looked up alone.
            let (adapter, alone) = adapter(i).unwrap();
            assert_eq!(&alone, info);
            assert_eq!(device_of(&adapter.get_info()), Some(Device::Wgpu(i)));
        }
        assert!(matches!(
            adapter(listed.len()),
            Err(Error::NoSuchDevice { available, .. }) if available == listed.len()
        ));
    }

    /// The child-process half of `opening_wgpu_0_starts_no_later_backend`, in a process of its
    /// own so that no other test has started a backend yet.
    const CHILD: &str = "B3ACCEL_TEST_LAZY_BACKENDS";

    /// Opening `Device::Wgpu(0)` creates instances only for the backends up to the adapter's own
    /// (on a machine whose first adapter is Vulkan: Vulkan alone, no GL), once each; listing every
    /// device then creates one for each other allowed backend, once. Run in a fresh process (this
    /// test binary again, with only this test), since every other test shares the counters.
    #[test]
    fn opening_wgpu_0_starts_no_later_backend() {
        let counts = || INSTANCES.iter().map(|c| c.load(Ordering::Relaxed)).collect::<Vec<_>>();
        if std::env::var_os(CHILD).is_some() {
            assert_eq!(counts(), vec![0; ORDER.len()], "a fresh process has started no backend");
            if let Err(e) = crate::backends::wgpu::WgpuBackend::open(0) {
                assert!(!ci(), "CI=true: the wgpu backend must open wgpu:0: {e}");
                println!("lazy backends: no wgpu:0 ({e}); NOT checked");
                return;
            }
            let after_open = counts();
            // Looked up again: already found, so it starts nothing.
            let own = rank(adapter(0).unwrap().0.get_info().backend);
            for (k, &n) in after_open.iter().enumerate() {
                match k.cmp(&own) {
                    std::cmp::Ordering::Less => assert!(n <= 1, "{:?} started {n} times", ORDER[k]),
                    std::cmp::Ordering::Equal => assert_eq!(n, 1, "wgpu:0's own backend, once"),
                    std::cmp::Ordering::Greater => assert_eq!(n, 0, "{:?} started for wgpu:0", ORDER[k]),
                }
            }
            enumerate().unwrap();
            enumerate().unwrap();
            let after_all = counts();
            for (k, &n) in after_all.iter().enumerate() {
                let want = usize::from(allowed().contains(ORDER[k].into()));
                assert_eq!(n, want, "{:?}: instances after listing twice", ORDER[k]);
            }
            println!("lazy backends: checked wgpu:0 on {:?}: {after_open:?} then {after_all:?}", ORDER[own]);
            return;
        }
        let name = "backends::wgpu::adapter::tests::opening_wgpu_0_starts_no_later_backend";
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([name, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .output()
            .expect("the test binary runs again");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
        // The harness prints the test's name on the same line, before the report.
        let report = stdout.lines().find_map(|l| l.find("lazy backends:").map(|at| &l[at..]));
        let report = report.unwrap_or_else(|| panic!("the child ran no check:\n{stdout}\n{stderr}"));
        assert!(report.starts_with("lazy backends: checked") || !ci(), "{report}");
        if !report.starts_with("lazy backends: checked") {
            eprintln!("*** {report} ***");
        }
    }
}
