//! `b3accel merkle` end to end.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn b3accel(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_b3accel")).args(args).output().expect("run b3accel")
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("b3accel-merkle-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The reference: every inner level with a loop of upstream `blake3::hash`, odd node carried.
fn reference(leaves: &[u8]) -> (Vec<u8>, [u8; 32]) {
    let mut cur: Vec<[u8; 32]> = leaves.chunks(32).map(|c| c.try_into().unwrap()).collect();
    let mut inner = Vec::new();
    while cur.len() > 1 {
        let stored: Vec<[u8; 32]> =
            cur.chunks_exact(2).map(|p| *blake3::hash(&[p[0], p[1]].concat()).as_bytes()).collect();
        inner.extend(stored.iter().flatten());
        let carried = (cur.len() % 2 == 1).then(|| cur[cur.len() - 1]);
        cur = stored.into_iter().chain(carried).collect();
    }
    (inner, cur[0])
}

fn leaves(n: usize) -> Vec<u8> {
    (0..32 * n).map(|i| (i * 31 % 251) as u8).collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn check_error(out: &Output, what: &str) {
    assert_eq!(out.status.code(), Some(1), "{what}: exit status");
    assert!(out.stdout.is_empty(), "{what}: stdout must be empty");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("b3accel: "), "{what}: stderr {err:?}");
}

#[test]

fn root_and_tree_match_the_reference() {
    let dir = scratch("ok");
    for n in [1usize, 2, 3, 5, 1000, 4097] {
        let file = dir.join(format!("leaves{n}"));
        std::fs::write(&file, leaves(n)).unwrap();
        let (inner, root) = reference(&leaves(n));
        for backend in ["auto", "cpu"] {
            let tree = dir.join(format!("tree{n}-{backend}"));
            let out = b3accel(&[
                "merkle".as_ref(),
                "--backend".as_ref(),
                backend.as_ref(),
                "--tree".as_ref(),
                tree.as_os_str(),
                file.as_os_str(),
            ]);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let expected = format!("{}  {}\n", hex(&root), file.display());
            assert_eq!(String::from_utf8_lossy(&out.stdout), expected, "{n} leaves");
            assert_eq!(std::fs::read(&tree).unwrap(), inner, "--tree of {n} leaves");
        }
        let out = b3accel(&["merkle".as_ref(), file.as_os_str()]);
        assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{}  {}\n", hex(&root), file.display()));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]

fn bad_files_are_clear_errors() {
    let dir = scratch("bad");
    let empty = dir.join("empty");
    std::fs::write(&empty, b"").unwrap();
    let ragged = dir.join("ragged");
    std::fs::write(&ragged, [0u8; 33]).unwrap();
    let missing = dir.join("missing");
    for (path, what) in [(&empty, "empty file"), (&ragged, "33 bytes"), (&missing, "missing file")] {
        check_error(&b3accel(&["merkle".as_ref(), path.as_os_str()]), what);
        let tree = dir.join("tree");
        let out = b3accel(&["merkle".as_ref(), "--tree".as_ref(), tree.as_os_str(), path.as_os_str()]);
        check_error(&out, what);
        assert!(!Path::new(&tree).exists(), "{what}: no tree written");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--tree` never overwrites its input, under any name: the same path, a hard link, a symbolic
/// link, or standard input redirected from the file. Nothing is written, and the input is whole.
#[cfg(unix)]
#[test]
fn the_tree_never_overwrites_the_input() {
    let dir = scratch("same");
    let input = dir.join("leaves");
    let bytes = leaves(5);
    std::fs::write(&input, &bytes).unwrap();
    let hard = dir.join("hard");
    std::fs::hard_link(&input, &hard).unwrap();
    let soft = dir.join("soft");
    std::os::unix::fs::symlink(&input, &soft).unwrap();
    for out in [&input, &hard, &soft] {
        let res = b3accel(&["merkle".as_ref(), "--tree".as_ref(), out.as_os_str(), input.as_os_str()]);
        check_error(&res, "--tree names the input");
        assert!(String::from_utf8_lossy(&res.stderr).contains("is the input file"), "{out:?}");
        assert_eq!(std::fs::read(&input).unwrap(), bytes, "{out:?}");
    }
    let res = Command::new(env!("CARGO_BIN_EXE_b3accel"))
        .args(["merkle".as_ref(), "--tree".as_ref(), hard.as_os_str(), "-".as_ref()])
        .stdin(std::fs::File::open(&input).unwrap())
        .output()
        .unwrap();
    check_error(&res, "--tree names standard input's file");
    assert_eq!(std::fs::read(&input).unwrap(), bytes);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--tree` replaces a regular file whole (through a temporary file beside it, none left over),
/// writes through a symbolic link to one (the link stays), and writes into a device as it is.
#[cfg(unix)]
#[test]
fn the_tree_is_written_whole_and_devices_are_left_in_place() {
    let dir = scratch("replace");
    let input = dir.join("leaves");
    let bytes = leaves(7);
    std::fs::write(&input, &bytes).unwrap();
    let (inner, _) = reference(&bytes);
    let out = dir.join("tree");
    std::fs::write(&out, vec![9u8; 10_000]).unwrap();
    let link = dir.join("link");
    std::os::unix::fs::symlink(&out, &link).unwrap();
    for target in [&out, &link] {
        let res = b3accel(&["merkle".as_ref(), "--tree".as_ref(), target.as_os_str(), input.as_os_str()]);
        assert!(res.status.success(), "{}", String::from_utf8_lossy(&res.stderr));
        assert_eq!(std::fs::read(&out).unwrap(), inner);
    }
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, ["leaves", "link", "tree"]);
    let res = b3accel(&["merkle".as_ref(), "--tree".as_ref(), "/dev/null".as_ref(), input.as_os_str()]);
    assert!(res.status.success(), "{}", String::from_utf8_lossy(&res.stderr));
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata("/dev/null").unwrap().file_type().is_char_device());
    let _ = std::fs::remove_dir_all(&dir);
}
