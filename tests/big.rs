//! Big inputs, every result checked against upstream `blake3`.
//!
//! In CI: a sparse file of 4 GiB + 1025 bytes (data at its start, across byte 2^32 and at its
//! end; holes elsewhere), hashed from its memory map on the CPU backend and on every GPU device
//! found (the `b3accel` command hashes the same file in its own tests, cli/tests/cli/big.rs).
//!
//! On the GPU machine (ignored here; `B3ACCEL_BIG_SCALE=N` divides every size by N so that a
//! software GPU can show the tests work): 5 GiB and 2^32 + 1 bytes hashed from host memory on
//! every GPU device and from device buffers on OpenCL and wgpu, in all modes; Merkle roots of
//! 2^27 leaves and `hash_many` of 2^28 64-byte messages, from host memory and from device
//! buffers; a device-buffer request larger than the device's memory is a clear error. Run them
//! one at a time, in release:
//!
//! `cargo test --release --all-features --test big -- --ignored --test-threads=1 --nocapture`
//!
//! Ignored too, for its memory (about 9 GiB) but needing no GPU: bao outboards of 4 GiB + 1025
//! bytes on the CPU against bao-tree's and bao's, and their round trip through `decode_into`.

mod common;

use b3accel::{Backend, Device, Mode};
use rayon::prelude::*;
use std::io::{Seek, SeekFrom, Write};

const KEY: [u8; 32] = *b"big inputs key, 32 bytes exactly";

fn modes() -> [Mode; 3] {
    [Mode::Hash, Mode::Keyed(KEY), Mode::DeriveKey("b3accel big-input tests 2026-11-24".into())]
}

/// Upstream's first 64 output bytes for `data` in `mode`, on all cores.
fn upstream(mode: &Mode, data: &[u8]) -> [u8; 64] {
    let mut out = [0u8; 64];
    common::upstream_hasher(mode).update_rayon(data).finalize_xof().fill(&mut out);
    out
}

fn ours(backend: &dyn Backend, mode: &Mode, data: &[u8]) -> [u8; 64] {
    let mut out = [0u8; 64];
    b3accel::xof_reader_with(backend, mode, data)
        .unwrap_or_else(|e| panic!("{}: {e}", backend.info().device))
        .fill(&mut out);
    out
}

/// A sparse file of 4 GiB + 1025 bytes in the temporary directory, removed when dropped.
struct Sparse(std::path::PathBuf);

