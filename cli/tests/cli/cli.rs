//! The `b3accel` binary, side by side with upstream `b3sum` 1.8.x wherever b3sum has the
//! behaviour: identical standard output, identical exit status, and a message on standard error
//! exactly when b3sum writes one. The features b3sum lacks are tested on their own.
//!
//! b3sum is found through the `B3SUM` environment variable, then /opt/b3sum/bin/b3sum, then
//! PATH (only a 1.8 or later release counts). Without it: under `CI=true` the tests fail;
//! otherwise a loud warning is printed, b3accel still runs every case, and its output is compared
//! with a model of b3sum built on the `blake3` crate (`common::oracle`) wherever the model
//! covers the arguments.
//!
//! Every b3accel run here keeps its `Device::Auto` calibration in a file of its own (see
//! `common::cli::calibration_file`), never in the user's cache.

use crate::common;

use common::cli::{
    assert_no_panic, b3accel_command, data, os, run_env, run_in, same_env, same_ext, upstream, Dir, B3ACCEL,
};
use std::ffi::OsStr;
use std::io::{Read, Write};
#[cfg(unix)]
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const KEY: &[u8; 32] = b"whats the Elvish word for friend";

fn b3accel(dir: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let out = run_in(Path::new(B3ACCEL), dir, &os(args), stdin);
    assert_no_panic(args, &out);
    out
}

/// Runs b3accel and b3sum with the same arguments and standard input in `dir` and asserts the
/// same standard output, the same exit status, and standard error written by both or by
/// neither. Returns b3accel's output.
fn same_os(dir: &Path, args: &[&OsStr], stdin: &[u8]) -> Option<Output> {
    same_ext(dir, &[], args, stdin)
}

fn same(dir: &Path, args: &[&str], stdin: &[u8]) -> Option<Output> {
    same_os(dir, &os(args), stdin)
}

/// Sizes around chunk (1024), SIMD-group (4, 8, 16 chunks), mmap-threshold (16 KiB) and
/// power-of-two boundaries.
const SIZES: &[usize] = &[
    0,
    1,
    63,
    64,
    65,
    1023,
    1024,
    1025,
    2047,
    2048,
    2049,
    3 * 1024 + 1,
    4095,
    4096,
    4097,
    8191,
    8192,
    8193,
    16383,
    16384,
    16385,
    31 * 1024,
    65535,
    65536,
    65537,
    (1 << 20) - 1,
    1 << 20,
    (1 << 20) + 1,
];

fn sized_files(dir: &Dir) -> Vec<String> {
    SIZES
        .iter()
        .map(|&n| {
            let name = format!("f{n}");
            dir.write(&name, &data(n, n as u64));
            name
        })
        .collect()
}

#[test]
fn every_mode_matches_b3sum_at_awkward_sizes() {
    let dir = Dir::new("sizes");
    let names = sized_files(&dir);
    let files: Vec<&str> = names.iter().map(String::as_str).collect();
    same_ext(dir.path(), &["--backend", "cpu"], &os(&files), b"");
    same_ext(dir.path(), &["--num-threads", "3", "--progress=never"], &os(&files), b"");
    let modes: &[&[&str]] = &[
        &[],
        &["--tag"],
        &["--no-names"],
        &["--length", "131", "--seek", "3"],
        &["--derive-key", "b3accel cli tests"],
        &["--num-threads", "1"],
        &["--no-mmap"],
        &["--tag", "--length", "7"],
    ];
    for mode in modes {
        let mut args = mode.to_vec();
        args.extend(&files);
        same(dir.path(), &args, b"");
    }
    // Keyed: the key on standard input.
    let mut args = vec!["--keyed"];
    args.extend(&files);
    same(dir.path(), &args, KEY);
}

#[test]
fn larger_files_and_stdin_match_b3sum() {
    let dir = Dir::new("large");
    // Around multiples of the widest SIMD group and of 1 MiB, up to ~10 MiB.
    for n in [3 * 1024 * 1024 + 16 * 1024 - 1, 10 * 1024 * 1024 + 1, 9 * 1024 * 1024 + 8 * 1024 + 7] {
        let name = format!("g{n}");
        let bytes = data(n, 7 + n as u64);
        dir.write(&name, &bytes);
        same(dir.path(), &[&name], b"");
        same(dir.path(), &["--num-threads", "1", &name], b"");
        same(dir.path(), &["--no-mmap", "--length", "65", &name], b"");
        same(dir.path(), &[], &bytes);
        same(dir.path(), &["-", "--length", "40", "--seek", "1000"], &bytes);
    }
    for &n in SIZES {
        same(dir.path(), &["-"], &data(n, n as u64 + 1));
    }
}

#[test]
fn raw_output_and_its_limits() {
    let dir = Dir::new("raw");
    dir.write("a", b"abc");
    dir.write("b", b"");
    same(dir.path(), &["--raw", "a"], b"");
    same(dir.path(), &["--raw", "--length", "200", "--seek", "5", "a"], b"");
    same(dir.path(), &["--raw", "--tag", "a"], b"");
    same(dir.path(), &["--raw"], b"stdin bytes");
    same(dir.path(), &["--raw", "a", "b"], b""); // one input only: exit 1
    same(dir.path(), &["--raw", "missing"], b"");
    same(dir.path(), &["--raw", "--keyed", "a"], KEY);
}

#[test]
fn keyed_mode_reads_exactly_32_key_bytes() {
    let dir = Dir::new("keyed");
    dir.write("a", b"abc");
    same(dir.path(), &["--keyed", "a"], KEY);
    same(dir.path(), &["--keyed", "a"], &KEY[..31]); // too short
    same(dir.path(), &["--keyed", "a"], b""); // nothing
    let mut long = KEY.to_vec();
    long.push(b'!');
    same(dir.path(), &["--keyed", "a"], &long); // too long
    same(dir.path(), &["--keyed", "-"], KEY); // stdin holds the key
    same(dir.path(), &["--keyed", "a", "-", "a"], KEY);
    same(dir.path(), &["--keyed"], KEY); // a FILE is required: usage error
    same(dir.path(), &["--keyed", "--derive-key", "x", "a"], KEY);
}

