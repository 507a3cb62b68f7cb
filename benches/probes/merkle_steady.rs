//! Merkle roots of device-resident leaves, call after call: is every call as fast as the best?
//! Allocates `--extra` other 1 GiB buffers first (touched, so the driver places them), then the
//! leaves (uploads finished before the first call), then times `--calls` consecutive roots, the first call after creating the leaves
//! included; each call's wall time and device time are printed, then the spread.
//!
//! ```text
//! cargo run --release -p b3accel-probes --features opencl --bin merkle_steady -- wgpu:0 [--leaves-log2 25] [--calls 20] [--extra 6] [--warm-log2 K] [--merkle-levels N] [--trusted]
//! cargo run --release -p b3accel-probes --features opencl --bin merkle_steady -- opencl:0 --leaves-log2 20
//! ```

// Built without a GPU backend, main can only refuse the device: the helpers below go unused.
#![cfg_attr(not(any(feature = "wgpu", feature = "opencl")), allow(dead_code))]

use b3accel::Device;
#[cfg(any(feature = "wgpu", feature = "opencl"))]
use b3accel::{MerkleInner, Resident};
use std::time::Duration;

fn arg<T: std::str::FromStr>(args: &[String], flag: &str, default: T) -> T {
    match args.iter().position(|a| a == flag) {
        Some(i) => args.get(i + 1).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{flag} needs a number")),
        None => default,
    }
}

fn leaves(log2: u32) -> Vec<u8> {
    (0..(32u64 << log2)).map(|i| (i.wrapping_mul(0x9E37_79B9) >> 7) as u8).collect()
}

fn report(times: &[(Duration, Duration)], expected: &blake3::Hash, roots: &[blake3::Hash]) {
    for (i, ((wall, device), root)) in times.iter().zip(roots).enumerate() {
        println!(
            "call {i:2}: wall {:8.1} us  device {:8.1} us  {}",
            wall.as_secs_f64() * 1e6,
            device.as_secs_f64() * 1e6,
            if root == expected { "ok" } else { "WRONG ROOT" }
        );
    }
    let mut walls: Vec<f64> = times.iter().map(|t| t.0.as_secs_f64() * 1e6).collect();
    walls.sort_by(f64::total_cmp);
    println!(
        "wall us: min {:.1} median {:.1} max {:.1} (max/min {:.2})",
        walls[0],
        walls[walls.len() / 2],
        walls[walls.len() - 1],
        walls[walls.len() - 1] / walls[0]
    );
}

