//! Devices: naming them (`Device`), listing them (`devices()`), and opening each one's backend
//! once per process.

use crate::backend::Backend;
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex, OnceLock};

/// Where hashing runs.
///
/// Parsed from the command line's `--backend` values: `auto`, `cpu`, `opencl`, `opencl:N`, `wgpu`,
/// `wgpu:N` (an index without a number means 0).
///
/// ```
/// use b3accel::Device;
/// assert_eq!("wgpu:1".parse::<Device>().unwrap(), Device::Wgpu(1));
/// assert_eq!("opencl".parse::<Device>().unwrap(), Device::OpenCl(0));
/// assert_eq!(Device::Cpu.to_string(), "cpu");
/// assert!("tpu".parse::<Device>().is_err());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Device {
    /// The best device for the job. It never fails: where nothing better is known, the CPU.
    #[default]
    Auto,
    /// The CPU backend: SIMD across chunks, rayon across cores.
    Cpu,
    /// The N-th OpenCL device, counting every platform's devices in order (cargo feature `opencl`).
    OpenCl(usize),
    /// The N-th wgpu adapter, in the order `devices()` lists them (cargo feature `wgpu`).
    Wgpu(usize),
}

impl Device {
    /// The backend's name as the command line spells it: `auto`, `cpu`, `opencl` or `wgpu`.
    ///
    /// ```
    /// assert_eq!(b3accel::Device::OpenCl(2).backend_name(), "opencl");
    /// ```
    pub fn backend_name(&self) -> &'static str {
        match self {
            Device::Auto => "auto",
            Device::Cpu => "cpu",
            Device::OpenCl(_) => "opencl",
            Device::Wgpu(_) => "wgpu",
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Auto | Device::Cpu => f.write_str(self.backend_name()),
            Device::OpenCl(i) | Device::Wgpu(i) => write!(f, "{}:{i}", self.backend_name()),
        }
    }
}

impl FromStr for Device {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let lower = s.trim().to_ascii_lowercase();
        let (name, index) = match lower.split_once(':') {
            Some((name, idx)) => {
                let i = idx
                    .parse::<usize>()
                    .map_err(|_| Error::InvalidInput(format!("invalid device '{s}': '{idx}' is not a device index")))?;
                (name, Some(i))
            }
            None => (lower.as_str(), None),
        };
        match (name, index) {
            ("auto", None) => Ok(Device::Auto),
            ("cpu", None) => Ok(Device::Cpu),
            ("opencl", i) => Ok(Device::OpenCl(i.unwrap_or(0))),
            ("wgpu", i) => Ok(Device::Wgpu(i.unwrap_or(0))),
            _ => Err(Error::InvalidInput(format!("invalid device '{s}': expected auto, cpu, opencl[:N] or wgpu[:N]"))),
        }
    }
}

/// Which implementation a device runs on.
///
/// ```
/// let cpu = &b3accel::devices()[0];
/// assert_eq!(cpu.backend, b3accel::BackendKind::Cpu);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// The rayon + SIMD CPU backend.
    Cpu,
    /// OpenCL C kernels through the `ocl` crate.
    OpenCl,
    /// WGSL compute shaders through `wgpu`.
    Wgpu,
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendKind::Cpu => "cpu",
            BackendKind::OpenCl => "opencl",
            BackendKind::Wgpu => "wgpu",
        })
    }
}

/// What kind of hardware a device is.
///
/// ```
/// use b3accel::DeviceKind;
/// assert_eq!(b3accel::devices()[0].kind, DeviceKind::Cpu);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    /// A CPU: the CPU backend, or a GPU API implemented in software on the CPU (PoCL, llvmpipe, lavapipe).
    Cpu,
    /// A GPU with its own memory.
    DiscreteGpu,
    /// A GPU sharing the CPU's memory.
    IntegratedGpu,
    /// A virtualised GPU.
    VirtualGpu,
    /// Anything else the driver reports (accelerators, unknown types).
    Other,
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeviceKind::Cpu => "cpu",
            DeviceKind::DiscreteGpu => "discrete-gpu",
            DeviceKind::IntegratedGpu => "integrated-gpu",
            DeviceKind::VirtualGpu => "virtual-gpu",
            DeviceKind::Other => "other",
        })
    }
}

/// A device this machine has, as `devices()` lists it.
///
/// ```
/// for d in b3accel::devices() {
///     println!("{:10} {:8} {} ({})", d.device.to_string(), d.kind.to_string(), d.name, d.api);
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// How to ask for this device.
    pub device: Device,
    /// The backend that drives it.
    pub backend: BackendKind,
    /// The hardware kind.
    pub kind: DeviceKind,
    /// The device's name as its driver reports it.
    pub name: String,
    /// The API or instruction set in use (for example `AVX2`, `Vulkan`, `GL`, `OpenCL 3.0 PoCL`).
    pub api: String,
    /// The driver and its version, where known.
    pub driver: String,
    /// Memory the device can use, in bytes, where known.
    pub memory_bytes: Option<u64>,
    /// Compute units (CPU threads, GPU multiprocessors), where known.
    pub compute_units: Option<u32>,
}

