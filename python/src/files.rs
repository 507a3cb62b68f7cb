//! Local files for `b3accel.dask`'s tasks: a batch of whole files, or one piece of a file, read
//! and hashed in one call without the GIL and on the calling thread (the CPU backend's work stays
//! there; a GPU still does its own): a Dask worker's thread slots are the parallelism, one core
//! each, so a task spreading onto every core would only crowd the others.
//!
//! Each file must still be the size the client planned for and, where the client recorded it, have
//! the same identity (`local_file_sizes(..., identities=True)`: modification and change times and
//! inode) once its bytes are read: a file rewritten in place at the same size is caught. One that
//! is missing, unreadable, a directory, of another size or changed is an `OSError` (its kind's
//! subclass) whose message starts with `PATH: bytes START..END:`, the range the task was to read.

use crate::errors::OrPy;
use crate::mode::mode;
use crate::target::Target;
use crate::threads::Threads;
use b3accel::file::{FileOptions, Input};
use b3accel::hazmat::{self, HasherExt};
use b3accel::{Backend, Device, Error, Hasher, Mode};
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use pyo3::IntoPyObjectExt;
use std::fs::Metadata;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `err`, about bytes `start..end` of `path`, as the `OSError` of its kind naming both.
fn range_error(path: &Path, start: u64, end: u64, err: Error) -> io::Error {
    let kind = match &err {
        Error::Io(io) => io.kind(),
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, format!("{}: bytes {start}..{end}: {err}", path.display()))
}

/// The file at `path`, opened, checked to be `size` bytes long as planned (a stream, whose size
/// is unknown, is limited to `size` bytes and must hold them).
fn open_planned(path: &Path, size: u64) -> b3accel::Result<Input<'static>> {
    let input = Input::open(path)?;
    match input.size() {
        Some(actual) if actual != size => Err(Error::InvalidInput(format!(
            "the object is {actual} bytes, not the {size} planned (it changed while being hashed)"
        ))),
        Some(_) => Ok(input),
        None => input.range(0, size),
    }
}

/// What tells one version of a file from another beside its size: modification time (seconds,
/// nanoseconds), change time (seconds, nanoseconds) and inode. A write, truncation, `touch` or
/// rename over the path changes at least one of them (the change time cannot be set by users).
pub type Identity = (i64, i64, i64, i64, u64);

/// The identity of the file whose metadata is `meta`.
#[cfg(unix)]
fn identity(meta: &Metadata) -> Identity {
    use std::os::unix::fs::MetadataExt;
    (meta.mtime(), meta.mtime_nsec(), meta.ctime(), meta.ctime_nsec(), meta.ino())
}

/// The identity of the file whose metadata is `meta` (its modification time only, here).
#[cfg(not(unix))]
fn identity(meta: &Metadata) -> Identity {
    let modified = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
    modified.map_or((0, 0, 0, 0, 0), |d| (d.as_secs() as i64, i64::from(d.subsec_nanos()), 0, 0, 0))
}

/// Whether the file at `path`, just read, is still `size` bytes long with identity `expected`
/// (checked only where the caller recorded one): an error saying what changed otherwise.
fn check_unchanged(path: &Path, size: u64, expected: Option<&Identity>) -> b3accel::Result<()> {
    let Some(expected) = expected else { return Ok(()) };
    let meta = std::fs::metadata(path)?;
    let now = identity(&meta);
    let what = if meta.len() != size {
        "its size"
    } else if now.4 != expected.4 {
        "its inode (the path names another file)"
    } else if (now.0, now.1) != (expected.0, expected.1) {
        "its modification time"
    } else if (now.2, now.3) != (expected.2, expected.3) {
        "its change time"
    } else {
        return Ok(());
    };
    Err(Error::InvalidInput(format!(
        "the object changed while the job ran: {what} differs from what the client recorded"
    )))
}

/// A zeroed buffer of `count` outputs of `length` bytes each, or a `MemoryError` where that does
/// not fit in memory (the caller's `length` is never trusted to be allocatable).
fn output_buffer(count: usize, length: usize) -> PyResult<Vec<u8>> {
    let too_large = || PyMemoryError::new_err(format!("{count} outputs of {length} bytes do not fit in memory"));
    let total = count.checked_mul(length).filter(|&n| isize::try_from(n).is_ok()).ok_or_else(too_large)?;
    let mut buffer = Vec::new();
    buffer.try_reserve_exact(total).map_err(|_| too_large())?;
    buffer.resize(total, 0);
    Ok(buffer)
}

/// The backend of `device=` (`None` is "auto").
fn backend(device: Option<&Bound<'_, PyAny>>) -> PyResult<Arc<dyn Backend>> {
    device.map_or(Ok(Target::One(Device::Auto)), Target::extract)?.open().py()
}

