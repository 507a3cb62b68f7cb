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
//! The calibration (and the list of hardware GPUs, so that later processes need not even list
//! devices) is cached in a small JSON file, made on first use or by `b3accel bench --calibrate`:
//! `$B3ACCEL_CALIBRATION` if set, else `calibration-<backends>.json` (named by the backends
//! built in, such as `calibration-wgpu.json`, so that two builds on one machine do not take turns
//! overwriting one file and calibrating in every process) in the crate's cache directory
//! (`$B3ACCEL_CACHE_DIR`, else `$XDG_CACHE_HOME/b3accel` or `~/.cache/b3accel` on Linux,
//! `~/Library/Caches/b3accel` on macOS, `%LOCALAPPDATA%\b3accel` on Windows); with
//! `B3ACCEL_CACHE=off` nothing is read or written and each process calibrates. Delete it after changing hardware or drivers; a
//! cache made by another version of this crate or on another CPU is ignored, and so is a file
//! that is not a calibration at all. It is written to a temporary file and renamed, so processes
//! that calibrate at once leave one whole file, never a mixture.
//!
//! A GPU call that fails under Auto (out of memory, a lost device) is run again on the CPU, and
//! that GPU is not chosen again in this process ([`failed_devices`] lists it).
//!
//! Data that already lies in a device buffer is hashed on that device (the backends'
//! `hash_buffer` entry points): copying it back to the host is never faster.

use super::registry::{backend, cpu_backend, devices, one_per_gpu};
use crate::backends::cpu::CpuBackend;
use crate::backends::stderr;
use crate::core::cache;
use crate::core::compress::Cv;
use crate::core::constants::CHUNK_LEN;
use crate::tree::{hash_all, Backend, BackendKind, Device, DeviceInfo, DeviceKind, Domain, Error, Result};
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

/// The calibration in force if there is one already, else the cache file as this process first
/// read it: the file is read and parsed once per process, however many lists, `--backend all`
/// and Auto ask (never measured here).
fn cached() -> Option<&'static Calibration> {
    static LOADED: OnceLock<Option<Calibration>> = OnceLock::new();
    CALIBRATION.get().or_else(|| LOADED.get_or_init(load).as_ref())
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

