//! Device identity: naming a device (`Device`, `BackendId`), and what is known of one
//! (`DeviceInfo`, `DeviceKind`, `BackendKind`, and `FeaturePath`: which way an open device goes
//! where an optional feature decides). Which backends there are, reading a device's name from
//! text and opening devices are the dispatch layer's (its table of backends).

use std::fmt;

/// Where hashing runs.
///
/// Parsed from the command line's `--backend` values: `auto`, `cpu`, and `NAME` or `NAME:N` for
/// each other backend of the table of backends (`opencl`, `wgpu`, and any registered with
/// [`register_backend`](crate::register_backend)); an index left out means 0. New backends come
/// as [`Device::Registered`], so a `match` on a device needs a `_` arm; [`is_gpu`](Self::is_gpu),
/// [`backend_id`](Self::backend_id) and [`index`](Self::index) answer without one.
///
/// ```
/// use b3accel::Device;
/// assert_eq!("wgpu:1".parse::<Device>().unwrap(), Device::Wgpu(1));
/// assert_eq!("opencl".parse::<Device>().unwrap(), Device::OpenCl(0));
/// assert_eq!(Device::Cpu.to_string(), "cpu");
/// assert!("tpu".parse::<Device>().is_err());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
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
    /// The N-th device of a backend registered at run time (see
    /// [`register_backend`](crate::register_backend)).
    Registered(BackendId, usize),
}

impl Device {
    /// The backend's name as the command line spells it: `auto`, `cpu`, `opencl`, `wgpu`, or a
    /// registered backend's name.
    ///
    /// ```
    /// assert_eq!(b3accel::Device::OpenCl(2).backend_name(), "opencl");
    /// ```
    pub fn backend_name(&self) -> &'static str {
        self.backend_id().map_or("auto", BackendId::name)
    }

    /// The backend that runs this device; `None` for [`Device::Auto`], which is no one backend.
    ///
    /// ```
    /// use b3accel::Device;
    /// assert_eq!(Device::Wgpu(3).backend_id().unwrap().name(), "wgpu");
    /// assert_eq!(Device::Auto.backend_id(), None);
    /// ```
    pub fn backend_id(&self) -> Option<BackendId> {
        match self {
            Device::Auto => None,
            Device::Cpu => Some(BackendId::CPU),
            Device::OpenCl(_) => Some(BackendId::OPENCL),
            Device::Wgpu(_) => Some(BackendId::WGPU),
            Device::Registered(id, _) => Some(*id),
        }
    }

    /// The device's index among its backend's devices (`N` of `wgpu:N`); `None` for `auto` and
    /// `cpu`, which have none.
    ///
    /// ```
    /// use b3accel::Device;
    /// assert_eq!(Device::OpenCl(2).index(), Some(2));
    /// assert_eq!(Device::Cpu.index(), None);
    /// ```
    pub fn index(&self) -> Option<usize> {
        match self {
            Device::Auto | Device::Cpu => None,
            Device::OpenCl(i) | Device::Wgpu(i) | Device::Registered(_, i) => Some(*i),
        }
    }

    /// True for a device of a GPU backend (OpenCL, wgpu, or a registered backend of GPUs),
    /// whether the device is hardware or a software GPU ([`DeviceInfo::is_software_gpu`]).
    ///
    /// ```
    /// use b3accel::Device;
    /// assert!(Device::Wgpu(0).is_gpu());
    /// assert!(!Device::Cpu.is_gpu() && !Device::Auto.is_gpu());
    /// ```
    pub fn is_gpu(&self) -> bool {
        self.backend_id().is_some_and(BackendId::is_gpu)
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index() {
            Some(i) => write!(f, "{}:{i}", self.backend_name()),
            None => f.write_str(self.backend_name()),
        }
    }
}

