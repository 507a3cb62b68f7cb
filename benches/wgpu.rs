//! The wgpu backend against upstream `blake3` (`update_rayon`), by input size: device-resident
//! buffers (1 MiB, 64 MiB, 1 GiB) and host memory (64 MiB, 1 GiB, end to end).
//!
//! ```text
//! cargo bench --bench wgpu                 # first non-software adapter, else adapter 0
//! B3ACCEL_WGPU=1 cargo bench --bench wgpu  # adapter 1
//! ```
//! On a software adapter (llvmpipe, lavapipe) the sizes shrink 64-fold (resident: 1 and 16 MiB).
//! For upload / kernel / download apart, see `benches/probes/wgpu_report.rs`.

use b3accel::wgpu::WgpuBackend;
use b3accel::{xof_reader_with, Backend, BackendKind, Mode, Resident};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;

fn adapter() -> Option<usize> {
    if let Some(i) = std::env::var("B3ACCEL_WGPU").ok().and_then(|v| v.parse().ok()) {
        return Some(i);
    }
    let wgpu: Vec<_> = b3accel::devices().into_iter().filter(|d| d.backend == BackendKind::Wgpu).collect();
    if wgpu.is_empty() {
        eprintln!("no wgpu adapter: nothing to benchmark");
        return None;
    }
    Some(wgpu.iter().position(|d| !d.is_software_gpu()).unwrap_or(0))
}

fn bench(c: &mut Criterion) {
    let Some(index) = adapter() else { return };
    let gpu = WgpuBackend::open(index).expect("open the adapter");
    let scale = if gpu.info().is_software_gpu() { 64 } else { 1 };
    let label = format!("wgpu:{index} {}", gpu.info().name);
    let max = (1usize << 30) / scale;
    let data: Vec<u8> = (0..max).map(|i| (i % 251) as u8).collect();

    let buf = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("bench input"),
        size: max as u64,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    gpu.queue().write_buffer(&buf, 0, &data);
    let mut g = c.benchmark_group(format!("resident/{label}"));
    g.sample_size(20).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    // On a software adapter 64 MiB shrinks to 1 MiB: measure each size once (criterion refuses a
    // benchmark ID twice).
    let mut sizes = vec![1usize << 20, (64 << 20) / scale, max];
    sizes.dedup();
    for len in sizes {
        let want = blake3::hash(&data[..len]);
        assert_eq!(gpu.resident().hash(&buf, 0..len as u64, &Mode::Hash).unwrap().value, want);
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_function(format!("{} MiB", len >> 20), |b| {
            b.iter(|| gpu.resident().hash(&buf, 0..black_box(len as u64), &Mode::Hash).unwrap().value)
        });
    }
    g.finish();
    drop(buf);

    let mut g = c.benchmark_group(format!("host/{label}"));
    g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    for len in [(64usize << 20) / scale, max] {
        let input = &data[..len];
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_function(format!("wgpu {} MiB", len >> 20), |b| {
            b.iter(|| {
                let mut out = [0u8; 32];
                xof_reader_with(&gpu, &Mode::Hash, black_box(input)).unwrap().fill(&mut out);
                out
            })
        });
        g.bench_function(format!("blake3 update_rayon {} MiB", len >> 20), |b| {
            b.iter(|| blake3::Hasher::new().update_rayon(black_box(input)).finalize())
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
