//! Merkle trees and `hash_many` on every OpenCL device (PoCL in CI), against references built
//! from upstream `blake3::hash` alone and against the CPU backend: roots and whole trees for the
//! leaf counts of issue 6, with the default kernels and with tiny work-groups (many dispatches,
//! ragged groups on every level), leaves already on the device, and batches of messages around
//! block and chunk sizes in every mode, from host memory and from device buffers.
//!
//! Under `CI=true` a build without an OpenCL device fails here (tests/common/mod.rs).
#![cfg(feature = "opencl")]

mod common;

use b3accel::cpu::CpuBackend;
use b3accel::merkle::hash_many_with;
use b3accel::opencl::{OpenClBackend, OpenClOptions};
use b3accel::{Backend, BackendKind, Device, Error, MerkleInner, Mode, Resident, IV};
use rand::{Rng, SeedableRng};

type Node = [u8; 32];

/// The index of every OpenCL device found (a missing one is reported, or fails under CI=true).
fn devices() -> Vec<usize> {
    common::device_indices(BackendKind::OpenCl)
}

fn open(i: usize, opts: OpenClOptions) -> OpenClBackend {
    OpenClBackend::with_options(i, &opts).unwrap_or_else(|e| panic!("opencl:{i} with {opts:?}: {e}"))
}

fn parent(left: &Node, right: &Node) -> Node {
    *blake3::hash(&[&left[..], &right[..]].concat()).as_bytes()
}

/// A loop of upstream `blake3::hash` over pairs, level by level, the odd last node carried up:
/// every inner node, level by level from the leaves up.
fn reference_inner(leaves: &[Node]) -> Vec<Node> {
    let mut inner = Vec::new();
    let mut cur = leaves.to_vec();
    while cur.len() > 1 {
        let mut next: Vec<Node> = cur.chunks_exact(2).map(|p| parent(&p[0], &p[1])).collect();
        inner.extend_from_slice(&next);
        if cur.len() % 2 == 1 {
            next.push(cur[cur.len() - 1]);
        }
        cur = next;
    }
    inner
}

fn random_leaves(n: usize, seed: u64) -> Vec<Node> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random()).collect()
}

/// The leaf counts of issue 6.
const COUNTS: [usize; 11] = [1, 2, 3, 5, 7, 8, 9, 1000, 4097, 1 << 16, (1 << 20) + 3];

/// Root and tree through the `Backend` trait against the reference.
fn check_tree(be: &dyn Backend, what: &str, leaves: &[Node], expected: &[Node]) {
    let n = leaves.len();
    let want_root = expected.last().copied().unwrap_or(leaves[0]);
    let root = be.merkle(leaves, None).unwrap_or_else(|e| panic!("{what}: root of {n}: {e}"));
    assert_eq!(root, want_root, "{what}: root of {n} leaves");
    let mut inner = vec![[0u8; 32]; n - 1];
    let root = be.merkle(leaves, Some(&mut inner)).unwrap_or_else(|e| panic!("{what}: tree of {n}: {e}"));
    assert_eq!(root, want_root, "{what}: tree root of {n} leaves");
    if let Some(k) = inner.iter().zip(expected).position(|(a, b)| a != b) {
        panic!("{what}: inner node {k} of {} differs, {n} leaves", n - 1);
    }
}

#[test]
fn roots_and_trees_match_upstream_and_the_cpu() {
    let devices = devices();
    let cpu = CpuBackend::new();
    for &n in &COUNTS {
        let leaves = random_leaves(n, n as u64 ^ 0x6b);
        let expected = reference_inner(&leaves);
        // The reference and the CPU backend agree first, so a failure below is the device's.
        check_tree(&cpu, "cpu", &leaves, &expected);
        for &i in &devices {
            let be = b3accel::backend(Device::OpenCl(i)).unwrap();
            check_tree(&*be, &format!("opencl:{i}"), &leaves, &expected);
        }
    }
}

