//! `b3accel bench`: every backend and device of this machine, and upstream `blake3`, in one run.
//!
//! For each input size it measures upstream (`hash` on one thread, `update_rayon` on all), the
//! CPU backend (all threads and one; and `hash_file_on` on a page-cached temporary file of the
//! same bytes, interleaved with the in-memory hash), `Device::Auto`, device lists (`all`, and
//! others: several devices hashing one input together, see `b3accel::spread`) with each device's
//! share, and each GPU device end to end from host memory (with upload, kernel and download apart)
//! and from a device buffer. Then Merkle roots and `hash_many`. It prints tables, and writes
//! every figure to `--json FILE` and a log-log throughput plot to `--plot FILE.svg`.

use crate::choice::list_name;
use crate::{Fatal, Global, Outcome};
use b3accel::spread::Spread;
use b3accel::{Backend, Device, DeviceInfo, Mode};
use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Measure every device and upstream blake3 over input sizes from 64 B to 1 GiB
///
/// Prints a table per measurement, with the machine it ran on. With --json, standard output gets
/// every figure as one JSON document instead (`b3accel bench --json > bench.json`) and the tables
/// go to standard error. GPU rows: "host" is end to end
/// from host memory, "resident" hashes a buffer already on the device; the breakdown table gives
/// upload, kernel and download time. Software GPUs (PoCL, llvmpipe, lavapipe) are measured up to
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

/// The device lists spread inputs from this size (the library's default starts at
/// `spread::SPREAD_MIN_BYTES`), so that the table shows what spreading costs and gains at each
/// size measured from there; smaller inputs go to the list's first device alone.
const SPREAD_FROM: u64 = 1 << 20;

/// One figure.
#[derive(Clone, Debug)]
struct Row {
    /// What was measured: "hash", "merkle" or "hash_many".
    test: &'static str,
    /// The series: "upstream hash", "cpu", "opencl:0 host", ...
    series: String,
    /// Input bytes (for merkle: leaves x 32; for hash_many: messages x length).
    bytes: u64,
    /// A label for the size column (leaf or message counts for merkle and hash_many).
    label: String,
    /// Median seconds per call.
    seconds: f64,
    /// Upload, kernel and download seconds (GPU host rows that report them).
    parts: Option<[f64; 3]>,
    /// Bytes each device hashed in the last call (device-list rows that spread).
    shares: Option<Vec<(Device, u64)>>,
}

impl Row {
    /// A figure with no parts and no shares.
    fn new(test: &'static str, series: String, bytes: u64, label: String, seconds: f64) -> Row {
        Row { test, series, bytes, label, seconds, parts: None, shares: None }
    }

    fn gbps(&self) -> f64 {
        self.bytes as f64 / self.seconds / 1e9
    }
}

/// Repeats `f` until `budget` has passed (at least 3 samples), after one warm-up
/// call (programs built, buffers allocated, pages touched), returning the median seconds per
/// call. A sample is one call, or a batch of calls where one is shorter than [`SAMPLE_MIN`].
fn time(budget: Duration, mut f: impl FnMut() -> Result<(), String>) -> Result<f64, String> {
    time_interleaved(budget, &mut [&mut f]).pop().expect("one series")
}

/// The shortest sample: calls shorter than this are timed in batches that last about this long.
/// A clock that advances in steps of 10 ns reads a 60 ns call to 14%, a 20 us batch to 0.05%.
const SAMPLE_MIN: Duration = Duration::from_micros(20);

/// A first call at least this long is not followed by warm calls to set the batch length.
const WARM_MAX: Duration = Duration::from_millis(100);

/// Calls of `f` per sample: enough for a batch to last [`SAMPLE_MIN`], judged from one call's
/// time `one` (at most 10,000).
fn batch_len(one: Duration) -> u32 {
    let nanos = one.as_nanos().max(1);
    SAMPLE_MIN.as_nanos().div_ceil(nanos).clamp(1, 10_000) as u32
}

