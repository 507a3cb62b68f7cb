//! Layer 4, dispatch: turning a [`Device`](crate::Device) into the backend that runs it (the
//! registry), and `Device::Auto`'s choice from measurements (`auto`).

pub mod auto;
mod registry;

pub(crate) use registry::{auto_backend, cpu_backend};
pub use registry::{backend, backend_status, devices, BackendStatus};
