//! When the CPU backend hashes on rayon's pool and when on the calling thread alone.

/// Inputs smaller than this never touch the thread pool: below it, waking the workers costs more
/// than they save (docs/performance.md).
pub(super) const PARALLEL_MIN_BYTES: usize = 512 * 1024;

std::thread_local! {
    /// Set by [`on_this_thread`] while its closure runs.
    static THIS_THREAD_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
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
    /// Puts the flag back as it was, also when `f` panics.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            THIS_THREAD_ONLY.set(self.0);
        }
    }
    let _restore = Restore(THIS_THREAD_ONLY.replace(true));
    f()
}

/// Whether to use the thread pool for `len` bytes: never for small inputs (a pool that has never
/// been used is not even started), not when the pool has a single thread, and not within
/// [`on_this_thread`].
pub(super) fn use_threads(len: usize) -> bool {
    len >= PARALLEL_MIN_BYTES && rayon::current_num_threads() > 1 && !THIS_THREAD_ONLY.get()
}
