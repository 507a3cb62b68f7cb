//! The registry: which devices this machine has, and the backend that runs each `Device`, opened
//! once per process.

use crate::backends::cpu::CpuBackend;
#[cfg(feature = "opencl")]
use crate::backends::opencl;
#[cfg(feature = "wgpu")]
use crate::backends::wgpu;
use crate::dispatch::auto::AutoBackend;
use crate::dispatch::fault;
use crate::tree::{Backend, BackendKind, Device, DeviceInfo, Error, Result};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Every device this machine has: the CPU first, then each OpenCL device and each wgpu adapter
/// (for the backends compiled in). A backend whose runtime is missing contributes no devices;
/// [`backend_status`] says why.
///
/// ```
/// let all = b3accel::devices();
/// assert_eq!(all[0].device, b3accel::Device::Cpu);
/// ```
pub fn devices() -> Vec<DeviceInfo> {
    let mut all = vec![CpuBackend::new().info().clone()];
    for status in backend_status() {
        if let Ok(list) = status.devices {
            all.extend(list);
        }
    }
    all
}

/// One GPU backend's enumeration result, as [`backend_status`] reports it.
///
/// ```
/// for s in b3accel::backend_status() {
///     match &s.devices {
///         Ok(list) => println!("{}: {} device(s)", s.backend, list.len()),
///         Err(e) => println!("{}: unavailable: {e}", s.backend),
///     }
/// }
/// ```
#[derive(Debug)]
pub struct BackendStatus {
    /// Which backend.
    pub backend: BackendKind,
    /// Its devices, or why it has none (no runtime, no driver).
    pub devices: Result<Vec<DeviceInfo>>,
}

/// Each GPU backend compiled into this build, with its devices or the reason it has none. What
/// it finds is kept for the rest of the process and recorded in Auto's cache file (see
/// [`auto`](crate::auto)), so that later processes need not ask the drivers again.
///
/// ```
/// let built = b3accel::backend_status().len();
/// assert!(built <= 2);
/// ```
pub fn backend_status() -> Vec<BackendStatus> {
    list_backends(&[BackendKind::OpenCl, BackendKind::Wgpu])
}

/// [`backend_status`] of the backends of `kinds` alone (those built in): each driver listed is
/// kept and recorded, the others are not asked.
fn list_backends(kinds: &[BackendKind]) -> Vec<BackendStatus> {
    let _one = lock(&ONE_AT_A_TIME);
    let start = std::time::Instant::now();
    let mut out = Vec::new();
    for &kind in kinds {
        let devices = match kind {
            #[cfg(feature = "opencl")]
            BackendKind::OpenCl => opencl::enumerate(),
            #[cfg(feature = "wgpu")]
            BackendKind::Wgpu => wgpu::enumerate(),
            _ => continue,
        };
        out.push(BackendStatus { backend: kind, devices });
    }
    if !out.is_empty() {
        super::auto::note_listing(&out, start.elapsed().as_secs_f64());
    }
    out
}

