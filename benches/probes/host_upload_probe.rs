//! Probe: can host memory (anonymous, and a page-cached file mapped with mmap) reach the GPU
//! without a CPU copy, and does the CPU keep hashing at full speed meanwhile?
//!
//! - Vulkan `VK_EXT_external_memory_host` through wgpu's hal: import the pages, then copy them to
//!   device memory with the copy engine;
//! - OpenCL `CL_MEM_USE_HOST_PTR` buffers over the same pages, copied with `clEnqueueCopyBuffer`.
//!
//! Each is timed alone and while all CPU threads hash another buffer (`update_rayon`).
//!
//! ```text
//! cargo run --release -p b3accel-probes --all-features --bin host_upload_probe -- [GiB] [piece MiB]
//! ```

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ash::vk;
use wgpu::hal::api::Vulkan;
use wgpu::hal::vulkan as hv;

fn gbps(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e9
}

/// Hashes `data` with upstream's rayon hasher on every thread until `stop`, counting bytes.
fn cpu_load(data: Arc<Vec<u8>>, stop: Arc<AtomicBool>, bytes: Arc<AtomicU64>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            let mut h = blake3::Hasher::new();
            h.update_rayon(&data);
            std::hint::black_box(h.finalize());
            bytes.fetch_add(data.len() as u64, Ordering::Relaxed);
        }
    })
}

/// Runs `gpu` (which moves some bytes and returns how many) while the CPU hashes, and prints both
/// rates beside the CPU's rate alone.
fn with_cpu_load(name: &str, load: &Arc<Vec<u8>>, cpu_alone: f64, gpu: impl FnOnce() -> (u64, Duration)) {
    let stop = Arc::new(AtomicBool::new(false));
    let bytes = Arc::new(AtomicU64::new(0));
    let t = Instant::now();
    let h = cpu_load(load.clone(), stop.clone(), bytes.clone());
    std::thread::sleep(Duration::from_millis(200));
    let before = bytes.load(Ordering::Relaxed);
    let t0 = Instant::now();
    let (moved, took) = gpu();
    let cpu_bytes = bytes.load(Ordering::Relaxed) - before;
    let window = t0.elapsed();
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    let _ = t;
    println!(
        "  {name} with CPU hashing: GPU side {:.1} GB/s, CPU {:.1} GB/s over {:?} (CPU alone {:.1} GB/s)",
        gbps(moved, took),
        gbps(cpu_bytes, window),
        window,
        cpu_alone
    );
}

fn cpu_alone(load: &Arc<Vec<u8>>) -> f64 {
    let t = Instant::now();
    let mut n = 0u64;
    while t.elapsed() < Duration::from_secs(2) {
        let mut h = blake3::Hasher::new();
        h.update_rayon(load);
        std::hint::black_box(h.finalize());
        n += load.len() as u64;
    }
    gbps(n, t.elapsed())
}

/// A Vulkan device with `VK_EXT_external_memory_host` enabled, opened through wgpu's hal.
struct Vk {
    device: wgpu::Device,
    queue: wgpu::Queue,
    align: u64,
}

