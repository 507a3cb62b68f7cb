//! The `hazmat` API against upstream `blake3::hazmat`, on every backend (CPU SIMD levels, every
//! OpenCL device and wgpu adapter): subtrees at awkward offsets and lengths in all three modes,
//! random trees of splits merged with the merge functions, random covers merged at once by
//! `merge_pieces_root_xof`, the length rules, and every misuse an error, never a panic. (The
//! device-resident forms are tested in tests/opencl.rs and tests/wgpu.rs.)

mod common;

use b3accel::hazmat::{
    check_subtree, hash_derive_key_context, left_subtree_len, max_subtree_len, merge_pieces_root,
    merge_pieces_root_xof, merge_subtrees_non_root, merge_subtrees_root, merge_subtrees_root_xof, HasherExt, Piece,
};
use b3accel::{Device, Error, Hasher, Mode, CHUNK_LEN};
use common::{targets, tree_mode, upstream_cv, upstream_hasher, Target};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

const KEY: [u8; 32] = *b"an example key, 32 bytes long!!!";
const CONTEXT: &str = "b3accel 2026-11-21 hazmat tests";

fn modes() -> [Mode; 3] {
    [Mode::Hash, Mode::Keyed(KEY), Mode::DeriveKey(CONTEXT.into())]
}

/// Input bytes `offset..offset + len` of the test input (byte i is a function of i).
fn bytes_at(offset: u64, len: u64) -> Vec<u8> {
    (offset..offset + len).map(|i| (i % 251) as u8 ^ (i >> 17) as u8).collect()
}

/// Our chaining value of `data` as the subtree at `offset`, on `t`, fed in `splits` updates.
fn our_cv(t: &Target, mode: &Mode, offset: u64, data: &[u8], splits: &[usize]) -> [u8; 32] {
    let mut h = Hasher::with_backend(t.backend.clone(), mode);
    h.set_input_offset(offset).unwrap_or_else(|e| panic!("{}: {e}", t.name));
    let mut at = 0;
    for &s in splits.iter().chain([&data.len()]) {
        let s = s.clamp(at, data.len());
        h.update(&data[at..s]).unwrap_or_else(|e| panic!("{}: offset {offset}, {} bytes: {e}", t.name, data.len()));
        at = s;
    }
    h.finalize_non_root().unwrap_or_else(|e| panic!("{}: offset {offset}, {} bytes: {e}", t.name, data.len()))
}

/// Subtrees at chunk indices with few and many trailing zero bits, of lengths around block,
/// chunk, SIMD-group and GPU work-group boundaries, up to the largest that fits.
fn awkward_subtrees() -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    // At offset 0: left children, a power of two of whole chunks.
    for chunks in [1u64, 2, 4, 16, 64, 256, 1024] {
        out.push((0, chunks * CHUNK_LEN as u64));
    }
    for chunk in [1u64, 2, 3, 5, 6, 8, 12, 16, 24, 64, 96, 1000, 1024, 3072, 4096, (1 << 32) + 2048] {
        let offset = chunk * CHUNK_LEN as u64;
        let max = max_subtree_len(offset).expect("offset > 0");
        for len in [1u64, 63, 64, 65, 1023, 1024, 1025, 2047, 16 * 1024 + 1, 257 * 1024 - 1, max / 2 + 1, max - 1, max]
        {
            if (1..=max.min(1 << 20)).contains(&len) && !out.contains(&(offset, len)) {
                out.push((offset, len));
            }
        }
    }
    out
}

#[test]
fn subtrees_at_awkward_offsets_match_upstream_on_every_backend() {
    let cases = awkward_subtrees();
    let mut rng = StdRng::seed_from_u64(18);
    for t in targets() {
        for &(offset, len) in &cases {
            let data = bytes_at(offset, len);
            for mode in modes() {
                let splits: Vec<usize> =
                    (0..rng.random_range(0..3)).map(|_| rng.random_range(0..=len as usize)).collect();
                let mut splits = splits;
                splits.sort_unstable();
                assert_eq!(
                    our_cv(&t, &mode, offset, &data, &splits),
                    upstream_cv(&mode, offset, &data),
                    "{}: {len} bytes at offset {offset}, {mode:?}, updates split at {splits:?}",
                    t.name
                );
            }
        }
        eprintln!("hazmat: {} ok at {} subtrees x 3 modes", t.name, cases.len());
    }
}

