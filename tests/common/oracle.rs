//! A model of what upstream `b3sum` prints when it hashes, computed with the `blake3` crate: the
//! command-line tests compare `b3accel` with it where no `b3sum` binary is found. It covers the
//! hashing options (`--tag`, `--no-names`, `--raw`, `--length`/`-l`, `--seek`, `--keyed`,
//! `--derive-key`, `--num-threads`, `--no-mmap`, `--`), standard input, and files that cannot be
//! read (no line, exit status 1); anything else (`--check`, usage errors, names b3sum escapes) it
//! declines, with `None`.

use std::ffi::OsStr;
use std::path::Path;

/// What b3sum would do: its standard output and exit status.
pub struct Expected {
    pub stdout: Vec<u8>,
    pub code: i32,
}

/// The largest output the model writes (more is declined: the tests never ask for it).
const MAX_OUTPUT: u64 = 1 << 20;

/// b3sum's standard output and exit status for `args` run in `dir` with `stdin`, where the model
/// covers them.
pub fn b3sum(dir: &Path, args: &[&OsStr], stdin: &[u8]) -> Option<Expected> {
    let mut args = args.iter().map(|a| a.to_str());
    let (mut tag, mut no_names, mut raw, mut keyed) = (false, false, false, false);
    let (mut length, mut seek, mut context) = (32u64, 0u64, None::<String>);
    let mut files: Vec<String> = Vec::new();
    let mut options_done = false;
    while let Some(arg) = args.next() {
        let arg = arg?;
        if options_done || arg == "-" || !arg.starts_with('-') {
            files.push(arg.to_string());
            continue;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (arg, None),
        };
        let mut value = || inline.clone().or_else(|| args.next().flatten().map(str::to_string));
        match name {
            "--" => options_done = true,
            "--tag" => tag = true,
            "--no-names" => no_names = true,
            "--raw" => raw = true,
            "--keyed" => keyed = true,
            "--no-mmap" => {}
            "--num-threads" => {
                value()?.parse::<usize>().ok()?;
            }
            "--length" | "-l" => length = value()?.parse().ok()?,
            "--seek" => seek = value()?.parse().ok()?,
            "--derive-key" => context = Some(value()?),
            _ => return None,
        }
    }
    if (keyed && (context.is_some() || files.is_empty())) || length > MAX_OUTPUT {
        return None;
    }
    seek.checked_add(length)?;
    let mut stdin = stdin;
    let hasher = if keyed {
        let key: [u8; 32] = stdin.try_into().ok()?;
        stdin = &[];
        blake3::Hasher::new_keyed(&key)
    } else if let Some(c) = &context {
        blake3::Hasher::new_derive_key(c)
    } else {
        blake3::Hasher::new()
    };
    if files.is_empty() {
        files.push("-".into());
    }
    if raw && files.len() > 1 {
        return None;
    }
    let (mut stdout, mut code) = (Vec::new(), 0);
    for name in &files {
        if name.contains(['\\', '\n', '\r']) || (keyed && name == "-") {
            return None;
        }
        let data = if name == "-" {
            std::mem::take(&mut stdin).to_vec()
        } else {
            match std::fs::read(dir.join(name)) {
                Ok(d) => d,
                Err(_) => {
                    code = 1;
                    continue;
                }
            }
        };
        let mut reader = hasher.clone().update(&data).finalize_xof();
        reader.set_position(seek);
        let mut out = vec![0u8; length as usize];
        reader.fill(&mut out);
        if raw {
            stdout.extend_from_slice(&out);
            continue;
        }
        let hex: String = out.iter().map(|b| format!("{b:02x}")).collect();
        let line = if no_names {
            format!("{hex}\n")
        } else if tag {
            format!("BLAKE3 ({name}) = {hex}\n")
        } else {
            format!("{hex}  {name}\n")
        };
        stdout.extend_from_slice(line.as_bytes());
    }
    Some(Expected { stdout, code })
}
