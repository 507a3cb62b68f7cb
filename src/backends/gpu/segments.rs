//! Host inputs through a GPU in segments: where a run of chunks is cut, and the pipeline that
//! keeps several segments in flight (the copy into staging memory, the upload and the hashing of
//! different segments overlap). The segments' subtree CVs merge by the tree's rules
//! (`tree::merge_segments`).

use crate::core::compress::Cv;
use crate::core::constants::CHUNK_LEN;
use crate::tree::Result;

/// A segment of a run: `chunks` chunks from chunk `start` of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    pub start: u64,
    pub chunks: u64,
}

/// The segments a run of `n` chunks streams through a device in: segments of at most `seg`
/// chunks (a power of two); the first two of `first` chunks (a power of two, at most `seg`), then
/// each as long as everything before it, up to `seg`. With a small `first` the pipeline fills
/// after a small first copy and upload instead of a whole segment's; with `first == seg` all
/// segments are alike. Either way every segment starts at a multiple of its length, so each full
/// one is one complete subtree.
pub(crate) fn plan_segments(n: u64, seg: u64, first: u64) -> Vec<Segment> {
    debug_assert!(seg.is_power_of_two() && first.is_power_of_two() && first <= seg);
    let mut out = Vec::new();
    let mut start = 0;
    while start < n {
        let len = if start == 0 { first } else { start.min(seg) };
        let chunks = len.min(n - start);
        out.push(Segment { start, chunks });
        start += chunks;
    }
    out
}

/// One device's side of streaming: a few slots, each with staging memory, a device buffer and
/// room for results, which segments take in turn.
pub(crate) trait SegmentSlots {
    /// What a dispatched segment's results are waited for with.
    type Pending;

    /// How many segments may be in flight at once.
    fn slots(&self) -> usize;

    /// Copies a segment's bytes into slot `slot`'s staging memory, once the slot's previous
    /// upload no longer needs it, and starts the upload where the API separates it from the
    /// dispatch.
    fn fill(&mut self, slot: usize, bytes: &[u8]) -> Result<()>;

    /// Dispatches the hashing of the `chunks` chunks in slot `slot` (the first with chunk counter
    /// `counter`) and the copy of their pieces to where `collect` reads them.
    fn dispatch(&mut self, slot: usize, chunks: u64, counter: u64) -> Result<Self::Pending>;

    /// Waits for a dispatched segment of `chunks` chunks and returns its pieces, largest first.
    fn collect(&mut self, slot: usize, pending: Self::Pending, chunks: u64) -> Result<Vec<Cv>>;
}

