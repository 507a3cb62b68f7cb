//! The wgpu backend on every adapter this machine has (on CI: Mesa's llvmpipe through GL and
//! lavapipe through Vulkan): the workgroup and pass boundaries of the shaders, streaming across
//! many segments, device-resident buffers in all modes, concurrency, errors, and differential
//! tests against upstream `blake3`.
#![cfg(feature = "wgpu")]

mod common;

use b3accel::wgpu::{Loads, ResidentHasher, ShaderChecks, WgpuBackend, WgpuOptions};
use b3accel::{xof_reader_with, Backend, BackendKind, Device, Error, Hasher, Mode, Resident, CHUNK_LEN, IV};
use common::pattern;
use rand::{Rng, SeedableRng};
use std::sync::Arc;

const KEY: [u8; 32] = *b"whats the Elvish word for friend";
const CONTEXT: &str = "BLAKE3 2019-12-27 16:29:52 test vectors context";

/// The wgpu adapters' indices. None on a machine without one: loud, and a failure under CI=true
/// (the rule of tests/common for every GPU backend).
fn adapters() -> Vec<usize> {
    common::device_indices(BackendKind::Wgpu)
}

fn open(i: usize, options: WgpuOptions) -> WgpuBackend {
    WgpuBackend::open_with(i, options).unwrap_or_else(|e| panic!("wgpu:{i}: {e}"))
}

fn name(b: &WgpuBackend) -> String {
    format!("{} ({}, {})", b.info().device, b.info().name, b.info().api)
}

fn modes() -> [Mode; 3] {
    [Mode::Hash, Mode::Keyed(KEY), Mode::DeriveKey(CONTEXT.into())]
}

/// Upstream's extended output of `data` in `mode`.
fn upstream(mode: &Mode, data: &[u8], out_len: usize) -> Vec<u8> {
    let mut h = match mode {
        Mode::Hash => blake3::Hasher::new(),
        Mode::Keyed(k) => blake3::Hasher::new_keyed(k),
        Mode::DeriveKey(c) => blake3::Hasher::new_derive_key(c),
    };
    h.update(data);
    let mut out = vec![0u8; out_len];
    h.finalize_xof().fill(&mut out);
    out
}

fn ours(b: &dyn Backend, mode: &Mode, data: &[u8], out_len: usize) -> Vec<u8> {
    let mut out = vec![0u8; out_len];
    xof_reader_with(b, mode, data).unwrap_or_else(|e| panic!("{}: {e}", b.info().device)).fill(&mut out);
    out
}

/// `chunk_subtrees` on the GPU against upstream (`blake3::hazmat`), for `n` chunks at `first_chunk`.
fn check_subtrees(gpu: &WgpuBackend, n: usize, first_chunk: u64, flags: u32) {
    let data: Vec<u8> = (0..n * CHUNK_LEN).map(|i| (i % 253) as u8 ^ (i / 4096) as u8).collect();
    let k = n.count_ones() as usize;
    let mut got = vec![[0u8; 32]; k];
    let key = if flags == 0 { IV } else { [7, 6, 5, 4, 3, 2, 1, 0] };
    let want = common::upstream_subtrees(&data, first_chunk, 1 << 63, &key, flags);
    gpu.chunk_subtrees(&data, first_chunk, &key, flags, &mut got).unwrap_or_else(|e| panic!("{}: {e}", name(gpu)));
    assert_eq!(got, want, "{}: {n} chunks at {first_chunk}", name(gpu));
}

#[test]
fn workgroup_boundaries() {
    let _serial = common::one_at_a_time();
    for i in adapters() {
        let gpu = open(i, WgpuOptions::default());
        // One chunk, a workgroup of 256 chunks +-1, two workgroups +-1.
        for n in [1, 2, 3, 255, 256, 257, 511, 512, 513] {
            check_subtrees(&gpu, n, 0, 0);
        }
        // Whole inputs around the same boundaries, +-1 byte.
        for chunks in [1usize, 255, 256, 257, 512] {
            for delta in [-1isize, 0, 1] {
                let len = (chunks * CHUNK_LEN) as isize + delta;
                let data = pattern(len as usize);
                assert_eq!(
                    ours(&gpu, &Mode::Hash, &data, 32),
                    upstream(&Mode::Hash, &data, 32),
                    "{}: len {len}",
                    name(&gpu)
                );
            }
        }
        eprintln!("workgroup boundaries: {} ok", name(&gpu));
    }
}

