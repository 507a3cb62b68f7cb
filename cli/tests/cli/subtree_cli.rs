//! `b3accel subtree` and `b3accel merge`: a file hashed in pieces, each piece on another device
//! (the CPU, every OpenCL device, every wgpu adapter), merges to exactly the line `b3sum
//! --no-names` prints for the whole file, in all modes, with `-l` and `--seek`; every invalid
//! cover and malformed line is refused naming the line (exit status 1, nothing on standard
//! output, no panic); and the JSON forms parse.

use crate::common;

use b3accel::hazmat::max_subtree_len;
use common::cli::{assert_no_panic, data, os, run_in, upstream, Dir, B3ACCEL};
use std::path::Path;
use std::process::Output;

const KEY: &[u8; 32] = b"whats the Elvish word for friend";

fn b3accel(dir: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let out = run_in(Path::new(B3ACCEL), dir, &os(args), stdin);
    assert_no_panic(args, &out);
    out
}

/// The devices to spread pieces over: the CPU and every GPU device this build finds (the
/// no-device rule of tests/common applies: a built GPU backend without a device fails under
/// CI=true).
fn devices() -> Vec<String> {
    let mut out = vec!["cpu".to_string()];
    for kind in [b3accel::BackendKind::OpenCl, b3accel::BackendKind::Wgpu] {
        for i in common::device_indices(kind) {
            out.push(match kind {
                b3accel::BackendKind::OpenCl => format!("opencl:{i}"),
                _ => format!("wgpu:{i}"),
            });
        }
    }
    out
}

/// The modes, as b3sum's options and the standard input they need.
const MODES: [(&[&str], &[u8]); 3] =
    [(&[], b""), (&["--keyed"], KEY), (&["--derive-key", "b3accel subtree tests"], b"")];

/// Pieces of one power-of-two size (at least a quarter of the file), the last one shorter: the
/// recipe in docs/cli.md.
fn even_pieces(len: u64) -> Vec<(u64, u64)> {
    let size = (len / 4).next_power_of_two().max(1024);
    (0..len).step_by(size as usize).map(|at| (at, size.min(len - at))).collect()
}

/// Pieces of falling sizes, each as large as fits where it starts: 2^k, then what is left of
/// the largest subtrees (a cover in the shape of the tree's right edge).
fn greedy_pieces(len: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < len {
        let left = len - at;
        let size = match max_subtree_len(at) {
            None => (left - 1).max(1024).ilog2(),
            Some(max) if left <= max => {
                out.push((at, left));
                break;
            }
            Some(max) => max.ilog2(),
        };
        out.push((at, 1 << size));
        at += 1 << size;
    }
    out
}

/// Hashes `file` in `pieces`, piece i on `devices[i % n]` (rotated by `turn`), and returns the
/// PIECES text, its lines in a shuffled order.
fn subtree_lines(
    dir: &Path,
    file: &str,
    pieces: &[(u64, u64)],
    mode: &[&str],
    stdin: &[u8],
    devices: &[String],
    turn: usize,
) -> String {
    let mut lines = Vec::new();
    for (i, &(offset, len)) in pieces.iter().enumerate() {
        let device = &devices[(i + turn) % devices.len()];
        let (o, l) = (offset.to_string(), len.to_string());
        let mut args = vec!["subtree", "--backend", device, "--offset", &o, "--length", &l];
        args.extend(mode);
        args.push(file);
        let out = b3accel(dir, &args, stdin);
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let (cv, name) = stdout.trim_end().split_once("  ").unwrap_or_else(|| panic!("{args:?}: {stdout:?}"));
        assert_eq!((cv.len(), name), (64, file), "{args:?}");
        lines.push(format!("{offset} {len} {cv}"));
    }
    // Any order: reversed, and the first line last.
    lines.reverse();
    lines.rotate_left(1);
    lines.join("\n") + "\n"
}

/// For each file size, mode and cover: pieces hashed on rotating devices, merged, against b3sum.
fn check_sizes(test: &str, sizes: &[u64], output: &[&[&str]]) {
    let Some(b3sum) = upstream(test) else { return };
    let devices = devices();
    let dir = Dir::new(test);
    for (k, &len) in sizes.iter().enumerate() {
        let file = format!("f{len}");
        dir.write(&file, &data(len as usize, len));
        for (m, (mode, stdin)) in MODES.iter().enumerate() {
            for (c, pieces) in [even_pieces(len), greedy_pieces(len)].iter().enumerate() {
                let text = subtree_lines(dir.path(), &file, pieces, mode, stdin, &devices, k + m + c);
                dir.write("pieces", text.as_bytes());
                for extra in output {
                    let mut args = vec!["merge"];
                    args.extend(*mode);
                    args.extend(*extra);
                    args.push("pieces");
                    let ours = b3accel(dir.path(), &args, stdin);
                    let mut theirs_args = vec!["--no-names"];
                    theirs_args.extend(*mode);
                    theirs_args.extend(*extra);
                    theirs_args.push(&file);
                    let theirs = run_in(b3sum, dir.path(), &os(&theirs_args), stdin);
                    assert!(theirs.status.success());
                    assert_eq!(
                        String::from_utf8_lossy(&ours.stdout),
                        String::from_utf8_lossy(&theirs.stdout),
                        "{len} bytes in pieces {pieces:?}, {args:?}; stderr {}",
                        String::from_utf8_lossy(&ours.stderr)
                    );
                    assert_eq!(ours.status.code(), Some(0));
                }
            }
        }
        eprintln!("subtree/merge: {len} bytes on {devices:?} match b3sum");
    }
}

