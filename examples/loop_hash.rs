fn main() {
    let size: usize = std::env::args().nth(1).unwrap().parse().unwrap();
    let iters: usize = std::env::args().nth(2).unwrap().parse().unwrap();
    let up = std::env::args().nth(3).is_some();
    let chain = std::env::var_os("CHAIN").is_some();
    let mut data = vec![7u8; size];
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let t = std::time::Instant::now();
    pool.install(|| {
        for _ in 0..iters {
            let h = if up { blake3::hash(&data) } else { b3accel::hash_on(b3accel::Device::Cpu, &data).unwrap() };
            if chain {
                data[0] = h.as_bytes()[0];
            } else {
                std::hint::black_box(h);
            }
        }
    });
    let el = t.elapsed();
    println!(
        "{:.2} GB/s {:.1} ns/hash",
        (size * iters) as f64 / el.as_secs_f64() / 1e9,
        el.as_nanos() as f64 / iters as f64
    );
}
