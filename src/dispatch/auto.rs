//! `Device::Auto`: the device that is fastest end to end for data of a given size in host
//! memory, chosen from measurements.
//!
//! Rules, in order:
//! 1. Inputs under [`GPU_MIN_BYTES`] always go to the CPU: a GPU's dispatch and transfer latency
//!    alone costs more than hashing them on the CPU.
//! 2. Only hardware GPUs are candidates; a software GPU (PoCL, llvmpipe, lavapipe) never is. On a
//!    machine without one, Auto *is* the CPU backend, at no cost.
//! 3. Otherwise a short calibration measures the CPU and each hardware GPU (each physical GPU
//!    once, through OpenCL where both APIs list it, as `--backend all` takes them) at a few sizes
//!    (host memory to hash, end to end); for each call Auto picks the device with the best
//!    interpolated throughput at that call's size.
//!
//! The calibration, and the record of every GPU device the drivers listed (so that later
//! processes need not even list devices), are cached in a small JSON file: `$B3ACCEL_CALIBRATION`
//! if set, else `calibration-<backends>.json` (named by the backends built in, such as
//! `calibration-wgpu.json`, so that two builds on one machine do not take turns overwriting one
//! file and calibrating in every process) in the crate's cache directory (`$B3ACCEL_CACHE_DIR`,
//! else `$XDG_CACHE_HOME/b3accel` or `~/.cache/b3accel` on Linux, `~/Library/Caches/b3accel` on
//! macOS, `%LOCALAPPDATA%\b3accel` on Windows); with `B3ACCEL_CACHE=off` nothing is read or
//! written and each process lists and calibrates.
//!
//! Every listing records what it found there, backend by backend ([`backend_status`],
//! [`check_devices`]: listing the drivers takes a few hundred milliseconds on a machine with GPU
//! drivers), and the calibration is added once measured (on first use or by `b3accel bench
//! --calibrate`); on a machine without a hardware GPU the record is the whole calibration. A
//! listing that finds other devices than the record replaces it and drops the calibration; delete
//! the file after changing hardware or drivers. A cache made by another version of this crate or
//! on another CPU is ignored and replaced; a file that is not one of the crate's own is neither
//! trusted nor replaced. Writers take turns and write a temporary file that they rename, so
//! processes that list or calibrate at once leave one whole file, never a mixture.
//!
//! [`backend_status`]: crate::backend_status
//!
//! A GPU call that fails under Auto (out of memory, a lost device) is run again on the CPU, and
//! that GPU is not chosen again in this process ([`failed_devices`] lists it).
//!
//! Data that already lies in a device buffer is hashed on that device (the backends'
//! `hash_buffer` entry points): copying it back to the host is never faster.

use super::registry::{backend, cpu_backend, one_per_gpu_named, BackendStatus};
use crate::backends::cpu::CpuBackend;
use crate::backends::stderr;
use crate::core::cache;
use crate::core::compress::Cv;
use crate::core::constants::CHUNK_LEN;
use crate::tree::{hash_all, Backend, BackendKind, Device, DeviceInfo, Domain, Error, Result};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// Inputs smaller than this never go to a GPU.
pub const GPU_MIN_BYTES: u64 = 4 << 20;

/// The sizes the calibration measures.
const CALIBRATION_SIZES: [u64; 4] = [4 << 20, 32 << 20, 128 << 20, 512 << 20];

/// The environment variable naming the calibration cache file.
pub const CALIBRATION_ENV: &str = "B3ACCEL_CALIBRATION";

/// What `Device::Auto` chose for one input, and why.
///
/// ```
/// let c = b3accel::auto::choose(64);
/// assert_eq!(c.device, b3accel::Device::Cpu);
/// println!("{}", c.reason);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// The device that hashes the input.
    pub device: Device,
    /// Why, in a sentence a user can read (`b3accel -v` prints it).
    pub reason: String,
}

/// One device's measured throughput, in bytes per second, at each calibration size.
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    /// The device measured.
    pub device: Device,
    /// Its name, as the driver reports it.
    pub name: String,
    /// `(size in bytes, bytes per second)`, by increasing size.
    pub points: Vec<(u64, f64)>,
    /// How long the device took to open (driver start, programs built or loaded), in seconds;
    /// zero for the CPU. Device lists weigh it before they open a GPU for one input.
    pub open_seconds: f64,
}

impl Curve {
    /// Throughput at `size`, interpolated linearly in log(size) between measured points and
    /// held flat beyond them.
    fn at(&self, size: u64) -> f64 {
        let p = &self.points;
        match p.iter().position(|&(s, _)| s >= size) {
            None => p.last().map_or(0.0, |x| x.1),
            Some(0) => p[0].1,
            Some(i) => {
                let ((s0, t0), (s1, t1)) = (p[i - 1], p[i]);
                let f = ((size as f64).ln() - (s0 as f64).ln()) / ((s1 as f64).ln() - (s0 as f64).ln());
                t0 + f * (t1 - t0)
            }
        }
    }
}

