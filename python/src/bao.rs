//! `b3accel.bao`: bao and bao-tree outboards, combined encodings and slices of any buffer, read in
//! place with the GIL released, and their verified decoding.

use crate::buffer::Bytes;
use crate::errors::to_py;
use crate::hasher::GIL_MIN_BYTES;
use crate::target::Target;
use b3accel::bao::{self, Order, Outboard};
use b3accel::{Device, Hash};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// A bao error as a Python exception: input that does not verify, or bad arguments, is
/// `ValueError` (its message names the offset of the first block that failed); a device's error
/// is `DeviceError`.
fn bao_error(e: bao::Error) -> PyErr {
    match e {
        bao::Error::Device(e) => to_py(e),
        bao::Error::Io(e) => PyOSError::new_err(e.to_string()),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// Runs `f` without the GIL unless `len` bytes are few.
fn maybe_detach<R: Send>(py: Python<'_>, len: usize, f: impl FnOnce() -> R + Send) -> R {
    if len < GIL_MIN_BYTES {
        f()
    } else {
        py.detach(f)
    }
}

/// The order `post_order` names.
fn order(post_order: bool) -> Order {
    if post_order {
        Order::Post
    } else {
        Order::Pre
    }
}

/// The outboard file passed as `outboard`, if any, read for groups of 2^`group_log` chunks.
fn outboard_arg(outboard: Option<&Bound<'_, PyAny>>, group_log: u8, post_order: bool) -> PyResult<Option<Outboard>> {
    outboard
        .map(|o| Outboard::from_bytes(Bytes::get(o)?.as_slice(), group_log, order(post_order)).map_err(bao_error))
        .transpose()
}

/// A 32-byte hash from a buffer.
fn hash_of(hash: &Bound<'_, PyAny>) -> PyResult<Hash> {
    let bytes = Bytes::get(hash)?;
    let array: [u8; 32] = bytes.as_slice().try_into().map_err(|_| PyValueError::new_err("a hash is 32 bytes"))?;
    Ok(Hash::from_bytes(array))
}

/// `(outboard file, hash)` of `data` in groups of 2^`group_log` chunks, on `device`.
#[pyfunction]
#[pyo3(name = "bao_outboard", signature = (data, *, group_log = 0, post_order = false, device = None))]
pub fn outboard<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    group_log: u8,
    post_order: bool,
    device: Option<&Bound<'py, PyAny>>,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let target = device.map_or(Ok(Target::One(Device::Auto)), Target::extract)?;
    let bytes = Bytes::get(data)?;
    let data = bytes.as_slice();
    let (file, hash) = maybe_detach(py, data.len(), || {
        let backend = target.open()?;
        let (ob, hash) = bao::outboard_with(&*backend, data, group_log, order(post_order))?;
        Ok::<_, bao::Error>((ob.to_bytes(), hash))
    })
    .map_err(bao_error)?;
    Ok((PyBytes::new(py, &file), PyBytes::new(py, hash.as_bytes())))
}

/// `(combined encoding, hash)` of `data` in groups of 2^`group_log` chunks, on `device`.
#[pyfunction]
#[pyo3(name = "bao_encode", signature = (data, *, group_log = 0, device = None))]
pub fn encode<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    group_log: u8,
    device: Option<&Bound<'py, PyAny>>,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let target = device.map_or(Ok(Target::One(Device::Auto)), Target::extract)?;
    let bytes = Bytes::get(data)?;
    let data = bytes.as_slice();
    let (encoded, hash) = maybe_detach(py, data.len(), || {
        let backend = target.open()?;
        bao::encode_with(&*backend, data, group_log)
    })
    .map_err(bao_error)?;
    Ok((PyBytes::new(py, &encoded), PyBytes::new(py, hash.as_bytes())))
}

