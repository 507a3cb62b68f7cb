//! `b3accel bench`: every backend and device of this machine, and upstream `blake3`, in one run.
//!
//! For each input size it measures upstream (`hash` on one thread, `update_rayon` on all), the
//! CPU backend (all threads and one; and `hash_file_on` on a page-cached temporary file of the
//! same bytes, interleaved with the in-memory hash), `Device::Auto`, device lists (`all`, and
//! others: several devices hashing one input together, see `b3accel::spread`) with each device's
//! share, and each GPU device end to end from host memory (with upload, kernel and download apart)
//! and from a device buffer. Then Merkle roots and `hash_many`. It prints tables, and writes
//! every figure to `--json FILE` and a log-log throughput plot to `--plot FILE.svg`.

mod bao;
mod gpus;
mod plot;
mod report;
mod row;
mod timing;

use crate::{Fatal, Global, Outcome};
use gpus::{device_lists, open_gpus, Gpu, List, SPREAD_FROM};
use plot::plot;
use report::{describe, render};
use row::{input_data, size_label, Row};
use timing::{time, time_interleaved};
use b3accel::spread::Spread;
use b3accel::{Backend, Device, Mode};
use std::process::ExitCode;
use std::time::Duration;

/// Measure every device and upstream blake3 over input sizes from 64 B to 1 GiB
///
/// Prints a table per measurement, with the machine it ran on. With --json, standard output gets
/// every figure as one JSON document instead (`b3accel bench --json > bench.json`) and the tables
/// go to standard error. GPU rows: "host" is end to end
/// from host memory, "resident" hashes a buffer already on the device, "resident outboard" makes
/// its bao outboard there (pre-order, groups of 1 and 16 chunks, into device memory, or into host
/// memory where it says "host"); the breakdown table gives upload, kernel and download time. Software GPUs (PoCL, llvmpipe, lavapipe) are measured up to
/// 16 MiB only. Device lists ("all", "list ...") hash host memory on several devices at once,
/// spreading inputs from 1 MiB; a table gives each device's share.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Also measure 4 GiB (needs that much free memory, and on a GPU, device memory)
    #[arg(long)]
    large: bool,

    /// Shorter measurements (about 0.1 s per cell instead of 0.4 s)
    #[arg(long)]
    quick: bool,

    /// Largest input size, e.g. 64M or 1G (default 1G, or 4G with --large)
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    max_size: Option<u64>,

    /// Write a throughput-against-size plot (SVG, log-log axes, one line per series) to FILE
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<std::path::PathBuf>,

    /// Measure Device::Auto's calibration anew, save it, print it, and stop
    #[arg(long)]
    calibrate: bool,

    /// Skip the Merkle and hash_many measurements
    #[arg(long)]
    no_merkle: bool,

    /// Skip the bao outboard and decode measurements
    #[arg(long)]
    no_bao: bool,
}

fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M') => (&t[..t.len() - 1], 1 << 20),
        Some('G') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let n: u64 = num.parse().map_err(|_| format!("'{s}' is not a size (examples: 4096, 64K, 16M, 1G)"))?;
    n.checked_mul(mult).filter(|&v| v > 0).ok_or_else(|| format!("'{s}' is not a usable size"))
}

/// Inputs larger than this are not given to software GPUs: minutes of CPU time for nothing.
const SOFTWARE_GPU_MAX: u64 = 16 << 20;


fn machine(gpus: &[Gpu], lists: &[List]) -> serde_json::Value {
    let cpu = b3accel::cpu::CpuBackend::new();
    serde_json::json!({
        "cpu": cpu.info().name,
        "threads": rayon::current_num_threads(),
        "cpu_simd": cpu.kernel().to_string(),
        "gpus": gpus.iter().map(|g| serde_json::json!({
            "device": g.info.device.to_string(),
            "name": g.info.name,
            "kind": g.info.kind.to_string(),
            "api": g.info.api,
            "driver": g.info.driver,
            "memory_bytes": g.info.memory_bytes,
            "software": g.info.is_software_gpu(),
        })).collect::<Vec<_>>(),
        "lists": lists.iter().map(|l| serde_json::json!({
            "series": l.series,
            "devices": l.spread.devices().iter().map(Device::to_string).collect::<Vec<_>>(),
            "about": l.about,
            "spread_from_bytes": SPREAD_FROM,
        })).collect::<Vec<_>>(),
        "version": env!("CARGO_PKG_VERSION"),
    })
}

