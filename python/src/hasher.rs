//! `b3accel.blake3`: blake3-py's hasher class, on any device.

use crate::buffer::with_bytes;
use crate::errors::{file_error, OrPy};
use crate::mode::mode;
use crate::target::Target;
use crate::threads::{Threads, AUTO};
use b3accel::{Backend, Device, Hasher, Mode, BLOCK_LEN, CHUNK_LEN, KEY_LEN, OUT_LEN};
use pyo3::exceptions::{PyMemoryError, PyOverflowError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use zeroize::Zeroize;

/// Inputs and outputs shorter than this are handled without releasing the GIL: releasing and
/// taking it back would cost more than they do (the figure CPython's hashlib uses).
pub const GIL_MIN_BYTES: usize = 2048;

/// Input up to this length is kept here and hashed whole at `digest` by the crate's one-shot
/// functions (one chunk without any backend, more in one call to it, straight to the root hash):
/// a `bytes` object that is all the input is held as it is (its bytes cannot change), other
/// input is gathered (copied) while shorter than this. Longer input goes to a `b3accel::Hasher`.
/// One batch of the CPU backend (`Backend::batch_len`): below it that hasher, too, would only
/// gather the input, after a set-up that costs small inputs more than hashing them; from it on,
/// it hashes the input where it lies, which costs less than a copy, but more than holding.
const SHORT_MAX: usize = 64 * CHUNK_LEN;

/// An incremental BLAKE3 hasher with blake3-py's interface, whose bulk work runs on `device`.
///
/// `blake3(data=b"", /, *, key=None, derive_key_context=None, max_threads=1,
/// usedforsecurity=True, device="auto")`: `key` (32 bytes) selects the keyed hash,
/// `derive_key_context` (a str) key derivation; `max_threads` is 1, a larger number or
/// `blake3.AUTO` and limits the CPU backend's threads; `usedforsecurity` is ignored;
/// `device` is "auto", "cpu", "wgpu:N", "opencl:N", "all" or a list of devices.
#[pyclass(name = "blake3", module = "b3accel", frozen)]
pub struct Blake3 {
    // Frozen with a lock inside: Python threads that share a hasher wait for each other
    // instead of getting a borrow error (the GIL is released while hashing).
    state: Mutex<State>,
    threads: Threads,
    target: Target,
    backend: Arc<dyn Backend>,
    mode: Mode,
}

/// What has been added so far: short input in `held` (one `bytes` object) or `pending`, or
/// everything in `hasher` (boxed: a hasher that never needs one is a small object).
#[derive(Clone)]
struct State {
    held: Option<Held>,
    pending: Vec<u8>,
    hasher: Option<Box<Hasher>>,
    /// Whether `pending` is key material (key derivation), wiped wherever it is freed, as the
    /// crate's hasher does; other input is not secret, and wiping it would cost as much as
    /// hashing it.
    secret: bool,
}

impl State {
    /// Nothing added yet, in `mode`.
    fn new(mode: &Mode) -> State {
        State { held: None, pending: Vec::new(), hasher: None, secret: matches!(mode, Mode::DeriveKey(_)) }
    }

    /// Whether nothing has been added.
    fn is_empty(&self) -> bool {
        self.held.is_none() && self.pending.is_empty() && self.hasher.is_none()
    }

    /// The short input kept here: the held `bytes` or the gathered bytes.
    fn short_input(&self) -> &[u8] {
        self.held.as_ref().map_or(&self.pending, Held::as_slice)
    }

    /// Forgets `pending`, wiping it if it is secret.
    fn forget_pending(&mut self) {
        if self.secret {
            self.pending.zeroize();
        }
        self.pending = Vec::new();
    }

    /// How many bytes have been added.
    fn count(&self) -> u64 {
        self.hasher.as_ref().map_or(self.short_input().len() as u64, |h| h.count())
    }

    /// Appends `data` to `pending` (after the held bytes, copied there first), wiping a secret
    /// buffer that it outgrows before it is freed.
    fn gather(&mut self, data: &[u8]) {
        if let Some(held) = self.held.take() {
            self.pending.reserve_exact(held.as_slice().len() + data.len());
            self.pending.extend_from_slice(held.as_slice());
        }
        let needed = self.pending.len() + data.len();
        if needed > self.pending.capacity() {
            let mut grown = Vec::with_capacity(needed.next_power_of_two().min(SHORT_MAX).max(needed));
            grown.extend_from_slice(&self.pending);
            self.forget_pending();
            self.pending = grown;
        }
        self.pending.extend_from_slice(data);
    }
}

impl Drop for State {
    fn drop(&mut self) {
        self.forget_pending();
    }
}

/// A `bytes` object held instead of copied, and where its bytes lie: they cannot change, and
/// CPython never moves an object, so they can be read in place, also without the GIL, while the
/// reference lives.
struct Held {
    object: Py<PyBytes>,
    ptr: *const u8,
    len: usize,
}

// SAFETY: the bytes are immutable and kept alive by `object`, which may be used from any thread.
unsafe impl Send for Held {}
// SAFETY: as above; nothing is written through `ptr`.
unsafe impl Sync for Held {}

impl Held {
    fn new(bytes: &Bound<'_, PyBytes>) -> Held {
        let slice = bytes.as_bytes();
        Held { object: bytes.clone().unbind(), ptr: slice.as_ptr(), len: slice.len() }
    }

    fn as_slice(&self) -> &[u8] {
        // SAFETY: `object` keeps its `len` immutable bytes at `ptr` alive and in place.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Clone for Held {
    /// Another reference (`copy()` runs with the GIL held).
    fn clone(&self) -> Held {
        Python::attach(|py| Held { object: self.object.clone_ref(py), ptr: self.ptr, len: self.len })
    }
}

/// A lock guard carried out of `Python::detach`, which runs its closure on the calling thread:
/// the guard is taken and released on one thread, as a `MutexGuard` must be.
struct WaitedFor<'a>(MutexGuard<'a, State>);

// SAFETY: only ever returned from `detach`'s closure to the thread that ran it (see above).
unsafe impl Send for WaitedFor<'_> {}

impl Blake3 {
    /// The state, locked, by a thread without the GIL (inside `detach`).
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The state, locked, by a thread that holds the GIL. Where another thread holds the lock
    /// (hashing without the GIL, or blocked reading a FIFO), this one waits without the GIL, so
    /// that every other Python thread runs meanwhile. No thread waits for the GIL while it holds
    /// the lock and another waits for the lock while holding the GIL: every wait for the lock
    /// by a GIL holder goes through here.
    fn lock_py(&self, py: Python<'_>) -> MutexGuard<'_, State> {
        match self.state.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => py.detach(|| WaitedFor(self.lock())).0,
        }
    }

    /// Adds `data` (any object with the buffer protocol): a short `bytes` object that is the
    /// first input is held, other short input gathered; see [`Blake3::add`].
    fn add_object(&self, data: &Bound<'_, PyAny>) -> PyResult<()> {
        if let Ok(bytes) = data.cast_exact::<PyBytes>() {
            let mut state = self.lock_py(data.py());
            if state.is_empty() && bytes.as_bytes().len() <= SHORT_MAX {
                state.held = Some(Held::new(bytes));
                return Ok(());
            }
        }
        with_bytes(data, |bytes| self.add(data.py(), bytes))
    }

    /// Adds `data`: gathered while the input is short (a copy, with the GIL held: cheaper than
    /// letting it go), else hashed, with the GIL released unless `data` is short. The lock is
    /// taken before entering the thread pool: a pool thread that waited on it could be the one
    /// that holds it.
    fn add(&self, py: Python<'_>, data: &[u8]) -> PyResult<()> {
        let hash = |state: &mut State| {
            let hasher = self.hasher(state)?;
            self.threads.run(data.len(), || hasher.update(data).map(|_| ()))
        };
        {
            let mut state = self.lock_py(py);
            if state.hasher.is_none() && state.short_input().len() + data.len() < SHORT_MAX {
                state.gather(data);
                return Ok(());
            }
            if data.len() < GIL_MIN_BYTES {
                return hash(&mut state).py();
            }
        }
        py.detach(|| hash(&mut self.lock())).py()
    }

    /// The state's incremental hasher, made (and given the pending input) if there is none yet.
    fn hasher<'a>(&self, state: &'a mut State) -> b3accel::Result<&'a mut Hasher> {
        if state.hasher.is_none() {
            let mut hasher = Box::new(Hasher::with_backend(self.backend.clone(), &self.mode));
            hasher.update(state.short_input())?;
            // Here without the GIL, PyO3 lets the held object's reference go as the GIL is taken
            // back.
            state.held = None;
            state.forget_pending();
            state.hasher = Some(hasher);
        }
        Ok(state.hasher.as_mut().expect("made above"))
    }

    /// Fills `out` with the output stream from byte `seek` of everything added so far, with the
    /// GIL released unless the input and the output are short.
    fn fill(&self, py: Python<'_>, seek: u64, out: &mut [u8]) -> PyResult<()> {
        {
            let state = self.lock_py(py);
            if out.len() < GIL_MIN_BYTES && state.count() < GIL_MIN_BYTES as u64 {
                return self.output(&state, seek, out).py();
            }
        }
        py.detach(|| self.output(&self.lock(), seek, out)).py()
    }

    /// Fills `out` with the output stream from byte `seek` of what `state` holds.
    fn output(&self, state: &State, seek: u64, out: &mut [u8]) -> b3accel::Result<()> {
        if let Some(hasher) = &state.hasher {
            let mut reader = hasher.finalize_xof()?;
            reader.set_position(seek);
            reader.fill(out);
            return Ok(());
        }
        let data = state.short_input();
        match self.target {
            Target::One(device) if seek == 0 && out.len() == OUT_LEN => {
                let hash = match &self.mode {
                    Mode::Hash => b3accel::hash_on(device, data),
                    Mode::Keyed(key) => b3accel::keyed_hash_on(device, key, data),
                    Mode::DeriveKey(context) => b3accel::derive_key_on(device, context, data),
                }?;
                out.copy_from_slice(hash.as_bytes());
            }
            Target::One(device) => b3accel::hash_xof_on(device, &self.mode, data, seek, out)?,
            _ if seek == 0 && out.len() == OUT_LEN => {
                out.copy_from_slice(b3accel::hash_with(&*self.backend, &self.mode, data)?.as_bytes());
            }
            _ => {
                let mut reader = b3accel::xof_reader_with(&*self.backend, &self.mode, data)?;
                reader.set_position(seek);
                reader.fill(out);
            }
        }
        Ok(())
    }
}

