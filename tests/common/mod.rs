//! What the integration tests share: the list of backends to test, test inputs, scratch
//! directories, upstream's answers (hashes in every mode, Merkle trees by their definition) and
//! where upstream `b3sum` is. The command line's tests (cli/tests/cli/) include this file too.
#![allow(dead_code)]

use b3accel::cpu::{CpuBackend, Kernel, SimdLevel};
use b3accel::{Backend, BackendKind, Device, DeviceInfo, Mode};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// What this machine is expected to have (`B3ACCEL_EXPECT`): the crate's own unit tests use the
/// same file.
#[path = "../../src/core/expect.rs"]
pub mod expect;
pub mod fuzz;
pub mod oracle;

/// The official test vectors' input: byte i is i % 251.
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// Deterministic pseudo-random bytes (xorshift from `seed`).
pub fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// A scratch directory in the temporary directory, named after the test process, a number of its
/// own and `name` (so that tests running at once never share one), removed when dropped.
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        static MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("b3accel-test-{}-{n}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `data` to `name` (its directories made first); returns the path.
    pub fn write(&self, name: impl AsRef<Path>, data: &[u8]) -> PathBuf {
        let p = self.0.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, data).unwrap();
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Upstream's hasher for `mode`.
pub fn upstream_hasher(mode: &Mode) -> blake3::Hasher {
    match mode {
        Mode::Hash => blake3::Hasher::new(),
        Mode::Keyed(k) => blake3::Hasher::new_keyed(k),
        Mode::DeriveKey(c) => blake3::Hasher::new_derive_key(c),
    }
}

/// Upstream's output stream of `data` in `mode`: `len` bytes from byte `seek`.
pub fn upstream_xof(mode: &Mode, data: &[u8], seek: u64, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    let mut reader = upstream_hasher(mode).update(data).finalize_xof();
    reader.set_position(seek);
    reader.fill(&mut out);
    out
}

/// Every level of the binary Merkle tree over `leaves` by its definition, leaves first, root
/// last: each parent `blake3(left || right)` (upstream's hash), an odd last node carried up
/// unchanged. Levels are computed on all cores.
pub fn merkle_levels(leaves: &[[u8; 32]]) -> Vec<Vec<[u8; 32]>> {
    use rayon::prelude::*;
    let mut levels = vec![leaves.to_vec()];
    while levels.last().is_some_and(|l| l.len() > 1) {
        let next = levels
            .last()
            .unwrap()
            .par_chunks(2)
            .map(|p| match p {
                [l, r] => *blake3::hash(&[*l, *r].concat()).as_bytes(),
                [one] => *one,
                _ => unreachable!(),
            })
            .collect();
        levels.push(next);
    }
    levels
}

/// The Merkle root of `leaves` by its definition (see [`merkle_levels`]).
pub fn merkle_root(leaves: &[[u8; 32]]) -> [u8; 32] {
    merkle_levels(leaves).last().expect("at least one leaf")[0]
}

/// Runs `cmd` (stdin, stdout and stderr are piped here) with `stdin` on its standard input and
/// returns what it wrote; a failure if it runs longer than `limit`.
pub fn run_with_input(
    mut cmd: std::process::Command,
    stdin: &[u8],
    limit: std::time::Duration,
) -> std::process::Output {
    use std::io::{Read, Write};
    use std::process::Stdio;
    let mut child = cmd
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    // The program may exit without reading everything.
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    let read_all = |stream: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut s) = stream {
                let _ = s.read_to_end(&mut v);
            }
            v
        })
    };
    let out = read_all(child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let err = read_all(child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("{cmd:?} timed out after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    let _ = writer.join();
    std::process::Output { status, stdout: out.join().unwrap(), stderr: err.join().unwrap() }
}

fn is_modern_b3sum(path: &Path) -> bool {
    let Ok(out) = std::process::Command::new(path).arg("--version").output() else {
        return false;
    };
    let version = String::from_utf8_lossy(&out.stdout);
    let Some(v) = version.trim().strip_prefix("b3sum ") else {
        return false;
    };
    let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (1, 8)
}

/// Upstream b3sum 1.8 or later, if this machine has one: the `B3SUM` environment variable, then
/// /opt/b3sum/bin/b3sum, then PATH.
pub fn b3sum() -> Option<&'static Path> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let mut candidates = Vec::new();
            if let Some(p) = std::env::var_os("B3SUM") {
                candidates.push(PathBuf::from(p));
            }
            candidates.push(PathBuf::from("/opt/b3sum/bin/b3sum"));
            if let Some(path) = std::env::var_os("PATH") {
                candidates.extend(std::env::split_paths(&path).map(|d| d.join("b3sum")));
            }
            candidates.into_iter().find(|p| p.is_file() && is_modern_b3sum(p))
        })
        .as_deref()
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
    for item in expect::items() {
        if let Some(level) = item.strip_prefix("simd:") {
            let level: SimdLevel = level.parse().unwrap_or_else(|e| panic!("{}: {item}: {e}", expect::EXPECT_ENV));
            assert!(
                level.is_supported(),
                "{} expects the CPU backend at {level}, which this CPU lacks",
                expect::EXPECT_ENV
            );
        }
    }
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

