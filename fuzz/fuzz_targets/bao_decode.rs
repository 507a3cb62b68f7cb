//! libFuzzer target: the bao decoders on any bytes given as a combined encoding, an outboard (either
//! order), content decoded with a valid outboard, or a slice, of a fixed content at a group log
//! 0 to 6, against its valid hash: never a panic, never content that differs, and on an error only
//! verified content released (the checks of tests/support/bao_untrusted.rs, which the property
//! test tests/fuzz_bao.rs shares). The bytes are the input itself, or a valid one changed by the
//! input's edits, so that the fuzzer reaches nodes past the first.
#![no_main]

#[path = "../../tests/support/bao_untrusted.rs"]
mod untrusted;

use b3accel::bao::{encode_on, outboard_on, slice, Order};
use b3accel::Device;
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use untrusted::{check_encoding, check_outboard, check_slice, Original};

/// The contents' sizes: empty, around a chunk, a few chunks, past a 16 KiB group, and enough
/// chunk groups (no power of two of them) for the decoders' parallel check.
const SIZES: [usize; 8] = [0, 1, 1024, 1025, 5000, 16 * 1024 + 1, 70_000, 300_000];

/// One content at one group log: its bytes, hash, combined encoding and outboard files.
struct Fixture {
    data: Vec<u8>,
    hash: blake3::Hash,
    encoded: Vec<u8>,
    pre: Vec<u8>,
    post: Vec<u8>,
}

/// Every size at every group log 0 to 6, made once.
fn fixtures() -> &'static [Fixture] {
    static ALL: OnceLock<Vec<Fixture>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all = Vec::new();
        for size in SIZES {
            let data: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
            for k in 0..=6 {
                let (encoded, hash) = encode_on(Device::Cpu, &data, k).unwrap();
                let pre = outboard_on(Device::Cpu, &data, k, Order::Pre).unwrap().0.to_bytes();
                let post = outboard_on(Device::Cpu, &data, k, Order::Post).unwrap().0.to_bytes();
                all.push(Fixture { data: data.clone(), hash, encoded, pre, post });
            }
        }
        all
    })
}

/// Applies edits of 5 bytes each to `bytes`: an operation, a position (24 bits, wrapped to the
/// length) and a value; the operation XORs the value in, cuts the bytes there, or inserts the
/// value there.
fn edit(bytes: &mut Vec<u8>, edits: &[u8]) {
    for e in edits.chunks_exact(5) {
        let at = u32::from_le_bytes([e[1], e[2], e[3], 0]) as usize % (bytes.len() + 1);
        match e[0] % 3 {
            0 if at < bytes.len() => bytes[at] ^= e[4],
            1 => bytes.truncate(at),
            _ => bytes.insert(at, e[4]),
        }
    }
}

fuzz_target!(|input: &[u8]| {
    // A header: the fixture, what to decode and how, the range of slices; then the bytes or edits.
    let Some((head, body)) = input.split_first_chunk::<11>() else { return };
    let [size, k, what, s0, s1, s2, s3, l0, l1, l2, l3] = *head;
    let k = k % 7;
    let f = &fixtures()[(size as usize % SIZES.len()) * 7 + k as usize];
    // A start in the content or a few chunks past it; a length of up to 2^32 - 2, or to 2^64.
    let start = u64::from(u32::from_le_bytes([s0, s1, s2, s3])) % (f.data.len() as u64 + 4096);
    let len = match u32::from_le_bytes([l0, l1, l2, l3]) {
        u32::MAX => u64::MAX,
        l => u64::from(l),
    };
    let o = Original { data: &f.data, hash: f.hash, group_log: k };
    let valid = match what % 6 {
        0 => f.encoded.clone(),
        1 => f.pre.clone(),
        2 => f.post.clone(),
        3 | 4 => f.data.clone(),
        _ => slice(&f.encoded, k, start, len).unwrap(),
    };
    let bytes = if what >= 128 {
        body.to_vec()
    } else {
        let mut bytes = valid;
        edit(&mut bytes, body);
        bytes
    };
    match what % 6 {
        0 => check_encoding(&o, &bytes, start, len),
        1 => check_outboard(&o, Order::Pre, &bytes, &f.data, start, len),
        2 => check_outboard(&o, Order::Post, &bytes, &f.data, start, len),
        3 => check_outboard(&o, Order::Pre, &f.pre, &bytes, start, len),
        4 => check_outboard(&o, Order::Post, &f.post, &bytes, start, len),
        _ => check_slice(&o, start, len, &bytes),
    }
});
