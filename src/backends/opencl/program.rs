//! The kernels' OpenCL C source and compiling a program from it (or from a cached binary).

use crate::tree::{Device, Error, Result};
use ocl::core::{self, DeviceId};
use std::ffi::CString;

/// The kernels' source: the constants build.rs generated from src/core/constants.rs, then the
/// shader.
pub(crate) const SOURCE: &str =
    concat!(include_str!(concat!(env!("OUT_DIR"), "/constants.cl")), include_str!("../../../shaders/blake3.cl"));

/// Builds `program` (from source or from a binary) for `d` with `options`: the build log, or
/// the error with the log.
pub(super) fn compile(device: Device, program: &core::Program, d: DeviceId, options: &CString) -> Result<String> {
    let built = core::build_program(program, Some(&[d]), options, None, None);
    let log = match core::get_program_build_info(program, d, core::ProgramBuildInfo::BuildLog) {
        Ok(core::ProgramBuildInfoResult::BuildLog(log)) => log.trim_end_matches('\0').to_string(),
        _ => String::new(),
    };
    let status_ok = matches!(
        core::get_program_build_info(program, d, core::ProgramBuildInfo::BuildStatus),
        Ok(core::ProgramBuildInfoResult::BuildStatus(core::ProgramBuildStatus::Success))
    );
    match built {
        Ok(()) if status_ok => Ok(log),
        Ok(()) => Err(Error::KernelBuild {
            device,
            log: if log.is_empty() { "the driver reports the build as failed and gave no log".into() } else { log },
        }),
        Err(e) => Err(Error::KernelBuild { device, log: if log.trim().is_empty() { e.to_string() } else { log } }),
    }
}
