//! Files read from the front (`ReadMode::Stream`, and `Auto` for files not in the page cache):
//! bit-exact with upstream at awkward sizes around the block size, on every backend, in every
//! mode, with extended output and seeking; byte ranges; files that change while they are read
//! (shrink, grow, rewritten at the same size) are errors, never a hash; a mapped file truncated
//! while hashed is an error too, not a SIGBUS.

mod common;

use b3accel::file::{FileOptions, Input, ReadMode};
use b3accel::{Device, Error, Hasher, Mode, CHUNK_LEN};
use common::Scratch as Dir;
use common::{targets, upstream_hasher};
use std::io::Write;
use std::path::Path;

/// The size of a block read from the front (`storage::BLOCK`).
const BLOCK: usize = 8 << 20;

fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8 ^ (i >> 13) as u8 ^ seed).collect()
}

/// The input's extended output at each of `seeks` (131 bytes from each), and its length.
fn hash_xof(
    input: Input,
    backend: std::sync::Arc<dyn b3accel::Backend>,
    mode: &Mode,
    seeks: &[u64],
) -> (Vec<Vec<u8>>, u64) {
    let options = FileOptions { read: ReadMode::Stream, progress: None };
    let (mut reader, n) = input.hash_with(backend, mode, &options).unwrap();
    let outs = seeks
        .iter()
        .map(|&seek| {
            reader.set_position(seek);
            let mut out = vec![0u8; 131];
            reader.fill(&mut out);
            out
        })
        .collect();
    (outs, n)
}

fn upstream_xof(mode: &Mode, bytes: &[u8], seek: u64) -> Vec<u8> {
    let mut h = upstream_hasher(mode);
    h.update(bytes);
    let mut reader = h.finalize_xof();
    reader.set_position(seek);
    let mut out = vec![0u8; 131];
    reader.fill(&mut out);
    out
}

#[test]
fn streamed_files_match_upstream_at_awkward_sizes_on_every_backend() {
    let dir = Dir::new("cold-sizes");
    let k = CHUNK_LEN;
    let sizes = [(4 << 20) + 1, BLOCK - 1, BLOCK, BLOCK + 1, BLOCK + k - 1, 2 * BLOCK + 3 * k + 5, 3 * BLOCK];
    let files: Vec<_> = sizes.iter().map(|&len| (dir.write(format!("f{len}"), &data(len, len as u8)), len)).collect();
    let seeks = [0u64, 1, 1 << 40];
    for t in targets() {
        for (path, len) in &files {
            let bytes = data(*len, *len as u8);
            for mode in [Mode::Hash, Mode::Keyed([7; 32]), Mode::DeriveKey("b3accel cold tests".into())] {
                let (got, n) = hash_xof(Input::open(path).unwrap(), t.backend.clone(), &mode, &seeks);
                assert_eq!(n, *len as u64);
                for (got, seek) in got.iter().zip(seeks) {
                    let want = upstream_xof(&mode, &bytes, seek);
                    assert!(*got == want, "{}: {len} bytes, {mode:?}, seek {seek}", t.name);
                }
            }
        }
        eprintln!("cold: {} ok", t.name);
    }
}

/// Drops `path`'s pages from the page cache (a disk-backed file's clean pages go; tmpfs keeps them).
#[cfg(target_os = "linux")]
fn evict(path: &Path) {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(path).unwrap();
    file.sync_all().unwrap();
    // SAFETY: advice on an open descriptor; no memory is passed.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
}

