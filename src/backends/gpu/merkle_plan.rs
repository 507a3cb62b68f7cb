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
    }
}
