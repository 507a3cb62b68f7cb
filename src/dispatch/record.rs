//! Auto's record of this machine, kept in this process and in a cache file for later ones: each
//! GPU backend's devices as its listing found them, and the curves the calibration measured (see
//! [`auto`](crate::auto) for the file's name, contents and rules). The registry adds each listing;
//! Auto reads the record and adds its curves.

use super::table::{self, BackendStatus};
use crate::backends::cpu::CpuBackend;
use crate::core::cache;
use crate::core::constants::CHUNK_LEN;
use crate::tree::{Backend, BackendId, Device, DeviceInfo};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

/// The environment variable naming the calibration cache file.
pub const CALIBRATION_ENV: &str = "B3ACCEL_CALIBRATION";

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
    pub(super) fn at(&self, size: u64) -> f64 {
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

/// A GPU device a driver listed, as the cache file records it.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Listed {
    pub(super) device: Device,
    pub(super) name: String,
    /// Not a software GPU (PoCL, llvmpipe, lavapipe): one Auto may choose.
    pub(super) hardware: bool,
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
    /// By backend: its devices, where it has been listed.
    listed: BTreeMap<BackendId, Vec<Listed>>,
    /// The CPU's curve and each hardware GPU's.
    measured: Option<(Curve, Vec<Curve>)>,
    /// The file it was read from, for the calibration's `source`.
    path: Option<PathBuf>,
}

impl Known {
    fn get(&self, id: BackendId) -> Option<&Vec<Listed>> {
        self.listed.get(&id)
    }

