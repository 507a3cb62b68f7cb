//! The property-test driver of the `fuzz_*` tests: `proptest` with a seed that is printed (and
//! can be given back), and two lengths of run.
//!
//! - By default (CI) a property runs its `default_cases` cases: few enough that the whole suite
//!   stays quick where the GPUs are software ones.
//! - `B3ACCEL_FUZZ_SECONDS=N` runs it for N seconds instead, batch after batch with fresh seeds,
//!   and prints how many cases ran. `B3ACCEL_FUZZ_SEED=S` fixes the first seed (to replay a
//!   failure: each failure prints its seed).
//!
//! Failures are shrunk to a minimal case by proptest, and are not persisted to files (CI runs in
//! a fresh clone; the seed in the message is what to keep).

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use std::time::{Duration, Instant};

/// Cases per batch in the timed mode: small, so that the deadline is kept on slow devices.
const BATCH: u32 = 16;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// Runs the property `test` over values of `strategy` (see the module's introduction).
pub fn run<S>(name: &str, default_cases: u32, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S: Strategy,
    S::Value: std::fmt::Debug,
{
    let deadline = env_u64("B3ACCEL_FUZZ_SECONDS").map(|s| Instant::now() + Duration::from_secs(s));
    let mut seed = env_u64("B3ACCEL_FUZZ_SEED").unwrap_or_else(|| {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        t.as_nanos() as u64 ^ u64::from(std::process::id()).rotate_left(32)
    });
    let start = Instant::now();
    let mut cases = 0u64;
    let mut batches = 0u64;
    loop {
        let n = if deadline.is_some() { BATCH } else { default_cases };
        let config = Config {
            cases: n,
            failure_persistence: None,
            rng_seed: RngSeed::Fixed(seed),
            // Shrinking re-runs the property; on slow devices keep it bounded.
            max_shrink_iters: 256,
            ..Config::default()
        };
        let mut runner = TestRunner::new(config);
        if let Err(e) = runner.run(&strategy, &test) {
            panic!("{name}: {e}\n(seed {seed}: rerun with B3ACCEL_FUZZ_SEED={seed}; {cases} cases passed before)");
        }
        cases += u64::from(n);
        batches += 1;
        seed = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(batches);
        if deadline.is_none_or(|d| Instant::now() >= d) {
            break;
        }
    }
    eprintln!("fuzz {name}: {cases} cases in {:.0} s, no failure", start.elapsed().as_secs_f64());
}

/// A length biased towards the boundaries the implementations care about: around multiples of
/// the block (64), the chunk (1024) and SIMD and work-group sizes (powers of two up to `max`).
pub fn awkward_len(max: usize) -> impl Strategy<Value = usize> {
    use proptest::prelude::*;
    let log_max = usize::BITS - max.leading_zeros();
    prop_oneof![
        3 => 0..=max,
        3 => (0..log_max, -2i64..=2).prop_map(move |(b, d)| ((1i64 << b) + d).clamp(0, max as i64) as usize),
        2 => (0..=max / 1024, -1i64..=1).prop_map(move |(c, d)| ((c as i64 * 1024) + d).clamp(0, max as i64) as usize),
        1 => 0..=1100usize,
    ]
}

/// Deterministic bytes for a case (cheaper to make and to shrink than a random vector).
pub fn bytes(len: usize, seed: u64) -> Vec<u8> {
    super::random_bytes(len, seed)
}

/// The mode a case's number picks: plain, keyed or key derivation.
pub fn mode(i: u8) -> b3accel::Mode {
    match i % 3 {
        0 => b3accel::Mode::Hash,
        1 => b3accel::Mode::Keyed(*b"fuzzing key, exactly 32 bytes ok"),
        _ => b3accel::Mode::DeriveKey("b3accel fuzz 2026-11-24".into()),
    }
}
