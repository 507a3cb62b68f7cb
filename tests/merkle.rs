//! Merkle trees and batches of messages on every backend (every CPU SIMD level, every GPU device
//! found), against references built from upstream `blake3::hash` alone.

mod common;

use b3accel::merkle::{self, hash_each_with, hash_many_with, level_sizes, Proof};
use b3accel::{Backend, Device, MerkleTree, Mode, IV};
use common::{cpu_targets, pattern, targets};
use rand::{Rng, SeedableRng};

type Node = [u8; 32];

fn parent(left: &Node, right: &Node) -> Node {
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(left);
    block[32..].copy_from_slice(right);
    *blake3::hash(&block).as_bytes()
}

/// The straightforward reference: a loop of upstream `blake3::hash` over pairs, level by level,
/// the odd last node carried up. Returns every inner level, bottom up.
fn reference_levels(leaves: &[Node]) -> Vec<Vec<Node>> {
    let mut levels = Vec::new();
    let mut cur = leaves.to_vec();
    while cur.len() > 1 {
        let stored: Vec<Node> = cur.chunks_exact(2).map(|p| parent(&p[0], &p[1])).collect();
        let mut next = stored.clone();
        if cur.len() % 2 == 1 {
            next.push(cur[cur.len() - 1]);
        }
        levels.push(stored);
        cur = next;
    }
    levels
}

/// RFC 6962's recursive definition of the shape (split at the largest power of two below n),
/// independent of the level-by-level reference.
fn rfc6962_root(leaves: &[Node]) -> Node {
    if leaves.len() == 1 {
        return leaves[0];
    }
    let k = 1usize << (usize::BITS - 1 - (leaves.len() - 1).leading_zeros());
    parent(&rfc6962_root(&leaves[..k]), &rfc6962_root(&leaves[k..]))
}

fn random_leaves(n: usize, seed: u64) -> Vec<Node> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random()).collect()
}

const COUNTS: [usize; 11] = [1, 2, 3, 5, 7, 8, 9, 1000, 4097, 1 << 16, (1 << 20) + 3];

#[test]
fn roots_and_trees_match_the_reference_on_every_backend() {
    let targets = targets();
    for &n in &COUNTS {
        let leaves = random_leaves(n, n as u64);
        let expected = reference_levels(&leaves);
        let expected_root = expected.last().map_or(leaves[0], |l| l[0]);
        if n <= 4097 {
            assert_eq!(rfc6962_root(&leaves), expected_root, "RFC 6962 shape, n = {n}");
        }
        for t in &targets {
            let b = &*t.backend;
            let root = merkle::merkle_root_with(b, &leaves).unwrap();
            assert_eq!(root.as_bytes(), &expected_root, "{}: root of {n}", t.name);
            let tree = MerkleTree::build_with(b, &leaves).unwrap();
            assert_eq!(tree.root(), root, "{}: tree root of {n}", t.name);
            assert_eq!(tree.leaf_count(), n);
            assert_eq!(tree.levels().len(), expected.len(), "{}: depth of {n}", t.name);
            for (k, (got, want)) in tree.levels().zip(&expected).enumerate() {
                assert_eq!(got, &want[..], "{}: level {k} of {n}", t.name);
            }
            assert_eq!(tree.inner_nodes(), expected.concat(), "{}: inner nodes of {n}", t.name);
            // The layout every backend shares.
            let sizes: Vec<usize> = level_sizes(n).collect();
            let want_sizes: Vec<usize> = expected.iter().map(Vec::len).collect();
            assert_eq!(sizes, want_sizes);
        }
    }
}

/// Counts around the CPU backend's blocks of 2048 leaves: no tail, a tail of one leaf, tails that
/// do and do not reach the level above the blocks (more or fewer than 1024 leaves), several
/// blocks (on the thread pool), and a tail that ends exactly on a power of two.
#[test]
fn counts_around_cpu_blocks_match_the_reference() {
    let counts = [
        2047,
        2048,
        2049,
        2050,
        3072,
        3073,
        4095,
        4096,
        2 * 2048 + 1024,
        6 * 2048 + 1500,
        10 * 2048 + 1,
        16 * 2048 + 2047,
    ];
    let targets = targets();
    for n in counts {
        let leaves = random_leaves(n, 7 * n as u64);
        let expected = reference_levels(&leaves);
        for t in &targets {
            let root = merkle::merkle_root_with(&*t.backend, &leaves).unwrap();
            assert_eq!(root.as_bytes(), &expected.last().unwrap()[0], "{}: {n}", t.name);
            let tree = MerkleTree::build_with(&*t.backend, &leaves).unwrap();
            assert_eq!(tree.inner_nodes(), expected.concat(), "{}: tree of {n}", t.name);
        }
    }
}

