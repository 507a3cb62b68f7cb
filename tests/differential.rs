//! Differential tests against upstream `blake3`, on every backend and CPU SIMD level: awkward
//! lengths (chunk, SIMD-lane, leaf and power-of-two boundaries), random lengths up to several MiB,
//! random `update` splits, all three modes, XOF output from random positions, and the backend
//! contract itself (each subtree CV checked against upstream's `hazmat` API).

mod common;

use b3accel::{flags, subtree_count, xof_reader_with, Device, Hasher, Mode, CHUNK_LEN, IV};
use blake3::hazmat::HasherExt;
use common::{cpu_targets, pattern, targets, Target};
use rand::{rngs::StdRng, Rng, SeedableRng};

const KEY: [u8; 32] = *b"an example key, 32 bytes long!!!";
const CONTEXT: &str = "b3accel 2026-11-21 differential tests";

fn modes() -> [Mode; 3] {
    [Mode::Hash, Mode::Keyed(KEY), Mode::DeriveKey(CONTEXT.into())]
}

fn upstream_hasher(mode: &Mode) -> blake3::Hasher {
    match mode {
        Mode::Hash => blake3::Hasher::new(),
        Mode::Keyed(k) => blake3::Hasher::new_keyed(k),
        Mode::DeriveKey(c) => blake3::Hasher::new_derive_key(c),
    }
}

fn upstream_xof(mode: &Mode, data: &[u8], seek: u64, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    let mut reader = upstream_hasher(mode).update(data).finalize_xof();
    reader.set_position(seek);
    reader.fill(&mut out);
    out
}

/// Lengths around every boundary the implementations care about: blocks, chunks, SIMD groups of
/// 4/8/16 chunks, runs of two subtrees that each end in registers on the CPU (24 and 48 chunks),
/// the CPU's 64-chunk leaves, GPU work-groups (64 to 256 chunks) and powers of two.
fn awkward_lengths() -> Vec<usize> {
    let mut lens = vec![0, 1, 63, 64, 65, 127, 128, 1023, 1024, 1025];
    for chunks in
        [2usize, 3, 4, 5, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 48, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1024]
    {
        for delta in [-1i64, 0, 1] {
            lens.push((chunks as i64 * CHUNK_LEN as i64 + delta) as usize);
        }
    }
    lens.push(3 * CHUNK_LEN * 1024 + 7); // 3 MiB + 7: a non-power-of-two count of subtrees
    lens
}

fn check_one_shot(t: &Target, mode: &Mode, data: &[u8], seek: u64, out_len: usize) {
    let mut got = vec![0u8; out_len];
    let mut reader = xof_reader_with(&*t.backend, mode, data).unwrap();
    reader.set_position(seek);
    reader.fill(&mut got);
    assert!(
        got == upstream_xof(mode, data, seek, out_len),
        "{}: one-shot mismatch: len {}, {mode:?}, seek {seek}",
        t.name,
        data.len()
    );
}

#[test]
fn awkward_lengths_all_modes_every_backend() {
    let lens = awkward_lengths();
    for t in targets() {
        for &len in &lens {
            let data = pattern(len);
            for mode in modes() {
                check_one_shot(&t, &mode, &data, 0, 32);
            }
        }
        eprintln!("differential: {} ok at {} awkward lengths x 3 modes", t.name, lens.len());
    }
}

/// The one-shot hash functions on the CPU take the root hash without building the root node
/// (`root_hash_all`): every mode at every awkward length, against upstream.
#[test]
fn one_shot_hashes_on_the_cpu_match_upstream() {
    let (key, context) = (KEY, CONTEXT);
    let lens = awkward_lengths();
    for &len in &lens {
        let data = pattern(len);
        assert_eq!(b3accel::hash_on(Device::Cpu, &data).unwrap(), blake3::hash(&data), "hash, len {len}");
        assert_eq!(
            b3accel::keyed_hash_on(Device::Cpu, &key, &data).unwrap(),
            blake3::keyed_hash(&key, &data),
            "keyed, len {len}"
        );
        assert_eq!(
            *b3accel::derive_key_on(Device::Cpu, context, &data).unwrap().as_bytes(),
            blake3::derive_key(context, &data),
            "derive_key, len {len}"
        );
    }
    eprintln!("differential: one-shot CPU hashes ok at {} awkward lengths x 3 modes", lens.len());
}

