//! `--progress`: a bar over the bytes to hash, on standard error.

use crate::ProgressWhen;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};
use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// With `--progress=auto`, the bar appears only once the work has lasted this long.
const SHOW_AFTER: Duration = Duration::from_secs(1);

/// A progress bar, or nothing. Cheap to call when there is none.
pub struct Progress {
    bar: Option<ProgressBar>,
    /// Auto mode: the bar exists but is hidden until [`SHOW_AFTER`] has passed.
    shown: AtomicBool,
    start: Instant,
}

impl Progress {
    /// No bar at all.
    pub fn none() -> Progress {
        Progress { bar: None, shown: AtomicBool::new(true), start: Instant::now() }
    }

    /// Whether `when` asks for a bar on this standard error.
    pub fn wanted(when: ProgressWhen) -> bool {
        match when {
            ProgressWhen::Never => false,
            ProgressWhen::Always => true,
            ProgressWhen::Auto => io::stderr().is_terminal(),
        }
    }

    /// A bar over `total` bytes, drawn as `when` says.
    pub fn new(when: ProgressWhen, total: u64) -> Progress {
        if !Progress::wanted(when) {
            return Progress::none();
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        let style = ProgressStyle::with_template(
            "{elapsed_precise} [{wide_bar}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} ETA {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        let progress = Progress { bar: Some(bar), shown: AtomicBool::new(false), start: Instant::now() };
        if when == ProgressWhen::Always {
            progress.show(true);
        }
        progress
    }

    fn show(&self, always: bool) {
        if let Some(bar) = &self.bar {
            self.shown.store(true, Ordering::Relaxed);
            if io::stderr().is_terminal() {
                bar.set_draw_target(ProgressDrawTarget::stderr());
            } else if always {
                bar.set_draw_target(ProgressDrawTarget::term_like_with_hz(Box::new(StderrTerm), 4));
            }
        }
    }

    /// Whether there is a bar (shown now or later): large inputs are then hashed in pieces so
    /// that it moves.
    pub fn active(&self) -> bool {
        self.bar.is_some()
    }

    /// `n` more bytes to do (work whose size is known only as it comes).
    pub fn grow(&self, n: u64) {
        if let Some(bar) = &self.bar {
            bar.inc_length(n);
        }
    }

    /// `n` more bytes done.
    pub fn inc(&self, n: u64) {
        if let Some(bar) = &self.bar {
            if !self.shown.load(Ordering::Relaxed) && self.start.elapsed() >= SHOW_AFTER {
                self.show(false);
            }
            bar.inc(n);
        }
    }

    /// Runs `f` (which writes to the terminal) with the bar out of the way.
    pub fn suspend<T>(&self, f: impl FnOnce() -> T) -> T {
        match &self.bar {
            Some(bar) if self.shown.load(Ordering::Relaxed) => bar.suspend(f),
            _ => f(),
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Standard error as a terminal of 80 columns, for `--progress=always` when it is not one.
#[derive(Debug)]
struct StderrTerm;

impl StderrTerm {
    /// Holds the library's stderr lock while it writes, as `warn` does.
    fn put(&self, s: &str) -> io::Result<()> {
        let _held = b3accel::stderr::lock();
        io::stderr().lock().write_all(s.as_bytes())
    }
}

impl TermLike for StderrTerm {
    fn width(&self) -> u16 {
        80
    }
    fn move_cursor_up(&self, n: usize) -> io::Result<()> {
        if n > 0 {
            self.put(&format!("\x1b[{n}A"))?;
        }
        Ok(())
    }
    fn move_cursor_down(&self, n: usize) -> io::Result<()> {
        if n > 0 {
            self.put(&format!("\x1b[{n}B"))?;
        }
        Ok(())
    }
    fn move_cursor_right(&self, n: usize) -> io::Result<()> {
        if n > 0 {
            self.put(&format!("\x1b[{n}C"))?;
        }
        Ok(())
    }
    fn move_cursor_left(&self, n: usize) -> io::Result<()> {
        if n > 0 {
            self.put(&format!("\x1b[{n}D"))?;
        }
        Ok(())
    }
    fn write_line(&self, s: &str) -> io::Result<()> {
        self.put(s)?;
        self.put("\n")
    }
    fn write_str(&self, s: &str) -> io::Result<()> {
        self.put(s)
    }
    fn clear_line(&self) -> io::Result<()> {
        self.put("\r\x1b[2K")
    }
    fn flush(&self) -> io::Result<()> {
        io::stderr().flush()
    }
}
