//! `b3accel merge`: the hash of a whole input from the chaining values of its pieces (from
//! `b3accel subtree` or the library's `hazmat`, on any machines and devices), with the output of
//! `b3sum --no-names`. The cover is checked by the library (`hazmat::merge_pieces_root_xof`);
//! this module reads the lines and names the line at fault.

use crate::output::{self, finish, HexOutput, Out};
use crate::spec::ModeArgs;
use crate::{usage_error, Fatal, Global, Outcome};
use b3accel::hazmat::{hash_derive_key_context, merge_pieces_root_xof, Mode, Piece};
use b3accel::{Error, OUT_LEN};
use serde::Serialize;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Print the hash of a whole input from its pieces' chaining values (see `b3accel subtree`)
///
/// Reads PIECES (- for standard input): one line per piece, `OFFSET LENGTH CV` (the piece's byte
/// offset and length in decimal, its chaining value in hex as `b3accel subtree` prints it), in
/// any order; empty lines are skipped. Prints what `b3sum --no-names` prints for the whole input
/// with the same --keyed/--derive-key, -l and --seek (with --json: an object with hash, bytes and
/// pieces).
///
/// Pieces that do not cover the input as BLAKE3's tree requires (a gap, an overlap, a piece that
/// does not start at a multiple of 1024 or is too long for where it starts, a lone piece that is
/// the whole input) and malformed lines are refused with a message naming the line: exit status
/// 1, nothing on standard output. The pieces do not record their mode: merge in the mode they
/// were hashed in (in keyed mode the key comes on standard input, as in b3sum).
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub mode: ModeArgs,

    /// The number of output bytes, before hex encoding
    #[arg(short, long, default_value_t = OUT_LEN as u64, value_name = "LEN")]
    pub length: u64,

    /// The starting output byte offset, before hex encoding
    #[arg(long, default_value_t = 0, value_name = "SEEK")]
    pub seek: u64,

    /// The list of pieces, one `OFFSET LENGTH CV` line each (- for standard input)
    #[arg(value_name = "PIECES")]
    pub pieces: PathBuf,
}

/// The `--json` record.
#[derive(Serialize)]
struct MergeRecord<'a> {
    hash: HexOutput<'a>,
    bytes: u64,
    pieces: usize,
}

pub fn run(args: Args, global: &Global) -> Outcome {
    let from_stdin = args.pieces == Path::new("-");
    if args.mode.keyed && from_stdin {
        usage_error("--keyed reads the key from standard input, so PIECES cannot be - (standard input)");
    }
    let mode = args.mode.mode()?;
    let context_key = match &mode {
        b3accel::Mode::DeriveKey(context) => Some(hash_derive_key_context(context)),
        _ => None,
    };
    let mode = match (&mode, &context_key) {
        (b3accel::Mode::Keyed(key), _) => Mode::KeyedHash(key),
        (_, Some(context_key)) => Mode::DeriveKeyMaterial(context_key),
        _ => Mode::Hash,
    };
    let name = if from_stdin { "standard input".into() } else { args.pieces.to_string_lossy() };
    let mut bytes = Vec::new();
    let read = if from_stdin {
        io::stdin().lock().read_to_end(&mut bytes)
    } else {
        File::open(&args.pieces).and_then(|mut f| f.read_to_end(&mut bytes))
    };
    read.map_err(|e| Fatal(format!("{name}: {e}")))?;
    let (pieces, lines) = parse_pieces(&bytes).map_err(|(line, msg)| Fatal(format!("{name}:{line}: {msg}")))?;
    let mut reader = merge_pieces_root_xof(&pieces, mode).map_err(|e| match e {
        Error::InvalidPiece { index, other, reason } => {
            let also = other.map(|o| format!(" (see line {})", lines[o])).unwrap_or_default();
            Fatal(format!("{name}:{}: {reason}{also}", lines[index]))
        }
        e => Fatal(format!("{name}: {e}")),
    })?;
    reader.set_position(args.seek);

    let mut out = Out::new();
    let written = if global.json {
        let total = pieces.iter().map(|p| p.offset + p.len).max().unwrap_or(0);
        let hash = HexOutput::new(&mut reader, args.length);
        out.json(&MergeRecord { hash, bytes: total, pieces: pieces.len() })
    } else {
        let mut line = Vec::with_capacity(2 * OUT_LEN + 1);
        output::write_hex(&mut out, &mut line, &mut reader, args.length)
            .and_then(|()| {
                line.push(b'\n');
                out.write(&line)
            })
    };
    finish(written.map_err(Into::into), &mut out, false)
}

