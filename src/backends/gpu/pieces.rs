//! Reading a dispatch sequence's pieces (see [`layout`](super::layout)) back into chaining values.

use super::layout::PIECE_SLOTS;
use crate::core::compress::Cv;

/// The CVs of the complete subtrees that `n` chunks form, largest first (one per set bit of `n`),
/// from the bytes of a pieces buffer: slot `b` for each set bit `b`. `out` has `n.count_ones()`
/// entries. The kernels store little-endian words: a CV's bytes as they are.
pub(crate) fn read_pieces(bytes: &[u8], n: u64, out: &mut [Cv]) {
    debug_assert_eq!(out.len(), n.count_ones() as usize);
    for (cv, b) in out.iter_mut().zip((0..PIECE_SLOTS).rev().filter(|b| n >> b & 1 == 1)) {
        cv.copy_from_slice(&bytes[b * 32..b * 32 + 32]);
    }
}

/// [`read_pieces`] into a new vector.
pub(crate) fn pieces_of(bytes: &[u8], n: u64) -> Vec<Cv> {
    let mut out = vec![[0u8; 32]; n.count_ones() as usize];
    read_pieces(bytes, n, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_come_largest_first_one_per_set_bit() {
        let bytes: Vec<u8> = (0..PIECE_SLOTS * 32).map(|i| (i / 32) as u8).collect();
        let got = pieces_of(&bytes, 0b1_0110);
        assert_eq!(got, vec![[4u8; 32], [2u8; 32], [1u8; 32]]);
        assert!(pieces_of(&bytes, 0).is_empty());
        assert_eq!(pieces_of(&bytes, 1 << 63), vec![[63u8; 32]]);
    }
}