/// Indices worth proving in a tree of n leaves: both ends, the neighbours of the last, the
/// middle, and a few at random.
fn indices(n: usize, rng: &mut impl Rng) -> Vec<usize> {
    let mut v = vec![0, n - 1, n / 2, n.saturating_sub(2), n.saturating_sub(3)];
    v.extend((0..8).map(|_| rng.random_range(0..n)));
    v.sort_unstable();
    v.dedup();
    v
}

/// For each level on the way up from leaf i of n, whether the path's node has a sibling there.
fn shape(mut n: u64, mut i: u64) -> Vec<bool> {
    let mut v = Vec::new();
    while n > 1 {
        v.push(i % 2 == 1 || i + 1 < n);
        i /= 2;
        n = n.div_ceil(2);
    }
    v
}

#[test]
fn proofs_verify_and_reject_on_every_backend() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(6);
    let targets = targets();
    for &n in &COUNTS[..10] {
        let leaves = random_leaves(n, 1000 + n as u64);
        let reference = MerkleTree::build_with(&*targets[0].backend, &leaves).unwrap();
        for t in &targets {
            let tree = MerkleTree::build_with(&*t.backend, &leaves).unwrap();
            let root = tree.root();
            for i in indices(n, &mut rng) {
                let proof = tree.proof(i as u64).unwrap();
                assert_eq!(proof, reference.proof(i as u64).unwrap(), "{}: proof", t.name);
                assert_eq!(proof.leaf_count(), n as u64);
                let count = n as u64;
                assert!(merkle::verify(&root, &leaves[i], i as u64, &proof, count), "{}: leaf {i} of {n}", t.name);
                // A proof survives its byte form.
                let back = Proof::from_bytes(&proof.to_bytes()).unwrap();
                assert!(merkle::verify(&root, &leaves[i], i as u64, &back, count));

                // Wrong leaf.
                let mut wrong = leaves[i];
                wrong[rng.random_range(0..32)] ^= 1 << rng.random_range(0..8);
                assert!(!merkle::verify(&root, &wrong, i as u64, &proof, count));
                if n > 1 {
                    let other = (i + 1) % n;
                    assert!(!merkle::verify(&root, &leaves[other], i as u64, &proof, count));
                }
                // Wrong index: every other index of small trees, a few of large ones.
                let wrong_indices: Vec<u64> = if n <= 9 {
                    (0..n as u64 + 2).filter(|&j| j != i as u64).collect()
                } else {
                    vec![i as u64 ^ 1, (i as u64 + 2) % n as u64, n as u64, u64::MAX]
                };
                for j in wrong_indices.into_iter().filter(|&j| j != i as u64) {
                    assert!(
                        !merkle::verify(&root, &leaves[i], j, &proof, count),
                        "{}: leaf {i} of {n} accepted at index {j}",
                        t.name
                    );
                }
                // Wrong proofs: a flipped bit in each sibling, one sibling too few or too many,
                // another leaf count, another tree's root.
                for s in 0..proof.siblings().len() {
                    let mut sib = proof.siblings().to_vec();
                    sib[s][rng.random_range(0..32)] ^= 0x80;
                    let bad = Proof::new(count, sib);
                    assert!(!merkle::verify(&root, &leaves[i], i as u64, &bad, count));
                }
                if let Some((_, fewer)) = proof.siblings().split_last() {
                    let bad = Proof::new(count, fewer.to_vec());
                    assert!(!merkle::verify(&root, &leaves[i], i as u64, &bad, count));
                }
                let mut more = proof.siblings().to_vec();
                more.push(leaves[i]);
                let bad = Proof::new(count, more);
                assert!(!merkle::verify(&root, &leaves[i], i as u64, &bad, count));
                // Another leaf count, in the proof or at the verifier: always rejected, even
                // where the shape of the path is the same (the root does not commit to the count).
                for other in [count + 1, count * 2, count - 1, 0, u64::MAX] {
                    if other == count {
                        continue;
                    }
                    let claims_other = Proof::new(other, proof.siblings().to_vec());
                    assert!(!merkle::verify(&root, &leaves[i], i as u64, &claims_other, count));
                    assert!(!merkle::verify(&root, &leaves[i], i as u64, &proof, other));
                    // What a verifier that believed the proof's count would have accepted.
                    let same_shape = other > i as u64 && shape(other, i as u64) == shape(count, i as u64);
                    assert_eq!(
                        merkle::verify(&root, &leaves[i], i as u64, &claims_other, other),
                        same_shape,
                        "{}: leaf {i} of {n} under leaf count {other}",
                        t.name
                    );
                }
                let mut other_root = *root.as_bytes();
                other_root[0] ^= 1;
                let other_root = b3accel::Hash::from_bytes(other_root);
                assert!(!merkle::verify(&other_root, &leaves[i], i as u64, &proof, count));
            }
            assert!(tree.proof(n as u64).is_err(), "{}: index out of range", t.name);
        }
    }
}

