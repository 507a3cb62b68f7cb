//! Layer 4, dispatch: the table of backends (`table`: each backend's name, kind, and how to
//! list and open its devices), turning a [`Device`](crate::Device) into the backend that runs it (the
//! registry), `Device::Auto`'s choice from measurements and its fallback to the CPU (`auto`),
//! several devices hashing one input together (`spread`), and the fault-injection knob for tests
//! (`fault`).

pub mod auto;
mod fault;
mod record;
mod registry;
pub mod spread;
mod table;

pub(crate) use auto::auto_backend;
pub(crate) use registry::cpu_backend;
pub use registry::{backend_status, check_devices, devices, opening_in_background, settle};
pub use table::{backends, device_names, register_backend, BackendEntry, BackendStatus, ListFn, OpenFn};

use crate::tree::{Backend, Device, Result};
use std::sync::Arc;

/// The backend that runs `device`, opened on first use and shared for the life of the process
/// (GPU programs are built once per device); `Device::Auto`'s picks a device for each call.
///
/// ```
/// let cpu = b3accel::backend(b3accel::Device::Cpu).unwrap();
/// assert_eq!(cpu.info().device, b3accel::Device::Cpu);
/// ```
pub fn backend(device: Device) -> Result<Arc<dyn Backend>> {
    match device {
        Device::Auto => Ok(auto_backend()),
        _ => registry::backend(device),
    }
}
