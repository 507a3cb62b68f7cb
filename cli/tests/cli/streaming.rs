//! Output that streams: every line reaches standard output as its input finishes, so that a
//! process stopped by a signal keeps the lines it finished; `--check` answers a checkfile's lines
//! as they come (from a pipe, before the writer closes it) and reads any checkfile in a little
//! memory.
#![cfg(unix)]

use crate::common;

use common::cli::b3accel_command;
use common::Scratch;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

/// How long a line may take to come: far more than it needs, so that only a line that never
/// comes fails.
const LIMIT: Duration = Duration::from_secs(60);

/// The lines of `child`'s standard output, as they come, through a channel.
fn lines_of(child: &mut Child) -> Receiver<String> {
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    rx
}

fn line(file: &[u8], name: &str) -> String {
    format!("{}  {name}", blake3::hash(file).to_hex())
}

fn mkfifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Hashing 200 files, then a FIFO nobody writes (so the run never ends), then one more file:
/// the 200 lines come while the run goes on (lines ready together may leave in one write, but
/// all before the run waits on the FIFO), and a process stopped by SIGTERM or SIGINT, or killed
/// by SIGKILL, has written them, whole, and nothing more.
#[test]
fn a_stopped_process_keeps_its_finished_lines() {
    let dir = Scratch::new("stopped");
    let mut args = Vec::new();
    let mut expected = Vec::new();
    for i in 0..200 {
        let name = format!("f{i:03}");
        // Sizes from 0 to a few KiB, so that files finish out of order across threads.
        let bytes: Vec<u8> = (0..(i * 37) % 5000).map(|j| (i + j) as u8).collect();
        dir.write(&name, &bytes);
        expected.push(line(&bytes, &name));
        args.push(name);
    }
    dir.write("last", b"never printed: it comes after the FIFO");
    mkfifo(&dir.path().join("fifo"));
    args.extend(["fifo".to_string(), "last".to_string()]);
    for (signal, threads) in [
        (libc::SIGTERM, "1"),
        (libc::SIGINT, "4"),
        (libc::SIGTERM, "4"),
        (libc::SIGKILL, "1"),
        (libc::SIGKILL, "2"),
        (libc::SIGKILL, "4"),
    ] {
        let mut command = b3accel_command();
        // SAFETY: `signal` is async-signal-safe, as code between fork and exec must be.
        unsafe {
            // The signals sent below end the child whatever its parent ignored: a test runner
            // started in the background by a shell ignores SIGINT, and a child inherits that.
            command.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                libc::signal(libc::SIGTERM, libc::SIG_DFL);
                Ok(())
            });
        }
        let mut child = command
            .args(["--num-threads", threads])
            .args(&args)
            .current_dir(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let lines = lines_of(&mut child);
        for (i, want) in expected.iter().enumerate() {
            let got = lines.recv_timeout(LIMIT).unwrap_or_else(|_| panic!("line {i}, before the run ends"));
            assert_eq!(&got, want, "signal {signal}, {threads} threads, line {i}");
        }
        // SAFETY: a plain kill(2) of the child this test started.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let status = child.wait().unwrap();
        assert!(!status.success());
        let rest: Vec<String> = lines.iter().collect();
        assert!(rest.is_empty(), "signal {signal}, {threads} threads: after the kill: {rest:?}");
    }
}

/// `--check -` from a pipe answers each line once it is written, before the writer closes it;
/// the exit status comes when it does.
#[test]
fn check_answers_a_pipes_lines_as_they_come() {
    let dir = Scratch::new("slow-pipe");
    dir.write("a", b"one");
    dir.write("b", &vec![7u8; 3 << 20]);
    let mut child = b3accel_command()
        .args(["-c", "-"])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut writer = child.stdin.take().unwrap();
    let answers = lines_of(&mut child);
    for (name, bytes) in [("a", b"one".to_vec()), ("b", vec![7u8; 3 << 20]), ("a", b"one".to_vec())] {
        writeln!(writer, "{}", line(&bytes, name)).unwrap();
        writer.flush().unwrap();
        assert_eq!(answers.recv_timeout(LIMIT).expect("an answer while the pipe is open"), format!("{name}: OK"));
    }
    writeln!(writer, "{}  a", blake3::hash(b"not one").to_hex()).unwrap();
    writer.flush().unwrap();
    assert_eq!(answers.recv_timeout(LIMIT).unwrap(), "a: FAILED");
    drop(writer);
    assert_eq!(child.wait().unwrap().code(), Some(1));
}

/// Runs `b3accel ARGS` in `dir` (standard output and error discarded) and returns whether it
/// succeeded and its peak resident set in KiB, as wait4(2) reports it for that one process.
// The child is reaped by wait4 below, which std's Child does not know of.
#[allow(clippy::zombie_processes)]
fn peak_kib(dir: &std::path::Path, args: &[&str]) -> (bool, i64) {
    let child =
        b3accel_command().args(args).current_dir(dir).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let start = std::time::Instant::now();
    let (mut status, mut usage) = (0, unsafe { std::mem::zeroed::<libc::rusage>() });
    loop {
        // SAFETY: wait4 on the child this test started, with valid pointers.
        let done = unsafe { libc::wait4(child.id() as i32, &mut status, libc::WNOHANG, &mut usage) };
        assert!(done >= 0, "wait4: {}", std::io::Error::last_os_error());
        if done > 0 {
            return (libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, usage.ru_maxrss);
        }
        assert!(start.elapsed() < Duration::from_secs(600), "b3accel {args:?}: still running");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A checkfile of a million lines is checked in a few MB: its peak resident set is within 16 MiB
/// of the same binary's hashing one small file (reading the whole checkfile first took 250 MB).
#[test]
fn a_million_line_checkfile_takes_a_few_mb() {
    const LINES: usize = 1_000_000;
    let dir = Scratch::new("big-checkfile");
    dir.write("a", b"x");
    let (ok, baseline) = peak_kib(dir.path(), &["a"]);
    assert!(ok);
    // Written a line at a time: a child's peak, as Linux counts it, starts from its parent's
    // resident set when it was forked.
    let mut sums = std::io::BufWriter::new(std::fs::File::create(dir.path().join("sums")).unwrap());
    let one = format!("{}\n", line(b"x", "a"));
    for _ in 0..LINES {
        sums.write_all(one.as_bytes()).unwrap();
    }
    sums.into_inner().unwrap();
    let (ok, peak) = peak_kib(dir.path(), &["-c", "--quiet", "sums"]);
    assert!(ok);
    println!("peak resident set: {peak} KiB checking {LINES} lines, {baseline} KiB hashing one file");
    assert!(peak < baseline + 16 * 1024, "{LINES} lines: {peak} KiB at peak against {baseline} KiB");
}
