//! A file of several GiB read from the front (`--read stream`) by the binary, in bounded memory.
#![cfg(target_os = "linux")]

use crate::common::cli::{b3accel_command, Dir};
use std::io::Read;
use std::process::Stdio;
use std::time::Duration;

/// The peak resident set of process `pid` so far, in KiB (`VmHWM`), if it is still running.
/// It counts that process's own memory since it started its program: getrusage's and wait4's
/// `ru_maxrss` would also count this test program's memory at the time it started the child
/// (Linux records the spawning process's peak at `exec`), which other tests here make large.
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn several_gib_stream_in_bounded_memory() {
    let dir = Dir::new("cold-big");
    let path = dir.path().join("sparse");
    let len: u64 = 3 << 30;
    std::fs::File::create(&path).unwrap().set_len(len).unwrap();
    let mut child = b3accel_command()
        .args(["--backend", "cpu", "--read", "stream", "--no-names"])
        .arg(&path)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        stdout.read_to_string(&mut out).unwrap();
        out
    });
    // The high-water mark only grows: its last reading before the process ends is its peak,
    // but for what the last few milliseconds add.
    let mut peak = 0;
    let status = loop {
        if let Some(kib) = peak_kib(child.id()) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(status.success(), "b3accel: {status}");
    assert!(peak > 0, "no memory reading of the child");
    let out = reader.join().unwrap();
    let mut upstream = blake3::Hasher::new();
    std::io::copy(&mut std::io::repeat(0).take(len), &mut upstream).unwrap();
    assert_eq!(out.trim(), upstream.finalize().to_hex().as_str());
    assert!(peak < 256 << 10, "peak resident memory {peak} KiB for a 3 GiB file");
}
