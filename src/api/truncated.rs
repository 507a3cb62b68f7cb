//! Mapped files truncated while they are hashed: an error, not a dead process.
//!
//! Reading a page of a map that lies past the end of its file (another process truncated it)
//! raises SIGBUS, whose default action ends the process. While [`guard`] runs its work, the map's
//! address range is registered; a SIGBUS inside a registered range maps a page of zeros over the
//! faulting page (so the read goes on), and marks the range as truncated, which turns the work's
//! result into an error. A SIGBUS anywhere else goes to the handler that was there before (or
//! the default action), as if this one were not installed.

use std::io;

/// Runs `work` over `bytes` (a map of a file), or returns an error if the file was truncated while
/// `work` read it (`work`'s result, computed over zeros where the file was gone, is dropped).
pub(crate) fn guard<T>(bytes: &[u8], work: impl FnOnce() -> T) -> io::Result<T> {
    #[cfg(target_os = "linux")]
    {
        let Some(slot) = linux::register(bytes) else { return Ok(work()) };
        let out = work();
        match linux::unregister(slot) {
            false => Ok(out),
            true => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the file was truncated while it was being hashed (it changed while being read)",
            )),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = bytes;
        Ok(work())
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Once;

    /// Maps guarded at once: one per thread hashing a mapped file is plenty; a map that finds
    /// no free slot is hashed unguarded, as before.
    const SLOTS: usize = 256;

    struct Slot {
        start: AtomicUsize,
        end: AtomicUsize,
        truncated: AtomicBool,
    }

    #[allow(clippy::declare_interior_mutable_const)]
    const FREE: Slot = Slot { start: AtomicUsize::new(0), end: AtomicUsize::new(0), truncated: AtomicBool::new(false) };
    static RANGES: [Slot; SLOTS] = [FREE; SLOTS];

    /// The SIGBUS action that was in place before ours.
    static mut PREVIOUS: std::mem::MaybeUninit<libc::sigaction> = std::mem::MaybeUninit::uninit();
    static INSTALLED: Once = Once::new();
    static INSTALL_OK: AtomicBool = AtomicBool::new(false);

    /// Registers `bytes`' address range; `None` when the handler could not be installed or no
    /// slot is free.
    pub(super) fn register(bytes: &[u8]) -> Option<usize> {
        if bytes.is_empty() {
            return None;
        }
        INSTALLED.call_once(|| INSTALL_OK.store(install(), Ordering::SeqCst));
        if !INSTALL_OK.load(Ordering::SeqCst) {
            return None;
        }
        let start = bytes.as_ptr() as usize;
        for (i, slot) in RANGES.iter().enumerate() {
            // A slot is claimed by its end (0 = free), then its start is published.
            if slot.end.compare_exchange(0, start + bytes.len(), Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                slot.truncated.store(false, Ordering::SeqCst);
                slot.start.store(start, Ordering::SeqCst);
                return Some(i);
            }
        }
        None
    }

    /// Frees slot `i`; whether its range was found truncated.
    pub(super) fn unregister(i: usize) -> bool {
        let slot = &RANGES[i];
        let truncated = slot.truncated.load(Ordering::SeqCst);
        slot.start.store(0, Ordering::SeqCst);
        slot.end.store(0, Ordering::SeqCst);
        truncated
    }

    fn install() -> bool {
        // SAFETY: sigaction is plain data; the new action's handler is `on_sigbus`, which only
        // makes async-signal-safe calls (mmap, sigaction) and atomic loads and stores.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sigbus as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&mut action.sa_mask);
            let previous = std::ptr::addr_of_mut!(PREVIOUS).cast::<libc::sigaction>();
            libc::sigaction(libc::SIGBUS, &action, previous) == 0
        }
    }

    extern "C" fn on_sigbus(_signal: libc::c_int, info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
        let addr = unsafe { (*info).si_addr() } as usize;
        for slot in &RANGES {
            let (start, end) = (slot.start.load(Ordering::SeqCst), slot.end.load(Ordering::SeqCst));
            if start != 0 && (start..end).contains(&addr) {
                slot.truncated.store(true, Ordering::SeqCst);
                // SAFETY: sysconf and mmap are async-signal-safe. The page replaced lies inside a
                // read-only map that this process made of a file and that is being read; zeros
                // there are only hashed, and the result is dropped as an error.
                unsafe {
                    let page = libc::sysconf(libc::_SC_PAGESIZE) as usize;
                    let at = (addr & !(page - 1)) as *mut libc::c_void;
                    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED;
                    if libc::mmap(at, page, libc::PROT_READ, flags, -1, 0) != libc::MAP_FAILED {
                        return;
                    }
                }
                break;
            }
        }
        // Not ours (or the page could not be replaced): the action from before takes over, and the
        // fault happens again when this returns.
        // SAFETY: PREVIOUS was filled in by the sigaction call that installed this handler.
        unsafe {
            libc::sigaction(libc::SIGBUS, std::ptr::addr_of!(PREVIOUS).cast::<libc::sigaction>(), std::ptr::null_mut());
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_map_truncated_while_read_is_an_error_not_a_signal() {
        let path = std::env::temp_dir().join(format!("b3accel-truncated-{}", std::process::id()));
        std::fs::write(&path, vec![9u8; 1 << 20]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: the test truncates the file on purpose; the guard is what is tested.
        let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
        let sum = guard(&map, || map.iter().map(|&b| b as u64).sum::<u64>()).unwrap();
        assert_eq!(sum, 9 << 20);
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(4096).unwrap();
        let err = guard(&map, || map.iter().map(|&b| b as u64).sum::<u64>()).unwrap_err();
        assert!(err.to_string().contains("truncated"), "{err}");
        std::fs::remove_file(&path).unwrap();
    }
}
