//! Work on many inputs in parallel, results out in input order.
//!
//! [`run`] takes a known number of inputs: every thread of the pool claims the next input index
//! from one counter, so inputs finish roughly in order and few results wait. [`stream`] takes
//! inputs as they come (checkfile lines from a pipe): the calling thread reads them and worker
//! threads take them from a queue, never more than a window ahead of the output. In both,
//! whichever thread completes the next result in order emits it, and any later results it finds
//! waiting; emitting happens under one lock.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

/// The results not yet emitted and the emitter.
struct State<R, F, E> {
    next: usize,
    pending: BTreeMap<usize, R>,
    emit: F,
    error: Option<E>,
}

impl<R, F: FnMut(R) -> Result<(), E>, E> State<R, F, E> {
    fn new(emit: F) -> Self {
        State { next: 0, pending: BTreeMap::new(), emit, error: None }
    }

    /// Takes result `i`: emits it if it is next, with the waiting results that follow it, else
    /// keeps it. Returns false once an emit has failed (nothing more is emitted).
    fn complete(&mut self, i: usize, result: R) -> bool {
        if self.error.is_some() {
            return false;
        }
        if i != self.next {
            self.pending.insert(i, result);
            return true;
        }
        let mut result = result;
        loop {
            if let Err(e) = (self.emit)(result) {
                self.error = Some(e);
                self.pending.clear();
                return false;
            }
            self.next += 1;
            match self.pending.remove(&self.next) {
                Some(r) => result = r,
                None => return true,
            }
        }
    }

    fn finish(self) -> Result<(), E> {
        self.error.map_or(Ok(()), Err)
    }
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
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
    let state = Mutex::new(State::new(emit));
    let claim = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    rayon::broadcast(|_| {
        while !stop.load(Ordering::Relaxed) {
            let i = claim.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                break;
            }
            let result = work(i);
            if !locked(&state).complete(i, result) {
                stop.store(true, Ordering::Relaxed);
            }
        }
    });
    state.into_inner().unwrap_or_else(|p| p.into_inner()).finish()
}

/// The queue from the reading thread to the workers.
struct Queue<T> {
    items: VecDeque<(usize, T)>,
    closed: bool,
    /// Workers waiting for an item: only then is one woken (a wake is a system call).
    idle: usize,
}

/// Calls `work` on every item `next` gives (until it gives `None`) and `emit` on the results in
/// the order of the items. `next` runs on this thread, so it may block (a pipe) while the
/// workers go on and emit what they finish. With `threads` above 1, that many worker threads do
/// the work, and at most `window` items are read ahead of the last one emitted; items for which
/// `here` is true are worked on by this thread, in order among themselves. The first error from
/// `emit` stops the run (nothing more is read or emitted) and is returned.
pub fn stream<T, R, E>(
    threads: usize,
    window: usize,
    mut next: impl FnMut() -> Option<T>,
    here: impl Fn(&T) -> bool,
    work: impl Fn(T) -> R + Sync,
    emit: impl FnMut(R) -> Result<(), E> + Send,
) -> Result<(), E>
where
    T: Send,
    R: Send,
    E: Send,
{
    let state = Mutex::new(State::new(emit));
    if threads < 2 {
        let mut i = 0;
        while let Some(item) = next() {
            if !locked(&state).complete(i, work(item)) {
                break;
            }
            i += 1;
        }
        return state.into_inner().unwrap_or_else(|p| p.into_inner()).finish();
    }
    let window = window.max(1);
    let queue = Mutex::new(Queue { items: VecDeque::new(), closed: false, idle: 0 });
    let (queued, emitted) = (Condvar::new(), Condvar::new());
    // While the reading thread waits for the window to move, the `next` it waits for (set under
    // the state's lock): half a window on, so that it wakes once per half window, not per line.
    let resume_at = AtomicUsize::new(usize::MAX);
    let complete = |i: usize, r: R| {
        let mut s = locked(&state);
        let ok = s.complete(i, r);
        if !ok || s.next >= resume_at.load(Ordering::Relaxed) {
            emitted.notify_one();
        }
        drop(s);
        ok
    };
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let mut q = locked(&queue);
                while q.items.is_empty() && !q.closed {
                    q.idle += 1;
                    q = queued.wait(q).unwrap_or_else(|p| p.into_inner());
                    q.idle -= 1;
                }
                let Some((i, item)) = q.items.pop_front() else { break };
                drop(q);
                if !complete(i, work(item)) {
                    locked(&queue).items.clear();
                }
            });
        }
        let mut i = 0;
        loop {
            {
                let mut s = locked(&state);
                if i >= s.next + window {
                    let resume = i + 1 - window / 2;
                    resume_at.store(resume, Ordering::Relaxed);
                    while s.error.is_none() && s.next < resume {
                        s = emitted.wait(s).unwrap_or_else(|p| p.into_inner());
                    }
                    resume_at.store(usize::MAX, Ordering::Relaxed);
                }
                if s.error.is_some() {
                    break;
                }
            }
            let Some(item) = next() else { break };
            if here(&item) {
                if !complete(i, work(item)) {
                    break;
                }
            } else {
                let mut q = locked(&queue);
                q.items.push_back((i, item));
                if q.idle > 0 {
                    queued.notify_one();
                }
            }
            i += 1;
        }
        locked(&queue).closed = true;
        queued.notify_all();
    });
    state.into_inner().unwrap_or_else(|p| p.into_inner()).finish()
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

    #[test]
    fn streamed_results_come_out_in_order_within_the_window() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        for threads in [1, 2, 5] {
            let read = AtomicUsize::new(0);
            let mut seen = Vec::new();
            let mut items = 0..500usize;
            let r = super::stream(
                threads,
                8,
                || {
                    let i = items.next()?;
                    read.store(i + 1, Ordering::SeqCst);
                    Some(i)
                },
                |i| i % 50 == 0,
                |i| {
                    if i % 7 == 0 {
                        std::thread::sleep(std::time::Duration::from_micros(200));
                    }
                    i * 2
                },
                |r| {
                    // Never more than the window read ahead of what is emitted.
                    assert!(read.load(Ordering::SeqCst) <= r / 2 + 1 + 8, "threads {threads}");
                    seen.push(r);
                    Ok::<(), ()>(())
                },
            );
            assert_eq!(r, Ok(()));
            assert_eq!(seen, (0..500).map(|i| i * 2).collect::<Vec<_>>(), "threads {threads}");
        }
    }

    #[test]
    fn a_streamed_emit_error_stops_reading() {
        let mut read = 0;
        let mut seen = 0;
        let r = super::stream(
            3,
            4,
            || {
                read += 1;
                Some(read)
            },
            |_| false,
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
        assert_eq!(seen, 10);
        assert!(read <= 10 + 4 + 1, "read {read}");
    }
}
