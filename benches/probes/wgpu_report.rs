//! Throughput report for the wgpu backend on one adapter: device-resident inputs at 1 MiB, 64 MiB
//! and 1 GiB, the shader variants (direct vs staged loads, bounds-checked vs trusted modules),
//! host-resident 1 GiB end to end with upload / kernel / download apart, and a 5 GiB host input
//! checked against upstream `blake3::Hasher::update_rayon`. Every hash is checked.
//!
//! ```text
//! cargo run --release -p b3accel-probes --bin wgpu_report [ADAPTER_INDEX] [--quick]
//!     [--merkle] [--leaves-log2 20,25] [--many-log2 24] [--merkle-levels 3,4,9]
//!     [--no-variants] [--no-big] [--resident]
//! ```
//! Without an index: the first adapter that is not a software one (else adapter 0).
//! `--quick` shrinks every size 64-fold (for software adapters). `--no-variants` skips the shader
//! variants, `--no-big` the 5 GiB input, `--resident` everything but the round-trip costs and the
//! device-resident section (whose lines come with a breakdown of the timed calls: the host's
//! encode / submit / wait / read / finish, the device's time before, in and after the passes,
//! and what neither clock sees, launch + wake-up).
//!
//! The Merkle / hash_many section (first, after the adapter is opened): device-resident Merkle
//! roots of 2^20 and 2^25 leaves and `hash_many` of 2^24 64-byte messages, median wall time of
//! the whole call and median pass time by timestamp queries apart; every result is checked
//! against the CPU backend; `hash_many` both back to the host and into a device buffer
//! (`hash_many_into`). `--merkle-levels` also measures the largest tree with each number of levels
//! per Merkle dispatch. `--leaves-log2` and `--many-log2` set the sizes (`--quick`: 14,16 and
//! 14), `--merkle` runs only this section. On a software adapter:
//! `cargo run --release -p b3accel-probes --bin wgpu_report -- 0 --merkle --leaves-log2 12,16 --many-log2 14`.

mod timed;

use b3accel::wgpu::{Loads, ResidentHasher, ShaderChecks, WgpuBackend, WgpuOptions};
use b3accel::{Backend, BackendKind, MerkleInner, Mode, Resident, Timings};
use rayon::prelude::*;
use std::time::{Duration, Instant};
use timed::{detail_line, median_timings};

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

/// Median wall time of `reps` resident hashes, and the medians of their timings: (wall, kernel
/// by timestamps, device time after the passes + host read, the call's own total, the median of
/// each part).
fn resident(
    r: &ResidentHasher,
    buf: &wgpu::Buffer,
    len: u64,
    want: blake3::Hash,
    reps: usize,
) -> (Duration, Duration, Duration, Duration, Timings) {
    for _ in 0..3 {
        assert_eq!(r.hash(buf, 0..len, &Mode::Hash).unwrap().value, want);
    }
    let (mut walls, mut timed) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        let t = Instant::now();
        let (h, b) = r.hash(buf, 0..len, &Mode::Hash).unwrap().into_parts();
        walls.push(t.elapsed());
        assert_eq!(h, want);
        timed.push(b);
    }
    let b = median_timings(&timed);
    (median(walls), b.kernel, b.download, b.total, b)
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

/// The value after `flag` as a list of numbers.
fn list_arg(args: &[String], flag: &str) -> Option<Vec<u32>> {
    let at = args.iter().position(|a| a == flag)?;
    let v = args.get(at + 1).unwrap_or_else(|| panic!("{flag} needs a value"));
    Some(v.split(',').map(|x| x.trim().parse().unwrap_or_else(|_| panic!("{flag}: bad number {x}"))).collect())
}

