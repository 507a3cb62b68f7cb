//! Local files for `b3accel.dask`'s tasks: a batch of whole files, or one piece of a file, read
//! and hashed in one call without the GIL and on the calling thread (the CPU backend's work stays
//! there; a GPU still does its own): a Dask worker's thread slots are the parallelism, one core
//! each, so a task spreading onto every core would only crowd the others.
//!
//! Each file must still be the size the client planned for; one that is missing, unreadable, a
//! directory or of another size is an `OSError` (its kind's subclass) whose message starts with
//! `PATH: bytes START..END:`, the range the task was to read.

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

/// The backend of `device=` (`None` is "auto").
fn backend(device: Option<&Bound<'_, PyAny>>) -> PyResult<Arc<dyn Backend>> {
    device.map_or(Ok(Target::One(Device::Auto)), Target::extract)?.open().py()
}

/// The outputs of whole files: for each of `paths` (each `sizes[i]` bytes long, as planned),
/// `length` bytes of its output from offset `seek`, in the mode of `key` / `derive_key_context`,
/// hashed on `device` on the calling thread with the GIL released. The first file that cannot be
/// read whole, at its planned size, raises its `OSError` (see the module's documentation).
#[pyfunction]
#[pyo3(signature = (paths, sizes, *, key = None, derive_key_context = None, length = 32, seek = 0, device = None))]
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
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    if paths.len() != sizes.len() {
        return Err(PyValueError::new_err(format!("{} paths but {} sizes", paths.len(), sizes.len())));
    }
    let mode = mode(key, derive_key_context)?;
    let backend = backend(device)?;
    // All outputs in one buffer: a length a caller chose that cannot be allocated is a
    // MemoryError, before any file is read.
    let mut outputs = paths
        .len()
        .checked_mul(length)
        .filter(|&n| n <= isize::MAX as usize)
        .map_or_else(|| Err(PyMemoryError::new_err("the outputs would not fit in memory")), crate::try_zeroed)?;
    let outputs = py.detach(|| {
        Threads::One.run_file(|| {
            for (i, (path, &size)) in paths.iter().zip(&sizes).enumerate() {
                let hashed = open_planned(path, size)
                    .and_then(|input| input.hash_with(backend.clone(), &mode, &FileOptions::default()));
                let (mut reader, _) = hashed.map_err(|e| range_error(path, 0, size, e))?;
                reader.set_position(seek);
                reader.fill(&mut outputs[i * length..(i + 1) * length]);
            }
            Ok::<_, io::Error>(outputs)
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
/// that cannot be read whole raises its `OSError` (see the module's documentation).
#[pyfunction]
#[pyo3(signature = (path, offset, length, file_size, *, key = None, derive_key_context = None, device = None))]
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
                hasher.finalize_non_root()
            })
            .map_err(|e| range_error(&path, offset, offset.saturating_add(length), e))
    })?;
    Ok(PyBytes::new(py, &cv))
}

/// The size of each local file of `paths`, looked up in parallel on the rayon pool with the GIL
/// released (a client plans a job over many files with them). A path that is missing or a
/// directory gives `-1` or `-2` in its place, for the caller to name in its own error; any other
/// failure to look one up is an `OSError` naming the first such path.
#[pyfunction]
pub fn local_file_sizes(py: Python<'_>, paths: Vec<Bound<'_, PyAny>>) -> PyResult<Vec<i64>> {
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
    let looked_up: Vec<io::Result<i64>> = py.detach(|| {
        paths
            .par_iter()
            .map(|path| match std::fs::metadata(path) {
                Ok(meta) if meta.is_dir() => Ok(-2),
                Ok(meta) => i64::try_from(meta.len()).map_err(io::Error::other),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(-1),
                Err(e) => Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
            })
            .collect()
    });
    Ok(looked_up.into_iter().collect::<io::Result<Vec<i64>>>()?)
}
