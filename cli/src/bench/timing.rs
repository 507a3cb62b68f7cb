//! How `b3accel bench` times a call: medians of samples after a warm-up, short calls in
//! batches, several series interleaved in a shuffled order.

use std::time::{Duration, Instant};

/// Repeats `f` until `budget` has passed (at least 3 samples), after one warm-up
/// call (programs built, buffers allocated, pages touched), returning the median seconds per
/// call. A sample is one call, or a batch of calls where one is shorter than [`SAMPLE_MIN`].
pub(super) fn time(budget: Duration, mut f: impl FnMut() -> Result<(), String>) -> Result<f64, String> {
    time_interleaved(budget, &mut [&mut f]).pop().expect("one series")
}

/// The shortest sample: calls shorter than this are timed in batches that last about this long.
/// A clock that advances in steps of 10 ns reads a 60 ns call to 14%, a 20 us batch to 0.05%.
pub(super) const SAMPLE_MIN: Duration = Duration::from_micros(20);

/// A first call at least this long is not followed by warm calls to set the batch length.
pub(super) const WARM_MAX: Duration = Duration::from_millis(100);

/// Calls of `f` per sample: enough for a batch to last [`SAMPLE_MIN`], judged from one call's
/// time `one` (at most 10,000).
pub(super) fn batch_len(one: Duration) -> u32 {
    let nanos = one.as_nanos().max(1);
    SAMPLE_MIN.as_nanos().div_ceil(nanos).clamp(1, 10_000) as u32
}

/// [`time`] for several series at once, one sample of each in turn (`budget` each): a drift of
/// the machine's speed during the measurement (clock frequency, memory placement, a
/// neighbour's load) then falls on all of them alike, so their ratios hold even where the
/// absolute figures move by several percent from run to run. Each turn runs the series in a new
/// order, so that no series always runs just after the same other one (whose caches, branch
/// history and leftover work it would inherit). A series that fails drops out with its error.
pub(super) fn time_interleaved(budget: Duration, fs: &mut [&mut dyn FnMut() -> Result<(), String>]) -> Vec<Result<f64, String>> {
    // One warm-up call each, then the fastest of up to three warm calls sets the batch length: a
    // first call can take many times a warm one (code paged in, lazy set-up), and a batch length
    // set from it would time a series of short calls one call a sample, the clock's own cost in
    // every sample.
    let mut samples: Vec<Result<(u32, Vec<f64>), String>> = fs
        .iter_mut()
        .map(|f| {
            let t = Instant::now();
            f()?;
            let mut one = t.elapsed();
            // A call that long is a batch of one however cold it was; not worth repeating.
            if one < WARM_MAX {
                one = Duration::MAX;
                for _ in 0..3 {
                    let t = Instant::now();
                    f()?;
                    one = one.min(t.elapsed());
                    if one >= SAMPLE_MIN {
                        break;
                    }
                }
            }
            Ok((batch_len(one), Vec::new()))
        })
        .collect();
    let n = fs.len();
    let total = budget * n as u32;
    let start = Instant::now();
    let mut order: Vec<usize> = (0..n).collect();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    loop {
        shuffle(&mut order, &mut seed);
        let mut running = false;
        for &i in &order {
            let (f, s) = (&mut fs[i], &mut samples[i]);
            let Ok((reps, v)) = s else { continue };
            let t = Instant::now();
            match (0..*reps).try_for_each(|_| f()) {
                Ok(()) => v.push(t.elapsed().as_secs_f64() / *reps as f64),
                Err(e) => *s = Err(e),
            }
            running = true;
        }
        let fewest = samples.iter().filter_map(|s| s.as_ref().ok()).map(|(_, v)| v.len()).min().unwrap_or(0);
        // The whole budget, however short the calls: a sample lasts at least `SAMPLE_MIN`. (Single
        // calls stopped at 1,000, a millisecond or two for a 2 KiB input: too short a stretch of
        // a noisy machine.)
        if !running || (fewest >= 3 && start.elapsed() >= total) {
            break;
        }
    }
    samples
        .into_iter()
        .map(|s| {
            s.map(|(_, mut v)| {
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            })
        })
        .collect()
}

/// Puts `order` in a pseudo-random order (Fisher-Yates, xorshift64 from `seed`, which it advances).
pub(super) fn shuffle(order: &mut [usize], seed: &mut u64) {
    for i in (1..order.len()).rev() {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        order.swap(i, (*seed % (i as u64 + 1)) as usize);
    }
}
