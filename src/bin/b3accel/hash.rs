//! The default command: hash inputs and print one line each, exactly as b3sum does (or, with
//! `--check`, hand over to the check module).

use crate::choice::{Choice, Devices};
use crate::inputs::{self, Input, Listing};
use crate::ordered::{self, Emit};
use crate::output::{self, display_name, Out};
use crate::progress::Progress;
use crate::{Fatal, Global, Outcome};
use b3accel::file::{self, FileOptions, ReadMode};
use b3accel::{Device, Mode, OutputReader, KEY_LEN};
use serde::Serialize;
use std::borrow::Cow;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

/// The hashing options: b3sum's, then b3accel's own.
#[derive(clap::Args, Debug)]
pub struct HashArgs {
    /// Files to hash, or checkfiles to check
    ///
    /// When no file is given, or when - is given, read standard input.
    #[arg(value_name = "FILE")]
    pub file: Vec<PathBuf>,

    /// Use the keyed mode, reading the 32-byte key from stdin
    #[arg(long, requires = "inputs")]
    pub keyed: bool,

    /// Use the key derivation mode, with the given context string
    ///
    /// Cannot be used with --keyed.
    #[arg(long, value_name = "CONTEXT", conflicts_with = "keyed")]
    pub derive_key: Option<String>,

    /// The number of output bytes, before hex encoding
    #[arg(short, long, default_value_t = b3accel::OUT_LEN as u64, value_name = "LEN")]
    pub length: u64,

    /// The starting output byte offset, before hex encoding
    #[arg(long, default_value_t = 0, value_name = "SEEK")]
    pub seek: u64,

    /// Disable memory mapping
    ///
    /// Files are read from the front in large blocks instead (as --read stream).
    #[arg(long, conflicts_with = "read")]
    pub no_mmap: bool,

    /// How to read files: auto, map or stream
    ///
    /// auto (the default): files whose pages are in memory are mapped and hashed on every core;
    /// files that are not are read from the front in large blocks (a few reads in flight, as
    /// their disk wants), each block hashed on every core while the next ones are read. map:
    /// always map (b3sum's default). stream: always read from the front (b3sum's --no-mmap).
    #[arg(long, value_name = "HOW", default_value = "auto")]
    pub read: ReadMode,

    /// Omit filenames in the output
    #[arg(long, conflicts_with = "json")]
    pub no_names: bool,

    /// Write raw output bytes to stdout, rather than hex
    ///
    /// --no-names is implied. In this case, only a single input is allowed.
    #[arg(long, conflicts_with_all = ["json", "zero"])]
    pub raw: bool,

    /// Output BSD-style checksums: BLAKE3 ([FILE]) = [HASH]
    #[arg(long, conflicts_with = "json")]
    pub tag: bool,

    /// Read BLAKE3 sums from the [FILE]s and check them
    #[arg(
        short,
        long,
        conflicts_with_all = ["derive_key", "keyed", "length", "raw", "tag", "no_names", "recursive"]
    )]
    pub check: bool,

    /// Skip printing OK for each checked file
    ///
    /// Must be used with --check.
    #[arg(long, requires = "check")]
    pub quiet: bool,

    /// Hash the files below each directory FILE, in byte order of their paths
    ///
    /// Visits every directory below FILE and hashes its regular files and its symbolic links to
    /// regular files, sorted by the bytes of their paths. Links to directories are not followed;
    /// fifos, sockets and devices are left out; a symbolic link that leads nowhere (dangling, or a
    /// loop) is left out with a warning (`b3accel: PATH: skipped symbolic link: REASON`) that does
    /// not change the exit status; an unreadable directory is an error (exit status 1).
    #[arg(short, long)]
    pub recursive: bool,

    /// Also take the names of the inputs from LIST, one per line (- for standard input)
    ///
    /// Names are taken byte for byte (only the newline ends them; with -z, a NUL); empty lines
    /// are skipped. With --check, the names are checkfiles.
    #[arg(long, value_name = "LIST")]
    pub files_from: Option<PathBuf>,

    /// End each output line with NUL, not newline, and print names unescaped
    ///
    /// With --files-from, the names in the list end with NUL; with --check, so do the lines of
    /// the checkfiles.
    #[arg(short, long, conflicts_with = "json")]
    pub zero: bool,

    /// With --check: skip, and do not count, lines whose file does not exist
    ///
    /// A checkfile in which no file was verified is still an error.
    #[arg(long, requires = "check")]
    pub ignore_missing: bool,

    /// With --check: print nothing on standard output; the exit status tells the result
    #[arg(long, requires = "check")]
    pub status: bool,

    /// With --check: a checkfile with no properly formatted line is an error
    ///
    /// (An improperly formatted line is always a failure, as in b3sum.)
    #[arg(long, requires = "check")]
    pub strict: bool,
}

