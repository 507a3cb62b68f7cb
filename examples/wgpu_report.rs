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
    // Buffer sizes and writes are whole 4-byte words: the last part is padded.
    let buf = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("report input"),
        size: (data.len() as u64).next_multiple_of(4),
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    for (i, part) in data.chunks(256 << 20).enumerate() {
        if part.len() % 4 == 0 {
            gpu.queue().write_buffer(&buf, (i as u64) << 28, part);
        } else {
            let mut padded = part.to_vec();
            padded.resize(part.len().next_multiple_of(4), 0);
            gpu.queue().write_buffer(&buf, (i as u64) << 28, &padded);
        }
        gpu.queue().submit([]);
    }
    buf
}

/// Median wall time of `reps` resident hashes, and the medians of timed ones: (wall, kernel by
/// timestamps, device time after the passes + host read, timed wall).
fn resident(
    r: &ResidentHasher,
    buf: &wgpu::Buffer,
    len: u64,
    want: blake3::Hash,
    reps: usize,
) -> (Duration, Duration, Duration, Duration) {
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
    let mut timed = Vec::new();
    for _ in 0..reps.min(15) {
        let (h, t) = r.hash_timed(buf, 0, len, &Mode::Hash).unwrap();
        assert_eq!(h, want);
        timed.push(t);
    }
    let pick = |f: fn(&Timings) -> Duration| median(timed.iter().map(f).collect());
    (median(walls), pick(|t| t.kernel), pick(|t| t.download), pick(|t| t.total))
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
            let (w1, k1, _, _) = resident(gpu.resident(), &buf, gib, want_1g, 20);
            let (w64, k64, _, _) = resident(gpu.resident(), &buf, mib64, want_64m, 50);
            println!(
                "   {:>6?} {:>13?}: {} MiB wall {:>9.3?} = {:>12} kernel {:>9.3?} = {:>12} | {} MiB wall {:>9.3?} = {:>12} kernel {:>9.3?} = {:>12}",
                loads, checks, gib >> 20, w1, rate(gib, w1), k1, rate(gib, k1), mib64 >> 20, w64, rate(mib64, w64), k64, rate(mib64, k64)
            );
        }
    }

    println!("\n== device-resident, default options (median of many calls, whole call: submit, passes, read back CVs + last chunk)");
    let buf = upload(&opened, &data);
    for (len, want, reps) in [(1u64 << 20, want_1m, 500), (mib64, want_64m, 100), (gib, want_1g, 30)] {
        let (w, k, d, tw) = resident(opened.resident(), &buf, len, want, reps);
        println!(
            "   {:>5} MiB: wall {:>9.3?} = {:>12}   kernel {:>9.3?} = {:>12}   (timed call {:>9.3?}: after passes + read {:>8.3?}, host/driver {:>8.3?})",
            len >> 20,
            w,
            rate(len, w),
            k,
            rate(len, k),
            tw,
            d,
            tw.saturating_sub(k + d)
        );
    }
    // Throughput with the device kept busy: 4 threads hashing the same resident input at once,
    // so that one call's submission and read-back overlap another's passes.
    for (len, want) in [(mib64, want_64m), (gib, want_1g)] {
        let per_thread = if len == gib { 10 } else { 100 };
        let t = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..per_thread {
                        assert_eq!(opened.resident().hash(&buf, 0, len, &Mode::Hash).unwrap(), want);
                    }
                });
            }
        });
        let took = t.elapsed();
        let bytes = len * 4 * per_thread;
        println!("   {:>5} MiB x 4 threads x {per_thread}: {took:?} = {} aggregate", len >> 20, rate(bytes, took));
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
    // As much of it as one buffer may hold, resident: several segments in one submission.
    let max_buf = opened.device().limits().max_buffer_size;
    let len = big.min(max_buf / (1 << 20) * (1 << 20) - (1 << 20) + 12345);
    let buf = upload(&opened, &data[..len as usize]);
    let want = upstream(&data[..len as usize]);
    for _ in 0..2 {
        let t = Instant::now();
        let h = opened.resident().hash(&buf, 0, len, &Mode::Hash).unwrap();
        let took = t.elapsed();
        println!(
            "   resident {len} bytes ({} segments of {} MiB): {} in {took:?} = {}",
            len.div_ceil(opened.resident().max_segment_bytes()),
            opened.resident().max_segment_bytes() >> 20,
            if h == want { "MATCH" } else { "MISMATCH" },
            rate(len, took)
        );
        assert_eq!(h, want);
    }
    println!("\nreport done");
}
