//! Standard output: the buffered writer, file-name escaping, hex and raw output, and the
//! `--json` records (serde types, written by serde_json, so that every number prints alike).

use crate::progress::Progress;
use crate::{Fatal, Outcome};
use b3accel::OutputReader;
use serde::{Serialize, Serializer};
use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;
use std::io::{self, BufWriter, Stdout, Write};
use std::path::Path;
use std::process::ExitCode;

/// Buffered standard output. Whole records (lines) are written into the buffer, and the buffer
/// is written out by [`Out::flush`] (called whenever the run would wait for the next input:
/// see `ordered::Emit::Idle`), or when the next record does not fit, so that a process stopped
/// at any point (a signal, a closed pipe, a crash) has written every line it finished except
/// those of a batch it was writing at that moment, and no partial short line. A write per
/// line, under the results' lock, held up `-r` over many small files (docs/performance.md). No
/// signal handler is installed: it could add only that batch, and one that writes could block on
/// a full pipe and keep SIGTERM from ending the process. Anything written to standard error goes
/// through [`Out::error`], which flushes first, so the two streams keep the order b3sum gives
/// them.
pub struct Out {
    w: BufWriter<Stdout>,
}

impl Out {
    pub fn new() -> Out {
        Out { w: BufWriter::with_capacity(64 * 1024, io::stdout()) }
    }

    pub fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.w.write_all(bytes)
    }

    /// Whether `len` more bytes fit in the buffer (else writing them writes out the buffer first).
    pub fn fits(&self, len: usize) -> bool {
        self.w.capacity() - self.w.buffer().len() >= len
    }

    /// Writes `record` as one line of JSON.
    pub fn json(&mut self, record: &impl Serialize) -> io::Result<()> {
        serde_json::to_writer(&mut self.w, record)?;
        self.w.write_all(b"\n")
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }

    /// `b3accel: MSG` on standard error, after what is already in the stdout buffer.
    pub fn error(&mut self, msg: impl std::fmt::Display) -> io::Result<()> {
        self.w.flush()?;
        crate::warn(msg);
        Ok(())
    }
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
/// written with the progress bar out of the way (as `ordered::Emit::Idle`'s flush is).
pub fn write_record(out: &mut Out, progress: &Progress, record: &[u8]) -> io::Result<()> {
    if !out.fits(record.len()) {
        progress.suspend(|| out.flush())?;
    }
    out.write(record)
}

/// A file name as b3sum prints it: the lossy UTF-8 form (on Windows with every `\` turned into
/// `/`, as b3sum does there), with `\`, newline and carriage return escaped as `\\`, `\n` and
/// `\r`; the flag says whether anything was escaped (the line then starts with a backslash).
/// With `zero` (`-z`) nothing is escaped, as in GNU's `--zero`.
pub fn display_name(path: &Path, zero: bool) -> (Cow<'_, str>, bool) {
    display_name_on(path, zero, cfg!(windows))
}

/// [`display_name`], with Windows' separator rule or without it.
fn display_name_on(path: &Path, zero: bool, windows: bool) -> (Cow<'_, str>, bool) {
    let mut name = path.to_string_lossy();
    if windows && name.contains('\\') {
        name = Cow::Owned(name.replace('\\', "/"));
    }
    if zero || !name.contains(['\\', '\n', '\r']) {
        return (name, false);
    }
    let mut escaped = String::with_capacity(name.len() + 8);
    for c in name.chars() {
        match c {
            '\\' => escaped.push_str("\\\\"),
            '\n' => escaped.push_str("\\n"),
            '\r' => escaped.push_str("\\r"),
            c => escaped.push(c),
        }
    }
    (Cow::Owned(escaped), true)
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Lowercase hex of `bytes` appended to `out`.
pub fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    out.reserve(bytes.len() * 2);
    for b in bytes {
        out.push(HEX[(b >> 4) as usize]);
        out.push(HEX[(b & 15) as usize]);
    }
}

/// Output bytes are produced and written in pieces of this size, so that any `--length` runs
/// in constant memory.
const PIECE: usize = 16 * 1024;
/// Outputs up to this many bytes are produced on the stack.
const SHORT: usize = 128;