/// Device-resident Merkle roots and hash_many of 64-byte messages: median wall and pass times.
fn merkle_report(gpu: &WgpuBackend, index: usize, leaves_log2: &[u32], many_log2: u32, sweep: &[u32]) {
    let r = gpu.resident();
    println!("\n== device-resident Merkle roots (median wall of whole calls / median pass time by timestamps)");
    for &k in leaves_log2 {
        let n = 1usize << k;
        let leaves: Vec<[u8; 32]> = (0..n).map(|i| *blake3::hash(&(i as u64).to_le_bytes()).as_bytes()).collect();
        let t = Instant::now();
        let want = b3accel::merkle_root(b3accel::Device::Cpu, &leaves).unwrap();
        let t_cpu = t.elapsed();
        let buf = upload(gpu, leaves.as_flattened());
        drop(leaves);
        let reps = if k >= 22 { 20 } else { 50 };
        let (mut walls, mut kernels, mut timed) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..=reps {
            let t = Instant::now();
            let (root, tt) = r.merkle_root(&buf, 0, n, MerkleInner::None).unwrap().into_parts();
            let w = t.elapsed();
            assert_eq!(root, want, "Merkle root of 2^{k} leaves");
            if i > 0 {
                walls.push(w);
                kernels.push(tt.kernel);
                timed.push(tt.total);
            }
        }
        let (w, kern, tw) = (median(walls), median(kernels), median(timed));
        println!(
            "   2^{k:<2} leaves: wall {w:>9.3?}   passes {kern:>9.3?}   (timed call {tw:>9.3?}; CPU backend {t_cpu:>9.3?}) = {:.2} G parents/s in the passes",
            (n - 1) as f64 / kern.as_secs_f64().max(1e-12) / 1e9
        );
    }

    if let (Some(&k), false) = (leaves_log2.iter().max(), sweep.is_empty()) {
        let n = 1usize << k;
        let leaves: Vec<[u8; 32]> = (0..n).map(|i| *blake3::hash(&(i as u64).to_le_bytes()).as_bytes()).collect();
        let want = b3accel::merkle_root(b3accel::Device::Cpu, &leaves).unwrap();
        println!("   levels per dispatch, 2^{k} leaves (median wall / passes):");
        for &levels in sweep {
            let g = WgpuBackend::open_with(index, WgpuOptions { merkle_levels: Some(levels), ..Default::default() })
                .expect("open adapter");
            let buf = upload(&g, leaves.as_flattened());
            let (mut walls, mut kernels) = (Vec::new(), Vec::new());
            for i in 0..=20 {
                let t = Instant::now();
                let (root, tt) = g.resident().merkle_root(&buf, 0, n, MerkleInner::None).unwrap().into_parts();
                let w = t.elapsed();
                assert_eq!(root, want);
                if i > 0 {
                    walls.push(w);
                    kernels.push(tt.kernel);
                }
            }
            println!("      {levels} levels: wall {:>9.3?}   passes {:>9.3?}", median(walls), median(kernels));
        }
    }

    let n = 1usize << many_log2;
    println!("\n== device-resident hash_many, 2^{many_log2} x 64 B (median wall / median pass time by timestamps)");
    let data: Vec<u8> = (0..n * 64).map(|i| (i % 251) as u8 ^ (i / 64) as u8).collect();
    let mut want = vec![[0u8; 32]; n];
    let cpu = b3accel::cpu::CpuBackend::new();
    cpu.hash_many(&data, 64, &b3accel::IV, 0, &mut want).unwrap();
    assert_eq!(want[n - 1], *blake3::hash(&data[(n - 1) * 64..]).as_bytes());
    let buf = upload(gpu, &data);
    drop(data);
    let (mut walls, mut kernels) = (Vec::new(), Vec::new());
    for i in 0..=10 {
        let t = Instant::now();
        let (got, tt) = r.hash_many(&buf, 0, n, 64, &Mode::Hash).unwrap().into_parts();
        let w = t.elapsed();
        assert!(got.iter().zip(&want).all(|(g, w)| g.as_bytes() == w), "hash_many of 2^{many_log2} x 64 B");
        if i > 0 {
            walls.push(w);
            kernels.push(tt.kernel);
        }
    }
    let (w, kern) = (median(walls), median(kernels));
    let g = |d: Duration| n as f64 / d.as_secs_f64().max(1e-12) / 1e9;
    println!(
        "   hashes back to the host (hash_many): wall {w:>9.3?} = {:.2} G hashes/s ({}), passes {kern:>9.3?} = {:.2} G hashes/s ({})",
        g(w),
        rate(n as u64 * 64, w),
        g(kern),
        rate(n as u64 * 64, kern)
    );
    // Into a device buffer (hash_many_into): nothing comes back.
    let out = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("report hashes"),
        size: 32 * n as u64,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let (mut walls, mut kernels) = (Vec::new(), Vec::new());
    for i in 0..=30 {
        let t = Instant::now();
        let tt = r.hash_many_into(&buf, 0, n, 64, &Mode::Hash, &out, 0).unwrap();
        let w = t.elapsed();
        if i > 0 {
            walls.push(w);
            kernels.push(tt.kernel);
        }
    }
    // Check every hash once: the device buffer read back.
    let gpu_hashes = r.hash_many(&buf, 0, n, 64, &Mode::Hash).unwrap().value;
    let rb = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("report readback"),
        size: 32 * n as u64,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut enc = gpu.device().create_command_encoder(&Default::default());
    enc.copy_buffer_to_buffer(&out, 0, &rb, 0, 32 * n as u64);
    gpu.queue().submit([enc.finish()]);
    rb.map_async(wgpu::MapMode::Read, .., |r| r.expect("map"));
    gpu.device().poll(wgpu::PollType::wait_indefinitely()).expect("poll");
    {
        let view = rb.get_mapped_range(..).expect("mapped");
        assert!(view.chunks_exact(32).zip(&want).all(|(g, w)| g == w), "hash_many_into of 2^{many_log2} x 64 B");
    }
    assert!(gpu_hashes.iter().zip(&want).all(|(g, w)| g.as_bytes() == w));
    let (w, kern) = (median(walls), median(kernels));
    println!(
        "   hashes into a device buffer (hash_many_into): wall {w:>9.3?} = {:.2} G hashes/s, passes {kern:>9.3?} = {:.2} G hashes/s",
        g(w),
        g(kern)
    );
}