/// Inputs of one whole chunk and a partial one (1025 to 2047 bytes), whose two chunks the tree
/// hashes side by side on the CPU's two-input rows where it has them (AVX-512VL or AVX2): every
/// length in every mode, as a root hash, as XOF output past the first block, through `Hasher` in
/// two updates, and as a non-root subtree at chunk 6 (`hazmat`), against upstream. (The rows are
/// the process's: `B3ACCEL_CPU=sse41` runs the other path.)
#[test]
fn one_chunk_and_a_tail_match_upstream() {
    use b3accel::hazmat::HasherExt;
    let data = pattern(2 * CHUNK_LEN);
    for len in CHUNK_LEN + 1..2 * CHUNK_LEN {
        let data = &data[..len];
        assert_eq!(b3accel::hash_on(Device::Cpu, data).unwrap(), blake3::hash(data), "hash, len {len}");
        assert_eq!(
            b3accel::keyed_hash_on(Device::Cpu, &KEY, data).unwrap(),
            blake3::keyed_hash(&KEY, data),
            "keyed, len {len}"
        );
        assert_eq!(
            *b3accel::derive_key_on(Device::Cpu, CONTEXT, data).unwrap().as_bytes(),
            blake3::derive_key(CONTEXT, data),
            "derive_key, len {len}"
        );
        let mut h = Hasher::new_keyed_on(Device::Cpu, &KEY).unwrap();
        h.update(&data[..len / 3]).unwrap().update(&data[len / 3..]).unwrap();
        let mut got = [0u8; 80];
        h.finalize_xof().unwrap().fill(&mut got);
        assert!(got[..] == upstream_xof(&Mode::Keyed(KEY), data, 0, 80)[..], "keyed XOF, len {len}");
        let offset = 6 * CHUNK_LEN as u64;
        let mut sub = Hasher::new_on(Device::Cpu).unwrap();
        let cv = sub.set_input_offset(offset).unwrap().update(data).unwrap().finalize_non_root().unwrap();
        let expected = blake3::Hasher::new().set_input_offset(offset).update(data).finalize_non_root();
        assert_eq!(cv, expected, "subtree at chunk 6, len {len}");
    }
    eprintln!("differential: one chunk and a tail ok at every length from 1025 to 2047");
}

/// The CPU backend splits work one way on a pool of one thread (leaves of 1024 chunks, no tasks)
/// and another on a larger pool (tasks of 64 chunks); subtrees larger than a leaf (one thread)
/// or of 4096 chunks and more (pool) are reduced 16 CVs at a time; upstream's kernel hands large
/// subtrees to `update_rayon` on a pool. All at lengths around those sizes, on every kernel.
#[test]
fn cpu_one_thread_and_pool_agree_at_leaf_boundaries() {
    let mut lens = Vec::new();
    for chunks in [1023usize, 1024, 1025, 2047, 2048, 2049, 3 * 1024 + 17, 4096, 4097, 8 * 1024 + 17] {
        for delta in [-1i64, 0, 1] {
            lens.push((chunks as i64 * CHUNK_LEN as i64 + delta) as usize);
        }
    }
    for threads in [1, 3] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        for t in cpu_targets() {
            pool.install(|| {
                for &len in &lens {
                    check_one_shot(&t, &Mode::Hash, &pattern(len), 0, 32);
                }
            });
            eprintln!("differential: {} ok on {threads} thread(s) at {} lengths", t.name, lens.len());
        }
    }
}

