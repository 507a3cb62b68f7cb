//! What a test run expects this machine to have, so that a test which finds something missing
//! fails instead of quietly skipping it (tests only: the crate's unit tests use it as
//! `core::expect`, the integration tests include this file from `tests/common`).
//!
//! `B3ACCEL_EXPECT` is a comma-separated list that CI computes from the machine (`.ci/run` reads
//! /proc/cpuinfo, `clinfo` and the Vulkan and EGL drivers installed):
//! - `simd:<level>` (`sse41`, `avx2`, `avx512`): the CPU backend runs at that level;
//! - `avx512vl`: the CPU has AVX-512 F and VL (the EVEX kernels);
//! - `rows:avx512`: the CPU has AVX-512 F, VL and BW (the single-block row form);
//! - `opencl:<n>`: at least n OpenCL devices, every one of which opens;
//! - `wgpu:<api>` (`vulkan`, `gl`, ...): a wgpu adapter of that API is listed and opens;
//! - `wgpu-staged`: the staged-loads shader variant opens on every wgpu adapter.
//!
//! A test that finds an expected thing missing fails; one that finds an unexpected thing missing
//! says so on the real standard error (shown by a plain `cargo test`) and goes on without it.

#![allow(dead_code)]

/// The environment variable.
pub const EXPECT_ENV: &str = "B3ACCEL_EXPECT";

/// Whether this is a CI run (`CI=true` or `CI=1`).
pub fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// The expected items, as `B3ACCEL_EXPECT` lists them (lowercase, trimmed).
pub fn items() -> Vec<String> {
    std::env::var(EXPECT_ENV)
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Whether `item` (for example `rows:avx512`) is expected.
pub fn expected(item: &str) -> bool {
    items().iter().any(|i| i.eq_ignore_ascii_case(item))
}

/// The number `n` of the expected item `<prefix>:<n>` (0 where none is expected).
pub fn expected_count(prefix: &str) -> usize {
    items().iter().filter_map(|i| i.strip_prefix(prefix)?.strip_prefix(':')?.parse().ok()).max().unwrap_or(0)
}

/// Reports that `item` is missing on this machine, so that `what` (a test, or part of one) does
/// not run: a failure when `item` is expected, else a loud warning.
pub fn missing(item: &str, what: &str) {
    let msg = format!("{item} is missing on this machine: {what} did NOT run");
    if expected(item) {
        panic!("{msg}, but {EXPECT_ENV} expects it");
    }
    not_run(&msg);
}

/// Writes `msg`, once per process, to the process's standard error itself: `cargo test`
/// captures what `eprintln!` writes in a passing test, so a skip would not show without
/// `--nocapture`; a direct write to the stream does.
pub fn not_run(msg: &str) {
    use std::io::Write;
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(|p| p.into_inner());
    if said.iter().any(|m| m == msg) {
        return;
    }
    said.push(msg.to_string());
    let _ = writeln!(std::io::stderr().lock(), "\n*** NOT RUN: {msg} ***");
}