#[test]
fn chunk_counter_high_word() {
    let _serial = common::one_at_a_time();
    // WGSL has no u64: counters at and above 2^32 test the hand-carried high word.
    for i in adapters() {
        let gpu = open(i, WgpuOptions::default());
        for (n, first) in
            [(1, 1u64 << 32), (256, 1 << 32), (300, (1 << 40) + (1 << 9)), (64, (1 << 32) - 64), (5, u64::MAX - 7)]
        {
            check_subtrees(&gpu, n, first, 0);
            check_subtrees(&gpu, n, first, b3accel::flags::KEYED_HASH);
        }
    }
}

#[test]
fn multi_level_ragged_counts() {
    let _serial = common::one_at_a_time();
    // Counts whose passes are ragged at more than one level: 2 passes (257..65535 chunks) and 3
    // passes (65536 and up), with pieces at several levels each.
    for i in adapters() {
        let gpu = open(i, WgpuOptions::default());
        for n in [256 * 2 + 3, 256 * 255 + 255, 65536 + 256 * 5 + 7] {
            check_subtrees(&gpu, n, 0, 0);
        }
        eprintln!("multi-level ragged: {} ok", name(&gpu));
    }
}

#[test]
fn streaming_across_many_segments() {
    let _serial = common::one_at_a_time();
    for i in adapters() {
        for seg in [CHUNK_LEN, 4 * CHUNK_LEN, 64 * CHUNK_LEN] {
            let gpu = open(i, WgpuOptions { segment_bytes: Some(seg), ..Default::default() });
            assert_eq!(gpu.segment_bytes(), seg as u64);
            // Hundreds of segments at the smallest size; a MiB where segments are larger.
            let lens = [
                seg + 1,
                3 * seg + 7,
                300 * CHUNK_LEN + 5,
                if seg < 64 * CHUNK_LEN { 2 * seg } else { (1 << 20) + 17 },
            ];
            for len in lens {
                let data = pattern(len);
                for mode in &modes() {
                    assert_eq!(
                        ours(&gpu, mode, &data, 64),
                        upstream(mode, &data, 64),
                        "{}: {seg}-byte segments, len {len}, {mode:?}",
                        name(&gpu)
                    );
                }
            }
            // A run that spans segments and starts at a non-zero aligned chunk.
            check_subtrees(&gpu, 96, 128, 0);
        }
        eprintln!("streaming: wgpu:{i} ok");
    }
}

fn storage_buffer(device: &wgpu::Device, queue: &wgpu::Queue, data: &[u8], pad: u64) -> wgpu::Buffer {
    let size = (data.len() as u64 + pad).next_multiple_of(4).max(4);
    let buf = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test input"),
        size,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut padded = data.to_vec();
    padded.resize(size as usize, 0xEE);
    queue.write_buffer(&buf, 0, &padded);
    buf
}

fn check_resident(r: &ResidentHasher, device: &wgpu::Device, queue: &wgpu::Queue, what: &str) {
    let lens = [0usize, 1, 63, 64, 1023, 1024, 1025, 2048, 3 * 4096 + 5, 256 * 1024 + 1, 300_000, (1 << 20) + 5];
    for len in lens {
        let data = pattern(len);
        for offset in [0u64, 256, 4096] {
            let mut placed = vec![0x5Au8; offset as usize];
            placed.extend_from_slice(&data);
            // At one offset the buffer ends at the input's last 4-byte word, with no room for the
            // chunk pass's 16-byte loads past it: the last chunk then comes through copy_tail.
            let pad = if offset == 4096 { 0 } else { 13 };
            let buf = storage_buffer(device, queue, &placed, pad);
            for mode in &modes() {
                let want = upstream(mode, &data, 131);
                let range = offset..offset + len as u64;
                let h = r
                    .hash(&buf, range.clone(), mode)
                    .unwrap_or_else(|e| panic!("{what}: len {len} at {offset}: {e}"))
                    .value;
                assert_eq!(h.as_bytes(), &want[..32], "{what}: len {len} at {offset}, {mode:?}");
                let mut out = vec![0u8; 131];
                r.xof_reader(&buf, range, mode).unwrap().value.fill(&mut out);
                assert_eq!(out, want, "{what}: xof, len {len} at {offset}, {mode:?}");
            }
        }
    }
}

#[test]
fn device_resident_buffers_in_all_modes() {
    let _serial = common::one_at_a_time();
    for i in adapters() {
        let gpu = open(i, WgpuOptions::default());
        check_resident(gpu.resident(), gpu.device(), gpu.queue(), &name(&gpu));
        eprintln!("resident: {} ok", name(&gpu));
    }
}