pub fn run(args: Args, global: &Global) -> Outcome {
    if args.calibrate {
        let cal = b3accel::auto::recalibrate();
        println!("Device::Auto calibration ({})", cal.source);
        if cal.gpus.is_empty() {
            println!("no hardware GPU on this machine: auto is the CPU backend");
        }
        for c in std::iter::once(&cal.cpu).chain(&cal.gpus).filter(|c| !c.points.is_empty()) {
            let pts: Vec<String> =
                c.points.iter().map(|(s, t)| format!("{} {:.1} GB/s", size_label(*s), t / 1e9)).collect();
            println!("{:<10} {:<40} {}", c.device.to_string(), c.name, pts.join(", "));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let budget = Duration::from_millis(if args.quick { 100 } else { 400 });
    let max = args.max_size.unwrap_or(if args.large { 4 << 30 } else { 1 << 30 });
    let sizes: Vec<u64> =
        // 2 and 4 KiB: the CPU backend's weakest sizes against upstream (two and four chunks).
        [64u64, 1 << 10, 2 << 10, 4 << 10, 16 << 10, 256 << 10, 1 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30, 4 << 30]
            .into_iter()
            .filter(|&s| s <= max)
            .collect();
    let gpus = open_gpus();
    let lists = device_lists(&gpus);
    let machine = machine(&gpus, &lists);
    eprintln!("bench: {}", describe(&machine));
    let data = input_data(*sizes.last().unwrap_or(&64) as usize);
    let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build().map_err(|e| Fatal(e.to_string()))?;
    let mut rows = Vec::new();

    for &size in &sizes {
        let input = &data[..size as usize];
        let mut add = |series: String, r: Result<f64, String>, parts: Option<[f64; 3]>, shares| match r {
            Ok(seconds) => {
                let row = Row { parts, shares, ..Row::new("hash", series, size, size_label(size), seconds) };
                eprintln!("bench: {:<28} {:>8}  {:>9.2} GB/s", row.series, row.label, row.gbps());
                rows.push(row);
            }
            Err(e) => eprintln!("bench: {series} at {}: {e}", size_label(size)),
        };
        let ok = |_| Ok(());
        let hash = |d: Device| b3accel::hash_on(d, input).map(drop).map_err(|e| e.to_string());
        // Upstream and the CPU backend side by side: one thread, then the whole pool.
        let [up, cpu1] = one_thread
            .install(|| time_interleaved(budget, &mut [&mut || ok(blake3::hash(input)), &mut || hash(Device::Cpu)]))
            .try_into()
            .expect("two series");
        // The device lists in the same turns as the CPU: each against `cpu`.
        let spread_hash =
            |s: &Spread| b3accel::hash_with(s, &Mode::Hash, input).map(drop).map_err(|e| e.to_string());
        let (mut rayon_f, mut cpu_f, mut auto_f) = (
            || ok(blake3::Hasher::new().update_rayon(input).finalize()),
            || hash(Device::Cpu),
            || hash(Device::Auto),
        );
        let mut list_fs: Vec<_> = lists.iter().map(|l| move || spread_hash(&l.spread)).collect();
        let mut series: Vec<&mut dyn FnMut() -> Result<(), String>> = vec![&mut rayon_f, &mut cpu_f, &mut auto_f];
        series.extend(list_fs.iter_mut().map(|f| f as &mut dyn FnMut() -> Result<(), String>));
        let mut results = time_interleaved(budget, &mut series).into_iter();
        let mut next = || results.next().expect("one result per series");
        let (rayon, cpu, auto) = (next(), next(), next());
        // The library's file path (`hash_file_on`: a map with its pages brought in and out in
        // parallel) on a temporary file of the same bytes, in the page cache after it is
        // written, in turns of its own with the in-memory CPU hash: the pages it maps and drops
        // would slow whichever in-memory series ran next.
        let file = std::env::temp_dir().join(format!("b3accel-bench-{}-{size}", std::process::id()));
        let written = std::fs::write(&file, input).map_err(|e| format!("writing {}: {e}", file.display()));
        let mut hash_file = || match &written {
            Ok(()) => b3accel::hash_file_on(Device::Cpu, &file).map(drop).map_err(|e| e.to_string()),
            Err(e) => Err(e.clone()),
        };
        let from_file = time_interleaved(budget, &mut [&mut || hash(Device::Cpu), &mut hash_file]).pop().expect("two");
        let _ = std::fs::remove_file(&file);
        add("upstream hash (1 thread)".into(), up, None, None);
        add("upstream update_rayon".into(), rayon, None, None);
        add("cpu (1 thread)".into(), cpu1, None, None);
        add("cpu".into(), cpu, None, None);
        add("cpu hash_file_on (cached)".into(), from_file, None, None);
        add("auto".into(), auto, None, None);
        for l in &lists {
            let spread = size >= SPREAD_FROM && l.spread.devices().len() > 1;
            add(l.series.clone(), next(), None, spread.then(|| l.spread.last_shares()));
        }
        // Each GPU's rows one device after the other, not interleaved with the other GPUs': two
        // backends on one GPU are two contexts on it, and alternating their calls makes the GPU
        // switch between them, which cuts its resident throughput to a third (docs/performance.md).
        for g in &gpus {
            if g.info.is_software_gpu() && size > SOFTWARE_GPU_MAX {
                continue;
            }
            let dev = g.info.device;
            let host = time(budget, || hash(dev));
            let parts = g.extra.as_ref().and_then(|x| x.timed(input).ok());
            add(format!("{dev} host"), host, parts, None);
            if let Some(x) = &g.extra {
                match x.resident(input, budget) {
                    Ok(series) => series.into_iter().for_each(|(name, r)| add(format!("{dev} {name}"), r, None, None)),
                    Err(e) => add(format!("{dev} resident"), Err(e), None, None),
                }
            }
        }
    }

    if !args.no_merkle {
        bench_merkle(&mut rows, &gpus, budget, args.large, &one_thread);
    }
    if !args.no_bao {
        bao::bench_bao(&mut rows, &data, &gpus, budget, &one_thread);
    }

    let text = render(&machine, &rows);
    if global.json {
        eprint!("{text}");
        let json = serde_json::json!({
            "machine": machine,
            "results": rows.iter().map(|r| serde_json::json!({
                "test": r.test, "series": r.series, "bytes": r.bytes, "size": r.label,
                "seconds": r.seconds, "gb_per_s": r.gbps(),
                "upload_s": r.parts.map(|p| p[0]), "kernel_s": r.parts.map(|p| p[1]),
                "download_s": r.parts.map(|p| p[2]),
                "shares": r.shares.as_ref().map(|s| s.iter().map(|(d, bytes)| serde_json::json!({
                    "device": d.to_string(), "bytes": bytes,
                })).collect::<Vec<_>>()),
            })).collect::<Vec<_>>(),
        });
        println!("{json:#}");
    } else {
        print!("{text}");
    }
    if let Some(path) = &args.plot {
        std::fs::write(path, plot(&machine, &rows)).map_err(|e| Fatal(format!("{}: {e}", path.display())))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn bench_merkle(rows: &mut Vec<Row>, gpus: &[Gpu], budget: Duration, large: bool, one_thread: &rayon::ThreadPool) {
    let max_log = if large { 25 } else { 20 };
    let leaves: Vec<[u8; 32]> = (0..1u64 << max_log).map(|i| *blake3::hash(&i.to_le_bytes()).as_bytes()).collect();
    let mut devices: Vec<(String, Device, bool)> = vec![("cpu".into(), Device::Cpu, false)];
    devices.extend(gpus.iter().map(|g| (g.info.device.to_string(), g.info.device, g.info.is_software_gpu())));
    for log in [10u32, 16, 20, 25].into_iter().filter(|&l| l <= max_log) {
        let l = &leaves[..1 << log];
        let label = format!("2^{log} leaves");
        let bytes = (l.len() * 32) as u64;
        let mut push = |series: String, r: Result<f64, String>| match r {
            Ok(seconds) => {
                eprintln!("bench: merkle {series:<20} {label:>13}  {:>9.3} ms", seconds * 1e3);
                rows.push(Row::new("merkle", series, bytes, label.clone(), seconds));
            }
            Err(e) => eprintln!("bench: merkle {series} at {label}: {e}"),
        };
        let reference = || {
            let mut level: Vec<[u8; 32]> = l.to_vec();
            while level.len() > 1 {
                level = level
                    .chunks(2)
                    .map(|p| if p.len() == 2 { *blake3::hash(p.concat().as_slice()).as_bytes() } else { p[0] })
                    .collect();
            }
            Ok(())
        };
        push("upstream loop".into(), time(budget, reference));
        push("cpu (1 thread)".into(), one_thread.install(|| time(budget, || root(Device::Cpu, l))));
        for (name, dev, software) in &devices {
            if *software && bytes > SOFTWARE_GPU_MAX {
                continue;
            }
            push(name.clone(), time(budget, || root(*dev, l)));
        }
    }
    for msg_len in [64usize, 1024] {
        let count = (16usize << 20) / msg_len;
        let data = &leaves.as_flattened()[..(count * msg_len).min(leaves.len() * 32)];
        let count = data.len() / msg_len;
        let label = format!("{count} x {msg_len} B");
        let bytes = data.len() as u64;
        let mut push = |series: String, r: Result<f64, String>| match r {
            Ok(seconds) => {
                eprintln!("bench: hash_many {series:<17} {label:>13}  {:>9.3} ms", seconds * 1e3);
                rows.push(Row::new("hash_many", series, bytes, label.clone(), seconds));
            }
            Err(e) => eprintln!("bench: hash_many {series} at {label}: {e}"),
        };
        push(
            "upstream loop".into(),
            time(budget, || {
                data.chunks(msg_len).for_each(|m| {
                    std::hint::black_box(blake3::hash(m));
                });
                Ok(())
            }),
        );
        push("cpu (1 thread)".into(), one_thread.install(|| time(budget, || many(Device::Cpu, data, msg_len))));
        for (name, dev, software) in &devices {
            if *software && bytes > SOFTWARE_GPU_MAX {
                continue;
            }
            push(name.clone(), time(budget, || many(*dev, data, msg_len)));
        }
    }
}

fn root(device: Device, leaves: &[[u8; 32]]) -> Result<(), String> {
    b3accel::merkle_root(device, leaves).map(drop).map_err(|e| e.to_string())
}

fn many(device: Device, data: &[u8], msg_len: usize) -> Result<(), String> {
    b3accel::hash_many(device, data, msg_len).map(drop).map_err(|e| e.to_string())
}
