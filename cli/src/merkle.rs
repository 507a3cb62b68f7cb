//! `b3accel merkle [--backend B] [--tree OUT] FILE`: the root of the binary Merkle tree whose
//! leaves are FILE's 32-byte records, in the shape of `b3accel::merkle` (a parent is
//! `blake3(left || right)`, an odd last node is carried up; leaves and inner nodes are not
//! domain-separated, see the library's docs).
//!
//! Prints `<64 hex digits>  <FILE>` like `b3sum`. With `--tree OUT`, writes every inner node to
//! OUT as raw 32-byte nodes, level by level from the leaves' parents up to the root (the root is
//! the last 32 bytes; a file of one leaf gives an empty OUT). FILE is memory-mapped (through the
//! library's `file::Input`); `-` reads standard input. An empty FILE, a size that is not a
//! multiple of 32, or a FILE that cannot be read is an error: a message `b3accel: ...` on
//! standard error, exit status 1, nothing on standard output.

use crate::choice::Choice;
use b3accel::file::Input;
use b3accel::merkle::merkle_root_with;
use b3accel::MerkleTree;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The root of the binary Merkle tree whose leaves are FILE's 32-byte records
///
/// Prints `<64 hex digits>  <FILE>` like b3sum; a parent is `blake3(left || right)` and an odd
/// last node is carried up (see the library's `merkle` module on domain separation). With
/// `--tree OUT`, also writes every inner node to OUT, level by level from the leaves' parents up
/// to the root.
#[derive(clap::Args, Debug, Clone)]
pub struct MerkleArgs {
    /// Device to hash on: auto, cpu, opencl[:N], wgpu[:N], a list (its first device) or all.
    #[arg(long, short = 'b', value_name = "B", default_value = "auto")]
    pub backend: Choice,

    /// Also write all inner nodes to OUT: raw 32-byte nodes, level by level from the leaves'
    /// parents up to the root (the last 32 bytes).
    #[arg(long, value_name = "OUT")]
    pub tree: Option<PathBuf>,

    /// File of concatenated 32-byte leaves (`-` for standard input).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

/// Runs `b3accel merkle`: prints the root line, or reports the error on standard error.
pub fn run(args: &MerkleArgs) -> ExitCode {
    let line = match root_line(args) {
        Ok(line) => line,
        Err(msg) => {
            crate::warn(msg);
            return ExitCode::FAILURE;
        }
    };
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = writeln!(stdout, "{line}").and_then(|()| stdout.flush()) {
        crate::warn(format_args!("writing to standard output: {e}"));
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// The identity of the file `path` names (after symbolic links), or for `-` of standard input:
/// its device and inode on Unix, its canonical path elsewhere. `None` if there is none.
#[cfg(unix)]
fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = if path == Path::new("-") {
        let fd = std::os::fd::AsFd::as_fd(&std::io::stdin()).try_clone_to_owned().ok()?;
        File::from(fd).metadata().ok()?
    } else {
        std::fs::metadata(path).ok()?
    };
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn identity(path: &Path) -> Option<PathBuf> {
    (path != Path::new("-")).then(|| path.canonicalize().ok()).flatten()
}

/// Whether `a` and `b` are the same existing file, under any names (hard links included).
fn same_file(a: &Path, b: &Path) -> bool {
    identity(a).is_some_and(|id| identity(b) == Some(id))
}

/// Computes the root (and writes the tree when asked) and returns the line to print. FILE is
/// memory-mapped where it can be (with its pages brought in and out in parallel), else read.
pub fn root_line(args: &MerkleArgs) -> Result<String, String> {
    let name = args.file.display();
    let input = if args.file == Path::new("-") {
        Input::from_reader(std::io::stdin().lock())
    } else {
        Input::open(&args.file).map_err(|e| format!("{name}: {e}"))?
    };
    input.with_bytes(|bytes| root_of(args, bytes)).map_err(|e| format!("{name}: {e}"))?
}

/// [`root_line`] for the leaves' bytes.
fn root_of(args: &MerkleArgs, bytes: &[u8]) -> Result<String, String> {
    let name = args.file.display();
    if bytes.is_empty() {
        return Err(format!("{name}: empty file: a Merkle tree needs at least one 32-byte leaf"));
    }
    let (leaves, rest) = bytes.as_chunks::<32>();
    if !rest.is_empty() {
        return Err(format!(
            "{name}: size {} bytes is not a multiple of 32 (leaves are 32 bytes each; {} bytes left over)",
            bytes.len(),
            rest.len()
        ));
    }
    // A list's (or all's) Spread hands Merkle work to its first device.
    let backend = args.backend.backend().map_err(|e| e.to_string())?;
    let root = match &args.tree {
        None => merkle_root_with(&*backend, leaves).map_err(|e| e.to_string())?,
        Some(out) => {
            if same_file(out, &args.file) {
                return Err(format!("--tree {}: is the input file; refusing to overwrite it", out.display()));
            }
            let tree = MerkleTree::build_with(&*backend, leaves).map_err(|e| e.to_string())?;
            let root = tree.root();
            write_nodes(out, tree.inner_nodes().as_flattened())?;
            root
        }
    };
    Ok(format!("{}  {name}", root.to_hex()))
}

/// Writes the tree to `out`. A regular file (or a new one) is written whole or not at all: into
/// a new temporary file beside it, renamed over it once complete (a symbolic link to it stays a
/// link, to the new file). Anything else that is there (a device, a FIFO) is written to as it is.
fn write_nodes(out: &Path, bytes: &[u8]) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("--tree {}: {e}", out.display());
    match std::fs::metadata(out) {
        Ok(m) if !m.is_file() => {
            let mut f = File::options().write(true).open(out).map_err(fail)?;
            f.write_all(bytes).map_err(fail)
        }
        Ok(_) => write_replacing(&out.canonicalize().map_err(fail)?, bytes).map_err(fail),
        Err(_) => write_replacing(out, bytes).map_err(fail),
    }
}

/// Writes `bytes` to a new temporary file in `path`'s directory and renames it to `path`; on
/// failure the temporary file is removed and `path` is as it was.
fn write_replacing(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path.file_name().ok_or_else(|| std::io::Error::other("not a file name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let mut f = File::options().write(true).create_new(true).open(&tmp)?;
    let written = f.write_all(bytes).and_then(|()| f.sync_all()).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}
