//! `-c/--check`: read checkfiles and check every line, with b3sum's output and exit status, plus
//! GNU's `--ignore-missing`, `--status` and `--strict`.
//!
//! A checkfile line is `HASH  NAME` or `BLAKE3 (NAME) = HASH`, with a lowercase 64-digit hash; a
//! line that starts with a backslash has its name escaped (`\\`, `\n`, `\r`). As in b3sum, a
//! malformed line is reported on standard error and counted as a failure, and a checkfile that
//! cannot be opened, or that is not UTF-8, ends the run (exit status 1, no closing WARNING).

use crate::checkline::{parse_line, CheckLine, LineError, Lines};
use crate::inputs::Input;
use crate::ordered::{self, Emit};
use crate::output::{self, finish, write_record, Out, Stop};
use crate::progress::Progress;
use crate::spec::{self, hash_input, note_failed_devices, HashArgs, Spec};
use crate::{Fatal, Global, Outcome};
use b3accel::{Hash, OUT_LEN};
use serde::Serialize;
use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

/// What checking one line came to.
enum Verdict {
    Malformed(&'static str),
    Match,
    Mismatch,
    Unreadable(io::Error),
}

struct Checked {
    verdict: Verdict,
    found: Option<[u8; OUT_LEN]>,
    bytes: u64,
    seconds: f64,
    /// What hashed the file (`cpu`, `cpu+opencl:1`), when it was hashed.
    device: Option<String>,
}

fn check_line(
    line: &Result<CheckLine, &'static str>,
    stdin_is_checkfile: bool,
    spec: &Spec,
    progress: &Progress,
) -> Checked {
    let line = match line {
        Ok(l) => l,
        Err(msg) => {
            return Checked { verdict: Verdict::Malformed(msg), found: None, bytes: 0, seconds: 0.0, device: None }
        }
    };
    let input = if line.path == Path::new("-") {
        if stdin_is_checkfile {
            Input::Error { path: line.path.clone(), msg: "standard input is the checkfile".into() }
        } else {
            Input::Stdin
        }
    } else {
        Input::Path(line.path.clone())
    };
    match hash_input(&input, spec, progress) {
        Ok(mut h) => {
            let mut found = [0u8; OUT_LEN];
            h.reader.fill(&mut found);
            // Hash's equality is constant-time.
            let verdict = if Hash::from_bytes(found) == Hash::from_bytes(line.expected) {
                Verdict::Match
            } else {
                Verdict::Mismatch
            };
            Checked { verdict, found: Some(found), bytes: h.bytes, seconds: h.seconds, device: Some(h.device) }
        }
        Err(e) => Checked { verdict: Verdict::Unreadable(e), found: None, bytes: 0, seconds: 0.0, device: None },
    }
}

fn hex(bytes: &[u8]) -> String {
    let mut v = Vec::with_capacity(bytes.len() * 2);
    output::push_hex(&mut v, bytes);
    String::from_utf8(v).unwrap_or_default()
}

/// A malformed checkfile line under `--json`.
#[derive(Serialize)]
struct MalformedRecord<'a> {
    checkfile: &'a str,
    line: usize,
    ok: bool,
    error: &'a str,
}

/// A checked line under `--json`.
#[derive(Serialize)]
struct CheckRecord<'a> {
    path: Cow<'a, str>,
    ok: bool,
    expected: String,
    hash: Option<String>,
    bytes: u64,
    backend: Option<String>,
    seconds: f64,
    error: Option<String>,
}

/// Counts across all checkfiles.
#[derive(Default)]
struct Tally {
    /// Lines that failed (malformed, unreadable, mismatched): b3sum's closing WARNING count.
    failed: u64,
    /// Failures that are not lines: --strict and --ignore-missing findings.
    other: bool,
}

