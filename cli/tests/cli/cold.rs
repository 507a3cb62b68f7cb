//! A file of several GiB read from the front (`--read stream`) by the binary, in bounded memory.
#![cfg(target_os = "linux")]

use crate::common::cli::{b3accel_command, Dir};
use std::io::Read;
use std::process::Stdio;

// The child is reaped by wait4 below, which std's Child does not know of.
#[allow(clippy::zombie_processes)]
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
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    // The peak resident set of this one process: other tests of this program start processes
    // too, which RUSAGE_CHILDREN would count.
    // SAFETY: rusage is plain data, for which all zeroes is a valid value.
    let (mut status, mut usage) = (0, unsafe { std::mem::zeroed::<libc::rusage>() });
    // SAFETY: wait4 on the child this test started, with valid pointers.
    let done = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(done, child.id() as i32, "wait4: {}", std::io::Error::last_os_error());
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "b3accel: wait status {status}");
    let mut upstream = blake3::Hasher::new();
    std::io::copy(&mut std::io::repeat(0).take(len), &mut upstream).unwrap();
    assert_eq!(out.trim(), upstream.finalize().to_hex().as_str());
    let peak_kib = usage.ru_maxrss;
    assert!(peak_kib < 256 << 10, "peak resident memory {peak_kib} KiB for a 3 GiB file");
}
