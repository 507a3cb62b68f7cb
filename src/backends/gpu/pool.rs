//! A bounded pool of per-call resources (OpenCL workers, wgpu streams and scratch sets): reused
//! across calls, made on demand, and dropped when a call fails with them.

use crate::tree::Result;
use std::sync::{Condvar, Mutex, MutexGuard};

/// Resources of type `T`, handed out one per call.
///
/// At most `max_live` exist at once (idle or in use); a caller over that limit waits for one to
/// come back, unless an idle one can be replaced. At most `max_idle` are kept between calls; when
/// more come back, the smallest (by the pool's `size` function) goes. An item comes back only
/// from a call that succeeded: after a failure it may hold commands that failed half-way, so it
/// is dropped.
pub(crate) struct Pool<T> {
    state: Mutex<State<T>>,
    freed: Condvar,
    max_live: usize,
    max_idle: usize,
    size: fn(&T) -> u64,
}

struct State<T> {
    idle: Vec<T>,
    /// Items in existence: idle ones and those out on a call.
    live: usize,
}

/// An item out on a call: back to the pool when the call succeeded, dropped otherwise (also on
/// a panic), and counted out of the pool's live items.
struct Lease<'a, T> {
    pool: &'a Pool<T>,
    item: Option<T>,
    ok: bool,
}

impl<T> Drop for Lease<'_, T> {
    fn drop(&mut self) {
        let item = self.item.take().filter(|_| self.ok);
        let mut state = self.pool.lock();
        let evicted = match item {
            Some(item) => {
                state.idle.push(item);
                (state.idle.len() > self.pool.max_idle).then(|| {
                    state.live -= 1;
                    self.pool.take_smallest(&mut state)
                })
            }
            None => {
                state.live -= 1;
                None
            }
        };
        drop(state);
        self.pool.freed.notify_one();
        // Dropped outside the lock: freeing device resources may wait for the device.
        drop(evicted);
    }
}

impl<T> Pool<T> {
    /// A pool of at most `max_live` items at once, keeping at most `max_idle` between calls,
    /// `size` telling which to let go first.
    pub fn new(max_live: usize, max_idle: usize, size: fn(&T) -> u64) -> Pool<T> {
        Pool {
            state: Mutex::new(State { idle: Vec::new(), live: 0 }),
            freed: Condvar::new(),
            max_live: max_live.max(1),
            max_idle,
            size,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes the smallest idle item out (the pool has at least one).
    fn take_smallest(&self, state: &mut State<T>) -> T {
        let smallest = (0..state.idle.len()).min_by_key(|&i| (self.size)(&state.idle[i])).unwrap_or(0);
        state.idle.swap_remove(smallest)
    }

    /// Runs `f` on an item of its own: an idle one that `fits`, else a new one from `make`; over
    /// the pool's limit, an idle one that does not fit is replaced, or else the caller waits for
    /// an item to come back. The item returns to the pool if `f` succeeds.
    pub fn with<R>(
        &self,
        fits: impl Fn(&T) -> bool,
        make: impl FnOnce() -> Result<T>,
        f: impl FnOnce(&mut T) -> Result<R>,
    ) -> Result<R> {
        let (found, replaced) = {
            let mut state = self.lock();
            loop {
                if let Some(i) = state.idle.iter().position(&fits) {
                    break (Some(state.idle.swap_remove(i)), None);
                }
                if state.live < self.max_live {
                    state.live += 1;
                    break (None, None);
                }
                if !state.idle.is_empty() {
                    // Replace an idle item that does not fit (its resources are freed).
                    break (None, Some(self.take_smallest(&mut state)));
                }
                state = self.freed.wait(state).unwrap_or_else(|p| p.into_inner());
            }
        };
        drop(replaced);
        // From here on the item counts as live: the lease gives it back or counts it out.
        let mut lease = Lease { pool: self, item: found, ok: false };
        if lease.item.is_none() {
            lease.item = Some(make()?);
        }
        let result = f(lease.item.as_mut().expect("an item was taken or made"));
        lease.ok = result.is_ok();
        result
    }

    /// Items in existence (idle or in use) and idle items, for tests.
    #[cfg(test)]
    fn counts(&self) -> (usize, usize) {
        let state = self.lock();
        (state.live, state.idle.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::Error;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn fail() -> Error {
        Error::InvalidInput("failed".into())
    }

    #[test]
    fn items_are_reused_and_dropped_after_a_failure() {
        let made = AtomicUsize::new(0);
        let pool: Pool<u64> = Pool::new(2, 2, |x| *x);
        let make = || {
            made.fetch_add(1, Ordering::SeqCst);
            Ok(8)
        };
        for _ in 0..3 {
            pool.with(|_| true, make, |x| Ok(*x)).unwrap();
        }
        assert_eq!(made.load(Ordering::SeqCst), 1);
        assert_eq!(pool.counts(), (1, 1));
        assert!(pool.with(|_| true, make, |_| Err::<(), _>(fail())).is_err());
        assert_eq!(pool.counts(), (0, 0), "a failed call's item is dropped");
        assert!(pool.with(|_| true, || Err(fail()), |_| Ok(())).is_err());
        assert_eq!(pool.counts(), (0, 0), "a failed make counts nothing");
    }

    #[test]
    fn an_item_that_does_not_fit_is_replaced_at_the_limit_and_the_smallest_idle_goes() {
        let pool: Pool<u64> = Pool::new(1, 4, |x| *x);
        pool.with(|_| true, || Ok(4), |_| Ok(())).unwrap();
        let got = pool.with(|x| *x >= 16, || Ok(16), |x| Ok(*x)).unwrap();
        assert_eq!(got, 16);
        assert_eq!(pool.counts(), (1, 1));

        let kept: Pool<u64> = Pool::new(usize::MAX, 2, |x| *x);
        // Three calls at once, so three items exist; two are kept, the smallest goes.
        kept.with(
            |_| false,
            || Ok(1),
            |_| kept.with(|_| false, || Ok(5), |_| kept.with(|_| false, || Ok(3), |_| Ok(()))),
        )
        .unwrap();
        assert_eq!(kept.counts(), (2, 2));
        assert_eq!(kept.with(|x| *x == 1, || Ok(99), |x| Ok(*x)).unwrap(), 99, "the smallest was let go");
    }

    #[test]
    fn callers_over_the_limit_wait_for_an_item() {
        let pool = Arc::new(Pool::<u64>::new(2, 2, |x| *x));
        let busy = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (pool, busy, most) = (pool.clone(), busy.clone(), most.clone());
                std::thread::spawn(move || {
                    pool.with(
                        |_| true,
                        || Ok(1),
                        |_| {
                            let now = busy.fetch_add(1, Ordering::SeqCst) + 1;
                            most.fetch_max(now, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(5));
                            busy.fetch_sub(1, Ordering::SeqCst);
                            Ok(())
                        },
                    )
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap().unwrap();
        }
        assert!(most.load(Ordering::SeqCst) <= 2);
        assert_eq!(pool.counts(), (2, 2));
    }
}
