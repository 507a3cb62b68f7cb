//! Throughput of the OpenCL backend, checked against upstream `blake3` at every size it times.
//!
//! ```text
//! cargo run --release -p b3accel-probes --features opencl --bin opencl_bench -- [OPTIONS]
//!   --device N        OpenCL device index (default: the first that is not a CPU, else 0)
//!   --resident SIZES  device-resident sizes, e.g. 1M,64M,1G (default 1M,64M,1G)
//!   --host SIZE       host-memory end-to-end size (default 1G; 0 skips)
//!   --big SIZE        one large host input checked against blake3's update_rayon, after the
//!                     host figures (default 0: skip)
//!   --sweep           also time other kernel configurations and segment sizes
//!   --wg LIST         chunk work-group sizes the sweep tries (default 64,128,256,512)
//!   --configs LIST    kernel configurations to time as well, each WG:LEVELS:PARENT_WG[:OPTIONS]
//!                     (chunk work-group, tree levels the chunk kernel reduces in the group,
//!                     parent work-group, extra compiler options), e.g. 256:3:512,128:2:512
//!   --host-configs L  with --sweep, host streaming variants SEGMENT:SLOTS (default
//!                     64M:2,64M:3,64M:4,32M:4,128M:3)
//!   --build-options L extra compiler option sets the sweep tries with the default work-groups,
//!                     separated by ';' (e.g. "-cl-nv-maxrregcount=64;-cl-mad-enable")
//!   --merkle K        Merkle root of 2^K device-resident leaves (default 25; 0 skips), checked
//!                     against the CPU backend; with --sweep, other work-groups and levels too
//!   --many N          hash_many of N device-resident 64-byte messages (default 2^24 = 16777216;
//!                     0 skips), and N/16 messages of 1 KiB, checked against the CPU backend
//!   --spin LIST       waits to compare for device-resident calls: spin, block (default both)
//!   --merkle-configs L  with --sweep, Merkle work-group sizes and levels per dispatch to try, as
//!                     WG:LEVELS,... (default 128:3,128:4,256:3,256:4,256:5), each also with
//!                     every --build-options set
//!   --json FILE       write every figure as JSON
//! ```
//!
//! Device-resident figures: the wall time of `Resident::hash`, `merkle_root` and
//! `hash_many_into` (median of many calls, everything included: launches, the read-back of the
//! results, the root on the host) and the kernels' own time from profiling events, apart; then
//! where the rest of the wall time went (the calls' `Timed::detail`: before the first command, its
//! wait to start, the device's span from first start to last end, after the device finished).
//! Host figures: `Resident::hash_from_host` end to end, with upload, kernel and download time
//! apart.

#[cfg(feature = "opencl")]
mod timed;

