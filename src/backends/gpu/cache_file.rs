//! A GPU backend's cache file of compiled device code (OpenCL program binaries, Vulkan pipeline
//! caches): named after its key, read whole and checked against that key before any byte of it
//! reaches a driver, rewritten when missing, stale or damaged. Any problem with it is only a
//! miss: a cache never fails a hash. `B3ACCEL_CACHE_DEBUG` reports each read and write.

use crate::backends::stderr;
use crate::core::cache;
use std::path::PathBuf;

/// Largest cache file read: compiled kernels are far smaller; anything larger is not ours.
const MAX_BYTES: u64 = 256 << 20;

/// Set (to anything but empty): every cache file's hit, miss, rejection and write is reported on
/// standard error, one line each beginning `b3accel cache:`.
const DEBUG_ENV: &str = "B3ACCEL_CACHE_DEBUG";

/// One cache file of compiled code, for one key.
#[derive(Debug)]
pub(crate) struct CacheFile {
    path: PathBuf,
    key: String,
}

impl CacheFile {
    /// The cache file for `key` (text naming everything the compiled code depends on: driver,
    /// device, source, options): `{kind}-{the key's hash, 16 hex digits}.bin` in the cache
    /// directory. `None` when caches are off or there is no cache directory.
    pub(crate) fn new(kind: &str, key: String) -> Option<CacheFile> {
        let hash = blake3::hash(key.as_bytes()).to_hex();
        let path = cache::file(&format!("{kind}-{}.bin", &hash[..16]))?;
        Some(CacheFile { path, key })
    }

    /// The file's path (wgpu's `devices -v` names it).
    #[cfg(any(feature = "wgpu", test))]
    pub(crate) fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The cached payload, if the file is there, whole and made for this key.
    pub(crate) fn load(&self) -> Option<Vec<u8>> {
        let Some(bytes) = cache::read(&self.path, MAX_BYTES) else {
            debug(format_args!("miss: {} (missing, unreadable or too large)", self.path.display()));
            return None;
        };
        match cache::unseal(&bytes, &self.key) {
            Ok(payload) => {
                debug(format_args!("hit: {} ({} bytes)", self.path.display(), payload.len()));
                Some(payload.to_vec())
            }
            Err(why) => {
                debug(format_args!("rejected: {} ({why})", self.path.display()));
                None
            }
        }
    }

    /// Writes `payload` for this key (atomically); a failure is only reported under
    /// `B3ACCEL_CACHE_DEBUG`.
    pub(crate) fn store(&self, payload: &[u8]) {
        match cache::write_atomic(&self.path, &cache::seal(&self.key, payload)) {
            Ok(()) => debug(format_args!("wrote: {} ({} bytes)", self.path.display(), payload.len())),
            Err(e) => debug(format_args!("not written: {} ({e})", self.path.display())),
        }
    }

    /// Reports that the payload [`load`](Self::load) returned did not work (the driver refused
    /// it) and will be replaced. OpenCL only: wgpu falls back without saying so.
    #[cfg(feature = "opencl")]
    pub(crate) fn refused(&self, why: &str) {
        let why = why.split_whitespace().collect::<Vec<_>>().join(" ");
        debug(format_args!("refused by the driver: {} ({why})", self.path.display()));
    }
}

fn debug(line: std::fmt::Arguments) {
    if std::env::var_os(DEBUG_ENV).is_some_and(|v| !v.is_empty()) {
        let _held = stderr::lock();
        eprintln!("b3accel cache: {line}");
    }
}