/// What Auto knows about this machine: the CPU's curve and one per hardware GPU (none where the
/// machine has no hardware GPU).
#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    /// The CPU backend's curve (empty when there is no GPU to compare it with).
    pub cpu: Curve,
    /// One curve per hardware GPU.
    pub gpus: Vec<Curve>,
    /// Every GPU device the drivers listed, software ones included: a device list that names
    /// only these need not ask the drivers again.
    pub found: Vec<Device>,
    /// Where this calibration came from: measured now, or the cache file's path.
    pub source: String,
}

/// The calibration in force in this process: loaded from the cache, or measured (and cached) on
/// first use.
///
/// ```no_run
/// let cal = b3accel::auto::calibration();
/// for gpu in &cal.gpus {
///     println!("{}: {:?}", gpu.name, gpu.points);
/// }
/// ```
pub fn calibration() -> &'static Calibration {
    CALIBRATION.get_or_init(|| cached().cloned().unwrap_or_else(|| measure_and_store(false)))
}

/// The calibration in force, once [`calibration`] has made or loaded it.
static CALIBRATION: OnceLock<Calibration> = OnceLock::new();

/// The calibration in force if there is one already, else the one the cache file holds as this
/// process first read it (or, where the file records every backend's devices and no hardware GPU,
/// the calibration of a machine with nothing to measure): the file is read and parsed once per
/// process, however many lists, `--backend all` and Auto ask (never measured here).
fn cached() -> Option<&'static Calibration> {
    static FROM_FILE: OnceLock<Option<Calibration>> = OnceLock::new();
    CALIBRATION.get().or_else(|| FROM_FILE.get_or_init(|| stored().and_then(Known::calibration)).as_ref())
}

/// A GPU device a driver listed, as the cache file records it.
#[derive(Clone, Debug, PartialEq)]
struct Listed {
    device: Device,
    name: String,
    /// Not a software GPU (PoCL, llvmpipe, lavapipe): one Auto may choose.
    hardware: bool,
}

impl Listed {
    fn of(d: &DeviceInfo) -> Listed {
        Listed { device: d.device, name: d.name.clone(), hardware: !d.is_software_gpu() }
    }
}

/// What is known of this machine without asking a driver: each GPU backend's devices where that
/// backend has been listed (none listed where its runtime is missing), and the curves once
/// measured.
#[derive(Clone, Debug, Default, PartialEq)]
struct Known {
    opencl: Option<Vec<Listed>>,
    wgpu: Option<Vec<Listed>>,
    /// The CPU's curve and each hardware GPU's.
    measured: Option<(Curve, Vec<Curve>)>,
    /// The file it was read from, for the calibration's `source`.
    path: Option<PathBuf>,
}

impl Known {
    fn slot(&mut self, kind: BackendKind) -> Option<&mut Option<Vec<Listed>>> {
        match kind {
            BackendKind::OpenCl => Some(&mut self.opencl),
            BackendKind::Wgpu => Some(&mut self.wgpu),
            BackendKind::Cpu => None,
        }
    }

    fn get(&self, kind: BackendKind) -> Option<&Vec<Listed>> {
        match kind {
            BackendKind::OpenCl => self.opencl.as_ref(),
            BackendKind::Wgpu => self.wgpu.as_ref(),
            BackendKind::Cpu => None,
        }
    }

    /// Every GPU device listed, where every backend built in has been listed.
    fn all(&self) -> Option<Vec<Listed>> {
        let mut all = Vec::new();
        for kind in built_backends() {
            all.extend(self.get(kind)?.iter().cloned());
        }
        Some(all)
    }

    /// The calibration this knows: the measured one, or, where every backend was listed and
    /// found no hardware GPU, that of a machine with nothing to measure.
    fn calibration(&self) -> Option<Calibration> {
        let all = self.all()?;
        let whence = self.path.as_ref().map_or_else(String::new, |p| p.display().to_string());
        let (cpu, gpus, source) = match &self.measured {
            Some((cpu, gpus)) => (cpu.clone(), gpus.clone(), format!("calibration cached in {whence}")),
            None if all.iter().any(|l| l.hardware) => return None,
            None => (cpu_curve(), Vec::new(), format!("no hardware GPU, as recorded in {whence}")),
        };
        Some(Calibration { cpu, gpus, found: all.iter().map(|l| l.device).collect(), source })
    }
}

/// The CPU's curve before any measurement: its name, no points.
fn cpu_curve() -> Curve {
    Curve { device: Device::Cpu, name: CpuBackend::new().info().name.clone(), points: Vec::new(), open_seconds: 0.0 }
}