#[test]
fn stdin_dash_and_repeated_dash() {
    let dir = Dir::new("stdin");
    dir.write("a", b"abc");
    same(dir.path(), &[], b"hello");
    same(dir.path(), &["-"], b"hello");
    same(dir.path(), &["-", "-", "a"], b"hello"); // the second - reads an empty stream
    same(dir.path(), &["a", "-", "a", "-"], b"hello");
    same(dir.path(), &["--tag", "-"], b"");
}

/// Unix only: names as bytes, invalid UTF-8 and backslashes among them.
#[cfg(unix)]
#[test]
fn odd_file_names_are_escaped_like_b3sum() {
    let dir = Dir::new("names");
    let names: Vec<&[u8]> = vec![
        b"back\\slash",
        b"new\nline",
        b"carriage\rreturn",
        b"all\\three\n\r",
        b"bad\xffutf8",
        b"  leading spaces",
        b"x) = y",
        b"-dash",
        b"\xe2\x9c\x93 unicode",
    ];
    let mut args: Vec<&OsStr> = Vec::new();
    for n in &names {
        let name = OsStr::from_bytes(n);
        std::fs::write(dir.path().join(name), n).unwrap();
        args.push(name);
    }
    let mut plain = vec![OsStr::new("--")];
    plain.extend(&args);
    same_os(dir.path(), &plain, b"");
    let mut tagged = vec![OsStr::new("--tag"), OsStr::new("--")];
    tagged.extend(&args);
    same_os(dir.path(), &tagged, b"");
    let mut no_names = vec![OsStr::new("--no-names"), OsStr::new("--")];
    no_names.extend(&args);
    same_os(dir.path(), &no_names, b"");
}

/// Unix only: `/proc/self/mem`, and the OS's words for the errors.
#[cfg(unix)]
#[test]
fn missing_directory_and_unreadable_inputs_do_not_stop_the_others() {
    let dir = Dir::new("errors");
    dir.write("a", b"abc");
    dir.write("b", b"def");
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    // As root every chmod 000 file is readable; these are unreadable for everyone:
    // /proc/self/mem fails with EIO at offset 0, and a path through a file fails with ENOTDIR.
    for case in [
        &["a", "missing", "b"][..],
        &["sub", "a"],
        &["a", "/proc/self/mem", "b"],
        &["a/x", "b"],
        &["--tag", "missing", "a"],
        &["--no-names", "sub", "a"],
        &["--num-threads", "1", "a", "sub", "missing", "b"],
        &["--no-mmap", "a", "sub", "b"],
        &["missing"],
    ] {
        let out = same(dir.path(), case, b"");
        if let Some(out) = out {
            assert_eq!(out.status.code(), Some(1));
        }
    }
    let out = b3accel(dir.path(), &["a", "missing", "sub", "b"], b"");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("b3accel: missing: No such file or directory"), "{stderr}");
    assert!(stderr.contains("b3accel: sub: Is a directory"), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn usage_errors_exit_2_like_b3sum() {
    let dir = Dir::new("usage");
    dir.write("a", b"abc");
    for case in [
        &["--quiet", "a"][..],
        &["-c", "--tag", "a"],
        &["-c", "--raw", "a"],
        &["-c", "--no-names", "a"],
        &["-c", "--length", "3", "a"],
        &["-c", "--keyed", "a"],
        &["-c", "--derive-key", "x", "a"],
        &["--derive-key", "x", "--keyed", "a"],
        &["--length", "x", "a"],
        &["--length", "-1", "a"],
        &["--length", "18446744073709551616", "a"],
        &["--seek", "1.5", "a"],
        &["--num-threads", "-1", "a"],
        &["--num-threads", "lots", "a"],
        &["--no-such-flag", "a"],
        &["--derive-key"],
        &["-l"],
    ] {
        let out = same(dir.path(), case, b"");
        if let Some(out) = out {
            assert_eq!(out.status.code(), Some(2), "{case:?}");
        }
    }
    // Our own option combinations.
    for case in [
        &["--json", "--raw", "a"][..],
        &["--json", "--tag", "a"],
        &["--json", "-z", "a"],
        &["-r", "-c", "a"],
        &["--status", "a"],
        &["--strict", "a"],
        &["--ignore-missing", "a"],
        &["--backend", "tpu", "a"],
        &["--backend", "opencl:x", "a"],
        &["--progress=sometimes", "a"],
        &["--keyed", "--files-from", "-"],
    ] {
        let out = b3accel(dir.path(), case, b"");
        assert_eq!(out.status.code(), Some(2), "{case:?}");
        assert!(!out.stderr.is_empty() && out.stdout.is_empty(), "{case:?}");
    }
}

#[test]
fn xof_length_and_seek() {
    let dir = Dir::new("xof");
    dir.write("a", &data(5000, 1));
    dir.write("sums", format!("{}  a\n", blake3::hash(&data(5000, 1)).to_hex()).as_bytes());
    for case in [
        &["--length", "0", "a"][..],
        &["--length", "1", "a"],
        &["--length", "64", "--seek", "64", "a"],
        &["--length", "1000", "--seek", "63", "a"],
        &["--length", "20000", "a"],
        &["--seek", "18446744073709551583", "a"], // the last 32 bytes below 2^64
        &["--length", "1", "--seek", "18446744073709551614", "a"],
        &["--raw", "--length", "3", "--seek", "1000000000000", "a"],
        &["-c", "--seek", "5", "sums"],
        // At and past byte 2^64 - 1 the stream goes on, as b3sum's does.
        &["--length", "1", "--seek", "18446744073709551615", "a"],
        &["--seek", "18446744073709551615", "a"],
        &["--length", "300", "--seek", "18446744073709551500", "a"],
        &["--raw", "--length", "100", "--seek", "18446744073709551612", "a"],
        &["--tag", "--seek", "18446744073709551600", "a", "a"],
        &["-c", "--seek", "18446744073709551615", "sums"],
    ] {
        same(dir.path(), case, b"");
    }
}

/// The CPU backend on every kernel `B3ACCEL_CPU` can name on this CPU (each SIMD level it has,
/// and `upstream`: what runs where the crate has no SIMD of its own, as on aarch64) against
/// b3sum, in every mode, at the awkward sizes, and on files and standard input large enough for
/// the thread pool.
#[test]
fn every_cpu_kernel_matches_b3sum() {
    let dir = Dir::new("kernels");
    let names = sized_files(&dir);
    let mut files: Vec<&str> = names.iter().map(String::as_str).collect();
    let big = data(9 * 1024 * 1024 + 8 * 1024 + 7, 99);
    dir.write("big", &big);
    files.push("big");
    let modes: &[(&[&str], &[u8])] = &[
        (&[], b""),
        (&["--num-threads", "1"], b""),
        (&["--length", "131", "--seek", "3"], b""),
        (&["--derive-key", "b3accel cli tests"], b""),
        (&["--keyed"], KEY),
    ];
    for kernel in b3accel::cpu::Kernel::supported() {
        let name = kernel.to_string();
        let env = [("B3ACCEL_CPU", name.as_str())];
        for (mode, stdin) in modes {
            let mut args = mode.to_vec();
            args.extend(&files);
            same_env(dir.path(), &env, &["--backend", "cpu"], &os(&args), stdin);
        }
        same_env(dir.path(), &env, &["--backend", "cpu"], &os(&["-"]), &big);
        // The variable is honoured: `-v` names the kernel.
        let out = run_env(Path::new(B3ACCEL), dir.path(), &env, &os(&["-v", "--backend", "cpu", "f0"]), b"");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && stderr.contains(&format!(", {name}")), "B3ACCEL_CPU={name}: {stderr}");
    }
}

