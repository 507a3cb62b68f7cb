//! Property tests (fuzzing on stable Rust) of the batch APIs on every backend: Merkle roots, whole
//! trees and their proofs for random leaf counts against the tree's definition over upstream
//! `blake3`; `hash_many` and `hash_each` for random message lengths, counts and modes against
//! upstream, message by message. `B3ACCEL_FUZZ_SECONDS` runs them for longer.

mod common;

use b3accel::merkle::{hash_each_with, hash_many_with, verify};
use b3accel::{MerkleTree, Mode};
use common::{fuzz, merkle_levels, upstream_xof};
use proptest::prelude::*;

fn upstream_hash(mode: &Mode, msg: &[u8]) -> blake3::Hash {
    blake3::Hash::from_bytes(upstream_xof(mode, msg, 0, 32).try_into().unwrap())
}

#[test]
fn merkle_roots_trees_and_proofs_match_the_definition() {
    let targets = common::targets();
    let case = (fuzz::awkward_len(20_000).prop_map(|n| n.max(1)), any::<u64>(), 0..targets.len(), any::<u64>());
    fuzz::run("merkle", 64, case, |(n, seed, b, pick)| {
        let t = &targets[b];
        let bytes = fuzz::bytes(32 * n, seed);
        let leaves: Vec<[u8; 32]> = bytes.chunks_exact(32).map(|c| c.try_into().unwrap()).collect();
        let levels = merkle_levels(&leaves);
        let want_root = levels.last().unwrap()[0];
        let root = b3accel::merkle::merkle_root_with(&*t.backend, &leaves)
            .map_err(|e| TestCaseError::fail(format!("{}: {e}", t.name)))?;
        prop_assert_eq!(*root.as_bytes(), want_root, "{}: root of {} leaves", t.name, n);
        let tree = MerkleTree::build_with(&*t.backend, &leaves)
            .map_err(|e| TestCaseError::fail(format!("{}: {e}", t.name)))?;
        prop_assert_eq!(*tree.root().as_bytes(), want_root);
        // Stored inner nodes: each level's hashed pairs (a carried node is not stored again).
        let inner: Vec<[u8; 32]> = levels.windows(2).flat_map(|w| w[1][..w[0].len() / 2].iter().copied()).collect();
        prop_assert!(tree.inner_nodes() == &inner[..], "{}: inner nodes of {} leaves", t.name, n);
        let index = pick % n as u64;
        let proof = tree.proof(index).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(verify(&tree.root(), &leaves[index as usize], index, &proof, n as u64));
        let mut wrong = leaves[index as usize];
        wrong[(pick % 32) as usize] ^= 1;
        prop_assert!(!verify(&tree.root(), &wrong, index, &proof, n as u64), "a changed leaf verifies");
        prop_assert!(!verify(&tree.root(), &leaves[index as usize], index, &proof, n as u64 + 1), "another size");
        Ok(())
    });
}

#[test]
fn hash_many_and_hash_each_match_upstream() {
    let targets = common::targets();
    let case = (
        fuzz::awkward_len(5000).prop_map(|l| l.max(1)),
        0usize..150,
        any::<u64>(),
        0u8..3,
        0..targets.len(),
        prop::collection::vec(fuzz::awkward_len(5000), 0..40),
    );
    fuzz::run("hash_many", 64, case, |(msg_len, count, seed, m, b, each_lens)| {
        let t = &targets[b];
        let mode = fuzz::mode(m);
        let data = fuzz::bytes(msg_len * count, seed);
        let got = hash_many_with(&*t.backend, &mode, &data, msg_len)
            .map_err(|e| TestCaseError::fail(format!("{}: {e}", t.name)))?;
        prop_assert_eq!(got.len(), count);
        for (i, (h, msg)) in got.iter().zip(data.chunks(msg_len)).enumerate() {
            prop_assert_eq!(
                *h,
                upstream_hash(&mode, msg),
                "{}: message {} of {} x {} bytes",
                t.name,
                i,
                count,
                msg_len
            );
        }
        // Messages of mixed lengths, 0 included.
        let all = fuzz::bytes(each_lens.iter().sum(), seed ^ 1);
        let mut at = 0;
        let inputs: Vec<&[u8]> = each_lens
            .iter()
            .map(|&l| {
                at += l;
                &all[at - l..at]
            })
            .collect();
        let got =
            hash_each_with(&*t.backend, &mode, &inputs).map_err(|e| TestCaseError::fail(format!("{}: {e}", t.name)))?;
        for (h, msg) in got.iter().zip(&inputs) {
            prop_assert_eq!(*h, upstream_hash(&mode, msg), "{}: hash_each, {} bytes", t.name, msg.len());
        }
        Ok(())
    });
}
