//! The table of backends: for each backend its name, whether its devices are GPUs, the cargo
//! feature that builds it, and how to list and open its devices. The registry, Auto, the fault
//! knob, device names (`"wgpu:1".parse::<Device>()`) and the command line read the backends from
//! here; a backend added in this file, or registered at run time with [`register_backend`], is
//! listed, named, opened and measured like the built-in ones.

use crate::backends::cpu::CpuBackend;
#[cfg(feature = "opencl")]
use crate::backends::opencl;
#[cfg(feature = "wgpu")]
use crate::backends::wgpu;
use crate::tree::{Backend, BackendId, BackendKind, Device, DeviceInfo, Error, Result};
use std::str::FromStr;
use std::sync::{Arc, RwLock};

/// Lists a backend's devices; given the backend's id, to name them ([`BackendId::device`]).
pub type ListFn = fn(BackendId) -> Result<Vec<DeviceInfo>>;

/// Opens a backend's device of an index, as [`ListFn`] listed it; given the backend's id.
pub type OpenFn = fn(BackendId, usize) -> Result<Arc<dyn Backend>>;

/// One line of the table of backends: a backend's name, whether its devices are GPUs, and how to
/// list and open them ([`BackendEntry::gpu`], [`BackendEntry::cpu`]), or the cargo feature that
/// would build it where this build leaves it out.
///
/// ```
/// let names: Vec<&str> = b3accel::backends().iter().map(|b| b.name()).collect();
/// assert_eq!(names[..3], ["cpu", "opencl", "wgpu"]);
/// assert!(b3accel::backends()[0].is_built());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct BackendEntry {
    id: BackendId,
    /// The cargo feature that builds a built-in backend, for "rebuild with" messages.
    feature: Option<&'static str>,
    /// How to list and open its devices; `None` where this build leaves the backend out.
    ops: Option<(ListFn, OpenFn)>,
}

impl BackendEntry {
    /// A backend of GPUs named `name`, whose devices `list` lists and `open` opens: they may join
    /// device lists (`--backend all`, [`spread`](crate::spread)), `Device::Auto` measures those
    /// that are not software GPUs, and `B3ACCEL_FAULT` may make them fail. Register it with
    /// [`register_backend`].
    ///
    /// ```
    /// use b3accel::{BackendEntry, BackendId, Device, DeviceInfo};
    /// fn list(id: BackendId) -> b3accel::Result<Vec<DeviceInfo>> {
    ///     let mut cpu = b3accel::devices()[0].clone();
    ///     cpu.device = id.device(0);
    ///     cpu.backend = id.into();
    ///     Ok(vec![cpu])
    /// }
    /// fn open(_: BackendId, _: usize) -> b3accel::Result<std::sync::Arc<dyn b3accel::Backend>> {
    ///     b3accel::backend(Device::Cpu)
    /// }
    /// let entry = BackendEntry::gpu("doc-gpu", list, open);
    /// assert_eq!(entry.name(), "doc-gpu");
    /// ```
    pub fn gpu(name: &'static str, list: ListFn, open: OpenFn) -> BackendEntry {
        BackendEntry { id: BackendId::new(name, true), feature: None, ops: Some((list, open)) }
    }

    /// A backend of CPUs named `name` (see [`gpu`](Self::gpu)): its devices are hashed on when
    /// named, and never join a device list or Auto's choice by themselves.
    ///
    /// ```
    /// # fn list(_: b3accel::BackendId) -> b3accel::Result<Vec<b3accel::DeviceInfo>> { Ok(vec![]) }
    /// # fn open(_: b3accel::BackendId, _: usize) -> b3accel::Result<std::sync::Arc<dyn b3accel::Backend>> {
    /// #     b3accel::backend(b3accel::Device::Cpu)
    /// # }
    /// assert!(!b3accel::BackendEntry::cpu("doc-cpu", list, open).is_gpu());
    /// ```
    pub fn cpu(name: &'static str, list: ListFn, open: OpenFn) -> BackendEntry {
        BackendEntry { id: BackendId::new(name, false), feature: None, ops: Some((list, open)) }
    }

    /// A built-in backend's line: `ops` where its cargo feature `feature` is on.
    const fn built_in(id: BackendId, feature: Option<&'static str>, ops: Option<(ListFn, OpenFn)>) -> BackendEntry {
        BackendEntry { id, feature, ops }
    }

