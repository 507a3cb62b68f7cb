//! One input hashed in pieces, anywhere and in any order, then merged into its BLAKE3 hash: what
//! several GPUs or several machines do together (`b3accel subtree` and `b3accel merge` on the
//! command line).
//!
//! ```text
//! cargo run --release --example subtrees
//! ```
//!
//! A piece starts at a multiple of 1024 bytes and is no longer than the largest power of two that
//! divides its offset, so pieces of one power-of-two size (the last one shorter) always fit.

use b3accel::hazmat::{merge_pieces_root, HasherExt, Mode, Piece};
use b3accel::{Device, Hasher};

fn main() -> Result<(), b3accel::Error> {
    let data: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
    let piece_len = 128 * 1024;

    // Each piece could be hashed on another device or machine; only its chaining value travels.
    let mut pieces = Vec::new();
    for offset in (0..data.len()).step_by(piece_len) {
        let bytes = &data[offset..data.len().min(offset + piece_len)];
        let mut hasher = Hasher::new_on(Device::Cpu)?;
        hasher.set_input_offset(offset as u64)?.update(bytes)?;
        pieces.push(Piece { offset: offset as u64, len: bytes.len() as u64, cv: hasher.finalize_non_root()? });
    }

    let merged = merge_pieces_root(&pieces, Mode::Hash)?;
    assert_eq!(merged, b3accel::hash_on(Device::Cpu, &data)?);
    println!("{merged}  ({} pieces)", pieces.len());
    Ok(())
}