/// How every input is hashed.
pub struct Spec {
    pub devices: Devices,
    pub mode: Mode,
    pub read: ReadMode,
    pub seek: u64,
    /// With `--keyed`, standard input holds the key and cannot be hashed.
    pub keyed: bool,
}

/// One hashed input.
pub struct Hashed {
    /// The output stream, positioned at `--seek`.
    pub reader: OutputReader,
    pub bytes: u64,
    pub seconds: f64,
    /// What hashed it (`cpu`, `opencl:0`, `cpu+opencl:1`), and (with `-vv`) why, or each
    /// device's share.
    pub device: String,
    pub why: Option<String>,
}

/// With `-v`: says once per device, on standard error, that a GPU `--backend auto` chose has
/// failed and that its work went to the CPU instead. Called after each input.
pub fn note_failed_devices(global: &Global, out: &mut Out) -> io::Result<()> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NOTED: AtomicUsize = AtomicUsize::new(0);
    if global.verbose == 0 || global.backend != Choice::One(Device::Auto) {
        return Ok(());
    }
    let failed = b3accel::auto::failed_devices();
    let before = NOTED.swap(failed.len(), Ordering::Relaxed);
    for (device, error) in failed.iter().skip(before) {
        out.error(format_args!(
            "--backend auto: {device} failed ({error}); its work was done on the CPU, and the CPU takes its place from now on"
        ))?;
    }
    Ok(())
}

/// Hashes one input on `spec`'s device: the library's `file::Input` reads it (a map with its
/// pages brought in and out in parallel, a small file read whole, or large reads), on the device
/// picked for its size.
pub fn hash_input(input: &Input, spec: &Spec, progress: &Progress) -> io::Result<Hashed> {
    let start = Instant::now();
    let source = match input {
        Input::Error { msg, .. } => return Err(io::Error::other(msg.clone())),
        Input::Stdin if spec.keyed => return Err(io::Error::other("Cannot open `-` in keyed mode")),
        Input::Stdin => file::Input::from_reader(io::stdin().lock()),
        Input::Path(path) => file::Input::open(path)?,
    };
    let picked = match source.from_disk(spec.read) {
        true => spec.devices.pick_from_disk(source.size()),
        false => spec.devices.pick(source.size()),
    };
    let tell = |n| progress.inc(n);
    let options =
        FileOptions { read: spec.read, progress: progress.active().then_some(&tell as &(dyn Fn(u64) + Sync)) };
    let (mut reader, bytes) = source.hash_with(picked.backend.clone(), &spec.mode, &options)?;
    reader.set_position(spec.seek);
    let seconds = start.elapsed().as_secs_f64();
    // A GPU that Auto chose and that failed on this input: the Auto backend hashed it again on
    // the CPU.
    let (device, why) = match picked.auto_gpu {
        Some(gpu) if b3accel::auto::failed_devices().iter().any(|(d, _)| *d == gpu) => {
            ("cpu".to_string(), picked.why().map(|w| format!("{gpu} failed, so the CPU ({w})")))
        }
        _ => (picked.name.clone(), picked.why()),
    };
    Ok(Hashed { reader, bytes, seconds, why, device })
}

/// The mode options of the subcommands that hash in a mode (`subtree`, `merge`), as the default
/// command has them.
#[derive(clap::Args, Debug)]
pub struct ModeArgs {
    /// Use the keyed mode, reading the 32-byte key from stdin
    #[arg(long)]
    pub keyed: bool,

