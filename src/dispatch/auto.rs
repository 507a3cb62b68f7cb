//! `Device::Auto`: the device that is fastest end to end for data of a given size in host
//! memory, chosen from measurements.
//!
//! Rules, in order:
//! 1. Inputs under [`GPU_MIN_BYTES`] always go to the CPU: a GPU's dispatch and transfer latency
//!    alone costs more than hashing them on the CPU.
//! 2. Only hardware GPUs are candidates; a software GPU (PoCL, llvmpipe, lavapipe) never is. On a
//!    machine without one, Auto *is* the CPU backend, at no cost.
//! 3. Otherwise a short calibration measures the CPU and each hardware GPU (each physical GPU
//!    once, through the backend earlier in the table of backends where two list it, as
//!    `--backend all` takes them: OpenCL before wgpu) at a few sizes
//!    (host memory to hash, end to end); for each call Auto picks the device with the best
//!    interpolated throughput at that call's size.
//!
//! The calibration, and the record of every GPU device the drivers listed (so that later
//! processes need not even list devices), are cached in a small JSON file: `$B3ACCEL_CALIBRATION`
//! if set (recorded only where its directory exists: the library makes none for a file the user
//! names), else `calibration-<backends>.json` (named by the GPU backends built in, such as
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
//! Data that already lies in a device buffer is hashed on that device (the GPU backends'
//! [`Resident`](crate::Resident) calls): copying it back to the host is never faster.

use super::record::{self, cpu_curve, Listed};
pub use super::record::{cache_file, cache_file_problem, Calibration, Curve, CALIBRATION_ENV};
use super::registry::{backend, cpu_backend, one_per_gpu_named};
use crate::backends::stderr;
use crate::core::compress::Cv;
use crate::tree::{hash_all, Backend, Device, DeviceInfo, Domain, Error, Result};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// Inputs smaller than this never go to a GPU.
pub const GPU_MIN_BYTES: u64 = 4 << 20;

/// The sizes the calibration measures.
const CALIBRATION_SIZES: [u64; 4] = [4 << 20, 32 << 20, 128 << 20, 512 << 20];

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
    CALIBRATION.get().or_else(|| FROM_FILE.get_or_init(record::stored_calibration).as_ref())
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
    record::listed(device)
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
    let all = record::listed_all()?;
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
    record::listed_all().map(|all| all.iter().map(|l| l.device).collect())
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

fn measure_and_store(verbose: bool) -> Calibration {
    // A process that opens a GPU pays its driver's start too, which listing the devices does
    // (here, or earlier in this process): each GPU's open time counts it. A recalibration
    // (`verbose`: `bench --calibrate`) lists anew.
    let (listed, driver_start) = match (record::listed_here_all(), verbose) {
        (Some(done), false) => done,
        _ => {
            super::registry::backend_status();
            record::listed_here_all().unwrap_or_default()
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
    if let Some(path) = record::store_measured(&cal.cpu, &cal.gpus) {
        cal.source = format!("calibrated and cached in {}", path.display());
    }
    cal
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

/// The calibration's input, `len` bytes, written by all the pool's threads.
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

/// The backend behind `Device::Auto`, made once per process.
pub(crate) fn auto_backend() -> Arc<dyn Backend> {
    static AUTO: OnceLock<Arc<dyn Backend>> = OnceLock::new();
    AUTO.get_or_init(|| Arc::new(AutoBackend::new())).clone()
}

/// The backend behind `Device::Auto`: each call goes to the device [`choose`] picks for its
/// size, and to the CPU where that device fails (see [`run`]).
struct AutoBackend {
    info: DeviceInfo,
}

impl AutoBackend {
    fn new() -> AutoBackend {
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
}
