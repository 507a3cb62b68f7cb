//! The OpenCL backend on every OpenCL device this machine has (PoCL in CI): work-group boundaries
//! and multi-level ragged chunk counts, streaming across many segments, running short of device
//! memory, device-resident buffers in all modes, 16 threads at once, bad device indices, a
//! machine without an OpenCL driver, and random sizes against upstream `blake3`.
//!
//! Under `CI=true` a build without an OpenCL device fails here (tests/common/mod.rs).
#![cfg(feature = "opencl")]

mod common;

use b3accel::opencl::{OpenClBackend, OpenClOptions};
use b3accel::{xof_reader_with, Backend, BackendKind, Device, Error, Hasher, Mode, Resident, CHUNK_LEN, IV};
use common::pattern;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;

/// The index of every OpenCL device found (a missing one is reported, or fails under CI=true).
fn devices() -> Vec<usize> {
    common::device_indices(BackendKind::OpenCl)
}

fn open(i: usize, opts: OpenClOptions) -> OpenClBackend {
    OpenClBackend::with_options(i, &opts).unwrap_or_else(|e| panic!("opencl:{i} with {opts:?}: {e}"))
}

const KEY: [u8; 32] = *b"whats the Elvish word for friend";

fn modes() -> [Mode; 3] {
    [Mode::Hash, Mode::Keyed(KEY), Mode::DeriveKey("b3accel opencl tests 2026-11-21".into())]
}

/// Upstream's output stream for `data` in `mode`, `len` bytes.
fn upstream(mode: &Mode, data: &[u8], len: usize) -> Vec<u8> {
    let mut h = match mode {
        Mode::Hash => blake3::Hasher::new(),
        Mode::Keyed(k) => blake3::Hasher::new_keyed(k),
        Mode::DeriveKey(c) => blake3::Hasher::new_derive_key(c),
    };
    h.update(data);
    let mut out = vec![0u8; len];
    h.finalize_xof().fill(&mut out);
    out
}

fn check_hash(be: &dyn Backend, what: &str, mode: &Mode, data: &[u8]) {
    let mut got = vec![0u8; 131];
    xof_reader_with(be, mode, data).unwrap_or_else(|e| panic!("{what}: {e}")).fill(&mut got);
    assert_eq!(got, upstream(mode, data, 131), "{what}: {} bytes, {mode:?}", data.len());
}

/// `chunk_subtrees` on the device against upstream (`blake3::hazmat`), for `n` chunks at `first_chunk`.
fn check_subtrees(be: &OpenClBackend, what: &str, n: u64, first_chunk: u64, flags: u32) {
    let data = pattern(n as usize * CHUNK_LEN);
    let key = [3, 1, 4, 1, 5, 9, 2, 6];
    let key = if flags == 0 { IV } else { key };
    let want = common::upstream_subtrees(&data, first_chunk, 1 << 63, &key, flags);
    let mut got = vec![[0u8; 32]; n.count_ones() as usize];
    be.chunk_subtrees(&data, first_chunk, &key, flags, &mut got)
        .unwrap_or_else(|e| panic!("{what}: {n} chunks at {first_chunk}: {e}"));
    assert_eq!(got, want, "{what}: {n} chunks at chunk {first_chunk}, flags {flags}");
}

/// `chunk_subtrees_capped` against upstream for each small cap, on `n` chunks at `first_chunk`.
fn check_capped(be: &OpenClBackend, what: &str, n: u64, first_chunk: u64) {
    let data = pattern(n as usize * CHUNK_LEN);
    for max in [1u64, 2, 4, 8, 16, 64] {
        let want = common::upstream_subtrees(&data, first_chunk, max, &IV, 0);
        let mut got = vec![[0u8; 32]; b3accel::subtree_count(n, max)];
        be.chunk_subtrees_capped(&data, first_chunk, max, &IV, 0, &mut got).unwrap();
        assert_eq!(got, want, "{what}: {n} chunks at {first_chunk}, at most {max} per subtree");
    }
}