#[test]
fn tiny_work_groups_take_many_dispatches() {
    // Groups of 2 or 4 work-items (4 or 8 nodes), one or two levels per dispatch on large
    // levels: a few thousand leaves take a dozen dispatches, each with a ragged last group, and
    // every level's nodes are written from several dispatches' offsets.
    for i in devices() {
        for (wg, levels) in [(2, 1), (2, 2), (4, 2), (4, 3), (64, 1)] {
            let opts = OpenClOptions { merkle_work_group: Some(wg), merkle_levels: Some(levels), ..Default::default() };
            let be = open(i, opts);
            let what = format!("opencl:{i} merkle wg {wg}, {levels} levels");
            for n in (2..=40).chain([63, 64, 65, 127, 128, 129, 1000, 4097]) {
                let leaves = random_leaves(n, 3 * n as u64);
                check_tree(&be, &what, &leaves, &reference_inner(&leaves));
            }
        }
        // A level at or past the size where the kernel goes by `merkle_levels` (2^18 nodes).
        let opts = OpenClOptions { merkle_work_group: Some(4), merkle_levels: Some(1), ..Default::default() };
        let be = open(i, opts);
        let leaves = random_leaves((1 << 18) + 5, 18);
        check_tree(&be, "opencl wg 4, 1 level, 2^18 + 5", &leaves, &reference_inner(&leaves));
        // Out-of-range knobs are errors, not panics.
        for levels in [0, 4] {
            let opts = OpenClOptions { merkle_work_group: Some(4), merkle_levels: Some(levels), ..Default::default() };
            assert!(matches!(OpenClBackend::with_options(i, &opts), Err(Error::InvalidInput(_))), "{levels} levels");
        }
    }
}

#[test]
fn too_many_leaves_for_one_buffer_fall_back_to_level_by_level() {
    for i in devices() {
        // No device buffer over 1000 bytes: the leaves go through hash_blocks, level by level.
        let be = open(i, OpenClOptions { max_alloc_bytes: Some(1000), ..Default::default() });
        for n in [31, 32, 33, 1000] {
            let leaves = random_leaves(n, 77);
            check_tree(&be, "1000-byte buffers", &leaves, &reference_inner(&leaves));
        }
    }
}

/// A device buffer holding `bytes`, written through the backend's queue.
fn device_buffer(be: &OpenClBackend, bytes: &[u8], extra: usize) -> ocl::Buffer<u8> {
    let buf = ocl::Buffer::<u8>::builder().queue(be.queue().clone()).len(bytes.len() + extra).build().unwrap();
    if !bytes.is_empty() {
        buf.write(bytes).queue(be.queue()).enq().unwrap();
    }
    buf
}

