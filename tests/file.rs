//! Files and readers in the library against upstream `blake3`: `hash_file_on`,
//! `Hasher::update_mmap`, `Hasher::update_reader` and `file::Input` at sizes around the mapping
//! and read-whole thresholds, on every backend, in all modes, in every `ReadMode`; byte ranges;
//! progress callbacks that add up; clear errors for directories, missing and unreadable files
//! and short streams; and files hashed from many rayon tasks at once.

mod common;

use b3accel::file::{FileOptions, Input, ReadMode};
use b3accel::{hash_file_on, Device, Error, Hasher, Mode, CHUNK_LEN};
use common::Scratch as Dir;
use common::{targets, upstream_hasher};
use rayon::prelude::*;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Bytes that differ from chunk to chunk and from run to run of the same length.
fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8 ^ (i >> 10) as u8 ^ seed).collect()
}

/// Sizes around the thresholds: one chunk, mapping (16 KiB), reading whole (4 MiB).
const SIZES: [usize; 12] =
    [0, 1, 1023, 1024, 1025, 16 * 1024 - 1, 16 * 1024, 16 * 1024 + 1, 100_000, 4 << 20, (4 << 20) + 1, (5 << 20) + 3];

fn upstream_xof(mode: &Mode, bytes: &[u8], len: usize) -> Vec<u8> {
    let mut h = upstream_hasher(mode);
    h.update(bytes);
    let mut out = vec![0u8; len];
    h.finalize_xof().fill(&mut out);
    out
}

fn modes() -> [Mode; 3] {
    [Mode::Hash, Mode::Keyed([0x42; 32]), Mode::DeriveKey("b3accel file tests 2026".into())]
}

#[test]
fn files_match_upstream() {
    let dir = Dir::new("sizes");
    let files: Vec<(PathBuf, Vec<u8>)> = SIZES
        .iter()
        .enumerate()
        .map(|(i, &len)| {
            let bytes = data(len, i as u8);
            (dir.write(format!("f{len}"), &bytes), bytes)
        })
        .collect();
    for (path, bytes) in &files {
        let want = blake3::hash(bytes);
        assert_eq!(hash_file_on(Device::Cpu, path).unwrap(), want, "hash_file_on {}", path.display());
        assert_eq!(hash_file_on(Device::Auto, path).unwrap(), want, "hash_file_on auto {}", path.display());
        let mut h = Hasher::new_on(Device::Cpu).unwrap();
        h.update_mmap(path).unwrap();
        assert_eq!(h.finalize().unwrap(), want, "update_mmap {}", path.display());
        let mut h = Hasher::new_on(Device::Cpu).unwrap();
        h.update_reader(std::fs::File::open(path).unwrap()).unwrap();
        assert_eq!(h.finalize().unwrap(), want, "update_reader {}", path.display());
        // After other input, and followed by more: update semantics.
        let mut h = Hasher::new_on(Device::Cpu).unwrap();
        h.update(b"before").unwrap().update_mmap(path).unwrap().update(b"after").unwrap();
        let whole = [&b"before"[..], bytes, b"after"].concat();
        assert_eq!(h.finalize().unwrap(), blake3::hash(&whole), "update_mmap between updates {}", path.display());
    }
}

#[test]
fn every_backend_and_mode_with_and_without_mapping() {
    let dir = Dir::new("backends");
    let sizes = [0usize, 1025, 16 * 1024, 300_000, (4 << 20) + 1];
    let paths: Vec<(PathBuf, Vec<u8>)> =
        sizes.iter().map(|&len| (dir.write(format!("f{len}"), &data(len, 7)), data(len, 7))).collect();
    for t in targets() {
        for (path, bytes) in &paths {
            for mode in modes() {
                let want = upstream_xof(&mode, bytes, 100);
                for read in [ReadMode::Auto, ReadMode::Map, ReadMode::Stream] {
                    let options = FileOptions { read, progress: None };
                    let (mut r, n) = Input::open(path).unwrap().hash_with(t.backend.clone(), &mode, &options).unwrap();
                    let mut got = vec![0u8; 100];
                    r.fill(&mut got);
                    assert_eq!((got, n), (want.clone(), bytes.len() as u64), "{}: {} {read:?}", t.name, path.display());
                }
                let mut h = Hasher::with_backend(t.backend.clone(), &mode);
                h.update_reader(&bytes[..]).unwrap();
                let mut got = vec![0u8; 100];
                h.finalize_xof().unwrap().fill(&mut got);
                assert_eq!(got, want, "{}: update_reader of {} bytes", t.name, bytes.len());
            }
        }
        eprintln!("files: {} ok", t.name);
    }
}