/// A `B3ACCEL_CPU` that names no kernel (or a level this CPU lacks) is reported on standard error,
/// and the hashing goes on: standard output and the exit status stay exactly b3sum's.
#[test]
fn unknown_cpu_kernel_is_a_warning_not_a_failure() {
    let dir = Dir::new("kernel-typo");
    dir.write("a", &data(5000, 3));
    let mut values = vec!["avx3", "upstreem", "\u{1F980}"];
    let missing: Vec<String> =
        b3accel::cpu::SimdLevel::ALL.into_iter().filter(|l| !l.is_supported()).map(|l| l.to_string()).collect();
    values.extend(missing.iter().map(String::as_str));
    for value in values {
        let env = [("B3ACCEL_CPU", value)];
        let ours = run_env(Path::new(B3ACCEL), dir.path(), &env, &os(&["a"]), b"");
        let stderr = String::from_utf8_lossy(&ours.stderr);
        assert_no_panic(&[value], &ours);
        assert_eq!(ours.status.code(), Some(0), "B3ACCEL_CPU={value}: {stderr}");
        assert_eq!(String::from_utf8_lossy(&ours.stdout), format!("{}  a\n", blake3::hash(&data(5000, 3)).to_hex()));
        assert!(
            stderr.starts_with("b3accel: ") && stderr.contains("B3ACCEL_CPU") && stderr.contains(value),
            "B3ACCEL_CPU={value}: {stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "one warning, once: {stderr}");
        if let Some(b3sum) = upstream("unknown_cpu_kernel_is_a_warning_not_a_failure") {
            let theirs = run_env(b3sum, dir.path(), &env, &os(&["a"]), b"");
            assert_eq!(ours.stdout, theirs.stdout);
            assert_eq!(ours.status.code(), theirs.status.code());
        }
    }
    // A blank value is no choice at all: nothing to report.
    let out = run_env(Path::new(B3ACCEL), dir.path(), &[("B3ACCEL_CPU", " ")], &os(&["a"]), b"");
    assert!(out.status.success() && out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Writes b3sum-style checkfiles for the check tests, in a directory of the test's own (`name`):
/// tests run in parallel, and one that shared another's directory would see it removed.
fn check_fixture(name: &str) -> Dir {
    let dir = Dir::new(name);
    dir.write("a", b"abc");
    dir.write("b", &data(70_000, 3));
    dir.write("back\\slash", b"x");
    dir.write("new\nline", b"y");
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let hash = |bytes: &[u8]| blake3::hash(bytes).to_hex().to_string();
    let ha = hash(b"abc");
    let hb = hash(&data(70_000, 3));
    let hx = hash(b"x");
    let hy = hash(b"y");
    let zero = "0".repeat(64);
    dir.write("good.b3", format!("{ha}  a\n{hb}  b\n\\{hx}  back\\\\slash\n\\{hy}  new\\nline\n").as_bytes());
    dir.write(
        "tagged.b3",
        format!("BLAKE3 (a) = {ha}\n\\BLAKE3 (back\\\\slash) = {hx}\nBLAKE3 (b) = {hb}\n").as_bytes(),
    );
    dir.write(
        "mixed.b3",
        format!(
            "{ha}  a\n{zero}  b\n{ha}  missing\n{ha}  sub\n\ngarbage\n{}  a\n{}  a\n\\{ha}  a\\q\n{ha}  \nBLAKE3 (a) = {ha}\r\n{ha}  a\r\n{ha}  a\u{FFFD}\n",
            &ha[..63],
            ha.to_uppercase()
        )
        .as_bytes(),
    );
    dir.write("empty.b3", b"");
    dir.write("crlf.b3", format!("{ha}  a\r\n{hb}  b\r\n").as_bytes());
    let mut bad = format!("{ha}  a\n").into_bytes();
    bad.extend_from_slice(b"\xff\xfe\n");
    bad.extend_from_slice(format!("{ha}  a\n").as_bytes());
    dir.write("badutf.b3", &bad);
    dir.write("dash.b3", format!("{ha}  -\n").as_bytes());
    dir.write("sums", format!("{ha}  a\n").as_bytes());
    dir
}

#[test]
fn check_outcomes_match_b3sum() {
    let dir = check_fixture("check-outcomes");
    for case in [
        &["-c", "good.b3"][..],
        &["--check", "tagged.b3"],
        &["-c", "good.b3", "tagged.b3"],
        &["-c", "--quiet", "good.b3"],
        &["-c", "mixed.b3"],
        &["-c", "--quiet", "mixed.b3"],
        &["-c", "empty.b3"],
        &["-c", "crlf.b3"],
        &["-c", "good.b3", "missing.b3", "good.b3"], // a missing checkfile ends the run
        &["-c", "sub"],
        &["-c", "good.b3", "badutf.b3", "good.b3"], // so does one that is not UTF-8
        &["-c", "--num-threads", "1", "mixed.b3"],
        &["-c", "--no-mmap", "good.b3"],
        &["-c", "--seek", "5", "good.b3"],
    ] {
        same(dir.path(), case, b"");
    }
    same_ext(dir.path(), &["--backend", "cpu"], &os(&["-c", "mixed.b3"]), b"");
    // Checkfiles on standard input, and a line naming `-` (standard input) in a checkfile.
    let good = std::fs::read(dir.path().join("good.b3")).unwrap();
    same(dir.path(), &["-c"], &good);
    same(dir.path(), &["-c", "-"], &good);
    same(dir.path(), &["-c", "dash.b3"], b"abc");
    same(dir.path(), &["-c", "dash.b3"], b"abd");
    let out = b3accel(dir.path(), &["-c", "mixed.b3"], b"");
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("a: OK\n"), "{stdout}");
    assert!(stdout.contains("b: FAILED\n"), "{stdout}");
    assert!(stdout.contains("missing: FAILED (No such file or directory"), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    for msg in [
        "b3accel: Empty line",
        "b3accel: Invalid check line format",
        "b3accel: Invalid hash length",
        "b3accel: Invalid hex",
        "b3accel: Invalid backslash escape",
        "b3accel: empty file path",
        "b3accel: Unicode replacement character in path",
        "b3accel: WARNING: ",
    ] {
        assert!(stderr.contains(msg), "{msg} missing from\n{stderr}");
    }
    // A round trip through our own output, with every kind of name.
    let out = b3accel(dir.path(), &["a", "b", "back\\slash", "new\nline"], b"");
    dir.write("ours.b3", &out.stdout);
    let out = b3accel(dir.path(), &["-c", "ours.b3"], b"");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a: OK\nb: OK\n\\back\\\\slash: OK\n\\new\\nline: OK\n");
}

#[test]
fn gnu_check_options() {
    let dir = check_fixture("check-gnu");
    let ha = blake3::hash(b"abc").to_hex().to_string();
    dir.write("some-missing.b3", format!("{ha}  a\n{ha}  gone\n").as_bytes());
    dir.write("all-missing.b3", format!("{ha}  gone\n{ha}  gone2\n").as_bytes());
    let run = |args: &[&str]| b3accel(dir.path(), args, b"");

    // --ignore-missing: missing files are skipped, not counted.
    let out = run(&["-c", "--ignore-missing", "some-missing.b3"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, b"a: OK\n");
    assert!(out.stderr.is_empty());
    let out = run(&["-c", "some-missing.b3"]);
    assert_eq!(out.status.code(), Some(1));
    // ... but a checkfile in which nothing was verified is an error.
    let out = run(&["-c", "--ignore-missing", "all-missing.b3"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no file was verified"));

    // --status: nothing on stdout, the exit status says it all.
    let out = run(&["-c", "--status", "good.b3"]);
    assert_eq!((out.status.code(), out.stdout.len()), (Some(0), 0));
    let out = run(&["-c", "--status", "mixed.b3"]);
    assert_eq!((out.status.code(), out.stdout.len()), (Some(1), 0));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));

    // --strict: a checkfile without one well-formed line is an error.
    assert_eq!(run(&["-c", "empty.b3"]).status.code(), Some(0));
    let out = run(&["-c", "--strict", "empty.b3"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no properly formatted"));
    assert_eq!(run(&["-c", "--strict", "good.b3"]).status.code(), Some(0));
}

/// Unix only: symbolic links, and backslashes in names.
#[cfg(unix)]
#[test]
fn recursive_matches_b3sum_on_the_sorted_file_list() {
    let dir = Dir::new("tree");
    let files = [
        "t/a.txt",
        "t/a/b",
        "t/a/c/d",
        "t/B",
        "t/z",
        "t/new\nline",
        "t/back\\slash",
        "t/empty",
        "t/deep/er/and/deeper/f",
    ];
    for (i, f) in files.iter().enumerate() {
        dir.write(f, &data(i * 700, i as u64));
    }
    std::fs::create_dir_all(dir.path().join("t/emptydir")).unwrap();
    std::os::unix::fs::symlink("z", dir.path().join("t/link-to-z")).unwrap();
    std::os::unix::fs::symlink("a", dir.path().join("t/link-to-dir")).unwrap();
    let mut sorted: Vec<String> = files.iter().map(|f| f.to_string()).collect();
    sorted.push("t/link-to-z".into());
    sorted.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    let ours = b3accel(dir.path(), &["-r", "t"], b"");
    assert_eq!(ours.status.code(), Some(0));
    if let Some(upstream) = upstream("recursive") {
        let args: Vec<&OsStr> = sorted.iter().map(OsStr::new).collect();
        let theirs = run_in(upstream, dir.path(), &args, b"");
        assert_eq!(String::from_utf8_lossy(&ours.stdout), String::from_utf8_lossy(&theirs.stdout));
        // Directories and files mixed, with b3sum's flags.
        let ours = b3accel(dir.path(), &["-r", "--tag", "t/z", "t/a", "t/B"], b"");
        let theirs = run_in(upstream, dir.path(), &os(&["--tag", "t/z", "t/a/b", "t/a/c/d", "t/B"]), b"");
        assert_eq!(ours.stdout, theirs.stdout);
    }
    // `t/` gives `t/...` paths, as find does.
    let slash = b3accel(dir.path(), &["-r", "t/"], b"");
    assert!(String::from_utf8_lossy(&slash.stdout).contains("  t/z\n"));
    // Without -r a directory is an error, as in b3sum.
    assert_eq!(b3accel(dir.path(), &["t"], b"").status.code(), Some(1));
}

/// `-r` leaves out a symbolic link that leads nowhere (dangling, or a loop) with a warning
/// naming it, and hashes the rest as before, with exit status 0 (find's `-type f` leaves such
/// links out too).
#[cfg(unix)]
#[test]
fn recursive_says_which_symbolic_links_it_skips() {
    let dir = Dir::new("badlinks");
    dir.write("t/f", b"file");
    std::os::unix::fs::symlink("nowhere", dir.path().join("t/dangling")).unwrap();
    std::os::unix::fs::symlink("loop-b", dir.path().join("t/loop-a")).unwrap();
    std::os::unix::fs::symlink("loop-a", dir.path().join("t/loop-b")).unwrap();
    let out = b3accel(dir.path(), &["-r", "t"], b"");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{}  t/f\n", blake3::hash(b"file").to_hex()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for name in ["t/dangling", "t/loop-a", "t/loop-b"] {
        let said = format!("b3accel: {name}: skipped symbolic link: ");
        assert_eq!(stderr.lines().filter(|l| l.starts_with(&said)).count(), 1, "{name}: {stderr}");
    }
    assert_eq!(stderr.lines().count(), 3, "{stderr}");
}

#[test]
fn many_files_in_parallel_keep_input_order() {
    let dir = Dir::new("many");
    let mut names = Vec::new();
    for i in 0..400 {
        // Mostly small files, a few larger ones that finish late.
        let len = if i % 97 == 0 { 3 << 20 } else { (i * 37) % 17000 };
        let name = format!("m{:03}", (i * 7919) % 1000);
        dir.write(&name, &data(len, i as u64));
        names.push(name);
    }
    names.push("missing".into());
    names.push("m000".into());
    let args: Vec<&str> = names.iter().map(String::as_str).collect();
    same(dir.path(), &args, b"");
    let mut threads = vec!["--num-threads", "5"];
    threads.extend(&args);
    same(dir.path(), &threads, b"");
    let mut t1 = vec!["--num-threads", "1", "--tag"];
    t1.extend(&args);
    same(dir.path(), &t1, b"");
}

#[test]
fn json_lines_parse_and_agree_with_the_hash_lines() {
    let dir = Dir::new("json");
    dir.write("a", b"abc");
    dir.write("odd \"name\"\n", &data(3000, 1));
    let out = b3accel(dir.path(), &["--json", "a", "odd \"name\"\n", "missing", "-"], b"xyz");
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let objs: Vec<serde_json::Value> =
        text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    assert_eq!(objs.len(), 4);
    assert_eq!(objs[0]["path"], "a");
    assert_eq!(objs[0]["hash"], blake3::hash(b"abc").to_hex().as_str());
    assert_eq!(objs[0]["bytes"], 3);
    assert_eq!(objs[0]["backend"], "cpu");
    assert!(objs[0]["seconds"].as_f64().unwrap() >= 0.0);
    assert_eq!(objs[1]["path"], "odd \"name\"\n");
    assert_eq!(objs[1]["hash"], blake3::hash(&data(3000, 1)).to_hex().as_str());
    assert_eq!(objs[2]["path"], "missing");
    assert!(objs[2]["error"].as_str().unwrap().contains("No such file"));
    assert_eq!(objs[3]["path"], "-");
    assert_eq!(objs[3]["hash"], blake3::hash(b"xyz").to_hex().as_str());
    // --length applies.
    let out = b3accel(dir.path(), &["--json", "-l", "100", "a"], b"");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["hash"].as_str().unwrap().len(), 200);
    // --check --json: one object per line.
    let ha = blake3::hash(b"abc").to_hex().to_string();
    dir.write("c.b3", format!("{ha}  a\n{}  a\nbad line\n", "0".repeat(64)).as_bytes());
    let out = b3accel(dir.path(), &["-c", "--json", "c.b3"], b"");
    assert_eq!(out.status.code(), Some(1));
    let objs: Vec<serde_json::Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(objs.len(), 3);
    assert_eq!((objs[0]["ok"].as_bool(), objs[1]["ok"].as_bool()), (Some(true), Some(false)));
    assert_eq!(objs[2]["error"], "Invalid check line format");
}

#[test]
fn zero_terminated_lines_and_lists() {
    let dir = Dir::new("zero");
    dir.write("a", b"abc");
    dir.write("new\nline", b"y");
    dir.write("back\\slash", b"x");
    let ha = blake3::hash(b"abc").to_hex().to_string();
    let hy = blake3::hash(b"y").to_hex().to_string();
    let hx = blake3::hash(b"x").to_hex().to_string();
    let out = b3accel(dir.path(), &["-z", "a", "new\nline", "back\\slash"], b"");
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{ha}  a\0{hy}  new\nline\0{hx}  back\\slash\0"));
    // Round trip: -z output checks with -c -z.
    dir.write("z.b3", &out.stdout);
    let out = b3accel(dir.path(), &["-c", "-z", "z.b3"], b"");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, b"a: OK\0new\nline: OK\0back\\slash: OK\0");
    // --files-from with NUL-separated names.
    let out = b3accel(dir.path(), &["-z", "--files-from", "-"], b"a\0new\nline\0");
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{ha}  a\0{hy}  new\nline\0"));
    let out = b3accel(dir.path(), &["--no-names", "-z", "a"], b"");
    assert_eq!(out.stdout, format!("{ha}\0").as_bytes());
}

#[test]
fn files_from_lists() {
    let dir = Dir::new("filesfrom");
    dir.write("a", b"abc");
    dir.write("b c", b"def");
    dir.write("list", b"a\nb c\n\nmissing\n");
    let out = b3accel(dir.path(), &["--files-from", "list"], b"");
    assert_eq!(out.status.code(), Some(1));
    if let Some(upstream) = upstream("files-from") {
        let theirs = run_in(upstream, dir.path(), &os(&["a", "b c", "missing"]), b"");
        assert_eq!(out.stdout, theirs.stdout);
    }
    // From standard input, after the FILE operands.
    let out = b3accel(dir.path(), &["b c", "--files-from", "-"], b"a\n");
    assert_eq!(out.stdout.iter().filter(|&&b| b == b'\n').count(), 2);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(&blake3::hash(b"def").to_hex().to_string()));
    // A missing list is an error, exit 1.
    let out = b3accel(dir.path(), &["--files-from", "nolist"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nolist"));
    // `-` in a list read from standard input cannot be standard input too.
    let out = b3accel(dir.path(), &["--files-from", "-"], b"-\na\n");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(out.stdout.iter().filter(|&&b| b == b'\n').count(), 1);
}

#[test]
fn backend_choice() {
    let dir = Dir::new("backend");
    dir.write("a", b"abc");
    let expected = format!("{}  a\n", blake3::hash(b"abc").to_hex());
    for dev in ["auto", "cpu", "CPU"] {
        let out = b3accel(dir.path(), &["--backend", dev, "a"], b"");
        assert_eq!(String::from_utf8_lossy(&out.stdout), expected, "{dev}");
    }
    // Devices that this machine or this build lacks: a clear error, exit status 1.
    let built = b3accel::backend_status();
    for (dev, feature) in [("opencl", "opencl"), ("wgpu:0", "wgpu"), ("opencl:999", "opencl"), ("wgpu:999", "wgpu")] {
        let is_built = built.iter().any(|s| s.backend.to_string() == feature);
        let out = b3accel(dir.path(), &["--backend", dev, "a"], b"");
        if !is_built || dev.ends_with(":999") {
            assert_eq!(out.status.code(), Some(1), "{dev}");
            assert!(out.stdout.is_empty());
            // A GPU driver asked for by name may print its own start-up messages first.
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.lines().any(|l| l.starts_with("b3accel: device ")), "{stderr}");
            if !is_built {
                assert!(stderr.contains(&format!("--features {feature}")), "{stderr}");
            }
        } else if out.status.success() {
            // A GPU device this machine has: the same line as on the CPU.
            assert_eq!(String::from_utf8_lossy(&out.stdout), expected, "{dev}");
        } else {
            // Built, but this machine has no such device.
            assert_eq!(out.status.code(), Some(1), "{dev}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.lines().any(|l| l.starts_with("b3accel: device ")), "{stderr}");
        }
    }
    // -v says which device and why, on stderr only.
    let out = b3accel(dir.path(), &["-v", "a"], b"");
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--backend auto: inputs under"));
    let out = b3accel(dir.path(), &["-v", "--backend", "cpu", "a"], b"");
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
    assert!(String::from_utf8_lossy(&out.stderr).contains("hashing on cpu"));
    // -vv: each input's device and why, in input order.
    let out = b3accel(dir.path(), &["-vv", "a", "missing", "a"], b"");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains(": hashed on cpu") || l.contains("missing")).collect();
    assert_eq!(lines.len(), 3, "{stderr}");
    assert!(lines[1].starts_with("b3accel: missing: "), "{stderr}");
}

#[test]
fn devices_subcommand_lists_and_self_tests() {
    let dir = Dir::new("devices");
    let out = b3accel(dir.path(), &["devices"], b"");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let cpu = text.lines().find(|l| l.starts_with("cpu ")).expect("a cpu line");
    assert!(cpu.contains(" ok "), "{cpu}");
    for backend in ["opencl", "wgpu"] {
        assert!(text.lines().any(|l| l.starts_with(backend)), "{backend} missing:\n{text}");
    }
    let out = b3accel(dir.path(), &["devices", "--json"], b"");
    let objs: Vec<serde_json::Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(objs[0]["device"], "cpu");
    assert_eq!(objs[0]["self_test"], "ok");
    assert!(objs[0]["compute_units"].as_u64().unwrap() >= 1);
    // Every device the library lists is in the output.
    for d in b3accel::devices() {
        assert!(objs.iter().any(|o| o["device"] == d.device.to_string().as_str()), "{} missing", d.device);
    }
    // --backend narrows the list to one device; one that is not there is an error.
    let out = b3accel(dir.path(), &["devices", "--backend", "cpu"], b"");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(text.lines().nth(1).unwrap().starts_with("cpu "), "{text}");
    let out = b3accel(dir.path(), &["devices", "--backend", "opencl:77"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).lines().any(|l| l.starts_with("b3accel: device opencl:77")));
    // A file named like the subcommand: as a path, after --, or not first.
    dir.write("devices", b"not a subcommand");
    let expected = blake3::hash(b"not a subcommand").to_hex().to_string();
    for args in [&["./devices"][..], &["--", "devices"], &["--tag", "devices"]] {
        let out = b3accel(dir.path(), args, b"");
        assert!(String::from_utf8_lossy(&out.stdout).contains(&expected), "{args:?}");
    }
    // Help says so.
    let help = b3accel(dir.path(), &["--help"], b"");
    let help = String::from_utf8_lossy(&help.stdout);
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(help.contains("(`b3accel ./devices`)"), "{help}");
    assert!(help.contains("(`b3accel -- devices`)"), "{help}");
}

/// Every wgpu adapter asked for by name hashes a file (as upstream does), builds a Merkle root
/// (as the CPU does) and lists and self-tests itself in `devices`, each with nothing at all on
/// standard error: the drivers' start-up chatter (on headless Linux, Mesa's Vulkan layer has
/// libwayland write "XDG_RUNTIME_DIR is invalid or not set" while it lists devices) stays off it.
#[test]
fn explicit_wgpu_devices_keep_stderr_empty() {
    let adapters = common::device_indices(b3accel::BackendKind::Wgpu);
    if adapters.is_empty() {
        // Not built, or no adapter (said loudly, and a failure under CI=true, by device_indices).
        return;
    }
    let dir = Dir::new("quiet-wgpu");
    // Several chunks and a partial last one, on the device.
    let input = data((3 << 20) + 1234, 17);
    dir.write("input", &input);
    // 1000 leaves: not a power of two, several levels of the device's reduction.
    dir.write("leaves", &data(32 * 1000, 18));
    let want_hash = format!("{}  input\n", blake3::hash(&input).to_hex());
    // The CPU's root (checked against upstream in merkle_cli.rs) is the reference.
    let cpu_root = b3accel(dir.path(), &["merkle", "--backend", "cpu", "leaves"], b"");
    assert!(cpu_root.status.success(), "{}", String::from_utf8_lossy(&cpu_root.stderr));
    assert_eq!(cpu_root.stdout.len(), 64 + "  leaves\n".len(), "{cpu_root:?}");
    let quiet = |args: &[&str]| {
        let out = b3accel(dir.path(), args, b"");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?} failed: {stderr}");
        assert!(stderr.is_empty(), "{args:?} wrote to stderr:\n{stderr}");
        String::from_utf8(out.stdout).unwrap()
    };
    for i in &adapters {
        let dev = format!("wgpu:{i}");
        assert_eq!(quiet(&["--backend", &dev, "input"]), want_hash, "{dev}");
        let root = quiet(&["merkle", "--backend", &dev, "leaves"]);
        assert_eq!(root.as_bytes(), cpu_root.stdout, "{dev}: merkle root");
        let listed = quiet(&["devices", "--backend", &dev, "-v"]);
        let line = listed.lines().nth(1).unwrap_or_default();
        assert!(line.starts_with(&format!("{dev} ")) && line.contains(" ok "), "{dev}:\n{listed}");
        // -v: one line per optional feature, each saying which path the device takes.
        for feature in ["timestamps: ", "mappable storage: ", "pipeline cache: ", "subgroups: ", "64-bit atomics: "] {
            assert!(listed.lines().any(|l| l.trim_start().starts_with(feature)), "{dev}: {feature}\n{listed}");
        }
    }
    let all = quiet(&["devices"]);
    for i in &adapters {
        let dev = format!("wgpu:{i} ");
        assert!(all.lines().any(|l| l.starts_with(&dev) && l.contains(" ok ")), "{dev}missing:\n{all}");
    }
}

#[test]
fn closed_stdout_is_not_a_panic() {
    let dir = Dir::new("pipe");
    dir.write("a", b"abc");
    // An endless key stream across byte 2^64 of the output: the longest --length, cut off by
    // the reader.
    let args = ["--length", "18446744073709551615", "--seek", "18446744073709551600", "a"];
    let mut child = b3accel_command()
        .args(args)
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 100];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    // With its standard output closed, b3accel stops at its next write.
    let out = child.wait_with_output().unwrap();
    assert_no_panic(&args, &out);
    let mut expected = [0u8; 50];
    let mut upstream = blake3::Hasher::new().update(b"abc").finalize_xof();
    upstream.set_position(18446744073709551600);
    upstream.fill(&mut expected);
    let hex: String = expected.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(String::from_utf8_lossy(&first), hex);
}

/// A `--length` no machine could hold is streamed in every output form, never allocated: the
/// first bytes arrive, and b3accel stops quietly when the reader goes away.
#[test]
fn the_longest_length_streams_in_every_output_form() {
    let dir = Dir::new("longest");
    dir.write("a", b"abc");
    let mut upstream = blake3::Hasher::new().update(b"abc").finalize_xof();
    let mut expected = [0u8; 600];
    upstream.fill(&mut expected);
    let hex: String = expected.iter().map(|b| format!("{b:02x}")).collect();
    let forms: [(&[&str], Vec<u8>); 4] = [
        (&["--raw"], expected.to_vec()),
        (&["--no-names"], hex.clone().into_bytes()),
        (&["--tag"], format!("BLAKE3 (a) = {hex}").into_bytes()),
        (&["--json"], format!("{{\"path\":\"a\",\"hash\":\"{hex}").into_bytes()),
    ];
    for (form, want) in forms {
        let mut args = vec!["--length", "18446744073709551615", "a"];
        args.extend_from_slice(form);
        let mut child = b3accel_command()
            .args(&args)
            .current_dir(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut first = vec![0u8; 1000];
        stdout.read_exact(&mut first).unwrap();
        drop(stdout);
        let out = child.wait_with_output().unwrap();
        assert_no_panic(&args, &out);
        assert_eq!(&first[..want.len().min(1000)], &want[..want.len().min(1000)], "{args:?}");
    }
}

/// Unix only: fifos, `/dev` and `/proc`, names that are not UTF-8.
#[cfg(unix)]
#[test]
fn hostile_arguments_and_files_never_panic() {
    let dir = Dir::new("hostile");
    dir.write("a", b"abc");
    dir.write("empty", b"");
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    dir.write("sub/x", b"x");
    let fifo = dir.path().join("fifo");
    let made_fifo = Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success());
    if made_fifo {
        // A writer for the fifo, so that opening it for reading does not block forever.
        let path = fifo.clone();
        std::thread::spawn(move || {
            if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(path) {
                let _ = f.write_all(b"through a fifo");
            }
        });
        let out = b3accel(dir.path(), &["fifo"], b"");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("{}  fifo\n", blake3::hash(b"through a fifo").to_hex())
        );
        // -r leaves fifos out instead of blocking on them.
        let out = b3accel(dir.path(), &["-r", "."], b"");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("fifo"));
    }
    let invalid = OsStr::from_bytes(b"\xff\xfe");
    let out = run_in(Path::new(B3ACCEL), dir.path(), &[invalid], b"");
    assert_no_panic(&[invalid], &out);
    let out = run_in(Path::new(B3ACCEL), dir.path(), &[OsStr::new("--derive-key"), invalid, OsStr::new("a")], b"");
    assert_no_panic(&["--derive-key <invalid>"], &out);
    let cases: &[&[&str]] = &[
        &[""],
        &["", "a"],
        &["--seek", "18446744073709551615", "a"],
        &["--seek", "18446744073709551615", "--length", "0", "a"],
        &["-c", "--seek", "18446744073709551615", "a"],
        &["--raw", "--length", "0", "a"],
        &["--num-threads", "0", "a"],
        &["--num-threads", "18446744073709551615", "a"],
        &["--num-threads", "100000", "a"],
        &["/dev/null"],
        &["/dev/zero", "--length", "0", "--backend", "opencl:999"],
        &["/proc/self/mem"],
        &["-r", "/proc/self/fdinfo"],
        &["-r", "sub", "missing", "empty"],
        &["-c", "sub"],
        &["-c", "/dev/null"],
        &["-c", "/proc/self/mem"],
        &["-c", "empty"],
        &["--files-from", "sub"],
        &["--files-from", "/dev/null"],
        &["--files-from", "empty", "-z"],
        &["--backend", ""],
        &["--backend", ":"],
        &["--backend", "wgpu:18446744073709551616"],
        &["--backend", "opencl:-1"],
        &["--derive-key", "", "a"],
        &["--keyed", "a"],
        &["--keyed", "sub"],
        &["--progress=always", "a", "sub"],
        &["--progress=never", "-c", "a"],
        &["-vvvv", "a"],
        &["devices", "-v", "--json"],
        &["devices", "extra"],
        &["devices", "--tag"],
        &["merkle"],
        &["merkle", "empty"],
        &["merkle", "sub"],
        &["merkle", "a"],
        &["merkle", "--backend", "opencl:3", "a"],
        &["--json", "--no-names", "a"],
        &["-z", "--raw", "a"],
        &["-", "-", "-"],
        &["--help"],
        &["-V"],
        &["--", "--", "-"],
    ];
    for args in cases {
        let out = b3accel(dir.path(), args, b"some stdin");
        assert!(out.status.code().is_some(), "{args:?}");
    }
}

