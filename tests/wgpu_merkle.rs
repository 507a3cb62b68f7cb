//! The wgpu backend's Merkle and hash_many kernels on every adapter, host and device-resident
//! inputs, against the CPU backend and upstream `blake3` (a loop of `blake3::hash` over pairs).
#![cfg(feature = "wgpu")]

mod common;

use b3accel::cpu::CpuBackend;
use b3accel::merkle::{hash_each_with, hash_many_with, level_sizes};
use b3accel::wgpu::{ResidentHasher, WgpuBackend, WgpuOptions};
use b3accel::{Backend, BackendKind, Device, MerkleInner, Mode, Resident};
use rand::{Rng, SeedableRng};

type Node = [u8; 32];

const KEY: [u8; 32] = *b"whats the Elvish word for friend";
const CONTEXT: &str = "b3accel wgpu_merkle test context";
const COUNTS: [usize; 10] = [1, 2, 3, 5, 7, 8, 9, 1000, 4097, 1 << 16];
// 16, 48, 64, 1024 and 1040 (two chunks, the second of 16 bytes) take the vec4 path.
const LENGTHS: [usize; 12] = [0, 1, 16, 48, 63, 64, 65, 1023, 1024, 1025, 1040, 3000];

/// The wgpu adapters; none is a loud warning, and a failure under CI=true.
fn adapters() -> Vec<WgpuBackend> {
    common::device_indices(BackendKind::Wgpu)
        .into_iter()
        .map(|i| WgpuBackend::open(i).unwrap_or_else(|e| panic!("wgpu:{i}: {e}")))
        .collect()
}

fn name(b: &WgpuBackend) -> String {
    format!("{} ({}, {})", b.info().device, b.info().name, b.info().api)
}

fn parent(left: &Node, right: &Node) -> Node {
    *blake3::hash(&[&left[..], &right[..]].concat()).as_bytes()
}

/// Every inner node, level by level, by a loop of upstream `blake3::hash` over pairs.
fn reference_inner(leaves: &[Node]) -> Vec<Node> {
    let mut all = Vec::new();
    let mut cur = leaves.to_vec();
    while cur.len() > 1 {
        let stored: Vec<Node> = cur.chunks_exact(2).map(|p| parent(&p[0], &p[1])).collect();
        all.extend_from_slice(&stored);
        let carried = (cur.len() % 2 == 1).then(|| cur[cur.len() - 1]);
        cur = stored;
        cur.extend(carried);
    }
    all
}

fn random_leaves(n: usize, seed: u64) -> Vec<Node> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random()).collect()
}

fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random()).collect()
}

fn upstream(mode: &Mode, msg: &[u8]) -> blake3::Hash {
    match mode {
        Mode::Hash => blake3::hash(msg),
        Mode::Keyed(k) => blake3::keyed_hash(k, msg),
        Mode::DeriveKey(c) => blake3::Hash::from_bytes(blake3::derive_key(c, msg)),
    }
}

fn modes() -> [Mode; 3] {
    [Mode::Hash, Mode::Keyed(KEY), Mode::DeriveKey(CONTEXT.into())]
}

/// A STORAGE buffer holding `bytes` at byte `offset` (padded to whole words).
fn storage_buffer(device: &wgpu::Device, queue: &wgpu::Queue, bytes: &[u8], offset: u64) -> wgpu::Buffer {
    let size = (offset + bytes.len() as u64).next_multiple_of(4).max(4);
    let buf = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test input"),
        size,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut padded = bytes.to_vec();
    padded.resize((bytes.len()).next_multiple_of(4), 0);
    if !padded.is_empty() {
        queue.write_buffer(&buf, offset, &padded);
    }
    buf
}

