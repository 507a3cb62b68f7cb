//! The single-block compression with the state's four rows in four 128-bit vectors (x86): the
//! form that is fastest for one block at a time (the last chunk, parents merged by the tree, XOF
//! blocks and every input of one chunk or less), where the lane kernels have nothing to run side
//! by side. The quarter-round is `compress::g`, the same code the lane kernels use; only the
//! diagonal shuffles are particular to this form. It is latency-bound, so AVX-512VL's
//! one-instruction rotations are worth a second instantiation. The CPU backend's forms on two
//! and four inputs (`MultiRow`, in `backends/cpu/multi_rows/`) are the same rounds on 256- and
//! 512-bit rows: they build on [`Row`] and [`all_rounds`] here.
//!
//! The files: `row.rs` (the row types and message moves), `wide.rs` (two inputs' rows in one
//! 256-bit vector), `one_block.rs` (the compressions), `two_inputs.rs` (a chunk and a partial
//! one side by side).

mod one_block;
mod row;
#[cfg(test)]
mod tests;
mod two_inputs;
mod wide;

pub(crate) use one_block::{all_rounds, avx2, avx512, sse41};
pub(crate) use row::{
    delegate_add_xor, delegate_rotations, delegate_word, first_msg, opaque128, opaque256, opaque512, InLane, Row, Vl,
    A2,
};
pub(crate) use two_inputs::{chunk_and_tail_avx2, chunk_and_tail_avx512};
pub(crate) use wide::{blend_256, in_lane_256, Ymm};