#[test]
fn random_lengths_splits_and_seeks() {
    let mut rng = StdRng::seed_from_u64(0x0B3A_CCE1);
    for t in targets() {
        for round in 0..12 {
            // Mostly small, sometimes several MiB.
            let len = if round % 4 == 3 { rng.random_range(0..6 << 20) } else { rng.random_range(0..40_000) };
            let mut data = vec![0u8; len];
            rng.fill(&mut data[..]);
            let mode = modes()[round % 3].clone();
            let seek = if round % 2 == 0 { 0 } else { rng.random_range(0..1u64 << 40) };
            let out_len = rng.random_range(1..300);
            check_one_shot(&t, &mode, &data, seek, out_len);

            // The same input through the incremental hasher, split at random points.
            let mut h = Hasher::with_backend(t.backend.clone(), &mode);
            let mut rest = &data[..];
            while !rest.is_empty() {
                let cut = match rng.random_range(0..4) {
                    0 => rng.random_range(0..=rest.len().min(64)),
                    1 => rng.random_range(0..=rest.len().min(5000)),
                    _ => rng.random_range(0..=rest.len()),
                };
                h.update(&rest[..cut]).unwrap();
                rest = &rest[cut..];
            }
            assert_eq!(h.count(), len as u64);
            let mut got = vec![0u8; out_len];
            let mut reader = h.finalize_xof().unwrap();
            reader.set_position(seek);
            reader.fill(&mut got);
            assert!(
                got == upstream_xof(&mode, &data, seek, out_len),
                "{}: incremental mismatch: len {len}, {mode:?}, seek {seek}",
                t.name
            );
        }
        eprintln!("differential: {} ok at random lengths, splits and seeks", t.name);
    }
}

/// The backend contract, checked piece by piece: the CV of each subtree must equal upstream's
/// non-root CV of the same bytes at the same offset.
#[test]
fn backend_subtrees_match_upstream_hazmat() {
    let mut rng = StdRng::seed_from_u64(7);
    let cases: Vec<(u64, u64, u64)> = vec![
        // (chunks, first_chunk, max_chunks)
        (1, 0, 1 << 63),
        (1, 5, 1 << 63),
        (6, 8, 1 << 63),
        (15, 16, 1 << 63),
        (16, 0, 8),
        (16, 32, 1 << 63),
        (17, 64, 4),
        (64, 64, 1 << 63),
        (100, 128, 1 << 63),
        (255, 256, 1 << 63),
        (257, 512, 1 << 63),
        (300, 1 << 33, 64),
        // Groups whose chunk counters' low words wrap from lane to lane.
        (4, (1 << 32) - 2, 2),
        (8, (1 << 32) - 4, 4),
        (16, (1 << 32) - 8, 8),
        (1000, 1 << 40, 1 << 63),
        // Small caps (bao's chunk groups) on chunk counts that are no multiple of them: the
        // passes stop at the cap's level, a ragged end gives the subtrees below it.
        (37, 0, 1),
        (523, 1024, 1),
        (37, 64, 2),
        (1029, 0, 2),
        (523, 0, 4),
        (1031, 2048, 8),
        (1029, 0, 16),
        (2100, 4096, 16),
        (2100, 0, 64),
        (515, 1 << 33, 64),
    ];
    for t in targets() {
        for &(n, first, max) in &cases {
            let mut data = vec![0u8; n as usize * CHUNK_LEN];
            rng.fill(&mut data[..]);
            let mut got = vec![[0u8; 32]; subtree_count(n, max)];
            t.backend.chunk_subtrees_capped(&data, first, max, &IV, 0, &mut got).unwrap();
            let sizes = std::iter::repeat_n(max, (n / max) as usize)
                .chain((0..64).rev().map(|b| 1u64 << b).filter(|b| (n % max) & b != 0));
            let mut offset = 0u64;
            for (size, cv) in sizes.zip(&got) {
                let bytes = &data[(offset as usize) * CHUNK_LEN..((offset + size) as usize) * CHUNK_LEN];
                let expected = blake3::Hasher::new()
                    .set_input_offset((first + offset) * CHUNK_LEN as u64)
                    .update(bytes)
                    .finalize_non_root();
                assert_eq!(*cv, expected, "{}: n {n} first {first} max {max}: subtree at +{offset}", t.name);
                offset += size;
            }
            assert_eq!(offset, n);
        }
        // Malformed calls are errors, never panics.
        let b = &t.backend;
        let mut one = [[0u8; 32]; 1];
        assert!(b.chunk_subtrees(&[0u8; 1000], 0, &IV, 0, &mut one).is_err(), "{}: partial chunk", t.name);
        assert!(b.chunk_subtrees(&[], 0, &IV, 0, &mut []).is_err(), "{}: empty input", t.name);
        assert!(b.chunk_subtrees(&[0u8; 2 * CHUNK_LEN], 1, &IV, 0, &mut one).is_err(), "{}: misaligned", t.name);
        assert!(b.chunk_subtrees(&[0u8; 3 * CHUNK_LEN], 0, &IV, 0, &mut one).is_err(), "{}: out too short", t.name);
        eprintln!("differential: {} backend contract ok", t.name);
    }
}