#[test]
fn roots_and_trees_match_cpu_and_upstream() {
    let _serial = common::one_at_a_time();
    let cpu = CpuBackend::new();
    for gpu in adapters() {
        for &n in &COUNTS {
            let leaves = random_leaves(n, 100 + n as u64);
            let want = reference_inner(&leaves);
            let want_root = want.last().copied().unwrap_or(leaves[0]);
            assert_eq!(cpu.merkle(&leaves, None).unwrap(), want_root, "cpu, n = {n}");
            let root = gpu.merkle(&leaves, None).unwrap();
            assert_eq!(root, want_root, "{}: root of {n}", name(&gpu));
            let mut inner = vec![[0u8; 32]; n - 1];
            assert_eq!(gpu.merkle(&leaves, Some(&mut inner)).unwrap(), want_root, "{}: tree of {n}", name(&gpu));
            assert_eq!(inner, want, "{}: inner nodes of {n}", name(&gpu));
            assert_eq!(inner.len(), level_sizes(n).sum::<usize>());
        }
    }
}

#[test]
fn merkle_errors_are_errors() {
    let _serial = common::one_at_a_time();
    for gpu in adapters() {
        assert!(gpu.merkle(&[], None).is_err());
        let leaves = random_leaves(5, 1);
        let mut short = vec![[0u8; 32]; 3];
        assert!(gpu.merkle(&leaves, Some(&mut short)).is_err());
        let r = gpu.resident();
        let buf = storage_buffer(gpu.device(), gpu.queue(), leaves.as_flattened(), 0);
        assert!(r.merkle_root(&buf, 0, 0, MerkleInner::None).is_err(), "zero leaves");
        assert!(r.merkle_root(&buf, 0, 6, MerkleInner::None).is_err(), "more leaves than the buffer holds");
        assert!(r.merkle_root(&buf, 3, 1, MerkleInner::None).is_err(), "unaligned offset");
        assert!(r.merkle_root(&buf, 0, 5, MerkleInner::Host(&mut short)).is_err(), "inner of the wrong length");
        let small = storage_buffer(gpu.device(), gpu.queue(), &[0u8; 96], 0);
        assert!(r.merkle_root(&buf, 0, 5, MerkleInner::Device(&small)).is_err(), "a device inner too small");
        let no_storage = gpu.device().create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: 1024,
            usage: wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        assert!(r.merkle_root(&no_storage, 0, 2, MerkleInner::None).is_err(), "no STORAGE usage");
        assert!(r.hash_many(&no_storage, 0, 2, 10, &Mode::Hash).is_err());
        assert!(r.hash_many(&buf, 0, 3, 100, &Mode::Hash).is_err(), "messages beyond the buffer");
        assert!(r.hash_many(&buf, 4, 1, 1, &Mode::Hash).is_err(), "unaligned offset");
        let mut out = [[0u8; 32]; 3];
        assert!(gpu.hash_many(&[0u8; 10], 3, &b3accel::IV, 0, &mut out).is_err(), "10 bytes are not 3 x 3");
        // The device is still fine afterwards.
        assert_eq!(
            r.merkle_root(&buf, 0, 5, MerkleInner::None).unwrap().value.as_bytes(),
            &reference_inner(&leaves)[3]
        );
    }
}