#[cfg(feature = "opencl")]
mod bench {
    use crate::timed::{detail_line, median_timings};
    use b3accel::opencl::{OpenClBackend, OpenClOptions};
    use b3accel::{Backend, Device, MerkleInner, Mode, Resident, Timings};
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
        merkle: u32,
        many: usize,
        spin: Vec<bool>,
        merkle_configs: Vec<(usize, u32)>,
        configs: Vec<(usize, u32, usize, String)>,
        host_configs: Vec<(usize, usize)>,
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
            merkle: 25,
            many: 1 << 24,
            spin: vec![true, false],
            merkle_configs: vec![(128, 3), (128, 4), (256, 3), (256, 4), (256, 5)],
            configs: Vec::new(),
            host_configs: vec![(64 << 20, 2), (64 << 20, 3), (64 << 20, 4), (32 << 20, 4), (128 << 20, 3)],
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
                "--wg" => {
                    a.wg = val().split(',').filter(|s| !s.is_empty()).map(|s| s.parse().expect("--wg 64,128")).collect()
                }
                "--merkle-configs" => {
                    a.merkle_configs = val()
                        .split(',')
                        .filter(|s| !s.is_empty())
                        .map(|s| {
                            let (wg, levels) = s.split_once(':').expect("--merkle-configs WG:LEVELS,...");
                            (wg.parse().expect("work-group size"), levels.parse().expect("levels"))
                        })
                        .collect()
                }
                "--configs" => {
                    a.configs = val()
                        .split(',')
                        .filter(|s| !s.is_empty())
                        .map(|s| {
                            let f: Vec<&str> = s.splitn(4, ':').collect();
                            assert!(f.len() >= 3, "--configs WG:LEVELS:PARENT_WG[:OPTIONS],...");
                            (
                                f[0].parse().expect("chunk work-group"),
                                f[1].parse().expect("levels"),
                                f[2].parse().expect("parent work-group"),
                                f.get(3).map_or(String::new(), |o| o.to_string()),
                            )
                        })
                        .collect()
                }
                "--host-configs" => {
                    a.host_configs = val()
                        .split(',')
                        .filter(|s| !s.is_empty())
                        .map(|s| {
                            let (seg, slots) = s.split_once(':').expect("--host-configs SEGMENT:SLOTS,...");
                            (parse_size(seg) as usize, slots.parse().expect("slots"))
                        })
                        .collect()
                }
                "--json" => a.json = Some(val()),
                "--merkle" => a.merkle = val().parse().expect("--merkle K"),
                "--many" => a.many = val().parse().expect("--many N"),
                "--spin" => {
                    a.spin = val()
                        .split(',')
                        .map(|s| match s.trim() {
                            "spin" => true,
                            "block" => false,
                            other => panic!("--spin takes spin,block; got {other}"),
                        })
                        .collect()
                }
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
                let h = be.hash(&buf, 0..size, &Mode::Hash).expect("hash").value;
                assert_eq!(h, *expected, "{label}: wrong hash at {}", human(size));
            }
            let (wall, p) = time_calls(|| {
                let (h, p) = be.hash(&buf, 0..size, &Mode::Hash).expect("hash").into_parts();
                assert_eq!(h, *expected);
                p
            });
            println!(
                "  resident {:>8} {label}: {:8.1} us wall = {:7.3} TB/s | kernels {:8.1} us = {:7.3} TB/s | {}",
                human(size),
                wall.as_secs_f64() * 1e6,
                rate(size, wall) / 1e12,
                p.kernel.as_secs_f64() * 1e6,
                rate(size, p.kernel) / 1e12,
                detail_line(&p)
            );
            out.push(json!({
                "config": label, "bytes": size,
                "wall_us": wall.as_secs_f64() * 1e6, "wall_tb_s": rate(size, wall) / 1e12,
                "kernel_us": p.kernel.as_secs_f64() * 1e6, "kernel_tb_s": rate(size, p.kernel) / 1e12,
                "profile": profile_json(&p),
            }));
        }
        out
    }

    fn us(d: Duration) -> f64 {
        d.as_secs_f64() * 1e6
    }

    fn profile_json(t: &Timings) -> Value {
        let mut v = json!({ "kernel_us": us(t.kernel), "download_us": us(t.download), "total_us": us(t.total) });
        for (name, d) in &t.detail {
            v[format!("{}_us", name.replace(' ', "_"))] = json!(us(*d));
        }
        v
    }

    /// Times a device-resident call: its wall time and each part of its timings, each the median
    /// over many calls.
    fn time_calls(mut call: impl FnMut() -> Timings) -> (Duration, Timings) {
        for _ in 0..3 {
            call();
        }
        let budget = Duration::from_millis(400);
        let (mut walls, mut timings) = (Vec::new(), Vec::new());
        let start = Instant::now();
        while walls.len() < 10 || (start.elapsed() < budget && walls.len() < 500) {
            let t = Instant::now();
            let p = call();
            walls.push(t.elapsed());
            timings.push(p);
        }
        (median(walls), median_timings(&timings))
    }

    /// Merkle roots of 2^k device-resident leaves, for each configuration: root only, and the
    /// whole tree kept on the device; checked against the CPU backend.
    fn merkle(device: usize, k: u32, configs: &[(String, OpenClOptions)]) -> Vec<Value> {
        let n = 1usize << k;
        let bytes = data(32 * n);
        let leaves: Vec<[u8; 32]> = bytes.as_chunks::<32>().0.to_vec();
        let t = Instant::now();
        let cpu_tree = b3accel::merkle_tree(Device::Cpu, &leaves).expect("cpu tree");
        let cpu = cpu_tree.root();
        println!(
            "  merkle 2^{k} leaves: CPU backend (all cores) builds the tree in {:.1} ms",
            t.elapsed().as_secs_f64() * 1e3
        );
        let mut rows = Vec::new();
        let mut checked_tree = false;
        for (label, opts) in configs {
            let be = match OpenClBackend::with_options(device, opts) {
                Ok(be) => be,
                Err(e) => {
                    println!("  merkle config {label}: {e}");
                    continue;
                }
            };
            let buf = ocl::Buffer::<u8>::builder()
                .queue(be.queue().clone())
                .len(bytes.len())
                .copy_host_slice(&bytes)
                .build()
                .expect("leaves buffer");
            let (wall, p) = time_calls(|| {
                let (root, p) = be.merkle_root(&buf, 0, n, MerkleInner::None).expect("merkle").into_parts();
                assert_eq!(root, cpu);
                p
            });
            println!(
                "  merkle 2^{k} resident {label}: {:8.1} us wall = {:6.2} G parents/s | kernels {:8.1} us | {}",
                us(wall),
                (n - 1) as f64 / wall.as_secs_f64() / 1e9,
                us(p.kernel),
                detail_line(&p)
            );
            let mut row = json!({
                "config": label, "leaves": n, "wall_us": us(wall), "kernel_us": us(p.kernel),
                "profile": profile_json(&p),
            });
            if !checked_tree {
                // The whole tree on the device, then once into host memory, checked node by node.
                let inner = ocl::Buffer::<u8>::builder()
                    .queue(be.queue().clone())
                    .len(32 * (n - 1))
                    .build()
                    .expect("inner buffer");
                let (wall_tree, pt) = time_calls(|| {
                    let (root, p) = be.merkle_root(&buf, 0, n, MerkleInner::Device(&inner)).expect("tree").into_parts();
                    assert_eq!(root, cpu);
                    p
                });
                let mut host_inner = vec![[0u8; 32]; n - 1];
                let t = Instant::now();
                let root = be.merkle_root(&buf, 0, n, MerkleInner::Host(&mut host_inner)).expect("tree to host").value;
                let wall_host = t.elapsed();
                assert_eq!(root, cpu);
                assert!(host_inner == cpu_tree.inner_nodes(), "the device's tree differs from the CPU's");
                println!(
                    "  merkle 2^{k} resident {label}, whole tree: {:8.1} us wall kept on the device (kernels {:8.1} us); {:8.1} us with the copy to host memory; matches the CPU's tree",
                    us(wall_tree),
                    us(pt.kernel),
                    us(wall_host)
                );
                row["tree_on_device_wall_us"] = json!(us(wall_tree));
                row["tree_on_device_kernel_us"] = json!(us(pt.kernel));
                row["tree_to_host_wall_us"] = json!(us(wall_host));
                checked_tree = true;
            }
            rows.push(row);
        }
        // The same leaves from host memory through the Backend trait (upload included).
        let be = OpenClBackend::open(device).expect("open");
        let mut host_walls = Vec::new();
        b3accel::merkle::merkle_root_with(&be, &leaves).expect("merkle from host");
        for _ in 0..3 {
            let t = Instant::now();
            let root = b3accel::merkle::merkle_root_with(&be, &leaves).expect("merkle from host");
            host_walls.push(t.elapsed());
            assert_eq!(root, cpu);
        }
        let host = median(host_walls);
        println!("  merkle 2^{k} from host memory (upload included): {:.2} ms", host.as_secs_f64() * 1e3);
        rows.push(json!({ "config": "host memory", "leaves": n, "wall_us": us(host) }));
        rows
    }

    /// hash_many of `count` device-resident messages of `msg_len` bytes, checked against the CPU
    /// backend.
    fn many(be: &OpenClBackend, label: &str, count: usize, msg_len: usize) -> Value {
        let input_bytes = data(count * msg_len);
        let mut want = vec![[0u8; 32]; count];
        let cpu = b3accel::backend(Device::Cpu).expect("cpu");
        cpu.hash_many(&input_bytes, msg_len, &b3accel::IV, 0, &mut want).expect("cpu hash_many");
        let input = ocl::Buffer::<u8>::builder()
            .queue(be.queue().clone())
            .len(input_bytes.len())
            .copy_host_slice(&input_bytes)
            .build()
            .expect("messages buffer");
        let out = ocl::Buffer::<u8>::builder().queue(be.queue().clone()).len(32 * count).build().expect("out buffer");
        be.hash_many_into(&input, 0, count, msg_len, &Mode::Hash, &out, 0).expect("hash_many_into");
        let mut got = vec![0u8; 32 * count];
        out.read(&mut got).queue(be.queue()).enq().expect("read hashes");
        assert!(got == want.as_flattened(), "{label}: device hashes differ from the CPU's");
        let (wall, p) = time_calls(|| {
            be.hash_many_into(&input, 0, count, msg_len, &Mode::Hash, &out, 0).expect("hash_many_into").times()
        });
        println!(
            "  hash_many {count} x {msg_len} B resident {label}: {:8.1} us wall = {:6.2} G hashes/s | kernels {:8.1} us = {:6.2} G hashes/s | {}",
            us(wall),
            count as f64 / wall.as_secs_f64() / 1e9,
            us(p.kernel),
            count as f64 / p.kernel.as_secs_f64() / 1e9,
            detail_line(&p)
        );
        // From host memory through the Backend trait, for comparison: after a first call (the
        // worker's buffers, the output's pages), the best of three.
        let mut host_out = vec![[0u8; 32]; count];
        Backend::hash_many(be, &input_bytes, msg_len, &b3accel::IV, 0, &mut host_out).expect("hash_many from host");
        assert!(host_out == want, "{label}: hash_many from host memory differs");
        let host = (0..3)
            .map(|_| {
                let t = Instant::now();
                Backend::hash_many(be, &input_bytes, msg_len, &b3accel::IV, 0, &mut host_out)
                    .expect("hash_many from host");
                t.elapsed()
            })
            .min()
            .expect("three runs");
        println!(
            "  hash_many {count} x {msg_len} B from host memory {label}: {:.2} ms = {:.2} G hashes/s (upload included)",
            host.as_secs_f64() * 1e3,
            count as f64 / host.as_secs_f64() / 1e9
        );
        json!({
            "config": label, "count": count, "msg_len": msg_len,
            "wall_us": us(wall), "kernel_us": us(p.kernel),
            "wall_g_hashes_s": count as f64 / wall.as_secs_f64() / 1e9,
            "kernel_g_hashes_s": count as f64 / p.kernel.as_secs_f64() / 1e9,
            "profile": profile_json(&p), "host_ms": host.as_secs_f64() * 1e3,
        })
    }

    fn host(be: &OpenClBackend, label: &str, data: &[u8], expected: blake3::Hash, runs: usize) -> Value {
        let size = data.len() as u64;
        let mut best: Option<b3accel::Timings> = None;
        let mut all = Vec::new();
        for _ in 0..runs {
            let (h, t) = be.hash_from_host(data, &Mode::Hash).expect("hash_from_host").into_parts();
            assert_eq!(h, expected, "{label}: wrong hash of {} in host memory", human(size));
            all.push(t.total.as_secs_f64() * 1e3);
            if best.as_ref().is_none_or(|b| t.total < b.total) {
                best = Some(t);
            }
        }
        let t = best.expect("at least one run");
        let mut sorted = all.clone();
        sorted.sort_by(f64::total_cmp);
        let median_ms = sorted[sorted.len() / 2];
        println!(
            "  host {:>8} {label}: median {median_ms:7.2} ms = {:6.1} GB/s; best {:7.2} ms = {:6.1} GB/s end to end | upload {:7.2} ms ({:5.1} GB/s), kernels {:6.3} ms, download {:6.3} ms",
            human(size),
            size as f64 / median_ms / 1e6,
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
            "median_ms": median_ms, "median_gb_s": size as f64 / median_ms / 1e6,
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
        // The default configuration with the other ways of waiting.
        for &spin in a.spin.iter().skip(1) {
            configs.push(OpenClOptions { spin_wait: Some(spin), ..Default::default() });
        }
        if let Some(&spin) = a.spin.first() {
            configs[0].spin_wait = Some(spin);
        }
        // And with results read into pageable host memory.
        configs.push(OpenClOptions { pinned_results: Some(false), ..Default::default() });
        if !a.resident.is_empty() {
            for opt in &a.build_options {
                configs.push(OpenClOptions { build_options: format!("{verbose} {opt}"), ..Default::default() });
            }
        }
        for (wg, levels, pwg, opt) in &a.configs {
            configs.push(OpenClOptions {
                chunk_work_group: Some(*wg),
                chunk_levels: Some(*levels),
                parent_work_group: Some(*pwg),
                build_options: opt.clone(),
                ..Default::default()
            });
        }
        if a.sweep && !a.resident.is_empty() {
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
                "{}wg{cw}/L{}/{pw}{}{}{}{}",
                if i == 0 { "default:" } else { "" },
                opts.chunk_levels.map_or("auto".into(), |l| l.to_string()),
                if staged { "-staged" } else { "-direct" },
                match opts.spin_wait {
                    Some(true) => "-spin",
                    Some(false) => "-block",
                    None => "",
                },
                if opts.pinned_results == Some(false) { "-pageable" } else { "" },
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

        if a.merkle > 0 {
            let mut mconfigs: Vec<(String, OpenClOptions)> = Vec::new();
            for &spin in &a.spin {
                let wait = if spin { "spin" } else { "block" };
                mconfigs
                    .push((format!("default-{wait}"), OpenClOptions { spin_wait: Some(spin), ..Default::default() }));
            }
            mconfigs
                .push(("default-pageable".into(), OpenClOptions { pinned_results: Some(false), ..Default::default() }));
            if a.sweep {
                for &(wg, levels) in &a.merkle_configs {
                    let opts = OpenClOptions {
                        merkle_work_group: Some(wg),
                        merkle_levels: Some(levels),
                        ..Default::default()
                    };
                    mconfigs.push((format!("wg{wg}-L{levels}"), opts.clone()));
                    for opt in &a.build_options {
                        let with = OpenClOptions { build_options: opt.clone(), ..opts.clone() };
                        mconfigs.push((format!("wg{wg}-L{levels} {opt}"), with));
                    }
                }
            }
            report["merkle"] = Value::Array(merkle(device, a.merkle, &mconfigs));
        }
        if a.many > 0 {
            let mut rows = Vec::new();
            for &spin in &a.spin {
                let be =
                    OpenClBackend::with_options(device, &OpenClOptions { spin_wait: Some(spin), ..Default::default() })
                        .expect("open");
                let wait = if spin { "spin" } else { "block" };
                rows.push(many(&be, wait, a.many, 64));
                if spin == a.spin[0] {
                    rows.push(many(&be, wait, (a.many / 16).max(1), 1024));
                    rows.push(many(&be, wait, (a.many / 64).max(1), 3000));
                }
            }
            if a.sweep {
                for opt in &a.build_options {
                    if let Ok(be) = OpenClBackend::with_options(
                        device,
                        &OpenClOptions { build_options: opt.clone(), ..Default::default() },
                    ) {
                        rows.push(many(&be, opt, a.many, 64));
                    }
                }
            }
            report["many"] = Value::Array(rows);
        }

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
            be.hash_from_host(&d[..(256 << 20).min(d.len())], &Mode::Hash).expect("warm-up");
            rows.push(host(&be, &format!("default seg {}", human(be.segment_bytes() as u64)), &d, expected, 5));
            // Through the public API, as `b3accel bench` measures it: the cached backend, the
            // median of several calls.
            let mut walls = Vec::new();
            for i in 0..8 {
                let t = Instant::now();
                let h = b3accel::hash_on(Device::OpenCl(device), &d).expect("hash_on");
                if i > 0 {
                    walls.push(t.elapsed());
                }
                assert_eq!(h, expected, "hash_on of {} in host memory", human(a.host));
            }
            let api = median(walls);
            println!(
                "  host {:>8} hash_on (median of 7): {:7.2} ms = {:6.1} GB/s",
                human(a.host),
                api.as_secs_f64() * 1e3,
                rate(a.host, api) / 1e9
            );
            rows.push(json!({ "config": "hash_on median", "bytes": a.host, "total_ms": api.as_secs_f64() * 1e3,
                              "gb_s": rate(a.host, api) / 1e9 }));
            if a.sweep {
                let mut variants: Vec<(String, OpenClOptions)> = a
                    .host_configs
                    .iter()
                    .map(|&(seg, slots)| {
                        (
                            format!("seg {} x {slots}", human(seg as u64)),
                            OpenClOptions {
                                segment_bytes: Some(seg),
                                staging_slots: Some(slots),
                                ..Default::default()
                            },
                        )
                    })
                    .collect();
                variants.push((
                    "streaming stores".into(),
                    OpenClOptions { streaming_stores: Some(true), ..Default::default() },
                ));
                for (label, opts) in variants {
                    if let Ok(be) = OpenClBackend::with_options(device, &opts) {
                        be.hash_from_host(&d[..(256 << 20).min(d.len())], &Mode::Hash).expect("warm-up");
                        rows.push(host(&be, &label, &d, expected, 5));
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
    eprintln!("opencl_bench needs the OpenCL backend: cargo run --release -p b3accel-probes --features opencl --bin opencl_bench");
}
