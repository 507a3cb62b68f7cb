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