    /// The backend's name, as `--backend` spells it.
    ///
    /// ```
    /// assert_eq!(b3accel::backends()[0].name(), "cpu");
    /// ```
    pub fn name(&self) -> &'static str {
        self.id.name()
    }

    /// The backend's id, as its devices carry it ([`Device::backend_id`]).
    ///
    /// ```
    /// assert_eq!(b3accel::backends()[0].id(), b3accel::Device::Cpu.backend_id().unwrap());
    /// ```
    pub fn id(&self) -> BackendId {
        self.id
    }

    /// True for a backend of GPUs.
    ///
    /// ```
    /// assert!(!b3accel::backends()[0].is_gpu());
    /// ```
    pub fn is_gpu(&self) -> bool {
        self.id.is_gpu()
    }

    /// True where this build has the backend (a built-in one whose cargo feature is on, or one
    /// registered).
    ///
    /// ```
    /// let wgpu = b3accel::backends().into_iter().find(|b| b.name() == "wgpu").unwrap();
    /// assert_eq!(wgpu.is_built(), cfg!(feature = "wgpu"));
    /// ```
    pub fn is_built(&self) -> bool {
        self.ops.is_some()
    }

    /// The cargo feature that builds a built-in backend (`opencl`, `wgpu`); `None` for the CPU
    /// backend and for registered ones.
    ///
    /// ```
    /// let names: Vec<_> = b3accel::backends().iter().map(|b| b.feature()).collect();
    /// assert_eq!(names[..3], [None, Some("opencl"), Some("wgpu")]);
    /// ```
    pub fn feature(&self) -> Option<&'static str> {
        self.feature
    }

    /// Its devices, or why it has none: not built in, or what its listing says.
    pub(crate) fn list(&self) -> Result<Vec<DeviceInfo>> {
        match self.ops {
            Some((list, _)) => list(self.id),
            None => Err(self.not_built(self.id.device(0))),
        }
    }

    /// Its device `device` (one of its own), opened.
    pub(crate) fn open(&self, device: Device) -> Result<Arc<dyn Backend>> {
        match self.ops {
            Some((_, open)) => open(self.id, device.index().unwrap_or(0)),
            None => Err(self.not_built(device)),
        }
    }

    fn not_built(&self, device: Device) -> Error {
        match self.feature {
            Some(feature) => Error::NotBuilt { device, feature },
            None => Error::InvalidInput(format!("the backend {} is not built into this binary", self.name())),
        }
    }
}

/// One backend's enumeration result, as [`backend_status`](crate::backend_status) reports it.
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

fn list_cpu(_: BackendId) -> Result<Vec<DeviceInfo>> {
    Ok(vec![CpuBackend::new().info().clone()])
}

fn open_cpu(_: BackendId, _: usize) -> Result<Arc<dyn Backend>> {
    Ok(Arc::new(CpuBackend::new()))
}

#[cfg(feature = "opencl")]
const OPENCL: Option<(ListFn, OpenFn)> =
    Some((|_| opencl::enumerate(), |_, i| Ok(Arc::new(opencl::OpenClBackend::open(i)?))));
#[cfg(not(feature = "opencl"))]
const OPENCL: Option<(ListFn, OpenFn)> = None;

#[cfg(feature = "wgpu")]
const WGPU: Option<(ListFn, OpenFn)> = Some((|_| wgpu::enumerate(), |_, i| Ok(Arc::new(wgpu::WgpuBackend::open(i)?))));
#[cfg(not(feature = "wgpu"))]
const WGPU: Option<(ListFn, OpenFn)> = None;

/// The backends this crate has, in the order devices are listed: the CPU first, then the GPU
/// backends. Where two GPU backends list the same GPU, device lists take it from the earlier one
/// (OpenCL before wgpu: see `registry::one_per_gpu`).
const BUILT_IN: [BackendEntry; 3] = [
    BackendEntry::built_in(BackendId::CPU, None, Some((list_cpu, open_cpu))),
    BackendEntry::built_in(BackendId::OPENCL, Some("opencl"), OPENCL),
    BackendEntry::built_in(BackendId::WGPU, Some("wgpu"), WGPU),
];

/// Backends registered at run time, after the built-in ones, in the order registered.
static REGISTERED: RwLock<Vec<BackendEntry>> = RwLock::new(Vec::new());

fn registered() -> std::sync::RwLockReadGuard<'static, Vec<BackendEntry>> {
    REGISTERED.read().unwrap_or_else(|p| p.into_inner())
}

/// The table of backends: the built-in ones (`cpu`, `opencl`, `wgpu`; those not built in say so,
/// [`BackendEntry::is_built`]), then those registered with [`register_backend`].
///
/// ```
/// for b in b3accel::backends() {
///     println!("{:8} {} {}", b.name(), if b.is_gpu() { "gpu" } else { "cpu" }, b.is_built());
/// }
/// ```
pub fn backends() -> Vec<BackendEntry> {
    BUILT_IN.iter().copied().chain(registered().iter().copied()).collect()
}