impl Drop for Sparse {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn sparse_file(len: u64) -> Sparse {
    let path = std::env::temp_dir().join(format!("b3accel-big-{}.sparse", std::process::id()));
    let mut f = std::fs::File::create(&path).unwrap();
    f.set_len(len).unwrap();
    for (at, n) in [(0u64, 100_000usize), ((1 << 32) - 5000, 10_000), (len - 3000, 3000)] {
        f.seek(SeekFrom::Start(at)).unwrap();
        f.write_all(&common::pattern(n)).unwrap();
    }
    Sparse(path)
}

/// The GPU devices of this build and machine (a failure under CI=true where a built GPU backend
/// has none).
fn gpus() -> Vec<Device> {
    let mut out = Vec::new();
    for status in b3accel::backend_status() {
        for i in common::device_indices(status.backend) {
            out.push(if status.backend == b3accel::BackendKind::OpenCl { Device::OpenCl(i) } else { Device::Wgpu(i) });
        }
    }
    out
}

#[test]
fn sparse_4_gib_plus_1025_on_every_backend() {
    let len = (4u64 << 30) + 1025;
    let file = sparse_file(len);
    // SAFETY: a private file of this test, not changed while mapped.
    let map = unsafe { memmap2::Mmap::map(&std::fs::File::open(&file.0).unwrap()) }.unwrap();
    let want = upstream(&Mode::Hash, &map);
    for device in std::iter::once(Device::Cpu).chain(gpus()) {
        let start = std::time::Instant::now();
        let backend = b3accel::backend(device).unwrap();
        assert_eq!(ours(&*backend, &Mode::Hash, &map), want, "{device}: 4 GiB + 1025 bytes");
        eprintln!("{device}: 4 GiB + 1025 bytes ok in {:.1} s", start.elapsed().as_secs_f64());
    }
}

/// `B3ACCEL_BIG_SCALE`: every size of the ignored tests divided by it (1, the real sizes, by
/// default).
fn scaled(size: u64) -> u64 {
    let scale: u64 = std::env::var("B3ACCEL_BIG_SCALE").ok().and_then(|v| v.parse().ok()).unwrap_or(1).max(1);
    size / scale
}

/// `len` bytes of input, made on all cores.
fn big_input(len: u64) -> Vec<u8> {
    let mut v = vec![0u8; len as usize];
    v.par_chunks_mut(1 << 20).enumerate().for_each(|(i, c)| big_input_mib(i, c));
    v
}

/// The `i`th MiB of [`big_input`] (or the start of it), into `out`.
fn big_input_mib(i: usize, out: &mut [u8]) {
    for (j, b) in out.iter_mut().enumerate() {
        *b = ((i * 131 + j) % 251) as u8 ^ (i >> 8) as u8;
    }
}

/// Whether `data` is [`big_input`] of its length, checked on all cores without a second copy.
fn is_big_input(data: &[u8]) -> bool {
    data.par_chunks(1 << 20).enumerate().all(|(i, c)| {
        let mut want = vec![0u8; c.len()];
        big_input_mib(i, &mut want);
        c == want
    })
}

/// Bao outboards of 4 GiB + 1025 bytes on the CPU backend, where chunk counters and content and
/// encoding offsets pass 32 bits: in pre-order at group logs 4 and 0, byte for byte bao-tree's
/// (and at 0, bao's), then a round trip through a combined encoding and `decode_into`. It holds two
/// buffers of over 4 GiB at once (the input or the decoded copy, and the encoding): run it on its
/// own, in release, `cargo test --release --all-features --test big -- --ignored bao_ --nocapture`.
#[test]
#[ignore = "about 9 GiB of memory: run it on its own, in release"]
fn bao_4_gib_plus_1025_on_the_cpu() {
    use b3accel::bao::{decode_into, encode_with, outboard_with, Order};
    use bao_tree::{io::outboard::PreOrderMemOutboard, BlockSize};
    let len = (4u64 << 30) + 1025;
    let cpu = b3accel::backend(Device::Cpu).unwrap();
    for k in [4u8, 0] {
        let data = big_input(len);
        let start = std::time::Instant::now();
        let (ob, hash) = outboard_with(&*cpu, &data, k, Order::Pre).unwrap();
        let ours = start.elapsed().as_secs_f64();
        let oracle = PreOrderMemOutboard::create(&data, BlockSize::from_chunk_log(k));
        assert_eq!(hash, oracle.root, "group log {k}");
        assert!(ob.parents() == &oracle.data[..], "bao-tree's outboard, group log {k}");
        if k == 0 {
            assert!(ob.to_bytes() == bao::encode::outboard(&data).0, "bao's outboard");
        }
        let start = std::time::Instant::now();
        let (encoded, encoded_hash) = encode_with(&*cpu, &data, k).unwrap();
        let encoding = start.elapsed().as_secs_f64();
        assert_eq!(encoded_hash, hash, "group log {k}");
        drop(data);
        let mut out = vec![0u8; len as usize];
        let start = std::time::Instant::now();
        decode_into(&encoded, &hash, k, &mut out).unwrap();
        let decoding = start.elapsed().as_secs_f64();
        drop(encoded);
        assert!(is_big_input(&out), "decode_into, group log {k}");
        eprintln!("bao, group log {k}: outboard {ours:.1} s, encoding {encoding:.1} s, decode_into {decoding:.1} s");
    }
}

/// The sizes of the big host and device tests: 5 GiB and 2^32 + 1 bytes (scaled, each keeping
/// its odd tail).
/// The first 32 bytes of an output: the hash.
#[cfg(any(feature = "opencl", feature = "wgpu"))]
fn first_32(out: &[u8; 64]) -> [u8; 32] {
    out[..32].try_into().expect("64 bytes")
}

/// A request made while the device's memory is full: the right answer, or a clear error (out of
/// memory, or the driver's device error); never a wrong answer or a panic.
#[cfg(any(feature = "opencl", feature = "wgpu"))]
fn right_or_clear(what: &str, got: b3accel::Result<[u8; 32]>, want: [u8; 32]) {
    match got {
        Ok(v) => {
            assert_eq!(v, want, "{what}: a wrong answer");
            eprintln!("{what}: right with the memory full (its scratch fitted)");
        }
        Err(e) => {
            assert!(matches!(e, b3accel::Error::OutOfMemory { .. } | b3accel::Error::Device { .. }), "{what}: {e:?}");
            eprintln!("{what} with the memory full: {e}");
        }
    }
}

fn big_sizes() -> [u64; 2] {
    [scaled(5 << 30), scaled(1 << 32) + 1]
}

#[test]
#[ignore = "GPU machine: 5 GiB and 2^32 + 1 bytes from host memory on every GPU (B3ACCEL_BIG_SCALE shrinks it)"]
fn big_host_inputs_on_every_gpu() {
    let gpus = gpus();
    assert!(!gpus.is_empty(), "no GPU device");
    for len in big_sizes() {
        let data = big_input(len);
        for mode in modes() {
            let want = upstream(&mode, &data);
            for &device in &gpus {
                let start = std::time::Instant::now();
                let backend = b3accel::backend(device).unwrap();
                assert_eq!(ours(&*backend, &mode, &data), want, "{device}: {len} bytes, {mode:?}");
                // The incremental hasher, in 1 GiB updates.
                let mut h = b3accel::Hasher::with_backend(backend, &mode);
                for piece in data.chunks(1 << 30) {
                    h.update(piece).unwrap();
                }
                let mut out = [0u8; 64];
                h.finalize_xof().unwrap().fill(&mut out);
                assert_eq!(out, want, "{device}: Hasher, {len} bytes, {mode:?}");
                eprintln!("{device}: {len} bytes {mode:?} ok ({:.1} s)", start.elapsed().as_secs_f64());
            }
        }
    }
}

/// 2^27 leaves and 2^28 64-byte messages (scaled), with upstream's answers.
struct Batches {
    leaves: Vec<[u8; 32]>,
    root: [u8; 32],
    msgs: Vec<u8>,
    hashes: Vec<[u8; 32]>,
}

fn merkle_and_many_inputs() -> Batches {
    let leaves: Vec<[u8; 32]> =
        (0..scaled(1 << 27)).into_par_iter().map(|i| *blake3::hash(&i.to_le_bytes()).as_bytes()).collect();
    let root = common::merkle_root(&leaves);
    let msgs = big_input(64 * scaled(1 << 28));
    let hashes: Vec<[u8; 32]> = msgs.par_chunks(64).map(|m| *blake3::hash(m).as_bytes()).collect();
    Batches { leaves, root, msgs, hashes }
}

#[test]
#[ignore = "GPU machine: Merkle roots of 2^27 leaves and hash_many of 2^28 64-byte messages on every GPU"]
fn merkle_2_27_leaves_and_hash_many_2_28_messages_from_host_memory() {
    let gpus = gpus();
    assert!(!gpus.is_empty(), "no GPU device");
    let Batches { leaves, root, msgs, hashes } = merkle_and_many_inputs();
    for device in gpus {
        let start = std::time::Instant::now();
        assert_eq!(
            *b3accel::merkle_root(device, &leaves).unwrap().as_bytes(),
            root,
            "{device}: {} leaves",
            leaves.len()
        );
        let got = b3accel::hash_many(device, &msgs, 64).unwrap();
        assert_eq!(got.len(), hashes.len());
        let bad = got.par_iter().zip(&hashes).position_any(|(g, w)| g.as_bytes() != w);
        assert_eq!(bad, None, "{device}: hash_many of {} messages", hashes.len());
        eprintln!("{device}: Merkle and hash_many ok ({:.1} s)", start.elapsed().as_secs_f64());
    }
}

#[cfg(feature = "opencl")]
mod opencl_buffers {
    use super::*;
    use b3accel::opencl::OpenClBackend;
    use b3accel::{MerkleInner, Resident};

