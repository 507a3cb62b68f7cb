//! How a chunk pass spreads a small input over more work-groups: one work-item (invocation)
//! hashes a whole chunk, so 1024 chunks in groups of 256 keep 4 compute units busy while a
//! large GPU's other hundred or more idle. Both GPU backends' chunk kernels take a group size of up to their
//! compiled one, and ask this module for it.

/// Fewest work-groups a chunk pass is spread over where its input allows.
pub(crate) const MIN_CHUNK_GROUPS: u64 = 128;
/// Fewest chunks one work-group takes: one SIMD group (an NVIDIA warp).
pub(crate) const MIN_GROUP_CHUNKS: u64 = 32;

/// How many times fewer chunks than its compiled size `wg` (a power of two) each work-group of
/// the chunk pass over `n` chunks takes, as a shift: 0 for large inputs; for small ones, enough
/// to spread them over at least MIN_CHUNK_GROUPS groups, never below MIN_GROUP_CHUNKS chunks
/// each (nor below `wg` where that is smaller).
///
/// Groups of at least 32 chunks spread small inputs for about a fifth less pass time at 1-16 MiB;
/// smaller groups gain nothing (docs/performance.md).
pub(crate) fn chunk_group_shift(n: u64, wg: u64) -> u32 {
    let mut shift = 0;
    while (wg >> shift) > MIN_GROUP_CHUNKS && n.div_ceil(wg >> shift) < MIN_CHUNK_GROUPS {
        shift += 1;
    }
    shift
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_chunk_passes_spread_over_more_groups() {
        let wg = 256;
        // 1 MiB: 4 groups of 256 become 32 of 32.
        assert_eq!(wg >> chunk_group_shift(1024, wg), 32);
        // Large inputs keep whole groups.
        assert_eq!(chunk_group_shift(MIN_CHUNK_GROUPS * wg, wg), 0);
        assert_eq!(chunk_group_shift(1 << 20, wg), 0);
        // A compiled size at or under the floor is kept.
        assert_eq!(chunk_group_shift(1024, 16), 0);
        for n in [257, 300, 1000, 4096, 20_000, 32_767, 32_768] {
            let group = wg >> chunk_group_shift(n, wg);
            assert!(group >= MIN_GROUP_CHUNKS, "n = {n}");
            // As small as needed for MIN_CHUNK_GROUPS groups, and no smaller.
            assert!(n.div_ceil(group) >= MIN_CHUNK_GROUPS || group == MIN_GROUP_CHUNKS, "n = {n}");
            assert!(group == wg || n.div_ceil(2 * group) < MIN_CHUNK_GROUPS, "n = {n}");
        }
    }
}