/// The GPU backends built in.
fn built_backends() -> Vec<BackendKind> {
    let mut kinds = Vec::new();
    if cfg!(feature = "opencl") {
        kinds.push(BackendKind::OpenCl);
    }
    if cfg!(feature = "wgpu") {
        kinds.push(BackendKind::Wgpu);
    }
    kinds
}

/// The cache file as this process first read it: read and parsed once per process.
fn stored() -> Option<&'static Known> {
    static LOADED: OnceLock<Option<Known>> = OnceLock::new();
    LOADED.get_or_init(load).as_ref()
}

/// What this process listed itself, backend by backend, and how long the last full listing took
/// (a GPU's open time counts it).
static LISTED_HERE: Mutex<(Known, f64)> =
    Mutex::new((Known { opencl: None, wgpu: None, measured: None, path: None }, 0.0));

/// The devices of backend `kind` as this process listed them, else as the cache file records them.
fn listed_of(kind: BackendKind) -> Option<Vec<Listed>> {
    let here = LISTED_HERE.lock().unwrap_or_else(|p| p.into_inner());
    here.0.get(kind).or_else(|| stored()?.get(kind)).cloned()
}

/// Every GPU device listed, where every backend built in has been listed (here or recorded).
fn listed_all() -> Option<Vec<Listed>> {
    let mut all = Vec::new();
    for kind in built_backends() {
        all.extend(listed_of(kind)?);
    }
    Some(all)
}

/// Whether `device` is one the drivers listed, as far as this process knows without asking a
/// driver: `Some(true)` or `Some(false)` where its backend was listed (by this process, or by an
/// earlier one that recorded it in the cache file), `Some(false)` where the backend is not built
/// in, `None` where it has not been listed (a fresh machine or cache). The CPU is always there.
///
/// ```
/// assert_eq!(b3accel::auto::listed(b3accel::Device::Cpu), Some(true));
/// match b3accel::auto::listed(b3accel::Device::OpenCl(0)) {
///     Some(there) => println!("opencl:0 is {}there", if there { "" } else { "not " }),
///     None => println!("OpenCL has not been listed on this machine yet"),
/// }
/// ```
pub fn listed(device: Device) -> Option<bool> {
    match device {
        Device::Cpu | Device::Auto => Some(true),
        Device::OpenCl(_) | Device::Wgpu(_) => {
            let kind = if matches!(device, Device::OpenCl(_)) { BackendKind::OpenCl } else { BackendKind::Wgpu };
            if !built_backends().contains(&kind) {
                return Some(false);
            }
            listed_of(kind).map(|list| list.iter().any(|l| l.device == device))
        }
    }
}

/// Keeps what a listing found (`statuses`, each backend listed) for the rest of the process and
/// records it in the cache file for later processes, where it differs from the record. A backend
/// whose devices changed makes the calibration stale: it is dropped, to be measured again.
pub(crate) fn note_listing(statuses: &[BackendStatus], seconds: f64) {
    let found: Vec<(BackendKind, Vec<Listed>)> = statuses
        .iter()
        .map(|s| (s.backend, s.devices.as_ref().map_or_else(|_| Vec::new(), |l| l.iter().map(Listed::of).collect())))
        .collect();
    {
        let mut here = LISTED_HERE.lock().unwrap_or_else(|p| p.into_inner());
        for (kind, list) in &found {
            if let Some(slot) = here.0.slot(*kind) {
                *slot = Some(list.clone());
            }
        }
        if built_backends().iter().all(|k| statuses.iter().any(|s| s.backend == *k)) {
            here.1 = seconds;
        }
    }
    let Some(path) = cache_file() else { return };
    let _ = cache::update(&path, CACHE_MAX_BYTES, true, |old| {
        let mut known = old.as_deref().and_then(parse).unwrap_or_default();
        let (mut changed, mut replaced) = (false, false);
        for (kind, list) in &found {
            if let Some(slot) = known.slot(*kind) {
                if slot.as_ref() != Some(list) {
                    changed = true;
                    replaced |= slot.is_some();
                    *slot = Some(list.clone());
                }
            }
        }
        if replaced {
            known.measured = None;
        }
        changed.then(|| to_json(&known))
    });
}

/// Measures anew and rewrites the cache (what `b3accel bench --calibrate` does). The process
/// keeps using the calibration it already had, if any, until it ends.
///
/// ```no_run
/// let fresh = b3accel::auto::recalibrate();
/// println!("calibrated {} GPU(s), saved to {}", fresh.gpus.len(), fresh.source);
/// ```
pub fn recalibrate() -> Calibration {
    measure_and_store(true)
}

