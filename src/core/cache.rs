//! The crate's cache files: where they live (the operating system's cache directory, or a path
//! an environment variable names) and how they are written (a temporary file in the same
//! directory, renamed over the old one), so that a reader sees a whole old file or a whole new
//! one, never a torn one, however many processes write at once and wherever one of them stops.
//!
//! Every cache of the crate goes through here: the calibration of `Device::Auto` and the GPU
//! backends' compiled programs (OpenCL program binaries, Vulkan pipeline caches).
//! `B3ACCEL_CACHE_DIR` moves the directory, `B3ACCEL_CACHE=off` turns every cache off.
//!
//! A cache path may name anything: only a regular file is read (opening never blocks on a FIFO
//! or touches a device), and only a missing file, an empty one or one of the crate's own cache
//! files ([`is_own`]) is replaced. Anything else is the user's and is left as it is: a symbolic
//! link, a directory, a FIFO, a device, or a regular file with other contents (a path such as
//! `B3ACCEL_CALIBRATION=notes.txt` names the user's file, not a cache).
//!
//! A reader must treat what it reads as untrusted (a file from another version, another
//! machine, or garbage): `read` only bounds its size, and each cache checks what it reads (the
//! GPU backends frame their compiled code with its key, its length and its BLAKE3 hash, so that
//! bytes handed to a driver are exactly the bytes that were written for that key).

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable naming the cache directory in place of the system's.
pub(crate) const DIR_ENV: &str = "B3ACCEL_CACHE_DIR";
/// The environment variable that turns every cache off when set to `off`.
pub(crate) const SWITCH_ENV: &str = "B3ACCEL_CACHE";

/// False when `B3ACCEL_CACHE` is `off` (any case): nothing is then read from or written to a
/// cache file.
pub(crate) fn enabled() -> bool {
    switched_on(std::env::var(SWITCH_ENV).ok().as_deref())
}

/// Whether the value of `B3ACCEL_CACHE` (if set) leaves caches on.
fn switched_on(value: Option<&str>) -> bool {
    !value.is_some_and(|v| v.trim().eq_ignore_ascii_case("off"))
}

/// The crate's cache directory: `$B3ACCEL_CACHE_DIR` if set, else `b3accel` in the operating
/// system's cache directory: `$XDG_CACHE_HOME/b3accel` or `~/.cache/b3accel` on Linux and other
/// Unix systems, `~/Library/Caches/b3accel` on macOS, `%LOCALAPPDATA%\b3accel` on Windows.
/// `None` where none of those is set.
pub(crate) fn dir() -> Option<PathBuf> {
    dir_from(&|name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from))
}

/// [`dir`] with the environment as `var` answers (unset or empty variables are `None`).
fn dir_from(var: &dyn Fn(&str) -> Option<PathBuf>) -> Option<PathBuf> {
    if let Some(d) = var(DIR_ENV) {
        return Some(d);
    }
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
/// else `name` in [`dir`]. `None` when caches are off ([`enabled`]), when `env` is `off` (any
/// case: that one cache is off), or when there is no directory.
pub(crate) fn path(env: &str, name: &str) -> Option<PathBuf> {
    match std::env::var_os(env).filter(|v| !v.is_empty()) {
        Some(p) => (enabled() && switched_on(p.to_str())).then(|| PathBuf::from(p)),
        None => file(name),
    }
}

/// The path of the cache file `name` in [`dir`]; `None` when caches are off ([`enabled`]) or
/// there is no directory.
pub(crate) fn file(name: &str) -> Option<PathBuf> {
    enabled().then(dir).flatten().map(|d| d.join(name))
}

/// Reads a cache file of at most `max_len` bytes; `None` if it is missing, unreadable, larger, or
/// not a regular file (a cache is an optimisation: any problem with it means "no cache").
pub(crate) fn read(path: &Path, max_len: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    // The type is checked before opening (opening a device can act on it) and again on what was
    // opened, in case the path changed in between.
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let file = open_for_read(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(max_len + 1).read_to_end(&mut bytes).ok()?;
    (bytes.len() as u64 <= max_len).then_some(bytes)
}

/// Opens `path` for reading without blocking: a FIFO with no writer would block a plain open.
fn open_for_read(path: &Path) -> io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK | libc::O_NOCTTY);
    options.open(path)
}

/// The first bytes of every sealed cache file (the GPU backends' compiled code, framed with its
/// key, length and hash): [`is_own`] knows such a file by them.
pub(crate) const MAGIC: &[u8; 8] = b"B3ACACHE";

/// What every JSON cache file of the crate has: a top-level `fingerprint` that begins with this.
pub(crate) const JSON_MARK: &str = "b3accel ";