/// Streams `segments` of `input` (full chunks, chunk counters from `counter_base`) through the
/// slots: segment k takes slot k % S. The copy into a slot waits only for that slot's previous
/// upload; that segment's results are collected just before the slot's next dispatch (which
/// overwrites them), so with S slots up to S segments are in flight. Returns each segment's
/// chunk count and pieces, in order.
pub(crate) fn stream<S: SegmentSlots>(
    slots: &mut S,
    input: &[u8],
    segments: &[Segment],
    counter_base: u64,
) -> Result<Vec<(u64, Vec<Cv>)>> {
    let count = slots.slots().max(1);
    let mut done: Vec<(u64, Vec<Cv>)> = Vec::with_capacity(segments.len());
    let mut inflight: Vec<Option<S::Pending>> = (0..count).map(|_| None).collect();
    for (k, seg) in segments.iter().enumerate() {
        let slot = k % count;
        let at = seg.start as usize * CHUNK_LEN;
        slots.fill(slot, &input[at..at + seg.chunks as usize * CHUNK_LEN])?;
        if let Some(pending) = inflight[slot].take() {
            let previous = segments[k - count].chunks;
            done.push((previous, slots.collect(slot, pending, previous)?));
        }
        inflight[slot] = Some(slots.dispatch(slot, seg.chunks, counter_base + seg.start)?);
    }
    for k in segments.len().saturating_sub(count)..segments.len() {
        if let Some(pending) = inflight[k % count].take() {
            let chunks = segments[k].chunks;
            done.push((chunks, slots.collect(k % count, pending, chunks)?));
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::gpu::capped::cap_level;
    use crate::tree::{chunk_output, merge_segments, subtree_count, CvStack, Domain, MAX_SUBTREE};

    #[test]
    fn segments_ramp_up_and_start_at_multiples_of_their_length() {
        let s = plan_segments(100, 32, 4);
        let lens: Vec<u64> = s.iter().map(|s| s.chunks).collect();
        assert_eq!(lens, [4, 4, 8, 16, 32, 32, 4]);
        assert!(s.iter().all(|s| s.start % s.chunks.next_power_of_two().min(32) == 0));
        let flat = plan_segments(100, 32, 32);
        assert_eq!(flat.iter().map(|s| s.chunks).collect::<Vec<_>>(), [32, 32, 32, 4]);
        assert_eq!(plan_segments(3, 32, 32), [Segment { start: 0, chunks: 3 }]);
        assert!(plan_segments(0, 8, 1).is_empty());
    }

    /// The subtree CVs of `bytes` (full chunks, the first with counter `counter`) from each
    /// chunk's CV, merged by the tree's stack.
    fn subtrees_of(bytes: &[u8], counter: u64, domain: Domain) -> Vec<Cv> {
        let chunks = (bytes.len() / CHUNK_LEN) as u64;
        let mut stack = CvStack::new();
        stack
            .commit_runs(chunks, 1, domain, |a, _, _, o| {
                for (j, cv) in o.iter_mut().enumerate() {
                    let c = (a as usize + j) * CHUNK_LEN;
                    *cv = chunk_output(&bytes[c..c + CHUNK_LEN], counter + a + j as u64, domain).chaining_value();
                }
                Ok(())
            })
            .unwrap();
        let mut out = vec![[0u8; 32]; chunks.count_ones() as usize];
        stack.subtree_cvs(domain, &mut out);
        out
    }

    /// A "device" that hashes each segment on the CPU, to check the pipeline's order and the merge;
    /// a segment that `cap` splits gives its capped subtrees, as the GPU passes do.
    struct Cpu {
        staged: Vec<Vec<u8>>,
        domain: Domain,
        cap: u64,
        in_flight: usize,
        most_in_flight: usize,
    }

    impl SegmentSlots for Cpu {
        type Pending = (usize, Vec<Cv>);
        fn slots(&self) -> usize {
            self.staged.len()
        }
        fn fill(&mut self, slot: usize, bytes: &[u8]) -> Result<()> {
            self.staged[slot] = bytes.to_vec();
            Ok(())
        }
        fn dispatch(&mut self, slot: usize, chunks: u64, counter: u64) -> Result<(usize, Vec<Cv>)> {
            assert_eq!(self.staged[slot].len() as u64, chunks * CHUNK_LEN as u64);
            self.in_flight += 1;
            self.most_in_flight = self.most_in_flight.max(self.in_flight);
            let bytes = &self.staged[slot];
            let cvs = match cap_level(chunks, self.cap) {
                Some(_) => bytes
                    .chunks(self.cap as usize * CHUNK_LEN)
                    .enumerate()
                    .flat_map(|(b, block)| subtrees_of(block, counter + b as u64 * self.cap, self.domain))
                    .collect(),
                None => subtrees_of(bytes, counter, self.domain),
            };
            Ok((slot, cvs))
        }
        fn collect(&mut self, slot: usize, pending: (usize, Vec<Cv>), chunks: u64) -> Result<Vec<Cv>> {
            assert_eq!(pending.0, slot);
            assert_eq!(pending.1.len(), subtree_count(chunks, self.cap));
            self.in_flight -= 1;
            Ok(pending.1)
        }
    }

    #[test]
    fn streamed_segments_merge_to_the_subtrees_of_the_whole_run() {
        let domain = Domain::keyed(&[3; 32]);
        // Segments within a cap's blocks, and segments the cap splits (each capped already).
        for (n, seg, first, cap) in [
            (37u64, 8, 2, MAX_SUBTREE),
            (64, 16, 16, 32),
            (21, 4, 1, 8),
            (1, 4, 4, MAX_SUBTREE),
            (100, 32, 4, 4),
            (37, 16, 16, 1),
            (21, 8, 2, 4),
        ] {
            let input: Vec<u8> = (0..n as usize * CHUNK_LEN).map(|i| (i % 251) as u8).collect();
            let mut dev = Cpu { staged: vec![Vec::new(); 3], domain, cap, in_flight: 0, most_in_flight: 0 };
            let segs = plan_segments(n, seg, first);
            let done = stream(&mut dev, &input, &segs, 0).unwrap();
            assert_eq!(dev.in_flight, 0);
            assert!(dev.most_in_flight <= 3);
            let lens: Vec<u64> = segs.iter().map(|s| s.chunks).collect();
            assert_eq!(done.iter().map(|d| d.0).collect::<Vec<_>>(), lens);
            let mut got = vec![[0u8; 32]; subtree_count(n, cap)];
            merge_segments(&done, cap, domain, &mut got).unwrap();
            // The same subtrees straight from every chunk's CV, block of `cap` chunks by block.
            let block_bytes = cap.min(n) as usize * CHUNK_LEN;
            let want: Vec<Cv> = input
                .chunks(block_bytes)
                .enumerate()
                .flat_map(|(b, block)| subtrees_of(block, (b * block_bytes / CHUNK_LEN) as u64, domain))
                .collect();
            assert_eq!(got, want, "{n} chunks, segments of {seg} from {first}, cap {cap}");
        }
    }
}
