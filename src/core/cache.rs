//! The crate's cache files: where they live (the operating system's cache directory, or a path
//! an environment variable names) and how they are written (a temporary file in the same
//! directory, renamed over the old one), so that a reader sees a whole old file or a whole new
//! one, never a torn one, however many processes write at once and wherever one of them stops.
//!
//! Every cache of the crate goes through here: the calibration of `Device::Auto`, and later the
//! GPU backends' compiled programs. A reader must still treat what it reads as untrusted (a file
//! from another version, or garbage): `read` only bounds its size.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The crate's directory in the operating system's cache directory: `$XDG_CACHE_HOME/b3accel`
/// or `~/.cache/b3accel` on Linux and other Unix systems, `~/Library/Caches/b3accel` on macOS,
/// `%LOCALAPPDATA%\b3accel` on Windows. `None` where none of those is set.
pub(crate) fn dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let base = if cfg!(windows) {
        var("LOCALAPPDATA")
    } else if cfg!(target_os = "macos") {
        var("HOME").map(|h| h.join("Library").join("Caches"))
    } else {
        var("XDG_CACHE_HOME").or_else(|| var("HOME").map(|h| h.join(".cache")))
    };
    base.map(|b| b.join("b3accel"))
}

/// The path of the cache file `name`: the path in the environment variable `env` if it is set,
/// else `name` in [`dir`].
pub(crate) fn path(env: &str, name: &str) -> Option<PathBuf> {
    match std::env::var_os(env).filter(|v| !v.is_empty()) {
        Some(p) => Some(PathBuf::from(p)),
        None => dir().map(|d| d.join(name)),
    }
}

/// Reads a cache file of at most `max_len` bytes; `None` if it is missing, unreadable or larger
/// (a cache is an optimisation: any problem with it means "no cache").
pub(crate) fn read(path: &Path, max_len: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    file.take(max_len + 1).read_to_end(&mut bytes).ok()?;
    (bytes.len() as u64 <= max_len).then_some(bytes)
}

/// Writes `bytes` to `path` atomically: into a temporary file beside it (its directories made
/// first), flushed to disk, then renamed over `path`. Readers see the old file or the new one;
/// of several writers at once, the last rename wins. On failure the temporary file is removed
/// and `path` is as it was.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(parent)?;
    let name = path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    // Unique among processes (the id) and among threads of this one (the serial number).
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.{}.tmp", std::process::id(), SERIAL.fetch_add(1, Ordering::Relaxed)));
    let tmp = parent.join(tmp_name);
    let written = (|| {
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("b3accel-cache-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn writes_replace_whole_files_and_leave_no_temporary() {
        let d = scratch("replace");
        let p = d.join("deeper").join("c.json");
        write_atomic(&p, b"first, longer contents").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(read(&p, 100).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(p.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["c.json"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn reads_are_bounded_and_missing_files_are_none() {
        let d = scratch("bounded");
        let p = d.join("c");
        assert!(read(&p, 10).is_none());
        write_atomic(&p, &[7; 11]).unwrap();
        assert!(read(&p, 10).is_none());
        assert_eq!(read(&p, 11).unwrap().len(), 11);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_failed_write_leaves_the_old_file() {
        let d = scratch("failed");
        let p = d.join("c");
        write_atomic(&p, b"old").unwrap();
        // A directory where the file should be renamed: the rename fails, nothing is left over.
        let blocked = d.join("dir");
        std::fs::create_dir_all(blocked.join("inner")).unwrap();
        assert!(write_atomic(&blocked, b"new").is_err());
        assert_eq!(read(&p, 10).unwrap(), b"old");
        let leftovers = std::fs::read_dir(&d).unwrap().filter(|e| e.as_ref().unwrap().file_name() != "c").count();
        assert_eq!(leftovers, 1, "only the blocking directory");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_environment_variable_comes_first() {
        // An unset variable (no test sets this one) falls back to the cache directory.
        let p = path("B3ACCEL_TEST_UNSET_CACHE_VARIABLE", "x.json");
        assert_eq!(p, dir().map(|d| d.join("x.json")));
    }
}
