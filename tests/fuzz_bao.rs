//! Property tests (fuzzing on stable Rust) of the bao module against its oracles, the `bao` 0.13
//! and `bao-tree` 0.17 crates: for random content sizes (around chunk and group boundaries, group
//! counts that are no power of two, now and then up to 4 MiB), group logs 0 to 6 and random and
//! edge byte ranges, outboards in both orders, combined encodings and slices byte for byte on a
//! random backend, and every decoder giving the content back. Then the decoders fuzzed:
//! encodings, outboards, content and slices with bits flipped, cut short, lengthened, with a
//! changed size field or replaced by garbage, some past the decoders' 16 MiB window, never make
//! one panic, return content that differs or release a byte that did not verify
//! (tests/support/bao_untrusted.rs). `B3ACCEL_FUZZ_SECONDS` runs them for longer.

mod common;
#[path = "support/bao_oracle.rs"]
mod oracle;
#[path = "support/bao_untrusted.rs"]
mod untrusted;

use b3accel::bao::{
    decode, decode_into, decode_outboard, decode_slice, encode_with, outboard_with, slice, slice_outboard, Error, Order,
};
use bao_tree::io::outboard::{PostOrderMemOutboard, PreOrderMemOutboard};
use bao_tree::{BlockSize, ChunkRanges};
use common::fuzz;
use oracle::{bao_tree_response, slice_chunks, CHUNK};
use proptest::prelude::*;
use std::io::{Cursor, Read};
use untrusted::{check_encoding, check_outboard, check_slice, clip, Original};

/// The largest content of most cases: 16 pieces of the parallel walk (256 KiB each).
const MAX_SIZE: u64 = 4 << 20;
/// The decoders' window: the most content they read ahead and check at once (decode.rs).
const WINDOW: u64 = 16 << 20;
/// The largest content hashed on a software GPU, which takes seconds per MiB.
const SOFTWARE_GPU_MAX: u64 = 256 << 10;

/// A group log and a content size, biased to the boundaries of its groups of 2^k chunks: a group
/// count (mostly no power of two) and a couple of bytes either way, a chunk count and a byte
/// either way, a power of two of groups and a byte either way, anything below 300 KB, and now and
/// then anything up to 4 MiB.
fn size() -> impl Strategy<Value = (u8, u64)> {
    (0u8..=6).prop_flat_map(|k| {
        let g = CHUNK << k;
        let size = prop_oneof![
            3 => (0u64..=40, -2i64..=2).prop_map(move |(n, d)| (n * g).saturating_add_signed(d)),
            2 => (0u64..=300, -1i64..=1).prop_map(|(c, d)| (c * CHUNK).saturating_add_signed(d)),
            2 => (0u32..=12, -1i64..=1).prop_map(move |(b, d)| (g << b).min(MAX_SIZE).saturating_add_signed(d)),
            2 => 0u64..=300_000,
            1 => 0u64..=MAX_SIZE,
        ];
        (Just(k), size)
    })
}

/// What picks a byte range (see [`range`]).
type RangePick = (u8, u64, u64);

/// A byte range `(start, len)` of content of `size` bytes in groups of 2^`k` chunks, of the kind
/// `kind` picks, made from `a` and `b`: empty, all of it (or to 2^64), from the end or past it,
/// the last bytes, from a group or chunk edge (or a byte or two before), ending past 2^64, or
/// anywhere.
fn range(size: u64, k: u8, (kind, a, b): RangePick) -> (u64, u64) {
    let g = CHUNK << k;
    let edge = |unit: u64| (a % (size / unit + 2) * unit).saturating_sub(b % 3);
    match kind % 8 {
        0 => (a % (size + 2), 0),
        1 => (0, if a % 2 == 0 { size } else { u64::MAX }),
        2 => (size + a % 5000, b % 3000),
        3 => (size.saturating_sub(1 + a % 3), 1 + b % 5),
        4 => (edge(g), 1 + b % (2 * g)),
        5 => (edge(CHUNK), 1 + b % (3 * CHUNK)),
        6 => (u64::MAX - a % 100, b),
        _ => (a % (size + 1), b % (size + 2)),
    }
}

fn range_pick() -> impl Strategy<Value = RangePick> {
    (any::<u8>(), any::<u64>(), any::<u64>())
}

