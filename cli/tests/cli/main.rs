//! The tests that run the `b3accel` binary, one module per subject, in one test program: each
//! program links wgpu and OpenCL, so one link serves them all. The library's own tests are in the
//! repository's tests/.

mod common;

mod bao_cli;
mod big;
mod calibration;
mod cli;
mod cold;
mod faults;
mod file;
mod fuzz_cli;
mod merkle_cli;
mod spread_cli;
mod start_cache;
mod streaming;
mod subtree_cli;
