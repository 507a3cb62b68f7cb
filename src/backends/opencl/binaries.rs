//! OpenCL program binaries kept between processes: a program built from source is saved, with
//! its build log, in a cache file keyed by the platform, device and driver, the build options
//! and the hash of the kernels' source; the next open of that device builds from the binary
//! instead of compiling the source. A binary the driver refuses is rebuilt from source and
//! overwritten; a cache never fails an open.

use super::program::{compile, SOURCE};
use crate::backends::gpu::cache_file::CacheFile;
use crate::tree::Device;
use ocl::core::{self, DeviceId};
use std::ffi::CString;

/// The cache file of the program built for the device `driver` describes with `options`.
pub(super) fn cache_file(driver: &str, options: &str) -> Option<CacheFile> {
    let source = blake3::hash(SOURCE.as_bytes()).to_hex();
    CacheFile::new("opencl", format!("b3accel OpenCL program | {driver} | options: {options} | source: {source}"))
}

/// A cache file's payload: the build log's length (8 bytes, little-endian), the log, then the
/// driver's binary.
fn encode(log: &str, binary: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + log.len() + binary.len());
    out.extend_from_slice(&(log.len() as u64).to_le_bytes());
    out.extend_from_slice(log.as_bytes());
    out.extend_from_slice(binary);
    out
}

/// The build log and the binary of a payload; `None` for anything [`encode`] did not make (or
/// an empty binary).
fn decode(payload: &[u8]) -> Option<(String, &[u8])> {
    let (len, rest) = payload.split_first_chunk::<8>()?;
    let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
    let log = rest.get(..len)?;
    let binary = &rest[len..];
    Some((String::from_utf8(log.to_vec()).ok()?, binary)).filter(|_| !binary.is_empty())
}

/// The program built from the cached binary with `options`, and the log of its first build;
/// `None` (the caller compiles the source) if there is none or the driver refuses it.
pub(super) fn load(
    file: &CacheFile,
    device: Device,
    context: &core::Context,
    d: DeviceId,
    options: &CString,
) -> Option<(core::Program, String)> {
    let payload = file.load()?;
    let Some((log, binary)) = decode(&payload) else {
        file.refused("no build log and binary in it");
        return None;
    };
    let built = core::create_program_with_binary(context, &[d], &[binary])
        .map_err(|e| e.to_string())
        .and_then(|program| compile(device, &program, d, options).map(|_| program).map_err(|e| e.to_string()));
    match built {
        Ok(program) => Some((program, log)),
        Err(why) => {
            file.refused(&why);
            None
        }
    }
}

/// Saves `program`'s binary for `d` (its only device) with its build log; a driver that gives
/// no binary leaves the cache as it was.
pub(super) fn store(file: &CacheFile, program: &core::Program, log: &str) {
    if let Ok(core::ProgramInfoResult::Binaries(binaries)) =
        core::get_program_info(program, core::ProgramInfo::Binaries)
    {
        if let Some(binary) = binaries.first().filter(|b| !b.is_empty()) {
            file.store(&encode(log, binary));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip_and_anything_else_is_refused() {
        let payload = encode("warning: unused variable", &[1, 2, 3]);
        assert_eq!(decode(&payload), Some(("warning: unused variable".to_string(), &[1u8, 2, 3][..])));
        assert_eq!(decode(&encode("", &[9])), Some((String::new(), &[9u8][..])));
        // No binary, a log longer than the payload, a short length field, a log not UTF-8.
        assert_eq!(decode(&encode("log", &[])), None);
        assert_eq!(decode(&payload[..payload.len() - 4]), None);
        assert_eq!(decode(&payload[..5]), None);
        let mut bad_log = encode("ab", &[1]);
        bad_log[8] = 0xff;
        assert_eq!(decode(&bad_log), None);
        let mut huge = payload.clone();
        huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(decode(&huge), None);
    }

    #[test]
    fn the_key_names_the_driver_the_options_and_the_source() {
        let (Some(a), Some(b), Some(c)) = (
            cache_file("driver 1", "-D CHUNK_WG=256"),
            cache_file("driver 2", "-D CHUNK_WG=256"),
            cache_file("driver 1", "-D CHUNK_WG=128"),
        ) else {
            // Caches are off (B3ACCEL_CACHE=off) or there is no cache directory: nothing to name.
            assert!(!crate::core::cache::enabled() || crate::core::cache::dir().is_none());
            return;
        };
        assert!(a.path() != b.path() && a.path() != c.path() && b.path() != c.path());
        assert_eq!(a.path(), cache_file("driver 1", "-D CHUNK_WG=256").unwrap().path());
        assert!(a.path().file_name().unwrap().to_string_lossy().starts_with("opencl-"));
    }
}