    /// `data` in a new buffer on the device, or `None` (after a loud note) where it is larger
    /// than the device's largest allocation (PoCL on the GPU machine: 3.4 GiB).
    fn upload(gpu: &OpenClBackend, data: &[u8]) -> Option<ocl::Buffer<u8>> {
        let max = match gpu.queue().device().info(ocl::enums::DeviceInfo::MaxMemAllocSize) {
            Ok(ocl::enums::DeviceInfoResult::MaxMemAllocSize(m)) => m,
            other => panic!("the device's largest allocation: {other:?}"),
        };
        if data.len() as u64 > max {
            eprintln!(
                "\n*** {}: {} bytes is more than this device's largest buffer ({max}): NOT tested ***\n",
                gpu.info().device,
                data.len()
            );
            return None;
        }
        let buf = ocl::Buffer::<u8>::builder().queue(gpu.queue().clone()).len(data.len()).build().unwrap();
        for (i, piece) in data.chunks(1 << 30).enumerate() {
            buf.write(piece).offset(i << 30).enq().unwrap();
        }
        Some(buf)
    }

    #[test]
    #[ignore = "GPU machine: 5 GiB and 2^32 + 1 bytes, 2^27 leaves, 2^28 messages from OpenCL buffers"]
    fn big_opencl_device_buffers() {
        let devices = common::device_indices(b3accel::BackendKind::OpenCl);
        assert!(!devices.is_empty(), "no OpenCL device");
        for i in devices {
            let gpu = OpenClBackend::open(i).unwrap();
            for len in big_sizes() {
                let data = big_input(len);
                let Some(buf) = upload(&gpu, &data) else { continue };
                for mode in modes() {
                    let want = upstream(&mode, &data);
                    assert_eq!(
                        gpu.hash(&buf, 0..len, &mode).unwrap().value.as_bytes()[..],
                        want[..32],
                        "opencl:{i}: {len} bytes, {mode:?}"
                    );
                }
                eprintln!("opencl:{i}: {len} bytes from a device buffer ok");
            }
            let Batches { leaves, root, msgs, hashes } = merkle_and_many_inputs();
            if let Some(lbuf) = upload(&gpu, leaves.as_flattened()) {
                let got = gpu.merkle_root(&lbuf, 0, leaves.len(), MerkleInner::None).unwrap().value;
                assert_eq!(*got.as_bytes(), root);
                eprintln!("opencl:{i}: {} leaves from a device buffer ok", leaves.len());
            }
            let Some(mbuf) = upload(&gpu, &msgs) else { continue };
            let out = ocl::Buffer::<u8>::builder().queue(gpu.queue().clone()).len(hashes.len() * 32).build().unwrap();
            gpu.hash_many_into(&mbuf, 0, hashes.len(), 64, &Mode::Hash, &out, 0).unwrap();
            let mut got = vec![0u8; hashes.len() * 32];
            out.read(&mut got).enq().unwrap();
            assert!(got == hashes.as_flattened(), "opencl:{i}: hash_many of {} messages", hashes.len());
            eprintln!("opencl:{i}: {} messages from a device buffer ok", hashes.len());
        }
    }

