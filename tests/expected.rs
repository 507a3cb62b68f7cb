//! Everything `B3ACCEL_EXPECT` names is on this machine and works (see `src/core/expect.rs`):
//! CI lists what its machine has, so that a device, a shader variant or a SIMD level that goes
//! missing fails the run here, whatever the tests that use it do when they find it missing.

mod common;

use b3accel::cpu::{CpuBackend, SimdLevel};
use b3accel::{BackendKind, Device};
use common::expect;

#[test]
fn every_expected_item_is_here() {
    let items = expect::items();
    if expect::ci() {
        assert!(!items.is_empty(), "CI=true: {} must name what this machine has (.ci/run sets it)", expect::EXPECT_ENV);
    }
    if items.is_empty() {
        eprintln!("\n*** WARNING: {} is not set: nothing is expected, nothing checked ***\n", expect::EXPECT_ENV);
        return;
    }
    for item in &items {
        let (kind, arg) = item.split_once(':').unwrap_or((item.as_str(), ""));
        match kind {
            "simd" => {
                let level: SimdLevel = arg.parse().unwrap_or_else(|e| panic!("{item}: {e}"));
                let cpu = CpuBackend::with_level(level).unwrap_or_else(|e| panic!("{item}: {e}"));
                assert_eq!(cpu.level(), level);
                let data = common::pattern(100_000);
                let mut out = [0u8; 32];
                b3accel::xof_reader_with(&cpu, &b3accel::Mode::Hash, &data).unwrap().fill(&mut out);
                assert_eq!(out, *blake3::hash(&data).as_bytes(), "{item}");
            }
            "avx512vl" => assert!(has_x86(&["avx512f", "avx512vl"]), "{item}: this CPU lacks AVX-512 F or VL"),
            "rows" if arg == "avx512" => {
                assert!(has_x86(&["avx512f", "avx512vl", "avx512bw"]), "{item}: this CPU lacks AVX-512 F, VL or BW")
            }
            "opencl" => {
                let want: usize = arg.parse().unwrap_or_else(|_| panic!("{item}: not a count"));
                let found = common::device_indices(BackendKind::OpenCl);
                assert!(found.len() >= want, "{item}: {} OpenCL device(s) found", found.len());
                for i in found {
                    b3accel::backend(Device::OpenCl(i)).unwrap_or_else(|e| panic!("{item}: opencl:{i}: {e}"));
                }
            }
            "wgpu" => {
                // common::gpu_targets checks the APIs (check_expected) and opens every adapter.
                let targets = common::gpu_targets();
                assert!(
                    targets.iter().any(|t| t.backend.info().api.eq_ignore_ascii_case(arg)),
                    "{item}: no such adapter"
                );
            }
            "wgpu-staged" => staged_loads_open_everywhere(),
            _ => panic!("{}: unknown item {item:?}", expect::EXPECT_ENV),
        }
        eprintln!("expected and found: {item}");
    }
}

fn has_x86(features: &[&str]) -> bool {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        features.iter().all(|f| match *f {
            "avx512f" => std::is_x86_feature_detected!("avx512f"),
            "avx512vl" => std::is_x86_feature_detected!("avx512vl"),
            "avx512bw" => std::is_x86_feature_detected!("avx512bw"),
            _ => false,
        })
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
    {
        let _ = features;
        false
    }
}

#[cfg(feature = "wgpu")]
fn staged_loads_open_everywhere() {
    use b3accel::wgpu::{Loads, WgpuBackend, WgpuOptions};
    let adapters = common::device_indices(BackendKind::Wgpu);
    assert!(!adapters.is_empty(), "wgpu-staged: no wgpu adapter");
    let data = common::pattern((1 << 20) + 1025);
    for i in adapters {
        let gpu = WgpuBackend::open_with(i, WgpuOptions { loads: Loads::Staged, ..Default::default() })
            .unwrap_or_else(|e| panic!("wgpu-staged: wgpu:{i}: {e}"));
        let mut out = [0u8; 32];
        b3accel::xof_reader_with(&gpu, &b3accel::Mode::Hash, &data).unwrap().fill(&mut out);
        assert_eq!(out, *blake3::hash(&data).as_bytes(), "wgpu-staged: wgpu:{i}");
    }
}

#[cfg(not(feature = "wgpu"))]
fn staged_loads_open_everywhere() {
    panic!("wgpu-staged is expected, but this build has no wgpu backend");
}
