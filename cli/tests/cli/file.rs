//! Files at the sizes around the library's reading thresholds (one chunk, mapping at 16 KiB,
//! reading whole up to 4 MiB), hashed by the binary in one run: each line is upstream's hash.

use crate::common::cli::{b3accel_command, Dir};

/// Sizes around the thresholds (as the library's tests/file.rs has them).
const SIZES: [usize; 12] =
    [0, 1, 1023, 1024, 1025, 16 * 1024 - 1, 16 * 1024, 16 * 1024 + 1, 100_000, 4 << 20, (4 << 20) + 1, (5 << 20) + 3];

/// Bytes that differ from chunk to chunk and from file to file.
fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8 ^ (i >> 10) as u8 ^ seed).collect()
}

#[test]
fn files_around_the_read_thresholds_match_upstream() {
    let dir = Dir::new("file-sizes");
    let files: Vec<_> = SIZES
        .iter()
        .enumerate()
        .map(|(i, &len)| {
            let bytes = data(len, i as u8);
            (dir.write(format!("f{len}"), &bytes), bytes)
        })
        .collect();
    let out = b3accel_command().args(["--backend", "cpu"]).args(files.iter().map(|(p, _)| p)).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = String::from_utf8(out.stdout).unwrap();
    let want: Vec<String> =
        files.iter().map(|(path, bytes)| format!("{}  {}", blake3::hash(bytes), path.display())).collect();
    assert_eq!(lines.lines().collect::<Vec<_>>(), want);
}