fn open_vulkan() -> Result<Vk, String> {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::VULKAN;
    let instance = wgpu::Instance::new(desc);
    let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::VULKAN));
    // The discrete GPU, else the first adapter (lavapipe on a machine without a GPU).
    let discrete = adapters.iter().position(|a| a.get_info().device_type == wgpu::DeviceType::DiscreteGpu);
    let adapter = adapters.into_iter().nth(discrete.unwrap_or(0)).ok_or("no Vulkan adapter")?;
    println!("vulkan adapter: {} ({})", adapter.get_info().name, adapter.get_info().driver_info);
    let limits = adapter.limits();
    let open = {
        // SAFETY: the adapter is a Vulkan one (its backend was asked for).
        let hal = unsafe { adapter.as_hal::<Vulkan>() }.ok_or("not a Vulkan adapter")?;
        let phys = hal.raw_physical_device();
        let inst = hal.shared_instance().raw_instance();
        // SAFETY: a valid physical device of this instance.
        let exts = unsafe { inst.enumerate_device_extension_properties(phys) }.map_err(|e| e.to_string())?;
        let has = exts.iter().any(|e| e.extension_name_as_c_str() == Ok(ash::ext::external_memory_host::NAME));
        println!("VK_EXT_external_memory_host: {}", if has { "supported" } else { "NOT supported" });
        if !has {
            return Err("no VK_EXT_external_memory_host".into());
        }
        // SAFETY: adds a supported extension; removes nothing.
        unsafe {
            hal.open_with_callback(
                adapter.features() & wgpu::Features::TIMESTAMP_QUERY,
                &limits,
                &wgpu::MemoryHints::Performance,
                Some(Box::new(|args: hv::CreateDeviceCallbackArgs| {
                    args.extensions.push(ash::ext::external_memory_host::NAME);
                })),
            )
        }
        .map_err(|e| format!("opening the device: {e}"))?
    };
    let desc = wgpu::DeviceDescriptor {
        label: Some("probe"),
        required_features: adapter.features() & wgpu::Features::TIMESTAMP_QUERY,
        required_limits: limits,
        ..Default::default()
    };
    // SAFETY: `open` was made from this adapter with these features and limits.
    let (device, queue) = unsafe { adapter.create_device_from_hal(open, &desc) }.map_err(|e| e.to_string())?;
    let align = {
        // SAFETY: our own Vulkan device.
        let hal = unsafe { device.as_hal::<Vulkan>() }.ok_or("not a Vulkan device")?;
        let inst = hal.shared_instance().raw_instance();
        let mut host = vk::PhysicalDeviceExternalMemoryHostPropertiesEXT::default();
        let mut props = vk::PhysicalDeviceProperties2::default().push_next(&mut host);
        // SAFETY: a valid physical device; the chain is well formed.
        unsafe { inst.get_physical_device_properties2(hal.raw_physical_device(), &mut props) };
        host.min_imported_host_pointer_alignment
    };
    println!("minImportedHostPointerAlignment: {align}");
    Ok(Vk { device, queue, align })
}

/// Imports `len` bytes at `ptr` (aligned as the device asks) as a wgpu buffer (COPY_SRC).
fn import(vk_: &Vk, ptr: *const u8, len: u64) -> Result<wgpu::Buffer, String> {
    // SAFETY: our own Vulkan device; every handle made here is handed to wgpu, which frees it.
    unsafe {
        let hal = vk_.device.as_hal::<Vulkan>().ok_or("not a Vulkan device")?;
        let raw = hal.raw_device();
        let inst = hal.shared_instance().raw_instance();
        let ext = ash::ext::external_memory_host::Device::new(inst, raw);
        let handle = vk::ExternalMemoryHandleTypeFlags::HOST_ALLOCATION_EXT;
        let mut props = vk::MemoryHostPointerPropertiesEXT::default();
        (ext.fp().get_memory_host_pointer_properties_ext)(raw.handle(), handle, ptr as *const c_void, &mut props)
            .result()
            .map_err(|e| format!("host pointer properties: {e}"))?;
        let mut ext_info = vk::ExternalMemoryBufferCreateInfo::default().handle_types(handle);
        let bci = vk::BufferCreateInfo::default()
            .size(len)
            .usage(vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::STORAGE_BUFFER)
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .push_next(&mut ext_info);
        let buffer = raw.create_buffer(&bci, None).map_err(|e| format!("create_buffer: {e}"))?;
        let reqs = raw.get_buffer_memory_requirements(buffer);
        let bits = props.memory_type_bits & reqs.memory_type_bits;
        let index = (0..32).find(|i| bits >> i & 1 == 1).ok_or("no memory type for the host pointer")?;
        let mut import =
            vk::ImportMemoryHostPointerInfoEXT::default().handle_type(handle).host_pointer(ptr as *mut c_void);
        let mai =
            vk::MemoryAllocateInfo::default().allocation_size(len).memory_type_index(index).push_next(&mut import);
        let memory = raw.allocate_memory(&mai, None).map_err(|e| format!("import: {e}"))?;
        raw.bind_buffer_memory(buffer, memory, 0).map_err(|e| format!("bind: {e}"))?;
        let hal_buffer = hv::Buffer::from_raw_managed(buffer, memory, 0, len);
        drop(hal);
        Ok(vk_.device.create_buffer_from_hal::<Vulkan>(
            hal_buffer,
            &wgpu::BufferDescriptor {
                label: Some("imported"),
                size: len,
                usage: wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            },
        ))
    }
}

