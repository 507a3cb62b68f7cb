//! What the integration tests share: the list of backends to test and the official input pattern.
#![allow(dead_code)]

pub mod cli;

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

/// Upstream's hasher for `mode`.
pub fn upstream_hasher(mode: &b3accel::Mode) -> blake3::Hasher {
    match mode {
        b3accel::Mode::Hash => blake3::Hasher::new(),
        b3accel::Mode::Keyed(k) => blake3::Hasher::new_keyed(k),
        b3accel::Mode::DeriveKey(c) => blake3::Hasher::new_derive_key(c),
    }
}

/// Upstream's chaining value (`blake3::hazmat`) of `data` as the subtree at byte `offset` of an
/// input, in `mode`.
pub fn upstream_cv(mode: &b3accel::Mode, offset: u64, data: &[u8]) -> [u8; 32] {
    use blake3::hazmat::HasherExt;
    let mut h = upstream_hasher(mode);
    h.set_input_offset(offset);
    h.update(data);
    h.finalize_non_root()
}

/// Runs `f` with the `hazmat::Mode` of `mode` (for key derivation, with its context hashed).
pub fn tree_mode<T>(mode: &b3accel::Mode, f: impl FnOnce(b3accel::hazmat::Mode) -> T) -> T {
    use b3accel::hazmat::{hash_derive_key_context, Mode as TreeMode};
    match mode {
        b3accel::Mode::Hash => f(TreeMode::Hash),
        b3accel::Mode::Keyed(key) => f(TreeMode::KeyedHash(key)),
        b3accel::Mode::DeriveKey(context) => f(TreeMode::DeriveKeyMaterial(&hash_derive_key_context(context))),
    }
}

/// Checks a device-resident subtree form (`subtree_cv` of a GPU backend) against upstream, in
/// all three modes: `whole(at, len, input_offset, mode)` hashes bytes `at..at + len` of a device
/// buffer that holds `data` (the whole input, of at least 3 MiB + 1234 bytes), `alone(piece,
/// input_offset, mode)` a buffer that holds only `piece`, at its start. Pieces at awkward offsets
/// and lengths, a cover of two pieces merged into the hash, and misuse refused with an error.
pub fn check_resident_subtrees(
    what: &str,
    data: &[u8],
    whole: impl Fn(u64, u64, u64, b3accel::hazmat::Mode) -> b3accel::Result<[u8; 32]>,
    alone: impl Fn(&[u8], u64, b3accel::hazmat::Mode) -> b3accel::Result<[u8; 32]>,
) {
    use b3accel::hazmat::{merge_pieces_root, Piece};
    let end = (3u64 << 20) + 1234;
    assert!(data.len() as u64 >= end);
    let data = &data[..end as usize];
    let modes = [
        b3accel::Mode::Hash,
        b3accel::Mode::Keyed(*b"whats the Elvish word for friend"),
        b3accel::Mode::DeriveKey("b3accel resident subtree tests 2026".into()),
    ];
    let k = 1024u64;
    let cases = [
        (0, k),
        (0, 2 * k),
        (0, 1 << 20),
        (0, 2 << 20),
        (k, 1),
        (k, k),
        (2 * k, 2 * k),
        (3 * k, 1000),
        (5 * k, k),
        (12 * k, 4 * k),
        (12 * k, 3333),
        (256 * k, 256 * k),
        (256 * k, 100_000),
        (1 << 20, 1 << 20),
        (2 << 20, end - (2 << 20)),
        (3 << 20, 1234),
    ];
    for mode in &modes {
        tree_mode(mode, |m| {
            for (offset, len) in cases {
                let want = upstream_cv(mode, offset, &data[offset as usize..(offset + len) as usize]);
                let got = whole(offset, len, offset, m).unwrap_or_else(|e| panic!("{what}: {len} at {offset}: {e}"));
                assert_eq!(got, want, "{what}: {len} bytes at {offset}, {mode:?}");
            }
            // A piece alone in its buffer, standing for bytes far into an input (chunk counters
            // past 2^32 included).
            let piece = &data[..5000];
            for input_offset in [8192u64, 1 << 30, 1 << 42, (1 << 45) + (1 << 13)] {
                let got =
                    alone(piece, input_offset, m).unwrap_or_else(|e| panic!("{what}: alone at {input_offset}: {e}"));
                assert_eq!(got, upstream_cv(mode, input_offset, piece), "{what}: alone at {input_offset}, {mode:?}");
            }
            // Two pieces of the buffer merged: the whole input's hash.
            let half = 2u64 << 20;
            let pieces = [
                Piece { offset: half, len: end - half, cv: whole(half, end - half, half, m).unwrap() },
                Piece { offset: 0, len: half, cv: whole(0, half, 0, m).unwrap() },
            ];
            let mut upstream = upstream_hasher(mode);
            upstream.update(data);
            assert_eq!(merge_pieces_root(&pieces, m).unwrap(), upstream.finalize(), "{what}: merged, {mode:?}");
        });
    }
    // Misuse: a piece that is not a subtree where it says it lies, bytes outside the buffer, a
    // start in the buffer the device cannot read from, an empty piece.
    let m = b3accel::hazmat::Mode::Hash;
    for (at, len, input_offset, why) in [
        (k, 2 * k, k, "longer than a subtree at chunk 1"),
        (0, 3 * k, 0, "3 chunks at offset 0"),
        (0, 100, 100, "an input offset off a chunk boundary"),
        (0, 0, k, "empty"),
        (3 << 20, 2 * k, 1 << 20, "past the buffer's end"),
        (100, 1, k, "a start in the buffer off the alignment"),
    ] {
        assert!(whole(at, len, input_offset, m).is_err(), "{what}: {why} must be refused");
    }
    assert!(alone(&data[..5000], 5 * k, m).is_err(), "{what}: 5000 bytes at chunk 5 must be refused");
}
