//! Work on many inputs in parallel, results out in input order.
//!
//! [`run`] takes a known number of inputs: every thread of the pool claims the next input index
//! from one counter, so inputs finish roughly in order and few results wait. [`stream`] takes
//! inputs as they come (checkfile lines from a pipe): the calling thread reads them and worker
//! threads take them from a queue, never more than a window ahead of the output. In both, a
//! finished result joins the waiting ones under one lock, and one thread at a time (the one that
//! finds no other emitting) takes the results that are next in order and emits them outside that
//! lock, so that a write never holds up the threads finishing further results. When no further
//! result is ready, that thread tells the emitter ([`Emit::Idle`]) before it stops: output is
//! flushed there, so lines ready together leave in one write, and every line is out before the
//! process waits for anything (an input, a pipe, a signal).

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

/// What the emitter is called with.
pub enum Emit<R> {
    /// The next result in input order.
    Result(R),
    /// No further result is ready now, and the next may be long in coming: write out what is held.
    Idle,
}

/// The results not yet emitted.
struct State<R, E> {
    /// The index of the next result to take for emitting.
    next: usize,
    /// How many results have been emitted.
    emitted: usize,
    pending: BTreeMap<usize, R>,
    /// Whether a thread is emitting: only one does at a time.
    emitting: bool,
    error: Option<E>,
    /// While the reading thread of [`stream`] waits for the window to move, the `emitted` it
    /// waits for: half a window on, so that it wakes once per half window, not per line.
    resume_at: usize,
}

/// The emitter and the results it is handed next, locked only by the thread whose turn it is to
/// emit (so never waited for).
struct Emitter<R, F> {
    emit: F,
    batch: Vec<R>,
}

/// Results in, emitted in order.
struct Ordered<R, F, E> {
    state: Mutex<State<R, E>>,
    emitter: Mutex<Emitter<R, F>>,
    /// Signalled when `emitted` reaches `resume_at`, or an emit fails.
    moved: Condvar,
}

impl<R, F: FnMut(Emit<R>) -> Result<(), E>, E> Ordered<R, F, E> {
    fn new(emit: F) -> Self {
        Ordered {
            state: Mutex::new(State {
                next: 0,
                emitted: 0,
                pending: BTreeMap::new(),
                emitting: false,
                error: None,
                resume_at: usize::MAX,
            }),
            emitter: Mutex::new(Emitter { emit, batch: Vec::new() }),
            moved: Condvar::new(),
        }
    }

    /// Takes result `i`, and emits what is ready if `i` is next and no other thread is emitting
    /// (one that is will find `i` when it looks again). Returns false once an emit has failed
    /// (nothing more is emitted).
    fn complete(&self, i: usize, result: R) -> bool {
        {
            let mut s = locked(&self.state);
            if s.error.is_some() {
                return false;
            }
            s.pending.insert(i, result);
            // With no thread emitting, the next result was not waiting, so only `i` can be it.
            if s.emitting || i != s.next {
                return true;
            }
            s.emitting = true;
        }
        self.emit_ready()
    }

    /// Emits, in turns, every result next in order until none is ready, then [`Emit::Idle`];
    /// gives up the turn only when nothing was ready after that either. Returns false when an
    /// emit failed.
    fn emit_ready(&self) -> bool {
        let mut emitter = locked(&self.emitter);
        let Emitter { emit, batch } = &mut *emitter;
        // Whether results went out since the last Idle, and how many in the last batch.
        let (mut held, mut done) = (false, 0);
        loop {
            {
                let mut s = locked(&self.state);
                s.emitted += done;
                if s.emitted >= s.resume_at {
                    self.moved.notify_one();
                }
                let s = &mut *s;
                while let Some(r) = s.pending.remove(&s.next) {
                    batch.push(r);
                    s.next += 1;
                }
                if batch.is_empty() && !held {
                    s.emitting = false;
                    return true;
                }
            }
            held = !batch.is_empty();
            done = batch.len();
            let result = if held { batch.drain(..).try_for_each(|r| emit(Emit::Result(r))) } else { emit(Emit::Idle) };
            if let Err(e) = result {
                let mut s = locked(&self.state);
                s.error = Some(e);
                s.pending.clear();
                s.emitting = false;
                self.moved.notify_one();
                return false;
            }
        }
    }

    fn finish(self) -> Result<(), E> {
        let s = self.state.into_inner().unwrap_or_else(|p| p.into_inner());
        s.error.map_or(Ok(()), Err)
    }
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Calls `work(i)` for every `i` in `0..n` and `emit` on the results in order of `i`, with
/// [`Emit::Idle`] whenever the next result is not ready yet (and at the end). With `parallel`,
/// the work runs on every thread of the current rayon pool; otherwise on this thread, one input
/// after the other. The first error from `emit` stops the run (inputs already started finish,
/// nothing more is emitted) and is returned.
pub fn run<R, E, W, F>(n: usize, parallel: bool, work: W, emit: F) -> Result<(), E>
where
    R: Send,
    E: Send,
    W: Fn(usize) -> R + Sync,
    F: FnMut(Emit<R>) -> Result<(), E> + Send,
{
    let ordered = Ordered::new(emit);
    if !parallel || n < 2 || rayon::current_num_threads() < 2 {
        for i in 0..n {
            if !ordered.complete(i, work(i)) {
                break;
            }
        }
        return ordered.finish();
    }
    let claim = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    rayon::broadcast(|_| {
        while !stop.load(Ordering::Relaxed) {
            let i = claim.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                break;
            }
            if !ordered.complete(i, work(i)) {
                stop.store(true, Ordering::Relaxed);
            }
        }
    });
    ordered.finish()
}