/// The crate's JSON cache files are far smaller; a larger file is not one of them.
const JSON_MAX_BYTES: u64 = 1 << 20;

/// Whether `bytes` (a whole file, or its first [`JSON_MAX_BYTES`] and one) are one of the crate's
/// own cache files, of any version, whole or damaged: empty, a sealed file (its magic bytes), or
/// a JSON object whose `fingerprint` begins with [`JSON_MARK`]. Only those are ever replaced.
pub(crate) fn is_own(bytes: &[u8]) -> bool {
    let own_json = || {
        let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
        Some(v.get("fingerprint")?.as_str()?.starts_with(JSON_MARK))
    };
    bytes.is_empty()
        || bytes.starts_with(MAGIC)
        || (bytes.len() as u64 <= JSON_MAX_BYTES && own_json().unwrap_or(false))
}

/// Whether a cache file may be written at `path`: nothing is there, or a regular file (not
/// followed if it is a symbolic link) that is empty or one of the crate's own ([`is_own`]).
/// Anything else is the user's and is left alone: the error says so.
pub(crate) fn replaceable(path: &Path) -> io::Result<()> {
    use std::io::Read;
    let left_alone = |what: &str| {
        Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("{} {what}; it is left alone", path.display())))
    };
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_file() => {
            let file = open_for_read(path)?;
            if !file.metadata()?.is_file() {
                return left_alone("is not a regular file");
            }
            let mut head = Vec::new();
            file.take(JSON_MAX_BYTES + 1).read_to_end(&mut head)?;
            if is_own(&head) {
                Ok(())
            } else {
                left_alone("is not a b3accel cache file")
            }
        }
        Ok(_) => left_alone("is not a regular file"),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Writes `bytes` to `path` atomically: into a new temporary file beside it (in a directory that
/// must exist: callers make it where they may), flushed to disk, then renamed over `path`. Readers see the old file or the new
/// one; of several writers at once, the last rename wins. Only a missing file, an empty one or
/// one of the crate's own is replaced ([`replaceable`], checked before the temporary file is made
/// and again before the rename). On failure the temporary file is removed and `path` is as it was.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    replaceable(path)?;
    // Unique among processes (the id) and among threads of this one (the serial number);
    // `create_new` never opens what is already there, a symbolic link included.
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.{}.tmp", std::process::id(), SERIAL.fetch_add(1, Ordering::Relaxed)));
    let tmp = parent.join(tmp_name);
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
    let written = (|| {
        file.write_all(bytes)?;
        file.sync_all()?;
        replaceable(path)?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Rewrites the cache file at `path` from what it holds now: `change` gets its bytes (`None`
/// where it is missing, unreadable, not a regular file or larger than `max_len`) and returns the
/// new bytes, or `None` to leave the file as it is. Processes that update one file at once take
/// turns (an advisory lock on its directory, on Unix), so that none undoes what another wrote
/// between its read and its write; the write is [`write_atomic`]'s, which replaces only the
/// crate's own files. With `make_dir` false, a missing directory is not made (a process writing
/// after its caller may have gone must not bring back a directory someone deleted). Returns
/// whether it wrote.
pub(crate) fn update(
    path: &Path,
    max_len: u64,
    make_dir: bool,
    change: impl FnOnce(Option<Vec<u8>>) -> Option<Vec<u8>>,
) -> io::Result<bool> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if make_dir {
        std::fs::create_dir_all(parent)?;
    }
    let _turn = DirLock::take(parent, true)?;
    match change(read(path, max_len)) {
        Some(bytes) => write_atomic(path, &bytes).map(|()| true),
        None => Ok(false),
    }
}

/// An advisory lock on a directory, held until dropped: the turn of one process among those that
/// update a cache file in it ([`update`]). Where the system has no such lock (or the directory's
/// filesystem refuses one), each goes ahead unlocked: a lost update only costs a later process
/// the work again, never a torn file.
pub(crate) struct DirLock {
    #[cfg(unix)]
    _dir: Option<std::fs::File>,
}

impl DirLock {
    /// Takes the lock on `dir`: waits for it with `wait`, else returns `None` where another
    /// process holds it. An error only where `dir` cannot be opened at all.
    pub(crate) fn take(dir: &Path, wait: bool) -> io::Result<Option<DirLock>> {
        #[cfg(unix)]
        {
            use std::os::unix::io::AsRawFd;
            let mut options = std::fs::OpenOptions::new();
            options.read(true);
            std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_DIRECTORY | libc::O_NOCTTY);
            let file = options.open(dir)?;
            let how = if wait { libc::LOCK_EX } else { libc::LOCK_EX | libc::LOCK_NB };
            loop {
                // SAFETY: flock on a descriptor this function owns; the lock goes with it.
                if unsafe { libc::flock(file.as_raw_fd(), how) } == 0 {
                    return Ok(Some(DirLock { _dir: Some(file) }));
                }
                match io::Error::last_os_error().raw_os_error() {
                    Some(libc::EINTR) => continue,
                    Some(libc::EWOULDBLOCK) => return Ok(None),
                    _ => return Ok(Some(DirLock { _dir: None })),
                }
            }
        }
        #[cfg(not(unix))]
        {
            let _ = (dir, wait);
            Ok(Some(DirLock {}))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("b3accel-cache-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn writes_replace_whole_files_and_leave_no_temporary() {
        let d = scratch("replace");
        let p = d.join("deeper").join("c.json");
        // The directory is the caller's to make: none is made here.
        assert!(write_atomic(&p, b"{}").is_err() && !d.join("deeper").exists());
        std::fs::create_dir_all(d.join("deeper")).unwrap();
        write_atomic(&p, br#"{"fingerprint": "b3accel first, longer contents"}"#).unwrap();
        write_atomic(&p, br#"{"fingerprint": "b3accel 2"}"#).unwrap();
        assert_eq!(read(&p, 100).unwrap(), br#"{"fingerprint": "b3accel 2"}"#);
        let names: Vec<_> = std::fs::read_dir(p.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["c.json"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// An update that may not make its directory writes nothing where the directory is gone (a
    /// process recording after the one that named the file has gone), and brings none back.
    #[test]
    fn an_update_without_make_dir_brings_back_no_directory() {
        let d = scratch("nodir");
        let p = d.join("gone").join("c.json");
        let content = |_: Option<Vec<u8>>| Some(br#"{"fingerprint": "b3accel test"}"#.to_vec());
        assert!(update(&p, 100, false, content).is_err());
        assert!(!d.join("gone").exists());
        assert!(update(&p, 100, true, content).unwrap());
        assert!(read(&p, 100).is_some());
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
    fn updates_at_once_take_turns_and_lose_nothing() {
        let d = scratch("update");
        let p = d.join("count.json");
        // One of the crate's own JSON files, holding a count.
        let count = |bytes: &[u8]| serde_json::from_slice::<serde_json::Value>(bytes).ok()?["n"].as_u64();
        let bump = |old: Option<Vec<u8>>| {
            let n = old.and_then(|b| count(&b)).unwrap_or(0);
            Some(format!(r#"{{"fingerprint": "b3accel test", "n": {}}}"#, n + 1).into_bytes())
        };
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..25 {
                        assert!(update(&p, 100, true, bump).unwrap());
                    }
                });
            }
        });
        assert_eq!(count(&read(&p, 100).unwrap()), Some(100));
        // Leaving the file as it is writes nothing; a missing directory is made only on request.
        assert!(!update(&p, 100, true, |_| None).unwrap());
        let gone = d.join("gone").join("c.json");
        assert!(update(&gone, 100, false, |_| Some(b"x".to_vec())).is_err());
        assert!(!d.join("gone").exists());
        // Another process's turn: a lock that is held is not taken without waiting.
        let held = DirLock::take(&d, true).unwrap();
        #[cfg(unix)]
        {
            let other = std::thread::spawn({
                let d = d.clone();
                move || DirLock::take(&d, false).unwrap().is_none()
            });
            assert!(other.join().unwrap(), "a held lock was taken again");
        }
        drop(held);
        assert!(DirLock::take(&d, false).unwrap().is_some());
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

    /// Symbolic links (to a file, to nothing, to a device), FIFOs, directories and devices at a
    /// cache path are never written through or replaced, and reading them never blocks.
    #[cfg(unix)]
    #[test]
    fn only_missing_and_regular_files_are_replaced_and_only_regular_files_read() {
        use std::os::unix::fs::{symlink, FileTypeExt};
        let d = scratch("types");
        std::fs::create_dir_all(&d).unwrap();
        let target = d.join("users-file");
        std::fs::write(&target, b"the user's").unwrap();
        symlink(&target, d.join("to-file")).unwrap();
        symlink(d.join("nowhere"), d.join("dangling")).unwrap();
        symlink("/dev/null", d.join("to-device")).unwrap();
        let fifo = d.join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        std::fs::create_dir(d.join("dir")).unwrap();
        for name in ["to-file", "dangling", "to-device", "fifo", "dir"] {
            let p = d.join(name);
            let before = std::fs::symlink_metadata(&p).unwrap().file_type();
            assert!(write_atomic(&p, b"cache").is_err(), "{name}");
            assert_eq!(std::fs::symlink_metadata(&p).unwrap().file_type(), before, "{name}");
        }
        assert_eq!(std::fs::read(&target).unwrap(), b"the user's");
        assert!(!d.join("nowhere").exists());
        assert!(std::fs::metadata("/dev/null").unwrap().file_type().is_char_device());
        // Reads: a FIFO with no writer, a device and a directory are no cache; a link to a
        // regular file is read.
        for name in ["fifo", "to-device", "dangling", "dir"] {
            assert!(read(&d.join(name), 100).is_none(), "{name}");
        }
        assert!(read(Path::new("/dev/zero"), 100).is_none());
        assert_eq!(read(&d.join("to-file"), 100).unwrap(), b"the user's");
        // Nothing was left beside them.
        let mut names: Vec<_> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        assert_eq!(names, ["dangling", "dir", "fifo", "to-device", "to-file", "users-file"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A sealed file with each header field wrong in turn is refused, each for its own reason.
    /// A regular file is replaced only when it is empty or one of the crate's own (sealed, or
    /// JSON with its fingerprint), of any version, whole or damaged; anything else stays as it is.
    #[test]
    fn only_empty_files_and_the_crates_own_are_replaced() {
        let d = scratch("own");
        std::fs::create_dir_all(&d).unwrap();
        let sealed_head = [&MAGIC[..], &[9; 40]].concat();
        let own: [(&str, &[u8]); 5] = [
            ("empty", b""),
            ("sealed, any version or damage", &sealed_head),
            ("a calibration", br#"{"format": 3, "fingerprint": "b3accel 0.1.0 | x", "cpu": {}}"#),
            ("another version's", br#"{"format": 1, "fingerprint": "b3accel 0.0.1 | elsewhere"}"#),
            ("pretty-printed", b"{\n  \"fingerprint\": \"b3accel 9\"\n}\n"),
        ];
        for (what, bytes) in own {
            let p = d.join("own");
            std::fs::write(&p, bytes).unwrap();
            write_atomic(&p, b"new").unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(std::fs::read(&p).unwrap(), b"new", "{what}");
        }
        let big_json = format!(r#"{{"fingerprint": "b3accel x", "pad": "{}"}}"#, " ".repeat(2 << 20));
        let foreign: [(&str, &[u8]); 8] = [
            ("text", b"my notes\n"),
            ("one space", b" "),
            ("JSON of another program", br#"{"fingerprint": "something else"}"#),
            ("JSON without a fingerprint", br#"{"format": 3}"#),
            ("a JSON array", br#"["b3accel "]"#),
            ("a fingerprint that is not a string", br#"{"fingerprint": 3}"#),
            ("the magic bytes later on", &[b"x", &MAGIC[..]].concat()),
            ("far larger than a JSON cache", big_json.as_bytes()),
        ];
        for (what, bytes) in foreign {
            let p = d.join("foreign");
            std::fs::write(&p, bytes).unwrap();
            let e = write_atomic(&p, b"new").expect_err(what);
            assert!(e.to_string().contains("is not a b3accel cache file; it is left alone"), "{what}: {e}");
            assert_eq!(std::fs::read(&p).unwrap(), bytes, "{what}");
        }
        let mut names: Vec<_> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        assert_eq!(names, ["foreign", "own"], "temporary files left behind");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_environment_variable_comes_first() {
        // An unset variable (no test sets this one) falls back to the cache directory.
        let p = path("B3ACCEL_TEST_UNSET_CACHE_VARIABLE", "x.json");
        assert_eq!(p, dir().filter(|_| enabled()).map(|d| d.join("x.json")));
    }

    #[test]
    fn the_cache_directory_variable_comes_before_the_systems_and_off_turns_caches_off() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| PathBuf::from(v))
        };
        let ours = env(&[(DIR_ENV, "/scratch/c"), ("HOME", "/home/u"), ("LOCALAPPDATA", "C:/u")]);
        assert_eq!(dir_from(&ours), Some(PathBuf::from("/scratch/c")));
        let system = dir_from(&env(&[("HOME", "/home/u"), ("LOCALAPPDATA", "C:/u")])).unwrap();
        assert!(system.ends_with("b3accel") && system != Path::new("/scratch/c"), "{system:?}");
        assert_eq!(dir_from(&env(&[])), None);
        assert!(switched_on(None) && switched_on(Some("on")) && switched_on(Some("")));
        assert!(!switched_on(Some("off")) && !switched_on(Some("OFF")) && !switched_on(Some(" off\n")));
    }
}