/// The chaining value of `data` (bytes `offset..` of the input) as hashed by splitting it
/// recursively at random depths, leaves on random backends, merged with
/// `merge_subtrees_non_root`; each leaf is checked against upstream on the way.
fn random_tree_cv(rng: &mut StdRng, ts: &[Target], mode: &Mode, offset: u64, data: &[u8]) -> [u8; 32] {
    let len = data.len() as u64;
    if len <= CHUNK_LEN as u64 || rng.random_bool(0.3) {
        let t = &ts[rng.random_range(0..ts.len())];
        let cv = our_cv(t, mode, offset, data, &[]);
        assert_eq!(cv, upstream_cv(mode, offset, data), "{}: leaf of {len} bytes at {offset}, {mode:?}", t.name);
        return cv;
    }
    let split = left_subtree_len(len);
    let left = random_tree_cv(rng, ts, mode, offset, &data[..split as usize]);
    let right = random_tree_cv(rng, ts, mode, offset + split, &data[split as usize..]);
    tree_mode(mode, |m| merge_subtrees_non_root(&left, &right, m))
}

#[test]
fn random_trees_of_splits_give_upstream_roots() {
    let ts = targets();
    let mut rng = StdRng::seed_from_u64(0x18);
    for round in 0..24 {
        let len = match round % 3 {
            0 => rng.random_range(CHUNK_LEN + 1..64 * CHUNK_LEN),
            1 => rng.random_range(64 * CHUNK_LEN..2 << 20),
            _ => rng.random_range(1..20usize) * CHUNK_LEN * (1 << rng.random_range(0..6)),
        }
        .max(CHUNK_LEN + 1);
        let data = bytes_at(0, len as u64);
        for mode in modes() {
            let split = left_subtree_len(len as u64);
            let left = random_tree_cv(&mut rng, &ts, &mode, 0, &data[..split as usize]);
            let right = random_tree_cv(&mut rng, &ts, &mode, split, &data[split as usize..]);
            let seek = rng.random_range(0..200u64);
            let mut got = vec![0u8; 77];
            let (hash, mut reader) = tree_mode(&mode, |m| {
                (merge_subtrees_root(&left, &right, m), merge_subtrees_root_xof(&left, &right, m))
            });
            reader.set_position(seek);
            reader.fill(&mut got);
            let mut upstream = upstream_hasher(&mode);
            upstream.update(&data);
            assert_eq!(hash, upstream.finalize(), "len {len}, {mode:?}");
            let mut want = vec![0u8; 77];
            let mut up_reader = upstream.finalize_xof();
            up_reader.set_position(seek);
            up_reader.fill(&mut want);
            assert_eq!(got, want, "len {len}, {mode:?}, seek {seek}");
        }
    }
}

/// A random cover of `len` bytes (more than one chunk) by valid pieces, in order: complete
/// aligned subtrees of random sizes, the last one anything that fits.
fn random_cover(rng: &mut StdRng, len: u64) -> Vec<(u64, u64)> {
    let chunk = CHUNK_LEN as u64;
    let mut out = Vec::new();
    let mut at = 0;
    while at < len {
        let left = len - at;
        let max = max_subtree_len(at).unwrap_or(u64::MAX);
        if at > 0 && left <= max && (left < chunk || rng.random_bool(0.4)) {
            out.push((at, left));
            break;
        }
        // A complete subtree: a power of two of chunks, aligned, not the whole rest at offset 0.
        let fit = (max.min(if at == 0 { left - 1 } else { left }) / chunk).max(1);
        let size = chunk << rng.random_range(0..=fit.ilog2());
        out.push((at, size));
        at += size;
    }
    out
}