#[cfg(feature = "wgpu")]
fn run_wgpu(
    index: usize,
    log2: u32,
    calls: usize,
    extra: usize,
    args: &[String],
) -> Result<(), Box<dyn std::error::Error>> {
    // --warm-log2 K: one root of 2^K other leaves before the timed calls.
    let warm: Option<u32> = args.iter().any(|a| a == "--warm-log2").then(|| arg(args, "--warm-log2", 10));
    // --merkle-levels N: levels per Merkle dispatch instead of the default.
    let levels: Option<u32> = args.iter().any(|a| a == "--merkle-levels").then(|| arg(args, "--merkle-levels", 4));
    // --trusted: the shader module without wgpu's run-time bounds checks.
    let checks = if args.iter().any(|a| a == "--trusted") {
        b3accel::wgpu::ShaderChecks::Trusted
    } else {
        b3accel::wgpu::ShaderChecks::default()
    };
    let opts = b3accel::wgpu::WgpuOptions { merkle_levels: levels, checks, ..Default::default() };
    let gpu = b3accel::wgpu::WgpuBackend::open_with(index, opts)?;
    println!("{} (wgpu:{index}), features {:?}", gpu.device().adapter_info().name, gpu.device().features());
    let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
    let make = |label, size| {
        gpu.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage,
            mapped_at_creation: false,
        })
    };
    let ones = vec![1u8; 1 << 30];
    let others: Vec<wgpu::Buffer> = (0..extra)
        .map(|_| {
            let b = make("other", 1 << 30);
            gpu.queue().write_buffer(&b, 0, &ones);
            b
        })
        .collect();
    let data = leaves(log2);
    let buf = make("leaves", data.len() as u64);
    gpu.queue().write_buffer(&buf, 0, &data);
    // wgpu defers `write_buffer` to the next submission: without this the first call would also
    // time the upload of every buffer above (7 GiB by default). OpenCL's uploads above block.
    let flushed = gpu.queue().submit([]);
    gpu.device().poll(wgpu::PollType::Wait { submission_index: Some(flushed), timeout: None })?;
    let expected = b3accel::merkle_root(Device::Cpu, data.as_chunks::<32>().0)?;
    if let Some(k) = warm {
        // One root of 2^k other leaves first: what of the first call's cost is the device's
        // first Merkle call at all, and what is the first call of this size.
        let small = leaves(k);
        let b = make("warm-up leaves", small.len() as u64);
        gpu.queue().write_buffer(&b, 0, &small);
        let t = std::time::Instant::now();
        gpu.resident().merkle_root(&b, 0, 1 << k, MerkleInner::None)?;
        println!("warm-up root of 2^{k} leaves: {:.1} us", t.elapsed().as_secs_f64() * 1e6);
    }
    let mut times = Vec::new();
    let mut roots = Vec::new();
    for _ in 0..calls {
        let (root, t) = gpu.resident().merkle_root(&buf, 0, 1 << log2, MerkleInner::None)?.into_parts();
        times.push((t.total, t.kernel));
        roots.push(root);
    }
    report(&times, &expected, &roots);
    drop(others);
    Ok(())
}

#[cfg(feature = "opencl")]
fn run_opencl(index: usize, log2: u32, calls: usize, extra: usize) -> Result<(), Box<dyn std::error::Error>> {
    use b3accel::opencl::OpenClBackend;
    let gpu = OpenClBackend::open(index)?;
    let make = |data: &[u8]| {
        ocl::Buffer::<u8>::builder().queue(gpu.queue().clone()).len(data.len()).copy_host_slice(data).build()
    };
    let ones = vec![1u8; 1 << 30];
    let others: Vec<ocl::Buffer<u8>> = (0..extra).map(|_| make(&ones)).collect::<Result<_, _>>()?;
    let data = leaves(log2);
    let buf = make(&data)?;
    let expected = b3accel::merkle_root(Device::Cpu, data.as_chunks::<32>().0)?;
    let mut times = Vec::new();
    let mut roots = Vec::new();
    for _ in 0..calls {
        let (root, p) = gpu.merkle_root(&buf, 0, 1 << log2, MerkleInner::None)?.into_parts();
        times.push((p.total, p.kernel));
        roots.push(root);
    }
    report(&times, &expected, &roots);
    drop(others);
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let device: Device = args.first().map(|s| s.parse()).transpose()?.unwrap_or(Device::Wgpu(0));
    let log2: u32 = arg(&args, "--leaves-log2", 25);
    let calls: usize = arg(&args, "--calls", 20);
    let extra: usize = arg(&args, "--extra", 6);
    println!("{device}: 2^{log2} leaves, {calls} calls, {extra} other 1 GiB buffers");
    // --hold DEVICE: keep another device open (idle) meanwhile, e.g. an OpenCL context on the same
    // GPU, to see whether the driver's clock policy for it changes this device's times.
    let _held = match args.iter().position(|a| a == "--hold") {
        Some(i) => {
            let other: Device = args.get(i + 1).ok_or("--hold DEVICE")?.parse()?;
            println!("holding {other} open");
            Some(b3accel::backend(other)?)
        }
        None => None,
    };
    match device {
        #[cfg(feature = "wgpu")]
        Device::Wgpu(i) => run_wgpu(i, log2, calls, extra, &args),
        #[cfg(feature = "opencl")]
        Device::OpenCl(i) => run_opencl(i, log2, calls, extra),
        other => Err(format!("{other}: not a GPU device this build has").into()),
    }
}