#[test]
fn work_group_boundaries() {
    // The default configuration, and a chunk kernel that reduces only two levels in its group
    // (a whole dispatch more for the parent kernel).
    for (i, opts) in devices().into_iter().flat_map(|i| {
        [(i, OpenClOptions::default()), (i, OpenClOptions { chunk_levels: Some(2), ..Default::default() })]
    }) {
        let be = open(i, opts);
        let (w, p, _) = be.kernel_config();
        let (w, p) = (w as u64, p as u64);
        let mut counts = vec![1, 2, 3, w - 1, w, w + 1, 2 * w - 1, 2 * w + 1, 3 * w + 5];
        // Two and three dispatches, with ragged groups on every level.
        counts.extend([w * p - 1, w * p, w * p + 1, 2 * w * p + 3 * w + 7]);
        counts.retain(|&n| n >= 1);
        counts.dedup();
        for &n in &counts {
            check_subtrees(&be, "default", n, 0, 0);
        }
        // Chunk counters past 2^32, in keyed mode: the high word must reach the kernel.
        check_subtrees(&be, "counter > 2^32", w + 3, 1 << 33, 16);
        check_subtrees(&be, "counter > 2^32", 2 * w, 5 << 32, 64);
        for len in [w * CHUNK_LEN as u64, w * CHUNK_LEN as u64 + 1, (w * p + 1) * 1024 - 1] {
            check_hash(&be, "default", &Mode::Hash, &pattern(len as usize));
        }
        eprintln!(
            "opencl:{i}: work-group boundaries ok for {w} x {p}, {} levels in the chunk kernel ({counts:?} chunks)",
            be.chunk_levels(w * p)
        );
    }
}

#[test]
fn tiny_work_groups_take_many_levels() {
    // Work-groups of 4 chunks and 2 CVs: a few hundred chunks already take eight dispatches,
    // every one of them with a ragged last group.
    for i in devices() {
        // Every way the chunk kernel can load its input: staged, direct with and without prefetch.
        for (staged, knobs) in [(false, ""), (false, "-D PREFETCH=0"), (true, "")] {
            let opts = OpenClOptions {
                chunk_work_group: Some(4),
                parent_work_group: Some(2),
                staged_loads: Some(staged),
                build_options: knobs.into(),
                ..Default::default()
            };
            let be = open(i, opts);
            assert_eq!(be.kernel_config(), (4, 2, staged));
            for n in (1..=70).chain([127, 128, 129, 255, 256, 257, 511, 683, 1000]) {
                check_subtrees(&be, "4x2", n, 0, 0);
            }
            check_subtrees(&be, "4x2", 683, 1024 * 7, 64);
            // Caps past the chunk kernel's group: parent dispatches of fewer levels up to the cap.
            check_capped(&be, "4x2", 683, 1024 * 7);
            for mode in modes() {
                check_hash(&be, "4x2", &mode, &pattern(300 * CHUNK_LEN + 1));
            }
        }
        // A chunk kernel that stops short of its group's top: it writes 2^(3 - levels) CVs per
        // group of 8, and ragged groups leave pieces below that level and nodes at it.
        for levels in [0, 1, 2] {
            let opts = OpenClOptions {
                chunk_work_group: Some(8),
                chunk_levels: Some(levels),
                parent_work_group: Some(4),
                ..Default::default()
            };
            let be = open(i, opts);
            assert_eq!(be.chunk_levels(1000), levels);
            let what = format!("8x4, {levels} levels in the chunk kernel");
            for n in (1..=40).chain([63, 64, 65, 127, 128, 129, 255, 256, 257, 683, 1000]) {
                check_subtrees(&be, &what, n, 0, 0);
            }
            check_subtrees(&be, &what, 683, 1024 * 7, 64);
            check_capped(&be, &what, 1001, 1024);
            for mode in modes() {
                check_hash(&be, &what, &mode, &pattern(300 * CHUNK_LEN + 1));
            }
        }
    }
}