/// A device of our own, as a wgpu program would hold it, on adapter `i`'s backend, with small
/// storage bindings so that a resident input takes many segments in one submission; with
/// `mappable`, also mappable storage buffers where the adapter has them (`None` where it has not).
fn own_device(i: usize, mappable: bool) -> Option<(wgpu::Device, wgpu::Queue)> {
    let info = b3accel::devices().into_iter().find(|d| d.device == Device::Wgpu(i))?;
    // Only the adapter's own backend: initialising the others (EGL above all) is not needed here.
    let backends = match info.api.as_str() {
        "Vulkan" => wgpu::Backends::VULKAN,
        "GL" => wgpu::Backends::GL,
        "Metal" => wgpu::Backends::METAL,
        "DX12" => wgpu::Backends::DX12,
        _ => wgpu::Backends::all(),
    };
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends;
    // Our own instance, as a program would create it: its drivers' start-up chatter kept off
    // stderr as the library keeps its own.
    let adapters = b3accel::stderr::quiet(|| {
        let instance = wgpu::Instance::new(desc);
        pollster::block_on(instance.enumerate_adapters(backends))
    });
    let api = |b: wgpu::Backend| match b {
        wgpu::Backend::Vulkan => "Vulkan",
        wgpu::Backend::Gl => "GL",
        wgpu::Backend::Metal => "Metal",
        wgpu::Backend::Dx12 => "DX12",
        _ => "other",
    };
    let adapter =
        adapters.into_iter().find(|a| a.get_info().name == info.name && api(a.get_info().backend) == info.api)?;
    let features = if mappable { wgpu::Features::MAPPABLE_PRIMARY_BUFFERS } else { wgpu::Features::empty() };
    if !adapter.features().contains(features) {
        return None;
    }
    let limits = wgpu::Limits { max_storage_buffer_binding_size: 64 << 10, ..wgpu::Limits::default() };
    let desc = wgpu::DeviceDescriptor {
        label: Some("caller's device"),
        required_limits: limits,
        required_features: features,
        ..Default::default()
    };
    Some(pollster::block_on(adapter.request_device(&desc)).expect("caller's device"))
}

#[test]
fn callers_own_device_in_many_segments() {
    let _serial = common::one_at_a_time();
    for i in adapters() {
        // Both readback paths where the adapter has mappable storage: results copied into a
        // mapped buffer, or read where the passes wrote them.
        for mappable in [false, true] {
            let Some((device, queue)) = own_device(i, mappable) else {
                assert!(mappable, "wgpu:{i}: no matching adapter for a device of our own");
                eprintln!("wgpu:{i} has no mappable storage: only the copy path ran");
                continue;
            };
            let r = ResidentHasher::new(&device, &queue).unwrap();
            assert_eq!(r.max_segment_bytes(), 64 << 10);
            // 300_000 bytes = 5 segments of 64 KiB.
            check_resident(&r, &device, &queue, &format!("own device on wgpu:{i} (mappable: {mappable})"));
            // 2 MiB + 1: 32 segments in one submission.
            let data = pattern((2 << 20) + 1);
            let buf = storage_buffer(&device, &queue, &data, 0);
            assert_eq!(r.hash(&buf, 0..data.len() as u64, &Mode::Hash).unwrap().value, blake3::hash(&data));
            // Host memory streamed through a device of our own, and an upload to it.
            let (h, t) = r.hash_from_host(&data, &Mode::Hash).unwrap().into_parts();
            assert_eq!(h, blake3::hash(&data));
            assert!(t.total > std::time::Duration::ZERO, "{t:?}");
            let up = r.upload(&data).unwrap();
            assert!(up.upload > std::time::Duration::ZERO && up.upload == up.total, "{up:?}");
            assert_eq!(r.hash(&up.value, 0..data.len() as u64, &Mode::Hash).unwrap().value, blake3::hash(&data));
        }
    }
}

#[test]
fn resident_bad_input_is_an_error() {
    let _serial = common::one_at_a_time();
    for i in adapters() {
        let gpu = open(i, WgpuOptions::default());
        let r = gpu.resident();
        let data = pattern(5000);
        let buf = storage_buffer(gpu.device(), gpu.queue(), &data, 0);
        assert!(matches!(r.hash(&buf, 0..6000, &Mode::Hash), Err(Error::InvalidInput(_))));
        assert!(matches!(r.hash(&buf, 3..103, &Mode::Hash), Err(Error::InvalidInput(_))));
        #[allow(clippy::reversed_empty_ranges)]
        let backwards = 100..0;
        assert!(matches!(r.hash(&buf, backwards, &Mode::Hash), Err(Error::InvalidInput(_))));
        let no_storage = gpu.device().create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: 4096,
            usage: wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let e = r.hash(&no_storage, 0..4096, &Mode::Hash).unwrap_err();
        assert!(e.to_string().contains("STORAGE"), "{e}");
        // A destroyed buffer: wgpu's validation error comes back as an Error, not a panic.
        buf.destroy();
        let e = r.hash(&buf, 0..5000, &Mode::Hash).unwrap_err();
        assert!(matches!(e, Error::Device { .. }), "{e:?}");
        // The backend still works afterwards.
        assert_eq!(b3accel::hash_on(Device::Wgpu(i), &data).unwrap(), blake3::hash(&data));
    }
}

