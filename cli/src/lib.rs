//! `b3accel`: a drop-in for `b3sum` that also picks the device it hashes on.
//!
//! The binary (`main.rs`) calls [`main`]; a program that registers a backend of its own first
//! (`b3accel::register_backend`) and then calls [`main`] is the command line with that backend
//! in `devices`, `--backend` and `bench`.
//!
//! With no subcommand it hashes (or, with `--check`, checks) exactly as `b3sum` 1.8.7 does: the
//! same standard output and the same exit statuses. Subcommands add what `b3sum` has no room for.
//!
//! Each subcommand is a module with a clap `Args` struct and a `run(args, &Global) -> Outcome`
//! function, declared by one line in the `subcommands!` list below.

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use std::fmt;
use std::process::ExitCode;

mod check;
mod checkline;
mod choice;
mod hash;
mod inputs;
mod ordered;
mod output;
mod progress;
mod spec;

/// Declares the subcommands, one line each: `Variant(module::ArgsType) => run,` declares
/// `mod module;`, adds the clap subcommand (named after the variant, its help from `ArgsType`'s
/// doc comment) and dispatches to `run(args, &Global) -> Outcome` (a function, or a closure that
/// adapts a module's own signature).
macro_rules! subcommands {
    ($($variant:ident($module:ident::$args:ident) => $run:expr,)*) => {
        $(mod $module;)*

        #[derive(Subcommand)]
        enum Command {
            $($variant($module::$args),)*
        }

        impl Command {
            fn run(self, global: &Global) -> Outcome {
                match self {
                    $(Command::$variant(args) => ($run)(args, global),)*
                }
            }
        }
    };
}

// To add a subcommand, add its line here and write cli/src/NAME.rs with a
// `#[derive(clap::Args)]` struct (its doc comment is the help) and
// `pub fn run(args: Args, global: &Global) -> Outcome`. Helpers to share: `choice::open` (what
// `--backend` names, opened, with the `-v` note; `pick` gives each input's backend), `output::Out` (buffered stdout), `warn`, and
// `Fatal` for errors that end the command. `--backend`, `--num-threads`, `--json`, `--progress`
// and `-v` are global (in `Global`); the rayon pool is already sized by `--num-threads` when
// `run` is called. A subcommand may define its own option of the same name: it then shadows the
// global one for that subcommand (as merkle's `--backend/-b` does).
subcommands! {
    Devices(devices::Args) => devices::run,
    Merkle(merkle::MerkleArgs) => |args, _: &Global| Ok(merkle::run(&args)),
    Subtree(subtree::Args) => subtree::run,
    Merge(merge::Args) => merge::run,
    Bench(bench::Args) => bench::run,
    Bao(bao::Args) => bao::run,
}

const NAME: &str = "b3accel";

/// The help text after the options, naming the subcommands that exist.
fn after_help(cmd: &clap::Command, long: bool) -> String {
    let names: Vec<&str> = cmd.get_subcommands().map(|s| s.get_name()).collect();
    let list = names.join(", ");
    let first = names.first().copied().unwrap_or("devices");
    if !long {
        return format!(
            "A file named like a subcommand ({list}) is hashed when written as a path \
             (`b3accel ./{first}`), after `--` (`b3accel -- {first}`), or anywhere but first. \
             `--help` says more."
        );
    }
    format!(
        "A subcommand is recognised only as the first argument (`b3accel {first} --help`). A file \
         whose name is also a subcommand's ({list}) is hashed when it is written as a path \
         (`b3accel ./{first}`), after `--` (`b3accel -- {first}`), or anywhere but first.\n\n\
         Exit status: 0 when every input was hashed (with --check: every line matched), 1 when \
         any input failed or did not match (or the device is not available), 2 for a usage \
         error.\n\n\
         Beyond b3sum: --backend, -r/--recursive, --files-from, -z/--zero, --json, --progress, \
         -v, the subcommands, and for --check the GNU options --ignore-missing, --status and \
         --strict. Many small files are hashed in parallel across files; the output always \
         follows the input order."
    )
}