    /// A Merkle root over leaves in a device buffer, asked for once the rest of the device's
    /// memory is taken (by buffers this test fills, so that the driver commits them): the
    /// backend's own scratch for the levels cannot fit. A clear error (out of memory, or the
    /// driver's device error), or where the driver pages memory the right root; never a panic
    /// or a wrong root. `B3ACCEL_BIG_SCALE` divides the memory it assumes (so that a software
    /// device's host memory is not all taken).
    /// Runs [`beyond_memory_child`] in a process of its own: running a device out of memory can
    /// leave NVIDIA's driver unable to make a context for the rest of the process
    /// (`CL_NV_INVALID_MEM_ACCESS` from `clCreateContext`), which would fail the tests after it.
    /// Within 150 s, so that a driver that pages device memory instead of refusing it fails the
    /// test rather than hangs it (an earlier ballast, beside leaves of a quarter of the memory, did
    /// not finish filling in 240 s on the H200).
    #[test]
    #[ignore = "GPU machine: a request beyond the device's memory is a clear error"]
    fn beyond_opencl_device_memory_is_a_clear_error() {
        let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
        cmd.args(["--exact", "opencl_buffers::beyond_memory_child", "--include-ignored", "--nocapture"]);
        cmd.env("B3ACCEL_BEYOND_CHILD", "1");
        let out = common::run_with_input(cmd, b"", std::time::Duration::from_secs(150));
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
        assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"), "the child ran no test");
    }

