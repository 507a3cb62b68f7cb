//! `b3accel subtree`: the chaining value of one piece of a file, a subtree of BLAKE3's tree, so
//! that many machines can hash one input: each hashes its pieces, and `b3accel merge` turns the
//! pieces' lines into the input's hash.

use crate::output::{display_name, finish, push_hex, Out};
use crate::progress::Progress;
use crate::spec::ModeArgs;
use crate::{usage_error, Fatal, Global, Outcome};
use b3accel::file::{FileOptions, Input, ReadMode};
use b3accel::hazmat::{check_subtree, HasherExt};
use b3accel::Hasher;
use serde::Serialize;
use std::borrow::Cow;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Print the chaining value of bytes OFFSET..OFFSET+LENGTH of FILE, for `b3accel merge`
///
/// Prints the piece's non-root chaining value in hex (64 digits), two spaces and FILE (with
/// --json: an object with path, offset, length, cv, backend and seconds). Give `b3accel merge` one
/// line `OFFSET LENGTH CV` per piece to get the hash of the whole file.
///
/// The alignment rule: a piece starts at a multiple of 1024 bytes, and a piece that starts at
/// byte OFFSET > 0 is at most the largest power of two that divides OFFSET long; a piece at 0 is
/// a power of two of KiB (any other length there could only be the whole file, which `b3accel
/// FILE` hashes). Pieces of one power-of-two size, the last one shorter, always satisfy it. In
/// keyed mode the key comes on standard input, as in b3sum.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub mode: ModeArgs,

    /// Where the piece starts in FILE, in bytes (a multiple of 1024)
    #[arg(long, value_name = "O")]
    pub offset: u64,

    /// How many bytes the piece holds
    #[arg(long, value_name = "L")]
    pub length: u64,

    /// The file (- for standard input: read from its start, the bytes before OFFSET dropped)
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

/// The `--json` record.
#[derive(Serialize)]
struct SubtreeRecord<'a> {
    path: Cow<'a, str>,
    offset: u64,
    length: u64,
    cv: String,
    backend: String,
    seconds: f64,
}

pub fn run(args: Args, global: &Global) -> Outcome {
    let stdin = args.file == Path::new("-");
    if args.mode.keyed && stdin {
        usage_error("--keyed reads the key from standard input, so FILE cannot be - (standard input)");
    }
    check_subtree(args.offset, args.length)
        .map_err(|e| Fatal(format!("--offset {} --length {}: {e}", args.offset, args.length)))?;
    let mode = args.mode.mode()?;
    let devices = crate::choice::open(global)?;
    let start = Instant::now();
    let name = args.file.to_string_lossy();
    let in_file = |e: b3accel::Error| Fatal(format!("{name}: {e}"));
    let input =
        if stdin { Input::from_reader(io::stdin().lock()) } else { Input::open(&args.file).map_err(in_file)? };
    let input = input.range(args.offset, args.length).map_err(in_file)?;
    let picked = devices.pick(Some(args.length));
    let progress = Progress::new(global.progress, args.length);
    let tell = |n| progress.inc(n);
    let options = FileOptions { read: ReadMode::Auto, progress: progress.active().then_some(&tell as &(dyn Fn(u64) + Sync)) };
    let mut hasher = Hasher::with_backend(picked.backend.clone(), &mode);
    hasher.set_input_offset(args.offset)?;
    let fed = input.update(&mut hasher, &options);
    progress.finish();
    fed.map_err(in_file)?;
    let cv = hasher.finalize_non_root()?;
    if let Some(why) = picked.why().filter(|_| global.verbose > 1) {
        crate::warn(format_args!("{name}: hashed on {}: {why}", picked.name));
    }
    let mut hex = Vec::with_capacity(64);
    push_hex(&mut hex, &cv);
    let hex = String::from_utf8(hex).map_err(|e| Fatal(e.to_string()))?;

    let mut out = Out::new();
    let written = if global.json {
        out.json(&SubtreeRecord {
            path: name.clone(),
            offset: args.offset,
            length: args.length,
            cv: hex,
            backend: picked.name,
            seconds: start.elapsed().as_secs_f64(),
        })
    } else {
        let (shown, escaped) = display_name(&args.file, false);
        let prefix = if escaped { "\\" } else { "" };
        out.write(format!("{prefix}{hex}  {shown}\n").as_bytes())
    };
    finish(written.map_err(Into::into), &mut out, false)
}
