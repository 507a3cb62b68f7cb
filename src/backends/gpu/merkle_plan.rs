//! How a GPU reduces a Merkle tree: passes of several levels each (each pass one or a few
//! dispatches whose workgroups reduce their nodes in local memory), and where each pass's levels
//! go among the inner nodes (the layout of `merkle::level_sizes`).

use crate::tree::merkle::level_sizes;

/// One pass of a Merkle reduction: `levels` levels from `count` nodes to `out` nodes. With the
/// inner nodes kept, the first level this pass makes starts at node `inner_at` of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MerklePass {
    pub levels: u32,
    pub count: u64,
    pub out: u64,
    pub inner_at: u64,
}

/// A level of at least this many nodes is reduced by the backend's bulk `levels` per dispatch
/// (every level of a group keeps whole SIMD units at work); smaller ones as far as a group goes,
/// where one dispatch less saves more than the idle invocations of the group's last levels cost.
///
/// For example, 2^25 leaves with 4 bulk levels are 4 dispatches this way (2^25, 2^21,
/// 2^17, 2^8 nodes) against 7 with 4 levels throughout.
pub(crate) const LARGE_LEVEL: u64 = 1 << 18;

/// Levels for a pass that starts from `count` nodes: `bulk` while the level is large, else
/// `group_span` (everything one workgroup holds; see [`LARGE_LEVEL`]).
pub(crate) fn levels_by_size(count: u64, bulk: u32, group_span: u32) -> u32 {
    if count >= LARGE_LEVEL {
        bulk
    } else {
        group_span
    }
}

/// The passes that reduce `n >= 1` nodes to one: `levels_for(count)` levels (at least one) for a
/// pass that starts from `count` nodes, but never more than are left to the root. A single node
/// still takes one pass, which carries it through as the root.
pub(crate) fn merkle_passes(n: u64, mut levels_for: impl FnMut(u64) -> u32) -> Vec<MerklePass> {
    assert!(n >= 1, "a Merkle tree needs at least one leaf");
    let mut passes = Vec::new();
    let mut count = n;
    let mut made = 0u64;
    loop {
        // Levels left to the root: ceil(log2(count)), and one for a lone node.
        let left = (u64::BITS - (count - 1).leading_zeros()).max(1);
        let levels = levels_for(count).clamp(1, left);
        let out = count.div_ceil(1 << levels);
        passes.push(MerklePass { levels, count, out, inner_at: made });
        made += level_sizes(count as usize).take(levels as usize).sum::<usize>() as u64;
        count = out;
        if count == 1 {
            return passes;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_cover_every_level_and_every_inner_node_once() {
        for n in [1u64, 2, 3, 5, 511, 512, 513, 1 << 20, (1 << 25) + 7] {
            for span in [1, 3, 4, 9] {
                let passes = merkle_passes(n, |_| span);
                let mut count = n;
                let mut levels = 0;
                for p in &passes {
                    assert_eq!(p.count, count);
                    assert_eq!(p.inner_at, level_sizes(n as usize).take(levels as usize).sum::<usize>() as u64);
                    levels += p.levels;
                    count = p.out;
                }
                assert_eq!(count, 1);
                let depth = level_sizes(n as usize).count() as u32;
                assert_eq!(levels, depth.max(1), "n = {n}");
                assert!(passes.len() as u64 <= n.max(2).ilog2().div_ceil(span) as u64 + 1);
            }
        }
        assert_eq!(merkle_passes(1 << 25, |_| 9).len(), 3);
        assert_eq!(merkle_passes(1 << 25, |_| 4).len(), 7);
        // Levels chosen by the pass's size: 3 while large, then as many as a group holds.
        let p = merkle_passes(1 << 25, |c| if c >= 1 << 18 { 3 } else { 8 });
        assert_eq!(p.iter().map(|p| p.levels).collect::<Vec<_>>(), [3, 3, 3, 8, 8]);
        let p = merkle_passes(1 << 25, |c| levels_by_size(c, 4, 9));
        assert_eq!(p.iter().map(|p| p.count).collect::<Vec<_>>(), [1 << 25, 1 << 21, 1 << 17, 1 << 8]);
    }
}