/// Hash files with BLAKE3 on any device: a drop-in for b3sum
#[derive(Parser)]
#[command(
    name = NAME,
    version,
    max_term_width = 100,
    args_conflicts_with_subcommands = true,
    subcommand_help_heading = "Subcommands",
    disable_help_subcommand = true,
    group(clap::ArgGroup::new("inputs").multiple(true).args(["file", "files_from"])),
)]
struct Cli {
    #[command(flatten)]
    hash: spec::HashArgs,

    #[command(flatten)]
    global: Global,

    #[command(subcommand)]
    command: Option<Command>,
}

/// When to draw the `--progress` bar.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ProgressWhen {
    /// When standard error is a terminal and the work lasts more than a second.
    Auto,
    /// Always (on standard error, even when it is not a terminal).
    Always,
    /// Never.
    Never,
}

/// Options that every command takes.
#[derive(clap::Args, Clone, Debug)]
pub(crate) struct Global {
    /// The device to hash on: auto, cpu, opencl[:N], wgpu[:N], a list such as cpu,opencl:1, or all
    ///
    /// `auto` chooses per input: inputs under 4 MiB are hashed on the CPU, larger ones on the
    /// device measured fastest at their size (a hardware GPU, never a software one); `-vv` shows
    /// each choice. A list hashes each large input on all its devices at once (smaller ones on
    /// its first device; `-v` says from what size); `all` is the list of every hardware device
    /// (the CPU and every GPU that is not a software one, each once). `b3accel devices` lists the devices of
    /// this machine. A device that is not there is an error (exit status 1).
    #[arg(long, value_name = "DEVICE", default_value = "auto", global = true)]
    pub backend: choice::Choice,

    /// The maximum number of threads to use
    ///
    /// By default, this is the number of logical cores. If this flag is omitted, or if its value
    /// is 0, RAYON_NUM_THREADS is also respected. 1 hashes everything on the calling thread.
    /// Values above 1024 are treated as 1024.
    #[arg(long, value_name = "NUM", global = true)]
    pub num_threads: Option<usize>,

    /// Print one JSON object per input (path, hash, bytes, backend, seconds) instead of lines
    ///
    /// An input that fails gives an object with an "error" member. Names that are not UTF-8 are
    /// shown with U+FFFD in place of the invalid bytes. With --check: one object per checked
    /// line.
    #[arg(long, global = true)]
    pub json: bool,

    /// Draw a progress bar on standard error: auto, always or never
    ///
    /// `auto` (the default) draws it only when standard error is a terminal and the work lasts
    /// more than a second; `--progress` alone means always.
    #[arg(
        long,
        value_name = "WHEN",
        value_enum,
        num_args = 0..=1,
        require_equals = true,
        default_value = "auto",
        default_missing_value = "always",
        global = true
    )]
    pub progress: ProgressWhen,

    /// Say on standard error which device is used and why (-vv: for each input, and let GPU
    /// drivers' own start-up messages through)
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
}

/// What a command returns: its exit status, or a fatal error (printed as `b3accel: ...`, exit
/// status 1).
pub(crate) type Outcome = Result<ExitCode, Fatal>;

/// An error that ends the command.
#[derive(Debug)]
pub(crate) struct Fatal(pub String);

impl fmt::Display for Fatal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<b3accel::Error> for Fatal {
    fn from(e: b3accel::Error) -> Self {
        Fatal(e.to_string())
    }
}

impl From<std::io::Error> for Fatal {
    fn from(e: std::io::Error) -> Self {
        Fatal(e.to_string())
    }
}

/// Writes `b3accel: MSG` on standard error. Callers that also write standard output flush it
/// first (see `output::Out::error`), so that the two streams keep their relative order. It holds
/// the library's stderr lock while it writes: a GPU driver starting on another thread (the
/// library keeps its chatter off stderr by pointing descriptor 2 at /dev/null meanwhile) cannot
/// swallow the message, and lines from different threads do not interleave.
pub(crate) fn warn(msg: impl fmt::Display) {
    use std::io::Write;
    let _held = b3accel::stderr::lock();
    let _ = writeln!(std::io::stderr().lock(), "{NAME}: {msg}");
}

