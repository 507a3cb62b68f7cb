//! What both GPU backends' resident bao outboards share: the checks, and the plan of the
//! commands that make the groups' chaining values.
//!
//! The commands, all in one submission (wgpu) or on one in-order queue (OpenCL), waited for once:
//! the groups' chaining values into a device buffer ([`steps`]), the Merkle levels over them with
//! BLAKE3's parent flags keeping every inner node, and `bao_place`, which writes each parent's
//! children at its outboard index (`tree::bao_shape`) and the root's two children after the inner
//! nodes ([`root_pair_at`]), the only bytes that come back for a device destination.

use super::resident::OutboardDest;
use crate::core::constants::CHUNK_LEN;
use crate::tree::bao_shape::Tree;
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

/// Where `bao_place` leaves the root's two children, in inner nodes from the start of the inner
/// nodes' buffer of `n` groups: right after the `n - 1` inner nodes (the buffer holds `n + 1`).
pub(crate) fn root_pair_at(n: u64) -> u64 {
    n - 1
}

/// One step of computing a range's group chaining values into the groups' buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The passes over `chunks` full chunks from the first chunk of group `first`, capped at a
    /// group: the chaining values of its `groups >= 2` full groups go straight to the groups'
    /// buffer from `first`; chunks after them (a partial last group's) are left as pieces.
    Capped { first: u64, groups: u64, chunks: u64 },
    /// The passes over `chunks` full chunks from the first chunk of group `first`, uncapped:
    /// pieces only (a full group alone, or a partial group's chunks that fit in no capped step).
    Pieces { first: u64, chunks: u64 },
    /// Group `group`'s chaining value, folded on the device (`bao_fold`) from the pieces the
    /// step before left (one per set bit of `chunks`, the first `chunks` chunks of the group;
    /// none for 0) and the group's partial last chunk of `partial` bytes (0: none) after them.
    Fold { group: u64, chunks: u64, partial: u64 },
    /// Group `group` of `len` bytes hashed as a subtree of its own and its chaining value
    /// written to the groups' buffer: only where a group is larger than a pass takes.
    Alone { group: u64, len: u64 },
}

/// The steps that put every group's chaining value into the groups' buffer, where passes take at
/// most `max_run_chunks` chunks: runs of two or more full groups in one capped pass each, a
/// partial last group's full chunks riding at the end of the last one where they fit, and then
/// folded with its partial chunk; a full group left alone in a run is folded from its one piece.
/// Every group is written once, in order, and each fold follows the step whose pieces it reads.
pub(crate) fn steps(tree: &Tree, max_run_chunks: u64) -> Vec<Step> {
    let (log, group_len, chunk) = (tree.group_log(), tree.group_len(), CHUNK_LEN as u64);
    let full = tree.size() / group_len;
    let rest = tree.size() - full * group_len;
    let (rest_chunks, partial) = (rest / chunk, rest % chunk);
    let per_run = max_run_chunks >> log;
    if per_run == 0 {
        let len = |g| if g < full { group_len } else { rest };
        return (0..tree.groups()).map(|group| Step::Alone { group, len: len(group) }).collect();
    }
    let mut steps = Vec::new();
    let mut first = 0;
    let mut folded = rest == 0;
    while first < full {
        let groups = per_run.min(full - first);
        let chunks = groups << log;
        if groups == 1 {
            steps.push(Step::Pieces { first, chunks });
            steps.push(Step::Fold { group: first, chunks, partial: 0 });
        } else if first + groups == full && !folded && chunks + rest_chunks <= max_run_chunks {
            steps.push(Step::Capped { first, groups, chunks: chunks + rest_chunks });
            steps.push(Step::Fold { group: full, chunks: rest_chunks, partial });
            folded = true;
        } else {
            steps.push(Step::Capped { first, groups, chunks });
        }
        first += groups;
    }
    if !folded {
        if rest_chunks > 0 {
            steps.push(Step::Pieces { first: full, chunks: rest_chunks });
        }
        steps.push(Step::Fold { group: full, chunks: rest_chunks, partial });
    }
    steps
}

