//! Hashing data that already lies in GPU memory: a wgpu program creates its own device and a
//! storage buffer, fills it on the GPU side, and hashes it where it lies. Only the chaining
//! values of a few subtrees and the last chunk (at most 1024 bytes) come back to the host.
//!
//! ```text
//! cargo run --release --example device_buffer [MiB]
//! ```

use b3accel::wgpu::ResidentHasher;
use b3accel::{Mode, Resident};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mib: u64 = std::env::args().nth(1).map(|a| a.parse()).transpose()?.unwrap_or(16);
    let len = mib << 20;

    // Your program's own device, as any wgpu program opens one. Asking for the adapter's limits
    // lets the hasher use its largest storage bindings (fewer, larger segments).
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
    let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        ..Default::default()
    }))?;
    println!("adapter: {} ({:?})", adapter.get_info().name, adapter.get_info().backend);
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("my device"),
        required_limits: adapter.limits(),
        ..Default::default()
    }))?;

    // A buffer the program uses for its own work; BLAKE3 only needs STORAGE usage.
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("my data"),
        size: len,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    queue.write_buffer(&buffer, 0, &data);

    let hasher = ResidentHasher::new(&device, &queue)?;
    let key = *b"whats the Elvish word for friend";
    for (name, mode) in [
        ("hash", Mode::Hash),
        ("keyed_hash", Mode::Keyed(key)),
        ("derive_key", Mode::DeriveKey("b3accel example 2026-11-21".into())),
    ] {
        let t = Instant::now();
        let hash = hasher.hash(&buffer, 0..len, &mode)?.value;
        let took = t.elapsed();
        let expected = match &mode {
            Mode::Hash => blake3::hash(&data),
            Mode::Keyed(k) => blake3::keyed_hash(k, &data),
            Mode::DeriveKey(c) => blake3::Hash::from_bytes(blake3::derive_key(c, &data)),
        };
        assert_eq!(hash, expected, "{mode:?}");
        println!(
            "{name:10}: {hash} ({mib} MiB in {took:?}, {:.2} GB/s; matches upstream blake3)",
            len as f64 / took.as_secs_f64() / 1e9
        );
    }
    Ok(())
}