#[test]
fn capped_runs_share_one_stream() {
    // Inputs of exactly 2^k chunks ask for capped subtrees (the root's two children); the
    // backend streams all pieces in one pipeline, each onto a stack of its own.
    for i in devices() {
        // Staged with 2, 3 and 4 slots, and wrapped in place (slot count unused).
        for (slots, host) in [(2, false), (3, false), (4, false), (2, true)] {
            let opts = OpenClOptions {
                segment_bytes: Some(64 << 10),
                staging_slots: Some(slots),
                host_ptr_uploads: Some(host),
                ..Default::default()
            };
            let be = open(i, opts);
            let what = format!("64 KiB segments x {slots}, in place: {host}");
            for len in [2 << 20, 4 << 20] {
                check_hash(&be, &what, &Mode::Hash, &pattern(len));
            }
            check_hash(&be, &what, &Mode::Keyed(KEY), &pattern((2 << 20) + 1));
            // Caps above, at and below the segment length (64 chunks; below it each segment's
            // passes stop at the cap's level), ragged last runs too.
            for (n, first, max) in [
                (2048u64, 0u64, 1024u64),
                (2048 + 64 * 3 + 5, 4096, 256),
                (1500, 0, 64),
                (1500, 0, 16),
                (1500, 0, 8),
                (1501, 0, 4),
                (1503, 2048, 2),
                (1500 + 64 * 3 + 7, 0, 1),
            ] {
                let data = pattern(n as usize * CHUNK_LEN);
                let count = b3accel::subtree_count(n, max);
                let want = common::upstream_subtrees(&data, first, max, &IV, 0);
                let mut got = vec![[0u8; 32]; count];
                be.chunk_subtrees_capped(&data, first, max, &IV, 0, &mut got).unwrap();
                assert_eq!(got, want, "{what}: {n} chunks at {first}, at most {max} per subtree");
            }
        }
        let bad = OpenClBackend::with_options(i, &OpenClOptions { staging_slots: Some(9), ..Default::default() });
        assert!(matches!(bad, Err(Error::InvalidInput(_))), "9 staging slots must be refused");
    }
}

#[test]
fn streams_across_many_segments() {
    for i in devices() {
        // 4-chunk segments: a 1 MiB input streams through 256 of them, staged and in place.
        for host in [false, true] {
            let opts = OpenClOptions {
                segment_bytes: Some(4 * CHUNK_LEN),
                host_ptr_uploads: Some(host),
                ..Default::default()
            };
            let be = open(i, opts);
            assert_eq!(be.segment_bytes(), 4 * CHUNK_LEN);
            for len in [4 * 1024 + 1, 9 * 1024, 13 * 1024 + 5, (1 << 20) + 3 * 1024 + 17] {
                for mode in modes() {
                    check_hash(&be, &format!("4 KiB segments, in place: {host}"), &mode, &pattern(len));
                }
            }
        }
        let be = open(i, OpenClOptions { segment_bytes: Some(4 * CHUNK_LEN), ..Default::default() });
        // hash_from_host streams the same way and reports its parts.
        let data = pattern((1 << 20) + 777);
        let (h, t) = be.hash_from_host(&data, &Mode::Hash).unwrap().into_parts();
        assert_eq!(h, blake3::hash(&data));
        assert!(t.total > std::time::Duration::ZERO && t.kernel > std::time::Duration::ZERO);
        // Whole runs that span segments at an aligned position, as the hasher hands them over.
        check_subtrees(&be, "4 KiB segments", 96, 128, 0);
        check_subtrees(&be, "4 KiB segments", 77, 128, 16);
        // 64 KiB segments, more chunks than a work-group in each, through the incremental hasher.
        let be = Arc::new(open(i, OpenClOptions { segment_bytes: Some(64 << 10), ..Default::default() }));
        let data = pattern(3 * (1 << 20) + 12_345);
        let mut h = Hasher::with_backend(be.clone(), &Mode::Keyed(KEY));
        for piece in data.chunks(200_001) {
            h.update(piece).unwrap();
        }
        assert_eq!(h.finalize().unwrap(), blake3::keyed_hash(&KEY, &data));
    }
}

#[test]
fn short_of_memory_falls_back_or_fails_cleanly() {
    for i in devices() {
        // Segments of 1 MiB asked for, but no buffer over 64 KiB allowed: smaller segments.
        let be = open(
            i,
            OpenClOptions { segment_bytes: Some(1 << 20), max_alloc_bytes: Some(64 << 10), ..Default::default() },
        );
        let data = pattern(3 << 20);
        let h = be.hash_from_host(&data, &Mode::Hash).unwrap().value;
        assert_eq!(h, blake3::hash(&data));
        check_hash(&be, "64 KiB allowed", &Mode::Hash, &data);
        // Not even the smallest segment fits: a clear error, and the backend still works after.
        let be = open(i, OpenClOptions { max_alloc_bytes: Some(1000), ..Default::default() });
        match be.hash_from_host(&data, &Mode::Hash) {
            Err(e @ Error::OutOfMemory { .. }) => eprintln!("as expected: {e}"),
            other => panic!("expected OutOfMemory, got {other:?}"),
        }
        let small = pattern(100_000);
        let h = be.hash_from_host(&small, &Mode::Hash).unwrap().value;
        assert_eq!(h, blake3::hash(&small), "the direct path needs no segments");
    }
}

