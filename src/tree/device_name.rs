//! Device names read from text: `auto`, `cpu`, `opencl[:N]`, `wgpu[:N]` (the command line's
//! `--backend` values) as a [`Device`], a malformed name as an [`Error`].

use super::device::Device;
use super::error::{Error, Result};
use std::str::FromStr;

impl FromStr for Device {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let lower = s.trim().to_ascii_lowercase();
        let (name, index) = match lower.split_once(':') {
            Some((name, idx)) => {
                let i = idx
                    .parse::<usize>()
                    .map_err(|_| Error::InvalidInput(format!("invalid device '{s}': '{idx}' is not a device index")))?;
                (name, Some(i))
            }
            None => (lower.as_str(), None),
        };
        match (name, index) {
            ("auto", None) => Ok(Device::Auto),
            ("cpu", None) => Ok(Device::Cpu),
            ("opencl", i) => Ok(Device::OpenCl(i.unwrap_or(0))),
            ("wgpu", i) => Ok(Device::Wgpu(i.unwrap_or(0))),
            _ => Err(Error::InvalidInput(format!("invalid device '{s}': expected auto, cpu, opencl[:N] or wgpu[:N]"))),
        }
    }
}
