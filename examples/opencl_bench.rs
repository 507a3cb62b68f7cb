//! Throughput of the OpenCL backend, checked against upstream `blake3` at every size it times.
//!
//! ```text
//! cargo run --release --features opencl --example opencl_bench -- [OPTIONS]
//!   --device N        OpenCL device index (default: the first that is not a CPU, else 0)
//!   --resident SIZES  device-resident sizes, e.g. 1M,64M,1G (default 1M,64M,1G)
//!   --host SIZE       host-memory end-to-end size (default 1G; 0 skips)
//!   --big SIZE        one large host input checked against blake3's update_rayon, after the
//!                     host figures (default 0: skip)
//!   --sweep           also time other kernel configurations and segment sizes
//!   --wg LIST         chunk work-group sizes the sweep tries (default 64,128,256,512)
//!   --build-options L extra compiler option sets the sweep tries with the default work-groups,
//!                     separated by ';' (e.g. "-cl-nv-maxrregcount=64;-cl-mad-enable")
//!   --json FILE       write every figure as JSON
//! ```
//!
//! Device-resident figures: the wall time of `hash_buffer` (median of many calls, everything
//! included: launches, the read-back of the last chunk and the CVs, the root on the host) and the
//! kernels' own time from profiling events. Host figures: `hash_timed` end to end, with upload,
//! kernel and download time apart.

#[cfg(feature = "opencl")]
mod bench {
    use b3accel::opencl::{OpenClBackend, OpenClOptions};
    use b3accel::{Device, Mode};
    use rayon::prelude::*;
    use serde_json::{json, Value};
    use std::time::{Duration, Instant};

    fn parse_size(s: &str) -> u64 {
        let s = s.trim();
        let (num, mul) = match s.chars().last() {
            Some('K' | 'k') => (&s[..s.len() - 1], 1u64 << 10),
            Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
            Some('G' | 'g') => (&s[..s.len() - 1], 1 << 30),
            _ => (s, 1),
        };
        let v: f64 = num.parse().unwrap_or_else(|_| panic!("bad size '{s}' (use e.g. 1M, 64M, 1G, 5G)"));
        (v * mul as f64) as u64
    }

    fn human(n: u64) -> String {
        match n {
            n if n >= 1 << 30 && n % (1 << 30) == 0 => format!("{} GiB", n >> 30),
            n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
            n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
            n => format!("{n} B"),
        }
    }

