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
//! - `resident [--trusted] [--mib 1,64,1024]`: the breakdown (`Timed::detail`) of resident
//!   hashes of buffers of those sizes (in MiB), 20 calls each;
//! - `resident-wall [--mib ...]`: the wall time of `hash` calls of the same sizes, by the host's
//!   clock around each call;
//! - `firsts`: the first resident hash, Merkle root and hash_many on a fresh device, then again;
//! - `floor`: wgpu's own cost per call: an empty submission, and a 32-byte copy read back;
//! - `costs`: the host's cost of each wgpu step a resident hash takes (error scopes, a bind
//!   group, encoding a pass, a parameter write), and a one-dispatch submission read back through
//!   a copy or (where the device has mappable storage) where the dispatch wrote;
//! - `placement [--order leaves-first|extras-first] [--extra N] [--fill write|mapped|none]
//!   [--leaves wgpu|dedicated] [--hints perf|usage] [--warm-ms N]`: where 2^25 Merkle leaves
//!   and the other 1 GiB buffers land (the allocator's blocks, the Vulkan heaps' usage) and what
//!   it costs: the Merkle root, a resident hash and a device copy of the same 1 GiB buffer.
//!   `dedicated` allocates the leaves itself (one `VkDeviceMemory` of a DEVICE_LOCAL-only type,
//!   marked dedicated) and hands them to wgpu; `--warm-ms` keeps the device busy that long
//!   before measuring; the phases carry Unix times to line them up with `nvidia-smi` samples;
//! - `many-host`: `hash_many` of 2^24 64-byte messages back to host memory, beside the raw
//!   device-to-host rate of the same 512 MiB (copy into a mapped buffer, and that plus a memcpy).
//!
//! ```text
//! cargo run --release -p b3accel-probes --bin wgpu_probe -- merkle --extra 6 --warm-first
//! ```

mod timed;

use b3accel::wgpu::{ResidentHasher, ShaderChecks, WgpuBackend, WgpuOptions};
use b3accel::{MerkleInner, Mode, Resident};
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
    let features =
        adapter.features() & (wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS);
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
    let make = |label, size| {
        device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size, usage, mapped_at_creation: false })
    };
    let n = 1u64 << 25;
    let leaves: Vec<u8> = (0..32 * n).map(|i| (i.wrapping_mul(0x9E37_79B9) >> 7) as u8).collect();
    let buf = make("leaves", 32 * n);
    queue.write_buffer(&buf, 0, &leaves);
    let expected = b3accel::merkle_root(b3accel::Device::Cpu, leaves.as_chunks::<32>().0).unwrap();
    if flag(args, "--warm-first") {
        let (root, t) = hasher.merkle_root(&buf, 0, n as usize, MerkleInner::None).unwrap().into_parts();
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
        let (root, t) = hasher.merkle_root(&buf, 0, n as usize, MerkleInner::None).unwrap().into_parts();
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
        let t = r.hash_many_into(&src, 0, count, 64, &Mode::Hash, &out, 0).unwrap();
        walls.push(t.total);
        kernels.push(t.kernel);
    }
    // Spot check against upstream: a few messages read back through hash_many (host results).
    let some = r.hash_many(&src, 64 * 1000, 3, 64, &Mode::Hash).unwrap().value;
    for (i, h) in some.iter().enumerate() {
        assert_eq!(*h, blake3::hash(&data[64 * (1000 + i)..64 * (1001 + i)]));
    }
    let g = |d: Duration| count as f64 / d.as_secs_f64() / 1e9;
    stats("many 2^24 x 64 B wall", walls.clone());
    stats("many 2^24 x 64 B kernel", kernels.clone());
    walls.sort();
    println!("best: {:.2} G hashes/s wall", g(walls[0]));
}

/// Runs `f` on device-resident inputs of 1 MiB, 64 MiB and 1 GiB in turn: (length, buffer, the
/// expected hash).
/// Runs `f` on a device-resident buffer of each size `--mib LIST` names (default 1,64,1024).
fn each_resident(args: &[String], gpu: &WgpuBackend, mut f: impl FnMut(u64, &wgpu::Buffer, blake3::Hash)) {
    let mib: Vec<u64> =
        value(args, "--mib").unwrap_or("1,64,1024").split(',').map(|m| m.parse().expect("--mib takes MiB")).collect();
    for len in mib.into_iter().map(|m| m << 20) {
        let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let buf = storage(gpu, &data, wgpu::BufferUsages::empty());
        f(len, &buf, blake3::hash(&data));
    }
}