    /// Use the key derivation mode, with the given context string
    #[arg(long, value_name = "CONTEXT", conflicts_with = "keyed")]
    pub derive_key: Option<String>,
}

impl ModeArgs {
    /// The mode asked for; with `--keyed`, the key read from standard input.
    pub fn mode(&self) -> Result<Mode, Fatal> {
        mode_of(self.keyed, self.derive_key.as_deref())
    }
}

/// The mode of `--keyed` (the key read from standard input) or `--derive-key CONTEXT`, or the plain
/// hash.
fn mode_of(keyed: bool, derive_key: Option<&str>) -> Result<Mode, Fatal> {
    Ok(match (keyed, derive_key) {
        (true, _) => Mode::Keyed(read_key()?),
        (false, Some(context)) => Mode::DeriveKey(context.to_string()),
        (false, None) => Mode::Hash,
    })
}

/// Reads the `--keyed` key: exactly 32 bytes on standard input.
fn read_key() -> Result<[u8; KEY_LEN], Fatal> {
    let mut bytes = Vec::with_capacity(KEY_LEN + 1);
    io::stdin()
        .lock()
        .take(KEY_LEN as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Fatal(format!("reading the key from stdin: {e}")))?;
    let key = match bytes.len() {
        n if n < KEY_LEN => Err(Fatal(format!("expected {KEY_LEN} key bytes from stdin, found {n}"))),
        n if n > KEY_LEN => Err(Fatal(format!("read more than {KEY_LEN} key bytes from stdin"))),
        _ => {
            let mut key = [0u8; KEY_LEN];
            key.copy_from_slice(&bytes);
            Ok(key)
        }
    };
    // The key lives on in the `Mode` (which wipes it when dropped); this copy goes now.
    zeroize::Zeroize::zeroize(&mut bytes);
    key
}

/// One hashed input under `--json`.
#[derive(Serialize)]
struct HashRecord<'a> {
    path: Cow<'a, str>,
    hash: output::HexOutput<'a>,
    bytes: u64,
    backend: String,
    seconds: f64,
}

/// One input that could not be hashed, under `--json`.
#[derive(Serialize)]
struct FailedRecord<'a> {
    path: Cow<'a, str>,
    error: String,
}

/// Stops the run: standard output is gone (a closed pipe) or failed.
pub enum Stop {
    Closed,
    Fatal(Fatal),
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Stop::Closed
        } else {
            Stop::Fatal(Fatal(format!("write error: {e}")))
        }
    }
}

/// The exit status once everything is written: 1 when anything failed. A closed standard output
/// ends the run quietly with that status; any other write error is fatal.
pub fn finish(result: Result<(), Stop>, out: &mut Out, failed: bool) -> Outcome {
    let code = if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS };
    match result.and_then(|()| out.flush().map_err(Stop::from)) {
        Ok(()) | Err(Stop::Closed) => Ok(code),
        Err(Stop::Fatal(e)) => Err(e),
    }
}

/// Writes one record into `out`'s buffer; should the buffer have to be written out first, it is
/// written with the progress bar out of the way (as [`Emit::Idle`]'s flush is).
pub fn write_record(out: &mut Out, progress: &Progress, record: &[u8]) -> io::Result<()> {
    if !out.fits(record.len()) {
        progress.suspend(|| out.flush())?;
    }
    out.write(record)
}

/// Whether to hash `inputs` in parallel across inputs: several inputs, and at most one of them
/// standard input (several `-` must read it in order: the first gets everything).
pub fn parallel_ok(inputs: &[&Path]) -> bool {
    inputs.len() > 1 && inputs.iter().filter(|p| **p == Path::new("-")).count() <= 1
}