#[test]
fn random_covers_merge_to_upstream_roots() {
    let ts = targets();
    let mut rng = StdRng::seed_from_u64(1818);
    for round in 0..30 {
        let len = rng.random_range(CHUNK_LEN as u64 + 1..if round % 5 == 0 { 3 << 20 } else { 80 * 1024 });
        let data = bytes_at(0, len);
        let cover = random_cover(&mut rng, len);
        for mode in modes() {
            let mut pieces: Vec<Piece> = cover
                .iter()
                .map(|&(offset, n)| {
                    let t = &ts[rng.random_range(0..ts.len())];
                    let cv = our_cv(t, &mode, offset, &data[offset as usize..(offset + n) as usize], &[]);
                    Piece { offset, len: n, cv }
                })
                .collect();
            pieces.shuffle(&mut rng);
            let seek = rng.random_range(0..1000u64);
            let mut got = [0u8; 40];
            let root = tree_mode(&mode, |m| {
                let mut r = merge_pieces_root_xof(&pieces, m).unwrap_or_else(|e| panic!("{cover:?}: {e}"));
                r.set_position(seek);
                r.fill(&mut got);
                merge_pieces_root(&pieces, m).unwrap()
            });
            let mut upstream = upstream_hasher(&mode);
            upstream.update(&data);
            assert_eq!(root, upstream.finalize(), "{len} bytes in pieces {cover:?}, {mode:?}");
            let mut want = [0u8; 40];
            let mut r = upstream.finalize_xof();
            r.set_position(seek);
            r.fill(&mut want);
            assert_eq!(got, want, "{len} bytes in pieces {cover:?}, {mode:?}, seek {seek}");

            // The same cover spoiled: every change is refused, naming a piece. (Leaving out the
            // last piece, or lengthening it, can give a valid cover of another input: the changes
            // to it are a shift and a copy.)
            let mut sorted = pieces.clone();
            sorted.sort_by_key(|p| p.offset);
            let k = rng.random_range(0..sorted.len());
            let inner = rng.random_range(0..sorted.len() - 1);
            let mut spoiled = vec![];
            let mut without = sorted.clone();
            without.remove(inner);
            spoiled.push(("one piece left out", without));
            let mut twice = sorted.clone();
            twice.push(sorted[k]);
            spoiled.push(("one piece twice", twice));
            let mut shifted = sorted.clone();
            shifted[k].offset += 1;
            spoiled.push(("one offset off by one", shifted));
            let mut longer = sorted.clone();
            longer[inner].len += CHUNK_LEN as u64;
            spoiled.push(("one piece a chunk longer", longer));
            for (what, bad) in spoiled {
                tree_mode(&mode, |m| match merge_pieces_root_xof(&bad, m) {
                    Err(Error::InvalidPiece { index, .. }) => assert!(index < bad.len(), "{what}"),
                    Err(Error::InvalidInput(_)) if bad.is_empty() => {}
                    other => panic!("{what} in {cover:?}: {other:?}"),
                });
            }
        }
    }
}

#[test]
fn lengths_and_merges_match_upstream() {
    let mut rng = StdRng::seed_from_u64(7);
    for _ in 0..10_000 {
        let chunk: u64 = rng.random_range(1..1 << 40) << rng.random_range(0..20);
        let offset = chunk.wrapping_mul(CHUNK_LEN as u64);
        if offset == 0 || offset / CHUNK_LEN as u64 != chunk {
            continue;
        }
        assert_eq!(max_subtree_len(offset), blake3::hazmat::max_subtree_len(offset), "offset {offset}");
        let len = rng.random_range(CHUNK_LEN as u64 + 1..u64::MAX / 2);
        assert_eq!(left_subtree_len(len), blake3::hazmat::left_subtree_len(len), "len {len}");
    }
    assert_eq!(max_subtree_len(0), None);
    assert_eq!(max_subtree_len(1000), Some(0));
    assert_eq!(left_subtree_len(1024), 0);
    for mode in modes() {
        let (l, r): ([u8; 32], [u8; 32]) = (rng.random(), rng.random());
        let up_mode_key;
        let up_mode = match &mode {
            Mode::Hash => blake3::hazmat::Mode::Hash,
            Mode::Keyed(k) => blake3::hazmat::Mode::KeyedHash(k),
            Mode::DeriveKey(c) => {
                up_mode_key = blake3::hazmat::hash_derive_key_context(c);
                blake3::hazmat::Mode::DeriveKeyMaterial(&up_mode_key)
            }
        };
        tree_mode(&mode, |m| {
            assert_eq!(merge_subtrees_non_root(&l, &r, m), blake3::hazmat::merge_subtrees_non_root(&l, &r, up_mode));
            assert_eq!(merge_subtrees_root(&l, &r, m), blake3::hazmat::merge_subtrees_root(&l, &r, up_mode));
        });
    }
}