/// The device Auto uses for `len` bytes in host memory.
///
/// ```
/// // Small inputs always stay on the CPU.
/// assert_eq!(b3accel::auto::choose(1000).device, b3accel::Device::Cpu);
/// ```
pub fn choose(len: u64) -> Choice {
    let gb = |x: f64| x / 1e9;
    let decision = decide(len);
    let reason = match &decision {
        Decision::Small => {
            format!("{len} bytes is under {} MiB: small inputs always stay on the CPU", GPU_MIN_BYTES >> 20)
        }
        Decision::NoGpu if calibration().gpus.is_empty() => "no hardware GPU on this machine".into(),
        Decision::NoGpu => "every hardware GPU of this machine failed earlier in this process".into(),
        Decision::Measured { best, cpu, cal } if best.1 > *cpu => format!(
            "{} ({}) is measured fastest at this size: {:.1} GB/s end to end against the CPU's {:.1} GB/s ({})",
            best.0.device,
            best.0.name,
            gb(best.1),
            gb(*cpu),
            cal.source
        ),
        Decision::Measured { best, cpu, cal } => format!(
            "the CPU is measured fastest at this size: {:.1} GB/s against {:.1} GB/s for {} ({})",
            gb(*cpu),
            gb(best.1),
            best.0.device,
            cal.source
        ),
    };
    Choice { device: decision.device(), reason }
}

/// Why Auto picks what it picks, without the words: [`AutoBackend`] asks on every call, and only
/// [`choose`] needs the sentence.
enum Decision {
    Small,
    NoGpu,
    /// The fastest GPU with its throughput at this size, the CPU's, and where they come from.
    Measured {
        best: (&'static Curve, f64),
        cpu: f64,
        cal: &'static Calibration,
    },
}

impl Decision {
    fn device(&self) -> Device {
        match self {
            Decision::Measured { best, cpu, .. } if best.1 > *cpu => best.0.device,
            _ => Device::Cpu,
        }
    }
}

fn decide(len: u64) -> Decision {
    if len < GPU_MIN_BYTES {
        return Decision::Small;
    }
    let cal = calibration();
    let candidates = cal.gpus.iter().filter(|g| !has_failed(g.device));
    let Some(best) = candidates.map(|g| (g, g.at(len))).max_by(|a, b| a.1.total_cmp(&b.1)) else {
        return Decision::NoGpu;
    };
    Decision::Measured { best, cpu: cal.cpu.at(len), cal }
}

/// The machine's fingerprint: a cache made elsewhere, or by another version, is ignored.
fn fingerprint() -> String {
    let cpu = CpuBackend::new();
    format!(
        "b3accel {} | {} | {} threads | features{}{}",
        env!("CARGO_PKG_VERSION"),
        cpu.info().name,
        crate::core::platform::machine_threads(),
        if cfg!(feature = "opencl") { " opencl" } else { "" },
        if cfg!(feature = "wgpu") { " wgpu" } else { "" },
    )
}

/// The version of the cache file's layout; a file of another version is ignored (and replaced).
const CACHE_FORMAT: u64 = 3;

/// The most GPU devices one backend's record lists; a longer list is not one this crate wrote.
const MAX_LISTED: usize = 256;

/// A calibration file is a few hundred bytes; anything much larger is not one.
const CACHE_MAX_BYTES: u64 = 1 << 20;

/// The cache file's location, where this machine has one and caches are on: `$B3ACCEL_CALIBRATION`,
/// else `calibration-<backends>.json` in the crate's cache directory (see the module's
/// introduction).
///
/// ```
/// if let Some(p) = b3accel::auto::cache_file() {
///     println!("calibration cache: {}", p.display());
/// }
/// ```
pub fn cache_file() -> Option<PathBuf> {
    cache::path(CALIBRATION_ENV, &format!("calibration-{}.json", build_tag()))
}

/// Why the cache file cannot be kept, if that is so: something at its path that is not one of
/// b3accel's own files (the user's file, a directory, a symbolic link, a FIFO, a device), which
/// is left as it is; the process then works without the cache. `None` where the file is usable
/// or missing, and where caches are off.
///
/// ```
/// if let Some(why) = b3accel::auto::cache_file_problem() {
///     eprintln!("{why}");
/// }
/// ```
pub fn cache_file_problem() -> Option<String> {
    cache::replaceable(&cache_file()?).err().map(|e| e.to_string())
}

/// The backends built in, as the calibration file's name gives them: `cpu`, `opencl`, `wgpu` or
/// `opencl-wgpu`. On the GPU machine a default build and an OpenCL build, run in turns, each
/// found the other's file (another fingerprint) and calibrated again: 2 s per process.
fn build_tag() -> &'static str {
    match (cfg!(feature = "opencl"), cfg!(feature = "wgpu")) {
        (true, true) => "opencl-wgpu",
        (true, false) => "opencl",
        (false, true) => "wgpu",
        (false, false) => "cpu",
    }
}

fn curve_to_json(c: &Curve) -> serde_json::Value {
    serde_json::json!({
        "device": c.device.to_string(),
        "name": c.name,
        "points": c.points.iter().map(|(s, t)| serde_json::json!([s, t])).collect::<Vec<_>>(),
        "open_seconds": c.open_seconds,
    })
}