#[test]
fn device_resident_leaves() {
    for i in devices() {
        let be = open(i, OpenClOptions::default());
        for &n in &COUNTS {
            let leaves = random_leaves(n, 1000 + n as u64);
            let expected = reference_inner(&leaves);
            let want_root = expected.last().copied().unwrap_or(leaves[0]);
            // Leaves followed by 3 more nodes' worth of other bytes, which must not count.
            let buf = device_buffer(&be, leaves.as_flattened(), 96);
            let t = be.merkle_root(&buf, 0, n, MerkleInner::None).unwrap();
            assert_eq!(t.value.as_bytes(), &want_root, "resident root of {n}");
            assert!(t.total >= t.kernel, "{t:?}");

            let mut inner = vec![[0u8; 32]; n - 1];
            let root = be.merkle_root(&buf, 0, n, MerkleInner::Host(&mut inner)).unwrap().value;
            assert_eq!(root.as_bytes(), &want_root);
            assert!(inner == expected, "resident tree of {n} into host memory");

            if n > 1 {
                // The tree kept on the device, in a buffer with room to spare.
                let dev_inner =
                    ocl::Buffer::<u8>::builder().queue(be.queue().clone()).len(32 * n + 64).build().unwrap();
                let root = be.merkle_root(&buf, 0, n, MerkleInner::Device(&dev_inner)).unwrap().value;
                assert_eq!(root.as_bytes(), &want_root);
                let mut back = vec![0u8; 32 * (n - 1)];
                dev_inner.read(&mut back).queue(be.queue()).enq().unwrap();
                assert!(back == expected.as_flattened(), "resident tree of {n} on the device");
            }
        }
        // A prefix of the buffer is a tree of its own, and so are leaves further in.
        let leaves = random_leaves(100, 5);
        let buf = device_buffer(&be, leaves.as_flattened(), 0);
        let root = be.merkle_root(&buf, 0, 37, MerkleInner::None).unwrap().value;
        assert_eq!(root.as_bytes(), reference_inner(&leaves[..37]).last().unwrap());
        let mut padded = vec![0u8; 4096];
        padded.extend_from_slice(leaves.as_flattened());
        let buf = device_buffer(&be, &padded, 0);
        let root = be.merkle_root(&buf, 4096, 100, MerkleInner::None).unwrap().value;
        assert_eq!(root.as_bytes(), reference_inner(&leaves).last().unwrap(), "leaves at byte 4096");
        assert!(matches!(be.merkle_root(&buf, 32, 100, MerkleInner::None), Err(Error::InvalidInput(_))));

        // A write still in flight on the backend's queue is seen.
        let leaves = random_leaves(5000, 9);
        let buf = ocl::Buffer::<u8>::builder().queue(be.queue().clone()).len(32 * 5000).build().unwrap();
        // SAFETY (non-blocking write): `leaves` outlives the call below, which waits for it.
        unsafe { buf.write(leaves.as_flattened()).queue(be.queue()).block(false).enq().unwrap() };
        let root = be.merkle_root(&buf, 0, 5000, MerkleInner::None).unwrap().value;
        assert_eq!(root.as_bytes(), reference_inner(&leaves).last().unwrap());

        // Errors, not panics.
        let refused = |r: b3accel::Result<b3accel::Timed<b3accel::Hash>>| matches!(r, Err(Error::InvalidInput(_)));
        assert!(refused(be.merkle_root(&buf, 0, 0, MerkleInner::None)));
        assert!(refused(be.merkle_root(&buf, 0, 5001, MerkleInner::None)));
        let mut short = vec![[0u8; 32]; 4998];
        assert!(refused(be.merkle_root(&buf, 0, 5000, MerkleInner::Host(&mut short))));
        let small = ocl::Buffer::<u8>::builder().queue(be.queue().clone()).len(32 * 4998).build().unwrap();
        assert!(refused(be.merkle_root(&buf, 0, 5000, MerkleInner::Device(&small))));
        let other = open(i, OpenClOptions::default());
        match other.merkle_root(&buf, 0, 5000, MerkleInner::None) {
            Err(Error::InvalidInput(msg)) => assert!(msg.contains("context"), "{msg}"),
            r => panic!("a foreign buffer must be refused, got {r:?}"),
        }
    }
}

/// Message lengths around blocks and chunks, at every alignment the kernel distinguishes
/// (multiples of 16 and of 4, and odd lengths), and multi-chunk messages up to the 64-chunk
/// limit of the host path and past it.
const LENGTHS: [usize; 17] = [0, 1, 3, 63, 64, 65, 100, 1023, 1024, 1025, 1028, 2048, 3000, 5000, 16385, 65536, 70000];

const KEY: [u8; 32] = *b"whats the Elvish word for friend";

fn modes() -> [Mode; 3] {
    [Mode::Hash, Mode::Keyed(KEY), Mode::DeriveKey("b3accel opencl merkle tests 2026-11-21".into())]
}