/// Reports a `B3ACCEL_CPU` that names no CPU kernel, or a level this CPU lacks, as a warning on
/// standard error. The run goes on with the kernel the library then uses (every kernel gives the
/// same bytes), so standard output and the exit status stay exactly b3sum's; the variable is
/// b3accel's own, and a script that runs b3sum's commands must not fail over it.
fn check_cpu_env() {
    if let Err(e) = b3accel::cpu::CpuBackend::from_env() {
        warn(format_args!("{e}; using the {} kernel", b3accel::cpu::CpuBackend::new().kernel()));
    }
}

/// Ends the process with a usage error (exit status 2), as clap does for the errors it finds.
pub(crate) fn usage_error(msg: impl fmt::Display) -> ! {
    Cli::command().error(clap::error::ErrorKind::ArgumentConflict, msg).exit()
}

/// The most threads `--num-threads` starts.
const MAX_THREADS: usize = 1024;

/// Sets up the global rayon pool as b3sum does: `--num-threads N` threads, or rayon's default
/// (the number of logical cores, or RAYON_NUM_THREADS). With one thread the library never hands
/// work to the pool, so everything runs on the calling thread.
fn init_threads(num_threads: Option<usize>) -> Result<(), Fatal> {
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(n) = num_threads.filter(|&n| n > 0) {
        builder = builder.num_threads(n.min(MAX_THREADS));
    }
    builder.build_global().map_err(|e| Fatal(format!("cannot start the thread pool: {e}")))
}

/// Runs the command line on this process's arguments, and returns its exit status.
///
/// ```no_run
/// fn main() -> std::process::ExitCode {
///     // Register any backend of your own here (`b3accel::register_backend`), then:
///     b3accel_cli::main()
/// }
/// ```
pub fn main() -> ExitCode {
    // A process started to list devices for another b3accel does that alone.
    choice::serve_listing();
    let cmd = Cli::command();
    let (short, long) = (after_help(&cmd, false), after_help(&cmd, true));
    let matches = cmd.after_help(short).after_long_help(long).get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    if let Err(e) = init_threads(cli.global.num_threads) {
        warn(e);
        return ExitCode::FAILURE;
    }
    check_cpu_env();
    // -vv: let GPU drivers' own messages through (the library keeps them off stderr otherwise).
    b3accel::stderr::show_driver_messages(cli.global.verbose > 1);
    let outcome = match cli.command {
        Some(command) => command.run(&cli.global),
        None if cli.hash.check => check::run(cli.hash, &cli.global),
        None => hash::run(cli.hash, &cli.global),
    };
    // The devices' listing this run left for later (a fresh machine), now that the inputs are done.
    choice::finish();
    let code = match outcome {
        Ok(code) => code,
        Err(e) => {
            warn(e);
            ExitCode::FAILURE
        }
    };
    if b3accel::opening_in_background() {
        leave_now(code);
    }
    code
}

/// Ends the process while a device list's GPU is still opening in the background (the CPU
/// finished first), without waiting for it. The normal exit would run the driver's exit
/// handlers under the thread still inside it, which has crashed NVIDIA's drivers; waiting
/// (`b3accel::settle`) would add the rest of the GPU's start (docs/performance.md) to a run
/// that needs nothing from it. So on Unix the output is flushed and the process leaves without
/// exit handlers; elsewhere it waits.
fn leave_now(code: ExitCode) -> ! {
    use std::io::Write;
    let status = if code == ExitCode::SUCCESS { 0 } else { 1 };
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    #[cfg(unix)]
    // SAFETY: `_exit` ends the process at once; everything b3accel writes is flushed above
    // (files it writes are closed by the time `main` returns here).
    unsafe {
        libc::_exit(status)
    }
    #[cfg(not(unix))]
    {
        b3accel::settle();
        std::process::exit(status)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn clap_definition_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