    #[test]
    #[ignore = "run by beyond_opencl_device_memory_is_a_clear_error in a process of its own"]
    fn beyond_memory_child() {
        if std::env::var_os("B3ACCEL_BEYOND_CHILD").is_none() {
            // `--ignored` runs every ignored test: this one only counts in its own process.
            eprintln!("beyond_memory_child: runs only as beyond_opencl_device_memory_is_a_clear_error's child");
            return;
        }
        use ocl::enums::{DeviceInfo as Info, DeviceInfoResult as Answer};
        for i in common::device_indices(b3accel::BackendKind::OpenCl) {
            let gpu = OpenClBackend::open(i).unwrap();
            let mem = match gpu.cl_device().info(Info::GlobalMemSize).unwrap() {
                Answer::GlobalMemSize(n) => scaled(n),
                other => panic!("global memory size: {other:?}"),
            };
            // 128 MiB of leaves (less on a small device) and 64 MiB to hash, on the device first.
            let count = (mem / 64).min(1 << 22) / 32 * 32;
            let leaves: Vec<[u8; 32]> =
                (0..count).into_par_iter().map(|k| *blake3::hash(&k.to_le_bytes()).as_bytes()).collect();
            let lbuf = upload(&gpu, leaves.as_flattened()).expect("the leaves fit one allocation");
            let data = big_input((mem / 64).min(64 << 20));
            let dbuf = upload(&gpu, &data).expect("the input fits one allocation");
            // Ballast: buffers of 1 GiB while they fit the device's memory, then smaller ones down
            // to 1 MiB, each filled so that the driver commits it (OpenCL allocates lazily), until
            // the driver refuses one or the memory is all taken. (Leaves of a quarter of the
            // memory and ballast buffers of 37 GB broke NVIDIA's queue before the calls below ran.)
            let start = std::time::Instant::now();
            let mut ballast = Vec::new();
            let mut taken = (leaves.len() * 32 + data.len()) as u64;
            'sizes: for size in [1u64 << 30, 256 << 20, 64 << 20, 16 << 20, 4 << 20, 1 << 20] {
                while taken + size <= mem {
                    let made = ocl::Buffer::<u8>::builder().queue(gpu.queue().clone()).len(size as usize).build();
                    let filled = made.and_then(|b| {
                        b.cmd().fill(0u8, None).enq()?;
                        gpu.queue().finish()?;
                        Ok(b)
                    });
                    match filled {
                        Ok(b) => ballast.push(b),
                        Err(e) => {
                            let why = e.to_string();
                            let why = why.lines().find(|l| l.contains("Status error code")).unwrap_or(&why).trim();
                            eprintln!(
                                "opencl:{i}: a ballast buffer of {size} bytes refused at {taken} of {mem}: {why}"
                            );
                            // On to smaller buffers.
                            break;
                        }
                    }
                    taken += size;
                    if start.elapsed().as_secs() > 90 {
                        eprintln!("opencl:{i}: ballast still filling after 90 s, at {taken} of {mem} bytes");
                        break 'sizes;
                    }
                }
            }
            eprintln!(
                "opencl:{i}: {} ballast buffers, {taken} of {mem} bytes taken ({:.1} s)",
                ballast.len(),
                start.elapsed().as_secs_f64()
            );
            let hash = gpu.hash(&dbuf, 0..data.len() as u64, &Mode::Hash).map(|t| t.value);
            right_or_clear(
                &format!("opencl:{i}: hash"),
                hash.map(|h| *h.as_bytes()),
                first_32(&upstream(&Mode::Hash, &data)),
            );
            let root = gpu.merkle_root(&lbuf, 0, leaves.len(), MerkleInner::None).map(|t| t.value);
            right_or_clear(
                &format!("opencl:{i}: Merkle root"),
                root.map(|r| *r.as_bytes()),
                common::merkle_root(&leaves),
            );
        }
    }
}

#[cfg(feature = "wgpu")]
mod wgpu_buffers {
    use super::*;
    use b3accel::wgpu::WgpuBackend;
    use b3accel::{MerkleInner, Resident};

    /// A STORAGE buffer holding `data`, or `None` (said loudly) where the adapter's largest
    /// buffer is smaller.
    fn upload(gpu: &WgpuBackend, data: &[u8]) -> Option<wgpu::Buffer> {
        let size = (data.len() as u64).next_multiple_of(4);
        let max = gpu.device().limits().max_buffer_size;
        if size > max {
            eprintln!(
                "\n*** {}: {size} bytes is more than this adapter's largest buffer ({max}): NOT tested ***\n",
                gpu.info().device
            );
            return None;
        }
        let buf = gpu.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some("big test input"),
            size,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        for (i, piece) in data.chunks(1 << 28).enumerate() {
            let mut piece = piece.to_vec();
            piece.resize(piece.len().next_multiple_of(4), 0);
            gpu.queue().write_buffer(&buf, (i as u64) << 28, &piece);
            gpu.queue().submit([]);
            gpu.device().poll(wgpu::PollType::Wait { submission_index: None, timeout: None }).unwrap();
        }
        Some(buf)
    }