/// A failed call of the bao module as a failed case.
fn fail(what: &str) -> impl Fn(Error) -> TestCaseError + '_ {
    move |e| TestCaseError::fail(format!("{what}: {e}"))
}

#[test]
fn outboards_encodings_and_slices_match_the_oracles_and_decode() {
    let targets = common::targets();
    let case = (size(), any::<u64>(), any::<usize>(), prop::collection::vec(range_pick(), 1..4));
    fuzz::run("bao", 48, case, |((k, size), seed, b, ranges)| {
        let data = fuzz::bytes(size as usize, seed);
        let on: Vec<_> =
            targets.iter().filter(|t| size <= SOFTWARE_GPU_MAX || !t.backend.info().is_software_gpu()).collect();
        let t = on[b % on.len()];
        let what = format!("{}: size {size}, group log {k}", t.name);
        let (pre, hash) = outboard_with(&*t.backend, &data, k, Order::Pre).map_err(fail(&what))?;
        let (post, post_hash) = outboard_with(&*t.backend, &data, k, Order::Post).map_err(fail(&what))?;
        let (encoded, encoded_hash) = encode_with(&*t.backend, &data, k).map_err(fail(&what))?;
        let oracle_pre = PreOrderMemOutboard::create(&data, BlockSize::from_chunk_log(k));
        let oracle_post = PostOrderMemOutboard::create(&data, BlockSize::from_chunk_log(k));
        prop_assert!(hash == oracle_pre.root && post_hash == hash && encoded_hash == hash, "hash, {}", what);
        prop_assert!(pre.parents() == &oracle_pre.data[..], "pre-order outboard, {}", what);
        prop_assert!(post.parents() == &oracle_post.data[..], "post-order outboard, {}", what);
        prop_assert!(encoded == bao_tree_response(&data, &oracle_pre, &ChunkRanges::all()), "encoding, {}", what);
        if k == 0 {
            prop_assert!(encoded == bao::encode::encode(&data).0, "bao's encoding, {}", what);
            prop_assert!(pre.to_bytes() == bao::encode::outboard(&data).0, "bao's outboard, {}", what);
        }

        let mut out = Vec::new();
        prop_assert_eq!(decode(&encoded[..], &hash, k, &mut out).map_err(fail(&what))?, size);
        prop_assert!(out == data, "decode, {}", what);
        let mut whole = vec![0xa5; data.len()];
        decode_into(&encoded, &hash, k, &mut whole).map_err(fail(&what))?;
        prop_assert!(whole == data, "decode_into, {}", what);
        for ob in [&pre, &post] {
            let mut out = Vec::new();
            decode_outboard(&data[..], ob, &hash, &mut out).map_err(fail(&what))?;
            prop_assert!(out == data, "decode_outboard {:?}, {}", ob.order(), what);
        }

        for r in ranges {
            let (start, len) = range(size, k, r);
            let what = format!("{what}, slice {start}+{len}");
            let s = slice(&encoded, k, start, len).map_err(fail(&what))?;
            let oracle = bao_tree_response(&data, &oracle_pre, &slice_chunks(size, start, len));
            prop_assert!(s == oracle, "bao-tree's slice, {}", what);
            prop_assert!(slice_outboard(&data, &pre, start, len).map_err(fail(&what))? == s, "pre-order, {}", what);
            prop_assert!(slice_outboard(&data, &post, start, len).map_err(fail(&what))? == s, "post-order, {}", what);
            let want = clip(size, start, len);
            let want = &data[want.start as usize..want.end as usize];
            let mut out = Vec::new();
            let n = decode_slice(&s[..], &hash, k, start, len, &mut out).map_err(fail(&what))?;
            prop_assert!(n == want.len() as u64 && out == want, "decode_slice, {}", what);
            if k == 0 {
                let mut theirs = Vec::new();
                bao::encode::SliceExtractor::new(Cursor::new(&encoded), start, len).read_to_end(&mut theirs).unwrap();
                prop_assert!(s == theirs, "bao's slice, {}", what);
                let mut theirs = Vec::new();
                bao::decode::SliceDecoder::new(&s[..], &hash, start, len).read_to_end(&mut theirs).unwrap();
                prop_assert!(theirs == want, "bao's decode of the slice, {}", what);
            }
        }
        Ok(())
    });
}

/// What a case of the fuzzed decoders changes: the combined encoding, an outboard file, the
/// content decoded with an intact outboard, or a slice.
#[derive(Clone, Copy, Debug)]
enum Input {
    Encoding,
    Outboard(Order),
    Content(Order),
    Slice,
}

