//! The latency of a 32-bit rotation by two shifts and an `or` on AVX2, against the two shifts
//! added into a sum one after the other: what `compress::g_carry` is built on. Each loop is a
//! chain of dependent steps, `x = rotr12(x) + y` written both ways; the cycles per step are
//! counted against a chain of `vpaddd`s (one cycle each), so no cycle counter is needed.
//!
//! On the 2-core machine's EPYC (Zen 3), two runs of five rounds: the joined form 3.8-4.0 cycles
//! a step where 3 are the ideal (the two shifts, ready in the same cycle, issue one after the
//! other), the split form 3.0-3.25.
//!
//! `cargo run --release -p b3accel-probes --no-default-features --bin rotation_latency` (x86-64 with AVX2).

#[cfg(target_arch = "x86_64")]
fn main() {
    use std::time::Instant;
    if !std::arch::is_x86_feature_detected!("avx2") {
        eprintln!("rotation_latency: this CPU has no AVX2");
        std::process::exit(1);
    }
    const STEPS: u64 = 8;
    let iterations: u64 = 20_000_000;
    // Seconds for `iterations` runs of `f` (each `STEPS` dependent steps).
    let time = |f: &dyn Fn(u64)| {
        let t = Instant::now();
        f(iterations);
        t.elapsed().as_secs_f64()
    };
    // A loop of `n` turns of `STEPS` copies of the step given, on ymm0 (x), ymm1 (y) and ymm2.
    macro_rules! chain {
        ($($step:literal),+) => {
            |n: u64| {
                // SAFETY: AVX2 is present (checked above); the loop touches only the registers
                // named.
                unsafe {
                    core::arch::asm!(
                        "2:", ".rept {steps}", $($step),+, ".endr", "dec {n}", "jnz 2b",
                        n = inout(reg) n => _, steps = const STEPS,
                        out("ymm0") _, out("ymm1") _, out("ymm2") _,
                        options(nostack, nomem)
                    )
                }
            }
        };
    }
    let adds = chain!("vpaddd ymm0, ymm0, ymm1");
    let joined =
        chain!("vpsrld ymm2, ymm0, 12", "vpslld ymm0, ymm0, 20", "vpor ymm0, ymm0, ymm2", "vpaddd ymm0, ymm0, ymm1");
    let split =
        chain!("vpsrld ymm2, ymm0, 12", "vpslld ymm0, ymm0, 20", "vpaddd ymm2, ymm2, ymm1", "vpaddd ymm0, ymm0, ymm2");
    println!("cycles per step of x = rotr12(x) + y (three are the ideal)");
    for round in 0..5 {
        let cycle = time(&adds) / (iterations * STEPS) as f64;
        let per = |f: &dyn Fn(u64)| time(f) / (iterations * STEPS) as f64 / cycle;
        println!(
            "round {round}: shifts joined by vpor {:.2}, shifts added one by one {:.2}",
            per(&joined),
            per(&split)
        );
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn main() {
    eprintln!("rotation_latency: x86-64 only");
    std::process::exit(1);
}
