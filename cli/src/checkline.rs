//! The checkfile format of `--check`, read as b3sum reads it: lines ([`Lines`]) and what one
//! line says (`parse_line`), with b3sum's rules and error messages. It needs nothing but the
//! standard library and the crate's `OUT_LEN`, so that the fuzz targets (`fuzz/`) can include it
//! as it is.

use b3accel::OUT_LEN;
use std::path::PathBuf;

/// A well-formed checkfile line.
#[derive(Debug, PartialEq, Eq)]
pub struct CheckLine {
    /// The name as the checkfile writes it (escaped, with the leading backslash if it had one):
    /// what the `NAME: OK` line prints.
    pub shown: String,
    /// The file to hash.
    pub path: PathBuf,
    pub expected: [u8; OUT_LEN],
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

/// Undoes b3sum's escaping of a name: `\\`, `\n` and `\r`; any other backslash is an error.
fn unescape(s: &str) -> Result<String, &'static str> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('\\') => out.push('\\'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            _ => return Err("Invalid backslash escape"),
        }
    }
    Ok(out)
}

/// Parses one checkfile line (its terminator already removed), with b3sum's rules and messages.
pub fn parse_line(line: &str) -> Result<CheckLine, &'static str> {
    let Some(first) = line.chars().next() else {
        return Err("Empty line");
    };
    let escaped = first == '\\';
    let rest = if escaped { &line[1..] } else { line };
    // `HASH  NAME`, split at the first double space (the name may contain one), else
    // `BLAKE3 (NAME) = HASH`, split at the last ") = " (the name may contain one).
    let (hash_hex, name) = if let Some((hash, name)) = rest.split_once("  ") {
        (hash, name)
    } else if let Some((name, hash)) = rest.strip_prefix("BLAKE3 (").and_then(|r| r.rsplit_once(") = ")) {
        (hash, name)
    } else {
        return Err("Invalid check line format");
    };
    if hash_hex.len() != 2 * OUT_LEN {
        return Err("Invalid hash length");
    }
    let mut expected = [0u8; OUT_LEN];
    for (byte, pair) in expected.iter_mut().zip(hash_hex.as_bytes().chunks_exact(2)) {
        match (hex_digit(pair[0]), hex_digit(pair[1])) {
            (Some(hi), Some(lo)) => *byte = hi << 4 | lo,
            _ => return Err("Invalid hex"),
        }
    }
    let path = if escaped { unescape(name)? } else { name.to_string() };
    if path.is_empty() {
        return Err("empty file path");
    }
    if path.contains('\0') {
        return Err("Null character in path");
    }
    // Invalid UTF-8 names are printed with U+FFFD, so such a line could match several files.
    if path.contains('\u{FFFD}') {
        return Err("Unicode replacement character in path");
    }
    // Windows: b3accel prints its separators as `/`, so a backslash can only come from a
    // checkfile made elsewhere, where it is part of a name; b3sum refuses it rather than take it
    // for a separator.
    if cfg!(windows) && path.contains('\\') {
        return Err("Backslash in path");
    }
    let shown = if escaped { format!("\\{name}") } else { name.to_string() };
    Ok(CheckLine { shown, path: PathBuf::from(path), expected })
}

/// A checkfile read line by line as b3sum reads it, as the lines come (from a pipe, each line
/// as soon as it is written): each ends at a newline (with `zero`, a NUL) and loses its trailing
/// `\r`/`\n` characters (not with `zero`). Reading stops at the first line that is not UTF-8,
/// or at a read error.
pub struct Lines<R> {
    input: R,
    zero: bool,
    line: Vec<u8>,
    done: bool,
}

/// Why a checkfile's reading stopped before its end.
#[derive(Debug)]
pub enum LineError {
    Read(std::io::Error),
    NotUtf8,
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LineError::Read(e) => e.fmt(f),
            LineError::NotUtf8 => f.write_str("stream did not contain valid UTF-8"),
        }
    }
}

impl<R: std::io::BufRead> Lines<R> {
    pub fn new(input: R, zero: bool) -> Lines<R> {
        Lines { input, zero, line: Vec::new(), done: false }
    }

