//! What the bao decoders must do with untrusted bytes, for the property test tests/fuzz_bao.rs and
//! the libFuzzer target fuzz/fuzz_targets/bao_decode.rs: never panic; never return `Ok` with
//! content other than the original's; on an error, release only verified content: the start of
//! what was asked for, up to the node that failed (all of it before that node), and for
//! `decode_into`, that content followed by zeros. Each check panics where a property fails.

use b3accel::bao::{decode, decode_into, decode_outboard, decode_slice, slice, slice_outboard, Error, Order, Outboard};
use std::ops::Range;

/// The content that untrusted bytes claim to encode, its hash and its chunk group log.
pub struct Original<'a> {
    pub data: &'a [u8],
    pub hash: blake3::Hash,
    pub group_log: u8,
}

/// The content bytes a slice of `len` bytes from `start` gives, of content of `size` bytes.
pub fn clip(size: u64, start: u64, len: u64) -> Range<u64> {
    start.min(size)..start.saturating_add(len).min(size)
}

/// The size in a size header (the first 8 bytes), if there are 8.
fn header(bytes: &[u8]) -> Option<u64> {
    bytes.first_chunk::<8>().map(|h| u64::from_le_bytes(*h))
}

/// Checks a streaming decode that asked for the original's content bytes `want`, and by the size
/// it read would release `release`: its `result`, and `out`, what it wrote.
fn check(what: &str, data: &[u8], want: Range<u64>, release: Range<u64>, result: Result<u64, Error>, out: &[u8]) {
    match result {
        Ok(n) => {
            let want = &data[want.start as usize..want.end as usize];
            assert!(
                n == out.len() as u64 && out == want,
                "{what}: Ok with {n} bytes, not the {} asked for",
                want.len()
            );
        }
        Err(e) => {
            assert!(!matches!(e, Error::Io(_) | Error::Device(_)), "{what}: {e}");
            let from = release.start as usize;
            let verified = out.is_empty() || data.get(from..from.saturating_add(out.len())) == Some(out);
            assert!(verified, "{what}: {e}, but {} bytes from byte {from} that are not the content", out.len());
            assert!(out.len() as u64 <= release.end - release.start, "{what}: {e}, released past the range");
            if let Error::Corrupt { content, .. } = e {
                let before = content.clamp(release.start, release.end) - release.start;
                assert_eq!(out.len() as u64, before, "{what}: {e}: not all the content before it released");
            }
        }
    }
}

/// Decodes `encoded`, given as a combined encoding of the original, with `decode` and
/// `decode_into`, then slices it at `start`, `len` and decodes the slice (see [`check_slice`]).
pub fn check_encoding(o: &Original, encoded: &[u8], start: u64, len: u64) {
    let k = o.group_log;
    let size = header(encoded);
    let mut out = Vec::new();
    let result = decode(encoded, &o.hash, k, &mut out);
    check("decode", o.data, 0..o.data.len() as u64, 0..size.unwrap_or(0), result, &out);

    // decode_into takes the output the header asks for: one of a plausible size.
    if let Some(size) = size.filter(|&s| s <= 2 * o.data.len() as u64 + (1 << 16)) {
        let mut whole = vec![0xa5u8; size as usize];
        match decode_into(encoded, &o.hash, k, &mut whole) {
            Ok(()) => assert!(whole == o.data, "decode_into: Ok with content that differs"),
            Err(e) => {
                assert!(matches!(e, Error::Corrupt { .. } | Error::Truncated { .. }), "decode_into: {e}");
                // The content up to a point, then zeros: nothing unverified and nothing left over.
                let end = whole.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
                assert!(o.data.get(..end) == Some(&whole[..end]), "decode_into: {e}, unverified bytes before {end}");
                if let Error::Corrupt { content, .. } = e {
                    assert!(end as u64 <= content, "decode_into: {e}, bytes released from {content} on");
                    let before = &whole[..content as usize];
                    assert!(o.data.get(..content as usize) == Some(before), "decode_into: {e}, not all before");
                }
            }
        }
    }

    if let Ok(s) = slice(encoded, k, start, len) {
        check_slice(o, start, len, &s);
    }
}

/// Decodes `s`, given as a slice of the original of `len` bytes from `start`, with
/// `decode_slice`.
pub fn check_slice(o: &Original, start: u64, len: u64, s: &[u8]) {
    let mut out = Vec::new();
    let result = decode_slice(s, &o.hash, o.group_log, start, len, &mut out);
    let want = clip(o.data.len() as u64, start, len);
    let release = clip(header(s).unwrap_or(0), start, len);
    check(&format!("decode_slice {start}+{len}"), o.data, want, release, result, &out);
}

/// Reads `file` as an outboard of the original in `order` and, where it reads, decodes `content`
/// (given as the original's) with it, then slices the two at `start`, `len` and decodes the slice.
pub fn check_outboard(o: &Original, order: Order, file: &[u8], content: &[u8], start: u64, len: u64) {
    let Ok(ob) = Outboard::from_bytes(file, o.group_log, order) else { return };
    let mut out = Vec::new();
    let result = decode_outboard(content, &ob, &o.hash, &mut out);
    check(&format!("decode_outboard {order:?}"), o.data, 0..o.data.len() as u64, 0..ob.tree().size(), result, &out);
    if let Ok(s) = slice_outboard(content, &ob, start, len) {
        check_slice(o, start, len, &s);
    }
}