// blake3-py's class attributes keep their lowercase names.
#[allow(non_upper_case_globals)]
#[pymethods]
impl Blake3 {
    /// The name of the algorithm, "blake3".
    #[classattr]
    const name: &'static str = "blake3";
    /// The default output length in bytes, 32.
    #[classattr]
    const digest_size: usize = OUT_LEN;
    /// BLAKE3's block length in bytes, 64.
    #[classattr]
    const block_size: usize = BLOCK_LEN;
    /// The key length in bytes, 32.
    #[classattr]
    const key_size: usize = KEY_LEN;
    /// The `max_threads` value that lets the CPU backend use every core.
    #[classattr]
    const AUTO: isize = AUTO;

    #[new]
    #[pyo3(signature = (data = None, /, *, key = None, derive_key_context = None, max_threads = 1, usedforsecurity = true, device = None))]
    fn new(
        py: Python<'_>,
        data: Option<&Bound<'_, PyAny>>,
        key: Option<&Bound<'_, PyAny>>,
        derive_key_context: Option<&str>,
        max_threads: isize,
        usedforsecurity: bool,
        device: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Blake3> {
        let _ = usedforsecurity;
        let mode = mode(key, derive_key_context)?;
        let threads = Threads::new(max_threads)?;
        let target = match device {
            Some(d) => Target::extract(d)?,
            None => Target::One(Device::Auto),
        };
        // Opening a GPU can take a while: without the GIL (the CPU and auto open at once).
        let backend = match &target {
            Target::One(Device::Auto | Device::Cpu) => target.open(),
            _ => py.detach(|| target.open()),
        }
        .py()?;
        let hasher = Blake3 { state: Mutex::new(State::new(&mode)), threads, target, backend, mode };
        if let Some(data) = data {
            hasher.add_object(data)?;
        }
        Ok(hasher)
    }

    /// Adds `data` (any C-contiguous buffer: bytes, bytearray, memoryview, mmap, NumPy array),
    /// read in place; returns the hasher.
    #[pyo3(signature = (data, /))]
    fn update<'py>(this: Bound<'py, Self>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        this.get().add_object(data)?;
        Ok(this)
    }

