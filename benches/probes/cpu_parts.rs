//! Where one thread's time goes at 1 to 16 whole chunks, ours against upstream's: per size, the
//! median ns of the chunk CVs alone (`chunk_subtrees_capped` with a cap of one chunk), of the
//! whole subtree's CV (every parent level, no root), of `hash_on` (the root too, and the calls
//! between), and upstream's subtree CV (`hazmat::HasherExt::finalize_non_root`) and
//! `blake3::hash`. Each round times a batch of each in turn.
//!
//! `cargo run --release -p b3accel-probes --bin cpu_parts -- [ROUNDS] [CHUNKS...]`

use b3accel::cpu::CpuBackend;
use b3accel::{hash_on, Backend, Device, CHUNK_LEN, IV};
use blake3::hazmat::HasherExt;
use std::hint::black_box;
use std::time::Instant;

fn per_call(reps: u32, mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..reps {
        f();
    }
    t.elapsed().as_secs_f64() / reps as f64 * 1e9
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(15);
    let mut sizes: Vec<usize> = args.iter().skip(1).filter_map(|a| a.parse().ok()).collect();
    if sizes.is_empty() {
        sizes = vec![1, 2, 4, 16];
    }
    let cpu = CpuBackend::new();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a one-thread pool");
    pool.install(|| {
        println!("{:>6} {:>9} {:>9} {:>9} {:>9} {:>9}", "chunks", "o_chunks", "o_tree", "o_hash", "u_tree", "u_hash");
        for &n in &sizes {
            let data: Vec<u8> = (0..n * CHUNK_LEN).map(|i| (i % 251) as u8).collect();
            let reps = (50_000 / (n * 16 + 10)).max(1) as u32;
            let (mut out, mut one) = ([[0u8; 32]; 16], [[0u8; 32]; 1]);
            let mut t: [Vec<f64>; 5] = Default::default();
            for r in 0..rounds {
                let mut fs: [&mut dyn FnMut(); 5] = [
                    &mut || {
                        let o = &mut out[..n];
                        cpu.chunk_subtrees_capped(black_box(&data), 0, 1, &IV, 0, o).unwrap();
                        black_box(o);
                    },
                    &mut || {
                        cpu.chunk_subtrees_capped(black_box(&data), 0, n as u64, &IV, 0, &mut one).unwrap();
                        black_box(&mut one);
                    },
                    &mut || {
                        black_box(hash_on(Device::Cpu, black_box(&data)).ok());
                    },
                    &mut || {
                        let mut h = blake3::Hasher::new();
                        h.update(black_box(&data));
                        black_box(h.finalize_non_root());
                    },
                    &mut || {
                        black_box(blake3::hash(black_box(&data)));
                    },
                ];
                for k in 0..5 {
                    let i = if r % 2 == 0 { k } else { 4 - k };
                    t[i].push(per_call(reps, &mut fs[i]));
                }
            }
            let med = |v: &mut Vec<f64>| {
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            };
            let m: Vec<f64> = t.iter_mut().map(med).collect();
            println!("{:>6} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1}", n, m[0], m[1], m[2], m[3], m[4]);
        }
    });
}
