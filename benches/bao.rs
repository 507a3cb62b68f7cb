//! Bao outboards and verified decoding: b3accel's outboard on every backend against the `bao`
//! crate's encoder and bao-tree's `PreOrderMemOutboard::create` (both one thread by nature), and
//! b3accel's decoder against bao's, against a plain hash of the same input.
//!
//! ```text
//! cargo bench --bench bao                          # 1 MiB and 64 MiB
//! cargo bench --bench bao --features opencl,wgpu   # GPU devices too
//! ```
//!
//! Throughput is in content bytes. `cpu-1t` runs the CPU backend on one thread, `cpu` on the
//! global pool (`cpu-into` into a buffer kept from call to call: no fresh memory to fault in), `hash` is `b3accel::hash_with` on the global pool: the ceiling an outboard
//! (which keeps every parent) and a decode are measured against. The decoders: `b3accel` is
//! `decode_into` (an encoding in memory into a buffer), `b3accel-stream` is `decode` (a reader
//! into a writer, a window at a time).

use b3accel::bao::{decode, decode_into, encode_with, outboard_into, outboard_with, Order, Tree};
use b3accel::cpu::CpuBackend;
use b3accel::{backend, devices, hash_with, Backend, Device, DeviceKind, Mode};
use bao_tree::io::outboard::PreOrderMemOutboard;
use bao_tree::BlockSize;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use std::sync::Arc;

/// The GPU backends found.
fn gpus() -> Vec<(String, Arc<dyn Backend>)> {
    devices()
        .into_iter()
        .filter(|info| info.kind != DeviceKind::Cpu || info.backend != b3accel::BackendKind::Cpu)
        .filter_map(|info| backend(info.device).ok().map(|b| (info.device.to_string(), b)))
        .collect()
}

fn outboards(c: &mut Criterion) {
    let cpu = backend(Device::Cpu).unwrap();
    let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let single = CpuBackend::new();
    let gpus = gpus();
    for mib in [1usize, 64] {
        let data: Vec<u8> = (0..mib << 20).map(|i| (i % 251) as u8).collect();
        let mut g = c.benchmark_group(format!("bao-outboard/{mib}MiB"));
        g.throughput(Throughput::Bytes(data.len() as u64)).sample_size(10);
        g.bench_function("bao-crate", |b| b.iter(|| bao::encode::outboard(black_box(&data))));
        for k in [0u8, 4] {
            g.bench_function(BenchmarkId::new("bao-tree", k), |b| {
                b.iter(|| PreOrderMemOutboard::create(black_box(&data), BlockSize::from_chunk_log(k)))
            });
            g.bench_function(BenchmarkId::new("cpu-1t", k), |b| {
                b.iter(|| one_thread.install(|| outboard_with(&single, black_box(&data), k, Order::Pre).unwrap()))
            });
            g.bench_function(BenchmarkId::new("cpu", k), |b| {
                b.iter(|| outboard_with(&*cpu, black_box(&data), k, Order::Pre).unwrap())
            });
            let mut parents = vec![0u8; Tree::new(data.len() as u64, k).unwrap().outboard_len() as usize];
            g.bench_function(BenchmarkId::new("cpu-into", k), |b| {
                b.iter(|| outboard_into(&*cpu, black_box(&data), k, Order::Pre, &mut parents).unwrap())
            });
            for (name, gpu) in &gpus {
                g.bench_function(BenchmarkId::new(name.as_str(), k), |b| {
                    b.iter(|| outboard_with(&**gpu, black_box(&data), k, Order::Pre).unwrap())
                });
            }
        }
        g.bench_function("hash", |b| b.iter(|| hash_with(&*cpu, &Mode::Hash, black_box(&data)).unwrap()));
        g.finish();

        let mut g = c.benchmark_group(format!("bao-decode/{mib}MiB"));
        g.throughput(Throughput::Bytes(data.len() as u64)).sample_size(10);
        let (encoded, hash) = encode_with(&*cpu, &data, 0).unwrap();
        let mut out = Vec::with_capacity(data.len());
        let mut whole = vec![0u8; data.len()];
        g.bench_function("bao-crate", |b| b.iter(|| bao::decode::decode(black_box(&encoded), &hash).unwrap()));
        g.bench_function("b3accel", |b| b.iter(|| decode_into(black_box(&encoded), &hash, 0, &mut whole).unwrap()));
        g.bench_function("b3accel-stream", |b| {
            b.iter(|| {
                out.clear();
                decode(black_box(&encoded[..]), &hash, 0, &mut out).unwrap()
            })
        });
        g.bench_function("hash", |b| b.iter(|| hash_with(&*cpu, &Mode::Hash, black_box(&data)).unwrap()));
        g.finish();
    }
}

criterion_group!(benches, outboards);
criterion_main!(benches);
