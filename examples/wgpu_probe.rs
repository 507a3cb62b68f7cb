//! Probe of the wgpu backend's device-resident paths on one adapter, one case per process (so
//! that a device state one case leaves behind cannot colour the next):
//!
//! - `heaps`: the Vulkan memory heaps and types the adapter offers;
//! - `merkle [--extra N] [--warm-first] [--no-fill] [--hints perf|usage|manual:MiB]`: the root of
//!   2^25 resident leaves, 10 calls, beside N other 1 GiB buffers (filled from the host unless
//!   `--no-fill`), allocated before the first call or (`--warm-first`) after one warm-up call;
//!   with `--hints` the device is opened with those memory hints (a caller's device, hashed
//!   through `ResidentHasher::new`);
//! - `many [--trusted]`: `hash_many_into` of 2^24 64-byte messages, 10 calls;
//! - `resident [--trusted]`: `hash_breakdown` of 1 MiB, 64 MiB and 1 GiB, 20 calls each.
//!
//! ```text
//! cargo run --release --example wgpu_probe -- merkle --extra 6 --warm-first
//! ```

use b3accel::wgpu::{ResidentHasher, ShaderChecks, WgpuBackend, WgpuOptions};
use b3accel::Mode;
use std::time::Duration;

fn flag(args: &[String], f: &str) -> bool {
    args.iter().any(|a| a == f)
}

fn value<'a>(args: &'a [String], f: &str) -> Option<&'a str> {
    args.iter().position(|a| a == f).and_then(|i| args.get(i + 1)).map(String::as_str)
}

fn stats(name: &str, mut v: Vec<Duration>) {
    v.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{name}: min {:.1} us, median {:.1} us, max {:.1} us ({} calls)",
        us(v[0]),
        us(v[v.len() / 2]),
        us(v[v.len() - 1]),
        v.len()
    );
}

/// A discrete Vulkan adapter's device with the given memory hints (the adapter's own limits).
fn own_device(hints: wgpu::MemoryHints) -> (wgpu::Device, wgpu::Queue) {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::VULKAN;
    let instance = wgpu::Instance::new(desc);
    let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::VULKAN));
    let adapter = adapters
        .iter()
        .find(|a| a.get_info().device_type == wgpu::DeviceType::DiscreteGpu)
        .or(adapters.first())
        .expect("a Vulkan adapter");
    let features = adapter.features() & (wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS);
    pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("probe"),
        required_features: features,
        required_limits: adapter.limits(),
        memory_hints: hints,
        ..Default::default()
    }))
    .expect("a device")
}

fn heaps() {
    use wgpu::hal::api::Vulkan;
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::VULKAN;
    let instance = wgpu::Instance::new(desc);
    for adapter in pollster::block_on(instance.enumerate_adapters(wgpu::Backends::VULKAN)) {
        println!("{}", adapter.get_info().name);
        // SAFETY: a Vulkan adapter of a Vulkan instance.
        let Some(hal) = (unsafe { adapter.as_hal::<Vulkan>() }) else { continue };
        let inst = hal.shared_instance().raw_instance();
        // SAFETY: a valid physical device of this instance.
        let props = unsafe { inst.get_physical_device_memory_properties(hal.raw_physical_device()) };
        for (i, h) in props.memory_heaps_as_slice().iter().enumerate() {
            println!("  heap {i}: {} MiB {:?}", h.size >> 20, h.flags);
        }
        for (i, t) in props.memory_types_as_slice().iter().enumerate() {
            println!("  type {i}: heap {} {:?}", t.heap_index, t.property_flags);
        }
    }
}