/// A progress bar over the sizes of the regular files among `paths`, when one is wanted.
pub fn progress_for<'a>(global: &Global, paths: impl Iterator<Item = &'a Path>) -> Progress {
    if !Progress::wanted(global.progress) {
        return Progress::none();
    }
    let total = paths
        .filter(|p| *p != Path::new("-"))
        .filter_map(|p| std::fs::metadata(p).ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum();
    Progress::new(global.progress, total)
}

pub fn run(args: HashArgs, global: &Global) -> Outcome {
    if args.keyed && args.files_from.as_deref() == Some(Path::new("-")) {
        crate::usage_error("--keyed reads the key from standard input, so --files-from cannot read it (-)");
    }
    let devices = crate::choice::open(global)?;
    let inputs = inputs::expand(&Listing {
        files: &args.file,
        files_from: args.files_from.as_deref(),
        recursive: args.recursive,
        zero: args.zero,
    })?;
    if args.raw && inputs.len() > 1 {
        return Err(Fatal("Only one filename can be provided when using --raw".into()));
    }
    let mode = mode_of(args.keyed, args.derive_key.as_deref())?;
    let read = if args.no_mmap { ReadMode::Stream } else { args.read };
    let spec = Spec { devices, mode, read, seek: args.seek, keyed: args.keyed };
    if args.check {
        return crate::check::run(&args, global, &spec, &inputs);
    }

    let paths: Vec<&Path> = inputs.iter().map(Input::path).collect();
    let parallel = parallel_ok(&paths) && rayon::current_num_threads() > 1;
    if global.verbose > 0 && parallel {
        crate::warn(format_args!(
            "{} inputs, hashed in parallel across files on {} threads (output in input order)",
            inputs.len(),
            rayon::current_num_threads()
        ));
    }
    let progress = progress_for(global, paths.iter().copied());
    let mut out = Out::new();
    let mut failed = false;
    let term: &[u8] = if args.zero { b"\0" } else { b"\n" };
    let mut line = Vec::with_capacity(256);
    let result = ordered::run(
        inputs.len(),
        parallel,
        |i| (i, hash_input(&inputs[i], &spec, &progress)),
        |event: Emit<(usize, io::Result<Hashed>)>| -> Result<(), Stop> {
            let (i, result) = match event {
                Emit::Result(r) => r,
                Emit::Idle => return Ok(progress.suspend(|| out.flush())?),
            };
            let path = inputs[i].path();
            line.clear();
            match result {
                Ok(mut h) => {
                    if let Some(why) = &h.why {
                        out.error(format_args!("{}: hashed on {}: {why}", path.to_string_lossy(), h.device))?;
                    }
                    if args.raw {
                        output::write_raw(&mut out, &mut h.reader, args.length)?;
                    } else if global.json {
                        let record = HashRecord {
                            path: path.to_string_lossy(),
                            hash: output::HexOutput::new(&mut h.reader, args.length),
                            bytes: h.bytes,
                            backend: h.device,
                            seconds: h.seconds,
                        };
                        out.json(&record)?;
                    } else if args.no_names {
                        output::write_hex(&mut out, &mut line, &mut h.reader, args.length)?;
                        line.extend_from_slice(term);
                    } else {
                        let (name, escaped) = display_name(path, args.zero);
                        if escaped {
                            line.push(b'\\');
                        }
                        if args.tag {
                            line.extend_from_slice(b"BLAKE3 (");
                            line.extend_from_slice(name.as_bytes());
                            line.extend_from_slice(b") = ");
                            output::write_hex(&mut out, &mut line, &mut h.reader, args.length)?;
                        } else {
                            output::write_hex(&mut out, &mut line, &mut h.reader, args.length)?;
                            line.extend_from_slice(b"  ");
                            line.extend_from_slice(name.as_bytes());
                        }
                        line.extend_from_slice(term);
                    }
                }
                Err(e) => {
                    failed = true;
                    out.error(format_args!("{}: {e}", path.to_string_lossy()))?;
                    if global.json {
                        out.json(&FailedRecord { path: path.to_string_lossy(), error: e.to_string() })?;
                    }
                }
            }
            write_record(&mut out, &progress, &line)?;
            note_failed_devices(global, &mut out)?;
            Ok(())
        },
    );
    progress.finish();
    finish(result, &mut out, failed)
}
