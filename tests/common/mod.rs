//! What the integration tests share: the list of backends to test and the official input pattern.
#![allow(dead_code)]

use b3accel::cpu::{CpuBackend, Kernel};
use b3accel::{Backend, BackendKind, Device};
use std::sync::Arc;

/// The official test vectors' input: byte i is i % 251.
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// A backend under test, with a name for failure messages.
pub struct Target {
    pub name: String,
    pub backend: Arc<dyn Backend>,
}

/// Every backend this build can test on this machine: the CPU backend on every kernel the CPU
/// supports (the crate's own at each SIMD level, then upstream's, `cpu/upstream`: what runs where
/// the crate has no SIMD, e.g. on aarch64), then every OpenCL device and wgpu adapter found. A
/// GPU backend that was built but finds no device is reported loudly, and under `CI=true` fails
/// the test run: CI must run every backend for real, never skip one.
pub fn targets() -> Vec<Target> {
    let mut out: Vec<Target> = cpu_targets();
    out.extend(gpu_targets());
    out
}

/// The CPU backend on every kernel this CPU supports (see [`targets`]).
pub fn cpu_targets() -> Vec<Target> {
    let kernels = Kernel::supported();
    assert!(kernels.contains(&Kernel::Upstream), "upstream's kernel runs everywhere");
    kernels
        .into_iter()
        .map(|kernel| Target {
            name: format!("cpu/{kernel}"),
            backend: Arc::new(CpuBackend::with_kernel(kernel).expect("supported kernel")),
        })
        .collect()
}

/// Every GPU device found by the backends compiled in (see [`targets`] for the no-device rule).
pub fn gpu_targets() -> Vec<Target> {
    let ci = std::env::var("CI").map(|v| v == "true" || v == "1").unwrap_or(false);
    let mut out = Vec::new();
    for status in b3accel::backend_status() {
        let devices = match status.devices {
            Ok(d) if !d.is_empty() => d,
            Ok(_) => {
                no_device(ci, status.backend, "no device found");
                continue;
            }
            Err(e) => {
                no_device(ci, status.backend, &e.to_string());
                continue;
            }
        };
        for info in devices {
            let backend = b3accel::backend(info.device)
                .unwrap_or_else(|e| panic!("{} ({}) is listed but does not open: {e}", info.device, info.name));
            out.push(Target { name: format!("{} ({})", info.device, info.name), backend });
        }
    }
    out
}

/// The index N of every device of one GPU backend (`opencl:N`, `wgpu:N`), opening none of them;
/// the no-device rule of [`targets`] applies (loud, and a failure under `CI=true`). Empty where the
/// backend is not built.
pub fn device_indices(backend: BackendKind) -> Vec<usize> {
    let ci = std::env::var("CI").map(|v| v == "true" || v == "1").unwrap_or(false);
    let Some(status) = b3accel::backend_status().into_iter().find(|s| s.backend == backend) else {
        return Vec::new();
    };
    match status.devices {
        Ok(d) if !d.is_empty() => d
            .iter()
            .map(|info| match info.device {
                Device::OpenCl(i) | Device::Wgpu(i) => i,
                other => panic!("{other} listed as a {backend} device"),
            })
            .collect(),
        Ok(_) => {
            no_device(ci, backend, "no device found");
            Vec::new()
        }
        Err(e) => {
            no_device(ci, backend, &e.to_string());
            Vec::new()
        }
    }
}

fn no_device(ci: bool, backend: BackendKind, why: &str) {
    let msg = format!("the {backend} backend is built but has no device: {why}");
    if ci {
        panic!("{msg} (CI=true: a built backend must run, not be skipped)");
    }
    eprintln!("\n*** WARNING: {msg}. Its tests did NOT run. ***\n");
}

/// One test at a time, for the test files whose tests open GPU devices (the guard is held for the
/// whole test). On the NVIDIA Vulkan driver (580.159.04, H200) the wgpu tests run in parallel hung
/// in 5 of 10 runs of `wgpu_merkle` and in 1 of 4 of `wgpu`: tests that open and drop devices of
/// their own while others poll theirs, with threads asleep on the driver's priority-inheritance
/// mutexes and one spinning. Run one at a time: 0 of 10. Each test still opens its own device, and
/// `sixteen_threads_on_one_adapter` still hashes from sixteen threads at once.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}
