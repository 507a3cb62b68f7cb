//! The row forms against the portable compression, on every instruction set this CPU has.

use super::one_block::*;
use super::row::*;
use super::two_inputs::*;
use crate::core::compress::{block_words, compress_portable};
use crate::core::constants::MSG_SCHEDULE;
use crate::core::platform::avx512_rows_supported;

/// For each round, the message words in the order the row form consumes them: the columns' first
/// and second words, then the diagonals' first and second words. Diagonal i is computed in lane
/// (i + 1) % 4 (see `round`), so the diagonal words are rotated by one lane.
const ROW_ORDER: [[u32; 16]; 7] = {
    let mut o = [[0u32; 16]; 7];
    let mut r = 0;
    while r < 7 {
        let mut i = 0;
        while i < 4 {
            o[r][i] = MSG_SCHEDULE[r][2 * i] as u32;
            o[r][4 + i] = MSG_SCHEDULE[r][2 * i + 1] as u32;
            let d = (i + 3) % 4;
            o[r][8 + i] = MSG_SCHEDULE[r][8 + 2 * d] as u32;
            o[r][12 + i] = MSG_SCHEDULE[r][8 + 2 * d + 1] as u32;
            i += 1;
        }
        r += 1;
    }
    o
};

/// Four words standing for one 128-bit lane: [`InLane`] on plain arrays.
#[derive(Clone, Copy, PartialEq, Debug)]
struct Model([u32; 4]);

impl InLane for Model {
    unsafe fn pshufd<const IMM: i32>(self) -> Self {
        Model(core::array::from_fn(|i| self.0[(IMM >> (2 * i) & 3) as usize]))
    }
    unsafe fn shufps<const IMM: i32>(self, hi: Self) -> Self {
        Model(core::array::from_fn(|i| [self, hi][i / 2].0[(IMM >> (2 * i) & 3) as usize]))
    }
    unsafe fn unpacklo(self, o: Self) -> Self {
        Model([self.0[0], o.0[0], self.0[1], o.0[1]])
    }
    unsafe fn blend<const MASK: i32>(self, o: Self) -> Self {
        Model(core::array::from_fn(|i| if MASK >> i & 1 == 1 { o.0[i] } else { self.0[i] }))
    }
}

/// The in-place message moves give every round's rows in [`ROW_ORDER`], which is built from
/// the scalar schedule: each word is its own index, so every position of every round is
/// checked.
#[test]
fn message_moved_in_place_follows_the_schedule() {
    let quarters: [Model; 4] = core::array::from_fn(|k| Model(core::array::from_fn(|i| (4 * k + i) as u32)));
    // SAFETY: plain arrays.
    let mut rows = unsafe { first_msg(quarters) };
    for (r, order) in ROW_ORDER.iter().enumerate() {
        if r > 0 {
            // SAFETY: plain arrays.
            rows = unsafe { permute_msg(rows) };
        }
        let want: [Model; 4] = core::array::from_fn(|j| Model(core::array::from_fn(|i| order[4 * j + i])));
        assert_eq!(rows, want, "round {r}");
    }
}

/// Runs `$check!(module)` for each row form this CPU has (`sse41`, `avx2`, `avx512`), and
/// reports each one it lacks as missing from test `$test`.
macro_rules! each_form {
    ($test:literal, $check:ident) => {{
        let has = |f: &str| match f {
            "sse4.1" => std::is_x86_feature_detected!("sse4.1"),
            "avx2" => std::is_x86_feature_detected!("avx2"),
            _ => avx512_rows_supported(),
        };
        for (item, feature) in [("simd:sse41", "sse4.1"), ("simd:avx2", "avx2"), ("rows:avx512", "avx512")] {
            if !has(feature) {
                crate::core::expect::missing(item, &format!("{} for {item}", $test));
            }
        }
        if has("sse4.1") {
            $check!(sse41);
        }
        if has("avx2") {
            $check!(avx2);
        }
        if has("avx512") {
            $check!(avx512);
        }
    }};
}