/// [`time`] for several series at once, one sample of each in turn (`budget` each): a drift of
/// the machine's speed during the measurement (clock frequency, memory placement, a
/// neighbour's load) then falls on all of them alike, so their ratios hold even where the
/// absolute figures move by several percent from run to run. Each turn runs the series in a new
/// order, so that no series always runs just after the same other one (whose caches, branch
/// history and leftover work it would inherit). A series that fails drops out with its error.
fn time_interleaved(budget: Duration, fs: &mut [&mut dyn FnMut() -> Result<(), String>]) -> Vec<Result<f64, String>> {
    // One warm-up call each, then the fastest of up to three warm calls sets the batch length: a
    // first call can take many times a warm one (code paged in, lazy set-up), and a batch length
    // set from it would time a series of short calls one call a sample, the clock's own cost in
    // every sample.
    let mut samples: Vec<Result<(u32, Vec<f64>), String>> = fs
        .iter_mut()
        .map(|f| {
            let t = Instant::now();
            f()?;
            let mut one = t.elapsed();
            // A call that long is a batch of one however cold it was; not worth repeating.
            if one < WARM_MAX {
                one = Duration::MAX;
                for _ in 0..3 {
                    let t = Instant::now();
                    f()?;
                    one = one.min(t.elapsed());
                    if one >= SAMPLE_MIN {
                        break;
                    }
                }
            }
            Ok((batch_len(one), Vec::new()))
        })
        .collect();
    let n = fs.len();
    let total = budget * n as u32;
    let start = Instant::now();
    let mut order: Vec<usize> = (0..n).collect();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    loop {
        shuffle(&mut order, &mut seed);
        let mut running = false;
        for &i in &order {
            let (f, s) = (&mut fs[i], &mut samples[i]);
            let Ok((reps, v)) = s else { continue };
            let t = Instant::now();
            match (0..*reps).try_for_each(|_| f()) {
                Ok(()) => v.push(t.elapsed().as_secs_f64() / *reps as f64),
                Err(e) => *s = Err(e),
            }
            running = true;
        }
        let fewest = samples.iter().filter_map(|s| s.as_ref().ok()).map(|(_, v)| v.len()).min().unwrap_or(0);
        // The whole budget, however short the calls: a sample lasts at least `SAMPLE_MIN`. (Single
        // calls stopped at 1,000, a millisecond or two for a 2 KiB input: too short a stretch of
        // a noisy machine.)
        if !running || (fewest >= 3 && start.elapsed() >= total) {
            break;
        }
    }
    samples
        .into_iter()
        .map(|s| {
            s.map(|(_, mut v)| {
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            })
        })
        .collect()
}

/// Puts `order` in a pseudo-random order (Fisher-Yates, xorshift64 from `seed`, which it advances).
fn shuffle(order: &mut [usize], seed: &mut u64) {
    for i in (1..order.len()).rev() {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        order.swap(i, (*seed % (i as u64 + 1)) as usize);
    }
}

/// The bench's input, written by all the pool's threads: each page is then placed near a thread
/// that first touched it, as for data that a multi-threaded program produced, instead of all on
/// the memory node of one thread, which slows a GPU's upload from it by about a quarter
/// (docs/performance.md).
fn input_data(len: usize) -> Vec<u8> {
    use rayon::prelude::*;
    let mut data = vec![0u8; len];
    data.par_chunks_mut(1 << 20).enumerate().for_each(|(k, piece)| {
        for (i, b) in piece.iter_mut().enumerate() {
            *b = (((k << 20) + i) % 251) as u8;
        }
    });
    data
}

fn size_label(n: u64) -> String {
    match n {
        n if n >= 1 << 30 && n % (1 << 30) == 0 => format!("{} GiB", n >> 30),
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} B"),
    }
}

/// The GPU-specific measurements: end to end with its parts, and from a device buffer.
trait GpuBench {
    fn timed(&self, data: &[u8]) -> Result<[f64; 3], String>;
    fn resident(&self, data: &[u8], budget: Duration) -> Result<f64, String>;
}