/// A curve from the cache file, if every value in it is one this crate could have written:
/// a device of the role the file gives it (`gpu`: an OpenCL or wgpu device; else the CPU), a
/// short name, sizes increasing from a chunk up, finite positive rates and an open time of at
/// most ten minutes. A file is data from disk: anything else makes the whole file no
/// calibration (it is then measured and written again).
fn curve_from_json(v: &serde_json::Value, gpu: bool) -> Option<Curve> {
    let device: Device = v["device"].as_str()?.parse().ok()?;
    let role_fits = match device {
        Device::OpenCl(_) | Device::Wgpu(_) => gpu,
        Device::Cpu => !gpu,
        Device::Auto => false,
    };
    let name = v["name"].as_str()?;
    let points = v["points"]
        .as_array()?
        .iter()
        .map(|p| Some((p.get(0)?.as_u64()?, p.get(1)?.as_f64()?)))
        .collect::<Option<Vec<_>>>()?;
    let sizes_rise = points.windows(2).all(|w| w[0].0 < w[1].0);
    let values_sane = points.iter().all(|&(s, r)| s >= CHUNK_LEN as u64 && r.is_finite() && r > 0.0);
    let open_seconds = v["open_seconds"].as_f64()?;
    let ok = role_fits
        && name.len() <= 256
        && points.len() <= 64
        && sizes_rise
        && values_sane
        && (0.0..=600.0).contains(&open_seconds);
    ok.then(|| Curve { device, name: name.to_string(), points, open_seconds })
}

/// The hardware GPUs the cached calibration measured (the CPU aside), or before any calibration
/// each hardware GPU listed (once, as `--backend all` takes them), without listing or measuring
/// anything: `None` where not every backend built in has been listed (by this process, or by an
/// earlier one that recorded it in the cache file, see [`cache_file`]), an empty list on a
/// machine without a hardware GPU. `--backend all` and
/// [`hardware_devices`](crate::spread::hardware_devices) take their devices from it when it is
/// there; `b3accel bench --calibrate` remakes it.
///
/// ```
/// if let Some(gpus) = b3accel::auto::cached_gpus() {
///     println!("hardware GPUs, as calibrated: {gpus:?}");
/// }
/// ```
pub fn cached_gpus() -> Option<Vec<Device>> {
    if let Some(cal) = cached() {
        return Some(cal.gpus.iter().map(|g| g.device).collect());
    }
    let all = listed_all()?;
    Some(one_per_gpu_named(all.iter().filter(|l| l.hardware).map(|l| (l.device, l.name.as_str()))))
}

/// Every GPU device the drivers listed, software ones included, without asking any driver: `None`
/// where not every backend built in has been listed (by this process, or by an earlier one that
/// recorded it in the cache file).
///
/// ```
/// if let Some(found) = b3accel::auto::cached_devices() {
///     println!("GPU devices, as calibrated: {found:?}");
/// }
/// ```
pub fn cached_devices() -> Option<Vec<Device>> {
    listed_all().map(|all| all.iter().map(|l| l.device).collect())
}

/// What the cached calibration knows of `device`, without measuring or opening anything: its
/// throughput at `len` bytes (the CPU's scaled to the threads of the current rayon pool) and
/// its open time. `None` without a usable cache or a curve for the device.
pub(crate) fn cached_rate(device: Device, len: u64) -> Option<(f64, std::time::Duration)> {
    let cal = cached()?;
    let curve = std::iter::once(&cal.cpu).chain(&cal.gpus).find(|c| c.device == device && !c.points.is_empty())?;
    let mut rate = curve.at(len);
    if device == Device::Cpu {
        let calibrated = crate::core::platform::machine_threads();
        rate *= (rayon::current_num_threads() as f64 / calibrated as f64).min(1.0);
    }
    Some((rate, std::time::Duration::from_secs_f64(curve.open_seconds)))
}

/// What the cache file knows, if it is there, whole, of this format and made by this build on
/// this machine; anything else (garbage included) is nothing known.
fn load() -> Option<Known> {
    let path = cache_file()?;
    let known = parse(&cache::read(&path, CACHE_MAX_BYTES)?)?;
    Some(Known { path: Some(path), ..known })
}

