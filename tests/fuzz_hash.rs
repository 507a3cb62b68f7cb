//! Property tests (fuzzing on stable Rust) of hashing against upstream `blake3`: random inputs
//! split into random `update` calls, in all three modes, on every backend and CPU SIMD level,
//! read back from random XOF positions (the counter's carries and the end of the stream among
//! them) in random lengths. `B3ACCEL_FUZZ_SECONDS` runs it for longer (tests/common/fuzz.rs).

mod common;

use b3accel::Hasher;
use common::{fuzz, upstream_xof};
use proptest::prelude::*;
use std::io::{Read, Seek, SeekFrom};

/// XOF positions: anywhere near the start, around the counter's carry at byte 2^38, near byte
/// 2^64 (reads cross it), and anywhere at all.
fn seek() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => 0u64..5000,
        2 => (0u64..300).prop_map(|d| (1u64 << 38) - 150 + d),
        1 => (0u64..1000).prop_map(|d| u64::MAX - 1000 + d),
        1 => any::<u64>(),
    ]
}

/// The whole case: input length and seed, split sizes, mode, backend, XOF position and length.
fn case(backends: usize) -> impl Strategy<Value = (usize, u64, Vec<usize>, u8, usize, u64, usize)> {
    (
        fuzz::awkward_len(600_000),
        any::<u64>(),
        prop::collection::vec(fuzz::awkward_len(70_000), 0..8),
        0u8..3,
        0..backends,
        seek(),
        0usize..300,
    )
}

#[test]
fn hasher_splits_modes_backends_and_xof_match_upstream() {
    let targets = common::targets();
    fuzz::run("hasher", 96, case(targets.len()), |(len, seed, splits, m, b, seek, out_len)| {
        let data = fuzz::bytes(len, seed);
        let mode = fuzz::mode(m);
        let t = &targets[b];
        let want = upstream_xof(&mode, &data, seek, out_len);

        // Incremental, with the input cut at the split sizes (the rest in one last update).
        let mut h = Hasher::with_backend(t.backend.clone(), &mode);
        let mut rest = &data[..];
        for s in splits {
            let (piece, tail) = rest.split_at(s.min(rest.len()));
            h.update(piece).map_err(|e| TestCaseError::fail(format!("{}: update: {e}", t.name)))?;
            rest = tail;
        }
        h.update(rest).map_err(|e| TestCaseError::fail(format!("{}: update: {e}", t.name)))?;
        prop_assert_eq!(h.count(), len as u64);
        let mut reader = h.finalize_xof().map_err(|e| TestCaseError::fail(format!("{}: {e}", t.name)))?;
        reader.seek(SeekFrom::Start(seek)).unwrap();
        let mut got = vec![0u8; out_len];
        reader.read_exact(&mut got).unwrap();
        prop_assert!(got == want, "{}: Hasher, {} bytes, {:?}, seek {}", t.name, len, mode, seek);

        // One shot, the whole input in one backend call.
        let mut reader = b3accel::xof_reader_with(&*t.backend, &mode, &data)
            .map_err(|e| TestCaseError::fail(format!("{}: {e}", t.name)))?;
        reader.set_position(seek);
        reader.fill(&mut got);
        prop_assert!(got == want, "{}: one shot, {} bytes, {:?}, seek {}", t.name, len, mode, seek);
        Ok(())
    });
}
