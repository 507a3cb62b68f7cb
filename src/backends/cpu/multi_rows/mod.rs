//! The row form on several inputs at once: one input's rows per 128-bit lane of a 256- or 512-bit
//! vector (AVX-512F and VL, or AVX2), the rounds of `core::rows` on all of them together. Two
//! uses, one file each: hashing groups of two to eight small inputs (`groups.rs`), and the top
//! levels of a small input's tree, kept in registers from level to level (`small_tree.rs`).
//!
//! The rows themselves are in `vector.rs` (the vector trait, `MultiRow`, `TwoChains`) and
//! `two_inputs.rs` (two inputs per 256-bit vector); `group.rs` compresses a block of each input
//! on them.

mod group;
pub(super) mod groups;
pub(super) mod small_tree;
#[cfg(test)]
mod tests;
mod two_inputs;
mod vector;

use group::{compress_multi, key_rows, multi_cvs, quarters, row3, MultiRowGroup, FLAGS};
use two_inputs::TwoRowsAvx2;
use vector::{RowVector, TwoChains, MAX_N};
