//! What the command-line tests share: finding upstream `b3sum`, running a program with a time
//! limit, scratch directories and test data.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The binary under test.
pub const B3ACCEL: &str = env!("CARGO_BIN_EXE_b3accel");

pub fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

pub fn is_modern_b3sum(path: &Path) -> bool {
    let Ok(out) = Command::new(path).arg("--version").output() else {
        return false;
    };
    let version = String::from_utf8_lossy(&out.stdout);
    let Some(v) = version.trim().strip_prefix("b3sum ") else {
        return false;
    };
    let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (1, 8)
}

/// Upstream b3sum, if this machine has a recent one.
pub fn b3sum() -> Option<&'static Path> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let mut candidates = Vec::new();
            if let Some(p) = std::env::var_os("B3SUM") {
                candidates.push(PathBuf::from(p));
            }
            candidates.push(PathBuf::from("/opt/b3sum/bin/b3sum"));
            if let Some(path) = std::env::var_os("PATH") {
                candidates.extend(std::env::split_paths(&path).map(|d| d.join("b3sum")));
            }
            candidates.into_iter().find(|p| p.is_file() && is_modern_b3sum(p))
        })
        .as_deref()
}

/// b3sum for a comparison test, or `None` after a loud warning (a failure under CI=true).
pub fn upstream(test: &str) -> Option<&'static Path> {
    let found = b3sum();
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

/// A scratch directory, removed when dropped.
pub struct Dir(PathBuf);

impl Dir {
    pub fn new(name: &str) -> Dir {
        let dir = std::env::temp_dir().join(format!("b3accel-cli-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Dir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn write(&self, name: impl AsRef<Path>, data: &[u8]) -> PathBuf {
        let p = self.0.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, data).unwrap();
        p
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Deterministic pseudo-random bytes.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Runs `bin` in `dir` with `args`, `stdin` on standard input, and a time limit.
pub fn run_in(bin: &Path, dir: &Path, args: &[&OsStr], stdin: &[u8]) -> Output {
    run_env(bin, dir, &[], args, stdin)
}

/// [`run_in`] with environment variables `env` set.
pub fn run_env(bin: &Path, dir: &Path, env: &[(&str, &str)], args: &[&OsStr], stdin: &[u8]) -> Output {
    let mut child = Command::new(bin)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(dir)
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        // The program may exit without reading everything.
        let _ = input.write_all(&stdin);
    });
    let out = wait_with_limit(child, Duration::from_secs(60));
    let _ = writer.join();
    out
}

pub fn wait_with_limit(mut child: std::process::Child, limit: Duration) -> Output {
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let out_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(mut s) = stdout {
            let _ = s.read_to_end(&mut v);
        }
        v
    });
    let err_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(mut s) = stderr {
            let _ = s.read_to_end(&mut v);
        }
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("timed out after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Output { status, stdout: out_reader.join().unwrap(), stderr: err_reader.join().unwrap() }
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
    let upstream = upstream(&format!("{args:?}"))?;
    let mut our_args: Vec<&OsStr> = ours.iter().map(OsStr::new).collect();
    our_args.extend(args);
    let args = &our_args[ours.len()..];
    let ours = run_env(Path::new(B3ACCEL), dir, env, &our_args, stdin);
    assert_no_panic(args, &ours);
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
