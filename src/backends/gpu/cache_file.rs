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
        match unseal(&bytes, &self.key) {
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
        let made = self.path.parent().map_or(Ok(()), std::fs::create_dir_all);
        match made.and_then(|()| cache::write_atomic(&self.path, &seal(&self.key, payload))) {
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

/// The version of the sealed layout; a file of another version is stale.
const SEAL_VERSION: u32 = 1;
/// Keys longer than this are not keys (a garbage length field).
const MAX_KEY: usize = 1 << 16;

/// `payload` framed for a cache file made for `key` (any text naming what the payload was made
/// from and for): the magic bytes, the layout's version, the key's length and the key, the
/// payload's length and BLAKE3 hash (upstream `blake3`: an integrity check, not the crate's
/// hashing), then the payload.
fn seal(key: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(cache::MAGIC.len() + 4 + 4 + key.len() + 8 + 32 + payload.len());
    out.extend_from_slice(cache::MAGIC);
    out.extend_from_slice(&SEAL_VERSION.to_le_bytes());
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(blake3::hash(payload).as_bytes());
    out.extend_from_slice(payload);
    out
}

/// The payload of a file [`seal`] made for exactly `key`, or why `bytes` is not one: not a
/// cache file, another layout version, another key (a stale or foreign file), a length that
/// does not match (truncated or extended), or a payload whose hash does not match (corrupt).
fn unseal<'a>(bytes: &'a [u8], key: &str) -> Result<&'a [u8], &'static str> {
    fn take<const N: usize>(rest: &mut &[u8]) -> Result<[u8; N], &'static str> {
        let (head, tail) = rest.split_first_chunk::<N>().ok_or("truncated header")?;
        *rest = tail;
        Ok(*head)
    }
    let mut rest = bytes;
    if take::<8>(&mut rest)? != *cache::MAGIC {
        return Err("not a b3accel cache file");
    }
    if u32::from_le_bytes(take(&mut rest)?) != SEAL_VERSION {
        return Err("another layout version");
    }
    let key_len = u32::from_le_bytes(take(&mut rest)?) as usize;
    let stored_key = rest.get(..key_len).filter(|_| key_len <= MAX_KEY).ok_or("truncated header")?;
    if stored_key != key.as_bytes() {
        return Err("made for another key (stale or foreign)");
    }
    rest = &rest[key_len..];
    let len = u64::from_le_bytes(take(&mut rest)?);
    let hash: [u8; 32] = take(&mut rest)?;
    if rest.len() as u64 != len {
        return Err("the payload's length does not match (truncated or extended)");
    }
    if *blake3::hash(rest).as_bytes() != hash {
        return Err("the payload's hash does not match (corrupt)");
    }
    Ok(rest)
}

fn debug(line: std::fmt::Arguments) {
    if std::env::var_os(DEBUG_ENV).is_some_and(|v| !v.is_empty()) {
        let _held = stderr::lock();
        eprintln!("b3accel cache: {line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_payload_comes_back_only_whole_and_for_its_key() {
        let payload: Vec<u8> = (0..1025u32).map(|i| (i % 251) as u8).collect();
        let sealed = seal("device A | options", &payload);
        assert_eq!(unseal(&sealed, "device A | options").unwrap(), payload);
        assert_eq!(unseal(&seal("k", &[]), "k").unwrap(), b"");
        // Stale or foreign: another key, even one that is a prefix or an extension.
        assert!(unseal(&sealed, "device B | options").is_err());
        assert!(unseal(&sealed, "device A").is_err());
        assert!(unseal(&sealed, "device A | options!").is_err());
        // Truncated anywhere, header or payload, or extended.
        for cut in [0, 1, 7, 8, 12, 16, 20, sealed.len() - payload.len() - 1, sealed.len() - 1] {
            assert!(unseal(&sealed[..cut], "device A | options").is_err(), "cut at {cut}");
        }
        let mut longer = sealed.clone();
        longer.push(0);
        assert!(unseal(&longer, "device A | options").is_err());
        // Any single flipped bit: header fields, key, length, hash or payload.
        for at in (0..sealed.len()).step_by(7).chain([sealed.len() - 1]) {
            let mut bad = sealed.clone();
            bad[at] ^= 0x10;
            assert!(unseal(&bad, "device A | options").is_err(), "flip at {at}");
        }
        // Garbage of every small length, and a key length larger than the file.
        for n in 0..64 {
            assert!(unseal(&vec![0xA5; n], "k").is_err());
        }
        let mut huge_key = sealed.clone();
        huge_key[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(unseal(&huge_key, "device A | options").is_err());
    }

    #[test]
    fn a_sealed_file_with_any_field_wrong_is_refused() {
        let key = "device | options";
        let payload = b"compiled code".to_vec();
        let good = seal(key, &payload);
        assert!(unseal(&good, key).is_ok());
        let key_end = 16 + key.len();
        let field = |range: std::ops::Range<usize>, value: &[u8]| {
            let mut bad = good.clone();
            bad.splice(range, value.iter().copied());
            unseal(&bad, key).map(|_| ())
        };
        assert_eq!(field(0..8, b"B3ACACHF"), Err("not a b3accel cache file"));
        assert_eq!(field(8..12, &2u32.to_le_bytes()), Err("another layout version"));
        assert_eq!(
            field(12..16, &(key.len() as u32 - 1).to_le_bytes()),
            Err("made for another key (stale or foreign)")
        );
        assert_eq!(
            field(12..16, &(key.len() as u32 + 1).to_le_bytes()),
            Err("made for another key (stale or foreign)")
        );
        assert_eq!(field(12..16, &u32::MAX.to_le_bytes()), Err("truncated header"));
        assert_eq!(field(16..17, b"D"), Err("made for another key (stale or foreign)"));
        let len_at = key_end..key_end + 8;
        let wrong_len = "the payload's length does not match (truncated or extended)";
        assert_eq!(field(len_at.clone(), &(payload.len() as u64 + 1).to_le_bytes()), Err(wrong_len));
        assert_eq!(field(len_at.clone(), &(payload.len() as u64 - 1).to_le_bytes()), Err(wrong_len));
        assert_eq!(field(len_at, &u64::MAX.to_le_bytes()), Err(wrong_len));
        assert_eq!(
            field(key_end + 8..key_end + 9, &[good[key_end + 8] ^ 1]),
            Err("the payload's hash does not match (corrupt)")
        );
        assert_eq!(field(good.len() - 1..good.len(), b"X"), Err("the payload's hash does not match (corrupt)"));
    }
}
