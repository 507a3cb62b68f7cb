//! `max_threads`: how many of the CPU backend's rayon threads one call may use, as in blake3-py
//! (1, any larger number, or AUTO for the whole global pool). The CPU backend splits its work
//! with `rayon::join`, so running a call inside a smaller pool limits it; one thread is the
//! calling thread itself (`b3accel::cpu::on_this_thread`).

use pyo3::exceptions::PyValueError;
use pyo3::PyResult;
use rayon::{ThreadPool, ThreadPoolBuilder};
use std::cell::OnceCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// blake3-py's `AUTO`: as many threads as the implementation likes.
pub const AUTO: isize = -1;

/// Inputs shorter than this run on the calling thread whatever `max_threads` says: the CPU
/// backend hashes them on one thread anyway (its threads start at 512 KiB), and handing them to
/// a pool costs more than they do.
const POOL_MIN_BYTES: usize = 512 * 1024;

/// Where a call's rayon work runs.
#[derive(Clone)]
pub enum Threads {
    /// One thread: the calling thread (a file: a one-thread pool of the calling thread's own), so
    /// that Python threads that each hash with `max_threads=1` still run in parallel.
    One,
    /// The global rayon pool (all cores).
    Auto,
    /// A pool of this many threads, shared by every hasher that asks for the same number.
    Pool(Arc<ThreadPool>),
}

impl Threads {
    /// `max_threads` as blake3-py takes it: a positive number or `AUTO`; anything else is a
    /// `ValueError`.
    pub fn new(max_threads: isize) -> PyResult<Threads> {
        static POOLS: OnceLock<Mutex<HashMap<usize, Arc<ThreadPool>>>> = OnceLock::new();
        match max_threads {
            AUTO => Ok(Threads::Auto),
            1 => Ok(Threads::One),
            n if n > 1 => {
                let n = n as usize;
                if n >= rayon::current_num_threads() {
                    return Ok(Threads::Auto);
                }
                let mut pools = POOLS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
                if let Some(pool) = pools.get(&n) {
                    return Ok(Threads::Pool(pool.clone()));
                }
                let pool = ThreadPoolBuilder::new()
                    .num_threads(n)
                    .build()
                    .map_err(|e| PyValueError::new_err(format!("max_threads={n}: {e}")))?;
                let pool = Arc::new(pool);
                pools.insert(n, pool.clone());
                Ok(Threads::Pool(pool))
            }
            n => Err(PyValueError::new_err(format!(
                "max_threads must be a positive number of threads or blake3.AUTO (-1), not {n}"
            ))),
        }
    }

    /// Runs `f`, which hashes `len` bytes in memory, within these threads.
    pub fn run<R: Send>(&self, len: usize, f: impl FnOnce() -> R + Send) -> R {
        match self {
            Threads::Auto => f(),
            Threads::One => b3accel::cpu::on_this_thread(f),
            _ if len < POOL_MIN_BYTES => f(),
            Threads::Pool(pool) => pool.install(f),
        }
    }

    /// Runs `f`, which hashes a file, within these threads: inside a pool of their number, since
    /// reading a mapped file sizes its page-populating work by the pool it runs in.
    pub fn run_file<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        thread_local! {
            static SOLO: OnceCell<Option<ThreadPool>> = const { OnceCell::new() };
        }
        match self {
            Threads::Auto => f(),
            Threads::Pool(pool) => pool.install(f),
            Threads::One => SOLO.with(|cell| {
                // A pool that cannot start (no thread to spare) leaves the call on the global one.
                match cell.get_or_init(|| ThreadPoolBuilder::new().num_threads(1).build().ok()) {
                    Some(pool) => pool.install(f),
                    None => f(),
                }
            }),
        }
    }
}
