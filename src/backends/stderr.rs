//! Keeping GPU drivers' start-up chatter off standard error: [`quiet`] points file descriptor 2
//! at `/dev/null` while a driver starts, and [`lock`] lets a program's own messages wait until
//! it points back.
//!
//! Why: some drivers write to standard error while they start, whatever the program asked. On
//! headless Linux, Mesa's implicit Vulkan layer `VK_LAYER_MESA_device_select` tries to connect to
//! a Wayland compositor while it sorts the physical devices of an instance that enabled
//! `VK_KHR_wayland_surface` (wgpu enables every surface extension the loader offers), and
//! libwayland then writes `error: XDG_RUNTIME_DIR is invalid or not set in the environment.`
//! (twice per listing); EGL does the same on other machines. b3accel is a drop-in for `b3sum`,
//! whose standard error is empty on success, and a library must not write to its user's
//! standard error either.
//!
//! Why this way: neither wgpu nor the Vulkan loader has a per-instance switch for it. The layer
//! only looks for Wayland when the instance enables `VK_KHR_wayland_surface`, but wgpu-hal's
//! instance-creation hook (`init_with_callback`) and `Instance::from_raw` both forbid removing
//! extensions from its list; the layer's own switch (`NODEVICE_SELECT=1`) and the loader's
//! (`VK_LOADER_LAYERS_DISABLE`) are environment variables, and setting one at run time is a data
//! race with any other thread that reads the environment (drivers do). What remains is the
//! descriptor itself: the library points it at `/dev/null` around the calls that start drivers
//! (creating a wgpu instance, listing its adapters, opening a device, listing OpenCL devices),
//! once per backend per process and once per device opened, and points it back at once.
//!
//! The trade-off: file descriptor 2 belongs to the whole process. While a driver starts (tens to
//! hundreds of milliseconds, a few times per process), whatever any thread writes to standard
//! error is lost, and a child process started meanwhile inherits `/dev/null` as its standard
//! error. Code that writes to standard error while the library may be opening devices on other
//! threads should hold [`lock`] while it writes: the library waits for it before it silences
//! anything, and it waits for the library to point descriptor 2 back. On platforms other than
//! Unix nothing is redirected (the chatter this hides was met with Mesa on Linux, and Windows'
//! standard handles could not be tested where b3accel is built), and [`lock`] only keeps writers
//! from interleaving. [`show_driver_messages`] turns the silencing off, to see what a driver
//! says when it fails.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

/// Who points descriptor 2 where, process-wide.
struct State {
    /// Threads inside [`quiet`] now. The first one in points descriptor 2 at `/dev/null`, the
    /// last one out points it back.
    silencers: usize,
    /// A thread holds [`lock`].
    writer: bool,
    /// Where descriptor 2 pointed before the silencing, while silenced.
    saved: Option<Saved>,
}

static STATE: Mutex<State> = Mutex::new(State { silencers: 0, writer: false, saved: None });
/// Signalled whenever `silencers` drops to zero or a writer lets go.
static CHANGED: Condvar = Condvar::new();
/// Set by [`show_driver_messages`].
static SHOW: AtomicBool = AtomicBool::new(false);

/// What this thread is doing with standard error, so that nested calls never wait for
/// themselves.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    None,
    /// Inside [`quiet`].
    Silencing,
    /// Holding [`lock`], this many times.
    Writing(usize),
}