fn merkle(args: &[String]) {
    let extra: usize = value(args, "--extra").map_or(0, |v| v.parse().expect("--extra N"));
    let hints = match value(args, "--hints") {
        None => None,
        Some("perf") => Some(wgpu::MemoryHints::Performance),
        Some("usage") => Some(wgpu::MemoryHints::MemoryUsage),
        Some(m) => {
            let mib: u64 = m.strip_prefix("manual:").and_then(|x| x.parse().ok()).expect("--hints manual:MiB");
            Some(wgpu::MemoryHints::Manual { suballocated_device_memory_block_size: (mib << 20)..(mib << 20) })
        }
    };
    let backend;
    let (device, queue, hasher) = match hints {
        None => {
            backend = WgpuBackend::open(0).expect("wgpu:0");
            (backend.device().clone(), backend.queue().clone(), backend.resident().clone())
        }
        Some(h) => {
            let (d, q) = own_device(h);
            let r = ResidentHasher::new(&d, &q).expect("a resident hasher");
            (d, q, r)
        }
    };
    println!("{} ({args:?})", device.adapter_info().name);
    let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
    let make = |label, size| device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size, usage, mapped_at_creation: false });
    let n = 1u64 << 25;
    let leaves: Vec<u8> = (0..32 * n).map(|i| (i.wrapping_mul(0x9E37_79B9) >> 7) as u8).collect();
    let buf = make("leaves", 32 * n);
    queue.write_buffer(&buf, 0, &leaves);
    let expected = b3accel::merkle_root(b3accel::Device::Cpu, leaves.as_chunks::<32>().0).unwrap();
    if flag(args, "--warm-first") {
        let (root, t) = hasher.merkle_root_timed(&buf, 0, n).unwrap();
        assert_eq!(root, expected);
        println!("warm-up call before the other buffers: device {:?}", t.kernel);
    }
    let ones = vec![1u8; 1 << 30];
    let others: Vec<wgpu::Buffer> = (0..extra)
        .map(|_| {
            let b = make("other", 1 << 30);
            if !flag(args, "--no-fill") {
                queue.write_buffer(&b, 0, &ones);
            }
            b
        })
        .collect();
    let mut device_times = Vec::new();
    let mut walls = Vec::new();
    for _ in 0..10 {
        let (root, t) = hasher.merkle_root_timed(&buf, 0, n).unwrap();
        assert_eq!(root, expected);
        device_times.push(t.kernel);
        walls.push(t.total);
    }
    stats("merkle 2^25 device", device_times);
    stats("merkle 2^25 wall", walls);
    drop(others);
}

fn open(args: &[String]) -> WgpuBackend {
    let checks = if flag(args, "--trusted") { ShaderChecks::Trusted } else { ShaderChecks::BoundsChecked };
    WgpuBackend::open_with(0, WgpuOptions { checks, ..Default::default() }).expect("wgpu:0")
}

fn storage(gpu: &WgpuBackend, data: &[u8], extra: wgpu::BufferUsages) -> wgpu::Buffer {
    let b = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: data.len().max(4) as u64,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | extra,
        mapped_at_creation: false,
    });
    gpu.queue().write_buffer(&b, 0, data);
    b
}

fn many(args: &[String]) {
    let gpu = open(args);
    let count = 1usize << 24;
    let data: Vec<u8> = (0..64 * count).map(|i| (i % 251) as u8).collect();
    let src = storage(&gpu, &data, wgpu::BufferUsages::empty());
    let out = storage(&gpu, &vec![0u8; 32 * count], wgpu::BufferUsages::COPY_SRC);
    let r = gpu.resident();
    let mut walls = Vec::new();
    let mut kernels = Vec::new();
    for _ in 0..10 {
        let t = r.hash_many_into_timed(&src, 0, count, 64, &Mode::Hash, &out, 0).unwrap();
        walls.push(t.total);
        kernels.push(t.kernel);
    }
    // Spot check against upstream: a few messages read back through hash_many (host results).
    let some = r.hash_many(&src, 64 * 1000, 3, 64, &Mode::Hash).unwrap();
    for (i, h) in some.iter().enumerate() {
        assert_eq!(*h, blake3::hash(&data[64 * (1000 + i)..64 * (1001 + i)]));
    }
    let g = |d: Duration| count as f64 / d.as_secs_f64() / 1e9;
    stats("many 2^24 x 64 B wall", walls.clone());
    stats("many 2^24 x 64 B kernel", kernels.clone());
    walls.sort();
    println!("best: {:.2} G hashes/s wall", g(walls[0]));
}

fn resident(args: &[String]) {
    let gpu = open(args);
    let r = gpu.resident();
    for len in [1u64 << 20, 64 << 20, 1 << 30] {
        let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let buf = storage(&gpu, &data, wgpu::BufferUsages::empty());
        let expected = blake3::hash(&data);
        let mut all = Vec::new();
        for _ in 0..20 {
            let (h, b) = r.hash_breakdown(&buf, 0, len, &Mode::Hash).unwrap();
            assert_eq!(h, expected);
            all.push(b);
        }
        all.sort_by_key(|b| b.total);
        let b = all[all.len() / 2];
        println!(
            "{} MiB: median total {:?} ({:.1} GB/s): encode {:?} submit {:?} wait {:?} read {:?} finish {:?}; device: before {:?} passes {:?} after {:?}; latency {:?}",
            len >> 20,
            b.total,
            len as f64 / b.total.as_secs_f64() / 1e9,
            b.encode,
            b.submit,
            b.wait,
            b.read,
            b.finish,
            b.before_passes,
            b.passes,
            b.after_passes,
            b.latency()
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("heaps") => heaps(),
        Some("merkle") => merkle(&args),
        Some("many") => many(&args),
        Some("resident") => resident(&args),
        _ => eprintln!("usage: wgpu_probe heaps | merkle [...] | many [--trusted] | resident [--trusted]"),
    }
}