#[test]
fn resident_leaves_match() {
    let _serial = common::one_at_a_time();
    for gpu in adapters() {
        let r = gpu.resident();
        for &n in &[1usize, 2, 3, 9, 1000, 4097] {
            let leaves = random_leaves(n, 7 + n as u64);
            let want = reference_inner(&leaves);
            let want_root = want.last().copied().unwrap_or(leaves[0]);
            // At offset 256 (aligned for every device) after some other data.
            let buf = storage_buffer(gpu.device(), gpu.queue(), leaves.as_flattened(), 256);
            let (root, t) = r.merkle_root(&buf, 256, n, MerkleInner::None).unwrap().into_parts();
            assert_eq!(root.as_bytes(), &want_root, "{}: resident root of {n}", name(&gpu));
            assert!(t.total >= t.kernel);
            let mut inner = vec![[0u8; 32]; n - 1];
            r.merkle_root(&buf, 256, n, MerkleInner::Host(&mut inner)).unwrap();
            assert_eq!(inner, want, "{}: resident tree of {n}", name(&gpu));
            // The tree kept on the device, in a buffer with room to spare.
            let dev_inner = gpu.device().create_buffer(&wgpu::BufferDescriptor {
                label: Some("test inner nodes"),
                size: 32 * n as u64 + 64,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            let root = r.merkle_root(&buf, 256, n, MerkleInner::Device(&dev_inner)).unwrap().value;
            assert_eq!(root.as_bytes(), &want_root);
            if n > 1 {
                let back = read_back(gpu.device(), gpu.queue(), &dev_inner, 0, 32 * (n as u64 - 1));
                assert!(back == want.as_flattened(), "{}: resident tree of {n} on the device", name(&gpu));
            }
        }
    }
}

#[test]
fn hash_many_matches_cpu_and_upstream_in_every_mode() {
    let _serial = common::one_at_a_time();
    let cpu = CpuBackend::new();
    for gpu in adapters() {
        for &len in &LENGTHS {
            let count = if len <= 1024 { 300 } else { 37 };
            let data = random_bytes(len * count, len as u64);
            let messages: Vec<&[u8]> = (0..count).map(|i| &data[i * len..(i + 1) * len]).collect();
            for mode in modes() {
                // Through the public API, which calls the backend's hash_many override with the
                // mode's key words and flags (hash_each: messages of 0 bytes too).
                let got = if len == 0 {
                    hash_each_with(&gpu, &mode, &messages).unwrap()
                } else {
                    hash_many_with(&gpu, &mode, &data, len).unwrap()
                };
                let on_cpu = if len == 0 {
                    hash_each_with(&cpu, &mode, &messages).unwrap()
                } else {
                    hash_many_with(&cpu, &mode, &data, len).unwrap()
                };
                assert_eq!(got.len(), count);
                for (i, msg) in messages.iter().enumerate() {
                    assert_eq!(got[i], upstream(&mode, msg), "{}: message {i} of {len} bytes, {mode:?}", name(&gpu));
                }
                assert_eq!(got, on_cpu);
            }
        }
    }
}

/// Host-bound batches in many small rounds (8 KiB segments make 8 KiB rounds: 256 messages of
/// one chunk, or 256 of several), the device filling one set of buffers while the host copies
/// out of the other: every round, the last (partial) one included, lands in its place.
#[test]
fn hash_many_in_many_rounds_matches_upstream() {
    let _serial = common::one_at_a_time();
    for i in common::device_indices(BackendKind::Wgpu) {
        let gpu = WgpuBackend::open_with(i, WgpuOptions { segment_bytes: Some(8 << 10), ..Default::default() })
            .unwrap_or_else(|e| panic!("wgpu:{i}: {e}"));
        // 1000 x 64 B: 4 rounds of 256 (the last 232); 700 x 2 KiB and 300 x 1040 B: 3 and 2 rounds.
        for (len, count) in [(64usize, 1000usize), (2048, 700), (1040, 300), (1, 513)] {
            let data = random_bytes(len * count, 7 + len as u64);
            for mode in modes() {
                let got = hash_many_with(&gpu, &mode, &data, len).unwrap();
                assert_eq!(got.len(), count);
                for (k, msg) in data.chunks_exact(len).enumerate() {
                    assert_eq!(
                        got[k],
                        upstream(&mode, msg),
                        "{}: message {k} of {count} x {len} B, {mode:?}",
                        name(&gpu)
                    );
                }
            }
        }
    }
}

#[test]
fn resident_messages_match() {
    let _serial = common::one_at_a_time();
    for gpu in adapters() {
        let r = gpu.resident();
        for &len in &LENGTHS {
            let count = if len <= 1024 { 513 } else { 20 };
            let data = random_bytes(len * count, 1000 + len as u64);
            let buf = storage_buffer(gpu.device(), gpu.queue(), &data, 256);
            for mode in modes() {
                let got = r.hash_many(&buf, 256, count, len, &mode).unwrap().value;
                for (i, h) in got.iter().enumerate() {
                    assert_eq!(*h, upstream(&mode, &data[i * len..(i + 1) * len]), "{}: {len} bytes", name(&gpu));
                }
            }
        }
        assert!(r
            .hash_many(&storage_buffer(gpu.device(), gpu.queue(), &[], 0), 0, 0, 5, &Mode::Hash)
            .unwrap()
            .value
            .is_empty());
    }
}

/// A device of the caller's with 64 KiB storage bindings: level 0 of 2^16 leaves (2 MiB) is split
/// over 32 bindings, and a batch of messages over many dispatches.
#[test]
fn callers_device_with_small_bindings() {
    let _serial = common::one_at_a_time();
    for gpu in adapters() {
        let info = gpu.device().adapter_info();
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
        desc.backends = wgpu::Backends::all();
        // Our own instance, its drivers' start-up chatter kept off stderr as the library's is.
        let adapters = b3accel::stderr::quiet(|| {
            let instance = wgpu::Instance::new(desc);
            pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()))
        });
        let adapter = adapters
            .into_iter()
            .find(|a| a.get_info() == info)
            .unwrap_or_else(|| panic!("{}: no matching adapter", name(&gpu)));
        let limits = wgpu::Limits { max_storage_buffer_binding_size: 64 << 10, ..wgpu::Limits::default() };
        let desc = wgpu::DeviceDescriptor { label: Some("caller's"), required_limits: limits, ..Default::default() };
        let (device, queue) = pollster::block_on(adapter.request_device(&desc)).expect("caller's device");
        let r = ResidentHasher::new(&device, &queue).unwrap();
        let n = 1 << 16;
        let leaves = random_leaves(n, 99);
        let want = reference_inner(&leaves);
        let buf = storage_buffer(&device, &queue, leaves.as_flattened(), 0);
        assert_eq!(r.merkle_root(&buf, 0, n, MerkleInner::None).unwrap().value.as_bytes(), want.last().unwrap());
        // The inner nodes (2 MiB) exceed one binding: a clear error.
        let mut inner = vec![[0u8; 32]; n - 1];
        assert!(r.merkle_root(&buf, 0, n, MerkleInner::Host(&mut inner)).is_err());
        let small = random_leaves(1500, 3);
        let sbuf = storage_buffer(&device, &queue, small.as_flattened(), 0);
        let mut inner = vec![[0u8; 32]; 1499];
        r.merkle_root(&sbuf, 0, 1500, MerkleInner::Host(&mut inner)).unwrap();
        assert_eq!(inner, reference_inner(&small));
        // 5000 messages of 65 bytes: 325_000 bytes over 6 dispatches of 768 messages.
        let data = random_bytes(65 * 5000, 5);
        let mbuf = storage_buffer(&device, &queue, &data, 0);
        let got = r.hash_many(&mbuf, 0, 5000, 65, &Mode::Keyed(KEY)).unwrap().value;
        for (i, h) in got.iter().enumerate() {
            assert_eq!(*h, blake3::keyed_hash(&KEY, &data[i * 65..(i + 1) * 65]), "message {i}");
        }
    }
}