    /// Pseudo-random bytes, filled on every core (and so faulted in before any timing).
    fn data(len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        v.par_chunks_mut(1 << 20).enumerate().for_each(|(i, c)| {
            let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (i as u64).wrapping_mul(0xD1B5_4A32_D192_ED03);
            for w in c.chunks_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                w.copy_from_slice(&x.to_le_bytes()[..w.len()]);
            }
        });
        v
    }

    fn reference(data: &[u8]) -> blake3::Hash {
        let mut h = blake3::Hasher::new();
        h.update_rayon(data);
        h.finalize()
    }

    fn median(mut v: Vec<Duration>) -> Duration {
        v.sort();
        v[v.len() / 2]
    }

    fn rate(bytes: u64, d: Duration) -> f64 {
        bytes as f64 / d.as_secs_f64()
    }

    struct Args {
        device: Option<usize>,
        build_options: Vec<String>,
        resident: Vec<u64>,
        host: u64,
        big: u64,
        sweep: bool,
        wg: Vec<usize>,
        json: Option<String>,
    }

    fn args() -> Args {
        let mut a = Args {
            device: None,
            build_options: Vec::new(),
            resident: vec![1 << 20, 64 << 20, 1 << 30],
            host: 1 << 30,
            big: 0,
            sweep: false,
            wg: vec![64, 128, 256, 512],
            json: None,
        };
        let mut it = std::env::args().skip(1);
        while let Some(arg) = it.next() {
            let mut val = || it.next().unwrap_or_else(|| panic!("{arg} needs a value"));
            match arg.as_str() {
                "--device" => a.device = Some(val().parse().expect("--device N")),
                "--build-options" => {
                    a.build_options = val().split(';').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
                }
                "--resident" => a.resident = val().split(',').filter(|s| !s.is_empty()).map(parse_size).collect(),
                "--host" => a.host = parse_size(&val()),
                "--big" => a.big = parse_size(&val()),
                "--sweep" => a.sweep = true,
                "--wg" => a.wg = val().split(',').map(|s| s.parse().expect("--wg 64,128")).collect(),
                "--json" => a.json = Some(val()),
                "--bench" => {} // passed by `cargo bench`
                other => panic!("unknown argument {other}; see the file's header"),
            }
        }
        a
    }

    /// Device-resident throughput of one backend at each size; `inputs` holds the data and its
    /// expected hash per size.
    fn resident(be: &OpenClBackend, label: &str, inputs: &[(Vec<u8>, blake3::Hash)]) -> Vec<Value> {
        let mut out = Vec::new();
        for (input, expected) in inputs {
            let size = input.len() as u64;
            let buf = ocl::Buffer::<u8>::builder()
                .queue(be.queue().clone())
                .len(input.len())
                .copy_host_slice(input)
                .build()
                .expect("device buffer");
            for _ in 0..3 {
                let h = be.hash_buffer(&buf, &Mode::Hash).expect("hash_buffer");
                assert_eq!(h, *expected, "{label}: wrong hash at {}", human(size));
            }
            let budget = Duration::from_millis(400);
            let (mut walls, mut kernels) = (Vec::new(), Vec::new());
            let start = Instant::now();
            while walls.len() < 10 || (start.elapsed() < budget && walls.len() < 500) {
                let t = Instant::now();
                let h = be.hash_buffer(&buf, &Mode::Hash).expect("hash_buffer");
                walls.push(t.elapsed());
                assert_eq!(h, *expected);
                let (_, timings) = be.hash_buffer_timed(&buf, &Mode::Hash).expect("timed");
                kernels.push(timings.kernel);
            }
            let (wall, kernel) = (median(walls), median(kernels));
            println!(
                "  resident {:>8} {label}: {:8.1} us wall = {:7.3} TB/s | kernels {:8.1} us = {:7.3} TB/s",
                human(size),
                wall.as_secs_f64() * 1e6,
                rate(size, wall) / 1e12,
                kernel.as_secs_f64() * 1e6,
                rate(size, kernel) / 1e12
            );
            out.push(json!({
                "config": label, "bytes": size,
                "wall_us": wall.as_secs_f64() * 1e6, "wall_tb_s": rate(size, wall) / 1e12,
                "kernel_us": kernel.as_secs_f64() * 1e6, "kernel_tb_s": rate(size, kernel) / 1e12,
            }));
        }
        out
    }

    fn host(be: &OpenClBackend, label: &str, data: &[u8], expected: blake3::Hash, runs: usize) -> Value {
        let size = data.len() as u64;
        let mut best: Option<b3accel::Timings> = None;
        let mut all = Vec::new();
        for _ in 0..runs {
            let (h, t) = be.hash_timed(data, &Mode::Hash).expect("hash_timed");
            assert_eq!(h, expected, "{label}: wrong hash of {} in host memory", human(size));
            all.push(t.total.as_secs_f64() * 1e3);
            if best.is_none_or(|b| t.total < b.total) {
                best = Some(t);
            }
        }
        let t = best.expect("at least one run");
        println!(
            "  host {:>8} {label}: {:7.2} ms = {:6.1} GB/s end to end | upload {:7.2} ms ({:5.1} GB/s), kernels {:6.3} ms, download {:6.3} ms",
            human(size),
            t.total.as_secs_f64() * 1e3,
            rate(size, t.total) / 1e9,
            t.upload.as_secs_f64() * 1e3,
            rate(size, t.upload) / 1e9,
            t.kernel.as_secs_f64() * 1e3,
            t.download.as_secs_f64() * 1e3,
        );
        json!({
            "config": label, "bytes": size, "runs_ms": all,
            "total_ms": t.total.as_secs_f64() * 1e3, "gb_s": rate(size, t.total) / 1e9,
            "upload_ms": t.upload.as_secs_f64() * 1e3, "kernel_ms": t.kernel.as_secs_f64() * 1e3,
            "download_ms": t.download.as_secs_f64() * 1e3,
        })
    }

    pub fn main() {
        let a = args();
        let info = b3accel::opencl::enumerate().expect("OpenCL");
        for d in &info {
            println!("found {}: {} ({}, {})", d.device, d.name, d.kind, d.driver);
        }
        let device =
            a.device.unwrap_or_else(|| info.iter().position(|d| d.kind != b3accel::DeviceKind::Cpu).unwrap_or(0));
        let Some(dev) = info.get(device) else {
            panic!("no OpenCL device {device}; found {info:#?}");
        };
        let nvidia = dev.driver.contains("NVIDIA");
        println!(
            "device opencl:{device}: {} ({}, {}, {:?} bytes, {:?} CUs)",
            dev.name, dev.api, dev.driver, dev.memory_bytes, dev.compute_units
        );
        let mut report = json!({ "device": dev.name, "api": dev.api, "driver": dev.driver });

        // The default configuration first; on NVIDIA, with the compiler's register report.
        let verbose = if nvidia { "-cl-nv-verbose".to_string() } else { String::new() };
        let mut configs = vec![OpenClOptions { build_options: verbose.clone(), ..Default::default() }];
        for opt in &a.build_options {
            configs.push(OpenClOptions { build_options: format!("{verbose} {opt}"), ..Default::default() });
        }
        if a.sweep {
            for &wg in &a.wg {
                for staged in [false, true] {
                    configs.push(OpenClOptions {
                        chunk_work_group: Some(wg),
                        staged_loads: Some(staged),
                        ..Default::default()
                    });
                }
            }
        }

        let inputs: Vec<(Vec<u8>, blake3::Hash)> = a
            .resident
            .iter()
            .map(|&s| {
                let d = data(s as usize);
                let h = reference(&d);
                (d, h)
            })
            .collect();
        let mut resident_rows = Vec::new();
        for (i, opts) in configs.iter().enumerate() {
            let be = match OpenClBackend::with_options(device, opts) {
                Ok(be) => be,
                Err(e) => {
                    println!("  config {opts:?}: {e}");
                    continue;
                }
            };
            let (cw, pw, staged) = be.kernel_config();
            let label = format!(
                "{}wg{cw}/{pw}{}{}",
                if i == 0 { "default:" } else { "" },
                if staged { "-staged" } else { "-direct" },
                opts.build_options.replace(&verbose, "")
            );
            if !be.build_log().trim().is_empty() && (i <= a.build_options.len() || nvidia) {
                let log: Vec<&str> = be
                    .build_log()
                    .lines()
                    .filter(|l| l.contains("registers") || l.contains("spill") || l.contains("rror"))
                    .collect();
                println!("  build log {label}: {}", log.join(" | "));
            }
            resident_rows.extend(resident(&be, &label, &inputs));
        }
        drop(inputs);
        report["resident"] = Value::Array(resident_rows);

        if a.host > 0 {
            // The host's own copy rate: what feeding pinned staging memory can reach at best.
            let src = data(a.host as usize);
            let mut dst = vec![0u8; a.host as usize];
            let mut best = Duration::MAX;
            for _ in 0..3 {
                let t = Instant::now();
                dst.par_chunks_mut(1 << 20).zip(src.par_chunks(1 << 20)).for_each(|(d, s)| d.copy_from_slice(s));
                best = best.min(t.elapsed());
            }
            println!("  host memcpy {} on all cores: {:.1} GB/s", human(a.host), rate(a.host, best) / 1e9);
            report["host_memcpy_gb_s"] = json!(rate(a.host, best) / 1e9);
            drop((src, dst));

            let d = data(a.host as usize);
            let t = Instant::now();
            let expected = reference(&d);
            let upstream = t.elapsed();
            println!(
                "  upstream blake3 update_rayon {}: {:.2} ms = {:.1} GB/s",
                human(a.host),
                upstream.as_secs_f64() * 1e3,
                rate(a.host, upstream) / 1e9
            );
            let mut rows = Vec::new();
            // One backend for every host figure, warmed up first: its workers allocate their
            // pinned staging buffers on first use.
            let be = OpenClBackend::open(device).expect("open");
            be.hash_timed(&d[..(256 << 20).min(d.len())], &Mode::Hash).expect("warm-up");
            rows.push(host(&be, &format!("default seg {}", human(be.segment_bytes() as u64)), &d, expected, 5));
            if a.sweep {
                let mut variants: Vec<(String, OpenClOptions)> = [32usize << 20, 128 << 20]
                    .into_iter()
                    .map(|seg| {
                        (
                            format!("seg {}", human(seg as u64)),
                            OpenClOptions { segment_bytes: Some(seg), ..Default::default() },
                        )
                    })
                    .collect();
                variants.push((
                    "streaming stores".into(),
                    OpenClOptions { streaming_stores: Some(true), ..Default::default() },
                ));
                for (label, opts) in variants {
                    if let Ok(be) = OpenClBackend::with_options(device, &opts) {
                        be.hash_timed(&d[..(256 << 20).min(d.len())], &Mode::Hash).expect("warm-up");
                        rows.push(host(&be, &label, &d, expected, 3));
                    }
                }
            }
            report["host"] = json!({ "upstream_rayon_ms": upstream.as_secs_f64() * 1e3, "runs": rows });
            drop(d);

            if a.big > 0 {
                let d = data(a.big as usize);
                let t = Instant::now();
                let expected = reference(&d);
                let upstream = t.elapsed();
                // Through the public API and the cached backend: chunk_subtrees streams the whole
                // input (its first call also opens the device and builds the kernels).
                let t = Instant::now();
                let got = b3accel::hash_on(Device::OpenCl(device), &d).expect("hash_on");
                let api = t.elapsed();
                let t = Instant::now();
                let again = b3accel::hash_on(Device::OpenCl(device), &d).expect("hash_on");
                let api2 = t.elapsed();
                let row = host(&be, "big", &d, expected, 2);
                let ok = got == expected && again == expected;
                println!(
                    "  big {}: hash_on {} ({:.1} GB/s first call, {:.1} GB/s second), upstream update_rayon {:.1} GB/s: {}",
                    human(a.big),
                    if ok { "matches upstream" } else { "DIFFERS FROM UPSTREAM" },
                    rate(a.big, api) / 1e9,
                    rate(a.big, api2) / 1e9,
                    rate(a.big, upstream) / 1e9,
                    got
                );
                report["big"] = json!({ "bytes": a.big, "matches_upstream": ok, "hash": got.to_hex().to_string(),
                                        "hash_on_gb_s": [rate(a.big, api) / 1e9, rate(a.big, api2) / 1e9], "timed": row });
                assert!(ok, "the large input hashed wrongly");
            }
        }

        if let Some(path) = a.json {
            std::fs::write(&path, serde_json::to_string_pretty(&report).expect("json"))
                .unwrap_or_else(|e| panic!("writing {path}: {e}"));
        }
    }
}

fn main() {
    #[cfg(feature = "opencl")]
    bench::main();
    #[cfg(not(feature = "opencl"))]
    eprintln!("opencl_bench needs the OpenCL backend: cargo run --release --features opencl --example opencl_bench");
}
