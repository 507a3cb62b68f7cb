//! The `b3accel._b3accel` extension: the crate's public API for Python (the pure-Python
//! `b3accel` package on top of it documents and shapes it).

mod buffer;
mod errors;
mod files;
mod hasher;
mod mode;
mod target;
mod threads;
mod tree;

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Lowercase hexadecimal of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(2 * bytes.len());
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
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

/// The backends this build includes: "cpu", and "wgpu" and "opencl" where built in.
#[pyfunction]
fn built_backends() -> Vec<&'static str> {
    let mut names = vec!["cpu"];
    if cfg!(feature = "wgpu") {
        names.push("wgpu");
    }
    if cfg!(feature = "opencl") {
        names.push("opencl");
    }
    names
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
    m.add_function(wrap_pyfunction!(files::hash_local_files, m)?)?;
    m.add_function(wrap_pyfunction!(files::local_file_subtree, m)?)?;
    m.add_function(wrap_pyfunction!(files::local_file_sizes, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