/// Files out of the page cache take the default (`Auto`) path for them, read from the front:
/// bit-exact at sizes around the block, for whole files and for ranges that start on and off a
/// page boundary.
#[cfg(target_os = "linux")]
#[test]
fn files_out_of_the_page_cache_match_upstream() {
    let dir = Dir::new("cold-direct");
    let cpu = b3accel::backend(Device::Cpu).unwrap();
    for len in [BLOCK + 1, 2 * BLOCK + 3 * CHUNK_LEN + 5] {
        let bytes = data(len, 3);
        let path = dir.write(format!("f{len}"), &bytes);
        let on_tmpfs =
            b3accel::file::Storage::of(&std::fs::File::open(&path).unwrap()) == b3accel::file::Storage::Memory;
        for (offset, n) in [(0, len), (4096, len - 4096 - 5), (1, len - 1)] {
            evict(&path);
            let input = Input::open(&path).unwrap().range(offset as u64, n as u64).unwrap();
            assert!(on_tmpfs || input.from_disk(ReadMode::Auto), "{len} bytes: still in the page cache");
            let options = FileOptions { read: ReadMode::Auto, progress: None };
            let (mut reader, got_len) = input.hash_with(cpu.clone(), &Mode::Hash, &options).unwrap();
            assert_eq!(got_len, n as u64);
            let mut got = [0u8; 32];
            reader.fill(&mut got);
            assert_eq!(&got, blake3::hash(&bytes[offset..offset + n]).as_bytes(), "{len} bytes, range {offset}+{n}");
        }
    }
}

#[test]
fn ranges_and_subtrees_streamed() {
    let dir = Dir::new("cold-ranges");
    let bytes = data(3 * BLOCK + 12_345, 1);
    let path = dir.write("big", &bytes);
    let cpu = b3accel::backend(Device::Cpu).unwrap();
    for (offset, len) in
        [(0, 5 << 20), (1, BLOCK), (4096, 2 * BLOCK + 1), (BLOCK - 7, BLOCK + 14), (bytes.len() - (5 << 20), 5 << 20)]
    {
        let (got, n) = hash_xof(
            Input::open(&path).unwrap().range(offset as u64, len as u64).unwrap(),
            cpu.clone(),
            &Mode::Hash,
            &[0],
        );
        assert_eq!(n, len as u64);
        assert!(got[0] == upstream_xof(&Mode::Hash, &bytes[offset..offset + len], 0), "bytes {offset}..+{len}");
    }
    // A subtree (8 MiB of chunks at a 16 MiB offset), as `b3accel subtree` hashes it.
    let (offset, len) = (2 * BLOCK as u64, BLOCK as u64);
    let mut h = Hasher::new_on(Device::Cpu).unwrap();
    b3accel::hazmat::HasherExt::set_input_offset(&mut h, offset).unwrap();
    let options = FileOptions { read: ReadMode::Stream, progress: None };
    Input::open(&path).unwrap().range(offset, len).unwrap().update(&mut h, &options).unwrap();
    let mut upstream = blake3::Hasher::new();
    blake3::hazmat::HasherExt::set_input_offset(&mut upstream, offset);
    upstream.update(&bytes[offset as usize..(offset + len) as usize]);
    assert_eq!(
        b3accel::hazmat::HasherExt::finalize_non_root(&h).unwrap(),
        blake3::hazmat::HasherExt::finalize_non_root(&upstream)
    );
}

/// Opens `path`, lets `change` alter the file, then hashes what was opened, read from the front.
fn hash_after(path: &Path, change: impl FnOnce()) -> b3accel::Result<(b3accel::OutputReader, u64)> {
    let input = Input::open(path).unwrap();
    change();
    let cpu = b3accel::backend(Device::Cpu).unwrap();
    input.hash_with(cpu, &Mode::Hash, &FileOptions { read: ReadMode::Stream, progress: None })
}

#[test]
fn a_file_that_changes_while_read_is_an_error() {
    let dir = Dir::new("cold-changes");
    let len = 2 * BLOCK + 100;
    let path = dir.write("f", &data(len, 2));
    // Shrunk: the read ends early.
    match hash_after(&path, || {
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(BLOCK as u64).unwrap()
    }) {
        Err(Error::Io(e)) => {
            assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof, "{e}");
            assert!(e.to_string().contains("changed while being read"), "{e}");
        }
        other => panic!("a shrunk file: {:?}", other.map(|(_, n)| n)),
    }
    // Grown.
    std::fs::write(&path, data(len, 2)).unwrap();
    let grown =
        hash_after(&path, || std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"more").unwrap());
    assert!(changed(&grown), "{:?}", grown.map(|(_, n)| n));
    // Rewritten at the same size, a second later.
    std::fs::write(&path, data(len, 2)).unwrap();
    let rewritten = hash_after(&path, || {
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        std::os::unix::fs::FileExt::write_at(&file, b"X", 5).unwrap();
        file.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(1)).unwrap();
    });
    assert!(changed(&rewritten), "{:?}", rewritten.map(|(_, n)| n));
    // Unchanged: the hash.
    std::fs::write(&path, data(len, 2)).unwrap();
    let (mut r, _) = hash_after(&path, || {}).unwrap();
    let mut got = [0u8; 32];
    r.fill(&mut got);
    assert_eq!(got, *blake3::hash(&data(len, 2)).as_bytes());
}