#[test]
fn ranges_of_files_and_streams() {
    let dir = Dir::new("ranges");
    let bytes = data((6 << 20) + 77, 3);
    let path = dir.write("big", &bytes);
    let cpu = b3accel::backend(Device::Cpu).unwrap();
    let k = CHUNK_LEN as u64;
    for (offset, len) in [(0u64, 0u64), (0, 1), (5, 100), (k, 20 * k), (4096, 5 << 20), (1 << 20, (5 << 20) + 77)] {
        let want = blake3::hash(&bytes[offset as usize..(offset + len) as usize]);
        for read in [ReadMode::Auto, ReadMode::Map, ReadMode::Stream] {
            let options = FileOptions { read, progress: None };
            let input = Input::open(&path).unwrap().range(offset, len).unwrap();
            assert_eq!(input.size(), Some(len));
            let (mut r, n) = input.hash_with(cpu.clone(), &Mode::Hash, &options).unwrap();
            let mut got = [0u8; 32];
            r.fill(&mut got);
            assert_eq!((got, n), (*want.as_bytes(), len), "file bytes {offset}..+{len}, {read:?}");
        }
        let input = Input::from_reader(&bytes[..]).range(offset, len).unwrap();
        let (mut r, _) = input.hash_with(cpu.clone(), &Mode::Hash, &FileOptions::default()).unwrap();
        let mut got = [0u8; 32];
        r.fill(&mut got);
        assert_eq!(got, *want.as_bytes(), "stream bytes {offset}..+{len}");
        // A range of a range.
        let half = offset / 2;
        let input = Input::open(&path).unwrap().range(half, len + offset - half).unwrap().range(offset - half, len);
        let (mut r, _) = input.unwrap().hash_with(cpu.clone(), &Mode::Hash, &FileOptions::default()).unwrap();
        r.fill(&mut got);
        assert_eq!(got, *want.as_bytes(), "range of a range {offset}..+{len}");
    }
    // Past the end of a file: refused at once. Past the end of a stream: an error when read.
    let size = bytes.len() as u64;
    assert!(matches!(Input::open(&path).unwrap().range(size - 10, 11), Err(Error::InvalidInput(_))));
    assert!(Input::open(&path).unwrap().range(u64::MAX, 2).is_err());
    for (offset, len) in [(size - 10, 11), (size + 1, 0), (0, size + 1)] {
        let input = Input::from_reader(&bytes[..]).range(offset, len).unwrap();
        match input.hash_with(cpu.clone(), &Mode::Hash, &FileOptions::default()) {
            Err(Error::Io(e)) => assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{e}"),
            other => panic!("a stream of {size} bytes, bytes {offset}..+{len}: {other:?}"),
        }
    }
}

#[test]
fn progress_adds_up_and_moves() {
    let dir = Dir::new("progress");
    let bytes = data((33 << 20) + 5, 9);
    let path = dir.write("big", &bytes);
    let want = blake3::hash(&bytes);
    let (total, calls) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicUsize::new(0)));
    let hasher = || {
        let mut h = Hasher::new_on(Device::Cpu).unwrap();
        let (t, c) = (total.clone(), calls.clone());
        h.on_progress(move |n| {
            t.fetch_add(n, Ordering::Relaxed);
            c.fetch_add(1, Ordering::Relaxed);
        });
        h
    };
    let reset = || (total.swap(0, Ordering::Relaxed), calls.swap(0, Ordering::Relaxed));
    let mut h = hasher();
    h.update_mmap(&path).unwrap();
    assert_eq!(h.finalize().unwrap(), want);
    let (sum, n) = reset();
    assert_eq!(sum, bytes.len() as u64);
    assert!(n >= 2, "a 33 MiB map is hashed in pieces of 32 MiB: {n} calls");
    let mut h = hasher();
    h.update_reader(&bytes[..]).unwrap();
    assert_eq!(h.finalize().unwrap(), want);
    let (sum, n) = reset();
    assert_eq!(sum, bytes.len() as u64);
    assert!(n >= 8, "33 MiB read in buffers of at most 4 MiB: {n} calls");
    // One-shot, through FileOptions.
    let sum = AtomicU64::new(0);
    let tell = |n| {
        sum.fetch_add(n, Ordering::Relaxed);
    };
    let options = FileOptions { read: ReadMode::Map, progress: Some(&tell) };
    let cpu = b3accel::backend(Device::Cpu).unwrap();
    let (mut r, _) = Input::open(&path).unwrap().hash_with(cpu, &Mode::Hash, &options).unwrap();
    let mut got = [0u8; 32];
    r.fill(&mut got);
    assert_eq!((got, sum.load(Ordering::Relaxed)), (*want.as_bytes(), bytes.len() as u64));
}