/// What wgpu's basic operations cost on this device (median of 200): the floor under every call.
fn overhead_report(gpu: &WgpuBackend) {
    let (device, queue) = (gpu.device(), gpu.queue());
    let med = |f: &mut dyn FnMut()| {
        let mut v: Vec<Duration> = (0..200)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect();
        v.sort();
        v[100]
    };
    let wait = || {
        device.poll(wgpu::PollType::wait_indefinitely()).expect("poll");
    };
    let small = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 256,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let other = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 256,
        usage: wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let rb = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 256,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: None,
        entries: &[wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only: true },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        }],
    });
    println!("\n== wgpu round-trip costs on this device (median of 200)");
    println!(
        "   empty submit + poll(Wait):               {:>9.3?}",
        med(&mut || {
            queue.submit([]);
            wait();
        })
    );
    println!(
        "   empty submit + poll(Poll) until idle:    {:>9.3?}",
        med(&mut || {
            queue.submit([]);
            while !device.poll(wgpu::PollType::Poll).expect("poll").is_queue_empty() {
                std::thread::yield_now();
            }
        })
    );
    println!(
        "   copy 32 B + submit + poll(Wait):         {:>9.3?}",
        med(&mut || {
            let mut enc = device.create_command_encoder(&Default::default());
            enc.copy_buffer_to_buffer(&small, 0, &other, 0, 32);
            queue.submit([enc.finish()]);
            wait();
        })
    );
    println!(
        "   write_buffer 64 B + submit + poll(Wait): {:>9.3?}",
        med(&mut || {
            queue.write_buffer(&small, 0, &[1u8; 64]);
            queue.submit([]);
            wait();
        })
    );
    println!(
        "   copy 32 B to a MAP_READ buffer, map, read, unmap: {:>9.3?}",
        med(&mut || {
            let mut enc = device.create_command_encoder(&Default::default());
            enc.copy_buffer_to_buffer(&small, 0, &rb, 0, 32);
            queue.submit([enc.finish()]);
            rb.map_async(wgpu::MapMode::Read, .., |r| r.expect("map"));
            wait();
            std::hint::black_box(rb.get_mapped_range(..).expect("mapped")[0]);
            rb.unmap();
        })
    );
    println!(
        "   create_bind_group (one storage binding): {:>9.3?}",
        med(&mut || {
            std::hint::black_box(device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: None,
                layout: &layout,
                entries: &[wgpu::BindGroupEntry { binding: 0, resource: small.as_entire_binding() }],
            }));
        })
    );
    println!(
        "   create_buffer 256 B STORAGE:             {:>9.3?}",
        med(&mut || {
            std::hint::black_box(device.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size: 256,
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            }));
        })
    );
    let buf = upload(gpu, &[7u8; 4096]);
    let want = blake3::hash(&[7u8; 4096]);
    println!(
        "   resident hash of 4 KiB (whole call):     {:>9.3?}",
        med(&mut || {
            assert_eq!(gpu.resident().hash(&buf, 0..4096, &Mode::Hash).unwrap().value, want);
        })
    );
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
        .enumerate()
        // A number that is not the value of a flag.
        .filter(|&(i, _)| {
            i == 0
                || !args[i - 1].starts_with("--")
                || args[i - 1] == "--quick"
                || args[i - 1] == "--merkle"
                || args[i - 1] == "--no-variants"
                || args[i - 1] == "--no-big"
                || args[i - 1] == "--resident"
        })
        .find_map(|(_, a)| a.parse::<usize>().ok())
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

    let leaves_log2 = list_arg(&args, "--leaves-log2").unwrap_or(if quick { vec![14, 16] } else { vec![20, 25] });
    let many_log2 = list_arg(&args, "--many-log2").map_or(if quick { 14 } else { 24 }, |v| v[0]);
    overhead_report(&opened);
    let only_resident = args.iter().any(|a| a == "--resident");
    let sweep = list_arg(&args, "--merkle-levels").unwrap_or_default();
    if !only_resident {
        merkle_report(&opened, index, &leaves_log2, many_log2, &sweep);
    }
    if args.iter().any(|a| a == "--merkle") {
        println!("\nreport done");
        return;
    }

    let gib = (1u64 << 30) / scale;
    let data = pattern(gib as usize);
    let t = Instant::now();
    let want_1g = upstream(&data);
    println!("   upstream update_rayon, {} MiB: {:?} = {}", gib >> 20, t.elapsed(), rate(gib, t.elapsed()));
    let mib64 = (64u64 << 20) / scale;
    let want_64m = upstream(&data[..mib64 as usize]);
    let want_1m = upstream(&data[..(1 << 20)]);

    let variants = if args.iter().any(|a| a == "--no-variants") { vec![] } else { vec![Loads::Direct, Loads::Staged] };
    println!("\n== shader variants, device-resident (median wall / median kernel by timestamps)");
    for loads in variants {
        for checks in [ShaderChecks::BoundsChecked, ShaderChecks::Trusted] {
            let gpu = match WgpuBackend::open_with(index, WgpuOptions { loads, checks, ..Default::default() }) {
                Ok(g) => g,
                Err(e) => {
                    println!("   {loads:?}/{checks:?}: unavailable: {e}");
                    continue;
                }
            };
            let buf = upload(&gpu, &data);
            let (w1, k1, ..) = resident(gpu.resident(), &buf, gib, want_1g, 20);
            let (w64, k64, ..) = resident(gpu.resident(), &buf, mib64, want_64m, 50);
            println!(
                "   {:>6?} {:>13?}: {} MiB wall {:>9.3?} = {:>12} kernel {:>9.3?} = {:>12} | {} MiB wall {:>9.3?} = {:>12} kernel {:>9.3?} = {:>12}",
                loads, checks, gib >> 20, w1, rate(gib, w1), k1, rate(gib, k1), mib64 >> 20, w64, rate(mib64, w64), k64, rate(mib64, k64)
            );
        }
    }

    println!("\n== device-resident, default options (median of many calls, whole call: submit, passes, read back CVs + last chunk)");
    let buf = upload(&opened, &data);
    for (len, want, reps) in [(1u64 << 20, want_1m, 500), (mib64, want_64m, 100), (gib, want_1g, 30)] {
        let (w, k, d, tw, b) = resident(opened.resident(), &buf, len, want, reps);
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
        println!("          {}", detail_line(&b));
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
                        assert_eq!(opened.resident().hash(&buf, 0..len, &Mode::Hash).unwrap().value, want);
                    }
                });
            }
        });
        let took = t.elapsed();
        let bytes = len * 4 * per_thread;
        println!("   {:>5} MiB x 4 threads x {per_thread}: {took:?} = {} aggregate", len >> 20, rate(bytes, took));
    }
    drop(buf);
    if only_resident {
        println!("\nreport done");
        return;
    }

    println!("\n== host-resident {} MiB, end to end (hash_from_host; median of 7)", gib >> 20);
    for seg in [16usize << 20, 64 << 20, 256 << 20] {
        let seg = (seg / scale as usize).max(1 << 16);
        let gpu =
            WgpuBackend::open_with(index, WgpuOptions { segment_bytes: Some(seg), ..Default::default() }).unwrap();
        let mut runs = Vec::new();
        for _ in 0..8 {
            let (h, t) = gpu.resident().hash_from_host(&data, &Mode::Hash).unwrap().into_parts();
            assert_eq!(h, want_1g);
            runs.push(t);
        }
        runs.remove(0);
        runs.sort_by_key(|t| t.total);
        let t = &runs[runs.len() / 2];
        println!("   segments {:>4} MiB: {}", seg >> 20, show(t, gib));
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
    if args.iter().any(|a| a == "--no-big") {
        println!("\nreport done");
        return;
    }

    let big = 5 * gib + 12345;
    println!("\n== host input of {} bytes ({:.2} GiB)", big, big as f64 / (1u64 << 30) as f64);
    let data = pattern(big as usize);
    let t = Instant::now();
    let want = upstream(&data);
    let t_up = t.elapsed();
    let t = Instant::now();
    let (h, timings) = opened.resident().hash_from_host(&data, &Mode::Hash).unwrap().into_parts();
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
        let h = opened.resident().hash(&buf, 0..len, &Mode::Hash).unwrap().value;
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
