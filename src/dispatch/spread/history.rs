//! What a list has measured in its calls: each device's rate on its pieces, and how fast calls
//! of each size went with the other devices and without them.

use crate::tree::Device;
use std::collections::HashMap;

/// Where the faster way at a size is known, the other is tried again once the calls made the
/// faster way since its last try have taken this many times what one try is expected to lose:
/// retries cost at most about 1/64 of a list's time (a try with GPUs can take many small calls'
/// time, which a fixed interval paid too often: docs/performance.md).
pub(super) const RETRY_AFTER: f64 = 64.0;

/// What a list has measured in its calls.
#[derive(Default)]
pub(super) struct History {
    /// Each device's rate (bytes per second) on its pieces, the latest counting most.
    pub(super) rates: HashMap<Device, f64>,
    /// Call rates by input size (the power of two at or below it).
    pub(super) sizes: HashMap<u32, SizeRecord>,
    pub(super) calls: u64,
}

/// How fast a list's calls of one size went, by the first device alone and with others.
#[derive(Clone, Copy, Default)]
pub(super) struct SizeRecord {
    pub(super) alone: Option<f64>,
    pub(super) together: Option<f64>,
    /// Calls made the faster way since the slower way was last tried.
    pub(super) since_retry: u64,
}

impl SizeRecord {
    /// Whether the list's calls of this size go faster without the other devices, for a call of
    /// `bytes` bytes: the way measured faster, except for a try of the other way once enough time
    /// has gone by (see [`RETRY_AFTER`]); with only one way measured, the other is tried first.
    pub(super) fn alone_is_better(&self, bytes: u64) -> bool {
        match (self.alone, self.together) {
            (Some(a), Some(t)) => {
                let (fast, slow) = (a.max(t), a.min(t));
                let b = bytes as f64;
                let retry = self.since_retry as f64 * (b / fast) >= RETRY_AFTER * (b / slow - b / fast);
                (t < a) != retry
            }
            (None, Some(_)) => true,
            _ => false,
        }
    }
}
