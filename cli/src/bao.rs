//! `b3accel bao`: bao_bin's commands (hash, encode, decode, slice, decode-slice) with its
//! arguments and bytes, plus bao-tree's chunk groups (`--chunk-group-log`) and post-order
//! outboards (`--post-order`), computed on the device `--backend` names.

use crate::{Fatal, Global, Outcome};
use b3accel::bao::{self, Order, Outboard};
use b3accel::{Hash, Mode};
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Verified streaming: bao's encodings, outboards and slices (bao_bin's commands)
///
/// The same bytes as `bao` 0.13 for the same arguments. With --chunk-group-log K the leaves are
/// groups of 2^K chunks (bao-tree's format; 4 is iroh's 16 KiB); --post-order writes and reads
/// post-order outboards (bao-tree's PostOrderOutboard, the size last). A missing or `-` input is
/// standard input, a missing or `-` output standard output. Input that does not verify stops the
/// command with exit status 1; what was written before it verified.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Command,

    /// Chunk groups of 2^K chunks (0: bao's 1 KiB; 4: iroh's 16 KiB)
    #[arg(long, value_name = "K", default_value_t = 0, global = true)]
    chunk_group_log: u8,

    /// Outboards with the parents in post-order (bao-tree's PostOrderOutboard)
    #[arg(long, global = true)]
    post_order: bool,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Print the BLAKE3 hash of each input (standard input when none)
    Hash {
        /// The inputs (- for standard input)
        inputs: Vec<PathBuf>,
    },
    /// Write the combined encoding of INPUT to OUTPUT, or its outboard to --outboard
    Encode {
        /// The content (- for standard input)
        input: PathBuf,
        /// Where the combined encoding goes (- for standard output)
        #[arg(required_unless_present = "outboard", conflicts_with = "outboard")]
        output: Option<PathBuf>,
        /// Write the outboard to this file instead
        #[arg(long, value_name = "FILE")]
        outboard: Option<PathBuf>,
    },
    /// Verify INPUT (an encoding, or the content with --outboard) against HASH and write the content
    Decode {
        /// The root hash, in hex
        hash: String,
        /// The encoding, or with --outboard the content
        input: Option<PathBuf>,
        /// Where the verified content goes
        output: Option<PathBuf>,
        /// The outboard of the content
        #[arg(long, value_name = "FILE")]
        outboard: Option<PathBuf>,
        /// Start at this content offset
        #[arg(long, value_name = "OFFSET")]
        start: Option<u64>,
        /// Write at most this many bytes
        #[arg(long, value_name = "COUNT")]
        count: Option<u64>,
    },
    /// Write the slice of INPUT (an encoding, or the content with --outboard) that proves COUNT bytes from START
    Slice {
        /// The first content byte of the slice
        start: u64,
        /// How many content bytes
        count: u64,
        /// The encoding, or with --outboard the content
        input: Option<PathBuf>,
        /// Where the slice goes
        output: Option<PathBuf>,
        /// The outboard of the content
        #[arg(long, value_name = "FILE")]
        outboard: Option<PathBuf>,
    },
    /// Verify a slice against HASH and write its content
    DecodeSlice {
        /// The root hash, in hex
        hash: String,
        /// The first content byte of the slice
        start: u64,
        /// How many content bytes
        count: u64,
        /// The slice
        input: Option<PathBuf>,
        /// Where the verified content goes
        output: Option<PathBuf>,
    },
}

/// Whether `path` means a standard stream.
fn is_std(path: Option<&Path>) -> bool {
    path.is_none_or(|p| p == Path::new("-"))
}

/// The name of `path` in messages.
fn name(path: Option<&Path>) -> String {
    if is_std(path) {
        "standard input".to_string()
    } else {
        path.map(|p| p.display().to_string()).unwrap_or_default()
    }
}

/// All of an input.
fn read_all(path: Option<&Path>) -> Result<Vec<u8>, Fatal> {
    let mut buf = Vec::new();
    let read = if is_std(path) {
        io::stdin().lock().read_to_end(&mut buf).map(|_| ())
    } else {
        File::open(path.expect("a path")).and_then(|mut f| f.read_to_end(&mut buf)).map(|_| ())
    };
    read.map_err(|e| Fatal(format!("{}: {e}", name(path))))?;
    Ok(buf)
}

/// An input as a stream.
fn reader(path: Option<&Path>) -> Result<Box<dyn Read>, Fatal> {
    if is_std(path) {
        return Ok(Box::new(io::stdin().lock()));
    }
    let file = File::open(path.expect("a path")).map_err(|e| Fatal(format!("{}: {e}", name(path))))?;
    Ok(Box::new(BufReader::with_capacity(1 << 16, file)))
}

/// An output (created now) as a stream.
fn writer(path: Option<&Path>) -> Result<Box<dyn Write>, Fatal> {
    if is_std(path) {
        return Ok(Box::new(BufWriter::with_capacity(1 << 16, io::stdout().lock())));
    }
    let p = path.expect("a path");
    let file = File::create(p).map_err(|e| Fatal(format!("{}: {e}", p.display())))?;
    Ok(Box::new(BufWriter::with_capacity(1 << 16, file)))
}

