//! When the CPU backend hashes on rayon's pool and when on the calling thread alone.

/// Inputs smaller than this never touch the thread pool: below it, waking the workers costs more
/// than they save (docs/performance.md).
pub(super) const PARALLEL_MIN_BYTES: usize = 512 * 1024;

use std::cell::Cell;
use std::thread::LocalKey;

std::thread_local! {
    /// Set by [`on_this_thread`] while its closure runs.
    static THIS_THREAD_ONLY: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f`, in which the CPU backend hashes on the calling thread alone, never on the rayon
/// pool, whatever the input's length: one thread's worth of CPU (Python's `max_threads=1`)
/// without handing the work to a one-thread pool and waiting for it. GPU backends are not
/// affected.
///
/// ```
/// let data = vec![7u8; 4 << 20];
/// let hash = b3accel::cpu::on_this_thread(|| b3accel::hash_on(b3accel::Device::Cpu, &data));
/// assert_eq!(hash.unwrap(), blake3::hash(&data));
/// ```
pub fn on_this_thread<R>(f: impl FnOnce() -> R) -> R {
    with_flag_set(&THIS_THREAD_ONLY, f)
}

/// Runs `f` with this thread's `flag` set, and puts it back as it was after, also when `f`
/// panics: the scopes that change how this thread's requests are hashed.
pub(super) fn with_flag_set<R>(flag: &'static LocalKey<Cell<bool>>, f: impl FnOnce() -> R) -> R {
    struct Restore(&'static LocalKey<Cell<bool>>, bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            self.0.set(self.1);
        }
    }
    let _restore = Restore(flag, flag.replace(true));
    f()
}

/// Whether to use the thread pool for `len` bytes: never for small inputs (a pool that has never
/// been used is not even started), not when the pool has a single thread, and not within
/// [`on_this_thread`].
pub(super) fn use_threads(len: usize) -> bool {
    len >= PARALLEL_MIN_BYTES && rayon::current_num_threads() > 1 && !THIS_THREAD_ONLY.get()
}
