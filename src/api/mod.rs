//! Layer 5, the public API's types and functions beyond the one-shot calls in `lib.rs`: the
//! incremental [`Hasher`](hasher::Hasher), files and readers, BLAKE3's tree as a tool (`hazmat`)
//! the Merkle API and verified streaming (`bao`).

pub mod bao;
mod blocks;
pub mod file;
pub(crate) mod hasher;
pub mod hazmat;
mod mapped;
pub mod merkle;
mod storage;
mod truncated;
