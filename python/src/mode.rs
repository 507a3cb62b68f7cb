//! `key=` and `derive_key_context=`: which of BLAKE3's three modes a call hashes in.

use crate::buffer::with_bytes;
use b3accel::{Mode, KEY_LEN};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// The mode named by blake3-py's keywords: a 32-byte key (any buffer) for the keyed hash, a
/// context string for key derivation, neither for the plain hash; both at once is a `ValueError`.
pub fn mode(key: Option<&Bound<'_, PyAny>>, derive_key_context: Option<&str>) -> PyResult<Mode> {
    match (key, derive_key_context) {
        (None, None) => Ok(Mode::Hash),
        (Some(_), Some(_)) => Err(PyValueError::new_err("cannot use key and derive_key_context at the same time")),
        (None, Some(context)) => Ok(Mode::DeriveKey(context.to_owned())),
        (Some(key), None) => with_bytes(key, |bytes| {
            let key: [u8; KEY_LEN] = bytes.try_into().map_err(|_| {
                PyValueError::new_err(format!("expected a {KEY_LEN}-byte key, found {} bytes", bytes.len()))
            })?;
            Ok(Mode::Keyed(key))
        }),
    }
}
