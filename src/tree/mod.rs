//! Layer 2, tree: BLAKE3's tree and everything every backend shares above the compression
//! function: the chaining-value stack and the partial last chunk, subtrees at any offset and
//! their merges (the public `hazmat` API's semantics), the modes, the output and its XOF stream,
//! Merkle level math, the [`Backend`] trait that is the seam to the devices, the error type and
//! the device identity types. It imports only from `core`.

mod backend;
pub(crate) mod bao_shape;
mod bulk;
mod context;
mod device;
mod error;
pub(crate) mod merkle;
mod mode;
mod output;
pub(crate) mod stack;
pub(crate) mod subtree;

#[cfg(feature = "wgpu")]
pub(crate) use backend::timed;
pub(crate) use backend::{check_blocks_args, check_subtree_args, check_subtree_top_args};
pub use backend::{Backend, Timed, Timings};
pub use bulk::subtree_count;
pub(crate) use bulk::{subtree_sizes, MAX_SUBTREE};
pub use device::{BackendId, BackendKind, Device, DeviceInfo, DeviceKind, FeaturePath};
pub use error::{Error, Result};
pub(crate) use mode::Domain;
pub use mode::Mode;
pub(crate) use output::Output;
pub use output::OutputReader;
pub(crate) use stack::{
    chunk_output, hash_all, hash_small, merge_segments, root_from_chunk_cvs, root_hash_all, subtree_node,
    top_by_subtrees, CvStack,
};
#[cfg(any(feature = "opencl", feature = "wgpu"))]
pub(crate) use stack::{hash_resident, last_chunk_len};
pub(crate) use subtree::{check_fits, check_input_offset};
pub use subtree::{
    check_subtree, hash_derive_key_context, left_subtree_len, max_subtree_len, merge_pieces_root,
    merge_pieces_root_xof, merge_subtrees_non_root, merge_subtrees_root, merge_subtrees_root_xof, ChainingValue,
    ContextKey, Mode as TreeMode, Piece,
};