    /// Every GPU device listed, where every backend built in has been listed.
    fn all(&self) -> Option<Vec<Listed>> {
        let mut all = Vec::new();
        for id in built_backends() {
            all.extend(self.get(id)?.iter().cloned());
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
pub(super) fn cpu_curve() -> Curve {
    Curve { device: Device::Cpu, name: CpuBackend::new().info().name.clone(), points: Vec::new(), open_seconds: 0.0 }
}

/// The GPU backends built in (and registered), in the table's order.
fn built_backends() -> Vec<BackendId> {
    table::backends().iter().filter(|e| e.is_gpu() && e.is_built()).map(|e| e.id()).collect()
}

/// The calibration the cache file holds as this process first read it (or, where it records
/// every backend's devices and no hardware GPU, that of a machine with nothing to measure).
pub(super) fn stored_calibration() -> Option<Calibration> {
    stored().and_then(Known::calibration)
}

/// Whether `device` is one the drivers listed, as far as this process knows without asking a
/// driver (see [`auto::listed`](crate::auto::listed)).
pub(super) fn listed(device: Device) -> Option<bool> {
    let Some(id) = device.backend_id().filter(|_| device.index().is_some()) else {
        return Some(true);
    };
    if !table::entry(id).is_some_and(|e| e.is_built()) {
        return Some(false);
    }
    listed_of(id).map(|list| list.iter().any(|l| l.device == device))
}

/// The cache file as this process first read it: read and parsed once per process.
fn stored() -> Option<&'static Known> {
    static LOADED: OnceLock<Option<Known>> = OnceLock::new();
    LOADED.get_or_init(load).as_ref()
}

/// What this process listed itself, backend by backend, and how long the last full listing took
/// (a GPU's open time counts it).
static LISTED_HERE: Mutex<(Known, f64)> =
    Mutex::new((Known { listed: BTreeMap::new(), measured: None, path: None }, 0.0));

/// The devices of backend `kind` as this process listed them, else as the cache file records them.
fn listed_of(id: BackendId) -> Option<Vec<Listed>> {
    let here = LISTED_HERE.lock().unwrap_or_else(|p| p.into_inner());
    here.0.get(id).or_else(|| stored()?.get(id)).cloned()
}

/// Every GPU device listed, where every backend built in has been listed (here or recorded).
pub(super) fn listed_all() -> Option<Vec<Listed>> {
    let mut all = Vec::new();
    for id in built_backends() {
        all.extend(listed_of(id)?);
    }
    Some(all)
}

/// Keeps what a listing found (`statuses`, each backend listed) for the rest of the process and
/// records it in the cache file for later processes, where it differs from the record. A backend
/// whose devices changed makes the calibration stale: it is dropped, to be measured again.
pub(crate) fn note_listing(statuses: &[BackendStatus], seconds: f64) {
    let found: Vec<(BackendId, Vec<Listed>)> = statuses
        .iter()
        .filter(|s| s.backend.id().is_gpu())
        .map(|s| {
            let list = s.devices.as_ref().map_or_else(|_| Vec::new(), |l| l.iter().map(Listed::of).collect());
            (s.backend.id(), list)
        })
        .collect();
    {
        let mut here = LISTED_HERE.lock().unwrap_or_else(|p| p.into_inner());
        for (id, list) in &found {
            here.0.listed.insert(*id, list.clone());
        }
        if built_backends().iter().all(|id| found.iter().any(|(f, _)| f == id)) {
            here.1 = seconds;
        }
    }
    let Some(path) = cache_file() else { return };
    let _ = cache::update(&path, CACHE_MAX_BYTES, makes_dir(), |old| {
        let mut known = old.as_deref().and_then(parse).unwrap_or_default();
        let (mut changed, mut replaced) = (false, false);
        for (id, list) in &found {
            let old = known.listed.insert(*id, list.clone());
            changed |= old.as_ref() != Some(list);
            replaced |= old.is_some_and(|old| old != *list);
        }
        if replaced {
            known.measured = None;
        }
        changed.then(|| to_json(&known))
    });
}

/// The machine's fingerprint: a cache made elsewhere, or by another version, is ignored.
fn fingerprint() -> String {
    let cpu = CpuBackend::new();
    format!(
        "b3accel {} | {} | {} threads | features{}",
        env!("CARGO_PKG_VERSION"),
        cpu.info().name,
        crate::core::platform::machine_threads(),
        built_backends().iter().map(|id| format!(" {id}")).collect::<String>(),
    )
}

/// The version of the cache file's layout; a file of another version is ignored (and replaced).
const CACHE_FORMAT: u64 = 3;

/// The most GPU devices one backend's record lists; a longer list is not one this crate wrote.
const MAX_LISTED: usize = 256;

/// A calibration file is a few hundred bytes; anything much larger is not one.
const CACHE_MAX_BYTES: u64 = 1 << 20;

/// Whether recording may make the cache file's directory: only the crate's own cache directory.
/// The directory of a file named by `$B3ACCEL_CALIBRATION` is the user's: a process that records
/// after the one that named it has gone must not bring it back once it is deleted.
fn makes_dir() -> bool {
    std::env::var_os(CALIBRATION_ENV).is_none_or(|v| v.is_empty())
}

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

/// The GPU backends built in (and registered), as the calibration file's name gives them: `cpu`
/// where there are none, else their names joined by `-` in the table's order (`opencl`, `wgpu`,
/// `opencl-wgpu`). With one file, a default build and an OpenCL build run in turns would each
/// find the other's (another fingerprint) and calibrate again in every process.
fn build_tag() -> String {
    let names: Vec<&str> = built_backends().iter().map(|id| id.name()).collect();
    if names.is_empty() {
        "cpu".into()
    } else {
        names.join("-")
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
/// a device of the role the file gives it (`gpu`: a GPU backend's device; else the CPU), a
/// short name, sizes increasing from a chunk up, finite positive rates and an open time of at
/// most ten minutes. A file is data from disk: anything else makes the whole file no
/// calibration (it is then measured and written again).
fn curve_from_json(v: &serde_json::Value, gpu: bool) -> Option<Curve> {
    let device: Device = v["device"].as_str()?.parse().ok()?;
    let role_fits = if gpu { device.is_gpu() } else { device == Device::Cpu };
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
        let id = built_backends().into_iter().find(|id| id.name() == *key)?;
        let list = list
            .as_array()
            .filter(|l| l.len() <= MAX_LISTED)?
            .iter()
            .map(|d| {
                let device: Device = d["device"].as_str()?.parse().ok()?;
                let name = d["name"].as_str().filter(|n| n.len() <= 256)?.to_string();
                let fits = device.backend_id() == Some(id) && device.index().is_some();
                fits.then_some(Listed { device, name, hardware: d["hardware"].as_bool()? })
            })
            .collect::<Option<Vec<_>>>()?;
        let mut ids: Vec<String> = list.iter().map(|l| l.device.to_string()).collect();
        ids.sort();
        ids.dedup();
        (ids.len() == list.len()).then_some(())?;
        known.listed.insert(id, list);
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
    for id in built_backends() {
        if let Some(l) = known.get(id) {
            listed.insert(id.to_string(), list(l).into());
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

/// Every GPU device this process listed itself, with how long the listing took, where it has
/// listed every backend built in.
pub(super) fn listed_here_all() -> Option<(Vec<Listed>, f64)> {
    let here = LISTED_HERE.lock().unwrap_or_else(|p| p.into_inner());
    Some((here.0.all()?, here.1))
}

/// Records the curves just measured, with the devices as this process listed them (the curves
/// are theirs), in the cache file; its path where it was written.
pub(super) fn store_measured(cpu: &Curve, gpus: &[Curve]) -> Option<PathBuf> {
    let path = cache_file()?;
    let measured = (cpu.clone(), gpus.to_vec());
    let written = cache::update(&path, CACHE_MAX_BYTES, makes_dir(), |old| {
        let mut known = old.as_deref().and_then(parse).unwrap_or_default();
        let here = LISTED_HERE.lock().unwrap_or_else(|p| p.into_inner());
        for id in built_backends() {
            match here.0.get(id) {
                Some(list) => known.listed.insert(id, list.clone()),
                None => known.listed.remove(&id),
            };
        }
        known.measured = Some(measured);
        Some(to_json(&known))
    });
    written.unwrap_or(false).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

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
