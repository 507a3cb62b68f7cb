//! What a device list costs per call against its first device alone: the CPU backend, a list of
//! the CPU only, and the CPU with each GPU named, hashed in turns (one call each per turn), first
//! with no GPU open, then with the named GPUs open. Prints medians and quartiles per series and
//! how many of the list's calls gave a GPU bytes.
//!
//! ```text
//! cargo run --release -p b3accel-probes --all-features --bin list_overhead -- ROUNDS GPU... [-- SIZE_MIB...]
//! ```

use b3accel::spread::Spread;
use b3accel::{hash_on, hash_with, Device, Mode};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(2000);
    let split = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let gpus: Vec<Device> = args[1.min(split)..split].iter().map(|a| a.parse()).collect::<Result<_, _>>()?;
    let mut sizes: Vec<usize> = args.iter().skip(split + 1).filter_map(|a| a.parse().ok()).collect();
    if sizes.is_empty() {
        sizes = vec![1, 4, 16];
    }
    let mut lists: Vec<(String, Spread)> =
        vec![("list cpu".into(), Spread::new(&[Device::Cpu])?.with_min_bytes(1 << 20))];
    for &g in &gpus {
        lists.push((format!("list cpu+{g}"), Spread::new(&[Device::Cpu, g])?.with_min_bytes(1 << 20)));
    }
    if gpus.len() > 1 {
        let all: Vec<Device> = std::iter::once(Device::Cpu).chain(gpus.iter().copied()).collect();
        lists.push(("list cpu+all".into(), Spread::new(&all)?.with_min_bytes(1 << 20)));
    }
    for phase in ["GPUs closed", "GPUs open"] {
        if phase == "GPUs open" {
            for &g in &gpus {
                b3accel::backend(g)?;
            }
        }
        for &mib in &sizes {
            let data: Vec<u8> = (0..mib << 20).map(|i| (i % 251) as u8).collect();
            let want = hash_on(Device::Cpu, &data)?;
            let n = lists.len() + 1;
            let mut times = vec![Vec::with_capacity(rounds); n];
            let mut with_gpu = vec![0usize; n];
            for round in 0..rounds + rounds / 10 {
                for k in 0..n {
                    let start = Instant::now();
                    let got = if k == 0 {
                        hash_on(Device::Cpu, &data)?
                    } else {
                        hash_with(&lists[k - 1].1, &Mode::Hash, &data)?
                    };
                    let took = start.elapsed().as_secs_f64();
                    assert_eq!(got, want);
                    // The first tenth of the rounds warms up (lists measure their devices there).
                    if round >= rounds / 10 {
                        times[k].push(took);
                        if k > 0 {
                            let r = lists[k - 1].1.last_call();
                            if r.is_some_and(|r| r.shares.iter().skip(1).any(|s| s.1 > 0)) {
                                with_gpu[k] += 1;
                            }
                        }
                    }
                }
            }
            for (k, t) in times.iter_mut().enumerate() {
                t.sort_by(f64::total_cmp);
                let name = if k == 0 { "cpu" } else { lists[k - 1].0.as_str() };
                let us = |q: usize| t[(t.len() - 1) * q / 4] * 1e6;
                println!(
                    "{phase}  {mib:>4} MiB  {name:<28} median {:>8.1} us  quartiles {:.1}-{:.1}  mean {:.1}  calls with a GPU share: {}",
                    us(2),
                    us(1),
                    us(3),
                    t.iter().sum::<f64>() / t.len() as f64 * 1e6,
                    with_gpu[k]
                );
            }
            for (name, l) in &lists {
                if let Some(r) = l.last_call() {
                    println!("{phase}  {mib:>4} MiB  {name}: last call {:?} {:?}", r.shares, r.reasons);
                }
            }
        }
    }
    b3accel::settle();
    Ok(())
}
