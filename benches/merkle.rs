//! Merkle roots and batches of small messages on every backend, against loops of upstream
//! `blake3::hash`.
//!
//! ```text
//! cargo bench --bench merkle                          # 2^10 .. 2^20 leaves
//! B3ACCEL_BENCH_LARGE=1 cargo bench --bench merkle    # and 2^22, 2^25 leaves (1 GiB of leaves)
//! cargo bench --bench merkle --features opencl,wgpu   # GPU devices too
//! ```
//!
//! Each group has the upstream loop (`upstream-loop`, one thread by nature), the CPU backend on
//! one thread (`cpu-1t`: the figure to compare with the loop), the CPU backend on the global
//! thread pool (`cpu`), and every GPU device found (`opencl:0`, `wgpu:1`, ...). Throughput is in
//! elements: parent hashes for Merkle roots, messages for `hash_many`.

use b3accel::{backend, devices, merkle, Backend, DeviceKind};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand::{Rng, SeedableRng};
use std::hint::black_box;
use std::sync::Arc;

type Node = [u8; 32];

/// The peer: a loop of upstream `blake3::hash` over pairs, level by level, the odd last node
/// carried up (the same tree as `b3accel::merkle_root`).
fn upstream_root(leaves: &[Node]) -> Node {
    let mut cur: Vec<Node> = leaves.to_vec();
    let mut block = [0u8; 64];
    while cur.len() > 1 {
        let mut next = Vec::with_capacity(cur.len().div_ceil(2));
        for pair in cur.chunks(2) {
            if let [l, r] = pair {
                block[..32].copy_from_slice(l);
                block[32..].copy_from_slice(r);
                next.push(*blake3::hash(&block).as_bytes());
            } else {
                next.push(pair[0]);
            }
        }
        cur = next;
    }
    cur[0]
}

/// Leaf counts: 2^10 to 2^20 by default, 2^22 and 2^25 as well with `B3ACCEL_BENCH_LARGE=1`.
fn exponents() -> Vec<u32> {
    let mut e = vec![10, 12, 14, 16, 18, 20];
    if std::env::var("B3ACCEL_BENCH_LARGE").is_ok_and(|v| v == "1") {
        e.extend([22, 25]);
    }
    e
}

/// The backends to measure: the CPU backend, then every GPU device found.
fn targets() -> Vec<(String, Arc<dyn Backend>)> {
    let mut out = Vec::new();
    for info in devices() {
        if info.kind == DeviceKind::Cpu && info.backend != b3accel::BackendKind::Cpu {
            // Software GPU drivers (PoCL, llvmpipe) are measured too, but named as such.
            eprintln!("note: {} ({}) is a software GPU", info.device, info.name);
        }
        match backend(info.device) {
            Ok(b) => out.push((info.device.to_string(), b)),
            Err(e) => eprintln!("skipping {}: {e}", info.device),
        }
    }
    out
}

fn one_thread_pool() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a one-thread pool")
}

fn random_bytes(len: usize) -> Vec<u8> {
    let mut data = vec![0u8; len];
    rand::rngs::StdRng::seed_from_u64(len as u64).fill(&mut data[..]);
    data
}

fn merkle_roots(c: &mut Criterion) {
    let targets = targets();
    let single = one_thread_pool();
    let mut group = c.benchmark_group("merkle_root");
    group.sample_size(10);
    for k in exponents() {
        let n = 1usize << k;
        let bytes = random_bytes(32 * n);
        let leaves: Vec<Node> = bytes.as_chunks::<32>().0.to_vec();
        drop(bytes);
        let expected = upstream_root(&leaves);
        group.throughput(Throughput::Elements(n as u64 - 1));
        group.bench_with_input(BenchmarkId::new("upstream-loop", n), &leaves, |b, l| {
            b.iter(|| upstream_root(black_box(l)))
        });
        for (name, be) in &targets {
            let root = merkle::merkle_root_with(&**be, &leaves).expect("merkle root");
            assert_eq!(root.as_bytes(), &expected, "{name}: root of 2^{k} leaves");
            if name == "cpu" {
                group.bench_with_input(BenchmarkId::new("cpu-1t", n), &leaves, |b, l| {
                    single.install(|| b.iter(|| be.merkle(black_box(l), None).unwrap()))
                });
            }
            group.bench_with_input(BenchmarkId::new(name.as_str(), n), &leaves, |b, l| {
                b.iter(|| be.merkle(black_box(l), None).unwrap())
            });
        }
    }
    group.finish();
}

fn hash_many(c: &mut Criterion) {
    let targets = targets();
    let single = one_thread_pool();
    let mut group = c.benchmark_group("hash_many");
    group.sample_size(10);
    for (msg_len, count) in [(64usize, 1usize << 16), (1024, 1 << 14)] {
        let data = random_bytes(msg_len * count);
        group.throughput(Throughput::Elements(count as u64));
        let id = |name: &str| BenchmarkId::new(name, format!("{count}x{msg_len}B"));
        group.bench_with_input(id("upstream-loop"), &data, |b, d| {
            b.iter(|| d.chunks_exact(msg_len).map(|m| blake3::hash(black_box(m))).collect::<Vec<_>>())
        });
        let mut out = vec![[0u8; 32]; count];
        for (name, be) in &targets {
            be.hash_many(&data, msg_len, &b3accel::IV, 0, &mut out).expect("hash_many");
            assert_eq!(out[count - 1], *blake3::hash(&data[data.len() - msg_len..]).as_bytes());
            if name == "cpu" {
                group.bench_with_input(id("cpu-1t"), &data, |b, d| {
                    single.install(|| b.iter(|| be.hash_many(black_box(d), msg_len, &b3accel::IV, 0, &mut out)))
                });
            }
            group.bench_with_input(id(name), &data, |b, d| {
                b.iter(|| be.hash_many(black_box(d), msg_len, &b3accel::IV, 0, &mut out))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, merkle_roots, hash_many);
criterion_main!(benches);