/// The pieces of a PIECES list, and each one's line number; or the number of the first malformed
/// line and what is wrong with it.
fn parse_pieces(bytes: &[u8]) -> Result<(Vec<Piece>, Vec<usize>), (usize, String)> {
    let mut pieces = Vec::new();
    let mut lines = Vec::new();
    for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let number = i + 1;
        let text = std::str::from_utf8(raw).map_err(|_| (number, "not UTF-8 text".to_string()))?;
        let text = text.strip_suffix('\r').unwrap_or(text);
        if text.trim().is_empty() {
            continue;
        }
        pieces.push(parse_line(text).map_err(|msg| (number, msg))?);
        lines.push(number);
    }
    Ok((pieces, lines))
}

/// One `OFFSET LENGTH CV` line (fields separated by spaces or tabs).
fn parse_line(line: &str) -> Result<Piece, String> {
    let fields: Vec<&str> = line.split_ascii_whitespace().collect();
    let [offset, len, cv] = fields[..] else {
        return Err(format!(
            "expected three fields, OFFSET LENGTH CV (as `b3accel subtree` gives them), found {}",
            fields.len()
        ));
    };
    let offset = number(offset, "OFFSET")?;
    let len = number(len, "LENGTH")?;
    if cv.len() != 2 * OUT_LEN || !cv.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("CV {cv:?} is not a chaining value: {} hex digits", 2 * OUT_LEN));
    }
    let mut value = [0u8; OUT_LEN];
    for (byte, pair) in value.iter_mut().zip(cv.as_bytes().chunks_exact(2)) {
        let text = std::str::from_utf8(pair).map_err(|e| e.to_string())?;
        *byte = u8::from_str_radix(text, 16).map_err(|e| e.to_string())?;
    }
    Ok(Piece { offset, len, cv: value })
}

/// A decimal number of bytes.
fn number(field: &str, what: &str) -> Result<u64, String> {
    if field.is_empty() || !field.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{what} {field:?} is not a decimal number of bytes"));
    }
    field.parse().map_err(|_| format!("{what} {field} is past 2^64 - 1"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_or_say_why() {
        let cv = "ab".repeat(32);
        let p = parse_line(&format!("1024 \t 5 {}", cv.to_uppercase())).unwrap();
        assert_eq!((p.offset, p.len, p.cv), (1024, 5, [0xab; 32]));
        for (line, expect) in [
            ("1 2", "three fields"),
            (&format!("1 2 {cv} x") as &str, "three fields"),
            (&format!("-1 2 {cv}"), "OFFSET"),
            (&format!("1 +2 {cv}"), "LENGTH"),
            (&format!("18446744073709551616 2 {cv}"), "past 2^64"),
            ("0 1 abc", "64 hex digits"),
            (&format!("0 1 {}", "g".repeat(64)), "64 hex digits"),
        ] {
            let err = parse_line(line).unwrap_err();
            assert!(err.contains(expect), "{line:?}: {err}");
        }
    }

    #[test]
    fn blank_lines_are_skipped_and_lines_keep_their_numbers() {
        let cv = "00".repeat(32);
        let text = format!("\n0 1024 {cv}\r\n  \n1024 1 {cv}\n");
        let (pieces, lines) = parse_pieces(text.as_bytes()).unwrap();
        assert_eq!((pieces.len(), lines), (2, vec![2, 4]));
        assert_eq!(parse_pieces(b"0 1 2\n\xff\n").unwrap_err().0, 1);
        let mut text = format!("0 1024 {cv}\n").into_bytes();
        text.extend_from_slice(b"\xff\n");
        assert_eq!(parse_pieces(&text).unwrap_err().0, 2);
    }
}