fn resident(args: &[String]) {
    let gpu = open(args);
    let r = gpu.resident();
    each_resident(args, &gpu, |len, buf, expected| {
        let mut all = Vec::new();
        for _ in 0..20 {
            let (h, b) = r.hash(buf, 0..len, &Mode::Hash).unwrap().into_parts();
            assert_eq!(h, expected);
            all.push(b);
        }
        all.sort_by_key(|b| b.total);
        let b = &all[all.len() / 2];
        println!(
            "{} MiB: median total {:?} ({:.1} GB/s): {}",
            len >> 20,
            b.total,
            len as f64 / b.total.as_secs_f64() / 1e9,
            timed::detail_line(b)
        );
    });
}

/// The device's memory heaps as Vulkan's memory-budget extension reports them: (usage, budget)
/// per heap, in MiB.
fn heap_usage(device: &wgpu::Device) -> Vec<(u64, u64)> {
    use ash::vk;
    use wgpu::hal::api::Vulkan;
    // SAFETY: a Vulkan device; the physical device and instance are its own.
    unsafe {
        let Some(hal) = device.as_hal::<Vulkan>() else { return Vec::new() };
        let inst = hal.shared_instance().raw_instance();
        let mut budget = vk::PhysicalDeviceMemoryBudgetPropertiesEXT::default();
        let mut props = vk::PhysicalDeviceMemoryProperties2::default().push_next(&mut budget);
        inst.get_physical_device_memory_properties2(hal.raw_physical_device(), &mut props);
        let n = props.memory_properties.memory_heap_count as usize;
        (0..n).map(|i| (budget.heap_usage[i] >> 20, budget.heap_budget[i] >> 20)).collect()
    }
}

/// A storage buffer in its own `VkDeviceMemory` of the first DEVICE_LOCAL-only memory type,
/// allocated as a dedicated allocation, wrapped for wgpu (which frees it when dropped).
fn dedicated_buffer(device: &wgpu::Device, label: &str, size: u64) -> wgpu::Buffer {
    use ash::vk;
    use wgpu::hal::api::Vulkan;
    // SAFETY: every handle is created here on this device, bound before use, and handed to
    // wgpu with the usage it was created with.
    let hal_buffer = unsafe {
        let hal = device.as_hal::<Vulkan>().expect("a Vulkan device");
        let raw = hal.raw_device();
        let inst = hal.shared_instance().raw_instance();
        let props = inst.get_physical_device_memory_properties(hal.raw_physical_device());
        let info = vk::BufferCreateInfo::default()
            .size(size)
            .usage(
                vk::BufferUsageFlags::STORAGE_BUFFER
                    | vk::BufferUsageFlags::TRANSFER_DST
                    | vk::BufferUsageFlags::TRANSFER_SRC,
            )
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        let buf = raw.create_buffer(&info, None).expect("vkCreateBuffer");
        let req = raw.get_buffer_memory_requirements(buf);
        let ty = props
            .memory_types_as_slice()
            .iter()
            .enumerate()
            .position(|(i, t)| {
                req.memory_type_bits & (1 << i) != 0 && t.property_flags == vk::MemoryPropertyFlags::DEVICE_LOCAL
            })
            .expect("a DEVICE_LOCAL-only memory type") as u32;
        let mut dedicated = vk::MemoryDedicatedAllocateInfo::default().buffer(buf);
        let alloc =
            vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(ty).push_next(&mut dedicated);
        let mem = raw.allocate_memory(&alloc, None).expect("vkAllocateMemory");
        raw.bind_buffer_memory(buf, mem, 0).expect("vkBindBufferMemory");
        println!("dedicated {label}: type {ty}, size {} MiB, alignment {}", req.size >> 20, req.alignment);
        wgpu::hal::vulkan::Buffer::from_raw_managed(buf, mem, 0, req.size)
    };
    let desc = wgpu::BufferDescriptor {
        label: Some(label),
        size,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    };
    // SAFETY: created on this device's raw handle with the usages of `desc`, and bound.
    unsafe { device.create_buffer_from_hal::<Vulkan>(hal_buffer, &desc) }
}