/// Reads `len` bytes of `buf` (COPY_SRC) at `offset` back to the host.
fn read_back(device: &wgpu::Device, queue: &wgpu::Queue, buf: &wgpu::Buffer, offset: u64, len: u64) -> Vec<u8> {
    let rb = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test readback"),
        size: len.max(4),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut enc = device.create_command_encoder(&Default::default());
    enc.copy_buffer_to_buffer(buf, offset, &rb, 0, len);
    queue.submit([enc.finish()]);
    rb.map_async(wgpu::MapMode::Read, .., |r| r.expect("map"));
    device.poll(wgpu::PollType::wait_indefinitely()).expect("poll");
    let view = rb.get_mapped_range(..).expect("mapped");
    view[..len as usize].to_vec()
}

/// `hash_many_into`: hashes written into a device buffer of the caller's, at an offset, in every
/// mode; neighbouring bytes untouched; messages longer than a chunk and short buffers are errors.
#[test]
fn resident_messages_into_a_device_buffer() {
    let _serial = common::one_at_a_time();
    for gpu in adapters() {
        let r = gpu.resident();
        for &len in LENGTHS.iter().filter(|&&l| l <= 1024) {
            let count = 700;
            let data = random_bytes(len * count, 2000 + len as u64);
            let buf = storage_buffer(gpu.device(), gpu.queue(), &data, 256);
            let out = gpu.device().create_buffer(&wgpu::BufferDescriptor {
                label: Some("test hashes"),
                size: 512 + 32 * count as u64,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            gpu.queue().write_buffer(&out, 0, &vec![0xA5u8; 512 + 32 * count]);
            for mode in modes() {
                let t = r.hash_many_into(&buf, 256, count, len, &mode, &out, 256).unwrap();
                assert!(t.total >= t.kernel);
                let got = read_back(gpu.device(), gpu.queue(), &out, 0, 512 + 32 * count as u64);
                assert!(got[..256].iter().all(|&b| b == 0xA5), "bytes before the hashes untouched");
                assert!(got[256 + 32 * count..].iter().all(|&b| b == 0xA5), "bytes after the hashes untouched");
                for i in 0..count {
                    let h = &got[256 + 32 * i..256 + 32 * (i + 1)];
                    assert_eq!(
                        h,
                        upstream(&mode, &data[i * len..(i + 1) * len]).as_bytes(),
                        "{}: {len} bytes, message {i}",
                        name(&gpu)
                    );
                }
            }
        }
        let data = random_bytes(2000, 1);
        let buf = storage_buffer(gpu.device(), gpu.queue(), &data, 0);
        let out = gpu.device().create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: 64,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        assert!(r.hash_many_into(&buf, 0, 1, 1025, &Mode::Hash, &out, 0).is_err(), "longer than a chunk");
        assert!(r.hash_many_into(&buf, 0, 3, 64, &Mode::Hash, &out, 0).is_err(), "3 hashes in 64 bytes");
        assert!(r.hash_many_into(&buf, 0, 1, 64, &Mode::Hash, &out, 4).is_err(), "unaligned output offset");
        assert!(r.hash_many_into(&buf, 0, 100, 64, &Mode::Hash, &out, 0).is_err(), "messages beyond the buffer");
        r.hash_many_into(&buf, 0, 0, 64, &Mode::Hash, &out, 0).unwrap();
        r.hash_many_into(&buf, 0, 2, 64, &Mode::Hash, &out, 0).unwrap();
    }
}

/// Every number of levels per Merkle dispatch gives the same roots and trees.
#[test]
fn merkle_levels_per_dispatch() {
    let _serial = common::one_at_a_time();
    for gpu in adapters() {
        let Device::Wgpu(i) = gpu.info().device else { unreachable!() };
        for levels in [1, 3, 4, 6, 9] {
            let g =
                WgpuBackend::open_with(i, WgpuOptions { merkle_levels: Some(levels), ..Default::default() }).unwrap();
            for &n in &[1usize, 2, 3, 17, 1000, 4097] {
                let leaves = random_leaves(n, 300 + n as u64);
                let want = reference_inner(&leaves);
                let mut inner = vec![[0u8; 32]; n - 1];
                let root = g.merkle(&leaves, Some(&mut inner)).unwrap();
                assert_eq!(root, want.last().copied().unwrap_or(leaves[0]), "{levels} levels, {n} leaves");
                assert_eq!(inner, want, "{levels} levels, {n} leaves");
                assert_eq!(g.merkle(&leaves, None).unwrap(), root);
            }
        }
    }
}

/// 16 threads on one adapter at once, Merkle roots and hash_many of different sizes through the
/// kept buffers: every result right.
#[test]
fn sixteen_threads_share_the_kept_buffers() {
    let _serial = common::one_at_a_time();
    for gpu in adapters() {
        std::thread::scope(|s| {
            for t in 0..16usize {
                let gpu = &gpu;
                s.spawn(move || {
                    for round in 0..3usize {
                        let n = 100 + 37 * t + 1000 * round;
                        let leaves = random_leaves(n, (t * 10 + round) as u64);
                        let want = reference_inner(&leaves);
                        assert_eq!(gpu.merkle(&leaves, None).unwrap(), *want.last().unwrap(), "thread {t}");
                        let len = [64usize, 100, 1024][round];
                        let data = random_bytes(len * (50 + t), t as u64);
                        let got = hash_many_with(gpu, &Mode::Hash, &data, len).unwrap();
                        for (i, h) in got.iter().enumerate() {
                            assert_eq!(*h, blake3::hash(&data[i * len..(i + 1) * len]), "thread {t} message {i}");
                        }
                    }
                });
            }
        });
    }
}