/// A cache file's contents, if every value in it is one this crate could have written: each
/// backend's record a list of distinct devices of that backend with short names, and curves (see
/// [`curve_from_json`]) only where every backend built in is listed, one per hardware GPU listed
/// at most.
fn parse(bytes: &[u8]) -> Option<Known> {
    let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    if v["format"].as_u64()? != CACHE_FORMAT || v["fingerprint"].as_str()? != fingerprint() {
        return None;
    }
    let mut known = Known::default();
    for (key, list) in v["listed"].as_object()? {
        let kind = built_backends().into_iter().find(|k| k.to_string() == *key)?;
        let list = list
            .as_array()
            .filter(|l| l.len() <= MAX_LISTED)?
            .iter()
            .map(|d| {
                let device: Device = d["device"].as_str()?.parse().ok()?;
                let name = d["name"].as_str().filter(|n| n.len() <= 256)?.to_string();
                let fits = match device {
                    Device::OpenCl(_) => kind == BackendKind::OpenCl,
                    Device::Wgpu(_) => kind == BackendKind::Wgpu,
                    _ => false,
                };
                fits.then_some(Listed { device, name, hardware: d["hardware"].as_bool()? })
            })
            .collect::<Option<Vec<_>>>()?;
        let mut ids: Vec<String> = list.iter().map(|l| l.device.to_string()).collect();
        ids.sort();
        ids.dedup();
        (ids.len() == list.len()).then_some(())?;
        *known.slot(kind)? = Some(list);
    }
    let m = &v["measured"];
    if !m.is_null() {
        let cpu = curve_from_json(&m["cpu"], false)?;
        let gpus = m["gpus"].as_array()?.iter().map(|g| curve_from_json(g, true)).collect::<Option<Vec<_>>>()?;
        // Each GPU once, and each a hardware GPU listed.
        let all = known.all()?;
        let mut seen: Vec<String> = gpus.iter().map(|g| g.device.to_string()).collect();
        seen.sort();
        seen.dedup();
        let listed_hardware = |d: Device| all.iter().any(|l| l.device == d && l.hardware);
        (seen.len() == gpus.len() && gpus.iter().all(|g| listed_hardware(g.device))).then_some(())?;
        known.measured = Some((cpu, gpus));
    }
    Some(known)
}

/// The cache file's contents for `known`.
fn to_json(known: &Known) -> Vec<u8> {
    let list = |l: &Vec<Listed>| {
        l.iter()
            .map(|d| serde_json::json!({"device": d.device.to_string(), "name": d.name, "hardware": d.hardware}))
            .collect::<Vec<_>>()
    };
    let mut listed = serde_json::Map::new();
    for kind in built_backends() {
        if let Some(l) = known.get(kind) {
            listed.insert(kind.to_string(), list(l).into());
        }
    }
    let measured = known.measured.as_ref().map(|(cpu, gpus)| {
        serde_json::json!({"cpu": curve_to_json(cpu), "gpus": gpus.iter().map(curve_to_json).collect::<Vec<_>>()})
    });
    let json = serde_json::json!({
        "format": CACHE_FORMAT,
        "fingerprint": fingerprint(),
        "listed": listed,
        "measured": measured,
    });
    serde_json::to_vec_pretty(&json).unwrap_or_default()
}

fn measure_and_store(verbose: bool) -> Calibration {
    // A process that opens a GPU pays its driver's start too, which listing the devices does
    // (here, or earlier in this process): each GPU's open time counts it. A recalibration
    // (`verbose`: `bench --calibrate`) lists anew.
    let (listed, driver_start) = match (listed_here_all(), verbose) {
        (Some(done), false) => done,
        _ => {
            super::registry::backend_status();
            listed_here_all().unwrap_or_default()
        }
    };
    let hardware: Vec<&Listed> = listed.iter().filter(|l| l.hardware).collect();
    let once = one_per_gpu_named(hardware.iter().map(|l| (l.device, l.name.as_str())));
    let gpus: Vec<(Device, String)> =
        hardware.iter().filter(|l| once.contains(&l.device)).map(|l| (l.device, l.name.clone())).collect();
    let mut cal = Calibration {
        cpu: cpu_curve(),
        gpus: Vec::new(),
        found: listed.iter().map(|l| l.device).collect(),
        source: "calibrated in this process".into(),
    };
    // The curves are the whole machine's (cached_rate scales the CPU's to the caller's pool), so
    // they are measured on a pool of every thread, whatever pool the caller runs in (a Python
    // call with max_threads=1 runs in a pool of one).
    let mut run = || measure_devices(&mut cal, &gpus, driver_start, verbose);
    match rayon::ThreadPoolBuilder::new().num_threads(crate::core::platform::machine_threads()).build() {
        Ok(pool) => pool.install(run),
        Err(_) => run(),
    }
    if let Some(path) = cache_file() {
        let measured = (cal.cpu.clone(), cal.gpus.clone());
        let written = cache::update(&path, CACHE_MAX_BYTES, true, |old| {
            let mut known = old.as_deref().and_then(parse).unwrap_or_default();
            // The devices as this process listed them: the curves are theirs.
            let here = LISTED_HERE.lock().unwrap_or_else(|p| p.into_inner());
            for kind in built_backends() {
                *known.slot(kind)? = here.0.get(kind).cloned();
            }
            known.measured = Some(measured);
            Some(to_json(&known))
        });
        if written.unwrap_or(false) {
            cal.source = format!("calibrated and cached in {}", path.display());
        }
    }
    cal
}