fn report_allocator(device: &wgpu::Device) {
    let Some(r) = device.generate_allocator_report() else {
        println!("allocator report: none");
        return;
    };
    println!(
        "allocator: {} blocks, {} MiB allocated of {} MiB reserved",
        r.blocks.len(),
        r.total_allocated_bytes >> 20,
        r.total_reserved_bytes >> 20
    );
    for (i, b) in r.blocks.iter().enumerate() {
        let names: Vec<String> = r.allocations[b.allocations.clone()]
            .iter()
            .map(|a| format!("{}@{}+{}K", a.name, a.offset, a.size >> 10))
            .collect();
        println!("  block {i}: {} MiB: {}", b.size >> 20, names.join(", "));
    }
}

/// Seconds since the Unix epoch, to line the probe's phases up with `nvidia-smi` samples.
fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

fn placement(args: &[String]) {
    let extra: usize = value(args, "--extra").map_or(6, |v| v.parse().expect("--extra N"));
    let extras_first = value(args, "--order") == Some("extras-first");
    let fill = value(args, "--fill").unwrap_or("write");
    let dedicated = value(args, "--leaves") == Some("dedicated");
    let hints = match value(args, "--hints") {
        Some("usage") => wgpu::MemoryHints::MemoryUsage,
        _ => wgpu::MemoryHints::Performance,
    };
    let (device, queue) = own_device(hints);
    let hasher = ResidentHasher::new(&device, &queue).expect("a resident hasher");
    println!("{} ({args:?})", device.adapter_info().name);
    let n = 1u64 << 25;
    let bytes = 32 * n;
    let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC;
    let leaves: Vec<u8> = (0..bytes).map(|i| (i.wrapping_mul(0x9E37_79B9) >> 7) as u8).collect();
    let ones = vec![1u8; 1 << 30];
    let make_extras = || -> Vec<wgpu::Buffer> {
        (0..extra)
            .map(|i| {
                let label = format!("other {i}");
                let mapped = fill == "mapped";
                let b = device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(&label),
                    size: 1 << 30,
                    usage,
                    mapped_at_creation: mapped,
                });
                if mapped {
                    b.slice(..).get_mapped_range_mut().expect("mapped").copy_from_slice(&ones);
                    b.unmap();
                } else if fill == "write" {
                    queue.write_buffer(&b, 0, &ones);
                }
                b
            })
            .collect()
    };
    let make_leaves = || {
        let b = if dedicated {
            dedicated_buffer(&device, "leaves", bytes)
        } else {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("leaves"),
                size: bytes,
                usage,
                mapped_at_creation: false,
            })
        };
        queue.write_buffer(&b, 0, &leaves);
        b
    };
    let (buf, others) = if extras_first {
        let o = make_extras();
        (make_leaves(), o)
    } else {
        let l = make_leaves();
        (l, make_extras())
    };
    queue.submit([]);
    device.poll(wgpu::PollType::wait_indefinitely()).expect("poll");
    let expected = b3accel::merkle_root(b3accel::Device::Cpu, leaves.as_chunks::<32>().0).unwrap();
    let want = blake3::hash(&leaves);
    // With --warm-ms: keep the device busy for that long first (resident hashes of the leaves).
    let warm =
        std::time::Duration::from_millis(value(args, "--warm-ms").map_or(0, |v| v.parse().expect("--warm-ms N")));
    let t0 = std::time::Instant::now();
    let mut warm_calls = 0;
    while t0.elapsed() < warm {
        hasher.hash(&buf, 0..bytes, &Mode::Hash).unwrap();
        warm_calls += 1;
    }
    println!("{:.6} measuring (after {warm_calls} warm-up calls)", unix_now());
    let mut merkle = Vec::new();
    for _ in 0..10 {
        let (root, t) = hasher.merkle_root(&buf, 0, n as usize, MerkleInner::None).unwrap().into_parts();
        assert_eq!(root, expected);
        merkle.push(t.kernel);
    }
    let mut hashes = Vec::new();
    for _ in 0..5 {
        let (h, t) = hasher.hash(&buf, 0..bytes, &Mode::Hash).unwrap().into_parts();
        assert_eq!(h, want);
        hashes.push(t.kernel);
    }
    let dst = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("copy target"),
        size: bytes,
        usage,
        mapped_at_creation: false,
    });
    let mut copies = Vec::new();
    for _ in 0..5 {
        let mut enc = device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(&buf, 0, &dst, 0, bytes);
        let t = std::time::Instant::now();
        queue.submit([enc.finish()]);
        device.poll(wgpu::PollType::wait_indefinitely()).expect("poll");
        copies.push(t.elapsed());
    }
    println!("{:.6} measured", unix_now());
    report_allocator(&device);
    for (i, (u, b)) in heap_usage(&device).iter().enumerate() {
        println!("heap {i}: {u} MiB used of a {b} MiB budget");
    }
    stats("merkle 2^25 device", merkle);
    stats("resident hash 1 GiB device", hashes);
    stats("copy 1 GiB wall", copies);
    drop(others);
}

