//! The default command's options, and what hashing (hash.rs) and checking (check.rs) share: the
//! devices, mode and read mode every input is hashed with, and one input hashed on them. main.rs
//! hands the options to one or the other (`--check`).

use crate::choice::{Choice, Devices};
use crate::inputs::{self, Input, Listing};
use crate::output::Out;
use crate::progress::Progress;
use crate::{Fatal, Global};
use b3accel::file::{self, FileOptions, ReadMode};
use b3accel::{Device, Mode, OutputReader, KEY_LEN};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
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

/// What hashing and checking do first, before reading any input: open the devices `--backend`
/// names, then list the inputs `args` names (with `--check`, the checkfiles).
pub fn open(args: &HashArgs, global: &Global) -> Result<(Devices, Vec<Input>), Fatal> {
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
    Ok((devices, inputs))
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

impl Spec {
    /// The spec `args` asks for, on `devices`; with `--keyed`, the key read from standard input.
    pub fn new(args: &HashArgs, devices: Devices) -> Result<Spec, Fatal> {
        let mode = mode_of(args.keyed, args.derive_key.as_deref())?;
        let read = if args.no_mmap { ReadMode::Stream } else { args.read };
        Ok(Spec { devices, mode, read, seek: args.seek, keyed: args.keyed })
    }
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
