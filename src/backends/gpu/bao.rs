//! What both GPU backends' resident bao outboards share: the checks, how a range's chunk groups
//! are cut into capped passes and groups hashed alone, and the root from the root's pair.
//!
//! The passes: the groups' chaining values into a device buffer, the Merkle levels over them
//! with BLAKE3's parent flags keeping every inner node, and `bao_place`, which writes each
//! parent's children at its outboard index (`tree::bao_shape`).

use super::resident::OutboardDest;
use crate::core::constants::CHUNK_LEN;
use crate::tree::bao_shape::{children, level_start, Kept, MAX_GROUP_LOG};
use crate::tree::{Error, Result};

/// The chunk groups of a resident range: `groups` of 2^`log` chunks over `len` bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Groups {
    pub len: u64,
    pub log: u8,
    pub groups: u64,
}

impl Groups {
    /// The groups of `len` bytes, checked: a group log up to `MAX_GROUP_LOG`.
    pub fn new(len: u64, log: u8) -> Result<Groups> {
        if log > MAX_GROUP_LOG {
            return Err(Error::InvalidInput(format!(
                "bao outboard: a chunk group log of {log} is above the largest accepted, {MAX_GROUP_LOG}"
            )));
        }
        Ok(Groups { len, log, groups: len.div_ceil(Self::bytes(log)).max(1) })
    }

    fn bytes(log: u8) -> u64 {
        (CHUNK_LEN as u64) << log
    }

    /// Bytes per group.
    pub fn group_len(&self) -> u64 {
        Self::bytes(self.log)
    }

    /// The outboard's length: 64 bytes per parent.
    pub fn outboard_len(&self) -> u64 {
        (self.groups - 1) * 64
    }

    /// Checks `out` against the outboard's length: a host slice of exactly it, a device buffer
    /// of `device_len` bytes at least it.
    pub fn check_dest<B>(&self, out: &OutboardDest<'_, B>, device_len: impl Fn(&B) -> u64) -> Result<()> {
        let want = self.outboard_len();
        let (have, ok) = match out {
            OutboardDest::Host(h) => (h.len() as u64, h.len() as u64 == want),
            OutboardDest::Device(b) => (device_len(b), device_len(b) >= want),
        };
        if ok {
            return Ok(());
        }
        Err(Error::InvalidInput(format!(
            "bao outboard: {} groups have {want} bytes of parents, but the destination has {have}",
            self.groups
        )))
    }

    /// How the groups' chaining values are computed, where passes take at most `max_run_chunks`
    /// chunks: runs of two or more full groups in one capped pass each, and every other group
    /// (a partial last one, a full one alone, one larger than a run) alone.
    pub fn runs(&self, max_run_chunks: u64) -> Vec<GroupRun> {
        let full = self.len / self.group_len();
        let per_run = max_run_chunks >> self.log;
        let mut runs = Vec::new();
        let mut first = 0;
        while first < full {
            let groups = per_run.min(full - first);
            if groups >= 2 {
                runs.push(GroupRun::Capped { first, groups });
                first += groups;
            } else {
                runs.push(GroupRun::Alone { index: first, len: self.group_len() });
                first += 1;
            }
        }
        if full < self.groups {
            runs.push(GroupRun::Alone { index: full, len: self.len - full * self.group_len() });
        }
        runs
    }

    /// Where the root's two children lie: (in the groups' buffer, or else in the inner nodes'
    /// buffer, byte offset) for the left one and the right one. Only for two groups or more.
    pub fn root_children(&self) -> [(bool, u64); 2] {
        let n = self.groups;
        let top = 64 - (n - 1).leading_zeros();
        let (l, r) = children(n, top, 0);
        [l, r].map(|node| match node {
            Kept::Group(g) => (true, g * 32),
            Kept::Inner(level, j) => (false, (level_start(n, level) + j) * 32),
        })
    }
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

    #[test]
    fn runs_cover_every_group_once() {
        let g = Groups::new(10 * 16384 + 5, 4).unwrap();
        assert_eq!(g.groups, 11);
        assert_eq!(
            g.runs(u64::MAX),
            vec![GroupRun::Capped { first: 0, groups: 10 }, GroupRun::Alone { index: 10, len: 5 }]
        );
        // Runs of at most 4 groups: 4, 4, then 2 (capped), and the partial one.
        assert_eq!(g.runs(64).len(), 4);
        assert_eq!(g.runs(64)[2], GroupRun::Capped { first: 8, groups: 2 });
        // Runs smaller than a group: every group alone.
        assert!(g.runs(8).iter().all(|r| matches!(r, GroupRun::Alone { .. })));
        // One full group: alone.
        assert_eq!(Groups::new(1024, 0).unwrap().runs(u64::MAX), vec![GroupRun::Alone { index: 0, len: 1024 }]);
        assert_eq!(Groups::new(0, 0).unwrap().runs(u64::MAX), vec![GroupRun::Alone { index: 0, len: 0 }]);
        assert!(Groups::new(1, MAX_GROUP_LOG + 1).is_err());
    }

    #[test]
    fn the_root_children_are_found() {
        // 7 groups: ((01)(23))((45)6): level 2 nodes 0 and 1, after the 3 level-1 nodes.
        assert_eq!(Groups::new(7 * 1024, 0).unwrap().root_children(), [(false, 3 * 32), (false, 4 * 32)]);
        assert_eq!(Groups::new(2 * 1024, 0).unwrap().root_children(), [(true, 0), (true, 32)]);
        assert_eq!(Groups::new(5 * 1024, 0).unwrap().root_children(), [(false, 2 * 32), (true, 4 * 32)]);
    }
}
