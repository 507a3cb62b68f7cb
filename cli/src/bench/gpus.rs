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

/// The GPU-specific measurements: end to end with its parts, and from a device buffer.
pub(super) trait GpuBench {
    fn timed(&self, data: &[u8]) -> Result<[f64; 3], String>;
    fn resident(&self, data: &[u8], budget: Duration) -> Result<f64, String>;
}

/// Every GPU backend through its [`Resident`](b3accel::Resident) calls, the same for each.
#[cfg(any(feature = "opencl", feature = "wgpu"))]
impl<R: b3accel::Resident> GpuBench for R {
    fn timed(&self, data: &[u8]) -> Result<[f64; 3], String> {
        let t = self.hash_from_host(data, &b3accel::Mode::Hash).map_err(|e| e.to_string())?;
        Ok([t.upload.as_secs_f64(), t.kernel.as_secs_f64(), t.download.as_secs_f64()])
    }
    fn resident(&self, data: &[u8], budget: Duration) -> Result<f64, String> {
        let size = super::row::size_label(data.len() as u64);
        let buf = self.upload(data).map_err(|e| format!("uploading {size}: {e}"))?.value;
        let range = 0..data.len() as u64;
        super::timing::time(budget, || {
            self.hash(&buf, range.clone(), &b3accel::Mode::Hash).map(drop).map_err(|e| e.to_string())
        })
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