/// Imports `src` piece by piece and copies each piece to device memory (two device buffers in
/// turn, one submission per piece, at most two in flight). Returns (import time, total time).
fn vk_stream(vk_: &Vk, src: &[u8], piece: usize) -> Result<(Duration, Duration), String> {
    let dst: Vec<wgpu::Buffer> = (0..2)
        .map(|_| {
            vk_.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("device"),
                size: piece as u64,
                usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            })
        })
        .collect();
    let start = Instant::now();
    let mut importing = Duration::ZERO;
    let mut inflight: Vec<(wgpu::SubmissionIndex, wgpu::Buffer)> = Vec::new();
    for (k, p) in src.chunks(piece).enumerate() {
        let t = Instant::now();
        let b = import(vk_, p.as_ptr(), p.len() as u64)?;
        importing += t.elapsed();
        let mut enc = vk_.device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(&b, 0, &dst[k % 2], 0, p.len() as u64);
        let idx = vk_.queue.submit([enc.finish()]);
        inflight.push((idx, b));
        if inflight.len() > 2 {
            let (idx, b) = inflight.remove(0);
            vk_.device
                .poll(wgpu::PollType::Wait { submission_index: Some(idx), timeout: None })
                .map_err(|e| e.to_string())?;
            drop(b);
        }
    }
    vk_.device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| e.to_string())?;
    drop(inflight);
    Ok((importing, start.elapsed()))
}

/// [`vk_stream`] with `threads` threads, each importing and copying every `threads`-th piece.
fn vk_parallel(vk_: &Vk, src: &[u8], piece: usize, threads: usize) -> Result<Duration, String> {
    let start = Instant::now();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || -> Result<(), String> {
                    let dst = vk_.device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some("device"),
                        size: piece as u64,
                        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::STORAGE,
                        mapped_at_creation: false,
                    });
                    let mut held = Vec::new();
                    for p in src.chunks(piece).skip(t).step_by(threads) {
                        let b = import(vk_, p.as_ptr(), p.len() as u64)?;
                        let mut enc = vk_.device.create_command_encoder(&Default::default());
                        enc.copy_buffer_to_buffer(&b, 0, &dst, 0, p.len() as u64);
                        let idx = vk_.queue.submit([enc.finish()]);
                        held.push((idx, b));
                        if held.len() > 2 {
                            let (idx, b) = held.remove(0);
                            vk_.device
                                .poll(wgpu::PollType::Wait { submission_index: Some(idx), timeout: None })
                                .map_err(|e| e.to_string())?;
                            drop(b);
                        }
                    }
                    vk_.device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| e.to_string())?;
                    Ok(())
                })
            })
            .collect();
        handles.into_iter().try_for_each(|h| h.join().map_err(|_| "a thread panicked".to_string())?)
    })?;
    Ok(start.elapsed())
}