#[test]
fn subtrees_of_device_buffers_match_upstream() {
    let _serial = common::one_at_a_time();
    for i in adapters() {
        let gpu = open(i, WgpuOptions::default());
        let r = gpu.resident();
        let data = pattern((3 << 20) + 1234);
        let whole = storage_buffer(gpu.device(), gpu.queue(), &data, 0);
        common::check_resident_subtrees(
            &name(&gpu),
            &data,
            |at, len, input_offset, mode| Ok(r.subtree_cv(&whole, at..at + len, input_offset, mode)?.value),
            |piece, input_offset, mode| {
                let buf = storage_buffer(gpu.device(), gpu.queue(), piece, 0);
                Ok(r.subtree_cv(&buf, 0..piece.len() as u64, input_offset, mode)?.value)
            },
        );
        eprintln!("resident subtrees: {} ok", name(&gpu));
    }
}

#[test]
fn bad_index_is_an_error() {
    let _serial = common::one_at_a_time();
    let n = adapters().len();
    match WgpuBackend::open(n + 3) {
        Err(Error::NoSuchDevice { available, .. }) => assert_eq!(available, n),
        Err(Error::Unavailable { .. }) if n == 0 => {}
        other => panic!("{other:?}"),
    }
    let e = b3accel::hash_on(Device::Wgpu(n + 3), b"abc").unwrap_err();
    assert!(e.to_string().contains(&format!("wgpu:{}", n + 3)), "{e}");
    // Auto never picks a software adapter, and keeps working.
    assert_eq!(b3accel::hash_on(Device::Auto, b"abc").unwrap(), blake3::hash(b"abc"));
}

#[test]
fn software_adapters_are_cpu_kind() {
    let _serial = common::one_at_a_time();
    for d in b3accel::devices().iter().filter(|d| d.backend == BackendKind::Wgpu) {
        let lower = d.name.to_lowercase();
        if lower.contains("llvmpipe") || lower.contains("lavapipe") {
            assert!(d.is_software_gpu(), "{d:?}");
        }
        assert!(["Vulkan", "GL", "Metal", "DX12"].contains(&d.api.as_str()), "{d:?}");
    }
}

#[test]
fn sixteen_threads_on_one_adapter() {
    let _serial = common::one_at_a_time();
    for i in adapters() {
        let gpu: Arc<dyn Backend> = b3accel::backend(Device::Wgpu(i)).unwrap();
        let res = Arc::new(open(i, WgpuOptions { segment_bytes: Some(16 << 10), ..Default::default() }));
        std::thread::scope(|s| {
            for t in 0..16usize {
                let gpu = gpu.clone();
                let res = res.clone();
                s.spawn(move || {
                    for round in 0..3usize {
                        let len = 1 + t * 37_013 + round * 101_011;
                        let data: Vec<u8> = (0..len).map(|k| (k * (t + 1) % 256) as u8).collect();
                        let mode = &modes()[(t + round) % 3];
                        assert_eq!(ours(&*gpu, mode, &data, 32), upstream(mode, &data, 32), "thread {t} round {round}");
                        // Streaming backend and resident hashing from the same threads.
                        assert_eq!(ours(&*res, mode, &data, 32), upstream(mode, &data, 32));
                        let buf = storage_buffer(res.device(), res.queue(), &data, 0);
                        let h = res.resident().hash(&buf, 0..len as u64, mode).unwrap().value;
                        assert_eq!(h.as_bytes(), &upstream(mode, &data, 32)[..]);
                    }
                });
            }
        });
        eprintln!("16 threads: wgpu:{i} ok");
    }
}