/// The content of a combined encoding (or, with `outboard`, of `encoded` taken as the content)
/// verified against `hash`; `ValueError` at the first block that does not verify.
#[pyfunction]
#[pyo3(name = "bao_decode", signature = (encoded, hash, *, group_log = 0, outboard = None, post_order = false))]
pub fn decode<'py>(
    py: Python<'py>,
    encoded: &Bound<'py, PyAny>,
    hash: &Bound<'py, PyAny>,
    group_log: u8,
    outboard: Option<&Bound<'py, PyAny>>,
    post_order: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let hash = hash_of(hash)?;
    let bytes = Bytes::get(encoded)?;
    let encoded = bytes.as_slice();
    let ob = outboard_arg(outboard, group_log, post_order)?;
    if ob.is_none() {
        if let Some(size) = whole_encoding_size(encoded, group_log) {
            // All of it is here: checked on every core straight into the result.
            return PyBytes::new_with(py, size, |out| {
                maybe_detach(py, encoded.len(), || bao::decode_into(encoded, &hash, group_log, out)).map_err(bao_error)
            });
        }
    }
    let out = maybe_detach(py, encoded.len(), || {
        let mut out = Vec::new();
        match &ob {
            Some(ob) => bao::decode_outboard(encoded, ob, &hash, &mut out)?,
            None => bao::decode(encoded, &hash, group_log, &mut out)?,
        };
        Ok::<_, bao::Error>(out)
    })
    .map_err(bao_error)?;
    Ok(PyBytes::new(py, &out))
}

/// The content size of a combined encoding that `encoded` holds whole (so that the size is no
/// larger than the buffer and can be allocated before anything verifies); `None` otherwise.
fn whole_encoding_size(encoded: &[u8], group_log: u8) -> Option<usize> {
    let size = u64::from_le_bytes(encoded.get(..bao::HEADER_LEN)?.try_into().ok()?);
    let tree = bao::Tree::new(size, group_log).ok()?;
    (encoded.len() as u64 >= tree.encoded_len()).then_some(size as usize)
}

/// The slice of a combined encoding (or, with `outboard`, of `encoded` taken as the content)
/// that proves `length` bytes from byte `start`.
#[pyfunction]
#[pyo3(name = "bao_slice", signature = (encoded, start, length, *, group_log = 0, outboard = None, post_order = false))]
#[allow(clippy::too_many_arguments)]
pub fn slice<'py>(
    py: Python<'py>,
    encoded: &Bound<'py, PyAny>,
    start: u64,
    length: u64,
    group_log: u8,
    outboard: Option<&Bound<'py, PyAny>>,
    post_order: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let bytes = Bytes::get(encoded)?;
    let encoded = bytes.as_slice();
    let ob = outboard_arg(outboard, group_log, post_order)?;
    let out = maybe_detach(py, encoded.len(), || match &ob {
        Some(ob) => bao::slice_outboard(encoded, ob, start, length),
        None => bao::slice(encoded, group_log, start, length),
    })
    .map_err(bao_error)?;
    Ok(PyBytes::new(py, &out))
}

/// The content bytes of a slice, verified against `hash`.
#[pyfunction]
#[pyo3(name = "bao_decode_slice", signature = (slice, hash, start, length, *, group_log = 0))]
pub fn decode_slice<'py>(
    py: Python<'py>,
    slice: &Bound<'py, PyAny>,
    hash: &Bound<'py, PyAny>,
    start: u64,
    length: u64,
    group_log: u8,
) -> PyResult<Bound<'py, PyBytes>> {
    let hash = hash_of(hash)?;
    let bytes = Bytes::get(slice)?;
    let slice = bytes.as_slice();
    let out = maybe_detach(py, slice.len(), || {
        let mut out = Vec::new();
        bao::decode_slice(slice, &hash, group_log, start, length, &mut out)?;
        Ok::<_, bao::Error>(out)
    })
    .map_err(bao_error)?;
    Ok(PyBytes::new(py, &out))
}
