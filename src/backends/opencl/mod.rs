//! The OpenCL backend (cargo feature `opencl`): BLAKE3's bulk work in OpenCL C kernels
//! (`shaders/blake3.cl`) on every OpenCL platform's devices, through the `ocl` crate.
//!
//! - One work-item per chunk; each work-group reduces its chunks' chaining values to the CV of one
//!   subtree in local memory, so an input takes a few dispatches (three for 1 GiB), not one per
//!   tree level. A ragged last work-group produces the CV of each complete subtree in the binary
//!   decomposition of its chunk count, so every chunk count takes the same few dispatches.
//! - Host inputs of any size, larger than the device's memory too, stream through two fixed
//!   device buffers in power-of-two segments, a three-stage pipeline: while the CPU copies
//!   segment k+1 into pinned, mapped staging memory, the DMA engine uploads segment k (on a
//!   queue of its own) and the device hashes segment k-1. The segments' CVs merge by the crate's
//!   one tree code. A device short of memory gets smaller segments, down to 64 KiB, then
//!   [`Error::OutOfMemory`](crate::Error::OutOfMemory).
//! - Data already on the device ([`Resident`](crate::Resident) on `ocl::Buffer<u8>`) is hashed
//!   where it lies, on the backend's own queue: the chunk kernel also copies the last chunk (at
//!   most 1024 bytes) next to the subtree CVs, and one read into pinned host memory brings both
//!   back.
//! - Merkle trees of 32-byte leaves ([`Backend::merkle`](crate::Backend::merkle),
//!   [`Resident::merkle_root`](crate::Resident::merkle_root)): a few dispatches, each reducing
//!   several levels inside its work-groups in local memory; inner levels leave the device only
//!   when asked for. Batches of equal-length messages ([`Backend::hash_many`](crate::Backend::hash_many),
//!   [`Resident::hash_many`](crate::Resident::hash_many)): one work-item per message of up to a
//!   chunk, one per chunk of longer ones and then one per message to merge its chunks.
//!
//! Profiling events are made only for the [`Resident`](crate::Resident) calls, which report their
//! times: each costs the driver time.
//! Speeds: docs/performance.md.
//!
//! ```no_run
//! use b3accel::opencl::OpenClBackend;
//! use b3accel::{xof_reader_with, Mode};
//! let gpu = OpenClBackend::open(0)?;
//! let data = vec![7u8; 100 << 20];
//! let mut hash = [0u8; 32];
//! xof_reader_with(&gpu, &Mode::Hash, &data)?.fill(&mut hash);
//! assert_eq!(hash, *blake3::hash(&data).as_bytes());
//! # Ok::<(), b3accel::Error>(())
//! ```

mod backend;
mod bao;
mod binaries;
mod context;
mod device;
mod errors;
mod many;
mod merkle;
mod options;
mod profile;
mod program;
mod resident;
mod staging;
mod stream;
mod worker;

pub use backend::OpenClBackend;
pub use options::OpenClOptions;

use crate::tree::{DeviceInfo, Result};

/// Every OpenCL device of every platform, in order: the N-th is `Device::OpenCl(N)`.
///
/// An error ([`Error::Unavailable`](crate::Error::Unavailable)) says what is missing when there
/// is no OpenCL platform at all.
///
/// ```
/// match b3accel::opencl::enumerate() {
///     Ok(list) => list.iter().for_each(|d| println!("{}: {} ({})", d.device, d.name, d.kind)),
///     Err(e) => println!("no OpenCL: {e}"),
/// }
/// ```
pub fn enumerate() -> Result<Vec<DeviceInfo>> {
    Ok(context::list()?.into_iter().enumerate().map(|(i, (p, d))| context::describe(i, p, d)).collect())
}