#[test]
fn differential_random_sizes() {
    let _serial = common::one_at_a_time();
    let mut rng = rand::rngs::StdRng::seed_from_u64(0xB1A4E3);
    let sizes: Vec<usize> = (0..8)
        .map(|k| match k {
            0..=2 => rng.random_range(0..20_000),
            3..=5 => rng.random_range(20_000..600_000),
            _ => rng.random_range(600_000..3_500_000),
        })
        .collect();
    for i in adapters() {
        let gpu = b3accel::backend(Device::Wgpu(i)).unwrap();
        for &len in &sizes {
            let mut data = vec![0u8; len];
            rng.fill(&mut data[..]);
            for mode in &modes() {
                let want = upstream(mode, &data, 131);
                assert_eq!(ours(&*gpu, mode, &data, 131), want, "wgpu:{i} len {len} {mode:?}");
                // Incremental, in random pieces.
                let mut h = Hasher::with_backend(gpu.clone(), mode);
                let mut rest = &data[..];
                while !rest.is_empty() {
                    let take = rng.random_range(1..=rest.len().min(700_000));
                    h.update(&rest[..take]).unwrap();
                    rest = &rest[take..];
                }
                assert_eq!(h.finalize().unwrap().as_bytes(), &want[..32], "wgpu:{i} incremental len {len}");
            }
        }
    }
}

#[test]
fn hash_blocks_matches_upstream() {
    let _serial = common::one_at_a_time();
    for i in adapters() {
        let gpu = b3accel::backend(Device::Wgpu(i)).unwrap();
        let blocks: Vec<[u8; 64]> = (0..1000u32).map(|k| std::array::from_fn(|j| (k as usize * 7 + j) as u8)).collect();
        let mut out = vec![[0u8; 32]; blocks.len()];
        gpu.hash_blocks(&blocks, &mut out).unwrap();
        for (b, o) in blocks.iter().zip(&out) {
            assert_eq!(o, blake3::hash(b).as_bytes());
        }
        assert!(gpu.hash_blocks(&blocks, &mut out[1..]).is_err());
    }
}

#[test]
fn timed_hash_and_shader_variants() {
    let _serial = common::one_at_a_time();
    for i in adapters() {
        let data = pattern(3 << 20 | 77);
        let want = blake3::hash(&data);
        for (loads, checks) in [
            (Loads::Direct, ShaderChecks::BoundsChecked),
            (Loads::Direct, ShaderChecks::Trusted),
            (Loads::Staged, ShaderChecks::BoundsChecked),
            (Loads::Staged, ShaderChecks::Trusted),
        ] {
            let opts = WgpuOptions { segment_bytes: Some(1 << 20), loads, checks, ..Default::default() };
            let gpu = match WgpuBackend::open_with(i, opts) {
                Ok(g) => g,
                // Staged loads need 24 KiB of workgroup memory; a device with less says so.
                Err(Error::Unavailable { reason, .. }) if loads == Loads::Staged => {
                    common::expect::missing("wgpu-staged", &format!("the staged-loads variant on wgpu:{i} ({reason})"));
                    continue;
                }
                Err(e) => panic!("wgpu:{i}: {e}"),
            };
            let (h, t) = gpu.resident().hash_from_host(&data, &Mode::Hash).unwrap().into_parts();
            assert_eq!(h, want, "{} {loads:?} {checks:?}", name(&gpu));
            assert!(t.kernel > std::time::Duration::ZERO && t.total >= t.download, "{t:?}");
            check_subtrees(&gpu, 513, 1 << 32, 0);
        }
    }
}

#[test]
fn capped_subtrees_match_upstream() {
    let _serial = common::one_at_a_time();
    // What the tree module asks for when an input is exactly 2^k chunks (the root's two halves),
    // and caps below the segment size and above it.
    for i in adapters() {
        for seg in [None, Some(4 * CHUNK_LEN)] {
            let gpu = open(i, WgpuOptions { segment_bytes: seg, ..Default::default() });
            // Small caps on counts that are no multiple of them (the passes stop at the cap's
            // level), and caps past a workgroup (a pass more up to the cap).
            for (n, first, max) in [
                (2usize, 0u64, 1u64),
                (16, 0, 8),
                (21, 0, 8),
                (1024, 0, 512),
                (96, 128, 32),
                (600, 1024, 256),
                (603, 0, 1),
                (1001, 1024, 2),
                (1003, 0, 4),
                (605, 2048, 16),
                (1500, 0, 64),
                (3 * 1024 + 5, 0, 512),
                (5 * 1024 + 3, 8192, 2048),
            ] {
                let data: Vec<u8> = (0..n * CHUNK_LEN).map(|k| (k % 247) as u8).collect();
                let count = b3accel::subtree_count(n as u64, max);
                let want = common::upstream_subtrees(&data, first, max, &IV, 0);
                let mut got = vec![[0u8; 32]; count];
                gpu.chunk_subtrees_capped(&data, first, max, &IV, 0, &mut got).unwrap();
                assert_eq!(got, want, "{}: {n} chunks at {first} capped at {max}, segments {seg:?}", name(&gpu));
            }
        }
    }
}