    /// The next line; `None` at the end, and after an error.
    pub fn next_line(&mut self) -> Option<Result<&str, LineError>> {
        if self.done {
            return None;
        }
        let sep = if self.zero { b'\0' } else { b'\n' };
        self.line.clear();
        loop {
            match self.input.read_until(sep, &mut self.line) {
                Ok(0) => {
                    self.done = true;
                    return None;
                }
                Ok(_) => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.done = true;
                    return Some(Err(LineError::Read(e)));
                }
            }
        }
        let line = self.line.strip_suffix(&[sep]).unwrap_or(&self.line);
        let Ok(line) = std::str::from_utf8(line) else {
            self.done = true;
            return Some(Err(LineError::NotUtf8));
        };
        Some(Ok(if self.zero { line } else { line.trim_end_matches(['\r', '\n']) }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every line of `bytes`, and the error that stopped the reading, if one did.
    pub fn split_lines(bytes: &[u8], zero: bool) -> (Vec<String>, Option<String>) {
        let mut lines = Lines::new(bytes, zero);
        let mut all = Vec::new();
        while let Some(line) = lines.next_line() {
            match line {
                Ok(l) => all.push(l.to_string()),
                Err(e) => return (all, Some(e.to_string())),
            }
        }
        (all, None)
    }

    /// A checkfile line as `b3accel` (and b3sum) writes one for `name`.
    fn line_for(name: &str, hash: &[u8; OUT_LEN], tag: bool) -> String {
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        let escaped = name.contains(['\\', '\n', '\r']);
        let shown = name.replace('\\', "\\\\").replace('\n', "\\n").replace('\r', "\\r");
        let prefix = if escaped { "\\" } else { "" };
        if tag {
            format!("{prefix}BLAKE3 ({shown}) = {hex}")
        } else {
            format!("{prefix}{hex}  {shown}")
        }
    }

    #[test]
    fn lines_split_like_read_line() {
        let (lines, err) = split_lines(b"a\r\n\nb\r\r\nc", false);
        assert_eq!((lines, err), (vec!["a".to_string(), "".into(), "b".into(), "c".into()], None));
        let (lines, err) = split_lines(b"ok\n\xff\nafter\n", false);
        assert_eq!(lines, ["ok"]);
        assert!(err.is_some());
        let (lines, _) = split_lines(b"a\nb\0c\0", true);
        assert_eq!(lines, ["a\nb", "c"]);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

        /// Any line at all: an answer, never a panic.
        #[test]
        fn any_line_parses_or_is_refused(line in any::<String>()) {
            let _ = parse_line(&line);
        }

        /// Any bytes at all split into lines without a panic, and the lines come from the bytes.
        #[test]
        fn any_bytes_split(bytes in prop::collection::vec(any::<u8>(), 0..400), zero in any::<bool>()) {
            let (lines, _) = split_lines(&bytes, zero);
            let total: usize = lines.iter().map(|l| l.len()).sum();
            prop_assert!(total <= bytes.len());
        }

        /// A line is given as soon as its terminator is read, whatever the reads' sizes.
        #[test]
        fn lines_do_not_wait_for_more_input(bytes in prop::collection::vec(any::<u8>(), 0..400), cap in 1usize..20) {
            let whole = split_lines(&bytes, false);
            let small = std::io::BufReader::with_capacity(cap, &bytes[..]);
            let mut lines = Lines::new(small, false);
            let mut got = Vec::new();
            while let Some(Ok(l)) = lines.next_line() {
                got.push(l.to_string());
            }
            prop_assert_eq!(got, whole.0);
        }

        /// What b3accel writes for any name it can check (a line with a name that has no NUL, no
        /// U+FFFD and does not end in CR or LF, which the line reader strips), it reads back.
        #[test]
        fn written_lines_read_back(name in "[^\\x00\u{FFFD}]{1,40}", hash in any::<[u8; 32]>(), tag in any::<bool>()) {
            prop_assume!(!name.ends_with(['\r', '\n']));
            // As in b3sum, a line is split at its first double space before the tagged form is
            // tried, and the tagged form at its last ") = ": names with those cannot be tagged.
            prop_assume!(!(tag && (name.contains(") = ") || name.contains("  "))));
            let line = line_for(&name, &hash, tag);
            let (lines, err) = split_lines(line.as_bytes(), true);
            prop_assert!(err.is_none() && lines.len() == 1);
            let parsed = parse_line(&lines[0]).map_err(|e| TestCaseError::fail(format!("{line:?}: {e}")))?;
            prop_assert_eq!(parsed.path, PathBuf::from(&name));
            prop_assert_eq!(parsed.expected, hash);
        }
    }
}