impl DeviceInfo {
    /// True for a GPU API running in software on the CPU (PoCL, llvmpipe, lavapipe): such a device
    /// works when asked for, and `Device::Auto` never picks it.
    ///
    /// ```
    /// assert!(!b3accel::devices()[0].is_software_gpu()); // the CPU backend is not a GPU at all
    /// ```
    pub fn is_software_gpu(&self) -> bool {
        self.backend != BackendKind::Cpu && self.kind == DeviceKind::Cpu
    }
}

/// Every device this machine has: the CPU first, then each OpenCL device and each wgpu adapter
/// (for the backends compiled in). A backend whose runtime is missing contributes no devices;
/// [`backend_status`] says why.
///
/// ```
/// let all = b3accel::devices();
/// assert_eq!(all[0].device, b3accel::Device::Cpu);
/// ```
pub fn devices() -> Vec<DeviceInfo> {
    let mut all = vec![crate::cpu::CpuBackend::new().info().clone()];
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

/// Each GPU backend compiled into this build, with its devices or the reason it has none.
///
/// ```
/// let built = b3accel::backend_status().len();
/// assert!(built <= 2);
/// ```
#[allow(clippy::vec_init_then_push)] // one push per backend compiled in
pub fn backend_status() -> Vec<BackendStatus> {
    #[allow(unused_mut)]
    let mut out = Vec::new();
    #[cfg(feature = "opencl")]
    out.push(BackendStatus { backend: BackendKind::OpenCl, devices: crate::opencl::enumerate() });
    #[cfg(feature = "wgpu")]
    out.push(BackendStatus { backend: BackendKind::Wgpu, devices: crate::wgpu::enumerate() });
    out
}

/// The backend that runs `device`, opened on first use and shared for the life of the process
/// (GPU programs are built once per device).
///
/// ```
/// let cpu = b3accel::backend(b3accel::Device::Cpu).unwrap();
/// assert_eq!(cpu.info().device, b3accel::Device::Cpu);
/// ```
pub fn backend(device: Device) -> Result<Arc<dyn Backend>> {
    if device == Device::Cpu {
        return Ok(cpu_backend().clone());
    }
    static OPEN: OnceLock<Mutex<HashMap<Device, Arc<dyn Backend>>>> = OnceLock::new();
    let open = OPEN.get_or_init(Default::default);
    if let Some(b) = open.lock().unwrap_or_else(|p| p.into_inner()).get(&device) {
        return Ok(b.clone());
    }
    // Opened outside the lock: a slow driver start must not stall users of other devices. Two
    // threads may race to open the same device; the first one stored wins.
    let opened: Arc<dyn Backend> = match device {
        Device::Auto => Arc::new(crate::auto::AutoBackend::new()),
        Device::Cpu => cpu_backend().clone(),
        Device::OpenCl(i) => open_opencl(device, i)?,
        Device::Wgpu(i) => open_wgpu(device, i)?,
    };
    let mut map = open.lock().unwrap_or_else(|p| p.into_inner());
    Ok(map.entry(device).or_insert(opened).clone())
}

/// The CPU backend, opened once and found without a lock or a map: every `hash_on(Device::Cpu, ..)`
/// of more than a chunk passes here, from however many threads.
pub(crate) fn cpu_backend() -> &'static Arc<dyn Backend> {
    static CPU: OnceLock<Arc<dyn Backend>> = OnceLock::new();
    CPU.get_or_init(|| Arc::new(crate::cpu::CpuBackend::new()))
}

/// The backend behind `Device::Auto`, which always opens.
pub(crate) fn auto_backend() -> Arc<dyn Backend> {
    backend(Device::Auto).unwrap_or_else(|_| Arc::new(crate::auto::AutoBackend::new()))
}

#[cfg(feature = "opencl")]
fn open_opencl(_device: Device, index: usize) -> Result<Arc<dyn Backend>> {
    Ok(Arc::new(crate::opencl::OpenClBackend::open(index)?))
}

#[cfg(not(feature = "opencl"))]
fn open_opencl(device: Device, _index: usize) -> Result<Arc<dyn Backend>> {
    Err(Error::NotBuilt { device, feature: "opencl" })
}

#[cfg(feature = "wgpu")]
fn open_wgpu(_device: Device, index: usize) -> Result<Arc<dyn Backend>> {
    Ok(Arc::new(crate::wgpu::WgpuBackend::open(index)?))
}

#[cfg(not(feature = "wgpu"))]
fn open_wgpu(device: Device, _index: usize) -> Result<Arc<dyn Backend>> {
    Err(Error::NotBuilt { device, feature: "wgpu" })
}
