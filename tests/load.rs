//! Load: 32 threads hashing inputs of mixed sizes in all modes on every device at once (the CPU,
//! Auto and each GPU, shared by all threads), every result checked against upstream `blake3`,
//! while the process's resident memory is sampled: it must not grow across the run.
//!
//! Ignored in CI (it runs for a minute); run it on the GPU machine with
//! `B3ACCEL_LOAD_SECONDS=60 cargo test --release --all-features --test load -- --ignored --nocapture`
//! (`B3ACCEL_LOAD_SECONDS` defaults to 60, `B3ACCEL_LOAD_THREADS` to 32;
//! `B3ACCEL_LOAD_DEVICES=cpu,opencl:0` narrows the run to those devices).

mod common;

use b3accel::{Backend, Device, Hasher, Mode};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Resident memory of this process in bytes, from /proc/self/statm.
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm (Linux)");
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).expect("statm's resident field");
    // SAFETY: sysconf takes an integer and returns one.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64
}

fn upstream(mode: &Mode, data: &[u8]) -> [u8; 40] {
    common::upstream_xof(mode, data, 0, 40).try_into().unwrap()
}

/// A small fast generator for each thread's choices.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// An input length: mostly small (one block to a few chunks), some medium, a few large (up to
/// 48 MiB, past Auto's 4 MiB threshold and the GPUs' batch sizes).
fn length(rng: &mut Rng) -> usize {
    match rng.below(100) {
        0..=59 => rng.below(4097) as usize,
        60..=89 => rng.below(1 << 20) as usize,
        _ => rng.below(48 << 20) as usize,
    }
}

#[test]
#[ignore = "a minute of load on every device; run on the GPU machine (see the file's introduction)"]
fn every_device_under_load_from_many_threads() {
    let seconds = env_u64("B3ACCEL_LOAD_SECONDS", 60);
    let threads = env_u64("B3ACCEL_LOAD_THREADS", 32) as usize;
    let mut devices = vec![Device::Cpu, Device::Auto];
    for status in b3accel::backend_status() {
        for i in common::device_indices(status.backend) {
            devices.push(if status.backend == b3accel::BackendKind::OpenCl {
                Device::OpenCl(i)
            } else {
                Device::Wgpu(i)
            });
        }
    }
    // `B3ACCEL_LOAD_DEVICES=cpu,wgpu:0` narrows the run to some devices (to find which grows).
    if let Ok(list) = std::env::var("B3ACCEL_LOAD_DEVICES") {
        let only: Vec<Device> = list.split(',').map(|d| d.parse().unwrap_or_else(|e| panic!("{d}: {e}"))).collect();
        devices.retain(|d| only.contains(d));
        assert!(!devices.is_empty(), "B3ACCEL_LOAD_DEVICES={list} names no device of this machine");
    }
    let backends: Vec<Arc<dyn Backend>> = devices.iter().map(|&d| b3accel::backend(d).unwrap()).collect();
    let data: Arc<Vec<u8>> = Arc::new(common::pattern(64 << 20));
    let modes =
        [Mode::Hash, Mode::Keyed(*b"load test key, 32 bytes exactly!"), Mode::DeriveKey("b3accel load 2026".into())];
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (backends, devices, data, modes) = (backends.clone(), devices.clone(), data.clone(), modes.clone());
            let (stop, done, bytes) = (stop.clone(), done.clone(), bytes.clone());
            std::thread::spawn(move || {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1).wrapping_mul(0x1234_5678_9ABC_DEF1));
                while !stop.load(Ordering::Relaxed) {
                    let d = rng.below(backends.len() as u64) as usize;
                    let mode = &modes[rng.below(3) as usize];
                    let len = length(&mut rng);
                    let at = rng.below((data.len() - len + 1) as u64) as usize;
                    let input = &data[at..at + len];
                    let mut got = [0u8; 40];
                    if rng.below(4) == 0 {
                        // The incremental hasher, in uneven pieces.
                        let mut h = Hasher::with_backend(backends[d].clone(), mode);
                        for piece in input.chunks(1 + rng.below(3 << 20) as usize) {
                            h.update(piece).unwrap_or_else(|e| panic!("{}: {e}", devices[d]));
                        }
                        h.finalize_xof().unwrap().fill(&mut got);
                    } else {
                        b3accel::xof_reader_with(&*backends[d], mode, input)
                            .unwrap_or_else(|e| panic!("{}: {len} bytes: {e}", devices[d]))
                            .fill(&mut got);
                    }
                    assert_eq!(got, upstream(mode, input), "{}: {len} bytes at {at}, {mode:?}", devices[d]);
                    done.fetch_add(1, Ordering::Relaxed);
                    bytes.fetch_add(len as u64, Ordering::Relaxed);
                }
            })
        })
        .collect();
    // Resident memory once a second; the workers stop when the time is up.
    let mut samples = Vec::new();
    while start.elapsed() < Duration::from_secs(seconds) && workers.iter().all(|w| !w.is_finished()) {
        std::thread::sleep(Duration::from_secs(1));
        samples.push(rss());
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().expect("a worker failed (its message is above)");
    }
    let n = samples.len();
    assert!(n >= 6, "the run was too short to judge memory ({n} samples)");
    // After the first third (warm-up: pools, pipelines, buffers), memory must stay flat: the last
    // third may not exceed the middle third's peak by more than 10% + 64 MiB.
    let middle = *samples[n / 3..2 * n / 3].iter().max().unwrap();
    let last = *samples[2 * n / 3..].iter().max().unwrap();
    let mib = |b: u64| b >> 20;
    eprintln!(
        "load: {} hashes, {} MiB, {threads} threads on {:?} for {:.0} s; RSS (MiB) {:?}",
        done.load(Ordering::Relaxed),
        mib(bytes.load(Ordering::Relaxed)),
        devices,
        start.elapsed().as_secs_f64(),
        samples.iter().map(|&s| mib(s)).collect::<Vec<_>>()
    );
    assert!(
        last <= middle + middle / 10 + (64 << 20),
        "resident memory grew across the run: {} MiB at most in the middle third, {} MiB in the last",
        mib(middle),
        mib(last)
    );
}
