//! The upstream kernel (`Kernel::Upstream`): runs of full chunks hashed
//! by upstream `blake3` through its `hazmat` API, on the SIMD upstream has for this CPU (NEON on
//! aarch64, where this crate has none of its own; SSE2 to AVX-512 on x86).
//!
//! `hazmat` hashes a complete subtree at a given offset (`set_input_offset`, `update`,
//! `finalize_non_root`): exactly what `Backend::chunk_subtrees` returns,
//! one subtree at a time. Upstream's `update` hashes the subtree's chunks and parents in its own
//! SIMD groups, and `update_rayon` spreads a large one over the thread pool as its
//! `Hasher::update_rayon` does for a whole input.

use super::threads::use_threads;
use crate::core::compress::{words_to_cv, Cv};
use crate::core::constants::{flags, CHUNK_LEN, IV};
use crate::tree::subtree_sizes;
use blake3::hazmat::HasherExt;
use rayon::prelude::*;

/// Upstream's hasher for the mode that `key` and `mode_flags` select, where `hazmat` can express
/// it: the plain hash (the IV, no flags), the keyed hash, or a derived key's material (keyed by
/// the hashed context, as `hazmat::hash_derive_key_context` gives it). Other combinations, which
/// none of BLAKE3's modes uses and only a direct caller of `Backend::chunk_subtrees` can ask for,
/// get `None`.
fn hasher(key: &[u32; 8], mode_flags: u32) -> Option<blake3::Hasher> {
    let key_bytes = words_to_cv(key);
    match mode_flags {
        0 if *key == IV => Some(blake3::Hasher::new()),
        flags::KEYED_HASH => Some(blake3::Hasher::new_keyed(&key_bytes)),
        flags::DERIVE_KEY_MATERIAL => Some(blake3::Hasher::new_from_context_key(&key_bytes)),
        _ => None,
    }
}

/// The CVs of the subtrees that `input` (full chunks, the first with index `first_chunk`) forms,
/// none larger than `max` chunks, into `out`, as `Backend::chunk_subtrees_capped` returns them
/// (its arguments already checked). Returns `false`, writing nothing, where upstream cannot do
/// it: a mode that [`hasher`] cannot express, or chunks at or past 2^64 bytes into the input
/// (upstream counts offsets in bytes); the caller then hashes them itself.
pub(super) fn chunk_subtrees(
    input: &[u8],
    first_chunk: u64,
    max: u64,
    key: &[u32; 8],
    mode_flags: u32,
    out: &mut [Cv],
) -> bool {
    let n = (input.len() / CHUNK_LEN) as u64;
    let Some(base) = hasher(key, mode_flags) else {
        return false;
    };
    if first_chunk.checked_add(n).and_then(|end| end.checked_mul(CHUNK_LEN as u64)).is_none() {
        return false;
    }
    // One complete subtree `offset` chunks into the run.
    let subtree = |offset: u64, bytes: &[u8]| -> Cv {
        let mut h = base.clone();
        h.set_input_offset((first_chunk + offset) * CHUNK_LEN as u64);
        if use_threads(bytes.len()) {
            h.update_rayon(bytes);
        } else {
            h.update(bytes);
        }
        h.finalize_non_root()
    };
    // The subtrees of `max` chunks (there are many only when a caller caps them small): side by
    // side on the pool when there is work enough for it.
    let whole = (n / max) as usize;
    let mut offset = 0;
    if whole > 0 {
        // `max <= n` here, so this is at most the input's length.
        let len = max as usize * CHUNK_LEN;
        let head = &input[..whole * len];
        let one = |(i, (bytes, cv)): (usize, (&[u8], &mut Cv))| *cv = subtree(i as u64 * max, bytes);
        if whole > 1 && use_threads(head.len()) {
            head.par_chunks_exact(len).zip(out[..whole].par_iter_mut()).enumerate().for_each(one);
        } else {
            head.chunks_exact(len).zip(out[..whole].iter_mut()).enumerate().for_each(one);
        }
        offset = whole as u64 * max;
    }
    // The rest: one subtree per set bit of `n % max`, largest first, each on the pool itself
    // when large.
    for (size, cv) in subtree_sizes(n % max, max).zip(&mut out[whole..]) {
        let start = offset as usize * CHUNK_LEN;
        *cv = subtree(offset, &input[start..start + size as usize * CHUNK_LEN]);
        offset += size;
    }
    debug_assert_eq!(offset, n);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::cpu::{CpuBackend, Kernel, SimdLevel};
    use crate::tree::{subtree_count, Backend, Domain, MAX_SUBTREE};

    fn data(chunks: usize) -> Vec<u8> {
        (0..chunks * CHUNK_LEN).map(|i| (i % 251) as u8).collect()
    }

    /// The crate's own portable kernel's subtrees, the reference here (the differential tests
    /// hold it to upstream).
    fn portable(input: &[u8], first: u64, max: u64, key: &[u32; 8], flags: u32) -> Vec<Cv> {
        let mut out = vec![[0u8; 32]; subtree_count((input.len() / CHUNK_LEN) as u64, max)];
        let cpu = CpuBackend::with_level(SimdLevel::Portable).unwrap();
        cpu.chunk_subtrees_capped(input, first, max, key, flags, &mut out).unwrap();
        out
    }

    #[test]
    fn the_three_modes_run_on_upstream() {
        let input = data(37);
        let modes = [Domain::HASH, Domain::keyed(&[7; 32]), Domain::derive_key("b3accel upstream kernel test")];
        // Uncapped (32 + 4 + 1 chunks), and capped at 4 (nine subtrees of 4, then 1).
        for (first, max) in [(0, MAX_SUBTREE), (64, MAX_SUBTREE), (0, 4), (1 << 40, 4)] {
            for d in modes {
                let mut out = vec![[0u8; 32]; subtree_count(37, max)];
                assert!(chunk_subtrees(&input, first, max, &d.key, d.flags, &mut out), "{d:?}");
                assert_eq!(out, portable(&input, first, max, &d.key, d.flags), "{d:?} first {first} max {max}");
            }
        }
    }

    #[test]
    fn what_upstream_cannot_express_falls_back_to_the_crates_code() {
        let input = data(5);
        let mut out = vec![[0u8; 32]; 2];
        // A key with the plain hash's flags, and the flags of a derive-key context.
        let odd = [([1u32; 8], 0), (IV, flags::DERIVE_KEY_CONTEXT)];
        for (key, f) in odd {
            assert!(!chunk_subtrees(&input, 0, MAX_SUBTREE, &key, f, &mut out));
        }
        // Chunks that end past 2^64 bytes into the input.
        assert!(!chunk_subtrees(&input[..CHUNK_LEN], 1 << 54, MAX_SUBTREE, &IV, 0, &mut out[..1]));
        // Through the backend those still hash, on the crate's own code.
        let upstream = CpuBackend::with_kernel(Kernel::Upstream).unwrap();
        for (key, f) in odd {
            upstream.chunk_subtrees(&input, 0, &key, f, &mut out).unwrap();
            assert_eq!(out, portable(&input, 0, MAX_SUBTREE, &key, f));
        }
        upstream.chunk_subtrees(&input[..CHUNK_LEN], 1 << 54, &IV, 0, &mut out[..1]).unwrap();
        assert_eq!(out[..1], portable(&input[..CHUNK_LEN], 1 << 54, MAX_SUBTREE, &IV, 0));
    }
}
