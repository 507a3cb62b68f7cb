//! Capped subtrees in the passes: where a call caps its subtrees at 2^k chunks, a segment's
//! passes stop reducing at level k and write every level-k CV out (beside the ragged end's
//! pieces below k), so that a small cap costs no more dispatches than no cap.

use super::layout::PIECE_SLOTS;
use crate::core::compress::Cv;

/// The level at which the passes over a segment of `n` chunks stop for a cap of `max_chunks` (a
/// power of two): `Some(k)` with `max_chunks = 2^k` where the cap splits the segment into two
/// or more subtrees (`n >= 2 * max_chunks`); `None` where the segment's uncapped pieces are its
/// capped subtrees already.
pub(crate) fn cap_level(n: u64, max_chunks: u64) -> Option<u32> {
    debug_assert!(max_chunks.is_power_of_two());
    (n / 2 >= max_chunks).then(|| max_chunks.trailing_zeros())
}

/// The levels each pass of a plan capped at level `k` reduces: one pass of `k` where the first
/// pass's work-groups hold 2^k items (`first_max` levels), else `first` levels (less than
/// `k`) and then `later` levels a pass, the last only up to `k`.
pub(crate) fn capped_passes(k: u32, first_max: u32, first: u32, later: u32) -> Vec<u32> {
    if k <= first_max {
        return vec![k];
    }
    debug_assert!(first < k && later >= 1);
    let mut passes = vec![first];
    let mut level = first;
    while level < k {
        let step = later.min(k - level);
        passes.push(step);
        level += step;
    }
    passes
}

/// The CVs of a segment of `n` chunks whose passes stopped at level `k`: the `n >> k` level-k
/// CVs in `full` (little-endian words, as the kernels store them), then the pieces (slot `b`
/// of `pieces` for each set bit `b` of `n` below `k`), largest first.
pub(crate) fn capped_cvs(full: &[u8], pieces: &[u8], n: u64, k: u32) -> Vec<Cv> {
    let count = (n >> k) as usize;
    let rest = n & ((1u64 << k) - 1);
    let mut out = Vec::with_capacity(count + rest.count_ones() as usize);
    out.extend(full[..count * 32].chunks_exact(32).map(|c| <Cv>::try_from(c).expect("32 bytes")));
    for b in (0..PIECE_SLOTS.min(k as usize)).rev().filter(|b| rest >> b & 1 == 1) {
        out.push(pieces[b * 32..b * 32 + 32].try_into().expect("32 bytes"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_stops_the_passes_at_its_level() {
        assert_eq!(cap_level(16, 8), Some(3));
        assert_eq!(cap_level(15, 8), None);
        assert_eq!(cap_level(3, 1), Some(0));
        assert_eq!(cap_level(1 << 20, 1 << 63), None);
        // Within the first pass's groups: one pass.
        assert_eq!(capped_passes(4, 8, 3, 8), vec![4]);
        assert_eq!(capped_passes(0, 5, 3, 8), vec![0]);
        // Beyond: the usual first pass, then the rest up to the cap.
        assert_eq!(capped_passes(12, 8, 3, 8), vec![3, 8, 1]);
        assert_eq!(capped_passes(11, 8, 3, 8), vec![3, 8]);
        assert_eq!(capped_passes(20, 6, 6, 4), vec![6, 4, 4, 4, 2]);
    }

    #[test]
    fn capped_cvs_are_the_full_ones_then_the_pieces_below_the_cap() {
        let full: Vec<u8> = (0..5 * 32).map(|i| 100 + (i / 32) as u8).collect();
        let pieces: Vec<u8> = (0..PIECE_SLOTS * 32).map(|i| (i / 32) as u8).collect();
        // 5 * 8 + 0b101 chunks capped at 8: five full, then the subtrees of 4 and 1 chunks.
        let got = capped_cvs(&full, &pieces, 5 * 8 + 5, 3);
        let want: Vec<Cv> = [100, 101, 102, 103, 104, 2, 0].iter().map(|&b| [b; 32]).collect();
        assert_eq!(got, want);
        assert_eq!(capped_cvs(&full, &pieces, 3, 0), vec![[100; 32], [101; 32], [102; 32]]);
    }
}