#[test]
fn context_keys_match_upstream_at_any_length() {
    for len in [0usize, 1, 31, 1023, 1024, 1025, 3000, 5000] {
        let context: String = (0..len).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
        let key = hash_derive_key_context(&context);
        assert_eq!(key, blake3::hazmat::hash_derive_key_context(&context), "context of {len} bytes");
        // The derive-key mode of every entry point agrees, long contexts included.
        let material = bytes_at(0, 2500);
        let want = blake3::derive_key(&context, &material);
        assert_eq!(*b3accel::derive_key_on(Device::Cpu, &context, &material).unwrap().as_bytes(), want);
        let mut h = Hasher::new_from_context_key_on(Device::Cpu, &key).unwrap();
        h.update(&material).unwrap();
        assert_eq!(*h.finalize().unwrap().as_bytes(), want, "context of {len} bytes");
    }
}

#[test]
fn misuse_is_an_error_and_the_hasher_stays_usable() {
    let cpu = || Hasher::new_on(Device::Cpu).unwrap();
    // Offsets: a chunk boundary, before any input.
    assert!(cpu().set_input_offset(1).is_err());
    assert!(cpu().set_input_offset(1023).is_err());
    assert!(cpu().update(b"x").unwrap().set_input_offset(0).is_err());
    // Too much input for the offset is refused before any of it is taken in.
    let mut h = cpu();
    h.set_input_offset(3 * 1024).unwrap().update(&[1; 1000]).unwrap();
    assert!(h.update(&[1; 25]).is_err());
    assert_eq!(h.count(), 1000);
    h.update(&[1; 24]).unwrap();
    assert_eq!(h.finalize_non_root().unwrap(), upstream_cv(&Mode::Hash, 3 * 1024, &[1; 1024]));
    // No root at a nonzero offset.
    assert!(h.finalize().is_err());
    assert!(h.finalize_xof().is_err());
    // An empty subtree, and lengths at offset 0 that only the whole input can have.
    assert!(cpu().finalize_non_root().is_err());
    assert!(cpu().set_input_offset(2048).unwrap().finalize_non_root().is_err());
    for len in [1usize, 1000, 1025, 3 * 1024, 5 * 1024 + 7] {
        let mut h = cpu();
        h.update(&vec![2; len]).unwrap();
        assert!(h.finalize_non_root().is_err(), "{len} bytes at offset 0");
        assert_eq!(h.finalize().unwrap(), blake3::hash(&vec![2; len]), "{len} bytes as a root");
    }
    // reset() forgets the offset too.
    let mut h = cpu();
    h.set_input_offset(1 << 20).unwrap().update(b"abc").unwrap();
    h.reset().update(b"abc").unwrap();
    assert_eq!(h.input_offset(), 0);
    assert_eq!(h.finalize().unwrap(), blake3::hash(b"abc"));
    // check_subtree says the same as the hasher.
    for (offset, len, ok) in
        [(0, 1024, true), (0, 1025, false), (4096, 4096, true), (4096, 4097, false), (100, 1, false), (1024, 0, false)]
    {
        assert_eq!(check_subtree(offset, len).is_ok(), ok, "{len} bytes at {offset}");
    }
    assert!(check_subtree(u64::MAX - 1023, 2048).is_err());
}

#[test]
fn keys_never_show_in_debug() {
    let key = [0xAB; 32];
    let ctx = hash_derive_key_context(CONTEXT);
    for m in [b3accel::hazmat::Mode::KeyedHash(&key), b3accel::hazmat::Mode::DeriveKeyMaterial(&ctx)] {
        let shown = format!("{m:?} {m:#?}");
        assert!(shown.contains("redacted"), "{shown}");
        assert!(!shown.contains("171") && !shown.to_lowercase().contains("ab, "), "{shown}");
    }
    let hasher = Hasher::new_keyed_on(Device::Cpu, &key).unwrap();
    let shown = format!("{hasher:?}");
    assert!(!shown.contains("171") && !shown.contains("0xab") && !shown.contains("2880154539"), "{shown}");
}
