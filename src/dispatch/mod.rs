//! Layer 4, dispatch: turning a [`Device`](crate::Device) into the backend that runs it (the
//! registry), `Device::Auto`'s choice from measurements (`auto`), and several devices hashing one
//! input together (`spread`).

pub mod auto;
mod registry;
pub mod spread;

pub(crate) use registry::{auto_backend, cpu_backend};
pub use registry::{backend, backend_status, devices, BackendStatus};