/// Hardware GPUs: what Auto may choose besides the CPU. Each physical GPU once, as `--backend
/// all` takes them ([`one_per_gpu`]: through OpenCL where both OpenCL and wgpu list it), so that
/// the first calibration on a machine opens and measures each GPU once, not once per API.
fn hardware_gpus(found: &[DeviceInfo]) -> Vec<DeviceInfo> {
    let hardware: Vec<DeviceInfo> =
        found.iter().filter(|d| d.backend != BackendKind::Cpu && d.kind != DeviceKind::Cpu).cloned().collect();
    let once = one_per_gpu(&hardware);
    hardware.into_iter().filter(|d| once.contains(&d.device)).collect()
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

/// The version of the cache file's layout; a file of another version is ignored.
const CACHE_FORMAT: u64 = 2;

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

/// The hardware GPUs the cached calibration measured (the CPU aside), without listing or
/// measuring anything: `None` where there is no usable cache file (see [`cache_file`]), an empty
/// list on a machine without a hardware GPU. `--backend all` and
/// [`hardware_devices`](crate::spread::hardware_devices) take their devices from it when it is
/// there; `b3accel bench --calibrate` remakes it.
///
/// ```
/// if let Some(gpus) = b3accel::auto::cached_gpus() {
///     println!("hardware GPUs, as calibrated: {gpus:?}");
/// }
/// ```
pub fn cached_gpus() -> Option<Vec<Device>> {
    cached().map(|cal| cal.gpus.iter().map(|g| g.device).collect())
}

/// Every GPU device the cached calibration found, software ones included, without asking any
/// driver: `None` where there is no usable cache file.
///
/// ```
/// if let Some(found) = b3accel::auto::cached_devices() {
///     println!("GPU devices, as calibrated: {found:?}");
/// }
/// ```
pub fn cached_devices() -> Option<Vec<Device>> {
    cached().map(|cal| cal.found.clone())
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

/// The cached calibration, if the file is there, whole, of this format and made by this build
/// on this machine; anything else (garbage included) is no calibration.
fn load() -> Option<Calibration> {
    let path = cache_file()?;
    let v: serde_json::Value = serde_json::from_slice(&cache::read(&path, CACHE_MAX_BYTES)?).ok()?;
    if v["format"].as_u64()? != CACHE_FORMAT || v["fingerprint"].as_str()? != fingerprint() {
        return None;
    }
    let cal = Calibration {
        cpu: curve_from_json(&v["cpu"], false)?,
        gpus: v["gpus"].as_array()?.iter().map(|g| curve_from_json(g, true)).collect::<Option<Vec<_>>>()?,
        found: v["found"]
            .as_array()?
            .iter()
            .map(|d| d.as_str()?.parse().ok().filter(|d| matches!(d, Device::OpenCl(_) | Device::Wgpu(_))))
            .collect::<Option<Vec<_>>>()?,
        source: format!("calibration cached in {}", path.display()),
    };
    // Each GPU once, and every calibrated one among those found.
    let mut seen: Vec<String> = cal.gpus.iter().map(|g| g.device.to_string()).collect();
    let count = seen.len();
    seen.sort();
    seen.dedup();
    (seen.len() == count && cal.gpus.iter().all(|g| cal.found.contains(&g.device))).then_some(cal)
}

fn measure_and_store(verbose: bool) -> Calibration {
    // A process that opens a GPU pays its driver's start too, which listing the devices does
    // here first: each GPU's open time counts it.
    let listing = Instant::now();
    let found = devices();
    let driver_start = listing.elapsed().as_secs_f64();
    let gpus = hardware_gpus(&found);
    let cpu_info = CpuBackend::new().info().clone();
    let mut cal = Calibration {
        cpu: Curve { device: Device::Cpu, name: cpu_info.name, points: Vec::new(), open_seconds: 0.0 },
        gpus: Vec::new(),
        found: found.iter().map(|d| d.device).filter(|&d| d != Device::Cpu).collect(),
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
        let json = serde_json::json!({
            "format": CACHE_FORMAT,
            "fingerprint": fingerprint(),
            "cpu": curve_to_json(&cal.cpu),
            "gpus": cal.gpus.iter().map(curve_to_json).collect::<Vec<_>>(),
            "found": cal.found.iter().map(Device::to_string).collect::<Vec<_>>(),
        });
        let text = serde_json::to_string_pretty(&json).unwrap_or_default();
        if cache::write_atomic(&path, text.as_bytes()).is_ok() {
            cal.source = format!("calibrated and cached in {}", path.display());
        }
    }
    cal
}

/// Measures the CPU and each GPU of `gpus` into `cal` (the CPU's curve only where a GPU was
/// measured: with none, Auto needs no curve).
fn measure_devices(cal: &mut Calibration, gpus: &[DeviceInfo], driver_start: f64, verbose: bool) {
    if !gpus.is_empty() {
        let data = calibration_input(*CALIBRATION_SIZES.last().expect("sizes") as usize);
        let cpu_points = measure(&*backend(Device::Cpu).expect("the CPU backend always opens"), &data, verbose);
        for g in gpus.iter().cloned() {
            // A GPU that fails to open or to hash is simply not a candidate.
            let opening = Instant::now();
            if let Ok(b) = backend(g.device) {
                let open_seconds = driver_start + opening.elapsed().as_secs_f64();
                let points = measure(&*b, &data, verbose);
                if points.len() == CALIBRATION_SIZES.len() {
                    cal.gpus.push(Curve { device: g.device, name: g.name, points, open_seconds });
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