#[test]
fn progress_bar_goes_to_stderr_only() {
    let dir = Dir::new("progress");
    dir.write("a", &data(3 << 20, 9));
    let plain = b3accel(dir.path(), &["a"], b"");
    let out = b3accel(dir.path(), &["--progress", "a"], b"");
    assert_eq!(out.stdout, plain.stdout);
    assert_eq!(out.status.code(), Some(0));
    // stderr is a pipe here: auto draws nothing.
    assert!(plain.stderr.is_empty());
}

/// Issue 2's acceptance range: files up to 100 MiB around power-of-two boundaries, in all
/// modes, with --length/--seek and on stdin.
#[test]
fn files_up_to_100_mib_match_b3sum() {
    let dir = Dir::new("huge");
    for n in [(64 << 20) - 1, (64 << 20) + 1025, (100 << 20) - 1, 100 << 20, (100 << 20) + 1] {
        let name = format!("h{n}");
        let bytes = data(n, n as u64);
        dir.write(&name, &bytes);
        same_ext(dir.path(), &["--backend", "cpu"], &os(&[&name]), b"");
        same(dir.path(), &["--num-threads", "1", "--tag", &name], b"");
        same(dir.path(), &["--keyed", &name], KEY);
        same(dir.path(), &["--derive-key", "ctx", "-l", "100", "--seek", "99", &name], b"");
        same(dir.path(), &["--no-mmap", &name], b"");
        same(dir.path(), &["-"], &bytes);
    }
}

