//! One input on several devices at once: the CPU and every hardware GPU take subtree-aligned
//! pieces from one queue, and the pieces' chaining values are merged in order, so the hash is
//! BLAKE3's whatever the cut.
//!
//! ```text
//! cargo run --release --example spread [-- MiB]
//! ```

use b3accel::spread::{hardware_devices, Spread};
use b3accel::{Device, Hasher, Mode};
use std::sync::Arc;

fn main() -> Result<(), b3accel::Error> {
    let mib: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(64);
    let data: Vec<u8> = (0..mib << 20).map(|i| (i % 251) as u8).collect();

    // One call: the devices are opened, used and dropped.
    let devices = hardware_devices();
    let once = b3accel::hash_on_devices(&devices, &data)?;
    println!("{}  ({mib} MiB on {} device(s))", once, devices.len());

    // A `Spread` kept for many inputs: its GPUs open once, and it says who hashed what.
    let all = Arc::new(Spread::all()?.with_min_bytes(1 << 20)); // spread inputs from 1 MiB
    let mut hasher = Hasher::with_backend(all.clone(), &Mode::Hash);
    hasher.update(&data)?;
    assert_eq!(hasher.finalize()?, once);
    for (device, bytes) in all.last_shares() {
        println!("{device}: {bytes} bytes");
    }
    assert_eq!(b3accel::hash_on(Device::Cpu, &data)?, once);
    // Lets GPU drivers that are still starting on other threads finish before the process exits.
    b3accel::settle();
    Ok(())
}
