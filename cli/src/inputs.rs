//! The list of inputs: FILE operands, `--files-from`, `-` for standard input, and directories
//! walked by `-r/--recursive` in sorted order.

use crate::Fatal;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// One input to hash (or, with `--check`, one checkfile to read).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// Standard input (`-`).
    Stdin,
    /// A file (or anything else that can be opened; errors come when it is read).
    Path(PathBuf),
    /// A problem met while listing the inputs (a directory that cannot be read under `-r`, a
    /// `-` in a list read from standard input): reported in its place, and a failure.
    Error { path: PathBuf, msg: String },
}

impl Input {
    /// The name as given: `-` for standard input.
    pub fn path(&self) -> &Path {
        match self {
            Input::Stdin => Path::new("-"),
            Input::Path(p) | Input::Error { path: p, .. } => p,
        }
    }
}

/// How to build the input list.
pub struct Listing<'a> {
    pub files: &'a [PathBuf],
    pub files_from: Option<&'a Path>,
    pub recursive: bool,
    /// `-z`: names in the `--files-from` list end with NUL, not newline.
    pub zero: bool,
}

/// The inputs in order: the FILE operands, then the names in `--files-from`, each directory
/// replaced under `-r` by the files below it in byte order of their paths; `-` alone when there
/// is nothing at all.
pub fn expand(listing: &Listing) -> Result<Vec<Input>, Fatal> {
    let mut operands: Vec<(PathBuf, bool)> = listing.files.iter().map(|p| (p.clone(), false)).collect();
    if let Some(list) = listing.files_from {
        let from_stdin = list == Path::new("-");
        for name in read_list(list, listing.zero)? {
            operands.push((name, from_stdin));
        }
    } else if operands.is_empty() {
        operands.push((PathBuf::from("-"), false));
    }
    let mut inputs = Vec::with_capacity(operands.len());
    for (path, list_on_stdin) in operands {
        if path == Path::new("-") {
            if list_on_stdin {
                inputs.push(Input::Error {
                    path,
                    msg: "standard input is the --files-from list; it cannot be hashed too".into(),
                });
            } else {
                inputs.push(Input::Stdin);
            }
        } else if listing.recursive && fs::metadata(&path).is_ok_and(|m| m.is_dir()) {
            walk(&path, &mut inputs);
        } else {
            inputs.push(Input::Path(path));
        }
    }
    Ok(inputs)
}

/// The names in a `--files-from` list (`-`: standard input): one per line, or per NUL with
/// `zero`; taken byte for byte, empty names skipped.
fn read_list(list: &Path, zero: bool) -> Result<Vec<PathBuf>, Fatal> {
    let mut bytes = Vec::new();
    let read = if list == Path::new("-") {
        io::stdin().lock().read_to_end(&mut bytes)
    } else {
        fs::File::open(list).and_then(|mut f| f.read_to_end(&mut bytes))
    };
    read.map_err(|e| Fatal(format!("--files-from {}: {e}", list.to_string_lossy())))?;
    let sep = if zero { b'\0' } else { b'\n' };
    Ok(bytes.split(|&b| b == sep).filter(|name| !name.is_empty()).map(path_from_bytes).collect())
}

/// A name from a `--files-from` list: its bytes as they are, on Unix, where a name is bytes.
#[cfg(unix)]
fn path_from_bytes(name: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    PathBuf::from(std::ffi::OsString::from_vec(name.to_vec()))
}

/// A name from a `--files-from` list where names are Unicode (Windows): UTF-8, bytes that are
/// not UTF-8 becoming U+FFFD (the input is then most likely reported missing, under that name),
/// and a line's trailing carriage return dropped (no Windows name can hold one; lists written
/// there end their lines with CR LF).
#[cfg(not(unix))]
fn path_from_bytes(name: &[u8]) -> PathBuf {
    let name = name.strip_suffix(b"\r").unwrap_or(name);
    PathBuf::from(String::from_utf8_lossy(name).into_owned())
}

/// Every regular file below `root` (and symbolic links to regular files), sorted by the bytes of
/// their paths, as `find ROOT -type f | LC_ALL=C sort` lists them (on Windows, whose names are
/// UTF-16, by their UTF-8 form: code point order). Directories reached through a
/// symbolic link are not entered (no loops); fifos, sockets and devices are left out; a symbolic
/// link that leads nowhere (dangling, or a loop) is left out with a warning.
fn walk(root: &Path, inputs: &mut Vec<Input>) {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) => {
                found.push(Input::Error { path: dir, msg: e.to_string() });
                continue;
            }
        };
        for entry in entries {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    found.push(Input::Error { path: dir.clone(), msg: e.to_string() });
                    continue;
                }
            };
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => dirs.push(path),
                Ok(t) if t.is_file() => found.push(Input::Path(path)),
                Ok(t) if t.is_symlink() => match fs::metadata(&path) {
                    Ok(m) if m.is_file() => found.push(Input::Path(path)),
                    Ok(_) => {}
                    Err(e) => crate::warn(format_args!("{}: skipped symbolic link: {e}", path.to_string_lossy())),
                },
                Ok(_) => {}
                Err(e) => found.push(Input::Error { path, msg: e.to_string() }),
            }
        }
    }
    found.sort_by(|a, b| a.path().as_os_str().as_encoded_bytes().cmp(b.path().as_os_str().as_encoded_bytes()));
    inputs.extend(found);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walk_sorts_full_paths_by_bytes() {
        let dir = std::env::temp_dir().join(format!("b3accel-walk-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("a/b")).unwrap();
        fs::write(dir.join("a.txt"), b"1").unwrap();
        fs::write(dir.join("a/b/c"), b"2").unwrap();
        fs::write(dir.join("B"), b"3").unwrap();
        let mut inputs = Vec::new();
        walk(&dir, &mut inputs);
        let names: Vec<_> = inputs.iter().map(|i| i.path().strip_prefix(&dir).unwrap().to_path_buf()).collect();
        // '.' (0x2e) sorts before '/' (0x2f), and capitals before lowercase.
        assert_eq!(names, [PathBuf::from("B"), "a.txt".into(), "a/b/c".into()]);
        fs::remove_dir_all(&dir).unwrap();
    }
}