#[test]
fn pieces_on_every_device_merge_to_b3sum() {
    // Around one chunk, two chunks, a power of two, and a few MiB that are not one.
    check_sizes(
        "pieces",
        &[1025, 2048, 3 * 1024 + 5, 65_537, 1 << 20, (1 << 20) + 1025, (5 << 20) + 3],
        &[&[], &["-l", "131", "--seek", "7"], &["--length", "0"]],
    );
}

/// The acceptance range: files up to 100 MiB, in CI (19 s in a debug build on the 2-core machine).
#[test]
fn files_up_to_100_mib_merge_to_b3sum() {
    check_sizes(
        "huge",
        &[(64 << 20) - 1, (64 << 20) + 1025, 100 << 20, (100 << 20) + 1],
        &[&[], &["-l", "100", "--seek", "99"]],
    );
}

/// Runs `merge` on `pieces` and asserts a refusal that names `line` (exit status 1, nothing on
/// standard output, the reason on standard error).
fn refused(dir: &Dir, pieces: &str, line: usize, says: &str) {
    dir.write("bad", pieces.as_bytes());
    let out = b3accel(dir.path(), &["merge", "bad"], b"");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{pieces:?}: {stderr}");
    assert!(out.stdout.is_empty(), "{pieces:?}: stdout {:?}", String::from_utf8_lossy(&out.stdout));
    assert!(stderr.starts_with("b3accel: bad:"), "{pieces:?}: {stderr}");
    assert!(stderr.contains(&format!("bad:{line}: ")), "{pieces:?} must name line {line}: {stderr}");
    assert!(stderr.contains(says), "{pieces:?} must say {says:?}: {stderr}");
}