/// A backend of the table of backends, by name: what [`Device::backend_id`] and
/// [`register_backend`](crate::register_backend) give. Two ids are equal when they name the same
/// backend. The built-in backends' ids are those of `cpu`, `opencl` and `wgpu`; only the table
/// makes others, so an id always names a backend it has.
///
/// ```
/// let id = b3accel::Device::Cpu.backend_id().unwrap();
/// assert_eq!((id.name(), id.is_gpu()), ("cpu", false));
/// assert_eq!(id.device(0), b3accel::Device::Cpu);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BackendId {
    name: &'static str,
    gpu: bool,
}

impl BackendId {
    pub(crate) const CPU: BackendId = BackendId::new("cpu", false);
    pub(crate) const OPENCL: BackendId = BackendId::new("opencl", true);
    pub(crate) const WGPU: BackendId = BackendId::new("wgpu", true);

    /// The id of a table row; only the table calls it (names are unique there).
    pub(crate) const fn new(name: &'static str, gpu: bool) -> BackendId {
        BackendId { name, gpu }
    }

    /// The backend's name, as `--backend` and [`Device`]'s text spell it.
    ///
    /// ```
    /// assert_eq!(b3accel::Device::OpenCl(0).backend_id().unwrap().name(), "opencl");
    /// ```
    pub fn name(self) -> &'static str {
        self.name
    }

    /// True for a backend of GPUs (its devices may join device lists, Auto may measure them,
    /// `B3ACCEL_FAULT` may make them fail), false for one of CPUs.
    ///
    /// ```
    /// assert!(b3accel::Device::Wgpu(0).backend_id().unwrap().is_gpu());
    /// ```
    pub fn is_gpu(self) -> bool {
        self.gpu
    }

    /// The backend's device of index `index` (the CPU backend has one device; its index is
    /// ignored).
    ///
    /// ```
    /// let wgpu = b3accel::Device::Wgpu(0).backend_id().unwrap();
    /// assert_eq!(wgpu.device(2), b3accel::Device::Wgpu(2));
    /// ```
    pub fn device(self, index: usize) -> Device {
        match self {
            BackendId::CPU => Device::Cpu,
            BackendId::OPENCL => Device::OpenCl(index),
            BackendId::WGPU => Device::Wgpu(index),
            _ => Device::Registered(self, index),
        }
    }
}

impl fmt::Display for BackendId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// Which implementation a device runs on.
///
/// ```
/// let cpu = &b3accel::devices()[0];
/// assert_eq!(cpu.backend, b3accel::BackendKind::Cpu);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BackendKind {
    /// The rayon + SIMD CPU backend.
    Cpu,
    /// OpenCL C kernels through the `ocl` crate.
    OpenCl,
    /// WGSL compute shaders through `wgpu`.
    Wgpu,
    /// A backend registered at run time (see [`register_backend`](crate::register_backend)).
    Registered(BackendId),
}

impl BackendKind {
    /// The backend's id in the table of backends.
    ///
    /// ```
    /// use b3accel::BackendKind;
    /// assert_eq!(BackendKind::Wgpu.id().name(), "wgpu");
    /// assert_eq!(BackendKind::from(BackendKind::OpenCl.id()), BackendKind::OpenCl);
    /// ```
    pub fn id(self) -> BackendId {
        match self {
            BackendKind::Cpu => BackendId::CPU,
            BackendKind::OpenCl => BackendId::OPENCL,
            BackendKind::Wgpu => BackendId::WGPU,
            BackendKind::Registered(id) => id,
        }
    }
}

impl From<BackendId> for BackendKind {
    fn from(id: BackendId) -> BackendKind {
        match id {
            BackendId::CPU => BackendKind::Cpu,
            BackendId::OPENCL => BackendKind::OpenCl,
            BackendId::WGPU => BackendKind::Wgpu,
            _ => BackendKind::Registered(id),
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id().name)
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
        self.backend.id().is_gpu() && self.kind == DeviceKind::Cpu
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
