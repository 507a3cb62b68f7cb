//! The crate's errors as the Python exceptions a user expects.

use b3accel::Error;
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::PyErr;
use std::path::Path;

create_exception!(
    b3accel,
    DeviceError,
    PyRuntimeError,
    "A device that is not there, not built in, or that failed (its driver's message included)."
);

/// Bad arguments and bad pieces are `ValueError`; reading failures are the `OSError` subclass of
/// their kind (`FileNotFoundError`, `IsADirectoryError`, `PermissionError`, ...); anything a
/// device or its driver says is `DeviceError`.
pub fn to_py(e: Error) -> PyErr {
    match e {
        Error::InvalidInput(_) | Error::InvalidPiece { .. } => PyValueError::new_err(e.to_string()),
        Error::Io(io) => PyErr::from(io),
        other => DeviceError::new_err(other.to_string()),
    }
}

/// An error met while reading the file at `path`, naming it as `open()` does: a system error is
/// the `OSError` subclass of its errno with `filename` set; any other reading failure (the file
/// changed while it was read) an `OSError` whose message starts with the path.
pub fn file_error(e: Error, path: &Path) -> PyErr {
    match e {
        Error::Io(io) => match io.raw_os_error() {
            Some(errno) => {
                let message = std::io::Error::from_raw_os_error(errno).to_string();
                let strerror = message.strip_suffix(&format!(" (os error {errno})")).unwrap_or(&message).to_owned();
                // OSError(errno, strerror, filename) is created as the subclass of that errno.
                PyOSError::new_err((errno, strerror, path.as_os_str().to_os_string()))
            }
            None => PyOSError::new_err(format!("{}: {io}", path.display())),
        },
        other => to_py(other),
    }
}

/// `.map_err(to_py)` in one word.
pub trait OrPy<T> {
    /// The crate's result as a Python one.
    fn py(self) -> pyo3::PyResult<T>;
}

impl<T> OrPy<T> for b3accel::Result<T> {
    fn py(self) -> pyo3::PyResult<T> {
        self.map_err(to_py)
    }
}