#[test]
fn zero_leaves_is_an_error_everywhere() {
    for t in targets() {
        let b = &*t.backend;
        assert!(merkle::merkle_root_with(b, &[]).is_err(), "{}", t.name);
        assert!(MerkleTree::build_with(b, &[]).is_err(), "{}", t.name);
        assert!(b.merkle(&[], None).is_err(), "{}", t.name);
        // A wrongly sized `inner` is an error too, not a panic.
        let mut inner = [[0u8; 32]; 3];
        assert!(b.merkle(&[[0u8; 32]; 3], Some(&mut inner)).is_err());
    }
    assert!(b3accel::merkle_root(Device::Cpu, &[]).is_err());
    assert!(b3accel::merkle_tree(Device::Cpu, &[]).is_err());
}

#[test]
fn one_leaf_is_its_own_root() {
    let leaf = [0x5Au8; 32];
    let leaves = [leaf];
    for t in targets() {
        let tree = MerkleTree::build_with(&*t.backend, &leaves).unwrap();
        assert_eq!(tree.root().as_bytes(), &leaf, "{}", t.name);
        assert_eq!(tree.levels().len(), 0);
        let proof = tree.proof(0).unwrap();
        assert!(proof.siblings().is_empty());
        assert!(merkle::verify(&tree.root(), &leaf, 0, &proof, 1));
        assert!(!merkle::verify(&tree.root(), &[0u8; 32], 0, &proof, 1));
        // A leaf is its own root: so is any node, for a verifier that does not fix the size.
        assert!(!merkle::verify(&tree.root(), &leaf, 0, &proof, 2));
        assert!(!merkle::verify(&tree.root(), &leaf, 0, &Proof::new(0, vec![]), 0));
    }
}

/// The absence of domain separation is documented; this pins down what it means, so that the
/// documentation stays true: an inner node passes as a leaf of a smaller tree with the same
/// root, and only the verifier's own leaf count rejects it.
#[test]
fn inner_nodes_are_not_separated_from_leaves_as_documented() {
    let leaves = random_leaves(4, 4);
    let tree = b3accel::merkle_tree(Device::Cpu, &leaves).unwrap();
    let level1 = tree.levels().next().unwrap().to_vec();
    // Leaves (p01, p23) form a two-leaf tree with the same root as the four-leaf tree.
    let forged = Proof::new(2, vec![level1[1]]);
    assert!(merkle::verify(&tree.root(), &level1[0], 0, &forged, 2));
    // A verifier that knows the tree has 4 leaves rejects it, as it is and relabelled.
    assert!(!merkle::verify(&tree.root(), &level1[0], 0, &forged, 4));
    assert!(!merkle::verify(&tree.root(), &level1[0], 0, &Proof::new(4, vec![level1[1]]), 4));
}

