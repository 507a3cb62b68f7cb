// The layout of what both GPU kernels hand back to their host code, with no dependencies: the
// crate's `backends::gpu::layout` module, and included by `build.rs`, which writes these numbers
// into the OpenCL and WGSL preludes so that kernels and host code cannot disagree.

/// Slots for the chaining values of a dispatch sequence's complete subtrees ("pieces"): one per
/// possible set bit of a run's chunk count. After the passes over `n` chunks, slot `b` holds the
/// CV of the subtree of 2^b chunks for each set bit `b` of `n`.
pub const PIECE_SLOTS: usize = 64;
/// Bytes of the pieces (32 per slot).
pub const PIECES_BYTES: usize = PIECE_SLOTS * 32;
/// Where the OpenCL chunk kernel leaves an input's last chunk (at most 1024 bytes), in bytes from
/// the start of the pieces buffer: right after the pieces, so that one read brings both back.
#[cfg_attr(not(feature = "opencl"), allow(dead_code))]
pub const TAIL_AT: usize = PIECES_BYTES;