/// The portable compression of the first `len` bytes of `bytes`, zero-padded.
fn portable_bytes(cv: &[u32; 8], bytes: &[u8], counter: u64, flags: u32) -> [u32; 16] {
    let mut padded = [0u8; 64];
    padded[..bytes.len()].copy_from_slice(bytes);
    compress_portable(cv, &block_words(&padded), bytes.len() as u32, counter, flags)
}

#[test]
fn every_row_form_matches_portable() {
    let cv: [u32; 8] = core::array::from_fn(|i| 0x0101_0101 * i as u32 + 7);
    let block: [u32; 16] = core::array::from_fn(|i| 0x9E37_79B9u32.wrapping_mul(i as u32 + 1));
    let mut bytes = [0u8; 64];
    for (b, w) in bytes.chunks_exact_mut(4).zip(block) {
        b.copy_from_slice(&w.to_le_bytes());
    }
    macro_rules! check {
        ($isa:ident) => {
            for (len, counter, f) in [(64, 0u64, 0u32), (3, u64::MAX - 1, 11), (17, 1 << 40, 64), (0, 9, 3)] {
                let expected = compress_portable(&cv, &block, len, counter, f);
                assert_eq!(unsafe { $isa::compress(&cv, &block, len, counter, f) }, expected, stringify!($isa));
                // The block's first `len` bytes; the compression sees the rest as zeros.
                let expected = portable_bytes(&cv, &bytes[..len as usize], counter, f);
                let got = unsafe { $isa::bytes(&cv, &bytes[..len as usize], counter, f) };
                assert_eq!(got, expected, "{} bytes, {}", len, stringify!($isa));
            }
        };
    }
    each_form!("every_row_form_matches_portable", check);
}

#[test]
fn parent_from_cvs_matches_portable() {
    let key: [u32; 8] = core::array::from_fn(|i| 0x0F1E_2D3Cu32.rotate_left(5 * i as u32));
    let left: [u8; 32] = core::array::from_fn(|i| (i * 7 + 1) as u8);
    let right: [u8; 32] = core::array::from_fn(|i| (255 - i * 3) as u8);
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(&left);
    block[32..].copy_from_slice(&right);
    macro_rules! check {
        ($isa:ident) => {
            for flags in [0x04, 0x04 | 0x08, 0x04 | 0x10, 0x04 | 0x08 | 0x40] {
                let expected = compress_portable(&key, &block_words(&block), 64, 0, flags);
                let got = unsafe { $isa::parent(&key, &left, &right, flags) };
                assert_eq!(got, expected, "flags {flags:#x}, {}", stringify!($isa));
            }
        };
    }
    each_form!("parent_from_cvs_matches_portable", check);
}

#[test]
fn blocks_in_registers_match_block_by_block() {
    let data: Vec<u8> = (0..1024u32).map(|i| (i * 31 + (i >> 5)) as u8).collect();
    let key: [u32; 8] = core::array::from_fn(|i| 0x1234_5678u32.rotate_left(i as u32));
    macro_rules! check {
        ($isa:ident) => {
            for blocks in 0..=16 {
                let (counter, flags, first) = (blocks as u64 * (1 << 33) + 5, 0x10, 0x01);
                let mut expected = key;
                for (b, block) in data[..64 * blocks].chunks_exact(64).enumerate() {
                    let words = block_words(block.try_into().unwrap());
                    let f = flags | if b == 0 { first } else { 0 };
                    expected = core::array::from_fn(|i| compress_portable(&expected, &words, 64, counter, f)[i]);
                }
                let mut got = key;
                unsafe { $isa::blocks(&mut got, &data[..64 * blocks], counter, flags, first) };
                assert_eq!(got, expected, "{blocks} blocks, {}", stringify!($isa));
            }
        };
    }
    each_form!("blocks_in_registers_match_block_by_block", check);
}