#[cfg(feature = "opencl")]
struct OpenClBench(b3accel::opencl::OpenClBackend);

#[cfg(feature = "opencl")]
impl GpuBench for OpenClBench {
    fn timed(&self, data: &[u8]) -> Result<[f64; 3], String> {
        let t = self.0.hash_timed(data, &Mode::Hash).map_err(|e| e.to_string())?;
        Ok([t.upload.as_secs_f64(), t.kernel.as_secs_f64(), t.download.as_secs_f64()])
    }
    fn resident(&self, data: &[u8], budget: Duration) -> Result<f64, String> {
        let buf = ocl::Buffer::<u8>::builder()
            .queue(self.0.queue().clone())
            .len(data.len())
            .copy_host_slice(data)
            .build()
            .map_err(|e| format!("allocating a {} buffer: {e}", size_label(data.len() as u64)))?;
        time(budget, || self.0.hash_buffer(&buf, &Mode::Hash).map(drop).map_err(|e| e.to_string()))
    }
}

#[cfg(feature = "wgpu")]
struct WgpuBench(b3accel::wgpu::WgpuBackend);

#[cfg(feature = "wgpu")]
impl GpuBench for WgpuBench {
    fn timed(&self, data: &[u8]) -> Result<[f64; 3], String> {
        let t = self.0.hash_timed(data, &Mode::Hash).map_err(|e| e.to_string())?;
        Ok([t.upload.as_secs_f64(), t.kernel.as_secs_f64(), t.download.as_secs_f64()])
    }
    fn resident(&self, data: &[u8], budget: Duration) -> Result<f64, String> {
        use wgpu::util::DeviceExt;
        let buf = self.0.device().create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("b3accel bench input"),
            contents: data,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        });
        let r = time(budget, || {
            self.0.resident().hash(&buf, 0, data.len() as u64, &Mode::Hash).map(drop).map_err(|e| e.to_string())
        });
        buf.destroy();
        r
    }
}

/// A GPU device under test, with its backend's timed and device-buffer entry points.
struct Gpu {
    info: DeviceInfo,
    extra: Option<Box<dyn GpuBench>>,
}

fn open_gpus() -> Vec<Gpu> {
    let mut gpus = Vec::new();
    for info in b3accel::devices().into_iter().filter(|d| d.device != Device::Cpu) {
        if b3accel::backend(info.device).is_err() {
            continue;
        }
        let extra: Option<Box<dyn GpuBench>> = match info.device {
            #[cfg(feature = "opencl")]
            Device::OpenCl(i) => {
                b3accel::opencl::OpenClBackend::open(i).ok().map(|b| Box::new(OpenClBench(b)) as Box<dyn GpuBench>)
            }
            #[cfg(feature = "wgpu")]
            Device::Wgpu(i) => {
                b3accel::wgpu::WgpuBackend::open(i).ok().map(|b| Box::new(WgpuBench(b)) as Box<dyn GpuBench>)
            }
            _ => None,
        };
        gpus.push(Gpu { info, extra });
    }
    gpus
}

/// A device list measured from host memory.
struct List {
    /// The series: "all (cpu+opencl:1)", "list cpu+wgpu:0", ...
    series: String,
    /// What the row is, for the legend under the table.
    about: String,
    spread: Spread,
}