#[test]
fn device_resident_buffers_in_all_modes() {
    for i in devices() {
        let be = open(i, OpenClOptions::default());
        let (w, _, _) = be.kernel_config();
        for len in [1, 1023, 1024, 1025, 2048, 2049, 5000, w * CHUNK_LEN + 1, (3 << 20) + 7] {
            let data = pattern(len);
            let buf =
                ocl::Buffer::<u8>::builder().queue(be.queue().clone()).len(len).copy_host_slice(&data).build().unwrap();
            let all = 0..len as u64;
            for mode in modes() {
                let want = upstream(&mode, &data, 131);
                assert_eq!(
                    be.hash(&buf, all.clone(), &mode).unwrap().value.as_bytes(),
                    &want[..32],
                    "resident {len} bytes {mode:?}"
                );
                let mut got = vec![0u8; 131];
                be.xof_reader(&buf, all.clone(), &mode).unwrap().value.fill(&mut got);
                assert_eq!(got, want, "resident reader {len} bytes {mode:?}");
                // A prefix of the buffer, and a range from a later chunk.
                let prefix = len * 2 / 3;
                let mut got = vec![0u8; 40];
                be.xof_reader(&buf, 0..prefix as u64, &mode).unwrap().value.fill(&mut got);
                assert_eq!(got, upstream(&mode, &data[..prefix], 40), "prefix {prefix}");
                if len > CHUNK_LEN {
                    let h = be.hash(&buf, CHUNK_LEN as u64..len as u64, &mode).unwrap().value;
                    assert_eq!(h.as_bytes(), &upstream(&mode, &data[CHUNK_LEN..], 32)[..], "from chunk 1 of {len}");
                }
            }
            let (h, t) = be.hash(&buf, all, &Mode::Hash).unwrap().into_parts();
            assert_eq!(h, blake3::hash(&data));
            assert_eq!(t.upload, std::time::Duration::ZERO, "nothing is uploaded");
            assert!(t.total > std::time::Duration::ZERO);
            // The same bytes through `upload`, timed.
            let up = be.upload(&data).unwrap();
            assert!(up.upload > std::time::Duration::ZERO && up.total >= up.upload, "{up:?}");
            assert_eq!(be.hash(&up.value, 0..len as u64, &Mode::Hash).unwrap().value, blake3::hash(&data));
        }
        // An empty upload is a buffer all the same, and hashes as the empty input.
        let empty = be.upload(&[]).unwrap().value;
        assert_eq!(be.hash(&empty, 0..0, &Mode::Hash).unwrap().value, blake3::hash(b""));
        // A write still in flight on the backend's queue is seen: the hash waits for it.
        let data = pattern(2 << 20);
        let buf = ocl::Buffer::<u8>::builder().queue(be.queue().clone()).len(data.len()).build().unwrap();
        // SAFETY (non-blocking write): `data` outlives the hash below, which waits for the write.
        unsafe { buf.write(&data).queue(be.queue()).block(false).enq().unwrap() };
        assert_eq!(be.hash(&buf, 0..data.len() as u64, &Mode::Hash).unwrap().value, blake3::hash(&data));
        // Longer than the buffer, a range off a chunk boundary or backwards, or from another
        // context: errors, not panics.
        let buf = ocl::Buffer::<u8>::builder().queue(be.queue().clone()).len(100).build().unwrap();
        assert!(matches!(be.xof_reader(&buf, 0..101, &Mode::Hash), Err(Error::InvalidInput(_))));
        assert!(matches!(be.hash(&buf, 5..50, &Mode::Hash), Err(Error::InvalidInput(_))));
        #[allow(clippy::reversed_empty_ranges)]
        let backwards = 50..0;
        assert!(matches!(be.hash(&buf, backwards, &Mode::Hash), Err(Error::InvalidInput(_))));
        let other = open(i, OpenClOptions::default());
        match other.hash(&buf, 0..100, &Mode::Hash) {
            Err(Error::InvalidInput(msg)) => assert!(msg.contains("context"), "{msg}"),
            r => panic!("a foreign buffer must be refused, got {r:?}"),
        }
    }
}

