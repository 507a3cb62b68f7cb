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
        super::expect::not_run(&msg);
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

/// Runs b3accel and b3sum in `dir` with the same `args` and standard input, and asserts the same
/// standard output, the same exit status, and standard error written by both or by neither (the
/// error lines named after each program); `ours`, options b3sum does not have (such as
/// `--backend cpu`), go to b3accel only, before `args`. Returns b3accel's output (`None`, after
/// [`upstream`]'s warning, where there is no b3sum).
pub fn same_ext(dir: &Path, ours: &[&str], args: &[&OsStr], stdin: &[u8]) -> Option<Output> {
    same_env(dir, &[], ours, args, stdin)
}

/// As [`same_ext`], with environment variables `env` set for both programs.
pub fn same_env(dir: &Path, env: &[(&str, &str)], ours: &[&str], args: &[&OsStr], stdin: &[u8]) -> Option<Output> {
    let mut our_args: Vec<&OsStr> = ours.iter().map(OsStr::new).collect();
    our_args.extend(args);
    let args = &our_args[ours.len()..];
    let ours = run_env(Path::new(B3ACCEL), dir, env, &our_args, stdin);
    assert_no_panic(args, &ours);
    let Some(upstream) = upstream(&format!("{args:?}")) else {
        compare_with_model(dir, args, stdin, &ours);
        return Some(ours);
    };
    let theirs = run_env(upstream, dir, env, args, stdin);
    assert_eq!(
        String::from_utf8_lossy(&ours.stdout),
        String::from_utf8_lossy(&theirs.stdout),
        "stdout differs for {args:?}\nb3accel stderr: {}\nb3sum stderr: {}",
        String::from_utf8_lossy(&ours.stderr),
        String::from_utf8_lossy(&theirs.stderr),
    );
    assert_eq!(ours.stdout, theirs.stdout, "stdout bytes differ for {args:?}");
    assert_eq!(
        ours.status.code(),
        theirs.status.code(),
        "exit status differs for {args:?}\nb3accel stderr: {}\nb3sum stderr: {}",
        String::from_utf8_lossy(&ours.stderr),
        String::from_utf8_lossy(&theirs.stderr),
    );
    assert_eq!(
        ours.stderr.is_empty(),
        theirs.stderr.is_empty(),
        "only one of them wrote to stderr for {args:?}\nb3accel: {}\nb3sum: {}",
        String::from_utf8_lossy(&ours.stderr),
        String::from_utf8_lossy(&theirs.stderr),
    );
    // Error lines carry our name where b3sum's carry its own.
    if theirs.stderr.starts_with(b"b3sum: ") {
        assert!(ours.stderr.starts_with(b"b3accel: "), "{args:?}: {}", String::from_utf8_lossy(&ours.stderr));
    }
    Some(ours)
}

/// Without b3sum: b3accel's output against the model of b3sum (`super::oracle`), where it covers
/// `args`; a loud note where it does not.
pub fn compare_with_model(dir: &Path, args: &[&OsStr], stdin: &[u8], ours: &Output) {
    match super::oracle::b3sum(dir, args, stdin) {
        Some(want) => {
            assert_eq!(
                String::from_utf8_lossy(&ours.stdout),
                String::from_utf8_lossy(&want.stdout),
                "stdout differs from the model of b3sum for {args:?}\nb3accel stderr: {}",
                String::from_utf8_lossy(&ours.stderr)
            );
            assert_eq!(ours.stdout, want.stdout, "stdout bytes differ from the model for {args:?}");
            assert_eq!(ours.status.code(), Some(want.code), "exit status differs from the model for {args:?}");
        }
        None => eprintln!("*** {args:?}: beyond the model of b3sum; only checked for panics ***"),
    }
}