/// Writes `len` output bytes from `reader` as lowercase hex. Short outputs (the usual 32 bytes)
/// go through `line`, the record being assembled; long ones are streamed.
pub fn write_hex(out: &mut Out, line: &mut Vec<u8>, reader: &mut OutputReader, len: u64) -> io::Result<()> {
    if len <= SHORT as u64 {
        // The usual case (32 bytes): no large buffer to clear for every input.
        let mut bytes = [0u8; SHORT];
        let bytes = &mut bytes[..len as usize];
        reader.fill(bytes);
        push_hex(line, bytes);
        return Ok(());
    }
    let mut bytes = vec![0u8; PIECE];
    let mut left = len;
    while left > 0 {
        let take = left.min(PIECE as u64) as usize;
        reader.fill(&mut bytes[..take]);
        push_hex(line, &bytes[..take]);
        left -= take as u64;
        if line.len() >= PIECE {
            out.write(line)?;
            line.clear();
        }
    }
    Ok(())
}

/// Writes `len` raw output bytes from `reader`.
pub fn write_raw(out: &mut Out, reader: &mut OutputReader, len: u64) -> io::Result<()> {
    let mut bytes = vec![0u8; len.min(PIECE as u64) as usize];
    let mut left = len;
    while left > 0 {
        let take = left.min(PIECE as u64) as usize;
        reader.fill(&mut bytes[..take]);
        out.write(&bytes[..take])?;
        left -= take as u64;
    }
    Ok(())
}

/// `len` output bytes of a reader as a JSON string of lowercase hex, produced piece by piece as
/// serde_json writes it, so that any `--length` takes constant memory. Serialize it once: it
/// reads the bytes from the reader as it goes.
pub struct HexOutput<'a> {
    reader: RefCell<&'a mut OutputReader>,
    len: u64,
}

impl<'a> HexOutput<'a> {
    pub fn new(reader: &'a mut OutputReader, len: u64) -> HexOutput<'a> {
        HexOutput { reader: RefCell::new(reader), len }
    }
}

impl Serialize for HexOutput<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&HexPieces(self))
    }
}

/// The hex of a [`HexOutput`], written to a formatter in pieces.
struct HexPieces<'b, 'a>(&'b HexOutput<'a>);

impl fmt::Display for HexPieces<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut reader = self.0.reader.borrow_mut();
        let mut bytes = [0u8; 1024];
        let mut hex = Vec::with_capacity(2 * bytes.len());
        let mut left = self.0.len;
        while left > 0 {
            let take = left.min(bytes.len() as u64) as usize;
            reader.fill(&mut bytes[..take]);
            hex.clear();
            push_hex(&mut hex, &bytes[..take]);
            f.write_str(std::str::from_utf8(&hex).map_err(|_| fmt::Error)?)?;
            left -= take as u64;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_escaped_as_b3sum_does() {
        for windows in [false, true] {
            assert_eq!(display_name_on(Path::new("plain"), false, windows), ("plain".into(), false));
            let (n, esc) = display_name_on(Path::new("a\nb"), true, windows);
            assert_eq!((n.as_ref(), esc), ("a\nb", false));
        }
        let (n, esc) = display_name_on(Path::new("a\\b\nc\rd"), false, false);
        assert_eq!((n.as_ref(), esc), ("a\\\\b\\nc\\rd", true));
        // On Windows a backslash is a separator, printed as `/`, and so never escaped.
        let (n, esc) = display_name_on(Path::new("dir\\a\nb"), false, true);
        assert_eq!((n.as_ref(), esc), ("dir/a\\nb", true));
        let (n, esc) = display_name_on(Path::new("dir\\sub\\f"), false, true);
        assert_eq!((n.as_ref(), esc), ("dir/sub/f", false));
        assert_eq!(display_name(Path::new("x\\y"), false).0, if cfg!(windows) { "x/y" } else { "x\\\\y" });
    }

    #[test]
    fn json_hex_streams_the_whole_output() {
        let mut h = b3accel::Hasher::new();
        h.update(b"abc").unwrap();
        for len in [0u64, 32, 1024, 3000] {
            let mut reader = h.finalize_xof().unwrap();
            let json = serde_json::to_string(&HexOutput::new(&mut reader, len)).unwrap();
            let mut expected = vec![0u8; len as usize];
            blake3::Hasher::new().update(b"abc").finalize_xof().fill(&mut expected);
            let mut hex = Vec::new();
            push_hex(&mut hex, &expected);
            assert_eq!(json, format!("\"{}\"", String::from_utf8(hex).unwrap()), "len {len}");
        }
    }

    #[test]
    fn hex_is_lowercase() {
        let mut v = Vec::new();
        push_hex(&mut v, &[0x00, 0xab, 0xff, 0x10]);
        assert_eq!(v, b"00abff10");
    }
}