/// The runs of passes among `steps` (capped or pieces), in order: a backend with one slot of
/// pieces per run sizes its scratch by this.
pub(crate) fn run_count(steps: &[Step]) -> u64 {
    steps.iter().filter(|s| matches!(s, Step::Capped { .. } | Step::Pieces { .. })).count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::bao_shape::MAX_GROUP_LOG;

    #[test]
    fn steps_write_every_group_once() {
        let t = tree(10 * 16384 + 5 * 1024 + 7, 4).unwrap();
        assert_eq!(t.groups(), 11);
        // The partial group's 5 full chunks ride at the end of the capped run.
        assert_eq!(
            steps(&t, u64::MAX),
            vec![Step::Capped { first: 0, groups: 10, chunks: 165 }, Step::Fold { group: 10, chunks: 5, partial: 7 }]
        );
        // Runs of at most 4 groups: 4, 4, then 2 with the partial group's chunks.
        assert_eq!(
            steps(&t, 64),
            vec![
                Step::Capped { first: 0, groups: 4, chunks: 64 },
                Step::Capped { first: 4, groups: 4, chunks: 64 },
                Step::Capped { first: 8, groups: 2, chunks: 37 },
                Step::Fold { group: 10, chunks: 5, partial: 7 },
            ]
        );
        // 4, 4, 4: no room in the last run, so the partial group's chunks make a run of their own.
        assert_eq!(
            steps(&tree(12 * 16384 + 5 * 1024 + 7, 4).unwrap(), 64)[3..],
            [Step::Pieces { first: 12, chunks: 5 }, Step::Fold { group: 12, chunks: 5, partial: 7 }]
        );
        // Runs of one group: each folded from its one piece.
        assert_eq!(
            steps(&tree(2 * 16384 + 3, 4).unwrap(), 16),
            vec![
                Step::Pieces { first: 0, chunks: 16 },
                Step::Fold { group: 0, chunks: 16, partial: 0 },
                Step::Pieces { first: 1, chunks: 16 },
                Step::Fold { group: 1, chunks: 16, partial: 0 },
                Step::Fold { group: 2, chunks: 0, partial: 3 },
            ]
        );
        // Whole groups only: no fold.
        assert_eq!(steps(&tree(3 * 1024, 0).unwrap(), u64::MAX), vec![Step::Capped { first: 0, groups: 3, chunks: 3 }]);
        // Groups larger than a run: each alone.
        assert_eq!(
            steps(&t, 8),
            (0..11)
                .map(|group| Step::Alone { group, len: if group < 10 { 16384 } else { 5 * 1024 + 7 } })
                .collect::<Vec<_>>()
        );
        assert_eq!(run_count(&steps(&t, 64)), 3);
        assert!(tree(1, MAX_GROUP_LOG + 1).is_err());
    }

    #[test]
    fn every_byte_is_in_one_step() {
        for log in [0u8, 1, 4] {
            for len in [2049u64, 4096, 5000, 40_000, 100_000, 1 << 20] {
                let t = tree(len, log).unwrap();
                if t.groups() < 2 {
                    continue;
                }
                for max in [u64::MAX, 64, 16, 2] {
                    let mut written = vec![0u32; t.groups() as usize];
                    let mut bytes = 0;
                    let mut pieces_of = None;
                    for step in steps(&t, max) {
                        match step {
                            Step::Capped { first, groups, chunks } => {
                                assert!(groups >= 2 && chunks <= max && chunks - (groups << log) < 1 << log);
                                (first..first + groups).for_each(|g| written[g as usize] += 1);
                                bytes += chunks * 1024;
                                pieces_of = Some(chunks - (groups << log));
                            }
                            Step::Pieces { chunks, .. } => {
                                assert!(chunks <= max);
                                bytes += chunks * 1024;
                                pieces_of = Some(chunks);
                            }
                            Step::Fold { group, chunks, partial } => {
                                assert_eq!(pieces_of.take().unwrap_or(0), chunks, "{len} {log} {max}");
                                written[group as usize] += 1;
                                bytes += partial;
                            }
                            Step::Alone { group, len } => {
                                written[group as usize] += 1;
                                bytes += len;
                            }
                        }
                    }
                    assert!(written.iter().all(|&w| w == 1), "{len} {log} {max}");
                    assert_eq!(bytes, len, "{len} {log} {max}");
                }
            }
        }
    }
}
