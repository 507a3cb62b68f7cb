//! Layer 1, core: BLAKE3's constants and compression function (portable, and the single-block
//! SIMD rows), with the instruction set chosen once per process, and the cache files' home and
//! atomic writes. It imports nothing else of the crate; every layer above builds on it.

pub(crate) mod cache;
pub(crate) mod compress;
pub(crate) mod constants;
#[cfg(test)]
pub(crate) mod expect;
pub(crate) mod platform;
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
pub(crate) mod rows;
