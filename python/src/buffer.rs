//! Python objects with the buffer protocol, read in place as bytes.

use pyo3::buffer::PyUntypedBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use std::mem::MaybeUninit;

/// The `ValueError` for a buffer whose bytes are not C-contiguous.
fn not_contiguous() -> PyErr {
    PyValueError::new_err(
        "the buffer is not C-contiguous: hash a contiguous copy (numpy.ascontiguousarray, bytes(...))",
    )
}

/// A held buffer export: the object cannot be resized while this lives, and its bytes are read
/// where they lie. Released when dropped.
pub struct Bytes(PyUntypedBuffer);

impl Bytes {
    /// Takes `obj`'s buffer: any object with the buffer protocol, of any item type, as long as
    /// its bytes are C-contiguous. A `str` or another object without the protocol is the
    /// interpreter's `TypeError`; a strided view is a `ValueError`.
    pub fn get(obj: &Bound<'_, PyAny>) -> PyResult<Bytes> {
        let buffer = PyUntypedBuffer::get(obj)?;
        if !buffer.is_c_contiguous() {
            return Err(not_contiguous());
        }
        Ok(Bytes(buffer))
    }

    /// The bytes. Another thread that writes to the object while they are hashed makes the
    /// result meaningless (as for `hashlib`); it cannot move or free them while `self` lives.
    pub fn as_slice(&self) -> &[u8] {
        let len = self.0.len_bytes();
        if len == 0 {
            return &[];
        }
        // SAFETY: the export keeps `len` bytes at `buf_ptr` alive and in place until released.
        unsafe { std::slice::from_raw_parts(self.0.buf_ptr() as *const u8, len) }
    }
}

/// Calls `f` with `obj`'s bytes, read in place, under the rules of [`Bytes::get`]; the export is
/// released when `f` returns. For the calls made once per hash (the hasher's constructor and
/// `update`): the export's description lives in this frame, where `Bytes` allocates one.
pub fn with_bytes<R>(obj: &Bound<'_, PyAny>, f: impl FnOnce(&[u8]) -> PyResult<R>) -> PyResult<R> {
    /// Releases the export when dropped. It must not move after the export is taken: an exporter
    /// may point its fields into it (`shape` at `len` for bytes).
    struct Export<'a>(&'a mut ffi::Py_buffer);
    impl Drop for Export<'_> {
        fn drop(&mut self) {
            // SAFETY: the view was filled by a successful PyObject_GetBuffer, with the GIL held
            // (`with_bytes` holds it from the export to here).
            unsafe { ffi::PyBuffer_Release(self.0) }
        }
    }
    let mut view = MaybeUninit::<ffi::Py_buffer>::uninit();
    // SAFETY: PyObject_GetBuffer fills `view` or raises; the GIL is held (`obj` is bound).
    if unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), view.as_mut_ptr(), ffi::PyBUF_FULL_RO) } == -1 {
        return Err(PyErr::fetch(obj.py()));
    }
    // SAFETY: filled above.
    let export = Export(unsafe { view.assume_init_mut() });
    // SAFETY: a filled view; PyBuffer_IsContiguous only reads it.
    if unsafe { ffi::PyBuffer_IsContiguous(&*export.0, b'C' as std::ffi::c_char) } == 0 {
        return Err(not_contiguous());
    }
    let len = export.0.len as usize;
    let bytes = if len == 0 {
        &[][..]
    } else {
        // SAFETY: a C-contiguous export keeps `len` bytes at `buf` alive and in place until it is
        // released, after `f` returns.
        unsafe { std::slice::from_raw_parts(export.0.buf as *const u8, len) }
    };
    f(bytes)
}