fn many_host(args: &[String]) {
    let gpu = open(args);
    let count = 1usize << 24;
    let data: Vec<u8> = (0..64 * count).map(|i| (i % 251) as u8).collect();
    let src = storage(&gpu, &data, wgpu::BufferUsages::empty());
    let r = gpu.resident();
    let mut walls = Vec::new();
    let mut kernels = Vec::new();
    let mut downloads = Vec::new();
    for _ in 0..5 {
        let (hashes, t) = r.hash_many(&src, 0, count, 64, &Mode::Hash).unwrap().into_parts();
        assert_eq!(hashes[12345], blake3::hash(&data[64 * 12345..64 * 12346]));
        walls.push(t.total);
        kernels.push(t.kernel);
        downloads.push(t.download);
    }
    stats("many to host 2^24 x 64 B wall", walls.clone());
    stats("many to host kernel", kernels);
    stats("many to host download (map + copy out)", downloads);
    walls.sort();
    println!(
        "best: {:.3} G hashes/s, {:.1} GB/s of hashes",
        count as f64 / walls[0].as_secs_f64() / 1e9,
        32.0 * count as f64 / walls[0].as_secs_f64() / 1e9
    );
    // The raw device-to-host rate of the same 512 MiB.
    let size = 32 * count as u64;
    let dev = gpu.device();
    let on_device = storage(&gpu, &vec![7u8; size as usize], wgpu::BufferUsages::COPY_SRC);
    let rb = dev.create_buffer(&wgpu::BufferDescriptor {
        label: Some("readback"),
        size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut host = vec![0u8; size as usize];
    let mut dma = Vec::new();
    let mut whole = Vec::new();
    for _ in 0..5 {
        let t = std::time::Instant::now();
        let mut enc = dev.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(&on_device, 0, &rb, 0, size);
        gpu.queue().submit([enc.finish()]);
        rb.slice(..).map_async(wgpu::MapMode::Read, |r| r.expect("map"));
        dev.poll(wgpu::PollType::wait_indefinitely()).expect("poll");
        dma.push(t.elapsed());
        host.copy_from_slice(&rb.slice(..).get_mapped_range().expect("mapped"));
        rb.unmap();
        whole.push(t.elapsed());
    }
    assert!(host.iter().all(|&b| b == 7));
    stats("D2H 512 MiB copy + map", dma.clone());
    stats("D2H 512 MiB copy + map + memcpy", whole.clone());
    dma.sort();
    whole.sort();
    println!(
        "D2H best: {:.1} GB/s to a mapped buffer, {:.1} GB/s into a Vec",
        size as f64 / dma[0].as_secs_f64() / 1e9,
        size as f64 / whole[0].as_secs_f64() / 1e9
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("heaps") => heaps(),
        Some("merkle") => merkle(&args),
        Some("placement") => placement(&args),
        Some("many-host") => many_host(&args),
        Some("many") => many(&args),
        Some("resident") => resident(&args),
        Some("resident-wall") => resident_wall(&args),
        Some("firsts") => firsts(&args),
        Some("floor") => floor(&args),
        Some("costs") => costs(&args),
        _ => eprintln!("usage: wgpu_probe heaps | merkle [...] | many [--trusted] | resident [--trusted] [--mib L] | resident-wall [--mib L] | firsts | floor | costs | placement [...] | many-host"),
    }
}

/// The first calls of each kind on a fresh device, each timed (wall), then a second of each: what
/// a device's first use of each pipeline costs.
fn firsts(args: &[String]) {
    let t = std::time::Instant::now();
    let gpu = open(args);
    println!("open: {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
    let r = gpu.resident();
    let data: Vec<u8> = (0..(1u64 << 20)).map(|i| (i % 251) as u8).collect();
    let buf = storage(&gpu, &data, wgpu::BufferUsages::empty());
    let flushed = gpu.queue().submit([]);
    gpu.device().poll(wgpu::PollType::Wait { submission_index: Some(flushed), timeout: None }).unwrap();
    let ms = |t: std::time::Instant| t.elapsed().as_secs_f64() * 1e3;
    for round in 0..2 {
        let t = std::time::Instant::now();
        assert_eq!(r.hash(&buf, 0..1 << 20, &Mode::Hash).unwrap().value, blake3::hash(&data));
        let hash = ms(t);
        let t = std::time::Instant::now();
        r.merkle_root(&buf, 0, 1 << 10, MerkleInner::None).unwrap();
        let merkle = ms(t);
        let t = std::time::Instant::now();
        r.hash_many(&buf, 0, 1 << 10, 64, &Mode::Hash).unwrap();
        let many = ms(t);
        println!("round {round}: resident hash 1 MiB {hash:.2} ms, merkle 2^10 {merkle:.2} ms, hash_many 2^10 x 64 B {many:.2} ms");
    }
}

/// wgpu's own floor per call on this device, 500 calls each after 50 unmeasured: an empty
/// submission waited for by polling, and a 32-byte copy into a mapped buffer (submit, map, wait,
/// read, unmap) as a resident hash's readback does it.
fn floor(args: &[String]) {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let gpu = open(args);
    let (device, queue) = (gpu.device(), gpu.queue());
    let until = |register: &dyn Fn(Arc<AtomicBool>)| poll_until(device, register);
    let empty = timed(50, 500, || {
        queue.submit([]);
        until(&|d| queue.on_submitted_work_done(move || d.store(true, Ordering::Release)));
    });
    stats("empty submit + poll", empty);
    let src = storage(&gpu, &[7u8; 256], wgpu::BufferUsages::COPY_SRC);
    let rb = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 256,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let copy = timed(50, 500, || {
        let mut enc = device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(&src, 0, &rb, 0, 32);
        queue.submit([enc.finish()]);
        until(&|d| {
            rb.map_async(wgpu::MapMode::Read, ..32, move |r| {
                r.unwrap();
                d.store(true, Ordering::Release)
            })
        });
        assert_eq!(rb.get_mapped_range(..32).unwrap()[0], 7);
        rb.unmap();
    });
    stats("32-byte copy + map + read", copy);
}

/// Hands `register` a flag for its callback to set, then polls `device` until the callback has
/// run.
fn poll_until(device: &wgpu::Device, register: &dyn Fn(std::sync::Arc<std::sync::atomic::AtomicBool>)) {
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    register(done.clone());
    while !done.load(std::sync::atomic::Ordering::Acquire) {
        device.poll(wgpu::PollType::Poll).unwrap();
        std::thread::yield_now();
    }
}

/// The wall time of each of `n` calls of `f`, after `warm` unmeasured ones.
fn timed(warm: usize, n: usize, mut f: impl FnMut()) -> Vec<Duration> {
    (0..warm + n)
        .filter_map(|i| {
            let t = std::time::Instant::now();
            f();
            (i >= warm).then(|| t.elapsed())
        })
        .collect()
}

/// Wall time of `hash` calls by the host's clock, 200 per size, after 50 unmeasured ones.
fn resident_wall(args: &[String]) {
    let gpu = open(args);
    let r = gpu.resident();
    each_resident(args, &gpu, |len, buf, expected| {
        let times = timed(50, 200, || assert_eq!(r.hash(buf, 0..len, &Mode::Hash).unwrap().value, expected));
        stats(&format!("{} MiB resident wall", len >> 20), times);
    });
}

/// The host's cost of each wgpu step of a resident hash, 500 calls each after 50 unmeasured, on
/// a pipeline shaped like the hashing passes' (three storage buffers and a uniform with a dynamic
/// offset): what `encode` in a resident breakdown is made of, and a one-dispatch submission read
/// back through a copy into a mapped buffer or, where the device has mappable storage, straight
/// from the buffer the dispatch wrote.
fn costs(args: &[String]) {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let gpu = open(args);
    let (device, queue) = (gpu.device(), gpu.queue());
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: None,
        source: wgpu::ShaderSource::Wgsl(
            "@group(0) @binding(0) var<storage, read> a: array<u32>;
             @group(0) @binding(1) var<storage, read_write> b: array<u32>;
             @group(0) @binding(2) var<storage, read_write> c: array<u32>;
             @group(0) @binding(3) var<uniform> p: vec4<u32>;
             @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) i: vec3<u32>) {
                 b[i.x] = a[i.x] + p.x; c[i.x] = a[i.x] ^ p.y;
             }"
            .into(),
        ),
    });
    let storage_entry = |binding, read_only| wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    };
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: None,
        entries: &[
            storage_entry(0, true),
            storage_entry(1, false),
            storage_entry(2, false),
            wgpu::BindGroupLayoutEntry {
                binding: 3,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: true,
                    min_binding_size: None,
                },
                count: None,
            },
        ],
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: None,
        layout: Some(&device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: None,
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        })),
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let input = storage(&gpu, &[3u8; 1 << 20], wgpu::BufferUsages::empty());
    let work = storage(&gpu, &[0u8; 256], wgpu::BufferUsages::COPY_SRC);
    let mapped_ok = device.features().contains(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS);
    let buffer = |usage| {
        device.create_buffer(&wgpu::BufferDescriptor { label: None, size: 256, usage, mapped_at_creation: false })
    };
    let rb = buffer(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
    let direct = mapped_ok.then(|| buffer(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::STORAGE));
    let params = buffer(wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST);
    let bind = |c: &wgpu::Buffer| {
        fn whole(b: &wgpu::Buffer, size: u64) -> wgpu::BindingResource<'_> {
            wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: b,
                offset: 0,
                size: wgpu::BufferSize::new(size),
            })
        }
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &layout,
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: whole(&input, 1 << 20) },
                wgpu::BindGroupEntry { binding: 1, resource: whole(&work, 256) },
                wgpu::BindGroupEntry { binding: 2, resource: whole(c, 256) },
                wgpu::BindGroupEntry { binding: 3, resource: whole(&params, 16) },
            ],
        })
    };
    let scopes = timed(50, 500, || {
        let s = [wgpu::ErrorFilter::OutOfMemory, wgpu::ErrorFilter::Validation, wgpu::ErrorFilter::Internal]
            .map(|f| device.push_error_scope(f));
        for g in s.into_iter().rev() {
            assert!(pollster::block_on(g.pop()).is_none());
        }
    });
    stats("3 error scopes pushed and popped", scopes);
    stats("create_bind_group (4 buffers)", timed(50, 500, || drop(bind(&work))));
    let bg = bind(&work);
    let encode = |bg: &wgpu::BindGroup, dispatches: u32| {
        let mut enc = device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            for _ in 0..dispatches {
                pass.set_pipeline(&pipeline);
                pass.set_bind_group(0, bg, &[0]);
                pass.dispatch_workgroups(1, 1, 1);
            }
        }
        enc
    };
    stats("encoder + pass of 1 dispatch + finish", timed(50, 500, || drop(encode(&bg, 1).finish())));
    stats("encoder + pass of 3 dispatches + finish", timed(50, 500, || drop(encode(&bg, 3).finish())));
    let mut k = 0u32;
    stats(
        "write_buffer 64 B",
        timed(50, 500, || {
            k += 1;
            queue.write_buffer(&params, 0, &[k.to_le_bytes(); 16].concat());
        }),
    );
    // The dispatches below then write the input's own bytes (3s), which the reads check.
    queue.write_buffer(&params, 0, &[0u8; 64]);
    let until = |register: &dyn Fn(Arc<AtomicBool>)| poll_until(device, register);
    let read_back = |b: &wgpu::Buffer| {
        until(&|d| {
            b.map_async(wgpu::MapMode::Read, .., move |r| {
                r.unwrap();
                d.store(true, Ordering::Release)
            })
        });
        assert_eq!(b.get_mapped_range(..4).unwrap()[0], 3);
        b.unmap();
    };
    let copied = timed(50, 500, || {
        let mut enc = encode(&bg, 1);
        enc.copy_buffer_to_buffer(&work, 0, &rb, 0, 256);
        queue.submit([enc.finish()]);
        read_back(&rb);
    });
    stats("1 dispatch + copy into a mapped buffer, submitted and read", copied);
    if let Some(direct) = &direct {
        let bg = bind(direct);
        let t = timed(50, 500, || {
            queue.submit([encode(&bg, 1).finish()]);
            read_back(direct);
        });
        stats("1 dispatch into a STORAGE | MAP_READ buffer, submitted and read", t);
    } else {
        println!("no mappable storage on this device: the direct readback is not measured");
    }
}
