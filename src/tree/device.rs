//! Device identity: naming a device (`Device`), and what is known of one (`DeviceInfo`,
//! `DeviceKind`, `BackendKind`, and `FeaturePath`: which way an open device goes where an
//! optional feature decides). Reading a device's name from text is `device_name.rs`'s job (its
//! errors name devices too); opening them is the dispatch layer's.

use std::fmt;

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

/// Which way an open device goes where an optional feature of its driver decides: one line of
/// `b3accel devices -v`, from [`Backend::feature_paths`](crate::Backend::feature_paths). A device
/// without the feature still hashes, by the other path.
///
/// ```
/// use b3accel::FeaturePath;
/// let p = FeaturePath {
///     feature: "timestamps",
///     available: false,
///     used: false,
///     path: "the wall clock times each phase".into(),
/// };
/// assert_eq!(p.to_string(), "timestamps: no (the wall clock times each phase)");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeaturePath {
    /// The feature, as `b3accel devices -v` names it (`timestamps`, `subgroups`, ...).
    pub feature: &'static str,
    /// The device's driver offers it.
    pub available: bool,
    /// b3accel uses it on this device.
    pub used: bool,
    /// The path taken, in words.
    pub path: String,
}

impl fmt::Display for FeaturePath {
    /// `feature: yes (path)` or `feature: no (path)`, after whether the device offers it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} ({})", self.feature, if self.available { "yes" } else { "no" }, self.path)
    }
}