/// The device lists to measure: `all` (every hardware device); the CPU with each hardware GPU,
/// where there are several; on a machine without a hardware GPU, where `all` is the CPU alone,
/// every device found, software GPUs included, so that the list's choice is measured too. Their
/// GPUs are open already (`open_gpus`): each list measures them in its first calls and keeps
/// them only where they make its calls faster (`b3accel::spread`).
fn device_lists(gpus: &[Gpu]) -> Vec<List> {
    let all = b3accel::spread::hardware_devices();
    let mut lists =
        vec![(format!("all ({})", list_name(&all)), "every hardware device (--backend all)".to_string(), all.clone())];
    let hardware: Vec<Device> = all.iter().copied().filter(|&d| d != Device::Cpu).collect();
    if hardware.len() > 1 {
        for &g in &hardware {
            let list = [Device::Cpu, g];
            lists.push((format!("list {}", list_name(&list)), format!("the CPU with {g} alone"), list.to_vec()));
        }
    }
    if hardware.is_empty() && !gpus.is_empty() {
        let every: Vec<Device> = std::iter::once(Device::Cpu).chain(gpus.iter().map(|g| g.info.device)).collect();
        lists.push((
            format!("list {}", list_name(&every)),
            "every device found, software GPUs included (no hardware GPU here)".to_string(),
            every,
        ));
    }
    lists
        .into_iter()
        .filter_map(|(series, about, devices)| match Spread::new(&devices) {
            Ok(s) => Some(List { series, about, spread: s.with_min_bytes(SPREAD_FROM) }),
            Err(e) => {
                eprintln!("bench: {}: {e}", list_name(&devices));
                None
            }
        })
        .collect()
}

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
                add(format!("{dev} resident"), x.resident(input, budget), None, None);
            }
        }
    }

    if !args.no_merkle {
        bench_merkle(&mut rows, &gpus, budget, args.large, &one_thread);
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

fn describe(machine: &serde_json::Value) -> String {
    let mut s = format!(
        "{} ({} threads, {}); b3accel {}",
        machine["cpu"].as_str().unwrap_or("?"),
        machine["threads"],
        machine["cpu_simd"].as_str().unwrap_or("?"),
        machine["version"].as_str().unwrap_or("?"),
    );
    for g in machine["gpus"].as_array().into_iter().flatten() {
        let _ = write!(
            s,
            "; {} {} ({}, {}{})",
            g["device"].as_str().unwrap_or("?"),
            g["name"].as_str().unwrap_or("?"),
            g["api"].as_str().unwrap_or("?"),
            g["driver"].as_str().unwrap_or("?"),
            if g["software"].as_bool() == Some(true) { ", software" } else { "" },
        );
    }
    s
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

/// The tables: GB/s by series and size for hashing, the GPU breakdown, then Merkle and hash_many.
fn render(machine: &serde_json::Value, rows: &[Row]) -> String {
    let mut s = format!("b3accel bench on {}\n\n", describe(machine));
    let hash: Vec<&Row> = rows.iter().filter(|r| r.test == "hash").collect();
    let sizes = size_columns(&hash);
    let series = series_names(&hash);
    let width = series.iter().map(|n| n.len() + 2).max().unwrap_or(0).max(26);
    let _ = write!(s, "Hashing throughput, GB/s (median of repeated calls)\n{:<width$}", "series");
    for (_, l) in &sizes {
        let _ = write!(s, "{l:>9}");
    }
    s.push('\n');
    for name in &series {
        let _ = write!(s, "{name:<width$}");
        for (b, _) in &sizes {
            match hash.iter().find(|r| r.series == *name && r.bytes == *b) {
                Some(r) => {
                    let _ = write!(s, "{:>9.2}", r.gbps());
                }
                None => s.push_str(&format!("{:>9}", "-")),
            }
        }
        s.push('\n');
    }
    for l in machine["lists"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "  {}: {}, from host memory; inputs of {} or more are spread over its devices",
            l["series"].as_str().unwrap_or("?"),
            l["about"].as_str().unwrap_or("?"),
            size_label(l["spread_from_bytes"].as_u64().unwrap_or(0)),
        );
    }
    let spread: Vec<&&Row> = hash.iter().filter(|r| r.shares.is_some()).collect();
    if !spread.is_empty() {
        let _ = writeln!(
            s,
            "\nDevice lists: the list's speed over its best single device's (the CPU alone, or one \
             device's host row), and each device's share of the bytes of the last call\n\
             {:<width$}{:>9}{:>8}  {:<16}shares",
            "series", "size", "x best", "best"
        );
        for r in spread {
            let shares = r.shares.as_deref().unwrap_or_default();
            let total = shares.iter().map(|x| x.1).sum::<u64>().max(1) as f64;
            let each: Vec<String> =
                shares.iter().map(|(d, b)| format!("{d} {:.1}%", 100.0 * *b as f64 / total)).collect();
            let single = |d: &Device| if *d == Device::Cpu { "cpu".to_string() } else { format!("{d} host") };
            let best = shares
                .iter()
                .filter_map(|(d, _)| hash.iter().find(|b| b.bytes == r.bytes && b.series == single(d)))
                .max_by(|a, b| a.gbps().total_cmp(&b.gbps()));
            let (ratio, name) = best.map_or(("-".to_string(), "-"), |b| (format!("{:.2}", r.gbps() / b.gbps()), b.series.as_str()));
            let _ = writeln!(s, "{:<width$}{:>9}{:>8}  {:<16}{}", r.series, r.label, ratio, name, each.join(", "));
        }
    }
    let parts: Vec<&&Row> = hash.iter().filter(|r| r.parts.is_some()).collect();
    if !parts.is_empty() {
        let _ = writeln!(
            s,
            "\nGPU from host memory, one timed call: milliseconds\n{:<26}{:>9}{:>10}{:>10}{:>10}{:>10}{:>9}",
            "series", "size", "upload", "kernel", "download", "median", "GB/s"
        );
        for r in parts {
            let p = r.parts.unwrap_or_default();
            let _ = writeln!(
                s,
                "{:<26}{:>9}{:>10.3}{:>10.3}{:>10.3}{:>10.3}{:>9.2}",
                r.series,
                r.label,
                p[0] * 1e3,
                p[1] * 1e3,
                p[2] * 1e3,
                r.seconds * 1e3,
                r.gbps()
            );
        }
    }
    for (test, title) in [("merkle", "Merkle roots"), ("hash_many", "hash_many")] {
        let t: Vec<&Row> = rows.iter().filter(|r| r.test == test).collect();
        if t.is_empty() {
            continue;
        }
        let _ = writeln!(s, "\n{title}: milliseconds per call (speed-up over the upstream loop)");
        for r in &t {
            let base = t.iter().find(|b| b.label == r.label && b.series == "upstream loop").map(|b| b.seconds);
            let _ = writeln!(
                s,
                "{:<26}{:>16}{:>12.3}{}",
                r.series,
                r.label,
                r.seconds * 1e3,
                base.map_or(String::new(), |b| format!("   ({:.1}x)", b / r.seconds))
            );
        }
    }
    s
}

/// The sizes of `rows`, smallest first, with their labels: the table's and the plot's columns.
fn size_columns(rows: &[&Row]) -> Vec<(u64, String)> {
    let mut sizes: Vec<(u64, String)> = rows.iter().map(|r| (r.bytes, r.label.clone())).collect();
    sizes.sort();
    sizes.dedup();
    sizes
}

/// The series of `rows`, in the order first measured.
fn series_names<'a>(rows: &[&'a Row]) -> Vec<&'a str> {
    let mut series: Vec<&str> = Vec::new();
    for r in rows {
        if !series.contains(&r.series.as_str()) {
            series.push(&r.series);
        }
    }
    series
}

