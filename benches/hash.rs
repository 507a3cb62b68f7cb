//! Every device of this machine against upstream `blake3`, by input size: one criterion group per
//! size (`hash/64B` .. `hash/64MiB`), so that a group's report compares the devices at that size.
//!
//! Each group has upstream's two peers, `blake3::hash` on one thread (`upstream-hash-1t`) and
//! `Hasher::update_rayon` on all (`upstream-update_rayon`); the CPU backend on one thread
//! (`cpu-1t`, inside a one-thread rayon pool, so the backend takes its no-pool path) and on all
//! (`cpu`); each OpenCL device and wgpu adapter from host memory (`opencl:0-host`, end to end) and
//! from a buffer already on the device (`opencl:0-resident`, `wgpu:0-resident`: the input put
//! there by `Resident::upload`, then hashed by `Resident::hash`); and device lists hashing host
//! memory on several devices at once (`b3accel::spread::Spread`, spreading inputs from 1 MiB):
//! `all` (every hardware device) and, on a machine without a hardware GPU, `every` (the CPU and
//! every device found, software GPUs included). Both one-thread functions run on the one-thread
//! pool's thread, so that the pair compares code, not threads (on a VM the main thread and a pool
//! thread may sit on vCPUs of different speed).
//!
//! Software GPUs (PoCL, llvmpipe, lavapipe) are measured up to 1 MiB only. The 1 GiB size is
//! opt-in: `B3ACCEL_BENCH_LARGE=1 cargo bench --bench hash`. OpenCL needs `--features opencl`.

use b3accel::spread::Spread;
use b3accel::{hash_on, xof_reader_with, Device, Mode};
use criterion::{criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;

/// Inputs larger than this are not given to software GPUs.
const SOFTWARE_GPU_MAX: usize = MIB;

/// The device lists spread inputs from this size (the library's default is 64 MiB).
const SPREAD_FROM: u64 = MIB as u64;

fn sizes() -> Vec<usize> {
    let mut s = vec![64, KIB, 16 * KIB, MIB, 64 * MIB];
    if std::env::var_os("B3ACCEL_BENCH_LARGE").is_some() {
        s.push(1024 * MIB);
    }
    s
}

fn label(size: usize) -> String {
    match size {
        s if s >= MIB => format!("{}MiB", s / MIB),
        s if s >= KIB => format!("{}KiB", s / KIB),
        s => format!("{s}B"),
    }
}

/// Hashes an input on a GPU from a buffer that already holds it; made per size, dropped after.
type Resident<'a> = Box<dyn Fn() -> b3accel::Result<blake3::Hash> + 'a>;

/// Puts an input in a buffer on a GPU: what hashes it there.
type Loader = Box<dyn for<'a> Fn(&'a [u8]) -> Result<Resident<'a>, String>>;

/// A GPU device (OpenCL device or wgpu adapter): its name, whether it runs in software on the
/// CPU, and how to load a buffer on it for the resident measurement.
struct Gpu {
    device: Device,
    software: bool,
    resident: Loader,
}

/// Every GPU device found, each opened (a device that does not open is left out, loudly).
fn gpus() -> Vec<Gpu> {
    let mut out = Vec::new();
    for info in b3accel::devices().into_iter().filter(|d| d.device != Device::Cpu) {
        if let Err(e) = b3accel::backend(info.device) {
            eprintln!("skipping {}: {e}", info.device);
            continue;
        }
        let resident = match resident_loader(info.device) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("skipping {}: {e}", info.device);
                continue;
            }
        };
        out.push(Gpu { device: info.device, software: info.is_software_gpu(), resident });
    }
    out
}

/// How to put an input in a buffer on `device` and hash it there.
fn resident_loader(device: Device) -> Result<Loader, String> {
    match device {
        #[cfg(feature = "opencl")]
        Device::OpenCl(i) => b3accel::opencl::OpenClBackend::open(i).map(loader).map_err(|e| e.to_string()),
        #[cfg(feature = "wgpu")]
        Device::Wgpu(i) => {
            b3accel::wgpu::WgpuBackend::open(i).map(|gpu| loader(gpu.resident().clone())).map_err(|e| e.to_string())
        }
        other => Err(format!("{other}: no resident path in this build")),
    }
}