/// Every GPU device this process listed itself, with how long the listing took, where it has
/// listed every backend built in.
fn listed_here_all() -> Option<(Vec<Listed>, f64)> {
    let here = LISTED_HERE.lock().unwrap_or_else(|p| p.into_inner());
    Some((here.0.all()?, here.1))
}

/// Measures the CPU and each GPU of `gpus` into `cal` (the CPU's curve only where a GPU was
/// measured: with none, Auto needs no curve).
fn measure_devices(cal: &mut Calibration, gpus: &[(Device, String)], driver_start: f64, verbose: bool) {
    if !gpus.is_empty() {
        let data = calibration_input(*CALIBRATION_SIZES.last().expect("sizes") as usize);
        let cpu_points = measure(&*backend(Device::Cpu).expect("the CPU backend always opens"), &data, verbose);
        for (device, name) in gpus.iter().cloned() {
            // A GPU that fails to open or to hash is simply not a candidate.
            let opening = Instant::now();
            if let Ok(b) = backend(device) {
                let open_seconds = driver_start + opening.elapsed().as_secs_f64();
                let points = measure(&*b, &data, verbose);
                if points.len() == CALIBRATION_SIZES.len() {
                    cal.gpus.push(Curve { device, name, points, open_seconds });
                }
            }
        }
        if !cal.gpus.is_empty() {
            cal.cpu.points = cpu_points;
        }
    }
}

/// The calibration's input, `len` bytes, written by all the pool's threads (512 MiB took a
/// single thread about half a second).
fn calibration_input(len: usize) -> Vec<u8> {
    use rayon::prelude::*;
    let mut data = vec![0u8; len];
    data.par_chunks_mut(1 << 20).enumerate().for_each(|(k, piece)| {
        for (i, b) in piece.iter_mut().enumerate() {
            *b = (((k << 20) + i) % 251) as u8;
        }
    });
    data
}

/// Best of three end-to-end timings at each calibration size (after one warm-up call).
fn measure(b: &dyn Backend, data: &[u8], verbose: bool) -> Vec<(u64, f64)> {
    let mut points = Vec::new();
    for &size in &CALIBRATION_SIZES {
        let input = &data[..size as usize];
        let mut best = f64::INFINITY;
        for _ in 0..4 {
            let t = Instant::now();
            if hash_all(b, input, Domain::HASH).is_err() {
                return points;
            }
            best = best.min(t.elapsed().as_secs_f64());
        }
        if verbose {
            let _held = stderr::lock();
            eprintln!("calibrate: {} at {} MiB: {:.1} GB/s", b.info().device, size >> 20, size as f64 / best / 1e9);
        }
        points.push((size, size as f64 / best));
    }
    points
}

/// GPUs that failed a call under Auto in this process, with the error: Auto no longer chooses them.
static FAILED: Mutex<Vec<(Device, String)>> = Mutex::new(Vec::new());

