//! Layer 3, backends: the devices that do BLAKE3's bulk work, each behind the `Backend` trait.
//! `cpu` is always built; `opencl` and `wgpu` behind their cargo features; `gpu` holds what both
//! GPU backends share and names neither `ocl` nor `wgpu`. No backend names another (tests aside).

pub mod cpu;
#[cfg(any(feature = "opencl", feature = "wgpu"))]
pub(crate) mod gpu;
#[cfg(feature = "opencl")]
pub mod opencl;
#[cfg(feature = "wgpu")]
pub mod wgpu;
