//! Hashes one input larger than 4 GiB on every device of this machine and checks each hash
//! against upstream `blake3` (what the GPU backends' segment streaming must get right).
//!
//! ```text
//! cargo run --release -p b3accel-probes --all-features --bin large_input -- [GIB]   # default 5
//! ```
//! It needs GIB GiB of free memory. Software GPUs are skipped (they would take many minutes).

use std::time::Instant;

fn main() -> std::process::ExitCode {
    let gib: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    // A length that is not a whole number of chunks, so the last chunk is partial.
    let len = (gib << 30) + 12345;
    let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    let t = Instant::now();
    let expected = blake3::Hasher::new().update_rayon(&data).finalize();
    println!("upstream update_rayon: {expected} ({:.1} GB/s)", len as f64 / t.elapsed().as_secs_f64() / 1e9);
    let mut failed = false;
    for d in b3accel::devices().into_iter().filter(|d| !d.is_software_gpu()) {
        let t = Instant::now();
        match b3accel::hash_on(d.device, &data) {
            Ok(h) => {
                let ok = h == expected;
                failed |= !ok;
                println!(
                    "{:<9} {}: {h} ({:.1} GB/s) {}",
                    d.device.to_string(),
                    d.name,
                    len as f64 / t.elapsed().as_secs_f64() / 1e9,
                    if ok { "ok" } else { "MISMATCH" }
                );
            }
            Err(e) => {
                failed = true;
                println!("{:<9} {}: error: {e}", d.device.to_string(), d.name);
            }
        }
    }
    if failed {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}
