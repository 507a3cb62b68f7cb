//! A sparse file of 4 GiB + 1025 bytes (data at its start, across byte 2^32 and at its end;
//! holes elsewhere) hashed by the binary, which maps it: its line is upstream's. The library's
//! backends hash the same file in the library's tests/big.rs.

use crate::common::cli::{b3accel_command, Dir};
use std::io::{Seek, SeekFrom, Write};

#[test]
fn sparse_4_gib_plus_1025() {
    let len = (4u64 << 30) + 1025;
    let dir = Dir::new("big");
    let path = dir.path().join("sparse");
    let mut f = std::fs::File::create(&path).unwrap();
    f.set_len(len).unwrap();
    for (at, n) in [(0u64, 100_000usize), ((1 << 32) - 5000, 10_000), (len - 3000, 3000)] {
        f.seek(SeekFrom::Start(at)).unwrap();
        f.write_all(&crate::common::pattern(n)).unwrap();
    }
    drop(f);
    // SAFETY: a private file of this test, not changed while mapped.
    let map = unsafe { memmap2::Mmap::map(&std::fs::File::open(&path).unwrap()) }.unwrap();
    let want = blake3::Hasher::new().update_rayon(&map).finalize();
    let out = b3accel_command().arg(&path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{want}  {}\n", path.display()));
}
