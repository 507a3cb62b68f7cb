//! libFuzzer target: any input, split into `update` calls where its own bytes say, in a mode and
//! on a CPU SIMD level they choose, read from an XOF position they choose: the same bytes as
//! upstream `blake3`.
#![no_main]

use b3accel::cpu::{CpuBackend, SimdLevel};
use b3accel::{Hasher, Mode};
use libfuzzer_sys::fuzz_target;
use std::sync::Arc;

fuzz_target!(|input: &[u8]| {
    let Some((&[m, level, cut, s0, s1, s2, s3, out_len], data)) = input.split_first_chunk::<8>() else { return };
    let mode = match m % 3 {
        0 => Mode::Hash,
        1 => Mode::Keyed(*b"libfuzzer key, exactly 32 bytes!"),
        _ => Mode::DeriveKey("b3accel cargo fuzz".into()),
    };
    let levels = SimdLevel::supported();
    let backend = Arc::new(CpuBackend::with_level(levels[level as usize % levels.len()]).unwrap());
    // The XOF position: small, or near the counter's carry at 2^38, or near the end of the stream.
    let low = u64::from(u32::from_le_bytes([s0, s1, s2, s3]));
    let seek = match s0 % 3 {
        0 => low % 5000,
        1 => (1u64 << 38) - 2048 + low % 4096,
        _ => u64::MAX - low % 5000,
    };
    let out_len = (out_len as usize * 3).min((u64::MAX - seek) as usize);
    let mut h = Hasher::with_backend(backend, &mode);
    // Pieces of 1 + (cut * k) % 3000 bytes.
    let mut rest = data;
    let mut k = 1usize;
    while !rest.is_empty() {
        let n = (1 + (cut as usize * k * 37) % 3000).min(rest.len());
        h.update(&rest[..n]).unwrap();
        rest = &rest[n..];
        k += 1;
    }
    let mut got = vec![0u8; out_len];
    let mut reader = h.finalize_xof().unwrap();
    reader.set_position(seek);
    reader.fill(&mut got);
    let mut upstream = match &mode {
        Mode::Hash => blake3::Hasher::new(),
        Mode::Keyed(k) => blake3::Hasher::new_keyed(k),
        Mode::DeriveKey(c) => blake3::Hasher::new_derive_key(c),
    };
    let mut want = vec![0u8; out_len];
    let mut r = upstream.update(data).finalize_xof();
    r.set_position(seek);
    r.fill(&mut want);
    assert_eq!(got, want);
});