/// `subtree_top`: the root hash of whole inputs of full chunks in every mode, and the CV of the
/// same run elsewhere in an input (at the right edge of a subtree), against upstream, at 2 to 64
/// chunks and runs of one, two and three complete subtrees (the CPU backend's levels in
/// registers go up to 16 nodes; it takes two subtrees evened or apart); malformed calls are
/// errors.
#[test]
fn subtree_tops_match_upstream() {
    let mut rng = StdRng::seed_from_u64(17);
    let key_words: [u32; 8] = core::array::from_fn(|i| u32::from_le_bytes(KEY[4 * i..4 * i + 4].try_into().unwrap()));
    for t in targets() {
        for n in [2u64, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17, 20, 24, 32, 33, 40, 48, 56, 64, 72] {
            let mut data = vec![0u8; n as usize * CHUNK_LEN];
            rng.fill(&mut data[..]);
            let b = &t.backend;
            let root = b.subtree_top(&data, 0, &IV, 0, flags::ROOT).unwrap();
            assert_eq!(root, *blake3::hash(&data).as_bytes(), "{}: hash of {n} chunks", t.name);
            let keyed = b.subtree_top(&data, 0, &key_words, flags::KEYED_HASH, flags::ROOT).unwrap();
            assert_eq!(keyed, *blake3::keyed_hash(&KEY, &data).as_bytes(), "{}: keyed hash of {n} chunks", t.name);
            let first = 3 * n.next_power_of_two();
            let cv = b.subtree_top(&data, first, &IV, 0, 0).unwrap();
            let expected =
                blake3::Hasher::new().set_input_offset(first * CHUNK_LEN as u64).update(&data).finalize_non_root();
            assert_eq!(cv, expected, "{}: subtree of {n} chunks at chunk {first}", t.name);
        }
        let b = &t.backend;
        for (len, first, what) in [
            (CHUNK_LEN, 0, "one chunk"),
            (2 * CHUNK_LEN - 1, 0, "a partial chunk"),
            (3 * CHUNK_LEN + 5, 0, "a partial last chunk"),
            (4 * CHUNK_LEN, 2, "misaligned"),
            (3 * CHUNK_LEN, 2, "three chunks past a multiple of 2 but not of 4"),
        ] {
            assert!(b.subtree_top(&vec![0u8; len], first, &IV, 0, 0).is_err(), "{}: subtree_top of {what}", t.name);
        }
        eprintln!("differential: {} subtree_top ok", t.name);
    }
}

#[test]
fn hash_blocks_match_upstream() {
    let mut rng = StdRng::seed_from_u64(11);
    for t in targets() {
        for count in [0usize, 1, 3, 4, 5, 15, 16, 17, 100, 1000] {
            let mut blocks = vec![[0u8; 64]; count];
            for b in &mut blocks {
                rng.fill(&mut b[..]);
            }
            let mut out = vec![[0u8; 32]; count];
            t.backend.hash_blocks(&blocks, &mut out).unwrap();
            for (b, o) in blocks.iter().zip(&out) {
                assert_eq!(o, blake3::hash(b).as_bytes(), "{}: hash_blocks, count {count}", t.name);
            }
        }
        let mut out = vec![[0u8; 32]; 2];
        assert!(t.backend.hash_blocks(&[[0u8; 64]; 3], &mut out).is_err(), "{}: length mismatch", t.name);
    }
}