/// A reader that gives `good` bytes, then fails.
struct Failing {
    good: usize,
}

impl Read for Failing {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.good == 0 {
            return Err(io::Error::other("the disk caught fire"));
        }
        let n = buf.len().min(self.good);
        buf[..n].fill(1);
        self.good -= n;
        Ok(n)
    }
}

#[test]
fn bad_inputs_are_clear_errors() {
    let dir = Dir::new("errors");
    // A directory.
    for result in [
        hash_file_on(Device::Cpu, dir.path()).map(drop),
        Hasher::new_on(Device::Cpu).unwrap().update_mmap(dir.path()).map(drop),
        Input::open(dir.path()).map(drop),
    ] {
        match result {
            Err(Error::Io(e)) => {
                assert_eq!(e.kind(), io::ErrorKind::IsADirectory, "{e}");
                assert!(e.to_string().contains("directory"), "{e}");
            }
            other => panic!("a directory: {other:?}"),
        }
    }
    // A file that is not there.
    match hash_file_on(Device::Cpu, dir.path().join("missing")) {
        Err(Error::Io(e)) => assert_eq!(e.kind(), io::ErrorKind::NotFound, "{e}"),
        other => panic!("a missing file: {other:?}"),
    }
    // A file that cannot be read (even by root): /proc/self/mem at address 0.
    #[cfg(target_os = "linux")]
    match hash_file_on(Device::Cpu, "/proc/self/mem") {
        Err(Error::Io(_)) => {}
        other => panic!("an unreadable file: {other:?}"),
    }
    // A reader that fails: the error comes back, nothing panics.
    for good in [0usize, 10, 5 << 20] {
        let mut h = Hasher::new_on(Device::Cpu).unwrap();
        match h.update_reader(Failing { good }) {
            Err(Error::Io(e)) => assert!(e.to_string().contains("fire"), "{e}"),
            other => panic!("a failing reader: {:?}", other.map(drop)),
        }
    }
    // An empty file is no error: the empty input's hash.
    let empty = dir.write("empty", b"");
    assert_eq!(hash_file_on(Device::Cpu, &empty).unwrap(), blake3::hash(b""));
}

#[test]
fn many_files_from_many_rayon_tasks() {
    // Small files are read into a buffer each thread keeps; a thread that waits inside one hash
    // may run another task that reads a file too. Every result must still be right.
    let dir = Dir::new("parallel");
    let files: Vec<(PathBuf, blake3::Hash)> = (0..200)
        .map(|i| {
            let len = [1usize, 1000, 5000, 20_000, 300_000, (1 << 20) + 1][i % 6] + i;
            let bytes = data(len, i as u8);
            (dir.write(format!("f{i}"), &bytes), blake3::hash(&bytes))
        })
        .collect();
    files.par_iter().for_each(|(path, want)| {
        let got = hash_file_on(Device::Cpu, path).unwrap();
        assert_eq!(got, *want, "{}", path.display());
        let mut h = Hasher::new_on(Device::Cpu).unwrap();
        h.update_reader(std::fs::File::open(Path::new(path)).unwrap()).unwrap();
        assert_eq!(h.finalize().unwrap(), *want, "{}", path.display());
    });
}
