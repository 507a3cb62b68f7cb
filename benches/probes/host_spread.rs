//! Host memory on the CPU, one GPU and both at once: for each size, rounds that time upstream's
//! `update_rayon`, the CPU backend, the GPU from host memory and the CPU + GPU list in turn (so
//! a drift of the machine's speed falls on all alike), then the medians and the list's shares.
//! `$B3ACCEL_OPENCL_UPLOAD` (`host` or `staging`) picks how OpenCL reads host memory.
//!
//! ```text
//! cargo run --release -p b3accel-probes --features opencl --bin host_spread -- opencl:1 [ROUNDS] [SIZE_MIB...]
//! ```

use b3accel::spread::Spread;
use b3accel::{hash_on, Device, Mode};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let gpu: Device = args.first().map_or("opencl:0", |s| s.as_str()).parse()?;
    let rounds: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(7);
    let mut sizes: Vec<usize> = args.iter().skip(2).filter_map(|a| a.parse().ok()).collect();
    if sizes.is_empty() {
        sizes = vec![64, 256, 1024, 4096];
    }
    let list = Spread::new(&[Device::Cpu, gpu])?.with_min_bytes(1 << 20);
    // Open the GPU (and its list) before timing anything.
    hash_on(gpu, &[0u8; 4096])?;
    list.warm_up();
    b3accel::settle();
    let names =
        ["upstream update_rayon", "cpu", "gpu host", "cpu + gpu", "auto", "gpu host, 2 threads", "gpu host, 4 threads"];
    for mib in sizes {
        let data: Vec<u8> = (0..mib << 20).map(|i| (i % 251) as u8).collect();
        let want = blake3::Hasher::new().update_rayon(&data).finalize();
        // The GPU from several threads at once, each hashing its own part (as a list's GPU
        // would if it took several pieces at a time): does the host side scale?
        let part_wants = |t: usize| -> Vec<blake3::Hash> { data.chunks(data.len() / t).map(blake3::hash).collect() };
        let (want2, want4) = (part_wants(2), part_wants(4));
        let parts = |wants: &[blake3::Hash]| -> Result<(), b3accel::Error> {
            std::thread::scope(|s| {
                let hs: Vec<_> =
                    data.chunks(data.len() / wants.len()).map(|p| s.spawn(move || hash_on(gpu, p))).collect();
                for (h, want) in hs.into_iter().zip(wants) {
                    assert_eq!(h.join().expect("a hashing thread")?, *want);
                }
                Ok(())
            })
        };
        let mut times = vec![Vec::new(); names.len()];
        for _ in 0..rounds {
            for (k, t) in times.iter_mut().enumerate() {
                let start = Instant::now();
                let got = match k {
                    0 => blake3::Hasher::new().update_rayon(&data).finalize(),
                    1 => hash_on(Device::Cpu, &data)?,
                    2 => hash_on(gpu, &data)?,
                    3 => {
                        let mut out = [0u8; 32];
                        b3accel::xof_reader_with(&list, &Mode::Hash, &data)?.fill(&mut out);
                        blake3::Hash::from_bytes(out)
                    }
                    4 => hash_on(Device::Auto, &data)?,
                    k => {
                        parts(if k == 5 { &want2 } else { &want4 })?;
                        want
                    }
                };
                t.push(start.elapsed().as_secs_f64());
                assert_eq!(got, want, "{} at {mib} MiB", names[k]);
            }
        }
        for (name, t) in names.iter().zip(&mut times) {
            t.sort_by(f64::total_cmp);
            let gbps = |s: f64| (mib << 20) as f64 / s / 1e9;
            println!(
                "{mib:>5} MiB {name:<22} {:>6.1} GB/s (min-max {:.1}-{:.1})",
                gbps(t[t.len() / 2]),
                gbps(t[t.len() - 1]),
                gbps(t[0])
            );
        }
        let shares: Vec<String> = list.last_shares().iter().map(|(d, b)| format!("{d} {} MiB", b >> 20)).collect();
        println!("{mib:>5} MiB shares: {}", shares.join(", "));
    }
    Ok(())
}