fn upstream(mode: &Mode, msg: &[u8]) -> blake3::Hash {
    match mode {
        Mode::Hash => blake3::hash(msg),
        Mode::Keyed(k) => blake3::keyed_hash(k, msg),
        Mode::DeriveKey(c) => blake3::Hash::from_bytes(blake3::derive_key(c, msg)),
    }
}

fn messages(len: usize, count: usize, seed: u64) -> Vec<u8> {
    let mut data = vec![0u8; len * count];
    rand::rngs::StdRng::seed_from_u64(seed).fill(&mut data[..]);
    data
}

/// How many messages of `len` bytes to test with: more for short ones, few for long ones.
fn count_for(len: usize) -> usize {
    match len {
        0..=1024 => 300,
        1025..=8192 => 37,
        _ => 3,
    }
}

#[test]
fn hash_many_matches_upstream_in_every_mode() {
    for i in devices() {
        let be = b3accel::backend(Device::OpenCl(i)).unwrap();
        for (m, mode) in modes().iter().enumerate() {
            for &len in &LENGTHS {
                let count = count_for(len);
                let data = messages(len, count, (len * 3 + m) as u64);
                let domain_key;
                let (key, flags) = match mode {
                    Mode::Hash => (IV, 0),
                    Mode::Keyed(k) => {
                        domain_key =
                            std::array::from_fn(|w| u32::from_le_bytes(k[4 * w..4 * w + 4].try_into().unwrap()));
                        (domain_key, b3accel::flags::KEYED_HASH)
                    }
                    Mode::DeriveKey(_) => {
                        // Through the public wrapper only (it derives the context key).
                        if len > 0 {
                            let got = hash_many_with(&*be, mode, &data, len).unwrap();
                            for (k, h) in got.iter().enumerate() {
                                assert_eq!(
                                    *h,
                                    upstream(mode, &data[k * len..(k + 1) * len]),
                                    "{count} x {len}, {mode:?}"
                                );
                            }
                        }
                        continue;
                    }
                };
                let mut out = vec![[0u8; 32]; count];
                be.hash_many(&data, len, &key, flags, &mut out).unwrap();
                for (k, h) in out.iter().enumerate() {
                    let want = upstream(mode, &data[k * len..(k + 1) * len]);
                    assert_eq!(h, want.as_bytes(), "opencl:{i}: message {k} of {count} x {len} bytes, {mode:?}");
                }
            }
        }
        // Batch edges: nothing, one message, and malformed batches.
        let mut none: [Node; 0] = [];
        be.hash_many(&[], 64, &IV, 0, &mut none).unwrap();
        let mut one = [[0u8; 32]];
        be.hash_many(&[9u8; 64], 64, &IV, 0, &mut one).unwrap();
        assert_eq!(one[0], *blake3::hash(&[9u8; 64]).as_bytes());
        assert!(matches!(be.hash_many(&[0u8; 10], 3, &IV, 0, &mut [[0u8; 32]; 3]), Err(Error::InvalidInput(_))));
    }
}