/// The outputs of whole files: for each of `paths` (each `sizes[i]` bytes long, as planned),
/// `length` bytes of its output from offset `seek`, in the mode of `key` / `derive_key_context`,
/// hashed on `device` on the calling thread with the GIL released. The first file that cannot be
/// read whole, at its planned size (and identity, where `identities` gives each file's), raises
/// its `OSError` (see the module's documentation); outputs that do not fit in memory are a
/// `MemoryError`.
#[pyfunction]
#[pyo3(signature = (paths, sizes, *, key = None, derive_key_context = None, length = 32, seek = 0, device = None, identities = None))]
#[allow(clippy::too_many_arguments)]
pub fn hash_local_files<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    sizes: Vec<u64>,
    key: Option<&Bound<'py, PyAny>>,
    derive_key_context: Option<&str>,
    length: usize,
    seek: u64,
    device: Option<&Bound<'py, PyAny>>,
    identities: Option<Vec<Identity>>,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    if paths.len() != sizes.len() || identities.as_ref().is_some_and(|ids| ids.len() != paths.len()) {
        return Err(PyValueError::new_err(format!(
            "{} paths but {} sizes and {} identities",
            paths.len(),
            sizes.len(),
            identities.as_ref().map_or(paths.len(), Vec::len)
        )));
    }
    let mode = mode(key, derive_key_context)?;
    let backend = backend(device)?;
    let mut outputs = output_buffer(paths.len(), length)?;
    py.detach(|| {
        Threads::One.run_file(|| {
            for (i, (path, &size)) in paths.iter().zip(&sizes).enumerate() {
                let hashed = open_planned(path, size)
                    .and_then(|input| input.hash_with(backend.clone(), &mode, &FileOptions::default()))
                    .and_then(|hashed| {
                        check_unchanged(path, size, identities.as_ref().map(|ids| &ids[i]))?;
                        Ok(hashed)
                    });
                let (mut reader, _) = hashed.map_err(|e| range_error(path, 0, size, e))?;
                reader.set_position(seek);
                reader.fill(&mut outputs[i * length..(i + 1) * length]);
            }
            Ok::<_, io::Error>(())
        })
    })?;
    (0..paths.len())
        .map(|i| {
            PyBytes::new_with(py, length, |out| {
                out.copy_from_slice(&outputs[i * length..(i + 1) * length]);
                Ok(())
            })
        })
        .collect()
}

/// The 32-byte chaining value of bytes `offset..offset + length` of the file at `path` (which
/// must be `file_size` bytes long, as planned) as a subtree of the whole file (see `subtree`
/// for valid pieces), hashed on `device` on the calling thread with the GIL released. A range
/// that cannot be read whole, or a file whose identity is no longer `identity` (where given)
/// once it is read, raises its `OSError` (see the module's documentation).
#[pyfunction]
#[pyo3(signature = (path, offset, length, file_size, *, key = None, derive_key_context = None, device = None, identity = None))]
#[allow(clippy::too_many_arguments)]
pub fn local_file_subtree<'py>(
    py: Python<'py>,
    path: PathBuf,
    offset: u64,
    length: u64,
    file_size: u64,
    key: Option<&Bound<'py, PyAny>>,
    derive_key_context: Option<&str>,
    device: Option<&Bound<'py, PyAny>>,
    identity: Option<Identity>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mode: Mode = mode(key, derive_key_context)?;
    hazmat::check_subtree(offset, length).py()?;
    let backend = backend(device)?;
    let cv = py.detach(|| {
        Threads::One
            .run_file(|| {
                let mut hasher = Hasher::with_backend(backend, &mode);
                hasher.set_input_offset(offset)?;
                open_planned(&path, file_size)?.range(offset, length)?.update(&mut hasher, &FileOptions::default())?;
                check_unchanged(&path, file_size, identity.as_ref())?;
                hasher.finalize_non_root()
            })
            .map_err(|e| range_error(&path, offset, offset.saturating_add(length), e))
    })?;
    Ok(PyBytes::new(py, &cv))
}

/// The size of each local file of `paths`, looked up in parallel on the rayon pool with the GIL
/// released (a client plans a job over many files with them). A path that is missing or a
/// directory gives `-1` or `-2` in its place, for the caller to name in its own error; any other
/// failure to look one up is an `OSError` naming the first such path. With `identities=True` the
/// result is `(sizes, identities)`: each file's `Identity` (None for a missing path or directory),
/// for the tasks to check that the file they read is the one the client planned for.
#[pyfunction]
#[pyo3(signature = (paths, *, identities = false))]
pub fn local_file_sizes<'py>(
    py: Python<'py>,
    paths: Vec<Bound<'py, PyAny>>,
    identities: bool,
) -> PyResult<Bound<'py, PyAny>> {
    use rayon::prelude::*;
    // A str is taken as it is (os.fspath's encoding, done for each of 100,000 paths, cost more
    // than their stats); anything else, or a str that is not valid UTF-8, as a path.
    let paths = paths
        .iter()
        .map(|p| match p.cast::<PyString>().ok().and_then(|s| s.to_str().ok()) {
            Some(s) => Ok(PathBuf::from(s)),
            None => p.extract::<PathBuf>(),
        })
        .collect::<PyResult<Vec<PathBuf>>>()?;
    let looked_up: Vec<io::Result<(i64, Option<Identity>)>> = py.detach(|| {
        paths
            .par_iter()
            .map(|path| match std::fs::metadata(path) {
                Ok(meta) if meta.is_dir() => Ok((-2, None)),
                Ok(meta) => Ok((i64::try_from(meta.len()).map_err(io::Error::other)?, Some(identity(&meta)))),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok((-1, None)),
                Err(e) => Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
            })
            .collect()
    });
    let (sizes, ids): (Vec<i64>, Vec<Option<Identity>>) =
        looked_up.into_iter().collect::<io::Result<Vec<_>>>()?.into_iter().unzip();
    if identities {
        (sizes, ids).into_bound_py_any(py)
    } else {
        sizes.into_bound_py_any(py)
    }
}
