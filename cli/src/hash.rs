//! The default command: hash inputs and print one line each, exactly as b3sum does (`--check`
//! is check.rs's, routed there by main.rs).

use crate::inputs::Input;
use crate::ordered::{self, Emit};
use crate::output::{self, display_name, finish, write_record, Out, Stop};
use crate::progress::Progress;
use crate::spec::{self, hash_input, note_failed_devices, HashArgs, Hashed, Spec};
use crate::{Fatal, Global, Outcome};
use serde::Serialize;
use std::borrow::Cow;
use std::io;
use std::path::Path;

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
    let (devices, inputs) = spec::open(&args, global)?;
    if args.raw && inputs.len() > 1 {
        return Err(Fatal("Only one filename can be provided when using --raw".into()));
    }
    let spec = Spec::new(&args, devices)?;

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