/// Every GPU device found by the backends compiled in (see [`targets`] for the no-device rule;
/// [`check_expected`] holds too).
pub fn gpu_targets() -> Vec<Target> {
    let ci = expect::ci();
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
        check_expected(status.backend, &devices);
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
    let ci = expect::ci();
    let Some(status) = b3accel::backend_status().into_iter().find(|s| s.backend == backend) else {
        expect_none(backend);
        return Vec::new();
    };
    if let Ok(d) = &status.devices {
        check_expected(backend, d);
    }
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
    check_expected(backend, &[]);
    expect::not_run(&format!("{msg}: its tests did NOT run (the harness counts them as passed)"));
}

/// Fails where `B3ACCEL_EXPECT` names devices of `backend` that `listed` lacks: fewer OpenCL
/// devices than `opencl:<n>`, no wgpu adapter of an API that `wgpu:<api>` names (an adapter that
/// failed to open is not listed, so it is missing here too).
pub fn check_expected(backend: BackendKind, listed: &[DeviceInfo]) {
    match backend {
        BackendKind::OpenCl => {
            let want = expect::expected_count("opencl");
            assert!(
                listed.len() >= want,
                "{} expects {want} OpenCL device(s), {} listed: {:?}",
                expect::EXPECT_ENV,
                listed.len(),
                listed.iter().map(|d| &d.name).collect::<Vec<_>>()
            );
        }
        BackendKind::Wgpu => {
            for item in expect::items() {
                let Some(api) = item.strip_prefix("wgpu:") else { continue };
                assert!(
                    listed.iter().any(|d| d.api.eq_ignore_ascii_case(api)),
                    "{} expects a wgpu adapter of the {api} API, listed: {:?}",
                    expect::EXPECT_ENV,
                    listed.iter().map(|d| format!("{} ({})", d.name, d.api)).collect::<Vec<_>>()
                );
            }
        }
        // The CPU backend and backends registered at run time: `B3ACCEL_EXPECT` names none.
        _ => {}
    }
}

/// Fails where `B3ACCEL_EXPECT` names devices of a backend this build does not have.
fn expect_none(backend: BackendKind) {
    let named = expect::items().into_iter().any(|i| i.starts_with(&format!("{backend}:")));
    assert!(!named, "{} expects {backend} devices, but this build has no {backend} backend", expect::EXPECT_ENV);
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

/// Upstream's chaining values (through `blake3::hazmat`) of the complete subtrees that `data`, a
/// whole number of chunks starting at chunk `first_chunk`, forms when none may be larger than
/// `max_chunks`: what `Backend::chunk_subtrees_capped` must return, from the oracle rather than
/// from another backend of this crate. `key`/`flags` as the backends take them (the IV and 0,
/// key words and `KEYED_HASH`, or context-key words and `DERIVE_KEY_MATERIAL`).
///
/// Upstream takes input offsets in bytes (a u64), so chunk counters from 2^54 on are beyond it:
/// there the CPU backend (checked against upstream below 2^54 by tests/differential.rs) is the
/// reference.
pub fn upstream_subtrees(data: &[u8], first_chunk: u64, max_chunks: u64, key: &[u32; 8], flags: u32) -> Vec<[u8; 32]> {
    use blake3::hazmat::HasherExt;
    let n = (data.len() / b3accel::CHUNK_LEN) as u64;
    if first_chunk.checked_add(n).and_then(|end| end.checked_mul(1024)).is_none() {
        let mut out = vec![[0u8; 32]; b3accel::subtree_count(n, max_chunks)];
        CpuBackend::new().chunk_subtrees_capped(data, first_chunk, max_chunks, key, flags, &mut out).unwrap();
        return out;
    }
    let mut key_bytes = [0u8; 32];
    for (b, w) in key_bytes.chunks_exact_mut(4).zip(key) {
        b.copy_from_slice(&w.to_le_bytes());
    }
    let base = match flags {
        0 => blake3::Hasher::new(),
        f if f == b3accel::flags::KEYED_HASH => blake3::Hasher::new_keyed(&key_bytes),
        f if f == b3accel::flags::DERIVE_KEY_MATERIAL => blake3::Hasher::new_from_context_key(&key_bytes),
        f => panic!("no upstream mode has flags {f}"),
    };
    let sizes = std::iter::repeat_n(max_chunks, (n / max_chunks) as usize)
        .chain((0..64).rev().map(|b| 1u64 << b).filter(|b| (n % max_chunks) & b != 0));
    let mut at = 0u64;
    sizes
        .map(|size| {
            let bytes = &data[(at * 1024) as usize..((at + size) * 1024) as usize];
            let cv = base.clone().set_input_offset((first_chunk + at) * 1024).update(bytes).finalize_non_root();
            at += size;
            cv
        })
        .collect()
}
