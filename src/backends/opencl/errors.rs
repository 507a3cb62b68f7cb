//! OpenCL errors as the crate's errors: the leaf every other file of the backend imports.

use crate::tree::{Device, Error};

/// The converse of a driver error: out of memory where the driver says so, else a device error.
pub(crate) fn cl_err(device: Device, what: &str, e: ocl::core::Error) -> Error {
    use ocl::core::Status::*;
    match e.api_status() {
        Some(
            CL_MEM_OBJECT_ALLOCATION_FAILURE | CL_OUT_OF_RESOURCES | CL_OUT_OF_HOST_MEMORY | CL_INVALID_BUFFER_SIZE,
        ) => Error::OutOfMemory { device, detail: format!("{what}: {e}") },
        _ => Error::Device { device, detail: format!("{what}: {e}") },
    }
}
