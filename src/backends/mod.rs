//! Layer 3, backends: the devices that do BLAKE3's bulk work, each behind the `Backend` trait.
//! `cpu` is always built; `opencl` and `wgpu` behind their cargo features; `gpu` holds what both
//! GPU backends share and names neither `ocl` nor `wgpu`; `stderr` keeps drivers' start-up
//! chatter off standard error (always built: programs hold its lock whatever the features). No
//! backend names another (tests aside).

pub mod cpu;
#[cfg(any(feature = "opencl", feature = "wgpu"))]
pub(crate) mod gpu;
#[cfg(feature = "opencl")]
pub mod opencl;
pub mod stderr;
#[cfg(feature = "wgpu")]
pub mod wgpu;
