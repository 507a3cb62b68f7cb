//! Throughput report for the wgpu backend on one adapter: device-resident inputs at 1 MiB, 64 MiB
//! and 1 GiB, the shader variants (direct vs staged loads, bounds-checked vs trusted modules),
//! host-resident 1 GiB end to end with upload / kernel / download apart, and a 5 GiB host input
//! checked against upstream `blake3::Hasher::update_rayon`. Every hash is checked.
//!
//! ```text
//! cargo run --release --example wgpu_report [ADAPTER_INDEX] [--quick]
//! ```
//! Without an index: the first adapter that is not a software one (else adapter 0).
//! `--quick` shrinks every size 64-fold (for software adapters).

use b3accel::wgpu::{Loads, ResidentHasher, ShaderChecks, WgpuBackend, WgpuOptions};
use b3accel::{Backend, BackendKind, Mode, Timings};
use rayon::prelude::*;
use std::time::{Duration, Instant};

fn pattern(len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    v.par_chunks_mut(1 << 20).enumerate().for_each(|(c, chunk)| {
        for (j, b) in chunk.iter_mut().enumerate() {
            let i = (c << 20) + j;
            *b = (i % 251) as u8 ^ (i >> 20) as u8;
        }
    });
    v
}

fn upstream(data: &[u8]) -> blake3::Hash {
    let mut h = blake3::Hasher::new();
    h.update_rayon(data);
    h.finalize()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn rate(bytes: u64, d: Duration) -> String {
    let gbs = bytes as f64 / d.as_secs_f64() / 1e9;
    if gbs >= 1000.0 {
        format!("{:.3} TB/s", gbs / 1000.0)
    } else {
        format!("{gbs:.1} GB/s")
    }
}

fn upload(gpu: &WgpuBackend, data: &[u8]) -> wgpu::Buffer {
    let buf = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("report input"),
        size: data.len() as u64,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    for (i, part) in data.chunks(256 << 20).enumerate() {
        gpu.queue().write_buffer(&buf, (i as u64) << 28, part);
        gpu.queue().submit([]);
    }
    buf
}

/// Median wall time and median kernel time (timestamps) of `reps` resident hashes.
fn resident(r: &ResidentHasher, buf: &wgpu::Buffer, len: u64, want: blake3::Hash, reps: usize) -> (Duration, Duration) {
    for _ in 0..3 {
        assert_eq!(r.hash(buf, 0, len, &Mode::Hash).unwrap(), want);
    }
    let mut walls = Vec::new();
    for _ in 0..reps {
        let t = Instant::now();
        let h = r.hash(buf, 0, len, &Mode::Hash).unwrap();
        walls.push(t.elapsed());
        assert_eq!(h, want);
    }
    let mut kernels = Vec::new();
    for _ in 0..reps.min(10) {
        let (h, t) = r.hash_timed(buf, 0, len, &Mode::Hash).unwrap();
        assert_eq!(h, want);
        kernels.push(t.kernel);
    }
    (median(walls), median(kernels))
}

fn show(t: &Timings, bytes: u64) -> String {
    format!(
        "upload {:>9.3?} kernel {:>9.3?} download {:>9.3?} total {:>9.3?} = {}",
        t.upload,
        t.kernel,
        t.download,
        t.total,
        rate(bytes, t.total)
    )
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let scale = if quick { 64 } else { 1 };
    let devices = b3accel::devices();
    for d in &devices {
        println!("device {:8} {:13} {} ({}) [{}]", d.device.to_string(), d.kind.to_string(), d.name, d.api, d.driver);
    }
    let wgpu: Vec<_> = devices.iter().filter(|d| d.backend == BackendKind::Wgpu).collect();
    let index = args
        .iter()
        .find_map(|a| a.parse::<usize>().ok())
        .or_else(|| wgpu.iter().position(|d| !d.is_software_gpu()))
        .unwrap_or(0);
    let opened = WgpuBackend::open(index).expect("open adapter");
    println!(
        "\n== adapter wgpu:{index}: {} ({}), timestamps: {}",
        opened.info().name,
        opened.info().api,
        opened.has_timestamps()
    );
    println!("   {:?}, max resident segment {} MiB", opened, opened.resident().max_segment_bytes() >> 20);

    let gib = (1u64 << 30) / scale;
    let data = pattern(gib as usize);
    let t = Instant::now();
    let want_1g = upstream(&data);
    println!("   upstream update_rayon, {} MiB: {:?} = {}", gib >> 20, t.elapsed(), rate(gib, t.elapsed()));
    let mib64 = (64u64 << 20) / scale;
    let want_64m = upstream(&data[..mib64 as usize]);
    let want_1m = upstream(&data[..(1 << 20)]);

    println!("\n== shader variants, device-resident (median wall / median kernel by timestamps)");
    for loads in [Loads::Direct, Loads::Staged] {
        for checks in [ShaderChecks::BoundsChecked, ShaderChecks::Trusted] {
            let gpu = match WgpuBackend::open_with(index, WgpuOptions { loads, checks, ..Default::default() }) {
                Ok(g) => g,
                Err(e) => {
                    println!("   {loads:?}/{checks:?}: unavailable: {e}");
                    continue;
                }
            };
            let buf = upload(&gpu, &data);
            let (w1, k1) = resident(gpu.resident(), &buf, gib, want_1g, 20);
            let (w64, k64) = resident(gpu.resident(), &buf, mib64, want_64m, 50);
            println!(
                "   {:>6?} {:>13?}: {} MiB wall {:>9.3?} = {:>12} kernel {:>9.3?} = {:>12} | {} MiB wall {:>9.3?} = {:>12} kernel {:>9.3?} = {:>12}",
                loads, checks, gib >> 20, w1, rate(gib, w1), k1, rate(gib, k1), mib64 >> 20, w64, rate(mib64, w64), k64, rate(mib64, k64)
            );
        }
    }

    println!("\n== device-resident, default options (median of many calls, whole call: submit, passes, read back CVs + last chunk)");
    let buf = upload(&opened, &data);
    for (len, want, reps) in [(1u64 << 20, want_1m, 500), (mib64, want_64m, 100), (gib, want_1g, 30)] {
        let (w, k) = resident(opened.resident(), &buf, len, want, reps);
        println!(
            "   {:>5} MiB: wall {:>9.3?} = {:>12}   kernel {:>9.3?} = {:>12}",
            len >> 20,
            w,
            rate(len, w),
            k,
            rate(len, k)
        );
    }
    drop(buf);

    println!("\n== host-resident {} MiB, end to end (hash_timed; median of 7)", gib >> 20);
    for seg in [16usize << 20, 64 << 20, 256 << 20] {
        let seg = (seg / scale as usize).max(1 << 16);
        let gpu =
            WgpuBackend::open_with(index, WgpuOptions { segment_bytes: Some(seg), ..Default::default() }).unwrap();
        let mut runs = Vec::new();
        for _ in 0..8 {
            let (h, t) = gpu.hash_timed(&data, &Mode::Hash).unwrap();
            assert_eq!(h, want_1g);
            runs.push(t);
        }
        runs.remove(0);
        runs.sort_by_key(|t| t.total);
        let t = runs[runs.len() / 2];
        println!("   segments {:>4} MiB: {}", seg >> 20, show(&t, gib));
        let mut walls = Vec::new();
        for _ in 0..5 {
            let t0 = Instant::now();
            let mut out = [0u8; 32];
            b3accel::xof_reader_with(&gpu, &Mode::Hash, &data).unwrap().fill(&mut out);
            walls.push(t0.elapsed());
            assert_eq!(&out, want_1g.as_bytes());
        }
        let w = median(walls);
        println!("   segments {:>4} MiB: plain call (no timestamps) {:>9.3?} = {}", seg >> 20, w, rate(gib, w));
    }
    drop(data);

    let big = 5 * gib + 12345;
    println!("\n== host input of {} bytes ({:.2} GiB)", big, big as f64 / (1u64 << 30) as f64);
    let data = pattern(big as usize);
    let t = Instant::now();
    let want = upstream(&data);
    let t_up = t.elapsed();
    let t = Instant::now();
    let (h, timings) = opened.hash_timed(&data, &Mode::Hash).unwrap();
    let t_ours = t.elapsed();
    println!("   upstream update_rayon: {want} in {t_up:?} = {}", rate(big, t_up));
    println!("   wgpu:{index}:             {h} in {t_ours:?}; {}", show(&timings, big));
    println!("   {}", if h == want { "MATCH" } else { "MISMATCH" });
    assert_eq!(h, want);
    for mode in [Mode::Keyed([3; 32]), Mode::DeriveKey("b3accel report".into())] {
        let mut out = [0u8; 32];
        b3accel::xof_reader_with(&opened, &mode, &data).unwrap().fill(&mut out);
        let expect = match &mode {
            Mode::Keyed(k) => *blake3::Hasher::new_keyed(k).update_rayon(&data).finalize().as_bytes(),
            Mode::DeriveKey(c) => *blake3::Hasher::new_derive_key(c).update_rayon(&data).finalize().as_bytes(),
            Mode::Hash => unreachable!(),
        };
        println!("   {mode:?}: {}", if out == expect { "MATCH" } else { "MISMATCH" });
        assert_eq!(out, expect);
    }
    // The same 5 GiB resident, if one buffer of that size is allowed: several segments.
    let limits = opened.device().limits();
    if limits.max_buffer_size >= big.next_multiple_of(4) {
        let buf = upload(&opened, &data);
        let t = Instant::now();
        let h = opened.resident().hash(&buf, 0, big, &Mode::Hash);
        println!(
            "   resident {:.2} GiB: {:?} in {:?}",
            big as f64 / (1u64 << 30) as f64,
            h.as_ref().map(|h| *h == want),
            t.elapsed()
        );
    } else {
        println!("   resident 5 GiB skipped: max_buffer_size {} bytes", limits.max_buffer_size);
    }
    println!("\nreport done");
}
