//! The CPU backend: SIMD across chunks (SSE4.1, AVX2 or AVX-512, chosen at run time, or the
//! portable scalar code), and rayon across cores for large inputs only; or, where the crate has
//! no SIMD for the CPU (every architecture but x86), upstream's kernel (`upstream.rs`).
//!
//! A complete subtree is hashed in leaves (`SERIAL_LEAF_CHUNKS`, 1024 chunks, on one thread;
//! `POOL_LEAF_CHUNKS`, 64, as pool tasks): all chunk CVs of a leaf in SIMD groups, then its
//! parent levels, also in SIMD groups. Above the leaves the subtree is split in halves, on other
//! cores (`rayon::join`) under the pool. A large subtree is reduced "wide": each half hands up
//! `WIDE` CVs rather than one, so the parent levels between the leaves and its top stay whole
//! SIMD groups and only its last four levels are narrow.
//!
//! Words used in this folder and in `core::rows`:
//! - *lanes* (`lanes/`, with one vector type per instruction set in `lanes/sse41.rs`,
//!   `lanes/avx2.rs`, `lanes/avx512.rs`): one input per vector lane, each state word transposed
//!   across 4, 8 or 16 equal-length inputs; the kernel for many chunks or parents at once.
//! - *rows* (`core::rows`): one input's state as four 128-bit vectors, one per row of the 4x4
//!   state; the fastest form for one block at a time. `A2` is such a row in an AVX2 function,
//!   `Vl` one with AVX-512VL's one-instruction rotations.
//! - *several inputs' rows per vector* (`multi_rows/`): the row form on two to eight inputs at
//!   once, one input per 128-bit lane of a 256- or 512-bit vector (`MultiRow` over a
//!   `RowVector`; `A2x2` and `TwoRowsAvx2` are two inputs on AVX2, `Ymm` two on AVX-512VL,
//!   `TwoChains<V>` two vectors run as independent chains). `multi_rows/groups.rs` hashes groups
//!   of small inputs on them, `multi_rows/small_tree.rs` the top levels of a small tree.
//!
//! The files: `backend.rs` (the type and its subtree hashing), `backend_impl.rs` (the `Backend`
//! trait on it), `group_kernel.rs` (the kernel a group of inputs runs on), `threads.rs` (when to
//! use rayon's pool), `many.rs` (Merkle levels and many messages), `upstream.rs` (upstream's
//! kernel), `model.rs` (the CPU's name), `names.rs` (levels and kernels read from text),
//! `memory.rs` (prefetches and streaming copies).

mod backend;
mod backend_impl;
mod group_kernel;
mod lanes;
mod many;
mod memory;
mod model;
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
mod multi_rows;
mod names;
mod threads;
mod upstream;

pub use crate::core::platform::{Kernel, SimdLevel, CPU_LEVEL_ENV};
pub use backend::CpuBackend;
pub(crate) use lanes::as_pieces_of_large_input;
pub(crate) use memory::{copy_streaming, prefetch, store_fence};
pub use threads::on_this_thread;

/// Parent chaining values of consecutive pairs of `children` (`out[i]` the parent of
/// `children[2i]` and `children[2i + 1]`, never a root), many at a time on this CPU's widest
/// kernel: for callers above the backends that keep every parent of a tree (bao outboards).
pub(crate) fn parent_cvs(
    children: &[crate::core::compress::Cv],
    key: &[u32; 8],
    flags: u32,
    out: &mut [crate::core::compress::Cv],
) {
    static CPU: std::sync::OnceLock<CpuBackend> = std::sync::OnceLock::new();
    debug_assert_eq!(children.len(), 2 * out.len());
    CPU.get_or_init(CpuBackend::new).parent_cvs(children, key, flags, out);
}