/// Whether `result` is the error of a file that changed while it was read: an I/O error
/// (`OSError` in Python) of kind `InvalidData` that says so.
fn changed<T>(result: &b3accel::Result<T>) -> bool {
    matches!(result, Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::InvalidData && e.to_string().contains("changed"))
}

#[test]
fn a_mapped_file_cut_inside_its_last_page_is_an_error_not_a_hash_of_zeros() {
    // A cut inside the last page raises no SIGBUS: the map reads zeros where the bytes were.
    let dir = Dir::new("cold-cut-last-page");
    let len = (64 << 20) + 1234;
    let path = dir.write("f", &data(len, 4));
    for via_hasher in [false, true] {
        std::fs::write(&path, data(len, 4)).unwrap();
        let path2 = path.clone();
        let cut = std::sync::atomic::AtomicBool::new(false);
        let progress = move |_| {
            if !cut.swap(true, std::sync::atomic::Ordering::SeqCst) {
                std::fs::OpenOptions::new().write(true).open(&path2).unwrap().set_len(len as u64 - 1).unwrap();
            }
        };
        let options = FileOptions { read: ReadMode::Map, progress: Some(&progress) };
        let result = if via_hasher {
            let mut h = Hasher::new_on(Device::Cpu).unwrap();
            h.update(b"before").unwrap();
            let result = Input::open(&path).unwrap().update(&mut h, &options).map(|_| ());
            assert_eq!(h.finalize().unwrap(), blake3::hash(b"before"), "a failed update adds nothing");
            result
        } else {
            let cpu = b3accel::backend(Device::Cpu).unwrap();
            Input::open(&path).unwrap().hash_with(cpu, &Mode::Hash, &options).map(|_| ())
        };
        assert!(changed(&result), "{result:?}");
    }
}

#[test]
fn a_file_read_from_the_front_that_fails_part_way_adds_nothing() {
    let dir = Dir::new("cold-fails-part-way");
    let len = 3 * BLOCK + 5;
    let path = dir.write("f", &data(len, 5));
    let path2 = path.clone();
    let cut = std::sync::atomic::AtomicBool::new(false);
    // After the first block, the file loses its last one.
    let progress = move |_| {
        if !cut.swap(true, std::sync::atomic::Ordering::SeqCst) {
            std::fs::OpenOptions::new().write(true).open(&path2).unwrap().set_len(2 * BLOCK as u64).unwrap();
        }
    };
    let mut h = Hasher::new_on(Device::Cpu).unwrap();
    h.update(b"prefix").unwrap();
    let options = FileOptions { read: ReadMode::Stream, progress: Some(&progress) };
    let err = Input::open(&path).unwrap().update(&mut h, &options).unwrap_err();
    assert!(err.to_string().contains("changed"), "{err}");
    assert_eq!(h.finalize().unwrap(), blake3::hash(b"prefix"), "the hasher is as it was before the call");
}

#[test]
fn a_mapped_file_truncated_while_hashed_is_an_error_that_adds_nothing() {
    let dir = Dir::new("cold-truncated");
    let len = 64 << 20;
    let path = dir.write("f", &data(len, 3));
    let mut h = Hasher::new_on(Device::Cpu).unwrap();
    let count = std::sync::atomic::AtomicU64::new(0);
    let path2 = path.clone();
    // The progress callback truncates the file after the first 32 MiB piece of the map.
    h.on_progress(move |_| {
        if count.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            std::fs::OpenOptions::new().write(true).open(&path2).unwrap().set_len(4096).unwrap();
        }
    });
    let Err(err) = h.update_mmap(&path) else { panic!("a truncated map is an error") };
    assert!(err.to_string().contains("truncated"), "{err}");
    assert_eq!(h.finalize().unwrap(), blake3::hash(b""), "a failed update adds nothing");
}
