//! The GPUs and device lists `b3accel bench` measures: each GPU opened with its end-to-end and
//! device-buffer entry points, and the lists of devices that share one input.

use crate::choice::list_name;
use b3accel::spread::Spread;
use b3accel::{Device, DeviceInfo};
use std::time::Duration;

/// The device lists spread inputs from this size (the library's default starts at
/// `spread::SPREAD_MIN_BYTES`), so that the table shows what spreading costs and gains at each
/// size measured from there; smaller inputs go to the list's first device alone.
pub(super) const SPREAD_FROM: u64 = 1 << 20;

/// A row's series name and its seconds per call (or why it has none).
pub(super) type Series = (&'static str, Result<f64, String>);

/// The GPU-specific measurements: end to end with its parts, and from a device buffer.
pub(super) trait GpuBench {
    fn timed(&self, data: &[u8]) -> Result<[f64; 3], String>;
    /// The resident rows, timed in the same turns: the hash ("resident"), then bao outboards
    /// of the same buffer ("resident outboard ..."), so that their ratio comes from one run.
    fn resident(&self, data: &[u8], budget: Duration) -> Result<Vec<Series>, String>;
}

/// Every GPU backend through its [`Resident`](b3accel::Resident) calls, the same for each.
#[cfg(any(feature = "opencl", feature = "wgpu"))]
impl<R: b3accel::Resident> GpuBench for R {
    fn timed(&self, data: &[u8]) -> Result<[f64; 3], String> {
        let t = self.hash_from_host(data, &b3accel::Mode::Hash).map_err(|e| e.to_string())?;
        Ok([t.upload.as_secs_f64(), t.kernel.as_secs_f64(), t.download.as_secs_f64()])
    }
    fn resident(&self, data: &[u8], budget: Duration) -> Result<Vec<Series>, String> {
        use b3accel::bao::{Order, Tree};
        use b3accel::OutboardDest;
        let size = super::row::size_label(data.len() as u64);
        let buf = self.upload(data).map_err(|e| format!("uploading {size}: {e}"))?.value;
        let range = 0..data.len() as u64;
        let parents = |k| Tree::new(data.len() as u64, k).map(|t| t.outboard_len() as usize).map_err(|e| e.to_string());
        // Device destinations of the outboards' size, and host memory for one.
        let dest = |k| parents(k).and_then(|len| self.upload(&vec![0u8; len]).map(|t| t.value).map_err(|e| e.to_string()));
        let (dest0, dest4) = (dest(0)?, dest(4)?);
        let mut host4 = vec![0u8; parents(4)?];
        let outboard = |k, out: OutboardDest<'_, R::Buffer>| {
            self.bao_outboard(&buf, range.clone(), k, Order::Pre, out).map(drop).map_err(|e| e.to_string())
        };
        let mut hash = || self.hash(&buf, range.clone(), &b3accel::Mode::Hash).map(drop).map_err(|e| e.to_string());
        let mut k0 = || outboard(0, OutboardDest::Device(&dest0));
        let mut k4 = || outboard(4, OutboardDest::Device(&dest4));
        let mut k4_host = || outboard(4, OutboardDest::Host(&mut host4));
        let names = ["resident", "resident outboard k0 pre", "resident outboard k4 pre", "resident outboard k4 pre host"];
        let times = super::timing::time_interleaved(budget, &mut [&mut hash, &mut k0, &mut k4, &mut k4_host]);
        Ok(names.into_iter().zip(times).collect())
    }
}

/// A GPU device under test, with its backend's timed and device-buffer entry points.
pub(super) struct Gpu {
    pub(super) info: DeviceInfo,
    pub(super) extra: Option<Box<dyn GpuBench>>,
}

pub(super) fn open_gpus() -> Vec<Gpu> {
    let mut gpus = Vec::new();
    for info in b3accel::devices().into_iter().filter(|d| d.device != Device::Cpu) {
        if b3accel::backend(info.device).is_err() {
            continue;
        }
        let extra: Option<Box<dyn GpuBench>> = match info.device {
            #[cfg(feature = "opencl")]
            Device::OpenCl(i) => {
                b3accel::opencl::OpenClBackend::open(i).ok().map(|b| Box::new(b) as Box<dyn GpuBench>)
            }
            #[cfg(feature = "wgpu")]
            Device::Wgpu(i) => {
                b3accel::wgpu::WgpuBackend::open(i).ok().map(|b| Box::new(b.resident().clone()) as Box<dyn GpuBench>)
            }
            _ => None,
        };
        gpus.push(Gpu { info, extra });
    }
    gpus
}

/// A device list measured from host memory.
pub(super) struct List {
    /// The series: "all (cpu+opencl:1)", "list cpu+wgpu:0", ...
    pub(super) series: String,
    /// What the row is, for the legend under the table.
    pub(super) about: String,
    pub(super) spread: Spread,
}

/// The device lists to measure: `all` (every hardware device); the CPU with each hardware GPU,
/// where there are several; on a machine without a hardware GPU, where `all` is the CPU alone,
/// every device found, software GPUs included, so that the list's choice is measured too. Their
/// GPUs are open already (`open_gpus`): each list measures them in its first calls and keeps
/// them only where they make its calls faster (`b3accel::spread`).
pub(super) fn device_lists(gpus: &[Gpu]) -> Vec<List> {
    let all = b3accel::spread::hardware_devices();
    let mut lists =
        vec![(format!("all ({})", list_name(&all)), "every hardware device (--backend all)".to_string(), all.clone())];
    let hardware: Vec<Device> = all.iter().copied().filter(|&d| d != Device::Cpu).collect();
    if hardware.len() > 1 {
        for &g in &hardware {
            let list = [Device::Cpu, g];
            lists.push((format!("list {}", list_name(&list)), format!("the CPU with {g} alone"), list.to_vec()));
        }
    }
    if hardware.is_empty() && !gpus.is_empty() {
        let every: Vec<Device> = std::iter::once(Device::Cpu).chain(gpus.iter().map(|g| g.info.device)).collect();
        lists.push((
            format!("list {}", list_name(&every)),
            "every device found, software GPUs included (no hardware GPU here)".to_string(),
            every,
        ));
    }
    lists
        .into_iter()
        .filter_map(|(series, about, devices)| match Spread::new(&devices) {
            Ok(s) => Some(List { series, about, spread: s.with_min_bytes(SPREAD_FROM) }),
            Err(e) => {
                eprintln!("bench: {}: {e}", list_name(&devices));
                None
            }
        })
        .collect()
}
