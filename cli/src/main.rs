//! The `b3accel` binary: the command line of `lib.rs`.

fn main() -> std::process::ExitCode {
    b3accel_cli::main()
}
