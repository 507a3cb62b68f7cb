//! Layer 4, dispatch: turning a [`Device`](crate::Device) into the backend that runs it (the
//! registry), `Device::Auto`'s choice from measurements and its fallback to the CPU (`auto`),
//! several devices hashing one input together (`spread`), and the fault-injection knob for tests
//! (`fault`).

pub mod auto;
mod fault;
mod registry;
pub mod spread;

pub(crate) use registry::{auto_backend, cpu_backend};
pub use registry::{backend, backend_status, check_devices, devices, opening_in_background, settle, BackendStatus};
