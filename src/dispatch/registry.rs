//! The registry: which devices this machine has, and the backend that runs each `Device` but
//! `Device::Auto`, opened once per process; the backends and how to list and open their devices
//! come from the table (`table.rs`).

use crate::backends::cpu::CpuBackend;
use crate::dispatch::fault;
use crate::dispatch::record;
use crate::dispatch::table::{self, BackendEntry, BackendStatus};
use crate::tree::{Backend, BackendId, Device, DeviceInfo, Error, Result};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Every device this machine has, backend by backend in the order of the table of backends
/// ([`backends`](crate::backends)): the CPU first, then each OpenCL device and each wgpu adapter
/// (for the backends compiled in), then each device of a backend registered at run time. A
/// backend whose runtime is missing contributes no devices; [`backend_status`] says why.
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

/// Each backend built into this build but the CPU's (the GPU backends, then those registered
/// at run time), with its devices or the reason it has none. What the GPU backends find is kept
/// for the rest of the process and recorded in Auto's cache file (see [`auto`](crate::auto)), so
/// that later processes need not ask the drivers again.
///
/// ```
/// let built = b3accel::backend_status().len();
/// assert!(built <= 2);
/// ```
pub fn backend_status() -> Vec<BackendStatus> {
    let ids: Vec<BackendId> = listed_backends().iter().map(BackendEntry::id).collect();
    list_backends(&ids)
}

/// The backends [`backend_status`] reports: every one built in but the CPU's.
fn listed_backends() -> Vec<BackendEntry> {
    table::backends().into_iter().filter(|e| e.is_built() && e.id() != BackendId::CPU).collect()
}

/// [`backend_status`] of the backends `ids` alone (those built in): each driver listed is kept
/// and recorded, the others are not asked.
fn list_backends(ids: &[BackendId]) -> Vec<BackendStatus> {
    let _one = lock(&ONE_AT_A_TIME);
    let start = std::time::Instant::now();
    let mut out = Vec::new();
    for e in listed_backends().into_iter().filter(|e| ids.contains(&e.id())) {
        out.push(BackendStatus { backend: e.id().into(), devices: e.list() });
    }
    if !out.is_empty() {
        record::note_listing(&out, start.elapsed().as_secs_f64());
    }
    out
}

/// Whether each device of `devices` is there, asking only the drivers of the backends they name
/// (each listed once, and what it lists recorded as [`backend_status`] does): `Ok` for a device
/// the listing has (and for the CPU), else the error [`backend`](crate::backend) gives for a
/// device that is not there (a backend not built in, a runtime missing, no device of that index).
/// Nothing is opened.
///
/// ```
/// use b3accel::Device;
/// let verdicts = b3accel::check_devices(&[Device::Cpu, Device::Wgpu(999)]);
/// assert!(verdicts[0].is_ok());
/// assert!(verdicts[1].is_err());
/// ```
pub fn check_devices(devices: &[Device]) -> Vec<Result<()>> {
    let mut ids: Vec<BackendId> = Vec::new();
    for d in devices.iter().filter(|d| d.index().is_some()) {
        if let Some(id) = d.backend_id().filter(|id| !ids.contains(id)) {
            ids.push(id);
        }
    }
    let statuses = list_backends(&ids);
    devices.iter().map(|&d| verdict(d, &statuses)).collect()
}

/// Whether `device` is among what `statuses` listed, in [`backend`]'s words where it is not.
fn verdict(device: Device, statuses: &[BackendStatus]) -> Result<()> {
    let Some(id) = device.backend_id().filter(|_| device.index().is_some()) else {
        return Ok(());
    };
    let Some(status) = statuses.iter().find(|s| s.backend.id() == id) else {
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

/// The backend that runs `device` (any but `Device::Auto`, which `dispatch::backend` opens), opened
/// on first use and shared for the life of the process (GPU programs are built once per device).
pub(crate) fn backend(device: Device) -> Result<Arc<dyn Backend>> {
    if let Some(b) = ready(device) {
        return Ok(b);
    }
    // Opened outside the lock: a slow driver start must not stall users of other devices. Two
    // threads may race to open the same device; the first one stored wins.
    let id = device.backend_id().ok_or_else(|| Error::InvalidInput("auto is no one device to open".into()))?;
    let entry = table::entry(id).filter(|_| id.device(device.index().unwrap_or(0)) == device);
    let entry = entry.ok_or_else(|| Error::InvalidInput(format!("{device} is no device of the table of backends")))?;
    let opened = entry.open(device)?;
    // A GPU backend as `B3ACCEL_FAULT` may ask it to misbehave (a testing aid).
    let opened = if id.is_gpu() { fault::wrap(device, opened)? } else { opened };
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
/// hung and crashed.
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
/// starting on another thread runs the driver's exit handlers under it, which has crashed
/// NVIDIA's drivers (a device list given a small file, which the CPU hashes before the GPUs
/// are up).
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

/// The devices of `found` with each GPU that a backend earlier in the table lists left out of
/// the later backends' lists (matched by name, as many times as the earlier backend has it): a
/// GPU that OpenCL and wgpu both list is taken once, through OpenCL.
pub(crate) fn one_per_gpu(found: &[DeviceInfo]) -> Vec<Device> {
    one_per_gpu_named(found.iter().map(|d| (d.device, d.name.as_str())))
}

/// [`one_per_gpu`] of devices given with their names.
pub(crate) fn one_per_gpu_named<'a>(found: impl Iterator<Item = (Device, &'a str)>) -> Vec<Device> {
    let found: Vec<(Device, &str)> = found.collect();
    let place = |d: &Device| d.backend_id().map_or(usize::MAX, table::position);
    let mut order: Vec<usize> = (0..found.len()).collect();
    order.sort_by_key(|&i| place(&found[i].0));
    // Each GPU kept, with the later backends that matched one of their devices to it.
    let mut kept: Vec<(&str, usize, Vec<BackendId>)> = Vec::new();
    let mut dropped = vec![false; found.len()];
    for i in order {
        let (device, name) = found[i];
        let Some(id) = device.backend_id().filter(|id| id.is_gpu()) else { continue };
        let p = place(&device);
        match kept.iter_mut().find(|(n, q, matched)| *n == name && *q < p && !matched.contains(&id)) {
            Some((_, _, matched)) => {
                matched.push(id);
                dropped[i] = true;
            }
            None => kept.push((name, p, Vec::new())),
        }
    }
    found.iter().zip(dropped).filter(|(_, d)| !d).map(|((device, _), _)| *device).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::BackendKind;

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