/// Whether each device of `devices` is there, asking only the drivers of the backends they name
/// (each listed once, and what it lists recorded as [`backend_status`] does): `Ok` for a device
/// the listing has (and for the CPU), else the error [`backend`] gives for a device that is not
/// there (a backend not built in, a runtime missing, no device of that index). Nothing is opened.
///
/// ```
/// use b3accel::Device;
/// let verdicts = b3accel::check_devices(&[Device::Cpu, Device::Wgpu(999)]);
/// assert!(verdicts[0].is_ok());
/// assert!(verdicts[1].is_err());
/// ```
pub fn check_devices(devices: &[Device]) -> Vec<Result<()>> {
    let mut kinds: Vec<BackendKind> = Vec::new();
    for d in devices {
        let kind = match d {
            Device::OpenCl(_) => BackendKind::OpenCl,
            Device::Wgpu(_) => BackendKind::Wgpu,
            _ => continue,
        };
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    let statuses = list_backends(&kinds);
    devices.iter().map(|&d| verdict(d, &statuses)).collect()
}

/// Whether `device` is among what `statuses` listed, in [`backend`]'s words where it is not.
fn verdict(device: Device, statuses: &[BackendStatus]) -> Result<()> {
    let kind = match device {
        Device::OpenCl(_) => BackendKind::OpenCl,
        Device::Wgpu(_) => BackendKind::Wgpu,
        _ => return Ok(()),
    };
    let Some(status) = statuses.iter().find(|s| s.backend == kind) else {
        // Not built in: opening it says so without asking any driver.
        return backend(device).map(|_| ());
    };
    match &status.devices {
        Ok(list) if list.iter().any(|d| d.device == device) => Ok(()),
        Ok(list) => Err(Error::NoSuchDevice { device, available: list.len() }),
        Err(Error::Unavailable { reason, .. }) => Err(Error::Unavailable { device, reason: reason.clone() }),
        Err(e) => Err(Error::Unavailable { device, reason: e.to_string() }),
    }
}

/// The backend that runs `device`, opened on first use and shared for the life of the process
/// (GPU programs are built once per device).
///
/// ```
/// let cpu = b3accel::backend(b3accel::Device::Cpu).unwrap();
/// assert_eq!(cpu.info().device, b3accel::Device::Cpu);
/// ```
pub fn backend(device: Device) -> Result<Arc<dyn Backend>> {
    if let Some(b) = ready(device) {
        return Ok(b);
    }
    // Opened outside the lock: a slow driver start must not stall users of other devices. Two
    // threads may race to open the same device; the first one stored wins.
    let opened: Arc<dyn Backend> = match device {
        Device::Auto => Arc::new(AutoBackend::new()),
        Device::Cpu => cpu_backend().clone(),
        // A GPU backend as `B3ACCEL_FAULT` may ask it to misbehave (a testing aid).
        Device::OpenCl(i) => fault::wrap(device, open_opencl(device, i)?)?,
        Device::Wgpu(i) => fault::wrap(device, open_wgpu(device, i)?)?,
    };
    let mut map = lock(open_map());
    Ok(map.entry(device).or_insert(opened).clone())
}

/// The backends opened so far, by device (the CPU's is [`cpu_backend`]).
fn open_map() -> &'static Mutex<HashMap<Device, Arc<dyn Backend>>> {
    static OPEN: OnceLock<Mutex<HashMap<Device, Arc<dyn Backend>>>> = OnceLock::new();
    OPEN.get_or_init(Default::default)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Devices being opened in the background: `None` while the opening runs, the error once it
/// has failed (a device that opened is in [`open_map`] instead).
fn starting() -> &'static Mutex<HashMap<Device, Option<String>>> {
    static STARTING: OnceLock<Mutex<HashMap<Device, Option<String>>>> = OnceLock::new();
    STARTING.get_or_init(Default::default)
}

/// The backend of `device` if it is open already; never opens one.
pub(crate) fn ready(device: Device) -> Option<Arc<dyn Backend>> {
    if device == Device::Cpu {
        return Some(cpu_backend().clone());
    }
    lock(open_map()).get(&device).cloned()
}

/// Starts opening `device` on a thread of its own, unless it is open, opening, or failed to open
/// before; returns at once. A GPU's driver start and kernel build take a few hundred
/// milliseconds (seconds when nothing is cached), which the CPU spends hashing meanwhile.
pub(crate) fn start_opening(device: Device) {
    if ready(device).is_some() {
        return;
    }
    {
        let mut map = lock(starting());
        if map.contains_key(&device) {
            return;
        }
        map.insert(device, None);
    }
    let spawned = std::thread::Builder::new().name(format!("b3accel open {device}")).spawn(move || {
        let _one = lock(&ONE_AT_A_TIME);
        let outcome = backend(device);
        let mut map = lock(starting());
        match outcome {
            Ok(_) => map.remove(&device),
            Err(e) => map.insert(device, Some(e.to_string())),
        };
    });
    if let Err(e) = spawned {
        lock(starting()).insert(device, Some(format!("cannot start a thread to open it: {e}")));
    }
}

/// Held while a driver starts in the background (a device opening) or lists its devices: one at
/// a time, since NVIDIA's OpenCL and Vulkan drivers starting side by side in one process have
/// hung (and crashed) on the GPU machine.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Why `device` failed to open in the background, if it did.
pub(crate) fn open_failure(device: Device) -> Option<String> {
    lock(starting()).get(&device).cloned().flatten()
}

/// Whether `device` is being opened in the background right now.
pub(crate) fn opening(device: Device) -> bool {
    matches!(lock(starting()).get(&device), Some(None))
}

/// Whether a device is being opened in the background right now (see [`settle`]).
///
/// ```
/// if b3accel::opening_in_background() {
///     b3accel::settle();
/// }
/// ```
pub fn opening_in_background() -> bool {
    lock(starting()).values().any(Option::is_none)
}