/// Every GPU backend's resident path, through its `Resident` calls.
#[cfg(any(feature = "opencl", feature = "wgpu"))]
fn loader<R: b3accel::Resident + 'static>(gpu: R) -> Loader
where
    R::Buffer: 'static,
{
    let gpu = std::rc::Rc::new(gpu);
    Box::new(move |data: &[u8]| {
        let buf = gpu.upload(data).map_err(|e| e.to_string())?.value;
        let (gpu, len) = (gpu.clone(), data.len() as u64);
        Ok(Box::new(move || gpu.hash(&buf, 0..len, &Mode::Hash).map(|t| t.value)) as Resident<'_>)
    })
}

/// The device lists: `all`, and on a machine without a hardware GPU (where `all` is the CPU
/// alone) `every` device found. Their GPUs are open already, so they take part from the first
/// call.
fn lists(gpus: &[Gpu]) -> Vec<(String, Spread)> {
    let all = b3accel::spread::hardware_devices();
    let mut out = vec![("all".to_string(), all.clone())];
    if all.len() == 1 && !gpus.is_empty() {
        out.push(("every".to_string(), std::iter::once(Device::Cpu).chain(gpus.iter().map(|g| g.device)).collect()));
    }
    out.into_iter()
        .map(|(name, devices)| {
            eprintln!("{name}: {}", devices.iter().map(Device::to_string).collect::<Vec<_>>().join(" + "));
            (name, Spread::new(&devices).expect("the list's first device, the CPU, opens").with_min_bytes(SPREAD_FROM))
        })
        .collect()
}

/// Hashes `data` on `f` once, checks the hash against upstream's, and measures it.
fn bench(
    group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    size: usize,
    want: blake3::Hash,
    f: impl Fn() -> b3accel::Result<blake3::Hash>,
) {
    match f() {
        Ok(h) => assert_eq!(h, want, "{name} at {}", label(size)),
        Err(e) => {
            eprintln!("skipping {name} at {}: {e}", label(size));
            return;
        }
    }
    group.bench_function(BenchmarkId::new(name, label(size)), |b| b.iter(|| f().unwrap()));
}

fn every_device(c: &mut Criterion) {
    let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a one-thread pool");
    let gpus = gpus();
    let lists = lists(&gpus);
    for size in sizes() {
        let data: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        let want = blake3::hash(&data);
        let mut group = c.benchmark_group(format!("hash/{}", label(size)));
        group.throughput(Throughput::Bytes(size as u64));
        if size >= MIB {
            group.sample_size(10);
        }
        let id = |name: &str| BenchmarkId::new(name, label(size));
        group.bench_function(id("upstream-hash-1t"), |b| {
            one_thread.install(|| b.iter(|| blake3::hash(black_box(&data))))
        });
        group.bench_function(id("cpu-1t"), |b| {
            one_thread.install(|| b.iter(|| hash_on(Device::Cpu, black_box(&data)).unwrap()))
        });
        group.bench_function(id("upstream-update_rayon"), |b| {
            b.iter(|| blake3::Hasher::new().update_rayon(black_box(&data)).finalize())
        });
        bench(&mut group, "cpu", size, want, || hash_on(Device::Cpu, black_box(&data)));
        for g in gpus.iter().filter(|g| !g.software || size <= SOFTWARE_GPU_MAX) {
            bench(&mut group, &format!("{}-host", g.device), size, want, || hash_on(g.device, black_box(&data)));
            match (g.resident)(&data) {
                Ok(hash) => bench(&mut group, &format!("{}-resident", g.device), size, want, hash),
                Err(e) => eprintln!("skipping {}-resident at {}: {e}", g.device, label(size)),
            }
        }
        for (name, spread) in &lists {
            bench(&mut group, name, size, want, || {
                let mut out = [0u8; 32];
                xof_reader_with(spread, &Mode::Hash, black_box(&data))?.fill(&mut out);
                Ok(blake3::Hash::from_bytes(out))
            });
        }
        group.finish();
    }
}

criterion_group!(benches, every_device);
criterion_main!(benches);