    /// Adds the contents of the file at `path` (str or path-like), memory-mapped where that
    /// pays; returns the hasher. A missing file is `FileNotFoundError`, a directory
    /// `IsADirectoryError`, other failures (a file that changes while it is read among them)
    /// `OSError`, each naming the path; nothing is added then.
    #[pyo3(signature = (path))]
    fn update_mmap<'py>(this: Bound<'py, Self>, path: PathBuf) -> PyResult<Bound<'py, Self>> {
        let me = this.get();
        this.py()
            .detach(|| {
                let mut guard = me.lock();
                let hasher = me.hasher(&mut guard)?;
                me.threads.run_file(|| hasher.update_mmap(&path).map(|_| ()))
            })
            .map_err(|e| file_error(e, &path))?;
        Ok(this)
    }

    /// An independent copy of the hasher, in its current state.
    fn copy(&self, py: Python<'_>) -> Blake3 {
        Blake3 {
            state: Mutex::new(self.lock_py(py).clone()),
            threads: self.threads.clone(),
            target: self.target.clone(),
            backend: self.backend.clone(),
            mode: self.mode.clone(),
        }
    }

    /// Forgets all input, keeping the mode, the key and the device.
    fn reset(&self, py: Python<'_>) {
        // The old state (and the gathered input in it) is wiped as it is dropped.
        *self.lock_py(py) = State::new(&self.mode);
    }

    /// `length` bytes of output (32 by default) starting at byte `seek` of BLAKE3's extendable
    /// output. The hasher is not changed: more input may follow.
    #[pyo3(signature = (length = OUT_LEN, *, seek = 0))]
    fn digest<'py>(&self, py: Python<'py>, length: usize, seek: u64) -> PyResult<Bound<'py, PyBytes>> {
        if length > isize::MAX as usize {
            return Err(PyOverflowError::new_err("length overflows isize"));
        }
        PyBytes::new_with(py, length, |out| self.fill(py, seek, out))
    }

    /// As `digest`, in lowercase hexadecimal.
    #[pyo3(signature = (length = OUT_LEN, *, seek = 0))]
    fn hexdigest<'py>(&self, py: Python<'py>, length: usize, seek: u64) -> PyResult<Bound<'py, PyString>> {
        if length > (isize::MAX / 2) as usize {
            return Err(PyOverflowError::new_err("length overflows isize"));
        }
        // The default 32 bytes on the stack; longer output is produced in the second half of a
        // buffer of its hex length and turned into hex in place. A length that cannot be
        // allocated is a MemoryError, as for `digest`.
        let mut short = [0u8; 4 * OUT_LEN];
        let mut long;
        let buf = if 2 * length <= short.len() {
            &mut short[..2 * length]
        } else {
            long = crate::try_zeroed(2 * length).map_err(|_| {
                PyMemoryError::new_err(format!("cannot allocate {length} bytes of output as {} hex digits", 2 * length))
            })?;
            &mut long[..]
        };
        self.fill(py, seek, &mut buf[length..])?;
        if buf.len() < GIL_MIN_BYTES {
            crate::hex_in_place(buf);
        } else {
            py.detach(|| crate::hex_in_place(buf));
        }
        crate::ascii_str(py, buf)
    }
}
