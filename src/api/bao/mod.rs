//! Verified streaming in the formats of the `bao` and `bao-tree` crates: outboards, combined
//! encodings and slices of BLAKE3's tree, and decoders that release no byte before it verifies.
//!
//! BLAKE3's tree is what lets a receiver check every piece of a download against the root hash
//! as it arrives, and fetch and check any byte range alone. An outboard keeps the tree's parent
//! nodes (two children's chaining values each) apart from the content; a combined encoding puts
//! them between the content's pieces, in pre-order; a slice is the part of an encoding that proves
//! one byte range. The leaves are chunk groups of 2^`group_log` chunks: group log 0 (1 KiB) is
//! the `bao` crate's format, 4 (16 KiB) iroh's; parents in pre-order ([`Order::Pre`], bao and
//! bao-tree's `PreOrderOutboard`) or post-order ([`Order::Post`], bao-tree's
//! `PostOrderOutboard`).
//!
//! Computing an outboard is hashing with every parent kept: one parallel walk over the tree hashes
//! the chunk groups (on the CPU piece by piece; a GPU, any [`Backend`](crate::Backend), in one
//! bulk call first) and writes each parent in place. Decoding checks whole subtrees the same way
//! before it releases them. Content already in GPU memory gets its outboard there, parents
//! included, through `Resident::bao_outboard` (cargo features `opencl` and `wgpu`).
//!
//! ```
//! use b3accel::bao::{decode, decode_slice, encode_on, slice};
//! use b3accel::Device;
//! let data = vec![0x5a; 100_000];
//! let (encoded, hash) = encode_on(Device::Cpu, &data, 0)?;
//! assert_eq!(hash, blake3::hash(&data));
//! let mut out = Vec::new();
//! decode(&encoded[..], &hash, 0, &mut out)?;
//! assert_eq!(out, data);
//! // 2 KiB from byte 50 000, with the parents that prove them.
//! let part = slice(&encoded, 0, 50_000, 2048)?;
//! let mut out = Vec::new();
//! decode_slice(&part[..], &hash, 0, 50_000, 2048, &mut out)?;
//! assert_eq!(out, &data[50_000..52_048]);
//! # Ok::<(), b3accel::bao::Error>(())
//! ```
//!
//! Byte for byte: [`encode_on`] and [`Outboard::to_bytes`] in pre-order at group log 0 are bao's
//! `encode` and `outboard`; [`Outboard::parents`] is bao-tree's `PreOrderOutboard::data` or
//! `PostOrderOutboard::data`; [`slice`] is bao's `SliceExtractor` at group log 0 and, at larger
//! groups, the size followed by bao-tree's `encode_ranges_validated` of the chunks holding the
//! range.

mod decode;
mod encode;
mod error;
mod layout;
mod slice;
mod walk;

pub use decode::{decode, decode_into, decode_outboard, decode_slice};
pub use encode::{encode_on, encode_with, outboard_into, outboard_on, outboard_with, Outboard};
pub use error::{Block, Error};
pub use layout::{Order, Tree, HEADER_LEN, MAX_GROUP_LOG, PARENT_LEN};
pub use slice::{slice, slice_outboard};
