//! Hashes a file (or standard input) on a chosen device and prints the hash, like `b3sum`.
//!
//! ```text
//! cargo run --release --example hash_file -- FILE [DEVICE]
//! ```
//! DEVICE is `auto` (the default), `cpu`, `opencl[:N]` or `wgpu[:N]`.

use b3accel::{Device, Hasher};
use std::io::Read;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| "-".to_string());
    let device: Device = match args.next().map(|d| d.parse()).transpose() {
        Ok(d) => d.unwrap_or_default(),
        Err(e) => {
            eprintln!("hash_file: {e}");
            return ExitCode::from(2);
        }
    };
    match hash(&path, device) {
        Ok(hash) => {
            println!("{hash}  {path}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("hash_file: {path}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn hash(path: &str, device: Device) -> Result<b3accel::Hash, Box<dyn std::error::Error>> {
    if path == "-" {
        let mut hasher = Hasher::new_on(device)?;
        std::io::copy(&mut std::io::stdin().lock(), &mut hasher)?;
        return Ok(hasher.finalize()?);
    }
    // Whole files in memory are hashed in one call, which lets the backend use every core (or
    // the whole GPU) at once. (The `b3accel` binary memory-maps large files instead.)
    let mut data = Vec::new();
    std::fs::File::open(path)?.read_to_end(&mut data)?;
    Ok(b3accel::hash_on(device, &data)?)
}
