//! Layer 5, the public API's types and functions beyond the one-shot calls in `lib.rs`: the
//! incremental [`Hasher`](hasher::Hasher) and the Merkle API.

pub(crate) mod hasher;
pub mod merkle;