/// The queue from the reading thread to the workers.
struct Queue<T> {
    items: VecDeque<(usize, T)>,
    closed: bool,
    /// Workers waiting for an item: only then is one woken (a wake is a system call).
    idle: usize,
}

/// Calls `work` on every item `next` gives (until it gives `None`) and `emit` on the results in
/// the order of the items, with [`Emit::Idle`] whenever the next result is not ready yet (and at
/// the end). `next` runs on this thread, so it may block (a pipe) while the workers go on and
/// emit what they finish. With `threads` above 1, that many worker threads do the work, and at
/// most `window` items are read ahead of the last one emitted; items for which `here` is true
/// are worked on by this thread, in order among themselves. The first error from `emit` stops
/// the run (nothing more is read or emitted) and is returned.
pub fn stream<T, R, E>(
    threads: usize,
    window: usize,
    mut next: impl FnMut() -> Option<T>,
    here: impl Fn(&T) -> bool,
    work: impl Fn(T) -> R + Sync,
    emit: impl FnMut(Emit<R>) -> Result<(), E> + Send,
) -> Result<(), E>
where
    T: Send,
    R: Send,
    E: Send,
{
    let ordered = Ordered::new(emit);
    if threads < 2 {
        let mut i = 0;
        while let Some(item) = next() {
            if !ordered.complete(i, work(item)) {
                break;
            }
            i += 1;
        }
        return ordered.finish();
    }
    let window = window.max(1);
    let queue = Mutex::new(Queue { items: VecDeque::new(), closed: false, idle: 0 });
    let queued = Condvar::new();
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
                if !ordered.complete(i, work(item)) {
                    locked(&queue).items.clear();
                }
            });
        }
        let mut i = 0;
        loop {
            {
                let mut s = locked(&ordered.state);
                if i >= s.emitted + window {
                    s.resume_at = i + 1 - window / 2;
                    while s.error.is_none() && s.emitted < s.resume_at {
                        s = ordered.moved.wait(s).unwrap_or_else(|p| p.into_inner());
                    }
                    s.resume_at = usize::MAX;
                }
                if s.error.is_some() {
                    break;
                }
            }
            let Some(item) = next() else { break };
            if here(&item) {
                if !ordered.complete(i, work(item)) {
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
    ordered.finish()
}

#[cfg(test)]
mod tests {
    use super::Emit;
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
                |e| {
                    if let Emit::Result(r) = e {
                        seen.push(r);
                    }
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
                |e| match e {
                    Emit::Result(i) => {
                        seen += 1;
                        if i == 10 {
                            Err(i)
                        } else {
                            Ok(())
                        }
                    }
                    Emit::Idle => Ok(()),
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
                |e| {
                    if let Emit::Result(r) = e {
                        // Never more than the window read ahead of what is emitted.
                        assert!(read.load(Ordering::SeqCst) <= r / 2 + 1 + 8, "threads {threads}");
                        seen.push(r);
                    }
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
            |e| match e {
                Emit::Result(i) => {
                    seen += 1;
                    if i == 10 {
                        Err(i)
                    } else {
                        Ok(())
                    }
                }
                Emit::Idle => Ok(()),
            },
        );
        assert_eq!(r, Err(10));
        assert_eq!(seen, 10);
        assert!(read <= 10 + 4 + 1, "read {read}");
    }

    /// Every result is out, followed by `Idle`, before the run waits for the next: input 5's
    /// work waits until the emitter has had `Idle` after result 4 (a run that waited first
    /// would never finish).
    #[test]
    fn idle_comes_before_waiting_for_the_next_result() {
        use std::sync::{Condvar, Mutex};
        use std::time::Duration;
        type Work<'a> = dyn Fn(usize) -> usize + Sync + 'a;
        type Emitter<'a> = dyn FnMut(Emit<usize>) -> Result<(), ()> + Send + 'a;
        type Run<'a> = dyn Fn(&Work, &mut Emitter) -> Result<(), ()> + 'a;
        let check = |run: &Run| {
            // How many results had been emitted at the last Idle.
            let flushed = (Mutex::new(0usize), Condvar::new());
            let mut events = Vec::new();
            let work = |i: usize| {
                if i == 5 {
                    let (n, cv) = &flushed;
                    let (n, wait) =
                        cv.wait_timeout_while(n.lock().unwrap(), Duration::from_secs(60), |n| *n < 5).unwrap();
                    assert!(!wait.timed_out(), "no Idle after result 4 while result 5 was awaited: {}", *n);
                }
                i
            };
            let mut seen = 0;
            run(&work, &mut |e| {
                match e {
                    Emit::Result(r) => {
                        assert_eq!(r, seen);
                        seen += 1;
                        events.push(Some(r));
                    }
                    Emit::Idle => {
                        *flushed.0.lock().unwrap() = seen;
                        flushed.1.notify_all();
                        events.push(None);
                    }
                }
                Ok(())
            })
            .unwrap();
            assert_eq!(seen, 40);
            assert_eq!(events.last(), Some(&None), "the last event is Idle");
        };
        let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
        for parallel in [false, true] {
            pool.install(|| check(&|work, emit| super::run(40, parallel, work, emit)));
        }
        for threads in [1, 3] {
            check(&|work, emit| {
                let mut items = 0..40;
                super::stream(threads, 8, || items.next(), |i| i % 9 == 0, work, emit)
            });
        }
    }
}
