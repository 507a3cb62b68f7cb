//! The CPU backend against upstream `blake3`, by input size.
//!
//! For each size, four functions: upstream `blake3::hash` (one thread), `b3accel` on one thread
//! (inside a one-thread rayon pool, so the backend takes its no-pool path), upstream
//! `Hasher::update_rayon` (all threads) and `b3accel` on all threads. Both one-thread functions
//! run on the one-thread pool's thread, so that the pair compares code, not threads (on a VM the
//! main thread and a pool thread may sit on vCPUs of different speed). The 1 GiB size is opt-in:
//! `B3ACCEL_BENCH_LARGE=1 cargo bench --bench hash`.

use b3accel::{hash_on, Device};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;

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

fn cpu(c: &mut Criterion) {
    let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a one-thread pool");
    let mut group = c.benchmark_group("cpu");
    for size in sizes() {
        let data: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        group.throughput(Throughput::Bytes(size as u64));
        if size >= 64 * MIB {
            group.sample_size(10);
        }
        let id = |name: &str| BenchmarkId::new(name, label(size));
        group.bench_function(id("upstream-hash-1t"), |b| {
            one_thread.install(|| b.iter(|| blake3::hash(black_box(&data))))
        });
        group.bench_function(id("b3accel-cpu-1t"), |b| {
            one_thread.install(|| b.iter(|| hash_on(Device::Cpu, black_box(&data)).unwrap()))
        });
        group.bench_function(id("upstream-update_rayon"), |b| {
            b.iter(|| blake3::Hasher::new().update_rayon(black_box(&data)).finalize())
        });
        group.bench_function(id("b3accel-cpu"), |b| b.iter(|| hash_on(Device::Cpu, black_box(&data)).unwrap()));
    }
    group.finish();
}

criterion_group!(benches, cpu);
criterion_main!(benches);
