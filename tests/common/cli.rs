//! What the command-line tests share: upstream `b3sum` (or a loud note that it is missing),
//! running a program with a time limit, scratch directories and test data.
//!
//! Every `b3accel` started through here keeps its `Device::Auto` calibration in a file of this
//! test process ([`calibration_file`]), never in the user's cache.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// The binary under test.
pub const B3ACCEL: &str = env!("CARGO_BIN_EXE_b3accel");

/// A scratch directory, removed when dropped.
#[allow(unused_imports)] // not every test binary makes directories
pub use super::Scratch as Dir;

/// Whether this run is CI's (`CI=true`): a comparison that cannot run is then a failure.
pub fn ci() -> bool {
    super::expect::ci()
}

/// b3sum for a comparison test, or `None` after a loud warning (a failure under CI=true).
pub fn upstream(test: &str) -> Option<&'static Path> {
    let found = super::b3sum();
    if found.is_none() {
        let msg = format!(
            "no b3sum 1.8+ found (set B3SUM, or install it at /opt/b3sum/bin/b3sum): \
             {test} did NOT compare b3accel with b3sum"
        );
        if ci() {
            panic!("{msg} (CI=true: the comparison must run)");
        }
        eprintln!("\n*** WARNING: {msg} ***\n");
    }
    found
}

/// Deterministic pseudo-random bytes.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    super::random_bytes(len, seed)
}

/// The calibration cache of the b3accel processes these tests start: a file in the temporary
/// directory named after this test process.
pub fn calibration_file() -> PathBuf {
    std::env::temp_dir().join(format!("b3accel-cli-tests-{}-calibration.json", std::process::id()))
}

/// `b3accel` as a command, with this test run's calibration file.
pub fn b3accel_command() -> Command {
    let mut cmd = Command::new(B3ACCEL);
    cmd.env("B3ACCEL_CALIBRATION", calibration_file());
    cmd
}

/// Runs `bin` in `dir` with `args`, `stdin` on standard input, and a time limit.
pub fn run_in(bin: &Path, dir: &Path, args: &[&OsStr], stdin: &[u8]) -> Output {
    run_env(bin, dir, &[], args, stdin)
}

/// [`run_in`] with environment variables `env` set.
pub fn run_env(bin: &Path, dir: &Path, env: &[(&str, &str)], args: &[&OsStr], stdin: &[u8]) -> Output {
    let mut cmd = if bin == Path::new(B3ACCEL) { b3accel_command() } else { Command::new(bin) };
    cmd.args(args).envs(env.iter().copied()).current_dir(dir);
    super::run_with_input(cmd, stdin, Duration::from_secs(60))
}

pub fn os<'a>(args: &'a [&'a str]) -> Vec<&'a OsStr> {
    args.iter().map(OsStr::new).collect()
}

pub fn assert_no_panic(args: &[impl std::fmt::Debug], out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("panicked") && out.status.code().is_some_and(|c| c <= 2),
        "b3accel {args:?} panicked or crashed: {:?}\n{stderr}",
        out.status
    );
}
