//! Work on many inputs in parallel, results out in input order.
//!
//! Every thread of the pool claims the next input index from one counter, so inputs finish
//! roughly in order and few results wait. Whichever thread completes the next result in order
//! emits it, and any later results it finds waiting; emitting happens under one lock.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

struct State<R, F, E> {
    next: usize,
    pending: BTreeMap<usize, R>,
    emit: F,
    error: Option<E>,
}

/// Calls `work(i)` for every `i` in `0..n` and `emit` on the results in order of `i`. With
/// `parallel`, the work runs on every thread of the current rayon pool; otherwise on this
/// thread, one input after the other. The first error from `emit` stops the run (inputs already
/// started finish, nothing more is emitted) and is returned.
pub fn run<R, E, W, F>(n: usize, parallel: bool, work: W, mut emit: F) -> Result<(), E>
where
    R: Send,
    E: Send,
    W: Fn(usize) -> R + Sync,
    F: FnMut(R) -> Result<(), E> + Send,
{
    if !parallel || n < 2 || rayon::current_num_threads() < 2 {
        for i in 0..n {
            emit(work(i))?;
        }
        return Ok(());
    }
    let state = Mutex::new(State { next: 0, pending: BTreeMap::new(), emit, error: None });
    let claim = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    rayon::broadcast(|_| {
        while !stop.load(Ordering::Relaxed) {
            let i = claim.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                break;
            }
            let result = work(i);
            let mut guard = state.lock().unwrap_or_else(|p| p.into_inner());
            let s = &mut *guard;
            if s.error.is_some() {
                break;
            }
            if i != s.next {
                s.pending.insert(i, result);
                continue;
            }
            let mut result = result;
            loop {
                if let Err(e) = (s.emit)(result) {
                    s.error = Some(e);
                    stop.store(true, Ordering::Relaxed);
                    break;
                }
                s.next += 1;
                match s.pending.remove(&s.next) {
                    Some(r) => result = r,
                    None => break,
                }
            }
        }
    });
    let state = state.into_inner().unwrap_or_else(|p| p.into_inner());
    match state.error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_come_out_in_order() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
        pool.install(|| {
            let mut seen = Vec::new();
            super::run(
                1000,
                true,
                |i| {
                    // Uneven work, so that results complete out of order.
                    if i % 7 == 0 {
                        std::thread::sleep(std::time::Duration::from_micros(200));
                    }
                    i * 2
                },
                |r| {
                    seen.push(r);
                    Ok::<(), ()>(())
                },
            )
            .unwrap();
            assert_eq!(seen, (0..1000).map(|i| i * 2).collect::<Vec<_>>());
        });
    }

    #[test]
    fn an_emit_error_stops_the_run() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        pool.install(|| {
            let mut seen = 0;
            let r = super::run(
                10_000,
                true,
                |i| i,
                |i| {
                    seen += 1;
                    if i == 10 {
                        Err(i)
                    } else {
                        Ok(())
                    }
                },
            );
            assert_eq!(r, Err(10));
            assert_eq!(seen, 11);
        });
    }
}