/// Line colours and dash patterns: series `i` gets colour `i % 10` and pattern `i / 10`, so
/// every one of the first 40 series has a style of its own (the legend shows each).
const COLORS: [&str; 10] =
    ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
const DASHES: [&str; 4] = ["", "8 4", "2 3", "10 3 2 3"];

fn line_style(i: usize) -> (&'static str, String) {
    let dash = DASHES[(i / COLORS.len()) % DASHES.len()];
    (COLORS[i % COLORS.len()], if dash.is_empty() { String::new() } else { format!(" stroke-dasharray=\"{dash}\"") })
}

/// `text` cut at spaces into lines of at most `max` characters (a longer word gets a line of
/// its own).
fn wrap(text: &str, max: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ') {
        match lines.last_mut() {
            Some(line) if line.len() + 1 + word.len() <= max => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// Throughput against size, log-log, one polyline per series, as a standalone SVG. The title
/// (the machine) is wrapped to the picture's width; the legend shows each series' line.
fn plot(machine: &serde_json::Value, rows: &[Row]) -> String {
    let hash: Vec<&Row> = rows.iter().filter(|r| r.test == "hash").collect();
    let series = series_names(&hash);
    let w = 1000.0;
    // About 6.5 px per character at 11 px: the machine's description in lines that fit.
    let title = wrap(&describe(machine), ((w - 40.0) / 6.5) as usize);
    let (left, right, bottom) = (80.0, 290.0, 60.0);
    let top = 44.0 + 14.0 * title.len() as f64;
    let legend_end = top + 16.0 * series.len() as f64 + 10.0;
    let h = (top + 480.0 + bottom).max(legend_end + bottom);
    let xs: Vec<f64> = hash.iter().map(|r| (r.bytes as f64).log2()).collect();
    let ys: Vec<f64> = hash.iter().map(|r| r.gbps().max(1e-3).log10()).collect();
    let (x0, x1) = (xs.iter().cloned().fold(f64::MAX, f64::min), xs.iter().cloned().fold(f64::MIN, f64::max));
    let (y0, y1) =
        (ys.iter().cloned().fold(f64::MAX, f64::min).floor(), ys.iter().cloned().fold(f64::MIN, f64::max).ceil());
    let (x1, y1) = (if x1 > x0 { x1 } else { x0 + 1.0 }, if y1 > y0 { y1 } else { y0 + 1.0 });
    let px = |x: f64| left + (x - x0) / (x1 - x0) * (w - left - right);
    let py = |y: f64| h - bottom - (y - y0) / (y1 - y0) * (h - top - bottom);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"20\" y=\"22\" font-size=\"15\">BLAKE3 throughput (GB/s) by input size</text>\n"
    );
    for (i, line) in title.iter().enumerate() {
        let _ = writeln!(
            s,
            "<text x=\"20\" y=\"{:.1}\" font-size=\"11\" fill=\"#444\">{}</text>",
            40.0 + 14.0 * i as f64,
            xml(line)
        );
    }
    let mut e = y0;
    while e <= y1 {
        let y = py(e);
        let _ = writeln!(
            s,
            "<line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            w - right,
            left - 6.0,
            y + 4.0,
            xml(&format!("{}", 10f64.powf(e)))
        );
        e += 1.0;
    }
    for (b, l) in &size_columns(&hash) {
        let x = px((*b as f64).log2());
        let _ = writeln!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{top}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#eee\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            h - bottom,
            h - bottom + 18.0,
            xml(l)
        );
    }
    for (i, name) in series.iter().enumerate() {
        let (color, dash) = line_style(i);
        let pts: Vec<String> = hash
            .iter()
            .filter(|r| r.series == *name)
            .map(|r| format!("{:.1},{:.1}", px((r.bytes as f64).log2()), py(r.gbps().max(1e-3).log10())))
            .collect();
        let (lx, ly) = (w - right + 10.0, top + 16.0 * i as f64 + 6.0);
        let _ = writeln!(
            s,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"{dash} points=\"{}\"/>\n\
             <line x1=\"{lx:.1}\" y1=\"{ly:.1}\" x2=\"{:.1}\" y2=\"{ly:.1}\" stroke=\"{color}\" stroke-width=\"2\"{dash}/>\n\
             <text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            pts.join(" "),
            lx + 28.0,
            lx + 34.0,
            ly + 4.0,
            xml(name)
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">input size (log scale)</text>",
        left + (w - left - right) / 2.0,
        h - 15.0
    );
    s.push_str("</svg>\n");
    s
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