thread_local! {
    static ROLE: Cell<Role> = const { Cell::new(Role::None) };
}

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `f` with standard error (file descriptor 2) pointed at `/dev/null`, and points it back
/// when `f` returns or panics. The library does this itself around every call that starts a GPU
/// driver; call it around your own driver start-up (creating a `wgpu::Instance`, listing its
/// adapters) to keep that quiet too. Any number of threads may be inside at once: descriptor 2
/// is pointed back when the last one leaves. It first waits for a thread that holds [`lock`].
///
/// Everything written to standard error meanwhile, by any thread, is lost (see the [module
/// notes](self)); so keep `f` to the driver calls, and never wait inside `f` for another thread
/// that holds or takes [`lock`]. Inside `f` (nested calls, or [`lock`] on the same thread) nothing
/// waits. With [`show_driver_messages`]`(true)`, and on platforms other than Unix, `f` just runs.
///
/// ```
/// // Listing adapters on a machine with Mesa's Vulkan layer and no Wayland session: the layer's
/// // "XDG_RUNTIME_DIR is invalid or not set" goes to /dev/null.
/// let n = b3accel::stderr::quiet(|| b3accel::devices().len());
/// assert!(n >= 1);
/// ```
pub fn quiet<T>(f: impl FnOnce() -> T) -> T {
    if SHOW.load(Ordering::Relaxed) || ROLE.with(|r| r.get()) != Role::None {
        return f();
    }
    {
        let mut s = state();
        while s.writer {
            s = CHANGED.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        s.silencers += 1;
        if s.silencers == 1 {
            s.saved = to_null();
        }
    }
    ROLE.with(|r| r.set(Role::Silencing));
    // Points descriptor 2 back (when this thread is the last one in) even if `f` panics.
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            ROLE.with(|r| r.set(Role::None));
            let mut s = state();
            s.silencers -= 1;
            if s.silencers == 0 {
                if let Some(saved) = s.saved.take() {
                    restore(saved);
                }
                CHANGED.notify_all();
            }
        }
    }
    let _leave = Leave;
    f()
}

/// Holds standard error for the caller's own messages: while the guard lives, the library does
/// not point descriptor 2 elsewhere, and other holders wait (so that lines do not interleave).
/// Taking it waits until no thread is inside [`quiet`]. Hold it only while writing.
///
/// On a thread inside [`quiet`] it returns at once, and what is written is lost; a thread that
/// holds it may take it again.
///
/// ```
/// use std::io::Write;
/// let _held = b3accel::stderr::lock();
/// writeln!(std::io::stderr(), "myprog: a warning no driver start-up can swallow")?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn lock() -> StderrLock {
    match ROLE.with(|r| r.get()) {
        Role::Silencing => return StderrLock { held: false },
        Role::Writing(n) => {
            ROLE.with(|r| r.set(Role::Writing(n + 1)));
            return StderrLock { held: true };
        }
        Role::None => {}
    }
    let mut s = state();
    while s.writer || s.silencers > 0 {
        s = CHANGED.wait(s).unwrap_or_else(|p| p.into_inner());
    }
    s.writer = true;
    ROLE.with(|r| r.set(Role::Writing(1)));
    StderrLock { held: true }
}

/// Standard error held for the caller's messages; see [`lock`]. Dropping it lets go.
///
/// ```
/// let held: b3accel::stderr::StderrLock = b3accel::stderr::lock();
/// drop(held);
/// ```
#[derive(Debug)]
#[must_use = "standard error is held only while the guard lives"]
pub struct StderrLock {
    /// False for the guard handed out inside [`quiet`], which holds nothing.
    held: bool,
}

impl Drop for StderrLock {
    fn drop(&mut self) {
        if !self.held {
            return;
        }
        match ROLE.with(|r| r.get()) {
            Role::Writing(n) if n > 1 => ROLE.with(|r| r.set(Role::Writing(n - 1))),
            _ => {
                ROLE.with(|r| r.set(Role::None));
                state().writer = false;
                CHANGED.notify_all();
            }
        }
    }
}

/// With `true`, [`quiet`] no longer silences anything, in the library or elsewhere: drivers'
/// messages reach standard error (to see why a device does not start). `false` (the default)
/// silences again.
///
/// ```
/// b3accel::stderr::show_driver_messages(false);
/// ```
pub fn show_driver_messages(show: bool) {
    SHOW.store(show, Ordering::Relaxed);
}

/// Where descriptor 2 pointed: a duplicate of it, closed when it is restored.
#[cfg(unix)]
struct Saved(libc::c_int);