/// Waits until no device is being opened in the background (see
/// [`Spread`](crate::spread::Spread), which opens its GPUs that way), and returns at once when
/// none is. Call it before a program ends: a process that exits while a GPU driver is still
/// starting on another thread runs the driver's exit handlers under it, which crashed NVIDIA's
/// drivers on the GPU machine (`b3accel --backend cpu,opencl:1,wgpu:0` on a small file, which the
/// CPU hashes before the GPUs are up, died of SIGSEGV there).
///
/// ```
/// let s = b3accel::spread::Spread::new(&[b3accel::Device::Cpu])?;
/// b3accel::settle();
/// # Ok::<(), b3accel::Error>(())
/// ```
pub fn settle() {
    while opening_in_background() {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// The CPU backend, opened once and found without a lock or a map: every `hash_on(Device::Cpu, ..)`
/// of more than a chunk passes here, from however many threads.
pub(crate) fn cpu_backend() -> &'static Arc<dyn Backend> {
    static CPU: OnceLock<Arc<dyn Backend>> = OnceLock::new();
    CPU.get_or_init(|| Arc::new(CpuBackend::new()))
}

/// The backend behind `Device::Auto`, which always opens.
pub(crate) fn auto_backend() -> Arc<dyn Backend> {
    backend(Device::Auto).unwrap_or_else(|_| Arc::new(AutoBackend::new()))
}

#[cfg(feature = "opencl")]
fn open_opencl(_device: Device, index: usize) -> Result<Arc<dyn Backend>> {
    Ok(Arc::new(opencl::OpenClBackend::open(index)?))
}

#[cfg(not(feature = "opencl"))]
fn open_opencl(device: Device, _index: usize) -> Result<Arc<dyn Backend>> {
    Err(Error::NotBuilt { device, feature: "opencl" })
}

#[cfg(feature = "wgpu")]
fn open_wgpu(_device: Device, index: usize) -> Result<Arc<dyn Backend>> {
    Ok(Arc::new(wgpu::WgpuBackend::open(index)?))
}

#[cfg(not(feature = "wgpu"))]
fn open_wgpu(device: Device, _index: usize) -> Result<Arc<dyn Backend>> {
    Err(Error::NotBuilt { device, feature: "wgpu" })
}

/// The devices of `found` with each GPU that OpenCL lists left out of wgpu's list (matched by
/// name, as many times as OpenCL has it).
pub(crate) fn one_per_gpu(found: &[DeviceInfo]) -> Vec<Device> {
    one_per_gpu_named(found.iter().map(|d| (d.device, d.name.as_str())))
}

/// [`one_per_gpu`] of devices given with their names.
pub(crate) fn one_per_gpu_named<'a>(found: impl Iterator<Item = (Device, &'a str)> + Clone) -> Vec<Device> {
    let mut opencl_names: Vec<&str> =
        found.clone().filter(|(d, _)| matches!(d, Device::OpenCl(_))).map(|(_, n)| n).collect();
    let mut out = Vec::new();
    for (device, name) in found {
        if matches!(device, Device::Wgpu(_)) {
            if let Some(i) = opencl_names.iter().position(|n| *n == name) {
                opencl_names.swap_remove(i);
                continue;
            }
        }
        out.push(device);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(device: Device, backend: BackendKind, name: &str) -> DeviceInfo {
        DeviceInfo { device, backend, name: name.into(), ..crate::backends::cpu::CpuBackend::new().info().clone() }
    }

    #[test]
    fn a_gpu_both_apis_list_is_taken_once_through_opencl() {
        let found = [
            info(Device::Cpu, BackendKind::Cpu, "Xeon"),
            info(Device::OpenCl(1), BackendKind::OpenCl, "H200"),
            info(Device::OpenCl(2), BackendKind::OpenCl, "H200"),
            info(Device::Wgpu(0), BackendKind::Wgpu, "H200"),
            info(Device::Wgpu(1), BackendKind::Wgpu, "Radeon"),
            info(Device::Wgpu(2), BackendKind::Wgpu, "H200"),
            info(Device::Wgpu(3), BackendKind::Wgpu, "H200"),
        ];
        assert_eq!(
            one_per_gpu(&found),
            [Device::Cpu, Device::OpenCl(1), Device::OpenCl(2), Device::Wgpu(1), Device::Wgpu(3)]
        );
    }
}