/// The forgery of issue 52: in the tree [A, B, C], a proof that claims a two-leaf tree
/// [p(A, B), C] made "C is leaf 1" verify. With leaves made as the docs advise (derived in
/// their own mode from records, recomputed by the verifier from the record).
#[test]
fn a_proof_claiming_another_tree_size_is_rejected() {
    const CONTEXT: &str = "b3accel tests merkle forged proof";
    let records: [&[u8]; 3] = [b"record A", b"record B", b"record C"];
    let leaves: Vec<Node> = records.iter().map(|r| blake3::derive_key(CONTEXT, r)).collect();
    let tree = b3accel::merkle_tree(Device::Cpu, &leaves).unwrap();
    let root = tree.root();
    let p_ab = parent(&leaves[0], &leaves[1]);
    assert_eq!(root.as_bytes(), &parent(&p_ab, &leaves[2]));
    let c = blake3::derive_key(CONTEXT, records[2]);
    // The forged proof, as bytes from elsewhere.
    let bytes = [&2u64.to_le_bytes()[..], &p_ab[..]].concat();
    let forged = Proof::from_bytes(&bytes).unwrap();
    assert!(!merkle::verify(&root, &c, 1, &forged, 3), "C accepted as leaf 1 of [A, B, C]");
    // Relabelled with the right count, the path has the wrong shape.
    let relabelled = Proof::new(3, vec![p_ab]);
    assert!(!merkle::verify(&root, &c, 1, &relabelled, 3));
    // Every index, every count up to 8 written into a proof of these siblings.
    for claimed in 0..8u64 {
        for index in 0..8u64 {
            for siblings in [vec![], vec![p_ab], vec![leaves[0], leaves[1]], vec![leaves[0], leaves[2]]] {
                let p = Proof::new(claimed, siblings.clone());
                let genuine = index == 2 && claimed == 3 && siblings == [p_ab];
                assert_eq!(merkle::verify(&root, &c, index, &p, 3), genuine, "claimed {claimed}, index {index}");
            }
        }
    }
    // The genuine proof still verifies.
    assert!(merkle::verify(&root, &c, 2, &tree.proof(2).unwrap(), 3));
}

/// An attacker who knows a whole small tree tries every leaf value, index and list of up to
/// three siblings drawn from the tree's own nodes (leaves and inner nodes), the proof claiming
/// the verifier's leaf count: only the genuine leaf with its genuine proof verifies.
#[test]
fn no_proof_from_the_trees_own_nodes_verifies_another_leaf() {
    for n in 1..=7usize {
        let leaves = random_leaves(n, 52 + n as u64);
        let tree = b3accel::merkle_tree(Device::Cpu, &leaves).unwrap();
        let root = tree.root();
        let nodes: Vec<Node> = leaves.iter().chain(tree.inner_nodes()).copied().collect();
        let mut lists: Vec<Vec<Node>> = vec![vec![]];
        for len in 1..=3 {
            let longer: Vec<Vec<Node>> = lists
                .iter()
                .filter(|l| l.len() == len - 1)
                .flat_map(|l| nodes.iter().map(move |x| [&l[..], &[*x][..]].concat()))
                .collect();
            lists.extend(longer);
        }
        let mut accepted = 0;
        for leaf in &nodes {
            for index in 0..n as u64 + 1 {
                for siblings in &lists {
                    if merkle::verify(&root, leaf, index, &Proof::new(n as u64, siblings.clone()), n as u64) {
                        assert_eq!(leaf, &leaves[index as usize], "n = {n}: a forged leaf at {index}");
                        assert_eq!(siblings, tree.proof(index).unwrap().siblings(), "n = {n}: index {index}");
                        accepted += 1;
                    }
                }
            }
        }
        assert_eq!(accepted, n, "n = {n}: each leaf verifies once");
    }
}

/// Message lengths for `hash_many`: around block and chunk edges, and multi-chunk messages on
/// both sides of the CPU's across-lanes limit (16 chunks).
const LENGTHS: [usize; 15] = [0, 1, 31, 63, 64, 65, 127, 1023, 1024, 1025, 2048, 3000, 16384, 16385, 40000];

/// Batch sizes around the SIMD widths (4, 8, 16 lanes) and multiples of them.
const BATCHES: [usize; 14] = [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33, 100];

fn messages(len: usize, count: usize, seed: u64) -> Vec<u8> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut data = vec![0u8; len * count];
    rng.fill(&mut data[..]);
    data
}

