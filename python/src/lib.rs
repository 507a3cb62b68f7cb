//! The `b3accel._b3accel` extension: the crate's public API for Python (the pure-Python
//! `b3accel` package on top of it documents and shapes it).

mod bao;
mod buffer;
mod errors;
mod files;
mod hasher;
mod mode;
mod target;
mod threads;
mod tree;

use pyo3::exceptions::{PyMemoryError, PyOverflowError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

/// Turns the bytes in the second half of `buf` into their lowercase hexadecimal, filling all of
/// `buf`. Byte `i` (at `half + i`) becomes digits `2i` and `2i + 1`: both before `half + i + 1`, so
/// no byte is overwritten before it is read.
pub(crate) fn hex_in_place(buf: &mut [u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let half = buf.len() / 2;
    for i in 0..half {
        let b = buf[half + i];
        buf[2 * i] = DIGITS[(b >> 4) as usize];
        buf[2 * i + 1] = DIGITS[(b & 15) as usize];
    }
}

/// A zeroed buffer of `len` bytes, or a `MemoryError` where the allocator refuses it (a length a
/// caller chose must never abort the interpreter).
pub(crate) fn try_zeroed(len: usize) -> PyResult<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| PyMemoryError::new_err(format!("cannot allocate {len} bytes")))?;
    v.resize(len, 0);
    Ok(v)
}

/// `ascii` as a `str`; one too large to allocate is a `MemoryError` (`PyString::new` would panic).
pub(crate) fn ascii_str<'py>(py: Python<'py>, ascii: &[u8]) -> PyResult<Bound<'py, PyString>> {
    debug_assert!(ascii.is_ascii());
    let len = ffi::Py_ssize_t::try_from(ascii.len()).map_err(|_| PyOverflowError::new_err("length overflows isize"))?;
    // SAFETY: the GIL is held; the pointer and length describe `ascii`, alive for the call, and
    // a non-null result is a new reference to a str.
    unsafe {
        let ptr = ffi::PyUnicode_FromStringAndSize(ascii.as_ptr().cast(), len);
        Ok(Bound::from_owned_ptr_or_err(py, ptr)?.cast_into_unchecked())
    }
}

/// The devices this machine offers, as dicts: `device` (the name `device=` takes), `backend`,
/// `kind`, `name`, `api`, `driver`, `memory_bytes` and `compute_units` (None where unknown),
/// `software` (a GPU API running on the CPU, such as PoCL or llvmpipe: never chosen by auto).
#[pyfunction]
fn devices(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let infos = py.detach(b3accel::devices);
    infos
        .iter()
        .map(|info| {
            let d = PyDict::new(py);
            d.set_item("device", info.device.to_string())?;
            d.set_item("backend", info.backend.to_string())?;
            d.set_item("kind", info.kind.to_string())?;
            d.set_item("name", &info.name)?;
            d.set_item("api", &info.api)?;
            d.set_item("driver", &info.driver)?;
            d.set_item("memory_bytes", info.memory_bytes)?;
            d.set_item("compute_units", info.compute_units)?;
            d.set_item("software", info.is_software_gpu())?;
            Ok(d)
        })
        .collect()
}

/// The backends this build includes, in the order of the library's table of backends: "cpu",
/// then "opencl" and "wgpu" where built in.
#[pyfunction]
fn built_backends() -> Vec<&'static str> {
    b3accel::backends().iter().filter(|b| b.is_built()).map(|b| b.name()).collect()
}

#[pymodule]
fn _b3accel(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<hasher::Blake3>()?;
    m.add_class::<tree::MerkleTree>()?;
    m.add("DeviceError", m.py().get_type::<errors::DeviceError>())?;
    m.add_function(wrap_pyfunction!(devices, m)?)?;
    m.add_function(wrap_pyfunction!(built_backends, m)?)?;
    m.add_function(wrap_pyfunction!(tree::hash_file, m)?)?;
    m.add_function(wrap_pyfunction!(tree::subtree, m)?)?;
    m.add_function(wrap_pyfunction!(tree::merge, m)?)?;
    m.add_function(wrap_pyfunction!(tree::hash_many, m)?)?;
    m.add_function(wrap_pyfunction!(tree::merkle_root, m)?)?;
    m.add_function(wrap_pyfunction!(tree::merkle_tree, m)?)?;
    m.add_function(wrap_pyfunction!(tree::verify, m)?)?;
    m.add_function(wrap_pyfunction!(bao::outboard, m)?)?;
    m.add_function(wrap_pyfunction!(bao::encode, m)?)?;
    m.add_function(wrap_pyfunction!(bao::decode, m)?)?;
    m.add_function(wrap_pyfunction!(bao::slice, m)?)?;
    m.add_function(wrap_pyfunction!(bao::decode_slice, m)?)?;
    m.add_function(wrap_pyfunction!(files::hash_local_files, m)?)?;
    m.add_function(wrap_pyfunction!(files::local_file_subtree, m)?)?;
    m.add_function(wrap_pyfunction!(files::local_file_sizes, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