#[allow(clippy::too_many_lines)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let gib: u64 = args.first().map(|a| a.parse()).transpose()?.unwrap_or(1);
    let piece = args.get(1).map(|a| a.parse::<usize>()).transpose()?.unwrap_or(64) << 20;
    let len = (gib << 30) as usize;

    let mut anon = memmap2::MmapMut::map_anon(len)?;
    for (i, b) in anon.iter_mut().enumerate() {
        *b = (i % 251) as u8;
    }
    let path = std::env::temp_dir().join("b3accel_probe.bin");
    std::fs::write(&path, &anon[..])?;
    let file = std::fs::File::open(&path)?;
    // SAFETY: the file is ours and not changed while mapped.
    let mapped = unsafe { memmap2::Mmap::map(&file)? };
    let load = Arc::new(vec![7u8; 2 << 30]);
    let alone = cpu_alone(&load);
    println!("CPU alone (update_rayon, {} threads): {alone:.1} GB/s", rayon::current_num_threads());
    println!("{gib} GiB in {} MiB pieces", piece >> 20);

    match open_vulkan() {
        Err(e) => println!("Vulkan import: not available: {e}"),
        Ok(vk_) => {
            for (name, src) in [("anonymous", &anon[..]), ("mmap file", &mapped[..])] {
                if !(src.as_ptr() as u64).is_multiple_of(vk_.align) {
                    println!("  {name}: not aligned to {}", vk_.align);
                    continue;
                }
                match vk_stream(&vk_, src, piece) {
                    Err(e) => println!("  vk {name}: FAILED: {e}"),
                    Ok((imp, total)) => {
                        println!(
                            "  vk {name}: import {:.1} GB/s ({:?}), import+copy {:.1} GB/s ({:?})",
                            gbps(len as u64, imp),
                            imp,
                            gbps(len as u64, total),
                            total
                        );
                        let again = vk_stream(&vk_, src, piece).map(|(_, t)| t);
                        if let Ok(t) = again {
                            println!("  vk {name} again: {:.1} GB/s", gbps(len as u64, t));
                        }
                        for threads in [2, 4] {
                            if let Ok(t) = vk_parallel(&vk_, src, piece, threads) {
                                println!("  vk {name} {threads} threads: {:.1} GB/s", gbps(len as u64, t));
                            }
                            with_cpu_load(&format!("vk {name} {threads} threads"), &load, alone, || {
                                let t = Instant::now();
                                let mut n = 0;
                                for _ in 0..3 {
                                    if vk_parallel(&vk_, src, piece, threads).is_ok() {
                                        n += len as u64;
                                    }
                                }
                                (n, t.elapsed())
                            });
                        }
                        with_cpu_load(&format!("vk {name}"), &load, alone, || {
                            let t = Instant::now();
                            let mut n = 0;
                            for _ in 0..3 {
                                if vk_stream(&vk_, src, piece).is_ok() {
                                    n += len as u64;
                                }
                            }
                            (n, t.elapsed())
                        });
                    }
                }
            }
        }
    }

    #[cfg(feature = "opencl")]
    {
        use ocl::core::{self, Event, MemFlags};
        let list = b3accel::opencl::enumerate()?;
        let discrete = list.iter().find(|d| d.kind == b3accel::DeviceKind::DiscreteGpu);
        let Some(info) = discrete.or(list.first()) else {
            println!("OpenCL: no device");
            return Ok(());
        };
        let b3accel::Device::OpenCl(i) = info.device else { unreachable!() };
        let gpu = b3accel::opencl::OpenClBackend::open(i)?;
        println!("opencl: {}", info.name);
        let ctx = gpu.context().as_core().clone();
        let queue = gpu.queue().as_core().clone();
        // SAFETY: plain device allocations.
        let dst: Vec<core::Mem> = (0..2)
            .map(|_| unsafe { core::create_buffer::<_, u8>(&ctx, MemFlags::READ_WRITE, piece, None) })
            .collect::<Result<_, _>>()?;
        let run = |src: &[u8]| -> Result<(Duration, Duration), ocl::core::Error> {
            let start = Instant::now();
            let mut creating = Duration::ZERO;
            let mut held = Vec::new();
            for (k, p) in src.chunks(piece).enumerate() {
                let t = Instant::now();
                // SAFETY: the host memory outlives the buffer (dropped below after `finish`).
                let b = unsafe {
                    core::create_buffer(&ctx, MemFlags::READ_ONLY | MemFlags::USE_HOST_PTR, p.len(), Some(p))
                }?;
                creating += t.elapsed();
                core::enqueue_copy_buffer::<u8, _, _, _>(
                    &queue,
                    &b,
                    &dst[k % 2],
                    0,
                    0,
                    p.len(),
                    None::<&Event>,
                    None::<&mut Event>,
                )?;
                core::flush(&queue)?;
                held.push(b);
            }
            core::finish(&queue)?;
            drop(held);
            Ok((creating, start.elapsed()))
        };
        for (name, src) in [("anonymous", &anon[..]), ("mmap file", &mapped[..])] {
            match run(src) {
                Err(e) => println!("  cl {name}: FAILED: {e}"),
                Ok((create, total)) => {
                    println!(
                        "  cl {name}: create {:.1} GB/s ({create:?}), create+copy {:.1} GB/s ({total:?})",
                        gbps(len as u64, create),
                        gbps(len as u64, total)
                    );
                    if let Ok((_, t)) = run(src) {
                        println!("  cl {name} again: {:.1} GB/s", gbps(len as u64, t));
                    }
                    with_cpu_load(&format!("cl {name}"), &load, alone, || {
                        let t = Instant::now();
                        let mut n = 0;
                        for _ in 0..3 {
                            if run(src).is_ok() {
                                n += len as u64;
                            }
                        }
                        (n, t.elapsed())
                    });
                }
            }
        }
        // The existing path for comparison: b3accel's OpenCL host hashing (pinned staging).
        let t = Instant::now();
        let h = b3accel::xof_reader_with(&gpu, &b3accel::Mode::Hash, &anon)?;
        std::hint::black_box(h);
        println!("  b3accel opencl host hash (staging): {:.1} GB/s", gbps(len as u64, t.elapsed()));
        with_cpu_load("b3accel opencl host hash", &load, alone, || {
            let t = Instant::now();
            for _ in 0..3 {
                let _ = b3accel::xof_reader_with(&gpu, &b3accel::Mode::Hash, &anon);
            }
            (3 * len as u64, t.elapsed())
        });
    }
    let _ = std::fs::remove_file(&path);
    Ok(())
}