#[test]
fn invalid_covers_and_malformed_lines_are_refused_by_line() {
    let dir = Dir::new("badcovers");
    let cv = "ab".repeat(32);
    let p = |o: u64, l: u64| format!("{o} {l} {cv}\n");
    refused(&dir, &(p(0, 1024) + &p(2048, 5)), 2, "gap");
    refused(&dir, &(p(1024, 1024) + &p(2048, 5)), 1, "offset 0");
    refused(&dir, &(p(0, 2048) + &p(1024, 1024) + &p(2048, 3)), 2, "overlap");
    refused(&dir, &(p(0, 1024) + &p(0, 1024) + &p(1024, 3)), 2, "overlap");
    refused(&dir, &(p(0, 1024) + &p(1000, 24)), 2, "multiple of the chunk length");
    refused(&dir, &p(0, 5000), 1, "only piece");
    refused(&dir, &(p(0, 1024) + &p(1024, 2048)), 2, "largest subtree");
    refused(&dir, &(p(0, 3072) + &p(3072, 1)), 1, "not a complete subtree");
    refused(&dir, &(p(0, 1024) + &p(1024, 0)), 2, "empty");
    refused(&dir, &(p(0, 1024) + "\n" + &p(2048, 1)), 3, "gap");
    // Malformed lines.
    refused(&dir, &(p(0, 1024) + "1024 7\n"), 2, "three fields");
    refused(&dir, &(p(0, 1024) + &format!("1024 7 {cv} extra\n")), 2, "three fields");
    refused(&dir, &format!("zero 1024 {cv}\n"), 1, "OFFSET");
    refused(&dir, &format!("0 -1 {cv}\n"), 1, "LENGTH");
    refused(&dir, &format!("0 99999999999999999999 {cv}\n"), 1, "2^64");
    refused(&dir, &(p(0, 1024) + "1024 1 abcd\n"), 2, "hex digits");
    refused(&dir, &(p(0, 1024) + &format!("1024 1 {}\n", "x".repeat(64))), 2, "hex digits");
    refused(&dir, &format!("{}{}", p(0, 1024), "1024 1 \u{e9}\n"), 2, "hex digits");
    dir.write("latin1", b"0 1024 \xe9\n");
    let out = b3accel(dir.path(), &["merge", "latin1"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("latin1:1: not UTF-8"));
    // No pieces at all, and no such file.
    for (name, text) in [("empty", ""), ("blank", "\n \n")] {
        dir.write(name, text.as_bytes());
        let out = b3accel(dir.path(), &["merge", name], b"");
        assert_eq!((out.status.code(), out.stdout.is_empty()), (Some(1), true), "{name}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("no pieces"), "{name}");
    }
    let out = b3accel(dir.path(), &["merge", "missing"], b"");
    assert_eq!((out.status.code(), out.stdout.is_empty()), (Some(1), true));
    // --keyed reads the key from standard input: PIECES cannot be there too (a usage error).
    let out = b3accel(dir.path(), &["merge", "--keyed", "-"], KEY);
    assert_eq!((out.status.code(), out.stdout.is_empty()), (Some(2), true));
    // Pieces on standard input are fine.
    let whole = data(3000, 1);
    dir.write("w", &whole);
    let first = b3accel(dir.path(), &["subtree", "--offset", "0", "--length", "2048", "w"], b"");
    let second = b3accel(dir.path(), &["subtree", "--offset", "2048", "--length", "952", "w"], b"");
    let cv = |o: &Output| String::from_utf8_lossy(&o.stdout)[..64].to_string();
    let text = format!("2048 952 {}\n0 2048 {}\n", cv(&second), cv(&first));
    let out = b3accel(dir.path(), &["merge", "-"], text.as_bytes());
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{}\n", blake3::hash(&whole).to_hex()));
}

#[test]
fn invalid_subtrees_are_refused() {
    let dir = Dir::new("badsubtrees");
    dir.write("f", &data(10_000, 2));
    std::fs::create_dir_all(dir.path().join("sub")).unwrap();
    for (args, says) in [
        (&["--offset", "100", "--length", "10", "f"][..], "multiple of the chunk length"),
        (&["--offset", "1024", "--length", "0", "f"], "empty"),
        (&["--offset", "0", "--length", "10000", "f"], "root"),
        (&["--offset", "0", "--length", "3072", "f"], "root"),
        (&["--offset", "1024", "--length", "2048", "f"], "largest subtree"),
        (&["--offset", "8192", "--length", "4096", "f"], "past the end"),
        (&["--offset", "0", "--length", "1024", "missing"], "No such file"),
        (&["--offset", "0", "--length", "1024", "sub"], "directory"),
    ] {
        let mut full = vec!["subtree"];
        full.extend(args);
        let out = b3accel(dir.path(), &full, b"");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{full:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{full:?}");
        assert!(stderr.starts_with("b3accel: ") && stderr.contains(says), "{full:?} must say {says:?}: {stderr}");
    }
    // Standard input that ends before the piece does.
    let out = b3accel(dir.path(), &["subtree", "--offset", "8192", "--length", "4096", "-"], &data(10_000, 2));
    assert_eq!((out.status.code(), out.stdout.is_empty()), (Some(1), true));
    // --keyed with FILE on standard input: a usage error.
    let out = b3accel(dir.path(), &["subtree", "--keyed", "--offset", "0", "--length", "1024", "-"], KEY);
    assert_eq!((out.status.code(), out.stdout.is_empty()), (Some(2), true));
    // A keyed subtree with a short key: refused.
    let out = b3accel(dir.path(), &["subtree", "--keyed", "--offset", "0", "--length", "1024", "f"], b"short");
    assert_eq!((out.status.code(), out.stdout.is_empty()), (Some(1), true));
}

#[test]
fn stdin_pieces_and_json_forms() {
    let dir = Dir::new("json");
    let bytes = data(200_000, 3);
    dir.write("f", &bytes);
    let offsets = [(0u64, 131_072u64), (131_072, 68_928)];
    let mut pieces = String::new();
    for (o, l) in offsets {
        let (os_, ls) = (o.to_string(), l.to_string());
        let out = b3accel(dir.path(), &["subtree", "--json", "--offset", &os_, "--length", &ls, "f"], b"");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!((v["path"].as_str(), v["offset"].as_u64(), v["length"].as_u64()), (Some("f"), Some(o), Some(l)));
        assert!(v["seconds"].as_f64().is_some() && v["backend"].as_str().is_some(), "{v}");
        let cv = v["cv"].as_str().unwrap().to_string();
        // The same piece read from standard input (the bytes before it dropped).
        let out = b3accel(dir.path(), &["subtree", "--offset", &os_, "--length", &ls, "-"], &bytes);
        assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{cv}  -\n"));
        pieces.push_str(&format!("{o} {l} {cv}\n"));
    }
    dir.write("pieces", pieces.as_bytes());
    let out = b3accel(dir.path(), &["merge", "--json", "-l", "40", "pieces"], b"");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut want = [0u8; 40];
    blake3::Hasher::new().update(&bytes).finalize_xof().fill(&mut want);
    let hex: String = want.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        (v["hash"].as_str(), v["bytes"].as_u64(), v["pieces"].as_u64()),
        (Some(hex.as_str()), Some(200_000), Some(2))
    );
}

#[test]
fn help_says_what_each_subcommand_does() {
    let dir = Dir::new("help");
    let out = b3accel(dir.path(), &["--help"], b"");
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(!help.contains("Arguments of"), "{help}");
    for name in ["devices", "merkle", "subtree", "merge", "bench"] {
        let line = help.lines().find(|l| l.trim_start().starts_with(name)).unwrap_or_else(|| panic!("{name}: {help}"));
        assert!(line.trim_start()[name.len()..].trim().len() > 20, "{name} has no description: {line:?}");
    }
}
