//! The crate's errors as the Python exceptions a user expects.

use b3accel::Error;
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::PyErr;

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