#[cfg(not(unix))]
struct Saved;

/// Points descriptor 2 at `/dev/null`; what it pointed at before, or `None` (nothing changed)
/// where that cannot be done.
#[cfg(unix)]
fn to_null() -> Option<Saved> {
    // SAFETY: plain descriptor calls on integers. The duplicate is close-on-exec (a child
    // started meanwhile must not inherit it), above 2, and closed by `restore`; /dev/null's
    // descriptor is closed once descriptor 2 refers to it too.
    unsafe {
        let saved = libc::fcntl(2, libc::F_DUPFD_CLOEXEC, 3);
        if saved < 0 {
            return None;
        }
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if null < 0 {
            libc::close(saved);
            return None;
        }
        let moved = libc::dup2(null, 2);
        libc::close(null);
        if moved < 0 {
            libc::close(saved);
            return None;
        }
        Some(Saved(saved))
    }
}

#[cfg(not(unix))]
fn to_null() -> Option<Saved> {
    None
}

#[cfg(unix)]
fn restore(saved: Saved) {
    // SAFETY: `saved.0` is the open duplicate `to_null` made; dup2 and close take integers.
    unsafe {
        libc::dup2(saved.0, 2);
        libc::close(saved.0);
    }
}

#[cfg(not(unix))]
fn restore(_: Saved) {}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// The identity (device, inode) of what descriptor 2 refers to.
    fn fd2() -> (u64, u64) {
        // SAFETY: fstat writes into the zeroed struct we own.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            assert_eq!(libc::fstat(2, &mut st), 0);
            (st.st_dev as u64, st.st_ino as u64)
        }
    }

    fn dev_null() -> (u64, u64) {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata("/dev/null").unwrap();
        (m.dev(), m.ino())
    }

    /// What descriptor 2 refers to when nobody silences it (read while holding the lock, so
    /// that no thread of this test binary is inside `quiet` meanwhile).
    fn fd2_at_rest() -> (u64, u64) {
        let _held = lock();
        fd2()
    }

    #[test]
    fn quiet_points_stderr_at_null_and_back_and_nests() {
        show_driver_messages(false);
        let before = fd2_at_rest();
        let inside = quiet(|| {
            let outer = fd2();
            // Nested, and a lock on the same thread: neither waits.
            let nested = quiet(fd2);
            let _held = lock();
            (outer, nested)
        });
        assert_eq!(inside.0, dev_null());
        assert_eq!(inside.1, dev_null());
        // A panic inside still points it back.
        let caught = std::panic::catch_unwind(|| quiet(|| panic!("inside quiet")));
        assert!(caught.is_err());
        let held = lock();
        assert_eq!(fd2(), before, "descriptor 2 must point back after quiet");
        // Re-entrant on the holding thread.
        let again = lock();
        drop(again);
        drop(held);
    }

    #[test]
    fn a_writer_waits_for_the_silencers() {
        use std::sync::mpsc;
        show_driver_messages(false);
        let before = fd2_at_rest();
        let (tx, rx) = mpsc::channel();
        let (entered_tx, entered_rx) = mpsc::channel();
        let silencer = std::thread::spawn(move || {
            quiet(|| {
                entered_tx.send(()).unwrap();
                // Stay silenced until told.
                rx.recv().unwrap();
                fd2()
            })
        });
        entered_rx.recv().unwrap();
        let (got_tx, got_rx) = mpsc::channel();
        let writer = std::thread::spawn(move || {
            let _held = lock();
            got_tx.send(fd2()).unwrap();
        });
        // The writer must not get the lock while the silencer is inside.
        assert!(got_rx.recv_timeout(std::time::Duration::from_millis(200)).is_err());
        tx.send(()).unwrap();
        assert_eq!(silencer.join().unwrap(), dev_null());
        let seen = got_rx.recv().unwrap();
        writer.join().unwrap();
        assert_eq!(seen, before, "the writer runs with stderr pointed back");
    }
}
