//! Python objects with the buffer protocol, read in place as bytes.

use pyo3::buffer::PyUntypedBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

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
            return Err(PyValueError::new_err(
                "the buffer is not C-contiguous: hash a contiguous copy (numpy.ascontiguousarray, bytes(...))",
            ));
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
