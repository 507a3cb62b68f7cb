//! The CPU backend on one thread against upstream `blake3::hash`, at the sizes where one call is
//! short (64 B to 1 MiB): each round times a batch of calls of each, in turn, so that a drift of
//! the machine's speed falls on both alike; prints the median ratio of throughputs (ours over
//! upstream's) per size, with the spread over rounds.
//!
//! `cargo run --release -p b3accel-probes --no-default-features --bin cpu_small -- [--single] [ROUNDS] [SIZE...]`
//! (sizes in bytes; default 64 B, 1, 2, 3, 4, 8, 16, 256 KiB and 1 MiB). With `B3_OFFSET=N`, each
//! input starts N bytes past a page boundary (`b3accel bench`'s inputs start 16 bytes past one),
//! instead of wherever the allocator puts a vector of its size.
//!
//! With `--single`, each call is timed alone and the two alternate call by call, as in
//! `b3accel bench`; a round's figure is then the ratio of the two medians over its calls. A
//! call timed alone pays for what the other left in the caches and branch predictors, which a
//! batch of calls of one kind does not.

use b3accel::{hash_on, Device};
use std::hint::black_box;
use std::time::Instant;

/// Seconds per call of `f`, over a batch of `reps` calls.
fn per_call(reps: u32, mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..reps {
        f();
    }
    t.elapsed().as_secs_f64() / reps as f64
}

/// The median seconds of a call of `a` and of `b`, over `reps` calls of each timed alone, in
/// turns (`b` first in odd rounds).
fn alone(reps: u32, round: usize, mut a: impl FnMut(), mut b: impl FnMut()) -> (f64, f64) {
    let (mut ta, mut tb) = (Vec::with_capacity(reps as usize), Vec::with_capacity(reps as usize));
    for k in 0..reps as usize {
        for i in 0..2 {
            let t = Instant::now();
            if (i + k + round).is_multiple_of(2) {
                a();
                ta.push(t.elapsed().as_secs_f64());
            } else {
                b();
                tb.push(t.elapsed().as_secs_f64());
            }
        }
    }
    ta.sort_by(f64::total_cmp);
    tb.sort_by(f64::total_cmp);
    (ta[ta.len() / 2], tb[tb.len() / 2])
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let single = args.first().is_some_and(|a| a == "--single");
    if single {
        args.remove(0);
    }
    let rounds: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(31);
    let mut sizes: Vec<usize> = args.iter().skip(1).filter_map(|a| a.parse().ok()).collect();
    if sizes.is_empty() {
        sizes = vec![64, 1 << 10, 2 << 10, 3 << 10, 4 << 10, 8 << 10, 16 << 10, 256 << 10, 1 << 20];
    }
    // One thread, as in `b3accel bench`'s "cpu (1 thread)" row: the CPU backend asks the pool
    // it runs on how many threads it has.
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a one-thread pool");
    pool.install(|| {
        println!("{:>8} {:>8} {:>8} {:>8}   {:>9} {:>9}", "bytes", "median", "min", "max", "ours ns", "up ns");
        let offset: Option<usize> = std::env::var("B3_OFFSET").ok().and_then(|v| v.parse().ok());
        for &size in &sizes {
            let mut backing = Vec::new();
            let data: &[u8] = match offset {
                Some(offset) => {
                    backing.resize(size + offset + 4096, 0u8);
                    let start = backing.as_ptr().align_offset(4096) + offset;
                    for (i, b) in backing[start..start + size].iter_mut().enumerate() {
                        *b = (i % 251) as u8;
                    }
                    &backing[start..start + size]
                }
                None => {
                    backing = (0..size).map(|i| (i % 251) as u8).collect();
                    &backing
                }
            };
            assert_eq!(hash_on(Device::Cpu, data).unwrap(), blake3::hash(data));
            // About 50 us per batch.
            let reps = (50_000 / (size / 64 + 10)).max(1) as u32;
            let ours = || {
                black_box(hash_on(Device::Cpu, black_box(data)).ok());
            };
            let up = || {
                black_box(blake3::hash(black_box(data)));
            };
            per_call(reps, ours);
            per_call(reps, up);
            let mut ratios = Vec::with_capacity(rounds);
            let (mut t_ours, mut t_up) = (Vec::new(), Vec::new());
            for r in 0..rounds {
                let (a, b) = if single {
                    alone(reps, r, ours, up)
                } else if r % 2 == 0 {
                    // Alternate which goes first.
                    let a = per_call(reps, ours);
                    (a, per_call(reps, up))
                } else {
                    let b = per_call(reps, up);
                    (per_call(reps, ours), b)
                };
                ratios.push(b / a);
                t_ours.push(a);
                t_up.push(b);
            }
            let median = |v: &mut Vec<f64>| {
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            };
            let m = median(&mut ratios);
            println!(
                "{:>8} {:>8.3} {:>8.3} {:>8.3}   {:>9.1} {:>9.1}",
                size,
                m,
                ratios[0],
                ratios[rounds - 1],
                median(&mut t_ours) * 1e9,
                median(&mut t_up) * 1e9
            );
        }
    });
}
