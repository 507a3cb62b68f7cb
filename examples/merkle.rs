//! A Merkle tree over records, with leaves that cannot be mistaken for inner nodes.
//!
//! ```text
//! cargo run --release --example merkle [-- DEVICE]
//! ```
//!
//! The tree's parents are plain `blake3(left || right)` with no domain separation (see the
//! `b3accel::merkle` docs). So the leaves here are *derived* from the records with BLAKE3's
//! `derive_key` mode and an application context: no parent computation can produce such a leaf,
//! and the verifier recomputes each leaf from its record instead of trusting a leaf value. The
//! verifier also checks the proof's leaf count against the size it was told.

use b3accel::merkle::{self, hash_each_with};
use b3accel::{backend, merkle_tree, Device, Mode};

const CONTEXT: &str = "b3accel example 2026-11-21 merkle leaf v1";

fn leaf_of(record: &[u8]) -> [u8; 32] {
    blake3::derive_key(CONTEXT, record)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let device: Device = match std::env::args().nth(1) {
        Some(d) => d.parse()?,
        None => Device::Auto,
    };
    let records: Vec<Vec<u8>> =
        (0..100_000u32).map(|i| format!("record {i}: {}", "x".repeat(i as usize % 300)).into_bytes()).collect();

    // Leaves: every record hashed in derive_key mode, batched by length on the device.
    let be = backend(device)?;
    let leaves: Vec<[u8; 32]> =
        hash_each_with(&*be, &Mode::DeriveKey(CONTEXT.into()), &records)?.into_iter().map(|h| *h.as_bytes()).collect();
    let tree = merkle_tree(device, &leaves)?;
    let root = tree.root();
    println!("{} records on {}: root {root}, {} levels", records.len(), be.info().name, tree.levels().len());

    // The prover sends (record, index, proof); the verifier knows the root and the size.
    let index = 41_999u64;
    let proof = tree.proof(index)?;
    let (size, record) = (records.len() as u64, &records[index as usize]);
    let ok = merkle::verify(&root, &leaf_of(record), index, &proof, size);
    println!(
        "record {index} ({} siblings, {} bytes of proof): {}",
        proof.siblings().len(),
        proof.to_bytes().len(),
        if ok { "verified" } else { "REJECTED" }
    );
    assert!(ok);
    // A tampered record is rejected.
    assert!(!merkle::verify(&root, &leaf_of(b"record 41999: forged"), index, &proof, size));
    // So is the same proof for a tree of another size.
    assert!(!merkle::verify(&root, &leaf_of(record), index, &proof, size + 1));
    Ok(())
}