/// The line of backend `id`, if the table has it.
pub(crate) fn entry(id: BackendId) -> Option<BackendEntry> {
    match BUILT_IN.iter().find(|e| e.id == id) {
        Some(e) => Some(*e),
        None => registered().iter().find(|e| e.id == id).copied(),
    }
}

/// The line of the backend named `name` (lower case), if the table has one.
fn find(name: &str) -> Option<BackendEntry> {
    match BUILT_IN.iter().find(|e| e.name() == name) {
        Some(e) => Some(*e),
        None => registered().iter().find(|e| e.name() == name).copied(),
    }
}

/// Where backend `id` stands in the table (earlier lines list their devices first).
pub(crate) fn position(id: BackendId) -> usize {
    backends().iter().position(|e| e.id == id).unwrap_or(usize::MAX)
}

/// Adds a backend to the table for the rest of the process, after those there: from then on
/// [`devices`](crate::devices) and [`backend_status`](crate::backend_status) list its devices,
/// `"NAME:N".parse::<Device>()` names them, and [`backend`](crate::backend), `hash_on` and device
/// lists open them. Its name is lower-case ASCII letters, digits, `-` and `_`, starting with a
/// letter, at most 32 bytes, and not one the table has or `auto`/`all`; anything else is an
/// [`Error::InvalidInput`] that says why.
///
/// ```
/// use b3accel::{BackendEntry, BackendId, Device, DeviceInfo};
/// use std::sync::Arc;
///
/// // A "backend" that hashes on the CPU backend, under a name of its own.
/// fn list(id: BackendId) -> b3accel::Result<Vec<DeviceInfo>> {
///     let mut info = b3accel::devices()[0].clone();
///     info.device = id.device(0);
///     info.backend = id.into();
///     Ok(vec![info])
/// }
/// fn open(_: BackendId, index: usize) -> b3accel::Result<Arc<dyn b3accel::Backend>> {
///     match index {
///         0 => b3accel::backend(Device::Cpu),
///         _ => Err(b3accel::Error::InvalidInput(format!("no device {index}"))),
///     }
/// }
///
/// let id = b3accel::register_backend(BackendEntry::cpu("example", list, open))?;
/// let device: Device = "example:0".parse()?;
/// assert_eq!(device, id.device(0));
/// assert_eq!(b3accel::hash_on(device, b"abc")?, blake3::hash(b"abc"));
/// assert!(b3accel::register_backend(BackendEntry::cpu("example", list, open)).is_err());
/// # Ok::<(), b3accel::Error>(())
/// ```
pub fn register_backend(entry: BackendEntry) -> Result<BackendId> {
    let name = entry.name();
    let bad = |why: &str| Err(Error::InvalidInput(format!("cannot register the backend '{name}': {why}")));
    let well_formed = name.len() <= 32
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if !well_formed {
        return bad("a name is 1 to 32 lower-case letters, digits, '-' or '_', starting with a letter");
    }
    if name == "auto" || name == "all" {
        return bad("the command line gives that word a meaning of its own");
    }
    let mut table = REGISTERED.write().unwrap_or_else(|p| p.into_inner());
    if BUILT_IN.iter().chain(table.iter()).any(|e| e.name() == name) {
        return bad("the table has a backend of that name");
    }
    table.push(entry);
    Ok(entry.id)
}

/// Every form of device name the table takes, in its order: `auto`, `cpu`, then `NAME[:N]` for
/// every other backend (built in or not): what `--backend`'s messages list.
///
/// ```
/// assert_eq!(b3accel::device_names()[..4], ["auto", "cpu", "opencl[:N]", "wgpu[:N]"]);
/// ```
pub fn device_names() -> Vec<String> {
    let mut names = vec!["auto".to_string()];
    names.extend(backends().iter().map(|e| match e.id {
        BackendId::CPU => e.name().to_string(),
        _ => format!("{}[:N]", e.name()),
    }));
    names
}

/// Device names read from text: `auto`, `cpu`, `NAME` or `NAME:N` for the table's other backends
/// (an index left out means 0); anything else is an error that lists the names taken.
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
        let found = match (name, index) {
            ("auto", None) => return Ok(Device::Auto),
            (_, None) => find(name),
            (_, Some(_)) => find(name).filter(|e| e.id != BackendId::CPU),
        };
        match found {
            Some(e) => Ok(e.id.device(index.unwrap_or(0))),
            None => {
                let mut names = device_names();
                let last = names.pop().unwrap_or_default();
                Err(Error::InvalidInput(format!("invalid device '{s}': expected {} or {last}", names.join(", "))))
            }
        }
    }
}
