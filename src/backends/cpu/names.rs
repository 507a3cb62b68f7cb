//! CPU levels and kernels read from text (`B3ACCEL_CPU`, the command line's `--cpu-level`): the
//! `FromStr` of [`SimdLevel`] and [`Kernel`], with an error that lists the names.

use crate::core::platform::{Kernel, SimdLevel};
use crate::tree::{Error, Result};
use std::str::FromStr;

impl FromStr for SimdLevel {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        SimdLevel::from_name(s).ok_or_else(|| {
            Error::InvalidInput(format!("unknown CPU level '{s}': expected portable, sse41, avx2 or avx512"))
        })
    }
}

impl FromStr for Kernel {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Kernel::from_name(s).ok_or_else(|| {
            Error::InvalidInput(format!("unknown CPU kernel '{s}': expected portable, sse41, avx2, avx512 or upstream"))
        })
    }
}