#[test]
fn subtrees_of_device_buffers_match_upstream() {
    for i in devices() {
        let be = open(i, OpenClOptions::default());
        let buffer = |bytes: &[u8]| {
            ocl::Buffer::<u8>::builder()
                .queue(be.queue().clone())
                .len(bytes.len())
                .copy_host_slice(bytes)
                .build()
                .unwrap()
        };
        let data = pattern((3 << 20) + 1234);
        let whole = buffer(&data);
        common::check_resident_subtrees(
            &format!("opencl:{i}"),
            &data,
            |at, len, input_offset, mode| Ok(be.subtree_cv(&whole, at..at + len, input_offset, mode)?.value),
            |piece, input_offset, mode| {
                Ok(be.subtree_cv(&buffer(piece), 0..piece.len() as u64, input_offset, mode)?.value)
            },
        );
        eprintln!("opencl:{i}: resident subtrees ok");
    }
}

#[test]
fn sixteen_threads_on_one_device() {
    for i in devices() {
        // The cached backend (as hash_on uses it) and one that streams in 16 KiB segments.
        let cached = b3accel::backend(Device::OpenCl(i)).unwrap();
        let streaming: Arc<dyn Backend> =
            Arc::new(open(i, OpenClOptions { segment_bytes: Some(16 << 10), ..Default::default() }));
        std::thread::scope(|s| {
            for t in 0..16usize {
                let be = if t % 2 == 0 { cached.clone() } else { streaming.clone() };
                s.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(t as u64);
                    for round in 0..3 {
                        let len = rng.random_range(1..300_000);
                        let data: Vec<u8> = (0..len).map(|j| (j * 7 + t * 13 + round) as u8).collect();
                        let mode = &modes()[(t + round) % 3];
                        check_hash(&*be, &format!("thread {t} round {round}"), mode, &data);
                    }
                    let blocks: Vec<[u8; 64]> = (0..50).map(|j| [(t + j) as u8; 64]).collect();
                    let mut out = vec![[0u8; 32]; 50];
                    be.hash_blocks(&blocks, &mut out).unwrap();
                    for (b, o) in blocks.iter().zip(&out) {
                        assert_eq!(o, blake3::hash(b).as_bytes(), "thread {t} hash_blocks");
                    }
                });
            }
        });
    }
}

#[test]
fn hash_blocks_matches_upstream() {
    for i in devices() {
        let be = b3accel::backend(Device::OpenCl(i)).unwrap();
        for n in [1usize, 2, 63, 64, 65, 1000] {
            let blocks: Vec<[u8; 64]> = (0..n).map(|j| std::array::from_fn(|k| (j * 64 + k) as u8)).collect();
            let mut out = vec![[0u8; 32]; n];
            be.hash_blocks(&blocks, &mut out).unwrap();
            for (b, o) in blocks.iter().zip(&out) {
                assert_eq!(o, blake3::hash(b).as_bytes(), "{n} blocks");
            }
        }
        let mut none: [[u8; 32]; 0] = [];
        be.hash_blocks(&[], &mut none).unwrap();
        assert!(matches!(be.hash_blocks(&[[0; 64]; 2], &mut [[0; 32]; 1]), Err(Error::InvalidInput(_))));
    }
}