/// `--backend auto` lists the machine's GPUs the first time an input is large enough for one;
/// drivers that print while they start (Mesa's EGL on a headless machine) must not add to
/// standard error, where b3sum writes nothing. A fresh calibration file forces the listing.
#[test]
fn auto_device_choice_adds_nothing_to_stderr() {
    let dir = Dir::new("autonoise");
    let bytes = data((5 << 20) + 7, 5);
    dir.write("big", &bytes);
    let out = b3accel_command()
        .args(["big", "big"])
        .current_dir(dir.path())
        .env("B3ACCEL_CALIBRATION", dir.path().join("calibration.json"))
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    let line = format!("{}  big\n", blake3::hash(&bytes).to_hex());
    assert_eq!(String::from_utf8_lossy(&out.stdout), line.repeat(2));
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Every GPU device this build finds (OpenCL on PoCL, wgpu on lavapipe and llvmpipe in CI) prints
/// byte for byte what b3sum prints (or, without b3sum, what the model of it computes), at the
/// awkward sizes, in every mode. Standard error is not compared: a driver named explicitly may
/// print its own notices there (Mesa's EGL does). A built GPU backend without a device fails
/// under `CI=true` (`common::device_indices`), as does a device `B3ACCEL_EXPECT` names.
#[test]
fn gpu_backends_match_b3sum_at_awkward_sizes() {
    let mut gpus: Vec<String> = Vec::new();
    for status in b3accel::backend_status() {
        for i in common::device_indices(status.backend) {
            gpus.push(format!("{}:{i}", status.backend));
        }
    }
    if gpus.is_empty() {
        common::expect::not_run("this build has no GPU device: the GPU command-line comparison did NOT run");
        return;
    }
    let dir = Dir::new("gpu-sizes");
    let names = sized_files(&dir);
    let files: Vec<&str> = names.iter().map(String::as_str).collect();
    let modes: &[(&[&str], &[u8])] = &[
        (&[], b""),
        (&["--length", "131", "--seek", "3"], b""),
        (&["--derive-key", "b3accel cli tests"], b""),
        (&["--keyed"], KEY),
    ];
    for dev in &gpus {
        for (mode, stdin) in modes {
            let mut args = mode.to_vec();
            args.extend(&files);
            let theirs = match common::b3sum() {
                Some(b3sum) => {
                    let out = run_in(b3sum, dir.path(), &os(&args), stdin);
                    (out.stdout, out.status.code())
                }
                None => {
                    let _ = upstream("gpu_backends_match_b3sum_at_awkward_sizes"); // fails under CI=true
                    let want = common::oracle::b3sum(dir.path(), &os(&args), stdin).expect("the model covers these");
                    (want.stdout, Some(want.code))
                }
            };
            let mut ours_args = vec!["--backend", dev.as_str()];
            ours_args.extend(&args);
            let ours = run_in(Path::new(B3ACCEL), dir.path(), &os(&ours_args), stdin);
            assert_no_panic(&ours_args, &ours);
            assert_eq!(
                String::from_utf8_lossy(&ours.stdout),
                String::from_utf8_lossy(&theirs.0),
                "--backend {dev} {mode:?}: stdout differs from b3sum\nb3accel stderr: {}",
                String::from_utf8_lossy(&ours.stderr)
            );
            assert_eq!(ours.status.code(), theirs.1, "--backend {dev} {mode:?}: exit status");
        }
        eprintln!("cli: --backend {dev} matches b3sum at {} sizes in 4 modes", files.len());
    }
}

/// The model of b3sum that stands in for it where it is missing agrees with b3sum where both
/// are here, on every kind of case it covers (and declines the cases it does not cover).
#[test]
fn the_model_of_b3sum_agrees_with_b3sum() {
    let Some(b3sum) = upstream("the_model_of_b3sum_agrees_with_b3sum") else { return };
    let dir = Dir::new("model");
    dir.write("a", b"abc");
    dir.write("b", &data(70_000, 11));
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let cases: &[(&[&str], &[u8])] = &[
        (&["a", "b"], b""),
        (&["--tag", "a", "b"], b""),
        (&["--no-names", "a"], b""),
        (&["--tag", "--no-names", "a"], b""),
        (&["--raw", "a"], b""),
        (&["--raw", "--tag", "-l", "40", "a"], b""),
        (&["-l", "100", "--seek", "63", "b"], b""),
        (&["--length=0", "a"], b""),
        (&["--derive-key", "ctx", "a", "-"], b"stdin"),
        (&["--keyed", "a", "b"], KEY),
        (&[], b"just stdin"),
        (&["-", "-", "a"], b"twice"),
        (&["a", "missing", "sub", "b"], b""),
        (&["--num-threads", "1", "--no-mmap", "--", "a"], b""),
    ];
    for (args, stdin) in cases {
        let want = common::oracle::b3sum(dir.path(), &os(args), stdin).unwrap_or_else(|| panic!("{args:?}: declined"));
        let theirs = run_in(b3sum, dir.path(), &os(args), stdin);
        assert_eq!(String::from_utf8_lossy(&want.stdout), String::from_utf8_lossy(&theirs.stdout), "{args:?}");
        assert_eq!(Some(want.code), theirs.status.code(), "{args:?}");
    }
    for args in [&["-c", "a"][..], &["--keyed", "--derive-key", "x", "a"], &["--bogus"], &["back\\slash"]] {
        assert!(common::oracle::b3sum(dir.path(), &os(args), b"").is_none(), "{args:?} is beyond the model");
    }
}
