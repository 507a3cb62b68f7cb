//! What both GPU backends' resident bao outboards share: the checks, how a range's chunk groups
//! are cut into capped passes and groups hashed alone, and the root from the root's pair.
//!
//! The passes: the groups' chaining values into a device buffer, the Merkle levels over them
//! with BLAKE3's parent flags keeping every inner node, and `bao_place`, which writes each
//! parent's children at its outboard index (`tree::bao_shape`).

use super::resident::OutboardDest;
use crate::tree::bao_shape::{children, level_start, Kept, Tree};
use crate::tree::{Error, Result};

/// The bao tree of a resident range of `len` bytes in groups of 2^`log` chunks, checked as
/// `bao::Tree::new` checks it.
pub(crate) fn tree(len: u64, log: u8) -> Result<Tree> {
    Tree::checked(len, log).map_err(|e| Error::InvalidInput(format!("bao outboard: {e}")))
}

/// Checks `out` against the outboard's length: a host slice of exactly it, a device buffer of
/// `device_len` bytes at least it.
pub(crate) fn check_dest<B>(tree: &Tree, out: &OutboardDest<'_, B>, device_len: impl Fn(&B) -> u64) -> Result<()> {
    let want = tree.outboard_len();
    let (have, ok) = match out {
        OutboardDest::Host(h) => (h.len() as u64, h.len() as u64 == want),
        OutboardDest::Device(b) => (device_len(b), device_len(b) >= want),
    };
    if ok {
        return Ok(());
    }
    Err(Error::InvalidInput(format!(
        "bao outboard: {} groups have {want} bytes of parents, but the destination has {have}",
        tree.groups()
    )))
}

/// How the groups' chaining values are computed, where passes take at most `max_run_chunks`
/// chunks: runs of two or more full groups in one capped pass each, and every other group (a
/// partial last one, a full one alone, one larger than a run) alone.
pub(crate) fn runs(tree: &Tree, max_run_chunks: u64) -> Vec<GroupRun> {
    let group_len = tree.group_len();
    let full = tree.size() / group_len;
    let per_run = max_run_chunks >> tree.group_log();
    let mut runs = Vec::new();
    let mut first = 0;
    while first < full {
        let groups = per_run.min(full - first);
        if groups >= 2 {
            runs.push(GroupRun::Capped { first, groups });
            first += groups;
        } else {
            runs.push(GroupRun::Alone { index: first, len: group_len });
            first += 1;
        }
    }
    if full < tree.groups() {
        runs.push(GroupRun::Alone { index: full, len: tree.size() - full * group_len });
    }
    runs
}

/// Where the root's two children lie: (in the groups' buffer, or else in the inner nodes'
/// buffer, byte offset) for the left one and the right one. Only for two groups or more.
pub(crate) fn root_children(tree: &Tree) -> [(bool, u64); 2] {
    let n = tree.groups();
    let top = 64 - (n - 1).leading_zeros();
    let (l, r) = children(n, top, 0);
    [l, r].map(|node| match node {
        Kept::Group(g) => (true, g * 32),
        Kept::Inner(level, j) => (false, (level_start(n, level) + j) * 32),
    })
}

/// One step of computing a range's group chaining values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GroupRun {
    /// `groups >= 2` full groups from group `first`, in one pass capped at a group.
    Capped { first: u64, groups: u64 },
    /// Group `index`, of `len` bytes, hashed on its own as a subtree.
    Alone { index: u64, len: u64 },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::bao_shape::MAX_GROUP_LOG;

    #[test]
    fn runs_cover_every_group_once() {
        let t = tree(10 * 16384 + 5, 4).unwrap();
        assert_eq!(t.groups(), 11);
        assert_eq!(
            runs(&t, u64::MAX),
            vec![GroupRun::Capped { first: 0, groups: 10 }, GroupRun::Alone { index: 10, len: 5 }]
        );
        // Runs of at most 4 groups: 4, 4, then 2 (capped), and the partial one.
        assert_eq!(runs(&t, 64).len(), 4);
        assert_eq!(runs(&t, 64)[2], GroupRun::Capped { first: 8, groups: 2 });
        // Runs smaller than a group: every group alone.
        assert!(runs(&t, 8).iter().all(|r| matches!(r, GroupRun::Alone { .. })));
        // One full group: alone.
        assert_eq!(runs(&tree(1024, 0).unwrap(), u64::MAX), vec![GroupRun::Alone { index: 0, len: 1024 }]);
        assert_eq!(runs(&tree(0, 0).unwrap(), u64::MAX), vec![GroupRun::Alone { index: 0, len: 0 }]);
        assert!(tree(1, MAX_GROUP_LOG + 1).is_err());
    }

    #[test]
    fn the_root_children_are_found() {
        // 7 groups: ((01)(23))((45)6): level 2 nodes 0 and 1, after the 3 level-1 nodes.
        assert_eq!(root_children(&tree(7 * 1024, 0).unwrap()), [(false, 3 * 32), (false, 4 * 32)]);
        assert_eq!(root_children(&tree(2 * 1024, 0).unwrap()), [(true, 0), (true, 32)]);
        assert_eq!(root_children(&tree(5 * 1024, 0).unwrap()), [(false, 2 * 32), (true, 4 * 32)]);
    }
}