#[test]
fn random_sizes_match_upstream() {
    let seed = std::env::var("B3ACCEL_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x00b3_acce1u64);
    eprintln!("random_sizes_match_upstream: seed {seed} (set B3ACCEL_TEST_SEED to vary)");
    for i in devices() {
        let be = b3accel::backend(Device::OpenCl(i)).unwrap();
        let mut rng = StdRng::seed_from_u64(seed ^ i as u64);
        for round in 0..14 {
            // Mostly up to 256 KiB, now and then up to 4 MiB.
            let max = if round % 4 == 3 { 4 << 20 } else { 256 << 10 };
            let len = rng.random_range(0..max);
            let mut data = vec![0u8; len];
            rng.fill(&mut data[..]);
            let mode = &modes()[rng.random_range(0..3)];
            check_hash(&*be, &format!("round {round}"), mode, &data);
            // The same input through the incremental hasher in random pieces.
            let mut h = Hasher::with_backend(be.clone(), mode);
            let mut rest = &data[..];
            while !rest.is_empty() {
                let take = rng.random_range(1..=rest.len().min(1 << 20));
                h.update(&rest[..take]).unwrap();
                rest = &rest[take..];
            }
            assert_eq!(
                h.finalize().unwrap().as_bytes(),
                &upstream(mode, &data, 32)[..],
                "hasher, {len} bytes, {mode:?}"
            );
        }
    }
}

#[test]
fn bad_device_index_is_an_error() {
    let available = b3accel::opencl::enumerate().map(|l| l.len()).unwrap_or(0);
    match OpenClBackend::open(available) {
        Err(Error::NoSuchDevice { device, available: a }) => {
            assert_eq!(device, Device::OpenCl(available));
            assert_eq!(a, available);
        }
        Err(Error::Unavailable { .. }) if available == 0 => {}
        other => panic!("opencl:{available} must not open: {other:?}"),
    }
    assert!(b3accel::hash_on(Device::OpenCl(available + 7), b"abc").is_err());
    assert!(matches!(
        OpenClBackend::with_options(0, &OpenClOptions { segment_bytes: Some(3000), ..Default::default() }),
        Err(Error::InvalidInput(_) | Error::Unavailable { .. } | Error::NoSuchDevice { .. })
    ));
}

#[test]
fn kernel_build_errors_carry_the_log() {
    for i in devices() {
        // A macro that breaks the kernel source: the compiler's complaint must come back.
        let opts = OpenClOptions { build_options: "-D compress_cv=1".into(), ..Default::default() };
        match OpenClBackend::with_options(i, &opts) {
            Err(Error::KernelBuild { device, log }) => {
                assert_eq!(device, Device::OpenCl(i));
                assert!(!log.trim().is_empty(), "empty build log");
                eprintln!("opencl:{i}: build log as expected:\n{log}");
            }
            other => panic!("a broken kernel must fail to build, got {other:?}"),
        }
    }
}

/// Re-runs this test binary's `no_driver_child` with the OpenCL loader pointed at an empty vendor
/// directory: no platform at all.
#[test]
fn no_driver_is_unavailable_and_cpu_still_works() {
    let exe = std::env::current_exe().unwrap();
    let empty = std::env::temp_dir().join(format!("b3accel-no-icd-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let out = std::process::Command::new(exe)
        .args(["--exact", "no_driver_child", "--include-ignored", "--nocapture"])
        .env("OCL_ICD_VENDORS", &empty)
        .env("OPENCL_VENDOR_PATH", &empty)
        // Loaders also load the libraries listed here, whatever the vendor directory holds.
        .env_remove("OCL_ICD_FILENAMES")
        .env_remove("CI")
        .output()
        .unwrap();
    let _ = std::fs::remove_dir(&empty);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "child failed:\n{text}");
    assert!(text.contains("1 passed"), "the child test did not run:\n{text}");
    assert!(text.contains("no OpenCL platform"), "{text}");
}

#[test]
#[ignore = "run by no_driver_is_unavailable_and_cpu_still_works in a process without a driver"]
fn no_driver_child() {
    let env: Vec<String> = std::env::vars()
        .filter(|(k, _)| k.contains("OCL") || k.contains("OPENCL") || k.contains("POCL"))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let err =
        b3accel::opencl::enumerate().expect_err(&format!("no driver, no devices (the loader's environment: {env:?})"));
    assert!(matches!(err, Error::Unavailable { .. }), "{err:?}");
    println!("{err}");
    match b3accel::backend(Device::OpenCl(0)) {
        Err(Error::Unavailable { device, reason }) => {
            assert_eq!(device, Device::OpenCl(0));
            assert!(reason.contains("no OpenCL platform"), "{reason}");
        }
        other => panic!("expected Unavailable, got {:?}", other.map(|b| b.info().clone())),
    }
    assert_eq!(b3accel::devices()[0].device, Device::Cpu);
    assert_eq!(b3accel::hash_on(Device::Auto, &[1; 5000]).unwrap(), blake3::hash(&[1; 5000]));
}