fn check_many(b: &dyn Backend, name: &str, len: usize, count: usize, mode: &Mode) {
    let data = messages(len, count, (len * 1000 + count) as u64);
    let expected: Vec<blake3::Hash> = (0..count)
        .map(|i| {
            let msg = &data[i * len..(i + 1) * len];
            match mode {
                Mode::Hash => blake3::hash(msg),
                Mode::Keyed(key) => blake3::keyed_hash(key, msg),
                Mode::DeriveKey(ctx) => blake3::Hash::from_bytes(blake3::derive_key(ctx, msg)),
            }
        })
        .collect();
    // The trait method, with empty messages included.
    let (key, flags) = match mode {
        Mode::Hash => (IV, 0),
        _ => unreachable!("modes go through hash_many_with"),
    };
    let mut out = vec![[0u8; 32]; count];
    b.hash_many(&data, len, &key, flags, &mut out).unwrap();
    for (i, (got, want)) in out.iter().zip(&expected).enumerate() {
        assert_eq!(got, want.as_bytes(), "{name}: message {i} of {count}, {len} bytes");
    }
    if len > 0 {
        let got = hash_many_with(b, mode, &data, len).unwrap();
        assert_eq!(got, expected, "{name}: hash_many_with, {count} x {len} bytes");
    }
}

#[test]
fn hash_many_matches_upstream_on_every_backend() {
    for t in targets() {
        for &len in &LENGTHS {
            for &count in &BATCHES {
                check_many(&*t.backend, &t.name, len, count, &Mode::Hash);
            }
        }
    }
}

#[test]
fn hash_many_large_batches_use_every_path() {
    // Large enough for the CPU backend's thread pool, with a remainder that is not a multiple of
    // any SIMD width.
    for t in cpu_targets() {
        for (len, count) in [(64, 70_001), (1024, 1_001), (100, 5_003), (2500, 301), (20_000, 21)] {
            check_many(&*t.backend, &t.name, len, count, &Mode::Hash);
        }
    }
}

#[test]
fn hash_many_in_every_mode() {
    let key = *b"whats the Elvish word for friend";
    for t in targets() {
        for mode in [Mode::Keyed(key), Mode::DeriveKey("b3accel merkle test".into())] {
            for &len in &[1usize, 64, 1000, 1025, 3000] {
                for &count in &[1usize, 16, 17] {
                    let data = messages(len, count, 77);
                    let got = hash_many_with(&*t.backend, &mode, &data, len).unwrap();
                    for (i, h) in got.iter().enumerate() {
                        let msg = &data[i * len..(i + 1) * len];
                        let want = match &mode {
                            Mode::Keyed(k) => blake3::keyed_hash(k, msg),
                            Mode::DeriveKey(c) => blake3::Hash::from_bytes(blake3::derive_key(c, msg)),
                            Mode::Hash => unreachable!(),
                        };
                        assert_eq!(*h, want, "{}: {mode:?}, {count} x {len}", t.name);
                    }
                }
            }
        }
    }
}

#[test]
fn hash_many_rejects_malformed_batches() {
    for t in targets() {
        let b = &*t.backend;
        let mut out = [[0u8; 32]; 3];
        assert!(b.hash_many(&[0u8; 10], 3, &IV, 0, &mut out).is_err(), "{}", t.name);
        assert!(b.hash_many(&[0u8; 1], 0, &IV, 0, &mut out).is_err(), "{}", t.name);
        assert!(hash_many_with(b, &Mode::Hash, &[0u8; 10], 3).is_err());
        assert!(hash_many_with(b, &Mode::Hash, &[0u8; 10], 0).is_err());
    }
    assert!(b3accel::hash_many(Device::Cpu, &[], 5).unwrap().is_empty());
}

#[test]
fn hash_each_groups_unequal_lengths() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(99);
    let lens: Vec<usize> = (0..300)
        .map(|i| match i % 4 {
            0 => 64,
            1 => rng.random_range(0..2100),
            2 => 1024,
            _ => LENGTHS[rng.random_range(0..LENGTHS.len())],
        })
        .collect();
    let inputs: Vec<Vec<u8>> = lens.iter().map(|&l| pattern(l + 3)[3..].to_vec()).collect();
    for t in targets() {
        let got = hash_each_with(&*t.backend, &Mode::Hash, &inputs).unwrap();
        assert_eq!(got.len(), inputs.len());
        for (i, (h, input)) in got.iter().zip(&inputs).enumerate() {
            assert_eq!(*h, blake3::hash(input), "{}: input {i} ({} bytes)", t.name, input.len());
        }
    }
    let none: [&[u8]; 0] = [];
    assert!(b3accel::hash_each(Device::Cpu, &none).unwrap().is_empty());
}