fn input() -> impl Strategy<Value = Input> {
    prop_oneof![
        Just(Input::Encoding),
        Just(Input::Outboard(Order::Pre)),
        Just(Input::Outboard(Order::Post)),
        Just(Input::Content(Order::Pre)),
        Just(Input::Content(Order::Post)),
        Just(Input::Slice),
    ]
}

/// What picks a change (see [`change`]).
type ChangePick = (u8, u64, u64);

/// Changes `bytes` as `kind` picks, with `a` and `b`: flips a bit, cuts it short, appends bytes,
/// rewrites its size field (the header, or where `trailer` the last 8 bytes; another size near
/// `size`, on another boundary of groups of `group` bytes, one bit flipped, one too large for any
/// encoding, or any), overwrites a run with garbage, or replaces it all with garbage of a random
/// length. Bytes without a size field (`size_field` false) get bytes appended instead.
fn change(bytes: &mut Vec<u8>, size_field: bool, trailer: bool, size: u64, group: u64, (kind, a, b): ChangePick) {
    let len = bytes.len();
    match kind % 6 {
        0 if len > 0 => bytes[a as usize % len] ^= 1 << (b % 8),
        1 => bytes.truncate(a as usize % (len + 1)),
        3 if size_field && len >= 8 => {
            let at = if trailer { len - 8 } else { 0 };
            let new = match a % 5 {
                0 => (size + b % 2049).saturating_sub(1024),
                1 => (size / group + b % 5).saturating_sub(2) * group,
                2 => size ^ (1 << (b % 64)),
                3 => u64::MAX - b % (1 << 40),
                _ => b,
            };
            bytes[at..at + 8].copy_from_slice(&new.to_le_bytes());
        }
        4 if len > 0 => {
            let at = a as usize % len;
            let n = (1 + b as usize % 300).min(len - at);
            bytes[at..at + n].copy_from_slice(&common::random_bytes(n, b));
        }
        5 => *bytes = common::random_bytes(b as usize % (2 * len + 64), a),
        _ => bytes.extend(common::random_bytes(1 + b as usize % 200, a)),
    }
}

/// A group log and a content size for the fuzzed decoders: those of [`size`] mostly, and now and
/// then just past the decoders' window, so that what one window verified is released before a
/// change in the next one stops the decode.
fn fuzzed_size() -> impl Strategy<Value = (u8, u64)> {
    prop_oneof![
        12 => size(),
        1 => (0u8..=6, 0u64..=3 << 16).prop_map(|(k, d)| (k, WINDOW + d)),
    ]
}

#[test]
fn fuzzed_inputs_never_release_unverified_content() {
    let cpu = b3accel::backend(b3accel::Device::Cpu).unwrap();
    let case = (
        fuzzed_size(),
        any::<u64>(),
        input(),
        prop::collection::vec((any::<u8>(), any::<u64>(), any::<u64>()), 1..4),
        range_pick(),
    );
    fuzz::run("bao decoders", 64, case, |((k, size), seed, input, changes, r)| {
        let data = fuzz::bytes(size as usize, seed);
        let (encoded, hash) = encode_with(&*cpu, &data, k).unwrap();
        let o = Original { data: &data, hash, group_log: k };
        let (start, len) = range(size, k, r);
        let group = CHUNK << k;
        let changed = |mut bytes: Vec<u8>, size_field: bool, trailer: bool| {
            for &c in &changes {
                change(&mut bytes, size_field, trailer, size, group, c);
            }
            bytes
        };
        match input {
            Input::Encoding => check_encoding(&o, &changed(encoded, true, false), start, len),
            Input::Outboard(order) => {
                let file = outboard_with(&*cpu, &data, k, order).unwrap().0.to_bytes();
                check_outboard(&o, order, &changed(file, true, order == Order::Post), &data, start, len);
            }
            Input::Content(order) => {
                let file = outboard_with(&*cpu, &data, k, order).unwrap().0.to_bytes();
                check_outboard(&o, order, &file, &changed(data.clone(), false, false), start, len);
            }
            Input::Slice => {
                let s = slice(&encoded, k, start, len).unwrap();
                check_slice(&o, start, len, &changed(s, true, false));
            }
        }
        Ok(())
    });
}