#[test]
fn device_resident_messages() {
    for i in devices() {
        let be = open(i, OpenClOptions::default());
        for mode in modes() {
            for &len in &LENGTHS {
                let count = count_for(len);
                let data = messages(len, count, len as u64 + 11);
                // Room to spare on both buffers: only `count` messages and hashes count.
                let input = device_buffer(&be, &data, 7);
                let out = ocl::Buffer::<u8>::builder().queue(be.queue().clone()).len(32 * count + 32).build().unwrap();
                be.hash_many_into(&input, 0, count, len, &mode, &out, 0).unwrap();
                let mut got = vec![0u8; 32 * count];
                out.read(&mut got).queue(be.queue()).enq().unwrap();
                // The same messages back to the host.
                let back = Resident::hash_many(&be, &input, 0, count, len, &mode).unwrap().value;
                for k in 0..count {
                    let want = upstream(&mode, &data[k * len..(k + 1) * len]);
                    assert_eq!(
                        &got[32 * k..32 * k + 32],
                        want.as_bytes(),
                        "resident message {k} of {count} x {len}, {mode:?}"
                    );
                    assert_eq!(back[k], want, "resident message {k} of {count} x {len} to the host, {mode:?}");
                }
            }
        }
        let data = messages(64, 1000, 1);
        let input = device_buffer(&be, &data, 0);
        let out = ocl::Buffer::<u8>::builder().queue(be.queue().clone()).len(32 * 1000 + 64).build().unwrap();
        let t = be.hash_many_into(&input, 0, 1000, 64, &Mode::Hash, &out, 0).unwrap();
        assert!(t.kernel > std::time::Duration::ZERO && t.total >= t.kernel, "{t:?}");
        be.hash_many_into(&input, 0, 0, 64, &Mode::Hash, &out, 0).unwrap();
        // Messages further in, hashes further out.
        let mut padded = vec![0u8; 4096];
        padded.extend_from_slice(&data);
        let far = device_buffer(&be, &padded, 0);
        be.hash_many_into(&far, 4096, 999, 64, &Mode::Hash, &out, 64).unwrap();
        let mut got = vec![0u8; 32 * 1000 + 64];
        out.read(&mut got).queue(be.queue()).enq().unwrap();
        assert_eq!(&got[64 + 32 * 998..64 + 32 * 999], blake3::hash(&data[64 * 998..64 * 999]).as_bytes());
        let back = Resident::hash_many(&be, &far, 4096, 3, 64, &Mode::Hash).unwrap().value;
        assert_eq!(back[2], blake3::hash(&data[128..192]));
        // Errors, not panics: more messages than the input holds, more hashes than fit, offsets
        // off their alignment.
        let refused = |r: b3accel::Result<b3accel::Timed<()>>| matches!(r, Err(Error::InvalidInput(_)));
        assert!(refused(be.hash_many_into(&input, 0, 1001, 64, &Mode::Hash, &out, 0)));
        assert!(refused(be.hash_many_into(&input, 0, 1003, 32, &Mode::Hash, &out, 0)));
        assert!(refused(be.hash_many_into(&input, 0, 2, usize::MAX, &Mode::Hash, &out, 0)));
        assert!(refused(be.hash_many_into(&input, 0, 10, 64, &Mode::Hash, &out, 16)));
        assert!(refused(be.hash_many_into(&far, 64, 10, 64, &Mode::Hash, &out, 0)));
        assert!(Resident::hash_many(&be, &input, 0, 1001, 64, &Mode::Hash).is_err());
    }
}

#[test]
fn kernel_knobs_give_the_same_hashes() {
    // The chunk kernel's tuning knobs (see shaders/blake3.cl: PREFETCH, UNROLL_BLOCKS) set away
    // from their defaults, on every kernel: chunk subtrees, Merkle parents and batches of messages.
    for i in devices() {
        for knob in ["-D PREFETCH=0", "-D UNROLL_BLOCKS=1", "-D UNROLL_BLOCKS=4 -D PREFETCH=0"] {
            let be = open(i, OpenClOptions { build_options: knob.into(), ..Default::default() });
            let data = common::pattern(300 * 1024 + 17);
            let mut got = [0u8; 32];
            b3accel::xof_reader_with(&be, &Mode::Keyed(KEY), &data).unwrap().fill(&mut got);
            assert_eq!(got, *blake3::keyed_hash(&KEY, &data).as_bytes(), "{knob}: hash");
            let leaves = random_leaves(3001, 1);
            check_tree(&be, knob, &leaves, &reference_inner(&leaves));
            for len in [64, 1000, 3000] {
                let msgs = messages(len, 50, 2);
                let got = hash_many_with(&be, &Mode::Hash, &msgs, len).unwrap();
                for (k, h) in got.iter().enumerate() {
                    assert_eq!(*h, blake3::hash(&msgs[k * len..(k + 1) * len]), "{knob}: {len}-byte message {k}");
                }
            }
        }
    }
}