/// The GPUs that failed a call under `Device::Auto` in this process (out of memory, a lost
/// device, a failure to open), each with the error, in the order they failed. Auto ran each of
/// those calls again on the CPU and chooses the CPU instead of them from then on.
///
/// ```
/// for (device, error) in b3accel::auto::failed_devices() {
///     eprintln!("{device} failed ({error}); Auto hashes on the CPU instead");
/// }
/// ```
pub fn failed_devices() -> Vec<(Device, String)> {
    FAILED.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

fn has_failed(device: Device) -> bool {
    FAILED.lock().unwrap_or_else(|p| p.into_inner()).iter().any(|(d, _)| *d == device)
}

fn record_failure(device: Device, error: &Error) {
    let mut failed = FAILED.lock().unwrap_or_else(|p| p.into_inner());
    if !failed.iter().any(|(d, _)| *d == device) {
        failed.push((device, error.to_string()));
    }
}

/// Runs `f` (a call on `len` bytes) on the device Auto picks for that size, and returns its
/// result with the device that gave it. If the device is a GPU and opening it or `f` fails
/// there, the GPU is dropped from Auto's choices for the rest of the process (see
/// [`failed_devices`]) and `f` runs again on the CPU, whose result is returned. `f` must be
/// able to run twice (it writes all of its output on each run).
///
/// ```
/// let data = vec![5u8; 10 << 20];
/// let (hash, device) = b3accel::auto::run(data.len() as u64, |b| {
///     b3accel::xof_reader_with(&**b, &b3accel::Mode::Hash, &data)
/// });
/// let mut out = [0u8; 32];
/// hash.unwrap().fill(&mut out);
/// assert_eq!(out, *blake3::hash(&data).as_bytes());
/// println!("hashed on {device}");
/// ```
pub fn run<T>(len: u64, mut f: impl FnMut(&Arc<dyn Backend>) -> Result<T>) -> (Result<T>, Device) {
    let device = decide(len).device();
    if device != Device::Cpu {
        match backend(device) {
            Ok(gpu) => match f(&gpu) {
                Ok(v) => return (Ok(v), device),
                Err(e) => record_failure(device, &e),
            },
            Err(e) => record_failure(device, &e),
        }
    }
    (f(cpu_backend()), Device::Cpu)
}

/// The backend behind `Device::Auto`: each call goes to the device [`choose`] picks for its
/// size, and to the CPU where that device fails (see [`run`]).
pub(crate) struct AutoBackend {
    info: DeviceInfo,
}

impl AutoBackend {
    pub(crate) fn new() -> AutoBackend {
        let mut info = cpu_backend().info().clone();
        info.device = Device::Auto;
        info.api = format!("auto: {}, or a hardware GPU for large inputs when measured faster", info.api);
        AutoBackend { info }
    }
}

impl Backend for AutoBackend {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn batch_len(&self) -> usize {
        cpu_backend().batch_len()
    }

    fn chunk_subtrees_capped(
        &self,
        input: &[u8],
        first_chunk: u64,
        max_chunks: u64,
        key: &[u32; 8],
        flags: u32,
        out: &mut [Cv],
    ) -> Result<()> {
        run(input.len() as u64, |b| b.chunk_subtrees_capped(input, first_chunk, max_chunks, key, flags, out)).0
    }

    fn subtree_top(&self, input: &[u8], first_chunk: u64, key: &[u32; 8], flags: u32, top_flags: u32) -> Result<Cv> {
        run(input.len() as u64, |b| b.subtree_top(input, first_chunk, key, flags, top_flags)).0
    }

    fn hash_blocks(&self, blocks: &[[u8; 64]], out: &mut [[u8; 32]]) -> Result<()> {
        run(std::mem::size_of_val(blocks) as u64, |b| b.hash_blocks(blocks, out)).0
    }

    fn merkle(&self, leaves: &[Cv], mut inner: Option<&mut [Cv]>) -> Result<Cv> {
        run(std::mem::size_of_val(leaves) as u64, |b| b.merkle(leaves, inner.as_deref_mut())).0
    }

    fn hash_many(&self, data: &[u8], msg_len: usize, key: &[u32; 8], flags: u32, out: &mut [Cv]) -> Result<()> {
        run(data.len() as u64, |b| b.hash_many(data, msg_len, key, flags, out)).0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curve_interpolates_in_log_size_and_holds_flat_outside() {
        let c = Curve {
            device: Device::Cpu,
            name: "x".into(),
            points: vec![(1 << 20, 10.0), (1 << 22, 30.0)],
            open_seconds: 0.0,
        };
        assert_eq!(c.at(1), 10.0);
        assert_eq!(c.at(1 << 30), 30.0);
        assert!((c.at(1 << 21) - 20.0).abs() < 1e-9);
    }

    #[test]
    fn small_inputs_stay_on_the_cpu() {
        assert_eq!(choose(0).device, Device::Cpu);
        assert_eq!(choose(GPU_MIN_BYTES - 1).device, Device::Cpu);
    }

    #[test]
    fn json_round_trip() {
        let c = Curve {
            device: Device::OpenCl(2),
            name: "GPU".into(),
            points: vec![(4096, 1.5e9), (8192, 2.5e9)],
            open_seconds: 0.4,
        };
        assert_eq!(curve_from_json(&curve_to_json(&c), true), Some(c.clone()));
        // The same curve in the CPU's place is no calibration.
        assert_eq!(curve_from_json(&curve_to_json(&c), false), None);
    }

    #[test]
    fn every_wrong_value_makes_a_curve_invalid() {
        let good = serde_json::json!({
            "device": "wgpu:1", "name": "GPU", "points": [[4194304, 2.0e9], [33554432, 9.0e9]], "open_seconds": 0.3
        });
        assert!(curve_from_json(&good, true).is_some());
        let wrong: [(&str, serde_json::Value); 12] = [
            ("device", "auto".into()),
            ("device", "cpu".into()),
            ("device", "tpu:0".into()),
            ("device", 7.into()),
            ("name", "x".repeat(300).into()),
            ("points", serde_json::json!([[33554432, 9.0e9], [4194304, 2.0e9]])),
            ("points", serde_json::json!([[4194304, -1.0]])),
            ("points", serde_json::json!([[4194304, 0.0]])),
            ("points", serde_json::json!([[0, 1.0e9]])),
            ("points", serde_json::json!([[4194304]])),
            ("open_seconds", (-1.0).into()),
            ("open_seconds", 1e9.into()),
        ];
        for (field, value) in wrong {
            let mut v = good.clone();
            v[field] = value.clone();
            assert_eq!(curve_from_json(&v, true), None, "{field} = {value}");
        }
        let mut missing = good.clone();
        missing.as_object_mut().unwrap().remove("open_seconds");
        assert_eq!(curve_from_json(&missing, true), None);
    }
}
