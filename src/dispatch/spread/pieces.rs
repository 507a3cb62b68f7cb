//! How one call's input is cut into pieces, and the queue the devices take them from.

use crate::core::constants::CHUNK_LEN;
use std::sync::Mutex;
use std::time::Duration;

/// Locks `m`, whether or not a thread panicked holding it.
pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The pieces of one call still to hash and the devices' rates.
///
/// The first `reserved` pieces are the first device's share, which it takes before any other.
/// Then every device takes from the rest: a device with no rate yet (the first piece it ever
/// takes) takes the last piece, the smallest; one with a rate takes the front piece if it would
/// finish it no later than the other devices would finish everything left, that piece
/// included, or else the back piece under the same rule, or else stops: the others end sooner
/// without it. The first device never stops while pieces are left.
pub(super) struct Queue<'a> {
    pub(super) pieces: &'a [Piece],
    pub(super) state: Mutex<QueueState>,
}

pub(super) struct QueueState {
    /// The first device's next reserved piece.
    pub(super) reserved: std::ops::Range<usize>,
    pub(super) front: usize,
    pub(super) back: usize,
    /// Pieces a failed device gave back: taken before any other.
    pub(super) retry: Vec<usize>,
    /// Bytes per second each device is expected to hash at (measured in this call, or before).
    pub(super) rates: Vec<Option<f64>>,
    /// The rates measured in this call.
    pub(super) measured: Vec<Option<f64>>,
    /// Whether each device may still take pieces (not failed, not stopped).
    pub(super) active: Vec<bool>,
    /// Bytes each device hashed in this call.
    pub(super) shares: Vec<u64>,
}

impl<'a> Queue<'a> {
    pub(super) fn new(pieces: &'a [Piece], reserved: usize, rates: Vec<Option<f64>>, active: Vec<bool>) -> Queue<'a> {
        let devices = rates.len();
        let state = QueueState {
            reserved: 0..reserved,
            front: reserved,
            back: pieces.len(),
            retry: Vec::new(),
            rates,
            measured: vec![None; devices],
            active,
            shares: vec![0; devices],
        };
        Queue { pieces, state: Mutex::new(state) }
    }

    pub(super) fn bytes(&self, i: usize) -> f64 {
        (self.pieces[i].chunks * CHUNK_LEN as u64) as f64
    }

    pub(super) fn is_empty(&self) -> bool {
        let st = lock(&self.state);
        st.front >= st.back && st.retry.is_empty() && st.reserved.is_empty()
    }

    /// The next piece for device `k`, or `None` when it should stop (see [`Queue`]).
    pub(super) fn take(&self, k: usize) -> Option<usize> {
        let mut st = lock(&self.state);
        if !st.active[k] {
            return None;
        }
        if k == 0 {
            if let Some(i) = st.reserved.next() {
                return Some(i);
            }
        }
        if let Some(i) = st.retry.pop() {
            return Some(i);
        }
        if st.front >= st.back {
            return None;
        }
        let Some(rate) = st.rates[k] else {
            st.back -= 1;
            return Some(st.back);
        };
        let reserved: f64 = st.reserved.clone().map(|i| self.bytes(i)).sum();
        let left: f64 = (st.front..st.back).map(|i| self.bytes(i)).sum::<f64>() + reserved;
        let others: f64 = (0..st.rates.len()).filter(|&j| j != k && st.active[j]).filter_map(|j| st.rates[j]).sum();
        // Would device k finish piece i no later than the others would finish all that is left?
        let worth = |i: usize| k == 0 || others <= 0.0 || self.bytes(i) / rate <= left / others;
        if worth(st.front) {
            st.front += 1;
            Some(st.front - 1)
        } else if worth(st.back - 1) {
            st.back -= 1;
            Some(st.back)
        } else {
            st.active[k] = false;
            None
        }
    }

    /// Device `k` hashed piece `i` in `took`.
    pub(super) fn done(&self, k: usize, i: usize, took: Duration) {
        let bytes = self.bytes(i);
        let mut st = lock(&self.state);
        st.shares[k] += bytes as u64;
        let rate = bytes / took.as_secs_f64().max(1e-9);
        // The latest piece counts most: a device's rate changes as its pipeline warms up.
        let blended = match st.measured[k] {
            Some(r) => 0.5 * r + 0.5 * rate,
            None => rate,
        };
        st.measured[k] = Some(blended);
        st.rates[k] = Some(blended);
    }

    /// Device `k` failed on piece `i`: the piece goes back, the device stops.
    pub(super) fn fail(&self, k: usize, i: usize) {
        let mut st = lock(&self.state);
        st.retry.push(i);
        st.active[k] = false;
    }
}

/// A piece of the input: `chunks` chunks from chunk `start` of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Piece {
    pub(super) start: u64,
    pub(super) chunks: u64,
}

/// The pieces chunks `from..n` of a run are cut into for `devices` devices: each a power of two
/// of chunks (but the last) at a multiple of its size and no larger than `max_chunks`, so each
/// is one complete subtree; `big` chunks while much is left, then smaller, down to `small`, so
/// that the last pieces are small.
pub(super) fn plan_pieces(from: u64, n: u64, max_chunks: u64, devices: usize, big: u64, small: u64) -> Vec<Piece> {
    let big = big.min(max_chunks);
    let small = small.min(big);
    let mut out = Vec::new();
    let mut start = from;
    while start < n {
        let left = n - start;
        // About a quarter of what is left per device, within [small, big], and no larger than
        // the alignment of `start` allows.
        let want = (left / (4 * devices.max(1) as u64)).clamp(small, big);
        let mut size = 1u64 << want.ilog2();
        if start > 0 {
            size = size.min(1 << start.trailing_zeros());
        }
        let chunks = size.min(left);
        out.push(Piece { start, chunks });
        start += chunks;
    }
    out
}