/// Writes `bytes` to `path` (standard output for none or `-`).
fn write_all(path: Option<&Path>, bytes: &[u8]) -> Result<(), Fatal> {
    let mut out = writer(path)?;
    out.write_all(bytes).and_then(|()| out.flush()).map_err(|e| Fatal(format!("writing: {e}")))
}

/// A root hash from its 64 hex digits.
fn parse_hash(hex: &str) -> Result<Hash, Fatal> {
    Hash::from_hex(hex.trim()).map_err(|e| Fatal(format!("{hex:?} is not a hash: {e}")))
}

/// A library error as the command's message.
fn fail(e: bao::Error) -> Fatal {
    Fatal(e.to_string())
}

pub fn run(args: Args, global: &Global) -> Outcome {
    let k = args.chunk_group_log;
    if k > bao::MAX_GROUP_LOG {
        crate::usage_error(format!("--chunk-group-log {k}: at most {}", bao::MAX_GROUP_LOG));
    }
    let order = if args.post_order { Order::Post } else { Order::Pre };
    match args.command {
        Command::Hash { inputs } => hash(&inputs, global),
        Command::Encode { input, output, outboard } => {
            if output.is_some() && args.post_order {
                crate::usage_error("--post-order is for outboards: combined encodings are in pre-order");
            }
            let data = read_all(Some(input.as_path()))?;
            let devices = crate::choice::open(global)?;
            let backend = devices.pick(Some(data.len() as u64)).backend;
            match outboard {
                Some(file) => {
                    let (ob, _) = bao::outboard_with(&*backend, &data, k, order).map_err(fail)?;
                    write_all(Some(file.as_path()), &ob.to_bytes())?;
                }
                None => {
                    let (encoded, _) = bao::encode_with(&*backend, &data, k).map_err(fail)?;
                    write_all(output.as_deref(), &encoded)?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Decode { hash, input, output, outboard, start, count } => {
            let hash = parse_hash(&hash)?;
            let input = input.as_deref();
            if start.is_some() || count.is_some() {
                // A range: its slice, then the slice decoded.
                let start = start.unwrap_or(0);
                let source = read_all(input)?;
                let (s, size) = match &outboard {
                    Some(file) => {
                        let ob = Outboard::from_bytes(&read_all(Some(file.as_path()))?, k, order).map_err(fail)?;
                        (bao::slice_outboard(&source, &ob, start, count.unwrap_or(u64::MAX)), ob.tree().size())
                    }
                    None => {
                        let size = source.first_chunk::<8>().map(|h| u64::from_le_bytes(*h)).unwrap_or(0);
                        (bao::slice(&source, k, start, count.unwrap_or(u64::MAX)), size)
                    }
                };
                let s = s.map_err(fail)?;
                let count = count.unwrap_or(size.saturating_sub(start));
                let mut out = writer(output.as_deref())?;
                bao::decode_slice(&s[..], &hash, k, start, count, &mut out).map_err(fail)?;
                return Ok(ExitCode::SUCCESS);
            }
            let mut out = writer(output.as_deref())?;
            match &outboard {
                Some(file) => {
                    let ob = Outboard::from_bytes(&read_all(Some(file.as_path()))?, k, order).map_err(fail)?;
                    bao::decode_outboard(reader(input)?, &ob, &hash, &mut out).map_err(fail)?;
                }
                None => {
                    bao::decode(reader(input)?, &hash, k, &mut out).map_err(fail)?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Slice { start, count, input, output, outboard } => {
            let source = read_all(input.as_deref())?;
            let s = match &outboard {
                Some(file) => {
                    let ob = Outboard::from_bytes(&read_all(Some(file.as_path()))?, k, order).map_err(fail)?;
                    bao::slice_outboard(&source, &ob, start, count)
                }
                None => bao::slice(&source, k, start, count),
            };
            write_all(output.as_deref(), &s.map_err(fail)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::DecodeSlice { hash, start, count, input, output } => {
            let hash = parse_hash(&hash)?;
            let mut out = writer(output.as_deref())?;
            bao::decode_slice(reader(input.as_deref())?, &hash, k, start, count, &mut out).map_err(fail)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `bao hash`: one hash per input, with its name when there are several (as bao_bin prints).
fn hash(inputs: &[PathBuf], global: &Global) -> Outcome {
    let devices = crate::choice::open(global)?;
    let one = |path: Option<&Path>| -> Result<Hash, Fatal> {
        let data = read_all(path)?;
        let backend = devices.pick(Some(data.len() as u64)).backend;
        Ok(b3accel::hash_with(&*backend, &Mode::Hash, &data)?)
    };
    let mut out = BufWriter::new(io::stdout().lock());
    if inputs.is_empty() {
        writeln!(out, "{}", one(None)?.to_hex())?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut failed = false;
    for input in inputs {
        match one(Some(input)) {
            Ok(h) if inputs.len() == 1 => writeln!(out, "{}", h.to_hex())?,
            Ok(h) => writeln!(out, "{}  {}", h.to_hex(), input.display())?,
            Err(e) => {
                out.flush()?;
                crate::warn(e);
                failed = true;
            }
        }
    }
    out.flush()?;
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}