    #[test]
    #[ignore = "GPU machine: 5 GiB and 2^32 + 1 bytes, 2^27 leaves, 2^28 messages from wgpu buffers"]
    fn big_wgpu_device_buffers() {
        let _serial = common::one_at_a_time();
        let adapters = common::device_indices(b3accel::BackendKind::Wgpu);
        assert!(!adapters.is_empty(), "no wgpu adapter");
        for i in adapters {
            let gpu = WgpuBackend::open(i).unwrap();
            for len in big_sizes() {
                let data = big_input(len);
                let Some(buf) = upload(&gpu, &data) else { continue };
                for mode in modes() {
                    let want = upstream(&mode, &data);
                    let got = gpu.resident().hash(&buf, 0..len, &mode).unwrap().value;
                    assert_eq!(got.as_bytes()[..], want[..32], "wgpu:{i}: {len} bytes, {mode:?}");
                }
                eprintln!("wgpu:{i}: {len} bytes from a device buffer ok");
            }
            let Batches { leaves, root, msgs, hashes } = merkle_and_many_inputs();
            if let Some(lbuf) = upload(&gpu, leaves.as_flattened()) {
                let got = gpu.resident().merkle_root(&lbuf, 0, leaves.len(), MerkleInner::None).unwrap().value;
                assert_eq!(*got.as_bytes(), root, "wgpu:{i}: {} leaves", leaves.len());
            }
            if let Some(mbuf) = upload(&gpu, &msgs) {
                let got = gpu.resident().hash_many(&mbuf, 0, hashes.len(), 64, &Mode::Hash).unwrap().value;
                let bad = got.par_iter().zip(&hashes).position_any(|(g, w)| g.as_bytes() != w);
                assert_eq!(bad, None, "wgpu:{i}: hash_many of {} messages", hashes.len());
            }
            eprintln!("wgpu:{i}: {} leaves and {} messages from device buffers ok", leaves.len(), hashes.len());
        }
    }

    /// A Merkle root and a hash over buffers on the device once the rest of its memory is taken by
    /// ballast buffers, allocated until the driver refuses one (Vulkan commits device memory when a
    /// buffer is made): the backend's own scratch cannot fit, and each answer must be the right
    /// one or a clear error, never a panic. Hardware adapters only: a software adapter's memory is
    /// the host's.
    #[test]
    #[ignore = "GPU machine: a wgpu request beyond the device's memory is a clear error"]
    fn beyond_wgpu_device_memory_is_a_clear_error() {
        let _serial = common::one_at_a_time();
        for i in common::device_indices(b3accel::BackendKind::Wgpu) {
            let gpu = WgpuBackend::open(i).unwrap();
            if gpu.info().is_software_gpu() {
                eprintln!("wgpu:{i}: a software adapter (its memory is the host's): NOT tested");
                continue;
            }
            let leaves: Vec<[u8; 32]> =
                (0..1u32 << 22).into_par_iter().map(|k| *blake3::hash(&k.to_le_bytes()).as_bytes()).collect();
            let lbuf = upload(&gpu, leaves.as_flattened()).expect("128 MiB of leaves fit");
            let data = big_input(64 << 20);
            let dbuf = upload(&gpu, &data).expect("64 MiB fit");
            // Buffers of 1 GiB until one is refused, then smaller ones down to 64 KiB, so that
            // no room is left.
            let mut ballast = Vec::new();
            let mut taken = 0u64;
            for size in [1u64 << 30, 256 << 20, 64 << 20, 16 << 20, 4 << 20, 1 << 20, 256 << 10, 64 << 10] {
                loop {
                    let scope = gpu.device().push_error_scope(wgpu::ErrorFilter::OutOfMemory);
                    let b = gpu.device().create_buffer(&wgpu::BufferDescriptor {
                        label: Some("ballast"),
                        size,
                        usage: wgpu::BufferUsages::STORAGE,
                        mapped_at_creation: false,
                    });
                    if pollster::block_on(scope.pop()).is_some() {
                        break;
                    }
                    taken += size;
                    ballast.push(b);
                    assert!(taken < 1 << 40, "wgpu:{i}: 1 TiB of ballast and no refusal");
                }
            }
            eprintln!("wgpu:{i}: ballast of {taken} bytes in {} buffers, then refused", ballast.len());
            let root = gpu.resident().merkle_root(&lbuf, 0, leaves.len(), MerkleInner::None).map(|t| t.value);
            right_or_clear(
                &format!("wgpu:{i}: Merkle root"),
                root.map(|r| *r.as_bytes()),
                common::merkle_root(&leaves),
            );
            let hash = gpu.resident().hash(&dbuf, 0..data.len() as u64, &Mode::Hash).map(|t| t.value);
            right_or_clear(
                &format!("wgpu:{i}: hash"),
                hash.map(|h| *h.as_bytes()),
                first_32(&upstream(&Mode::Hash, &data)),
            );
            drop(ballast);
        }
    }
}
