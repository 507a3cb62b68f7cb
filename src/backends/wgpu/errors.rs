//! wgpu's errors as the crate's errors: error scopes around device calls. A leaf that every
//! other file of the backend may import.

use crate::tree::{Device, Error, Result};

/// Runs `f` inside out-of-memory, validation and internal error scopes on `device`, so that wgpu
/// reports its errors to us as values (never through the default handler, which panics).
///
/// The three scopes cost a fraction of a bind group's or an encoder's host time
/// (docs/performance.md): not worth fewer scopes.
pub(super) fn scoped<T>(device: &::wgpu::Device, id: Device, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let oom = device.push_error_scope(::wgpu::ErrorFilter::OutOfMemory);
    let validation = device.push_error_scope(::wgpu::ErrorFilter::Validation);
    let internal = device.push_error_scope(::wgpu::ErrorFilter::Internal);
    let r = f();
    let internal = pollster::block_on(internal.pop());
    let validation = pollster::block_on(validation.pop());
    let oom = pollster::block_on(oom.pop());
    if let Some(e) = oom {
        return Err(Error::OutOfMemory { device: id, detail: e.to_string() });
    }
    if let Some(e) = validation.or(internal) {
        return Err(Error::Device { device: id, detail: format!("wgpu error: {e}") });
    }
    r
}