/// A large update that ends on a chunk boundary goes to the backend whole (a complete subtree
/// that is all the input so far as its two halves): finalized after it, after more such updates
/// and after a partial chunk, and as a non-root subtree at an offset (`hazmat`), in every mode,
/// against upstream.
#[test]
fn chunk_aligned_updates_match_upstream() {
    use b3accel::hazmat::HasherExt;
    for t in targets() {
        for mode in modes() {
            for chunks in [64usize, 96, 256] {
                let piece = chunks * CHUNK_LEN;
                let data = pattern(2 * piece + 5);
                let mut h = Hasher::with_backend(t.backend.clone(), &mode);
                for end in [piece, 2 * piece, 2 * piece + 5] {
                    h.update(&data[h.count() as usize..end]).unwrap();
                    let mut got = [0u8; 40];
                    h.finalize_xof().unwrap().fill(&mut got);
                    assert!(
                        got[..] == upstream_xof(&mode, &data[..end], 0, 40)[..],
                        "{}: {mode:?}, {end} bytes",
                        t.name
                    );
                }
            }
        }
        let data = pattern(128 * CHUNK_LEN);
        let offset = 128 * CHUNK_LEN as u64;
        let mut sub = Hasher::with_backend(t.backend.clone(), &Mode::Hash);
        let cv = sub.set_input_offset(offset).unwrap().update(&data).unwrap().finalize_non_root().unwrap();
        let expected = blake3::Hasher::new().set_input_offset(offset).update(&data).finalize_non_root();
        assert_eq!(cv, expected, "{}: a complete subtree at chunk 128 in one update", t.name);
    }
}

#[test]
fn hasher_reset_and_write() {
    use std::io::Write;
    for t in targets() {
        let data = pattern(200_000);
        let mut h = Hasher::with_backend(t.backend.clone(), &Mode::Hash);
        h.update(b"garbage that reset must forget").unwrap();
        h.reset();
        for piece in data.chunks(8192) {
            h.write_all(piece).unwrap();
        }
        assert_eq!(h.finalize().unwrap(), blake3::hash(&data), "{}", t.name);
        // finalize does not consume: more input may follow.
        h.update(b"more").unwrap();
        let mut both = data.clone();
        both.extend_from_slice(b"more");
        assert_eq!(h.finalize().unwrap(), blake3::hash(&both), "{}", t.name);
    }
}

/// The output stream's block counter carries from its low 32-bit word into its high word at block
/// 2^32, byte 2^38, and the byte position leaves a `u64` at byte 2^64: reads that start just
/// before, at and just after those bytes, and reads that cross them, for a root that is one chunk (its input chaining value the
/// key words) and one that is a parent node, in every mode, on every backend.
#[test]
fn xof_reads_across_the_counter_carries() {
    let carry = 1u64 << 38;
    let reads: [(u64, usize); 10] = [
        (carry - 1, 1),
        (carry, 1),
        (carry + 1, 1),
        (carry - 64, 129),
        (carry - 3, 70),
        (u64::MAX - 64, 64),
        (u64::MAX - 200, 200),
        (u64::MAX - 1, 1),
        (u64::MAX, 70),
        (u64::MAX - 10, 200),
    ];
    for t in targets() {
        for data in [pattern(100), pattern(3 * CHUNK_LEN + 1)] {
            for mode in modes() {
                for &(seek, len) in &reads {
                    check_one_shot(&t, &mode, &data, seek, len);
                    let mut reader = xof_reader_with(&*t.backend, &mode, &data).unwrap();
                    std::io::Seek::seek(&mut reader, std::io::SeekFrom::Start(seek)).unwrap();
                    let mut got = vec![0u8; len];
                    std::io::Read::read_exact(&mut reader, &mut got).unwrap();
                    assert_eq!(got, upstream_xof(&mode, &data, seek, len), "{}: seek {seek} by io::Seek", t.name);
                    assert_eq!(reader.position(), seek.wrapping_add(len as u64));
                }
            }
        }
    }
}