/// Checks the lines of every checkfile `args` names.
pub fn run(args: HashArgs, global: &Global) -> Outcome {
    let (devices, checkfiles) = spec::open(&args, global)?;
    let spec = Spec::new(&args, devices)?;
    let mut out = Out::new();
    let mut tally = Tally::default();
    for checkfile in &checkfiles {
        match check_file(checkfile, &args, global, &spec, &mut out, &mut tally) {
            Ok(()) => {}
            Err(Stop::Closed) => return finish(Err(Stop::Closed), &mut out, true),
            Err(Stop::Fatal(e)) => {
                out.flush().ok();
                return Err(e);
            }
        }
    }
    if tally.failed > 0 && !args.status {
        let s = if tally.failed == 1 { "" } else { "s" };
        if let Err(e) = out.error(format_args!("WARNING: {} computed checksum{s} did NOT match", tally.failed)) {
            return finish(Err(e.into()), &mut out, true);
        }
    }
    finish(Ok(()), &mut out, tally.failed > 0 || tally.other)
}

/// The most checkfile lines read ahead of the last line answered, per worker thread: enough to
/// keep every thread busy while one slow file is hashed, few enough that any checkfile is read
/// in a little memory.
const WINDOW_PER_THREAD: usize = 16;

/// A checkfile line, numbered from 1, as read and parsed.
type NumberedLine = (usize, Result<CheckLine, &'static str>);

/// Checks the lines of one checkfile as they are read, answering them in order (the lines of a
/// pipe as soon as each has been written and hashed).
fn check_file(
    checkfile: &Input,
    args: &HashArgs,
    global: &Global,
    spec: &Spec,
    out: &mut Out,
    tally: &mut Tally,
) -> Result<(), Stop> {
    let name = checkfile.path().to_string_lossy();
    let input: Box<dyn BufRead> = match checkfile {
        Input::Stdin => Box::new(io::stdin().lock()),
        Input::Path(p) => match File::open(p) {
            Ok(f) => Box::new(BufReader::new(f)),
            Err(e) => return Err(Stop::Fatal(Fatal(format!("{name}: {e}")))),
        },
        Input::Error { msg, .. } => return Err(Stop::Fatal(Fatal(format!("{name}: {msg}")))),
    };
    let stdin_is_checkfile = *checkfile == Input::Stdin;
    // The bar's total grows as lines are read.
    let progress = Progress::new(global.progress, 0);
    let mut lines = Lines::new(input, args.zero);
    let mut stopped: Option<LineError> = None;
    let mut number = 0;
    let next = || -> Option<NumberedLine> {
        let line = match lines.next_line()? {
            Ok(line) => parse_line(line),
            Err(e) => {
                stopped = Some(e);
                return None;
            }
        };
        number += 1;
        if let (true, Ok(l)) = (progress.active(), &line) {
            progress.grow(std::fs::metadata(&l.path).map_or(0, |m| if m.is_file() { m.len() } else { 0 }));
        }
        Some((number, line))
    };
    // Lines naming standard input are hashed by the reading thread, in order: the first takes
    // all of it, as in b3sum.
    let reads_stdin = |(_, line): &NumberedLine| line.as_ref().is_ok_and(|l| l.path == Path::new("-"));
    let threads = rayon::current_num_threads();
    let term: &[u8] = if args.zero { b"\0" } else { b"\n" };
    let (mut well_formed, mut verified) = (0u64, 0u64);
    let mut record = Vec::with_capacity(256);
    let result = ordered::stream(
        threads,
        threads * WINDOW_PER_THREAD,
        next,
        reads_stdin,
        |(number, line): NumberedLine| {
            let checked = check_line(&line, stdin_is_checkfile, spec, &progress);
            (number, line, checked)
        },
        |event: Emit<(usize, Result<CheckLine, &'static str>, Checked)>| -> Result<(), Stop> {
            let (number, line, c) = match event {
                Emit::Result(r) => r,
                Emit::Idle => return Ok(progress.suspend(|| out.flush())?),
            };
            record.clear();
            let (status, reason) = match &c.verdict {
                Verdict::Malformed(msg) => {
                    tally.failed += 1;
                    if !args.status {
                        out.error(msg)?;
                    }
                    if global.json && !args.status {
                        out.json(&MalformedRecord { checkfile: &name, line: number, ok: false, error: msg })?;
                    }
                    return Ok(());
                }
                Verdict::Unreadable(e) if args.ignore_missing && e.kind() == io::ErrorKind::NotFound => {
                    well_formed += 1;
                    return Ok(());
                }
                Verdict::Unreadable(e) => {
                    tally.failed += 1;
                    ("FAILED", Some(e.to_string()))
                }
                Verdict::Mismatch => {
                    tally.failed += 1;
                    ("FAILED", None)
                }
                Verdict::Match => ("OK", None),
            };
            well_formed += 1;
            if reason.is_none() {
                verified += 1;
            }
            if args.status || (args.quiet && status == "OK") {
                return Ok(());
            }
            let Ok(line) = &line else {
                return Ok(());
            };
            if global.json {
                out.json(&CheckRecord {
                    path: line.path.to_string_lossy(),
                    ok: status == "OK",
                    expected: hex(&line.expected),
                    hash: c.found.map(|f| hex(&f)),
                    bytes: c.bytes,
                    backend: c.device.clone(),
                    seconds: c.seconds,
                    error: reason,
                })?;
            } else {
                record.extend_from_slice(line.shown.as_bytes());
                record.extend_from_slice(b": ");
                record.extend_from_slice(status.as_bytes());
                if let Some(reason) = reason {
                    record.extend_from_slice(format!(" ({reason})").as_bytes());
                }
                record.extend_from_slice(term);
            }
            write_record(out, &progress, &record)?;
            note_failed_devices(global, out)?;
            Ok(())
        },
    );
    progress.finish();
    result?;
    if let Some(e) = stopped {
        return Err(Stop::Fatal(Fatal(format!("{name}: {e}"))));
    }
    if args.strict && well_formed == 0 {
        tally.other = true;
        out.error(format_args!("{name}: no properly formatted BLAKE3 checksum lines found"))?;
    } else if args.ignore_missing && well_formed > 0 && verified == 0 && tally.failed == 0 {
        tally.other = true;
        out.error(format_args!("{name}: no file was verified"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: &str = "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85";

    #[test]
    fn untagged_and_tagged_lines() {
        let l = parse_line(&format!("{H}  a  b")).unwrap();
        assert_eq!((l.shown.as_str(), l.path.to_str()), ("a  b", Some("a  b")));
        let l = parse_line(&format!("BLAKE3 (x) = y) = {H}")).unwrap();
        assert_eq!(l.path.to_str(), Some("x) = y"));
        let l = parse_line(&format!("\\{H}  a\\nb")).unwrap();
        assert_eq!((l.shown.as_str(), l.path.to_str()), ("\\a\\nb", Some("a\nb")));
        // An escaped backslash is part of the name on Unix; on Windows, as in b3sum, it is refused.
        let backslash = parse_line(&format!("\\{H}  a\\\\b\\nc"));
        if cfg!(windows) {
            assert_eq!(backslash, Err("Backslash in path"));
        } else {
            let l = backslash.unwrap();
            assert_eq!(l.shown, "\\a\\\\b\\nc");
            assert_eq!(l.path.to_str(), Some("a\\b\nc"));
        }
    }

    #[test]
    fn malformed_lines_say_why() {
        assert_eq!(parse_line(""), Err("Empty line"));
        assert_eq!(parse_line("garbage"), Err("Invalid check line format"));
        assert_eq!(parse_line("abc  x"), Err("Invalid hash length"));
        let upper = H.to_uppercase();
        assert_eq!(parse_line(&format!("{upper}  x")), Err("Invalid hex"));
        assert_eq!(parse_line(&format!("\\{H}  a\\q")), Err("Invalid backslash escape"));
        assert_eq!(parse_line(&format!("\\{H}  a\\")), Err("Invalid backslash escape"));
        assert_eq!(parse_line(&format!("{H}  ")), Err("empty file path"));
        assert_eq!(parse_line(&format!("{H}  a\0b")), Err("Null character in path"));
        assert_eq!(parse_line(&format!("{H}  a\u{FFFD}")), Err("Unicode replacement character in path"));
        // 64 bytes that are not 64 hex digits.
        let wide = "é".repeat(32);
        assert_eq!(parse_line(&format!("{wide}  x")), Err("Invalid hex"));
    }
}