/// The CV of one chunk of 1 to 1024 bytes, block by block on the portable compression.
fn portable_chunk_cv(key: &[u32; 8], chunk: &[u8], counter: u64, flags: u32) -> [u8; 32] {
    use crate::core::constants::flags::{CHUNK_END, CHUNK_START};
    let blocks = chunk.len().div_ceil(64);
    let mut cv = *key;
    for (b, block) in chunk.chunks(64).enumerate() {
        let f = flags | if b == 0 { CHUNK_START } else { 0 } | if b + 1 == blocks { CHUNK_END } else { 0 };
        let out = portable_bytes(&cv, block, counter, f);
        cv = core::array::from_fn(|i| out[i]);
    }
    crate::core::compress::words_to_cv(&cv)
}

/// A whole chunk and a partial one side by side: every tail length, at counters whose low
/// word carries into the high one between the two chunks, in a keyed mode, on each form
/// this CPU has (AVX2, AVX-512), against the portable compression chunk by chunk.
#[test]
fn chunk_and_tail_match_portable() {
    let data: Vec<u8> = (0..2048u32).map(|i| (i * 29 + (i >> 7)) as u8).collect();
    let key: [u32; 8] = core::array::from_fn(|i| 0x6A09_E667u32.rotate_left(7 * i as u32));
    let (chunk, rest) = data.split_at(1024);
    type Kernel = unsafe fn(&[u32; 8], &[u8], &[u8], u64, u32) -> [[u8; 32]; 2];
    let check = |name: &str, f: Kernel| {
        for counter in [0u64, (1 << 32) - 1, 1 << 40] {
            for len in 1..1024 {
                let tail = &rest[..len];
                let expected =
                    [portable_chunk_cv(&key, chunk, counter, 0x10), portable_chunk_cv(&key, tail, counter + 1, 0x10)];
                // SAFETY: the caller checked the instruction sets; the lengths are in range.
                let got = unsafe { f(&key, chunk, tail, counter, 0x10) };
                assert_eq!(got, expected, "{name}: tail of {len} bytes, counter {counter:#x}");
            }
        }
    };
    if std::is_x86_feature_detected!("avx2") {
        check("avx2", chunk_and_tail_avx2);
    } else {
        crate::core::expect::missing("simd:avx2", "chunk_and_tail_match_portable for simd:avx2");
    }
    if avx512_rows_supported() {
        check("avx512", chunk_and_tail_avx512);
    } else {
        crate::core::expect::missing("rows:avx512", "chunk_and_tail_match_portable for rows:avx512");
    }
}

#[test]
fn chunk_end_in_registers_matches_portable() {
    let data: Vec<u8> = (0..1024u32).map(|i| (i * 47 + (i >> 6)) as u8).collect();
    let key: [u32; 8] = core::array::from_fn(|i| 0x9B05_688Cu32.rotate_left(3 * i as u32));
    macro_rules! check {
        ($isa:ident) => {
            for len in [0usize, 1, 31, 32, 33, 63, 64, 65, 127, 128, 129, 500, 1023, 1024] {
                let body_len = len.saturating_sub(1) / 64 * 64;
                let (body, last) = data[..len].split_at(body_len);
                let (counter, flags, first, last_flags) = ((1u64 << 32) + 3, 0x10, 0x01, 0x1A);
                let mut cv = key;
                for (b, block) in body.chunks_exact(64).enumerate() {
                    let words = block_words(block.try_into().unwrap());
                    let f = flags | if b == 0 { first } else { 0 };
                    cv = core::array::from_fn(|i| compress_portable(&cv, &words, 64, counter, f)[i]);
                }
                let out = portable_bytes(&cv, last, counter, last_flags);
                let expected: [u32; 8] = core::array::from_fn(|i| out[i]);
                let got = unsafe { $isa::chunk_end(&key, body, counter, flags, first, last, last_flags) };
                assert_eq!(got, expected, "{len} bytes, {}", stringify!($isa));
            }
        };
    }
    each_form!("chunk_end_in_registers_matches_portable", check);
}
